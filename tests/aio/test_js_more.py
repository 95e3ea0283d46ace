"""More of nats.go's JetStream surface against a real nats-server: get_msg with
next_by_subject (direct and API), the JetStream trace hook, the object digest helpers
and messages(err_on_missing_heartbeat=False) (asyncio source; the blocking twin is
generated)."""
from __future__ import annotations

import base64
import hashlib

import orjson
import pytest

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims
from jetwire.testing import NatsServer
from tests.aio._helpers import Errors, fill, uniq


# -- get_msg(next_by_subject=) ----------------------------------------------------------
@pytest.mark.parametrize("allow_direct", [False, True])
async def test_get_msg_next_by_subject(nats_url, allow_direct):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    name = uniq("NEXT")
    s = await js.create_stream(name=name, subjects=[f"{name}.>"], storage="memory", allow_direct=allow_direct)
    try:
        for subj in ("a", "b", "a", "b", "c"):  # seqs 1..5
            await js.publish(f"{name}.{subj}", subj.encode())
        for direct in (False, True):
            if direct and not allow_direct:
                continue
            got = await s.get_msg(1, direct=direct, next_by_subject=f"{name}.b")
            assert (got.seq, got.subject, got.data) == (2, f"{name}.b", b"b")
            assert (await s.get_msg(2, direct=direct, next_by_subject=f"{name}.b")).seq == 2  # at or after
            assert (await s.get_msg(3, direct=direct, next_by_subject=f"{name}.b")).seq == 4
            assert (await s.get_msg(4, direct=direct, next_by_subject=f"{name}.c")).seq == 5
            assert (await s.get_msg(3, direct=direct, next_by_subject=f"{name}.*")).seq == 3
            assert (await s.get_msg(0, direct=direct, next_by_subject=f"{name}.>")).seq == 1
            with pytest.raises(jetwire.MsgNotFoundError):
                await s.get_msg(5, direct=direct, next_by_subject=f"{name}.a")
        with pytest.raises(ValueError):
            await s.get_msg(1, next_by_subject="")
        with pytest.raises(jetwire.BadSubjectError):
            await s.get_msg(1, next_by_subject="a b")
    finally:
        await js.delete_stream(name)
        await nc.close()


# -- trace_cb ------------------------------------------------------------------------------
async def test_trace_cb_sees_every_api_request_and_response(nats_url):
    nc = await jetwire.connect(nats_url)
    calls: list = []
    js = nc.jetstream(trace_cb=lambda subject, payload: calls.append((subject, payload)))
    name = uniq("TRACE")
    try:
        await js.create_stream(name=name, subjects=[f"{name}.>"], storage="memory", allow_direct=True)
        assert len(calls) == 2
        (req_subject, req_payload), (resp_subject, resp_payload) = calls
        assert req_subject == f"$JS.API.STREAM.CREATE.{name}"
        assert isinstance(req_payload, bytes) and orjson.loads(req_payload)["name"] == name
        assert resp_subject != req_subject and isinstance(resp_payload, bytes)
        assert orjson.loads(resp_payload)["type"] == "io.nats.jetstream.api.v1.stream_create_response"

        calls.clear()
        await js.account_info()
        assert calls[0] == ("$JS.API.INFO", b"")
        assert orjson.loads(calls[1][1])["type"] == "io.nats.jetstream.api.v1.account_info_response"

        calls.clear()
        with pytest.raises(jetwire.StreamNotFoundError):
            await js.stream_info(uniq("missing"))
        assert len(calls) == 2 and b"stream not found" in calls[1][1]

        # a direct get is an API request too; publishes are not
        calls.clear()
        await js.publish(f"{name}.a", b"hello")
        assert calls == []
        s = await js.stream(name)
        calls.clear()
        assert (await s.get_msg(1)).data == b"hello"
        assert calls[0] == (f"$JS.API.DIRECT.GET.{name}", b'{"seq":1}')
        assert calls[1][1] == b"hello"
    finally:
        await js.delete_stream(name)
        await nc.close()


async def test_trace_cb_domain_no_response_and_failures(nats_url):
    errors = Errors()
    nc = await jetwire.connect(nats_url, error_cb=errors)
    calls: list = []

    async def trace(subject, payload):  # aio: a coroutine function works too
        calls.append(subject)
        await prims.sleep(0)

    js = nc.jetstream(domain="nowhere", trace_cb=trace, timeout=1)
    try:
        with pytest.raises(jetwire.JetStreamNotEnabledError):
            await js.account_info()
        assert calls == ["$JS.nowhere.API.INFO"]  # sent, never answered

        def broken(subject, payload):
            raise RuntimeError("trace failed")

        js2 = nc.jetstream(trace_cb=broken)
        assert (await js2.account_info()).api.level >= 1  # the request goes on
        assert isinstance(await errors.wait_for(RuntimeError), RuntimeError)
    finally:
        await nc.close()


# -- object digests --------------------------------------------------------------------------
async def test_object_digest_helpers_match_the_object_store(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("OBJ")
    obs = await js.create_object_store(bucket=bucket, storage="memory")
    try:
        data = bytes(range(256)) * 1000
        info = await obs.put_bytes("blob", data)
        assert jetwire.object_digest(data) == info.digest
        assert (await obs.get_info("blob")).digest == jetwire.object_digest(data)
        raw = hashlib.sha256(data).digest()
        assert jetwire.decode_object_digest(info.digest) == raw
        assert jetwire.object_digest(b"") == "SHA-256=" + base64.urlsafe_b64encode(hashlib.sha256(b"").digest()).decode()
        # standard base64 (as some writers send it) decodes to the same bytes
        std = "SHA-256=" + base64.b64encode(raw).decode()
        assert jetwire.decode_object_digest(std) == raw
        for bad in ("nope", "MD5=abc", "SHA-256=***"):
            with pytest.raises(jetwire.DigestMismatchError):
                jetwire.decode_object_digest(bad)
    finally:
        await js.delete_object_store(bucket)
        await nc.close()


# -- messages(err_on_missing_heartbeat=False) --------------------------------------------------
async def test_messages_without_heartbeat_errors_keep_going(fresh_nats_server: NatsServer):
    nc = await jetwire.connect(fresh_nats_server.url)
    js = nc.jetstream()
    name = uniq("HB")
    await js.create_stream(name=name, subjects=[f"{name}.>"], storage="memory")
    c = await js.create_consumer(name, durable_name="c", ack_policy="none")
    try:
        quiet = await c.messages(expires=2, heartbeat=0.5, err_on_missing_heartbeat=False)
        loud = await c.messages(expires=2, heartbeat=0.5)
        fresh_nats_server.freeze()
        try:
            # heartbeats stop for far longer than their 1 s window
            with pytest.raises(jetwire.NoHeartbeatError):
                await loud.next(timeout=10)
            with pytest.raises(jetwire.TimeoutError):
                await quiet.next(timeout=3)  # no NoHeartbeatError: it re-pulled and waits on
        finally:
            fresh_nats_server.thaw()
        loud.stop()
        await fill(js, f"{name}.a", 3)
        seqs = [(await quiet.next(timeout=10)).metadata.sequence.stream for _ in range(3)]
        assert seqs == [1, 2, 3]
        quiet.stop()
    finally:
        await js.delete_stream(name)
        await nc.close()


# -- batched direct get: stream.get_msgs() -------------------------------------------------
async def test_get_msgs_range_pages_filters_and_errors(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    name = uniq("BATCH")
    s = await js.create_stream(name=name, subjects=[f"{name}.>"], storage="memory", allow_direct=True)
    try:
        for i in range(600):  # seqs 1..600 on a, b, c in turn
            await js.publish_async(f"{name}.{'abc'[i % 3]}", b"%d" % i, headers={"X-I": str(i)})
        await js.publish_async_complete(timeout=30)
        await s.delete_msg(3)

        everything = [m async for m in s.get_msgs(page=100)]  # six pages and more
        assert [m.seq for m in everything] == [q for q in range(1, 601) if q != 3]
        first = everything[0]
        assert (first.subject, first.data, first.headers["X-I"]) == (f"{name}.a", b"0", "0")
        assert all(not k.startswith("Nats-") for k in first.headers)  # the direct-get headers are gone
        assert [m.data for m in everything] == [b"%d" % (q - 1) for q in range(1, 601) if q != 3]

        assert [m.seq for m in [m async for m in s.get_msgs(batch=10, seq=2)]] == [2, *list(range(4, 13))]
        bs = [m async for m in s.get_msgs(subject=f"{name}.b", page=7)]
        assert [m.seq for m in bs] == list(range(2, 601, 3))
        assert {m.subject for m in bs} == {f"{name}.b"}
        assert [m.seq for m in [m async for m in s.get_msgs(batch=4, seq=590, subject=f"{name}.>")]] == \
            [590, 591, 592, 593]
        assert [m async for m in s.get_msgs(seq=601)] == []
        assert [m async for m in s.get_msgs(subject=f"{name}.none")] == []

        small = [m async for m in s.get_msgs(max_bytes=200, page=100)]
        assert 0 < len(small) < 100 and [m.seq for m in small] == [m.seq for m in everything[:len(small)]]

        with pytest.raises(ValueError):
            [m async for m in s.get_msgs(seq=1, start_time=everything[9].time)]
        with pytest.raises(ValueError):
            [m async for m in s.get_msgs(batch=0)]
        with pytest.raises(ValueError):
            [m async for m in s.get_msgs(up_to_seq=5)]
        with pytest.raises(jetwire.BadSubjectError):
            [m async for m in s.get_msgs(subject="a b")]
        plain = await js.create_stream(name=name + "_P", subjects=[f"{name}P.>"], storage="memory")
        await js.publish(f"{name}P.x", b"x")
        with pytest.raises(jetwire.APIError) as ei:
            [m async for m in plain.get_msgs()]
        assert ei.value.code == 503
        await js.delete_stream(name + "_P")
    finally:
        await js.delete_stream(name)
        await nc.close()


async def test_get_msgs_last_per_subject(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    name = uniq("MLAST")
    s = await js.create_stream(name=name, subjects=[f"{name}.>"], storage="memory", allow_direct=True)
    try:
        for i in range(30):  # seq i+1 on k0..k4
            await js.publish(f"{name}.k{i % 5}", b"%d" % i)
        # from a time on: a message whose time (to the microsecond, as RawStreamMsg has
        # it) is later than its predecessor's is the first one from its time
        everything = [m async for m in s.get_msgs()]
        k = next(i for i in range(10, len(everything)) if everything[i - 1].time < everything[i].time)
        from_k = [m async for m in s.get_msgs(batch=5, start_time=everything[k].time)]
        assert [m.seq for m in from_k] == [m.seq for m in everything[k:k + 5]]

        last = [m async for m in s.get_msgs(multi_last=[f"{name}.k1", f"{name}.k3"])]
        assert [(m.subject, m.seq) for m in last] == [(f"{name}.k1", 27), (f"{name}.k3", 29)]
        every = [m async for m in s.get_msgs(multi_last=[f"{name}.>"])]
        assert [m.seq for m in every] == [26, 27, 28, 29, 30]
        as_of = [m async for m in s.get_msgs(multi_last=[f"{name}.*"], up_to_seq=12)]
        assert [m.seq for m in as_of] == [8, 9, 10, 11, 12]
        # past the end (the server finds nothing there): as of the end, never an empty answer
        for beyond in (31, 5000):
            past = [m async for m in s.get_msgs(multi_last=[f"{name}.*"], up_to_seq=beyond)]
            assert [m.seq for m in past] == [26, 27, 28, 29, 30]
        assert [m async for m in s.get_msgs(multi_last=[f"{name}.none.*"], up_to_seq=5000)] == []
        assert [m.seq for m in [m async for m in s.get_msgs(multi_last=[f"{name}.>"], batch=2)]] == [26, 27]

        # one per page: the later pages see the stream as the first one did
        seen = []
        async for m in s.get_msgs(multi_last=[f"{name}.>"], page=1):
            seen.append(m.seq)
            if len(seen) == 1:
                await js.publish(f"{name}.k4", b"late")  # seq 31, after the first page
        assert seen == [26, 27, 28, 29, 30]
        assert [m.seq for m in [m async for m in s.get_msgs(multi_last=[f"{name}.>"])]] == [26, 27, 28, 29, 31]
        with pytest.raises(ValueError):
            [m async for m in s.get_msgs(multi_last=f"{name}.>")]
        with pytest.raises(ValueError):
            [m async for m in s.get_msgs(multi_last=[f"{name}.>"], subject=f"{name}.k1")]
    finally:
        await js.delete_stream(name)
        await nc.close()


# -- publish_async_err_cb and fut.msg --------------------------------------------------------
class _Failures:
    def __init__(self) -> None:
        self.calls: list = []
        self.signal = prims.Signal()

    async def wait(self, n: int) -> list:
        while len(self.calls) < n:
            self.signal.clear()
            if len(self.calls) >= n:
                break
            assert await self.signal.wait(10), f"{len(self.calls)} of {n} failures reported"
        return self.calls


async def test_publish_async_err_cb_gets_the_failed_msg(nats_url):
    nc = await jetwire.connect(nats_url)
    three = _Failures()
    two = _Failures()

    async def cb3(js, msg, err):  # nats.go's shape (a coroutine function in aio)
        three.calls.append((js, msg, err))
        three.signal.set()

    def cb2(msg, err):
        two.calls.append((msg, err))
        two.signal.set()

    js = nc.jetstream(publish_async_err_cb=cb3)
    js2 = nc.jetstream(publish_async_err_cb=cb2)
    name = uniq("ERRCB")
    await js.create_stream(name=name, subjects=[f"{name}.>"], storage="memory")
    try:
        ok = await js.publish_async(f"{name}.a", b"fine", msg_id="m-1")
        assert (await prims.wait_future(ok, 10)).seq == 1
        assert (ok.msg.subject, ok.msg.data, ok.msg.headers["Nats-Msg-Id"]) == (f"{name}.a", b"fine", "m-1")

        other = uniq("LATER")
        nowhere = await js.publish_async(f"{other}.x", b"lost", headers={"K": "v"}, retry_attempts=0)
        wrong = await js.publish_async(f"{name}.a", b"again", expected_last_seq=7, msg_id="m-2")
        with pytest.raises(jetwire.NoStreamResponseError):
            await prims.wait_future(nowhere, 10)
        with pytest.raises(jetwire.APIError):
            await prims.wait_future(wrong, 10)
        calls = await three.wait(2)
        by_data = {c[1].data: c for c in calls}
        assert set(by_data) == {b"lost", b"again"}
        ctx, msg, err = by_data[b"lost"]
        assert ctx is js and isinstance(err, jetwire.NoStreamResponseError) and msg.headers["K"] == "v"
        ctx, msg, err = by_data[b"again"]
        assert isinstance(err, jetwire.APIError) and msg.headers["Nats-Msg-Id"] == "m-2"
        assert msg.headers["Nats-Expected-Last-Sequence"] == "7"
        assert msg.subject == f"{name}.a" and wrong.msg.data == b"again"

        # the failed message, published again as it was once its stream exists, is stored
        await js.create_stream(name=other, subjects=[f"{other}.>"], storage="memory")
        lost = by_data[b"lost"][1]
        retry = await js.publish_async(lost.subject, lost.data, headers=lost.headers)
        assert (await prims.wait_future(retry, 10)).stream == other
        got = await (await js.stream(other)).get_msg(1)
        assert (got.data, got.headers["K"]) == (b"lost", "v")
        await js.delete_stream(other)
        assert len(three.calls) == 2 and two.calls == []

        failing = await js2.publish_async(f"{name}.a", b"x", expected_stream="OTHER")
        with pytest.raises(jetwire.APIError):
            await prims.wait_future(failing, 10)
        (msg2, err2), = await two.wait(1)
        assert msg2.data == b"x" and isinstance(err2, jetwire.APIError)
        assert len(three.calls) == 2  # each context has its own callback

        with pytest.raises(TypeError):
            nc.jetstream(publish_async_err_cb=42)
    finally:
        await js.delete_stream(name)
        await nc.close()


async def test_publish_async_err_cb_on_timeout_and_close(nats_url):
    nc = await jetwire.connect(nats_url)
    failures = _Failures()

    def cb(js, msg, err):
        failures.calls.append((msg.data, type(err)))
        failures.signal.set()

    js = nc.jetstream(publish_async_err_cb=cb)
    # no stream: each no-responders answer is retried after 5 s, so no ack comes soon
    nowhere = f"{uniq('NOWHERE')}.x"
    fut = await js.publish_async(nowhere, b"t", timeout=0.2, retry_attempts=5, retry_wait=5.0)
    with pytest.raises(jetwire.TimeoutError):
        await prims.wait_future(fut, 10)
    assert (await failures.wait(1))[0] == (b"t", jetwire.TimeoutError)
    pending = await js.publish_async(nowhere, b"c", retry_attempts=5, retry_wait=5.0)
    await nc.close()
    with pytest.raises(jetwire.ConnectionClosedError):
        await prims.wait_future(pending, 10)
    assert (await failures.wait(2))[1] == (b"c", jetwire.ConnectionClosedError)
