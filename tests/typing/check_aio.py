"""User-style code for ``jetwire.aio``, type-checked (never run): ``mypy --strict`` and
basedpyright must accept it, and every ``assert_type`` must hold (see .ci/run). The
blocking twin, ``check_sync.py``, is generated from this file by ``tools/gen_sync.py``."""
from __future__ import annotations

import asyncio  # aio-only
from typing import Any, assert_type

import jetwire.aio
from jetwire.aio import (
    AckPolicy,
    APIError,
    BadSubjectError,
    Client,
    ConsumerConfig,
    ConsumerInfo,
    Headers,
    JetStreamError,
    KeyNotFoundError,
    KeyValueConfig,
    KeyValueEntry,
    Msg,
    MsgMetadata,
    NatsError,
    NoRespondersError,
    ObjectInfo,
    ObjectStoreConfig,
    PubAck,
    StorageType,
    StreamConfig,
    StreamInfo,
    StreamNotFoundError,
    Subscription,
    TimeoutError,
    micro,
)


async def on_error(exc: BaseException) -> None:
    print("error:", exc)


def on_disconnect() -> None:
    print("disconnected")


async def core(nc: Client) -> None:
    await nc.publish("greet.joe", b"hello")
    await nc.publish("greet.joe", b"hello", headers={"X-Id": "1"})
    sub = await nc.subscribe("greet.*")
    assert_type(sub, Subscription)
    msg = await sub.next_msg(timeout=1.0)
    assert_type(msg, Msg)
    assert_type(msg.subject, str)
    assert_type(msg.data, bytes)
    assert_type(msg.reply, str | None)
    if msg.headers is not None:
        assert_type(msg.headers, Headers)
        value: str | None = msg.headers.get("X-Id")
        print(value)
    async for m in sub:
        assert_type(m, Msg)
        break
    await sub.unsubscribe()

    async def handler(m: Msg) -> None:
        await m.respond(b"pong")

    await nc.subscribe("svc.ping", queue="workers", cb=handler)
    reply = await nc.request("svc.ping", b"", timeout=0.5)
    assert_type(reply, Msg)
    assert_type(nc.new_inbox(), str)
    assert_type(nc.is_connected, bool)
    assert_type(nc.connected_url, str | None)
    assert_type(nc.servers, list[str])
    await nc.flush()
    assert_type(await nc.rtt(), float)
    await nc.drain()


async def errors(nc: Client) -> None:
    try:
        await nc.request("nobody.home", b"")
    except NoRespondersError as exc:
        assert_type(exc, NoRespondersError)
    except TimeoutError:
        pass
    except BadSubjectError as exc:
        assert isinstance(exc, ValueError)
    except NatsError as exc:
        assert_type(str(exc), str)
    try:
        await nc.jetstream().stream_info("missing")
    except StreamNotFoundError as exc:
        assert_type(exc, StreamNotFoundError)
        assert isinstance(exc, APIError)
    except JetStreamError:
        pass


async def jetstream(nc: Client) -> None:
    js = nc.jetstream()
    assert_type(js.api_prefix, str)  # a typed JetStream context, not Any
    stream = await js.create_stream(StreamConfig(name="ORDERS", subjects=["orders.>"], storage=StorageType.MEMORY))
    info = await stream.info()
    assert_type(info, StreamInfo)
    assert_type(info.config, StreamConfig)
    assert_type(info.state.messages, int)
    ack = await js.publish("orders.new", b"{}", msg_id="o-1")
    assert_type(ack, PubAck)
    assert_type(ack.seq, int)
    assert_type(ack.stream, str)
    await js.publish_async("orders.new", b"{}")
    await js.publish_async_complete()

    consumer = await stream.create_consumer(ConsumerConfig(durable_name="worker", ack_policy=AckPolicy.EXPLICIT))
    # the config fields as keywords are typed too: enums also as their wire strings
    await js.create_stream(name="LOGS", subjects=["logs.>"], retention="limits", max_age=3600.0,
                           placement={"cluster": "east"})
    await js.create_consumer("LOGS", durable_name="reader", ack_policy=AckPolicy.NONE, max_deliver=3)
    await js.create_stream(name="X", max_agee=1.0)  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    await js.create_stream(name="X", max_age="1h")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    assert_type(await consumer.info(), ConsumerInfo)
    batch = await consumer.fetch(10, max_wait=1.0)
    async for m in batch:
        assert_type(m, Msg)
        assert_type(m.metadata, MsgMetadata)
        assert_type(m.metadata.num_delivered, int)
        await m.ack()
    one = await consumer.next(timeout=1.0)
    await one.ack_sync()
    async for si in js.list_streams():
        assert_type(si, StreamInfo)


async def key_value(nc: Client) -> None:
    js = nc.jetstream()
    kv = await js.create_key_value(KeyValueConfig(bucket="settings", history=5))
    await js.create_key_value(bucket="flags", history=3, storage="memory")
    await js.create_object_store(bucket="blobs", max_bytes=1 << 20)
    revision = await kv.put("color", b"blue")
    assert_type(revision, int)
    try:
        entry = await kv.get("color")
        assert_type(entry, KeyValueEntry)
        assert_type(entry.value, bytes)
        assert_type(entry.revision, int)
    except KeyNotFoundError:
        pass
    assert_type(await kv.keys(), list[str])
    assert_type(await kv.history("color"), list[KeyValueEntry])


async def object_store(nc: Client) -> None:
    js = nc.jetstream()
    store = await js.create_object_store(ObjectStoreConfig(bucket="files"))
    info = await store.put_bytes("a.txt", b"hello")
    assert_type(info, ObjectInfo)
    assert_type(info.size, int)
    assert_type(await store.get_bytes("a.txt"), bytes)
    result = await store.get("a.txt")
    assert_type(await result.read(), bytes)


async def service(nc: Client) -> None:
    svc = await micro.add_service(nc, "echo", "1.0.0", description="echoes")
    assert_type(svc, micro.Service)

    async def echo(req: micro.Request) -> None:
        await req.respond(req.data)

    await svc.add_endpoint("echo", echo)
    group = svc.add_group("v1")
    await group.add_endpoint("echo", echo)
    await svc.stop()


async def main() -> None:
    nc = await jetwire.aio.connect(
        "nats://127.0.0.1:4222", name="typed", error_cb=on_error, disconnected_cb=on_disconnect,
        max_reconnect_attempts=5, reconnect_time_wait=0.5, ping_interval=30.0,
    )
    assert_type(nc, Client)
    await core(nc)
    await errors(nc)
    await jetstream(nc)
    await key_value(nc)
    await object_store(nc)
    await service(nc)
    await nc.close()
    # a misspelt option is a type error, not only a run-time one
    await jetwire.aio.connect(pasword="x")  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    jetwire.aio.NoSuchName  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue]


def entry_point() -> Any:
    return asyncio.run(main())  # aio-only
    # sync-only: return main()
