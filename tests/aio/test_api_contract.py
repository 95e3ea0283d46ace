"""The public API contract (docs: API.md), statement by statement, against a real server.

Each test pins one statement of the contract that the feature tests do not already
cover (asyncio source; the blocking twin is generated).
"""
from __future__ import annotations

import asyncio  # aio-only

# sync-only: import concurrent.futures
import builtins
import importlib
import inspect
import os
import pathlib
import socket
import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest

import jetwire.aio as nats  # the flavour under test (``jetwire`` in the blocking twin)
import jetwire.errors
from jetwire.aio import _prims as prims
from tests.aio._helpers import uniq, wait_until


async def _waiting(consumer) -> bool:
    """The server holds at least one pull request of ``consumer``."""
    return (await consumer.info()).num_waiting >= 1


# both flavours, named so that the blocking twin keeps them apart
BLOCKING = importlib.import_module("jetwire")
ASYNCIO = importlib.import_module("jetwire." + "aio")


def dead_url() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"nats://127.0.0.1:{port}"


class Recorder:
    """A callback that records its calls and wakes waiters."""

    def __init__(self) -> None:
        self.calls: list = []
        self.signal = prims.Signal()

    def __call__(self, *args) -> None:
        self.calls.append(args)
        self.signal.set()

    async def wait_for(self, pred, timeout: float = 5.0) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            if pred(self.calls):
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.signal.clear()
            if pred(self.calls):
                return True
            await self.signal.wait(min(left, 0.05))


async def make_stream(js, n: int = 0, **fields):
    name = uniq("S")
    fields.setdefault("subjects", [f"{name.lower()}.>"])
    fields.setdefault("storage", nats.StorageType.MEMORY)
    s = await js.create_stream(name=name, **fields)
    for i in range(n):
        await js.publish(f"{name.lower()}.m", b"m%d" % i)
    return s


# =====================================================================================
# Conventions: exports

SHARED_NAMES = [
    "Msg", "Headers", "parse_metadata", "MsgMetadata", "SequencePair",
    "StreamConfig", "ConsumerConfig", "StreamInfo", "StreamState", "ConsumerInfo", "SequenceInfo", "PubAck",
    "AccountInfo", "RawStreamMsg", "Placement", "StreamSource", "RePublish", "SubjectTransformConfig",
    "ConsumerLimits", "AckPolicy", "DeliverPolicy", "ReplayPolicy", "RetentionPolicy", "DiscardPolicy",
    "StorageType", "StoreCompression", "ObjectMeta", "ObjectInfo", "ObjectLink", "KeyValueEntry", "KeyValueOp",
]
CORE_ERRORS = [
    "NatsError", "ConnectionClosedError", "NoServersError", "TimeoutError", "NoRespondersError", "ProtocolError",
    "AuthorizationError", "PermissionsError", "MaxPayloadError", "SlowConsumerError", "BadSubjectError",
    "DrainTimeoutError", "StaleConnectionError",
]
TYPED_API_ERRORS = [
    "StreamNotFoundError", "StreamNameInUseError", "ConsumerNotFoundError", "ConsumerExistsError",
    "ConsumerDoesNotExistError", "MsgNotFoundError", "BadRequestError", "JetStreamNotEnabledError",
    "WrongLastSequenceError",
]
CLIENT_JS_ERRORS = [
    "NoStreamResponseError", "NotJSMessageError", "MsgAlreadyAckedError", "InvalidStreamNameError",
    "InvalidConsumerNameError", "NoHeartbeatError", "ConsumerDeletedError", "OrderedConsumerResetError",
    "TooManyStalledMsgsError",
]
KV_ERRORS = ["KeyNotFoundError", "KeyDeletedError", "KeyExistsError", "InvalidKeyError", "BucketNotFoundError",
             "InvalidBucketNameError", "HistoryTooLargeError"]
OBJ_ERRORS = ["ObjectNotFoundError", "DigestMismatchError", "BadObjectMetaError", "ObjectAlreadyExistsError",
              "LinkNotAllowedError"]
JS_ERRORS = ["JetStreamError", "APIError", *TYPED_API_ERRORS, *CLIENT_JS_ERRORS, *KV_ERRORS, *OBJ_ERRORS]


def test_exports_are_one_set_of_shared_types():
    for name in SHARED_NAMES + CORE_ERRORS + JS_ERRORS:
        a = getattr(BLOCKING, name)
        b = getattr(ASYNCIO, name)
        assert a is b, name
        assert name in BLOCKING.__all__ and name in ASYNCIO.__all__, name
    for name in CORE_ERRORS + JS_ERRORS:
        assert getattr(jetwire.errors, name) is getattr(BLOCKING, name), name
    assert inspect.iscoroutinefunction(ASYNCIO.connect)
    assert not inspect.iscoroutinefunction(BLOCKING.connect)
    assert ASYNCIO.Client is not BLOCKING.Client


def test_error_hierarchy():
    for name in CORE_ERRORS + JS_ERRORS:
        assert issubclass(getattr(nats, name), nats.NatsError), name
    for name in JS_ERRORS:
        assert issubclass(getattr(nats, name), nats.JetStreamError), name
    for name in TYPED_API_ERRORS:
        assert issubclass(getattr(nats, name), nats.APIError), name
    assert issubclass(nats.TimeoutError, builtins.TimeoutError)
    assert issubclass(nats.KeyDeletedError, nats.KeyNotFoundError)
    assert issubclass(nats.KeyExistsError, nats.WrongLastSequenceError)
    err = nats.APIError(code=400, err_code=10003, description="bad")
    assert (err.code, err.err_code, err.description) == (400, 10003, "bad")
    err = nats.StreamNotFoundError(404, 10059, "stream not found")
    assert (err.code, err.err_code, err.description) == (404, 10059, "stream not found")


# =====================================================================================
# Conventions: enums, field names, durations, unknown fields


def test_enums_are_str_enums_with_upper_case_members():
    expected = {
        nats.AckPolicy: {"NONE": "none", "ALL": "all", "EXPLICIT": "explicit"},
        nats.DeliverPolicy: {"ALL": "all", "LAST": "last", "NEW": "new", "BY_START_SEQUENCE": "by_start_sequence",
                             "BY_START_TIME": "by_start_time", "LAST_PER_SUBJECT": "last_per_subject"},
        nats.ReplayPolicy: {"INSTANT": "instant", "ORIGINAL": "original"},
        nats.RetentionPolicy: {"LIMITS": "limits", "INTEREST": "interest", "WORK_QUEUE": "workqueue"},
        nats.DiscardPolicy: {"OLD": "old", "NEW": "new"},
        nats.StorageType: {"FILE": "file", "MEMORY": "memory"},
        nats.StoreCompression: {"NONE": "none", "S2": "s2"},
        nats.KeyValueOp: {"PUT": "PUT", "DEL": "DEL", "PURGE": "PURGE"},
    }
    for enum, members in expected.items():
        for member, wire in members.items():
            m = getattr(enum, member)
            assert isinstance(m, str) and m == wire and m.value == wire, (enum, member)
            assert enum(wire) is m
            assert enum[member] is m


def test_models_use_json_names_float_seconds_and_keep_unknown_fields():
    cfg = nats.ConsumerConfig(durable_name="d", ack_wait=2.5, backoff=[0.5, 1.0], inactive_threshold=60.0)
    d = cfg.to_json_dict()
    assert d["durable_name"] == "d"
    assert d["ack_wait"] == 2_500_000_000
    assert d["backoff"] == [500_000_000, 1_000_000_000]
    assert d["ack_policy"] == "explicit"  # the default is always sent
    assert nats.ConsumerConfig(ack_wait=30).to_json_dict()["ack_wait"] == 30_000_000_000
    assert nats.ConsumerConfig(ack_wait=30).ack_wait == 30.0
    sc = nats.StreamConfig(name="X", max_age=1.5, duplicate_window=0.25)
    sd = sc.to_json_dict()
    assert sd["max_age"] == 1_500_000_000 and sd["duplicate_window"] == 250_000_000
    info = nats.StreamInfo.from_json({
        "config": {"name": "X", "max_age": 3_000_000_000, "retention": "workqueue", "some_future_knob": {"a": 1}},
        "created": "2024-01-02T03:04:05.123456789Z",
        "state": {"messages": 3, "bytes": 10, "first_seq": 1, "last_seq": 3, "consumer_count": 2,
                  "first_ts": "2024-01-02T03:04:05Z", "last_ts": "2024-01-02T03:04:06Z"},
        "future_top_level": [1, 2],
    })
    assert info.config.max_age == 3.0 and isinstance(info.config.max_age, float)
    assert info.config.retention is nats.RetentionPolicy.WORK_QUEUE
    assert info.state.messages == 3 and info.state.consumer_count == 2
    assert info.created.tzinfo is not None and info.state.first_ts.tzinfo is not None
    assert info.created == datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)
    out = info.to_json_dict()
    assert out["future_top_level"] == [1, 2]
    assert out["config"]["some_future_knob"] == {"a": 1}
    seq = nats.SequenceInfo.from_json({"consumer_seq": 4, "stream_seq": 9})
    assert (seq.consumer_seq, seq.stream_seq) == (4, 9)


# =====================================================================================
# Headers, Msg, metadata (no server)


def test_headers_mapping_api():
    h = nats.Headers()
    assert len(h) == 0 and list(h) == []
    h.add("K", "v1")
    h.add("K", "v2")
    h["Other"] = "o"
    assert h["K"] == "v1"
    assert h.get_all("K") == ["v1", "v2"]
    assert len(h) == 2  # distinct keys
    assert list(h) == ["K", "Other"]
    h["K"] = "only"  # set replaces every value
    assert h.get_all("K") == ["only"]
    del h["Other"]
    assert "Other" not in h and len(h) == 1
    with pytest.raises(KeyError):
        h["missing"]
    with pytest.raises(KeyError):
        del h["missing"]
    assert h.get_all("missing") == []
    # case-sensitive
    h2 = nats.Headers({"k": "lower"})
    assert "K" not in h2 and h2["k"] == "lower"
    # construction forms and ==
    a = nats.Headers({"A": "1", "B": ["2", "3"]})
    assert a.get_all("B") == ["2", "3"] and a["A"] == "1"
    assert a == nats.Headers({"A": ["1"], "B": ["2", "3"]})
    assert a == {"A": "1", "B": ["2", "3"]}
    assert a != nats.Headers({"A": "1"})
    assert a.status is None and a.description is None


def test_parse_metadata_forms_and_errors():
    v1 = nats.parse_metadata("$JS.ACK.ORDERS.dur.2.10.7.1700000000123456789.5")
    assert v1.stream == "ORDERS" and v1.consumer == "dur"
    assert (v1.sequence.stream, v1.sequence.consumer) == (10, 7)
    assert v1.sequence == nats.SequencePair(10, 7)
    assert (v1.num_delivered, v1.num_pending) == (2, 5)
    assert v1.timestamp_ns == 1700000000123456789
    assert v1.timestamp.tzinfo is not None
    assert v1.timestamp == datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=UTC)
    assert v1.domain is None
    v2 = nats.parse_metadata("$JS.ACK.hub.ACCHASH.ORDERS.dur.2.10.7.1700000000123456789.5.rnd")
    assert v2.domain == "hub" and v2.stream == "ORDERS" and v2.sequence.stream == 10 and v2.num_pending == 5
    v2_11 = nats.parse_metadata("$JS.ACK.hub.ACCHASH.ORDERS.dur.2.10.7.1700000000123456789.5")
    assert v2_11.domain == "hub" and v2_11.consumer == "dur"
    none_domain = nats.parse_metadata("$JS.ACK._.ACCHASH.ORDERS.dur.2.10.7.1700000000123456789.5.rnd")
    assert none_domain.domain is None
    for bad in ["foo.bar", "", "$JS.ACK.a.b.c", "_INBOX.abc", "$JS.ACK.S.C.x.1.1.1.1", "$JS.API.INFO"]:
        with pytest.raises(nats.NotJSMessageError):
            nats.parse_metadata(bad)


def test_user_built_msg():
    m = nats.Msg(subject="a.b", data=b"payload", headers={"K": "v"})
    assert m.subject == "a.b" and m.data == b"payload" and m.reply is None
    assert isinstance(m.headers, nats.Headers) and m.headers["K"] == "v"
    with pytest.raises(nats.NotJSMessageError):
        m.metadata


# =====================================================================================
# What is a coroutine in aio (and what iterates how)


async def test_plain_and_awaited_calls(nats_url):
    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    assert not inspect.isawaitable(js)
    assert isinstance(nc.new_inbox(), str)
    assert nc.jetstream(timeout=2.0, publish_async_max_pending=10) is not None
    s = await make_stream(js, 3)
    kvb, obb = uniq("kv"), uniq("ob")
    try:
        assert isinstance(s.cached_info(), nats.StreamInfo)
        assert isinstance(js.publish_async_pending(), int)
        # listings are iterators: async iterators in aio, not awaitables
        for it in (js.list_streams(), js.stream_names(), js.list_consumers(s.name), js.consumer_names(s.name),
                   s.list_consumers(), s.consumer_names(), js.key_value_store_names(), js.key_value_stores(),
                   js.object_store_names(), js.object_stores()):
            assert not inspect.isawaitable(it)
            assert hasattr(it, "__anext__")
        assert s.name in [n async for n in js.stream_names()]
        assert s.name in [i.config.name async for i in js.list_streams()]

        c = await s.create_consumer(durable_name="d")
        assert isinstance(c.cached_info(), nats.ConsumerInfo)
        batch = await c.fetch(3, max_wait=2)
        assert hasattr(batch, "__aiter__")
        assert len([m async for m in batch]) == 3 and batch.error is None

        pending = c.consume(lambda m: None)
        assert inspect.isawaitable(pending)  # aio-only
        cctx = await pending
        assert cctx.stop() is None  # plain
        assert await cctx.closed(2)

        pending = c.messages()
        assert inspect.isawaitable(pending)  # aio-only
        mctx = await pending
        assert mctx.stop() is None

        pending = js.ordered_consumer(s.name)
        assert inspect.isawaitable(pending)  # aio-only
        oc = await pending
        assert isinstance(oc.cached_info(), nats.ConsumerInfo)

        pending = js.publish_async(f"{s.name.lower()}.m", b"x")
        assert inspect.isawaitable(pending)  # aio-only
        fut = await pending
        assert isinstance(fut, asyncio.Future)  # aio-only
        # sync-only: assert isinstance(fut, concurrent.futures.Future)
        assert (await asyncio.wait_for(fut, 5)).seq == 4  # aio-only
        # sync-only: assert fut in concurrent.futures.wait([fut], timeout=5).done
        await js.publish_async_complete(timeout=5)
        assert fut.result().seq == 4

        kv = await js.create_key_value(bucket=kvb, storage="memory", history=5)
        await kv.put("k", b"1")
        await kv.put("k", b"2")
        keys = await kv.keys()
        assert keys == ["k"] and isinstance(keys, list)
        hist = await kv.history("k")
        assert isinstance(hist, list) and [e.value for e in hist] == [b"1", b"2"]
        pending = kv.watch("k")
        assert inspect.isawaitable(pending)  # aio-only
        w = await pending
        assert (await w.next(5)).value == b"2"
        assert await w.next(5) is None
        assert w.stop() is None  # plain

        obs = await js.create_object_store(bucket=obb, storage="memory")
        await obs.put_bytes("o", b"data")
        objs = await obs.list()
        assert isinstance(objs, list) and [o.name for o in objs] == ["o"]
        await obs.delete("o")
        assert await obs.list() == []
        assert await kv.keys("nothing.*") == []
        pending = obs.watch()
        assert inspect.isawaitable(pending)  # aio-only
        ow = await pending
        assert (await ow.next(5)).name == "o"
        assert ow.stop() is None

        pending = nc.drain()
        assert inspect.isawaitable(pending)  # aio-only
        await pending
        assert nc.is_closed
    finally:
        if not nc.is_closed:
            await nc.close()
        async with await nats.connect(nats_url) as nc2:
            js2 = nc2.jetstream()
            await js2.delete_stream(s.name)
            for fn, b in ((js2.delete_key_value, kvb), (js2.delete_object_store, obb)):
                try:
                    await fn(b)
                except nats.BucketNotFoundError:
                    pass


async def test_callbacks_may_be_coroutine_functions(fresh_nats_server):
    srv = fresh_nats_server
    seen: list = []
    disconnected, reconnected, closed, errored = prims.Signal(), prims.Signal(), prims.Signal(), prims.Signal()

    async def on_disconnected():
        seen.append("disconnected")
        disconnected.set()

    async def on_reconnected():
        seen.append("reconnected")
        reconnected.set()

    async def on_closed():
        seen.append("closed")
        closed.set()

    async def on_error(err):
        seen.append(err)
        errored.set()

    nc = await nats.connect(srv.url, disconnected_cb=on_disconnected, reconnected_cb=on_reconnected,
                            closed_cb=on_closed, error_cb=on_error, reconnect_time_wait=0.1,
                            max_reconnect_attempts=-1)
    try:
        got = Recorder()

        async def on_msg(msg):
            got(msg.data)

        sub = await nc.subscribe("cb.core", cb=on_msg)
        await nc.flush()
        await nc.publish("cb.core", b"one")
        assert await got.wait_for(lambda c: len(c) >= 1)

        js = nc.jetstream()
        s = await make_stream(js, 3)
        c = await s.create_consumer(durable_name="d")
        consumed = Recorder()

        async def on_js(msg):
            await msg.ack()
            consumed(msg.data)

        ctx = await c.consume(on_js)
        assert await consumed.wait_for(lambda c: len(c) == 3)
        ctx.stop()

        srv.kill()
        assert await disconnected.wait(10)
        srv.start()
        assert await reconnected.wait(20)
        await sub.unsubscribe()
    finally:
        await nc.close()
    assert await closed.wait(5)
    assert [x for x in seen if isinstance(x, str)] == ["disconnected", "reconnected", "closed"]


async def test_error_cb_may_be_a_coroutine_function(nats_url):
    errs = Recorder()

    async def on_error(err):
        errs(err)

    nc = await nats.connect(nats_url, error_cb=on_error)
    try:
        sub = await nc.subscribe("cb.slow", pending_msgs_limit=1)
        await nc.flush()
        for _ in range(5):
            await nc.publish("cb.slow", b"x")
        await nc.flush()
        assert await errs.wait_for(lambda c: any(isinstance(a[0], nats.SlowConsumerError) for a in c))
        assert sub.pending_msgs == 1
        assert nc.is_connected
        # consume(error_cb=) too
        js = nc.jetstream()
        s = await make_stream(js)
        try:
            c = await s.create_consumer(durable_name="gone")
            js_errs = Recorder()

            async def on_consume_error(err):
                js_errs(err)

            ctx = await c.consume(lambda m: None, error_cb=on_consume_error, expires=5)
            assert await wait_until(lambda: _waiting(c), 5)  # the pull is registered
            await s.delete_consumer("gone")
            assert await js_errs.wait_for(lambda c: any(isinstance(a[0], nats.ConsumerDeletedError) for a in c))
            assert await ctx.closed(5)
        finally:
            await js.delete_stream(s.name)
    finally:
        await nc.close()


# =====================================================================================
# Connecting


async def test_connect_accepts_every_documented_option(fresh_nats_server):
    srv = fresh_nats_server
    rec = Recorder()
    nc = await nats.connect(
        servers=[srv.url], name="contract-client", user=None, password=None, token=None, nkey_seed=None,
        creds=None, tls=None, tls_handshake_first=False, no_echo=False, verbose=False, pedantic=False,
        connect_timeout=2.0, ping_interval=30.0, max_pings_outstanding=3, allow_reconnect=True,
        retry_on_failed_connect=False, max_reconnect_attempts=5, reconnect_time_wait=0.5, reconnect_jitter=0.05,
        reconnect_buffer_size=1 << 20, dont_randomize=True, inbox_prefix="_CONTRACT", pending_msgs_limit=1000,
        pending_bytes_limit=1 << 20, error_cb=rec, disconnected_cb=rec, reconnected_cb=rec, closed_cb=rec,
        discovered_servers_cb=rec, lame_duck_mode_cb=rec,
    )
    try:
        assert nc.is_connected
        conns = srv.monitor("connz").get("connections") or []
        assert "contract-client" in [c.get("name") for c in conns]
        assert nc.new_inbox().startswith("_CONTRACT.")
        with pytest.raises(TypeError):
            await nats.connect(srv.url, no_such_option=True)
    finally:
        await nc.close()


async def test_client_properties(nats_url):
    nc = await nats.connect(nats_url)
    try:
        assert nc.is_connected and not nc.is_closed and not nc.is_reconnecting
        assert isinstance(nc.connected_url, str) and nc.connected_url.rsplit(":", 1)[1] == nats_url.rsplit(":", 1)[1]
        info = nc.server_info
        assert isinstance(info, dict) and info.get("server_id")
        assert isinstance(nc.max_payload, int) and nc.max_payload == info["max_payload"]
        st = nc.stats
        for key in ("in_msgs", "out_msgs", "in_bytes", "out_bytes", "reconnects"):
            assert st[key] == 0, key
        assert nc.last_error is None
        await nc.flush(timeout=2)
    finally:
        await nc.close()
    assert nc.is_closed and not nc.is_connected
    await nc.close()  # again: no error
    await nc.drain()  # returns: the connection is closed
    with pytest.raises(nats.ConnectionClosedError):
        await nc.request("x", b"", timeout=1)


async def test_verbose_and_pedantic_connections_work(nats_url):
    nc = await nats.connect(nats_url, verbose=True, pedantic=True)
    try:
        sub = await nc.subscribe("verbose.x")
        async def responder(msg):
            await msg.respond(b"pong")

        await nc.subscribe("verbose.svc", cb=responder)
        for i in range(50):
            await nc.publish("verbose.x", b"%d" % i, headers={"I": str(i)} if i % 2 else None)
        await nc.flush()
        got = [(await sub.next_msg(timeout=5)).data for _ in range(50)]
        assert got == [b"%d" % i for i in range(50)]
        assert (await nc.request("verbose.svc", b"ping", timeout=5)).data == b"pong"
        assert isinstance(await nc.rtt(), float)
        js = nc.jetstream()
        s = await make_stream(js, 2)
        assert (await s.info()).state.messages == 2
        await js.delete_stream(s.name)
        assert nc.is_connected and nc.last_error is None
    finally:
        await nc.close()


async def test_inbox_prefix_is_used_everywhere(nats_url):
    nc = await nats.connect(nats_url, inbox_prefix="_MY.IN")
    other = await nats.connect(nats_url)
    try:
        assert nc.new_inbox().startswith("_MY.IN.")
        replies: list = []

        async def responder(msg):
            replies.append(msg.reply)
            await msg.respond(b"ok")

        await other.subscribe("inbox.svc", cb=responder)
        await other.flush()
        assert (await nc.request("inbox.svc", b"", timeout=5)).data == b"ok"
        assert replies and replies[0].startswith("_MY.IN.")
        # JetStream pulls go to the prefix too
        js = nc.jetstream()
        s = await make_stream(js, 2)
        try:
            c = await s.create_consumer(durable_name="d")
            spy = await other.subscribe(f"$JS.API.CONSUMER.MSG.NEXT.{s.name}.d")
            await other.flush()
            msgs = [m async for m in await c.fetch(2, max_wait=2)]
            assert len(msgs) == 2
            assert (await spy.next_msg(timeout=2)).reply.startswith("_MY.IN.")
        finally:
            await js.delete_stream(s.name)
    finally:
        await nc.close()
        await other.close()


async def test_connection_pending_limits_apply_to_subscriptions(nats_url):
    errs = Recorder()
    nc = await nats.connect(nats_url, pending_msgs_limit=3, error_cb=errs)
    try:
        sub = await nc.subscribe("plimit.x")
        await nc.flush()
        for i in range(10):
            await nc.publish("plimit.x", b"%d" % i)
        await nc.flush()
        assert await errs.wait_for(lambda c: any(isinstance(a[0], nats.SlowConsumerError) for a in c))
        assert sub.pending_msgs == 3
    finally:
        await nc.close()


async def test_first_connect_makes_one_pass_then_raises_no_servers():
    start = time.monotonic()
    with pytest.raises(nats.NoServersError):
        await nats.connect([dead_url(), dead_url()], max_reconnect_attempts=-1, reconnect_time_wait=5,
                           connect_timeout=1)
    assert time.monotonic() - start < 4


async def test_first_connect_tries_every_server(nats_url):
    nc = await nats.connect([dead_url(), nats_url], dont_randomize=True, connect_timeout=1)
    try:
        assert nc.is_connected
        assert nc.connected_url.rsplit(":", 1)[1] == nats_url.rsplit(":", 1)[1]
    finally:
        await nc.close()
    nc = await nats.connect(f"{dead_url()},{nats_url}", dont_randomize=True, connect_timeout=1)
    assert nc.is_connected
    await nc.close()


async def test_retry_on_failed_connect_connects_later(fresh_nats_server):
    srv = fresh_nats_server
    srv.kill()
    nc = await nats.connect(srv.url, retry_on_failed_connect=True, reconnect_time_wait=0.01,
                            reconnect_jitter=0.0, max_reconnect_attempts=-1, connect_timeout=1)
    try:
        assert not nc.is_connected and not nc.is_closed and nc.is_reconnecting
        sub = await nc.subscribe("later.x")
        await nc.publish("later.x", b"buffered")
        await prims.sleep(1.0)  # ~100 refused attempts: -1 means forever
        assert nc.is_reconnecting
        srv.start()
        assert await wait_until(lambda: nc.is_connected, 20)
        assert (await sub.next_msg(timeout=5)).data == b"buffered"
    finally:
        await nc.close()


async def test_drain_returns_closed_or_raises_drain_timeout(nats_url):
    closed = prims.Signal()
    nc = await nats.connect(nats_url, closed_cb=closed.set)
    started = prims.Signal()

    async def slow(msg):
        started.set()
        await prims.sleep(1.5)

    await nc.subscribe("drain.slow", cb=slow)
    await nc.flush()
    await nc.publish("drain.slow", b"x")
    assert await started.wait(5)
    with pytest.raises(nats.DrainTimeoutError):
        await nc.drain(timeout=0.3)
    assert nc.is_closed
    assert await closed.wait(5)
    # a plain drain returns once closed
    nc2 = await nats.connect(nats_url)
    await nc2.subscribe("drain.ok", cb=lambda m: None)
    await nc2.drain()
    assert nc2.is_closed


async def test_lame_duck_mode_cb_fires(fresh_nats_server):
    ldm = prims.Signal()

    async def on_lame_duck():  # a coroutine function without arguments
        ldm.set()

    nc = await nats.connect(fresh_nats_server.url, lame_duck_mode_cb=on_lame_duck, allow_reconnect=False)
    try:
        await nc.flush()
        fresh_nats_server.lame_duck()
        assert await ldm.wait(10)
    finally:
        await nc.close()
        fresh_nats_server.kill()  # a lame duck takes its time to exit


async def test_pings_detect_a_frozen_server_then_reconnect(fresh_nats_server):
    srv = fresh_nats_server
    errs = Recorder()
    disconnected, reconnected = prims.Signal(), prims.Signal()
    nc = await nats.connect(srv.url, ping_interval=0.2, max_pings_outstanding=2, error_cb=errs,
                            disconnected_cb=disconnected.set, reconnected_cb=reconnected.set,
                            reconnect_time_wait=0.1, max_reconnect_attempts=-1, connect_timeout=0.5)
    try:
        sub = await nc.subscribe("stale.x")
        await nc.flush()
        js = nc.jetstream(timeout=0.2)
        srv.freeze()
        try:
            with pytest.raises(nats.TimeoutError):
                await nc.flush(timeout=0.1)
            start = time.monotonic()
            with pytest.raises(nats.TimeoutError):
                await js.account_info()
            assert time.monotonic() - start < 1.0
            assert await errs.wait_for(lambda c: any(isinstance(a[0], nats.StaleConnectionError) for a in c), 5)
            assert await disconnected.wait(5)
        finally:
            srv.thaw()
        assert await reconnected.wait(20)
        await nc.publish("stale.x", b"back")
        assert (await sub.next_msg(timeout=5)).data == b"back"
    finally:
        await nc.close()


# =====================================================================================
# Bad input, status headers, Msg, Subscription


async def test_bad_subjects_raise_before_sending(nats_url):
    nc = await nats.connect(nats_url)
    try:
        for bad in ["a\x7fb", "a\x0bb", "a\x0cb", "a\x1bb", "a\x01", " ", "a b"]:
            with pytest.raises(nats.BadSubjectError):
                await nc.publish(bad, b"x")
            with pytest.raises(nats.BadSubjectError):
                await nc.subscribe(bad)
            with pytest.raises(nats.BadSubjectError):
                await nc.request(bad, b"x", timeout=1)
        with pytest.raises(nats.BadSubjectError):
            await nc.publish("ok.subject", b"x", reply="bad reply")
        with pytest.raises(nats.BadSubjectError):
            await nc.subscribe("ok.subject", queue="bad queue")
        js = nc.jetstream()
        with pytest.raises(nats.BadSubjectError):
            await js.publish("a\x7fb", b"x")
        with pytest.raises(nats.MaxPayloadError):
            await nc.request("ok.subject", b"x" * nc.max_payload, headers={"K": "v"})
        assert nc.stats["out_msgs"] == 0
        sub = await nc.subscribe("still.usable")
        await nc.publish("still.usable", b"yes")
        assert (await sub.next_msg(timeout=5)).data == b"yes"
    finally:
        await nc.close()


async def test_status_message_headers(nats_url):
    nc = await nats.connect(nats_url)
    try:
        inbox = nc.new_inbox()
        sub = await nc.subscribe(inbox)
        await nc.publish(f"nobody.{uuid.uuid4().hex}", b"", reply=inbox)
        msg = await sub.next_msg(timeout=5)
        assert isinstance(msg.headers, nats.Headers)
        assert msg.headers.status == "503"
        assert msg.data == b""
        js = nc.jetstream()
        s = await make_stream(js)
        try:
            await s.create_consumer(durable_name="d")
            await nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.{s.name}.d", b'{"batch":1,"no_wait":true}', reply=inbox)
            st = await sub.next_msg(timeout=5)
            assert (st.headers.status, st.headers.description) == ("404", "No Messages")
        finally:
            await js.delete_stream(s.name)
    finally:
        await nc.close()


async def test_msg_and_subscription_api(nats_url):
    nc = await nats.connect(nats_url)
    try:
        sub = await nc.subscribe("msgapi.>")
        assert sub.subject == "msgapi.>" and sub.queue is None
        await nc.flush()
        await nc.publish("msgapi.a", b"12345", reply="msgapi.reply", headers=nats.Headers({"X": ["1", "2"]}))
        await nc.publish("msgapi.b", b"678")
        await nc.flush()
        assert await wait_until(lambda: sub.pending_msgs == 2)
        assert sub.pending_bytes >= 8
        assert sub.delivered == 2
        m = await sub.next_msg()
        assert m.subject == "msgapi.a" and m.reply == "msgapi.reply" and m.data == b"12345"
        assert isinstance(m.data, bytes)
        assert isinstance(m.headers, nats.Headers) and m.headers.get_all("X") == ["1", "2"]
        assert m.sid == sub.sid
        m2 = await sub.next_msg()
        assert m2.headers is None and m2.reply is None
        assert sub.pending_msgs == 0 and sub.pending_bytes == 0
        # respond(data, headers=)
        await m.respond(b"answer", headers={"R": "1"})
        r = await sub.next_msg(timeout=5)
        assert (r.subject, r.data, r.headers["R"]) == ("msgapi.reply", b"answer", "1")
        # request(subject, data, timeout, headers) carries the headers
        seen: list = []

        async def svc(msg):
            seen.append(msg.headers)
            await msg.respond(msg.data[::-1])

        await nc.subscribe("svc.rev", cb=svc)
        resp = await nc.request("svc.rev", b"abc", timeout=5, headers={"H": "v"})
        assert resp.data == b"cba" and seen[0]["H"] == "v"
        q = await nc.subscribe("msgapi.q", queue="grp")
        assert q.queue == "grp"
    finally:
        await nc.close()


# =====================================================================================
# JetStream


async def test_lookups_raise_not_found_at_once(nats_url):
    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    s = await make_stream(js)
    try:
        with pytest.raises(nats.StreamNotFoundError) as ei:
            await js.stream(uniq("NOPE"))
        assert ei.value.err_code == 10059 and isinstance(ei.value, nats.APIError)
        with pytest.raises(nats.ConsumerNotFoundError) as ei:
            await js.consumer(s.name, "nope")
        assert ei.value.err_code == 10014
        with pytest.raises(nats.ConsumerNotFoundError):
            await s.consumer("nope")
        with pytest.raises(nats.StreamNotFoundError):
            await js.consumer(uniq("NOPE"), "nope")
        with pytest.raises(nats.StreamNotFoundError):
            await js.stream_name_by_subject(f"none.{uuid.uuid4().hex}")
        with pytest.raises(nats.MsgNotFoundError):
            await s.get_msg(99)
    finally:
        await js.delete_stream(s.name)
        await nc.close()


async def test_server_field_names_durations_and_times(nats_url):
    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    s = await make_stream(js, 3, max_age=3600.0, duplicate_window=30.0)
    try:
        info = await s.info()
        assert info.state.messages == 3
        assert info.config.max_age == 3600.0 and isinstance(info.config.max_age, float)
        assert info.config.duplicate_window == 30.0
        assert info.created.tzinfo is not None
        assert info.state.first_ts.tzinfo is not None and info.state.last_ts.tzinfo is not None
        c = await s.create_consumer(durable_name="dur", ack_wait=2.5, inactive_threshold=600.0)
        bo = await s.create_consumer(durable_name="bo", backoff=[1.0, 2.5], max_deliver=3)
        assert (await s.info()).state.consumer_count == 2
        cfg = c.cached_info().config
        assert cfg.durable_name == "dur"
        assert cfg.ack_wait == 2.5 and isinstance(cfg.ack_wait, float)
        assert cfg.inactive_threshold == 600.0
        assert bo.cached_info().config.backoff == [1.0, 2.5]
        assert c.cached_info().created.tzinfo is not None
        msgs = [m async for m in await c.fetch(2, max_wait=2)]
        await msgs[0].ack_sync()
        ci = await c.info()
        assert (ci.delivered.consumer_seq, ci.delivered.stream_seq) == (2, 2)
        assert (ci.ack_floor.consumer_seq, ci.ack_floor.stream_seq) == (1, 1)
        assert ci.delivered.last_active.tzinfo is not None
        assert ci.num_ack_pending == 1 and ci.num_pending == 1
    finally:
        await js.delete_stream(s.name)
        await nc.close()


async def test_raw_stream_msg_is_decoded(nats_url):
    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    try:
        for direct in (False, True):
            s = await make_stream(js, allow_direct=direct)
            subj = f"{s.name.lower()}.raw"
            try:
                await js.publish(subj, b"\x00binary\xff", headers={"A": ["1", "2"]})
                for raw in (await s.get_msg(1, direct=direct),
                            await s.get_last_msg_for_subject(subj, direct=direct)):
                    assert isinstance(raw, nats.RawStreamMsg)
                    assert (raw.subject, raw.seq, raw.data) == (subj, 1, b"\x00binary\xff")
                    assert isinstance(raw.headers, nats.Headers) and raw.headers.get_all("A") == ["1", "2"]
                    assert raw.time.tzinfo is not None
            finally:
                await js.delete_stream(s.name)
    finally:
        await nc.close()


async def test_plain_strings_are_accepted_for_enums(nats_url):
    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    wq = uniq("WQ")
    s = await js.create_stream(name=wq, subjects=[f"{wq.lower()}.>"], storage="memory", retention="workqueue",
                               discard="new", compression="none")
    cfg = s.cached_info().config
    assert cfg.storage is nats.StorageType.MEMORY
    assert cfg.retention is nats.RetentionPolicy.WORK_QUEUE
    assert cfg.discard is nats.DiscardPolicy.NEW
    assert cfg.compression is nats.StoreCompression.NONE
    await js.delete_stream(wq)
    name = uniq("S")
    s = await js.create_stream(nats.StreamConfig(name=name, subjects=[f"{name.lower()}.>"], storage="memory"))
    try:
        assert s.cached_info().config.storage is nats.StorageType.MEMORY
        await js.publish(f"{name.lower()}.a", b"1")
        await js.publish(f"{name.lower()}.a", b"2")
        c = await js.create_consumer(name, nats.ConsumerConfig(durable_name="d", ack_policy="all",
                                                               deliver_policy="by_start_sequence", opt_start_seq=2,
                                                               replay_policy="instant"))
        ccfg = c.cached_info().config
        assert ccfg.ack_policy is nats.AckPolicy.ALL
        assert ccfg.deliver_policy is nats.DeliverPolicy.BY_START_SEQUENCE
        assert ccfg.replay_policy is nats.ReplayPolicy.INSTANT
        assert (await c.next(timeout=2)).data == b"2"
        # a dict config too
        c2 = await js.create_consumer(name, {"durable_name": "e", "deliver_policy": "last"})
        assert c2.cached_info().config.deliver_policy is nats.DeliverPolicy.LAST
    finally:
        await js.delete_stream(name)
        await nc.close()


async def test_new_consumers_default_to_explicit_ack(nats_url):
    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    s = await make_stream(js)
    try:
        for c in (await s.create_consumer(), await js.create_consumer(s.name, nats.ConsumerConfig(name="n")),
                  await js.create_or_update_consumer(s.name, {"durable_name": "d"})):
            assert c.cached_info().config.ack_policy is nats.AckPolicy.EXPLICIT
        assert nats.ConsumerConfig().ack_policy is nats.AckPolicy.EXPLICIT
    finally:
        await js.delete_stream(s.name)
        await nc.close()


async def test_js_publish_msg_and_pub_ack(nats_url):
    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    s = await make_stream(js)
    subj = f"{s.name.lower()}.pm"
    try:
        ack = await js.publish_msg(nats.Msg(subject=subj, data=b"hello", headers={"H": "1"}), msg_id="id-1")
        assert isinstance(ack, nats.PubAck)
        assert (ack.stream, ack.seq, ack.duplicate, ack.domain) == (s.name, 1, False, None)
        fut = await js.publish_async(subj, b"async", headers={"A": ["1", "2"]})
        await js.publish_async_complete(timeout=5)
        assert fut.result().seq == 2
        assert (await s.get_msg(2)).headers.get_all("A") == ["1", "2"]
        again = await js.publish(subj, b"hello", msg_id="id-1")
        assert again.duplicate is True and again.seq == 1
        raw = await s.get_msg(1)
        assert raw.headers["H"] == "1" and raw.headers["Nats-Msg-Id"] == "id-1"
    finally:
        await js.delete_stream(s.name)
        await nc.close()


async def test_fetch_error_when_the_consumer_is_deleted(nats_url):
    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    s = await make_stream(js)
    try:
        c = await s.create_consumer(durable_name="gone")
        batch = await c.fetch(5, max_wait=10)
        assert await wait_until(lambda: _waiting(c), 5)  # the pull is registered
        start = time.monotonic()
        await s.delete_consumer("gone")
        # nothing fails silently: the batch ends with the error, never as an empty batch
        with pytest.raises(nats.ConsumerDeletedError):
            [m async for m in batch]
        assert time.monotonic() - start < 5
        assert isinstance(batch.error, nats.ConsumerDeletedError), batch.error
    finally:
        await js.delete_stream(s.name)
        await nc.close()


async def test_ordered_consumer_options(nats_url):
    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    s = await make_stream(js)
    p = s.name.lower()
    try:
        for i in range(6):
            await js.publish(f"{p}.{'a' if i % 2 == 0 else 'b'}", b"d%d" % i)  # seqs 1..6; a = 1, 3, 5
        oc = await js.ordered_consumer(s.name, filter_subjects=[f"{p}.a"], deliver_policy="by_start_sequence",
                                       opt_start_seq=2, replay_policy=nats.ReplayPolicy.INSTANT,
                                       inactive_threshold=30.0, headers_only=True, max_reset_attempts=3)
        cfg = oc.cached_info().config
        assert cfg.headers_only is True and cfg.inactive_threshold == 30.0
        assert cfg.ack_policy is nats.AckPolicy.NONE
        msgs = [m async for m in await oc.fetch(2, max_wait=2)]
        assert [m.metadata.sequence.stream for m in msgs] == [3, 5]
        assert all(m.data == b"" and m.headers["Nats-Msg-Size"] == "2" for m in msgs)

        later = datetime.now(UTC)
        await prims.sleep(0.01)
        await js.publish(f"{p}.a", b"late")
        oc2 = await s.ordered_consumer(filter_subjects=f"{p}.a", deliver_policy=nats.DeliverPolicy.BY_START_TIME,
                                       opt_start_time=later)
        assert (await oc2.next(timeout=2)).data == b"late"
        # filter_subjects is the first parameter, positional too, on both
        oc3 = await js.ordered_consumer(s.name, f"{p}.b")
        assert [m.data async for m in await oc3.fetch(3, max_wait=2)] == [b"d1", b"d3", b"d5"]
        oc4 = await s.ordered_consumer([f"{p}.b"])
        assert (await oc4.next(timeout=2)).data == b"d1"
    finally:
        await js.delete_stream(s.name)
        await nc.close()


async def test_consume_by_bytes_with_the_documented_default_of_max_messages(nats_url):
    """``consume(cb, max_messages=500, max_bytes=None, ...)``: giving max_bytes alone works
    (the default 500 does not count as given); both given explicitly is an error."""
    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    s = await make_stream(js)
    p = s.name.lower()
    try:
        for i in range(20):
            await js.publish(f"{p}.x", b"%02d" % i)
        c = await js.create_consumer(s.name, durable_name="bytes", ack_policy="none")
        got: list = []
        done = prims.Signal()

        def cb(msg):
            got.append(msg.data)
            if len(got) == 20:
                done.set()

        cc = await c.consume(cb, max_bytes=4096)
        assert await done.wait(10)
        cc.stop()
        assert got == [b"%02d" % i for i in range(20)]
        with pytest.raises(ValueError, match="only one of max_messages and max_bytes"):
            await c.consume(cb, max_messages=10, max_bytes=4096)
        it = await c.messages(max_bytes=4096)
        it.stop()
    finally:
        await js.delete_stream(s.name)
        await nc.close()


# =====================================================================================
# Key-value and object stores


async def test_kv_errors_are_typed(nats_url):
    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("kverr")
    kv = await js.create_key_value(bucket=bucket, storage="memory", history=3)
    try:
        r1 = await kv.create("k", b"1")
        with pytest.raises(nats.WrongLastSequenceError) as ei:
            await kv.create("k", b"2")
        assert isinstance(ei.value, nats.KeyExistsError) and ei.value.err_code == 10071
        with pytest.raises(nats.WrongLastSequenceError) as ei:
            await kv.update("k", b"2", r1 + 100)
        assert ei.value.err_code == 10071
        await kv.delete("k")
        with pytest.raises(nats.KeyNotFoundError) as ei:
            await kv.get("k")
        assert isinstance(ei.value, nats.KeyDeletedError)
        with pytest.raises(nats.KeyNotFoundError) as ei:
            await kv.get("never")
        assert not isinstance(ei.value, nats.KeyDeletedError)
        with pytest.raises(nats.BucketNotFoundError):
            await js.key_value(uniq("missing"))
        with pytest.raises(nats.InvalidKeyError):
            await kv.put("bad key", b"x")
        with pytest.raises(nats.JetStreamError):
            await js.key_value("bad.bucket")
    finally:
        await js.delete_key_value(bucket)
        await nc.close()


async def test_kv_entry_fields_and_status_properties(nats_url):
    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("kvent")
    kv = await js.create_key_value(bucket=bucket, storage=nats.StorageType.MEMORY, history=5)
    try:
        assert kv.bucket == bucket
        r1 = await kv.put("k", b"v1")
        r2 = await kv.put("k", "v2")
        await kv.delete("k")
        r3 = await kv.put("k", b"v3")
        e = await kv.get("k")
        assert isinstance(e, nats.KeyValueEntry)
        assert (e.bucket, e.key, e.value, e.revision) == (bucket, "k", b"v3", r3)
        assert e.operation is nats.KeyValueOp.PUT
        assert e.created.tzinfo is not None
        assert abs(e.created - datetime.now(UTC)) < timedelta(minutes=1)
        old = await kv.get("k", revision=r1)
        assert (old.value, old.revision) == (b"v1", r1)
        hist = await kv.history("k")
        assert [h.operation for h in hist] == [nats.KeyValueOp.PUT, nats.KeyValueOp.PUT, nats.KeyValueOp.DEL,
                                               nats.KeyValueOp.PUT]
        assert [h.revision for h in hist][:2] == [r1, r2]
        assert [h.delta for h in hist] == [3, 2, 1, 0]
        await kv.purge("k")
        assert (await kv.history("k"))[-1].operation is nats.KeyValueOp.PURGE
        st = await kv.status()
        assert st.bucket == bucket
        assert st.values == 1  # only the purge marker stays
        assert isinstance(st.size, int) and st.size > 0
        assert st.history == 5
    finally:
        await js.delete_key_value(bucket)
        await nc.close()


async def test_object_info_fields_and_status_properties(nats_url):
    import base64
    import hashlib

    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("obinfo")
    obs = await js.create_object_store(bucket=bucket, storage="memory")
    try:
        data = os.urandom(300)
        before = datetime.now(UTC) - timedelta(seconds=5)
        info = await obs.put(nats.ObjectMeta(name="thing", description="d", headers={"H": ["1", "2"]},
                                             metadata={"m": "v"}, max_chunk_size=128), data)
        for got in (info, await obs.get_info("thing")):
            assert isinstance(got, nats.ObjectInfo)
            assert (got.name, got.bucket, got.size, got.chunks) == ("thing", bucket, 300, 3)
            assert got.description == "d" and got.metadata == {"m": "v"}
            assert isinstance(got.headers, nats.Headers) and got.headers.get_all("H") == ["1", "2"]
            assert isinstance(got.nuid, str) and got.nuid
            assert got.mtime.tzinfo is not None and got.mtime >= before
            assert got.digest == "SHA-256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode()
            assert got.deleted is False and got.link is None
        res = await obs.get("thing")
        assert res.info.name == "thing" and await res.read() == data
        link = await obs.add_link("alias", info)
        assert link.link == nats.ObjectLink(bucket=bucket, name="thing")
        assert await obs.get_bytes("alias") == data
        blink = await obs.add_bucket_link("whole", bucket)
        assert blink.link.bucket == bucket and blink.link.name is None
        await obs.delete("thing")
        gone = await obs.get_info("thing", show_deleted=True)
        assert gone.deleted is True
        with pytest.raises(nats.ObjectNotFoundError):
            await obs.get_info("thing")
        st = await obs.status()
        assert st.bucket == bucket and isinstance(st.size, int) and st.size > 0
        assert st.sealed is False
    finally:
        await js.delete_object_store(bucket)
        await nc.close()


async def test_put_file_names_the_object_by_the_path_as_given(nats_url, tmp_path, monkeypatch):
    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("obfile")
    obs = await js.create_object_store(bucket=bucket, storage="memory")
    try:
        (tmp_path / "sub").mkdir()
        (tmp_path / "sub" / "f.bin").write_bytes(b"file data")
        monkeypatch.chdir(tmp_path)
        info = await obs.put_file("sub/f.bin")
        assert info.name == "sub/f.bin"
        info = await obs.put_file(pathlib.Path("sub") / "f.bin")
        assert info.name == "sub/f.bin" and isinstance(info.name, str)
        info = await obs.put_file(str(tmp_path / "sub" / "f.bin"))
        assert info.name == str(tmp_path / "sub" / "f.bin")
        info = await obs.put_file("sub/f.bin", name="renamed")
        assert info.name == "renamed"
        assert await obs.get_bytes("renamed") == b"file data"
        assert sorted(o.name for o in await obs.list()) == sorted(["sub/f.bin", str(tmp_path / "sub" / "f.bin"),
                                                                    "renamed"])
    finally:
        await js.delete_object_store(bucket)
        await nc.close()


# =====================================================================================
# More connecting: reconnect limits, buffers, timeouts, concurrent drains


async def test_reconnect_limits(fresh_nats_server):
    srv = fresh_nats_server
    closed_a, closed_b = prims.Signal(), prims.Signal()
    no_reconnect = await nats.connect(srv.url, allow_reconnect=False, closed_cb=closed_a.set)
    limited = await nats.connect(srv.url, max_reconnect_attempts=2, reconnect_time_wait=0.05,
                                 reconnect_jitter=0.0, connect_timeout=0.5, closed_cb=closed_b.set,
                                 reconnect_buffer_size=1024)
    try:
        srv.kill()
        assert await closed_a.wait(5)
        assert no_reconnect.is_closed
        assert await wait_until(lambda: not limited.is_connected)
        # what does not fit in the reconnect buffer is refused, not silently dropped
        if not limited.is_closed:
            with pytest.raises(nats.NatsError):
                await limited.publish("buf.x", b"x" * 4096)
        assert await closed_b.wait(10)
        assert limited.is_closed
        with pytest.raises(nats.ConnectionClosedError):
            await limited.publish("buf.x", b"x")
    finally:
        await no_reconnect.close()
        await limited.close()


async def test_connect_timeout_against_a_frozen_server(fresh_nats_server):
    fresh_nats_server.freeze()
    try:
        start = time.monotonic()
        with pytest.raises(nats.NoServersError):
            await nats.connect(fresh_nats_server.url, connect_timeout=0.5)
        assert time.monotonic() - start < 3
    finally:
        fresh_nats_server.thaw()


async def test_concurrent_drains_both_return_once_closed(nats_url):
    nc = await nats.connect(nats_url)
    started = prims.Signal()

    async def slow(msg):
        started.set()
        await prims.sleep(0.5)

    await nc.subscribe("drain.twice", cb=slow)
    await nc.flush()
    await nc.publish("drain.twice", b"x")
    assert await started.wait(5)
    first = prims.spawn(nc.drain)
    assert await wait_until(lambda: nc.is_draining, 5)
    assert not nc.is_closed
    await nc.drain()
    assert nc.is_closed
    await prims.join(first, 5)


# =====================================================================================
# More JetStream and object-store types


def test_object_meta_info_and_link_constructors():
    meta = nats.ObjectMeta("n", "desc", {"K": "v"}, {"m": "1"}, 1024)
    assert (meta.name, meta.description, meta.metadata, meta.max_chunk_size) == ("n", "desc", {"m": "1"}, 1024)
    assert isinstance(meta.headers, nats.Headers) and meta.headers["K"] == "v"
    assert nats.ObjectMeta(name="x").headers is None
    link = nats.ObjectLink("b", "n")
    assert (link.bucket, link.name) == ("b", "n")
    assert nats.ObjectLink(bucket="b").name is None
    info = nats.ObjectInfo(name="n", bucket="b", nuid="id", size=3, chunks=1, digest="SHA-256=x")
    assert (info.deleted, info.link, info.mtime) == (False, None, None)


async def test_nested_config_types_round_trip(nats_url):
    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    origin = await make_stream(js, 2)
    name = uniq("S")
    p = name.lower()
    try:
        s = await js.create_stream(
            nats.StreamConfig(name=name, storage=nats.StorageType.MEMORY),
            subjects=[f"{p}.in.>"],
            subject_transform=nats.SubjectTransformConfig(src=f"{p}.in.>", dest=f"{p}.stored.>"),
            republish=nats.RePublish(src=f"{p}.stored.>", dest=f"repub.{p}.>"),
            consumer_limits=nats.ConsumerLimits(inactive_threshold=60.0, max_ack_pending=10),
            sources=[nats.StreamSource(name=origin.name, filter_subject=f"{origin.name.lower()}.>")],
            metadata={"owner": "contract"},
        )
        cfg = (await s.info()).config
        assert cfg.subjects == [f"{p}.in.>"]
        assert isinstance(cfg.subject_transform, nats.SubjectTransformConfig)
        assert (cfg.subject_transform.src, cfg.subject_transform.dest) == (f"{p}.in.>", f"{p}.stored.>")
        assert isinstance(cfg.republish, nats.RePublish) and cfg.republish.dest == f"repub.{p}.>"
        assert isinstance(cfg.consumer_limits, nats.ConsumerLimits)
        assert cfg.consumer_limits.inactive_threshold == 60.0 and cfg.consumer_limits.max_ack_pending == 10
        assert isinstance(cfg.sources[0], nats.StreamSource) and cfg.sources[0].name == origin.name
        assert cfg.metadata["owner"] == "contract"
        sub = await nc.subscribe(f"repub.{p}.>")
        await js.publish(f"{p}.in.x", b"transformed")
        assert (await sub.next_msg(timeout=5)).subject == f"repub.{p}.x"
        async def stored() -> bool:
            return (await s.info()).state.messages == 3  # 2 sourced + 1 published

        assert await wait_until(stored, 5)
        assert (await s.get_last_msg_for_subject(f"{p}.stored.x")).data == b"transformed"
    finally:
        try:
            await js.delete_stream(name)
        except nats.StreamNotFoundError:
            pass
        await js.delete_stream(origin.name)
        await nc.close()


# =====================================================================================
# Documented signatures (names, order and the defaults API.md gives)


def _check_signature(fn, *expected) -> None:
    """``expected``: parameter names in order, or (name, default) pairs; extra trailing
    parameters are allowed."""
    params = [p for p in inspect.signature(fn).parameters.values() if p.name != "self"]
    names = [p.name for p in params]
    want = [e if isinstance(e, str) else e[0] for e in expected]
    assert names[:len(want)] == want, (fn, names)
    for e, p in zip(expected, params, strict=False):
        if not isinstance(e, str):
            assert p.default == e[1], (fn, p.name, p.default)


def test_documented_signatures():
    pkg = nats.Client.__module__.rsplit(".", 1)[0]  # the flavour's implementation package

    def mod(name: str):
        return importlib.import_module(f"{pkg}.{name}")

    ConsumeContext, Consumer, MessagesContext = (getattr(mod("consumer"), n)
                                                 for n in ("ConsumeContext", "Consumer", "MessagesContext"))
    JetStream = mod("jetstream").JetStream
    KeyValue = mod("kv").KeyValue
    ObjectStore = mod("objects").ObjectStore
    OrderedConsumer = mod("ordered").OrderedConsumer
    Stream = mod("stream").Stream

    C, S = nats.Client, nats.Subscription
    _check_signature(C.publish, "subject", ("data", b""), ("reply", None), ("headers", None))
    _check_signature(C.subscribe, "subject", ("queue", None), ("cb", None), ("max_msgs", 0), "pending_msgs_limit",
                     "pending_bytes_limit")
    _check_signature(C.request, "subject", ("data", b""), ("timeout", 1.0), ("headers", None))
    _check_signature(C.flush, "timeout")
    _check_signature(C.jetstream, ("domain", None), ("api_prefix", None), ("timeout", 5.0),
                     ("publish_async_max_pending", 4000))
    _check_signature(S.next_msg, ("timeout", 1.0))
    _check_signature(S.unsubscribe, ("max_msgs", 0))
    _check_signature(nats.Msg.respond, "data", ("headers", None))
    _check_signature(nats.Msg.ack_sync, "timeout")
    _check_signature(nats.Msg.nak, ("delay", None))
    _check_signature(nats.Msg.term, ("reason", None))
    _check_signature(nats.Headers.get_all, "key")
    _check_signature(nats.Headers.add, "key", "value")

    pub = ["subject", ("data", b""), ("headers", None), ("msg_id", None), ("expected_stream", None),
           ("expected_last_seq", None), ("expected_last_subject_seq", None), ("expected_last_msg_id", None),
           ("timeout", None), ("retry_attempts", 2), ("retry_wait", 0.25)]
    _check_signature(JetStream.publish, *pub)
    _check_signature(JetStream.publish_async, *pub, ("stall_wait", 0.2))
    _check_signature(JetStream.publish_msg, "msg")
    _check_signature(JetStream.publish_async_complete, ("timeout", None))
    _check_signature(JetStream.create_stream, ("config", None))
    _check_signature(JetStream.stream, "name")
    _check_signature(JetStream.list_streams, ("subject", None))
    _check_signature(JetStream.stream_names, ("subject", None))
    _check_signature(JetStream.stream_name_by_subject, "subject")
    _check_signature(JetStream.create_consumer, "stream", ("config", None))
    _check_signature(JetStream.consumer, "stream", "name")
    _check_signature(JetStream.pause_consumer, "stream", "name", "until")
    _check_signature(Stream.info, ("subjects_filter", None), ("deleted_details", False))
    _check_signature(Stream.purge, ("subject", None), ("sequence", None), ("keep", None))
    _check_signature(Stream.get_msg, "seq", ("direct", False))
    _check_signature(Stream.get_last_msg_for_subject, "subject", ("direct", False))
    _check_signature(Stream.delete_msg, "seq")
    _check_signature(Stream.secure_delete_msg, "seq")
    _check_signature(Stream.create_consumer, ("config", None))
    _check_signature(Stream.pause_consumer, "name", "until")
    _check_signature(OrderedConsumer.__init__, "js", "stream", ("filter_subjects", None), "deliver_policy",
                     ("opt_start_seq", None), ("opt_start_time", None), "replay_policy", "inactive_threshold",
                     ("headers_only", False), "max_reset_attempts")
    _check_signature(Consumer.fetch, "batch", ("max_wait", 30.0), ("heartbeat", None))
    _check_signature(Consumer.fetch_bytes, "max_bytes", "max_wait")
    _check_signature(Consumer.fetch_no_wait, "batch")
    _check_signature(Consumer.next, "timeout")
    _check_signature(JetStream.ordered_consumer, "stream", ("filter_subjects", None))
    _check_signature(Stream.ordered_consumer, ("filter_subjects", None))
    _check_signature(Consumer.consume, "cb", ("max_messages", 500), ("max_bytes", None), ("expires", 30.0),
                     ("threshold_messages", None), ("threshold_bytes", None), ("heartbeat", None),
                     ("error_cb", None), ("stop_after", None))
    _check_signature(Consumer.messages, "max_messages", "max_bytes", "expires", "heartbeat")
    _check_signature(ConsumeContext.closed)
    _check_signature(MessagesContext.next, ("timeout", None))
    _check_signature(KeyValue.get, "key", ("revision", None))
    _check_signature(KeyValue.put, "key", "value")
    _check_signature(KeyValue.create, "key", "value")
    _check_signature(KeyValue.update, "key", "value", "last_revision")
    _check_signature(KeyValue.delete, "key", ("last_revision", None))
    _check_signature(KeyValue.purge, "key", ("last_revision", None))
    _check_signature(KeyValue.history, "key")
    _check_signature(KeyValue.watch, "keys", ("include_history", False), ("ignore_deletes", False),
                     ("meta_only", False), ("updates_only", False), ("resume_from_revision", None))
    _check_signature(KeyValue.purge_deletes, "older_than")
    _check_signature(ObjectStore.put, "meta_or_name", "reader")
    _check_signature(ObjectStore.put_file, "path", ("name", None))
    _check_signature(ObjectStore.get, "name")
    _check_signature(ObjectStore.get_file, "name", "path")
    _check_signature(ObjectStore.get_info, "name", ("show_deleted", False))
    _check_signature(ObjectStore.update_meta, "name", "meta")
    _check_signature(ObjectStore.delete, "name")
    _check_signature(ObjectStore.add_link, "name", "obj_info")
    _check_signature(ObjectStore.add_bucket_link, "name", "bucket")
    _check_signature(ObjectStore.list, ("show_deleted", False))
