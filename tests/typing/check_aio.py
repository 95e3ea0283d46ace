"""User-style code for ``jetwire.aio``, type-checked (never run): ``mypy --strict`` and
basedpyright must accept it, and every ``assert_type`` must hold (see .ci/run). The
blocking twin, ``check_sync.py``, is generated from this file by ``tools/gen_sync.py``."""
from __future__ import annotations

import asyncio  # aio-only
from typing import Any, assert_type

import jetwire.aio
import jetwire.jetstream.pubmux as pubmux
from jetwire.aio import (
    AckPolicy,
    APIError,
    AtomicBatch,
    BadSubjectError,
    Client,
    ConsumeContext,
    Consumer,
    ConsumerConfig,
    ConsumerInfo,
    EventStream,
    Headers,
    JetStream,
    JetStreamError,
    KeyNotFoundError,
    KeyValue,
    KeyValueConfig,
    KeyValueEntry,
    KeyWatcher,
    MessageBatch,
    MessagesContext,
    Msg,
    MsgMetadata,
    NatsError,
    NoRespondersError,
    ObjectInfo,
    ObjectMeta,
    ObjectResult,
    ObjectStore,
    ObjectStoreConfig,
    ObjectWatcher,
    OrderedConsumer,
    PubAck,
    PushConsumer,
    StorageType,
    Stream,
    StreamConfig,
    StreamInfo,
    StreamNotFoundError,
    Subscription,
    TimeoutError,
    micro,
)
from jetwire.events import ServiceLatencyMetric, UnknownEvent


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


async def handles(nc: Client) -> None:
    """The handle classes are importable from the flavour's package (each its own)."""
    js = nc.jetstream()
    assert_type(js, JetStream)
    stream = await js.stream("ORDERS")
    assert_type(stream, Stream)
    consumer = await js.consumer("ORDERS", "worker")
    assert_type(consumer, Consumer)
    assert_type(await consumer.fetch(1), MessageBatch)
    assert_type(await consumer.messages(), MessagesContext)
    assert_type(await js.ordered_consumer("ORDERS"), OrderedConsumer)
    assert_type(await js.push_consumer("ORDERS", "p"), PushConsumer)
    kv = await js.key_value("settings")
    assert_type(kv, KeyValue)
    assert_type(await kv.watch_all(), KeyWatcher)
    store = await js.object_store("files")
    assert_type(store, ObjectStore)
    assert_type(await store.get("a.txt"), ObjectResult)
    assert_type(await store.watch(), ObjectWatcher)
    assert_type(await js.events(), EventStream)
    assert_type(js.atomic_batch(), AtomicBatch)

    def on_msg(m: Msg) -> None:
        pass

    assert_type(await consumer.consume(on_msg), ConsumeContext)


async def payloads(nc: Client, m: Msg) -> None:
    """Any bytes-like payload is accepted where bytes are."""
    buf = bytearray(b"abc")
    view = memoryview(buf)
    await nc.publish("a", buf)
    await nc.publish("a", view)
    await nc.request("a", buf)
    await m.respond(view)
    js = nc.jetstream()
    await js.publish("a", buf)
    await js.publish_async("a", view)
    kv = await js.key_value("settings")
    await kv.put("k", buf)
    await kv.create("k", view)
    await kv.update("k", buf, 1)
    batch = js.atomic_batch()
    await batch.add("a", buf, ttl=5.0)
    await batch.commit("a", view, ttl=None)
    await batch.add("a", b"", ttl="5s")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    await micro.request(nc, "svc.echo", buf)

    async def echo(req: micro.Request) -> None:
        await req.respond(memoryview(req.data))

    svc = await micro.add_service(nc, "bytes", "1.0.0")
    await svc.add_endpoint("echo", echo)


def on_exception(exc: Exception) -> None:
    print("error:", exc)


async def on_closed() -> None:
    print("closed")


async def callbacks(nc: Client) -> None:
    """Connection and service callbacks are typed by what they are called with."""
    await jetwire.aio.connect(
        closed_cb=on_closed, reconnected_cb=on_disconnect, connected_cb=on_closed, discovered_servers_cb=on_disconnect,
        lame_duck_mode_cb=on_closed, reconnect_error_cb=on_exception, error_cb=on_error,
    )
    # sync-only: jetwire.connect(error_cb=on_exception)  # blocking: only Exceptions reach it
    await jetwire.aio.connect(disconnected_cb=on_error)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    await jetwire.aio.connect(error_cb=on_disconnect)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    await jetwire.aio.connect(reconnect_error_cb=on_closed)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    await micro.add_service(nc, "errs", "1.0.0", error_cb=on_error)
    # sync-only: micro.add_service(nc, "errs", "1.0.0", error_cb=on_exception)  # blocking: only Exceptions
    await micro.add_service(nc, "errs", "1.0.0", error_cb=on_disconnect)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


async def async_publish(nc: Client) -> None:
    js = nc.jetstream()
    fut = await js.publish_async("orders.new", b"{}")
    assert_type(fut, pubmux.AioAckFuture)  # aio-only
    # sync-only: assert_type(fut, pubmux.AckFuture)
    assert_type(fut.msg, Msg)
    assert_type(await fut, PubAck)  # aio-only
    # sync-only: assert_type(fut.result(), PubAck)
    m = Msg(subject="orders.new", data=b"{}")
    assert_type(await js.publish_msg_async(m), pubmux.AioAckFuture)  # aio-only
    # sync-only: assert_type(js.publish_msg_async(m), pubmux.AckFuture)


async def watchers(nc: Client) -> None:
    js = nc.jetstream()
    kv = await js.key_value("settings")
    w = await kv.watch("color")
    assert_type(await w.next(), KeyValueEntry | None)
    assert_type(await w.next(timeout=1.0), KeyValueEntry | None)
    async for entry in w:
        assert_type(entry, KeyValueEntry | None)
        if entry is not None:
            assert_type(entry.key, str)
        break
    w.stop()
    async with await kv.watch_all() as w2:
        assert_type(w2, KeyWatcher)
        w2.stopp()  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue]
        async for entry2 in w2:
            if entry2 is None:
                break
            print(entry2.kye)  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue]
    store = await js.object_store("files")
    async with await store.watch() as ow:
        assert_type(ow, ObjectWatcher)
        ow.stopp()  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue]
        assert_type(await ow.next(), ObjectInfo | None)
        async for info in ow:
            assert_type(info, ObjectInfo | None)
            break


async def ordered(nc: Client) -> None:
    js = nc.jetstream()
    oc = await js.ordered_consumer("ORDERS")

    async def on_msg(m: Msg) -> None:
        pass

    def on_err(exc: Exception) -> None:
        pass

    assert_type(await oc.consume(on_msg, max_messages=10, error_cb=on_err), ConsumeContext)
    assert_type(await oc.messages(max_messages=10, heartbeat=1.0), MessagesContext)
    ctx = await oc.messages()
    await ctx.nxt()  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue]
    (await oc.consume(on_msg)).stopp()  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue]
    await oc.messages(max_mesages=10)  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    await oc.consume(on_msg, max_mesages=10)  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]


async def model_headers(nc: Client, latency: ServiceLatencyMetric, unknown: UnknownEvent) -> None:
    js = nc.jetstream()
    raw = await (await js.stream("ORDERS")).get_msg(1)
    assert_type(raw.headers, Headers | None)
    store = await js.object_store("files")
    info = await store.get_info("a.txt")
    assert_type(info.headers, Headers | None)
    meta = ObjectMeta(name="a.txt", headers={"X-Kind": "text"})
    assert_type(meta.headers, Headers | None)
    ObjectMeta(name="b.txt", headers=Headers({"X-Kind": ["a", "b"]}))
    ObjectMeta(name="c.txt", headers=42)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    assert_type(latency.header, Headers | None)
    text: str = unknown.data  # type: ignore[assignment]  # pyright: ignore[reportAssignmentType]
    print(text)
    if isinstance(unknown.data, dict):
        assert_type(unknown.data, dict[str, Any])
    h = Headers({"X-Id": "1"})
    assert_type(h.pop("X-Id"), str)
    assert_type(h.pop("X-Id", None), str | None)
    svc = await micro.add_service(nc, "stats", "1.0.0")
    data = svc.stats().endpoints[0].data
    data.keys()  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue]


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
