"""JetStream publishing: acks, de-duplication, expectations, retries, async publishing
(asyncio source; the blocking twin is generated)."""
from __future__ import annotations

import time
import uuid

import pytest

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims
from tests.aio._helpers import server_subscriptions, uniq, wait_until


class Env:
    """A connection, its JetStream context and one memory stream on ``<name>.>``."""

    def __init__(self, url: str, make_stream: bool = True, **js_options) -> None:
        self.url = url
        self.make_stream = make_stream
        self.js_options = js_options
        self.name = uniq()
        self.p = self.name.lower()

    async def __aenter__(self) -> Env:
        self.nc = await jetwire.connect(self.url)
        self.js = self.nc.jetstream(**self.js_options)
        if self.make_stream:
            self.stream = await self.js.create_stream(name=self.name, subjects=[f"{self.p}.>"], storage="memory")
        return self

    async def __aexit__(self, *exc) -> None:
        try:
            if self.make_stream and not self.nc.is_closed:
                try:
                    await self.js.delete_stream(self.name)
                except jetwire.StreamNotFoundError:
                    pass
        finally:
            await self.nc.close()


async def result(fut, timeout: float = 5.0):
    """The value of a ``publish_async`` future (either flavour)."""
    return await prims.wait_future(fut, timeout)


async def run_later(delay: float, fn, *args) -> None:
    """Call plain ``fn(*args)`` after ``delay`` seconds, concurrently (task or thread)."""
    async def go():
        await prims.sleep(delay)
        fn(*args)

    prims.spawn(go)


# --- publish -----------------------------------------------------------------------
async def test_publish_returns_ack(nats_url):
    async with Env(nats_url) as env:
        ack = await env.js.publish(f"{env.p}.a", b"hello")
        assert isinstance(ack, jetwire.PubAck)
        assert (ack.stream, ack.seq, ack.duplicate, ack.domain) == (env.name, 1, False, None)
        ack2 = await env.js.publish(f"{env.p}.b", headers={"X-K": "v"})
        assert ack2.seq == 2
        m = await env.stream.get_msg(2)
        assert m.data == b""
        assert m.headers["X-K"] == "v"
        msg = jetwire.Msg(subject=f"{env.p}.c", data=b"via msg", headers=jetwire.Headers({"H": "1"}))
        ack3 = await env.js.publish_msg(msg, msg_id="m-3")
        assert ack3.seq == 3
        m = await env.stream.get_msg(3)
        assert m.data == b"via msg"
        assert m.headers == {"H": "1", "Nats-Msg-Id": "m-3"}


async def test_publish_dedup(nats_url):
    async with Env(nats_url) as env:
        js = env.js
        a = await js.publish(f"{env.p}.a", b"1", msg_id="id-1")
        b = await js.publish(f"{env.p}.a", b"1 again", msg_id="id-1")
        c = await js.publish(f"{env.p}.a", b"2", msg_id="id-2")
        assert (a.seq, a.duplicate) == (1, False)
        assert (b.seq, b.duplicate) == (1, True)
        assert (c.seq, c.duplicate) == (2, False)
        assert isinstance(b.duplicate, bool)
        assert (await env.stream.info()).state.messages == 2
        # user headers are kept, the msg id header is set
        d = await js.publish(f"{env.p}.a", b"3", headers={"Nats-Msg-Id": "user", "X": "y"}, msg_id="id-3")
        assert d.seq == 3
        m = await env.stream.get_msg(3)
        assert m.headers == {"Nats-Msg-Id": "id-3", "X": "y"}


async def test_publish_expectations(nats_url):
    async with Env(nats_url) as env:
        js = env.js
        p = env.p
        await js.publish(f"{p}.a", b"1", msg_id="first")  # seq 1
        await js.publish(f"{p}.b", b"2")  # seq 2
        # expected stream
        ok = await js.publish(f"{p}.a", b"3", expected_stream=env.name)  # seq 3
        assert ok.seq == 3
        with pytest.raises(jetwire.APIError) as ei:
            await js.publish(f"{p}.a", b"x", expected_stream="OTHER")
        assert ei.value.err_code == 10060
        assert isinstance(ei.value, jetwire.StreamWrongExpectedError)
        # expected last sequence
        assert (await js.publish(f"{p}.a", b"4", expected_last_seq=3)).seq == 4
        with pytest.raises(jetwire.WrongLastSequenceError) as ei:
            await js.publish(f"{p}.a", b"x", expected_last_seq=1)
        assert ei.value.err_code == 10071
        assert ei.value.code == 400
        assert "wrong last sequence" in ei.value.description
        # expected last subject sequence (0: the subject must have no message)
        assert (await js.publish(f"{p}.b", b"5", expected_last_subject_seq=2)).seq == 5
        assert (await js.publish(f"{p}.new", b"6", expected_last_subject_seq=0)).seq == 6
        with pytest.raises(jetwire.WrongLastSequenceError):
            await js.publish(f"{p}.b", b"x", expected_last_subject_seq=2)
        with pytest.raises(jetwire.WrongLastSequenceError):
            await js.publish(f"{p}.new", b"x", expected_last_subject_seq=0)
        # expected last msg id
        await js.publish(f"{p}.a", b"7", msg_id="seven")
        assert (await js.publish(f"{p}.a", b"8", expected_last_msg_id="seven")).seq == 8
        with pytest.raises(jetwire.APIError) as ei:
            await js.publish(f"{p}.a", b"x", expected_last_msg_id="first")
        assert ei.value.err_code == 10070
        assert isinstance(ei.value, jetwire.WrongLastMsgIdError)
        # failed publishes stored nothing
        assert (await env.stream.info()).state.messages == 8
        # bad values raise before sending
        with pytest.raises(ValueError):
            await js.publish(f"{p}.a", b"x", expected_last_seq=-1)
        with pytest.raises(ValueError):
            await js.publish(f"{p}.a", b"x", msg_id="bad\r\nid")


async def test_publish_bad_input(nats_url):
    async with Env(nats_url) as env:
        with pytest.raises(jetwire.BadSubjectError):
            await env.js.publish("bad subject", b"x")
        with pytest.raises(jetwire.BadSubjectError):
            await env.js.publish_async("", b"x")
        with pytest.raises(jetwire.MaxPayloadError):
            await env.js.publish_async(f"{env.p}.a", b"x" * (env.nc.max_payload + 1))
        with pytest.raises(jetwire.MaxPayloadError):
            await env.js.publish(f"{env.p}.a", b"x" * (env.nc.max_payload + 1))
        assert env.js.publish_async_pending() == 0
        assert (await env.js.publish(f"{env.p}.a", b"fine")).seq == 1


async def test_publish_no_stream_retries_then_fails(nats_url):
    async with Env(nats_url, make_stream=False) as env:
        subj = f"nostream.{uuid.uuid4().hex}"
        t0 = time.monotonic()
        with pytest.raises(jetwire.NoStreamResponseError) as ei:
            await env.js.publish(subj, b"x", retry_attempts=2, retry_wait=0.1)
        assert time.monotonic() - t0 >= 0.19  # two waits of 0.1 s (an event loop's timers round to 1 ms)
        assert isinstance(ei.value, jetwire.JetStreamError)
        t0 = time.monotonic()
        with pytest.raises(jetwire.NoStreamResponseError):
            await env.js.publish(subj, b"x", retry_attempts=0, retry_wait=1.0)
        assert time.monotonic() - t0 < 0.9  # no retry, so no wait
        assert env.nc.is_connected


async def test_publish_retry_succeeds_once_a_stream_appears(nats_url):
    async with Env(nats_url, make_stream=False) as env:
        name = uniq()
        subj = f"{name.lower()}.x"
        fut = prims.new_future()

        async def publisher():
            try:
                fut.set_result(await env.js.publish(subj, b"late", retry_attempts=50, retry_wait=0.05))
            except Exception as exc:
                fut.set_exception(exc)

        prims.spawn(publisher)
        await prims.sleep(0.15)
        await env.js.create_stream(name=name, subjects=[f"{name.lower()}.>"], storage="memory")
        try:
            ack = await result(fut)
            assert (ack.stream, ack.seq) == (name, 1)
            afut = await env.js.publish_async(f"{name.lower()}.y", b"async", retry_attempts=1, retry_wait=0.05)
            assert (await result(afut)).seq == 2
        finally:
            await env.js.delete_stream(name)


async def test_publish_async_retried_is_sent_again_and_stored_once_a_stream_appears(nats_url):
    """A 503 with retries left keeps the publish pending and sends it again (what it
    sends comes from the publish's record): the ack is the stream's, the data intact."""
    async with Env(nats_url, make_stream=False) as env:
        name = uniq()
        subj = f"{name.lower()}.x"
        fut = await env.js.publish_async(subj, b"late", headers={"K": "v"}, retry_attempts=100, retry_wait=0.05)
        await prims.sleep(0.15)  # some 503s come back meanwhile
        assert not fut.done() and env.js.publish_async_pending() == 1
        await env.js.create_stream(name=name, subjects=[f"{name.lower()}.>"], storage="memory")
        try:
            ack = await result(fut)
            assert (ack.stream, ack.seq) == (name, 1)
            got = await (await env.js.stream(name)).get_msg(1)
            assert (got.subject, got.data, got.headers["K"]) == (subj, b"late", "v")
            assert (fut.msg.subject, fut.msg.data, fut.msg.headers["K"]) == (subj, b"late", "v")
        finally:
            await env.js.delete_stream(name)


# --- publish_async -----------------------------------------------------------------
async def test_publish_async_resolves_in_order_and_complete(nats_url):
    async with Env(nats_url, publish_async_max_pending=100) as env:
        js = env.js
        assert js.publish_async_pending() == 0
        await js.publish_async_complete(timeout=1)  # nothing pending: returns at once
        futs = [await js.publish_async(f"{env.p}.n", b"%d" % i) for i in range(1000)]
        assert js.publish_async_pending() <= 100
        await js.publish_async_complete(timeout=10)
        assert js.publish_async_pending() == 0
        acks = [await result(f) for f in futs]
        assert [a.seq for a in acks] == list(range(1, 1001))
        assert all(a.stream == env.name and a.duplicate is False for a in acks)
        assert (await env.stream.info()).state.messages == 1000
        assert isinstance(futs[0], prims.Future)


async def test_publish_async_options_and_errors(nats_url):
    async with Env(nats_url) as env:
        js = env.js
        p = env.p
        f1 = await js.publish_async(f"{p}.a", b"1", msg_id="x1", headers={"K": "v"})
        f2 = await js.publish_async(f"{p}.a", b"1", msg_id="x1")
        f3 = await js.publish_async(f"{p}.a", b"2", expected_last_seq=1)
        f4 = await js.publish_async(f"{p}.a", b"3", expected_last_seq=1)
        f5 = await js.publish_async(f"{p}.a", b"4", expected_stream="WRONG")
        f6 = await js.publish_async(f"{p}.b", b"5", expected_last_subject_seq=0)
        f7 = await js.publish_async(f"{p}.a", b"6", expected_last_msg_id="nope")
        f8 = await js.publish_msg_async(jetwire.Msg(subject=f"{p}.c", data=b"7"))
        await js.publish_async_complete(timeout=5)
        assert ((await result(f1)).seq, (await result(f1)).duplicate) == (1, False)
        assert ((await result(f2)).seq, (await result(f2)).duplicate) == (1, True)
        assert (await result(f3)).seq == 2
        with pytest.raises(jetwire.WrongLastSequenceError):
            await result(f4)
        with pytest.raises(jetwire.StreamWrongExpectedError):
            await result(f5)
        assert (await result(f6)).seq == 3
        with pytest.raises(jetwire.WrongLastMsgIdError):
            await result(f7)
        assert (await result(f8)).seq == 4
        assert (await env.stream.get_msg(1)).headers == {"K": "v", "Nats-Msg-Id": "x1"}
        # no stream: retried, then NoStreamResponseError
        t0 = time.monotonic()
        f9 = await js.publish_async(f"nostream.{uuid.uuid4().hex}", b"x", retry_attempts=2, retry_wait=0.1)
        with pytest.raises(jetwire.NoStreamResponseError):
            await result(f9)
        assert time.monotonic() - t0 >= 0.19  # two 0.1 s retry waits (the loop rounds timers to 1 ms)
        f10 = await js.publish_async(f"nostream.{uuid.uuid4().hex}", b"x", retry_attempts=0)
        with pytest.raises(jetwire.NoStreamResponseError):
            await result(f10)
        assert js.publish_async_pending() == 0


async def test_publish_async_window_stalls_and_recovers(fresh_nats_server):
    srv = fresh_nats_server
    async with Env(srv.url, publish_async_max_pending=5) as env:
        js = env.js
        first = await js.publish_async(f"{env.p}.w", b"0")
        assert (await result(first)).seq == 1
        srv.freeze()
        try:
            futs = [await js.publish_async(f"{env.p}.w", b"%d" % i) for i in range(5)]
            assert js.publish_async_pending() == 5
            t0 = time.monotonic()
            with pytest.raises(jetwire.TooManyStalledMsgsError) as ei:
                await js.publish_async(f"{env.p}.w", b"stalled", stall_wait=0.2)
            assert 0.15 <= time.monotonic() - t0 < 2
            assert isinstance(ei.value, jetwire.JetStreamError)
            assert js.publish_async_pending() == 5
            with pytest.raises(jetwire.TimeoutError):
                await js.publish_async_complete(timeout=0.2)
            # room appears while a publisher waits for it
            await run_later(0.2, srv.thaw)
            late = await js.publish_async(f"{env.p}.w", b"late", stall_wait=10)
        finally:
            if srv.frozen:
                srv.thaw()
        await js.publish_async_complete(timeout=10)
        assert [(await result(f)).seq for f in futs] == [2, 3, 4, 5, 6]
        assert (await result(late)).seq == 7
        assert js.publish_async_pending() == 0
        assert (await env.stream.info()).state.messages == 7


async def test_publish_async_ack_timeout(fresh_nats_server):
    srv = fresh_nats_server
    async with Env(srv.url) as env:
        js = env.js
        srv.freeze()
        try:
            t0 = time.monotonic()
            fut = await js.publish_async(f"{env.p}.t", b"x", timeout=0.2)
            untimed = await js.publish_async(f"{env.p}.t", b"y")
            with pytest.raises(jetwire.TimeoutError):
                await result(fut)
            assert 0.15 <= time.monotonic() - t0 < 2
            assert js.publish_async_pending() == 1
        finally:
            srv.thaw()
        assert (await result(untimed)).seq == 2
        assert js.publish_async_pending() == 0


async def test_publish_async_futures_fail_on_close(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    subj = f"nostream.{uuid.uuid4().hex}"
    # no stream and a long retry wait: these stay pending until the connection closes
    futs = [await js.publish_async(subj, b"%d" % i, retry_attempts=100, retry_wait=5) for i in range(3)]
    await nc.flush()
    assert js.publish_async_pending() == 3
    await nc.close()
    for f in futs:
        with pytest.raises(jetwire.ConnectionClosedError):
            await result(f, 1)
    assert js.publish_async_pending() == 0
    await js.publish_async_complete(timeout=1)
    with pytest.raises(jetwire.ConnectionClosedError):
        await js.publish_async(subj, b"after close")
    with pytest.raises(jetwire.ConnectionClosedError):
        await js.publish(subj, b"after close")


async def test_publish_async_contexts_share_one_reply_subscription(nats_server, nats_url):
    async with Env(nats_url) as env:
        nc = env.nc
        other = nc.jetstream(publish_async_max_pending=10)
        subs_before = await server_subscriptions(nats_server, nc)
        fa = await env.js.publish_async(f"{env.p}.a", b"a")
        subs_after_first = await server_subscriptions(nats_server, nc)
        fb = await other.publish_async(f"{env.p}.b", b"b")
        assert await server_subscriptions(nats_server, nc) == subs_after_first == subs_before + 1
        await other.publish_async_complete(timeout=5)
        assert {(await result(fa)).seq, (await result(fb)).seq} == {1, 2}


async def test_publish_async_after_reconnect(fresh_nats_server):
    srv = fresh_nats_server
    reconnected = prims.Signal()
    nc = await jetwire.connect(srv.url, reconnect_time_wait=0.1, max_reconnect_attempts=-1,
                               reconnected_cb=reconnected.set)
    try:
        js = nc.jetstream()
        name = uniq()
        await js.create_stream(name=name, subjects=[f"{name.lower()}.>"])  # file storage: survives the restart
        before = await js.publish_async(f"{name.lower()}.x", b"before")
        assert (await result(before)).seq == 1
        srv.kill()
        srv.start()
        assert await reconnected.wait(20)
        # the one reply subscription was renewed with the connection
        after = [await js.publish_async(f"{name.lower()}.x", b"after", retry_attempts=20, retry_wait=0.1)
                 for _ in range(3)]
        await js.publish_async_complete(timeout=10)
        assert [(await result(f)).seq for f in after] == [2, 3, 4]
        assert js.publish_async_pending() == 0
    finally:
        await nc.close()


async def settled(futs, timeout: float) -> list:
    """Wait (without failing them) until every future is done; the ones still pending."""
    await wait_until(lambda: all(f.done() for f in futs), timeout)
    return [f for f in futs if not f.done()]


async def test_publish_async_settles_across_a_server_restart(fresh_nats_server):
    """Acks of publishes the dying server never answered are lost with the connection:
    those futures fail with ConnectionLostError instead of waiting forever; what is
    published right after the restart settles too, and publishing goes on."""
    srv = fresh_nats_server
    reconnected = prims.Signal()
    nc = await jetwire.connect(srv.url, reconnect_time_wait=0.1, max_reconnect_attempts=-1,
                               reconnected_cb=reconnected.set)
    try:
        js = nc.jetstream()
        name = uniq()
        subj = f"{name.lower()}.x"
        await js.create_stream(name=name, subjects=[f"{name.lower()}.>"])  # file storage: survives the restart
        assert (await result(await js.publish_async(subj, b"first"))).seq == 1
        srv.freeze()
        lost = [await js.publish_async(subj, b"lost %d" % i) for i in range(20)]
        await prims.sleep(0.2)  # written to the socket; the frozen server reads nothing
        srv.restart(kill=True)
        after = [await js.publish_async(subj, b"after %d" % i, retry_attempts=40, retry_wait=0.1)
                 for i in range(20)]
        t0 = time.monotonic()
        try:
            await js.publish_async_complete(timeout=15)
        except jetwire.TimeoutError:
            pass
        assert time.monotonic() - t0 < 17
        assert await settled(lost + after, 15) == []
        for f in lost:
            with pytest.raises(jetwire.ConnectionLostError):
                await result(f, 0)
        for f in after:  # sent on the dead connection (lost) or after the reconnect (stored)
            try:
                await result(f, 0)
            except jetwire.NatsError as exc:
                assert isinstance(exc, jetwire.ConnectionLostError), exc
        assert await reconnected.wait(20)
        more = [await js.publish_async(subj, b"more", retry_attempts=40, retry_wait=0.1) for _ in range(5)]
        await js.publish_async_complete(timeout=15)
        seqs = [(await result(f, 0)).seq for f in more]
        assert seqs == sorted(seqs) and len(set(seqs)) == 5
        assert js.publish_async_pending() == 0
    finally:
        await nc.close()
