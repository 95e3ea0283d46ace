"""Pull consumers against a real nats-server: fetch, fetch_bytes, fetch_no_wait, next,
consume, messages, heartbeats and reconnects (asyncio source; the blocking twin is
generated)."""
from __future__ import annotations

import time

import pytest

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims
from jetwire.aio.consumer import abandon  # aio-only

# sync-only: from jetwire._sync.consumer import abandon
from jetwire.jetstream.pull import msg_size
from jetwire.testing import NatsServer
from tests.aio._helpers import (
    Collector,
    Errors,
    acks_applied,
    fill,
    new_stream,
    publish_when_back,
    server_subscriptions,
    wait_until,
)


async def make(nc, n: int = 0, storage: str = "memory", **consumer):
    js, name = await new_stream(nc, n, storage, data=b"x")
    consumer.setdefault("durable_name", "c")
    return js, name, await js.create_consumer(name, **consumer)


async def collect(batch) -> list:
    return [m async for m in batch]


async def test_fetch_batches_in_order(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream, c = await make(nc, 10, ack_policy="none")
    try:
        assert c.name == "c"
        assert c.cached_info().stream_name == stream
        first = await collect(await c.fetch(4, max_wait=2))
        assert [m.metadata.sequence.stream for m in first] == [1, 2, 3, 4]
        batch = await c.fetch(10, max_wait=0.5)
        start = time.monotonic()
        rest = await collect(batch)
        waited = time.monotonic() - start
        assert [m.metadata.sequence.stream for m in rest] == list(range(5, 11))
        assert batch.error is None
        assert 0.3 <= waited < 2.0  # ended by the server at max_wait, with what arrived
        assert all(m.subject == f"{stream}.a" for m in first + rest)
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def _pending(cons, n: int) -> bool:
    return (await cons.info()).num_pending == n


async def test_fetch_no_wait_on_empty_stream_is_prompt(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream, c = await make(nc, 0, ack_policy="none")
    try:
        # with a 30 s request timeout, only the server's "no messages" answer can end the
        # empty pull within 10 s (a hang detector, not a speed check)
        c = await nc.jetstream(timeout=30).consumer(stream, c.name)
        start = time.monotonic()
        batch = await c.fetch_no_wait(10)
        msgs = await collect(batch)
        assert msgs == [] and batch.error is None
        assert time.monotonic() - start < 10
        await fill(js, f"{stream}.a", 3, b"x")
        # the server tells the consumer of stored messages on the consumer's own goroutine:
        # a no-wait pull sent right after the publishes' acks may still be told "none"
        assert await wait_until(lambda: _pending(c, 3)), "the consumer never saw the 3 messages"
        batch = await c.fetch_no_wait(10)
        assert len(await collect(batch)) == 3 and batch.error is None
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_fetch_no_wait_gives_up_a_pull_the_server_never_ends(nats_url):
    """max_ack_pending reached with messages pending: the server neither delivers nor ends
    a no-wait pull. fetch_no_wait gives it up after about a second (as nats.go's
    FetchNoWait), not after the API timeout (5 s here), and quietly."""
    nc = await jetwire.connect(nats_url)
    js, stream, c = await make(nc, 3, ack_policy="explicit", max_ack_pending=1)
    try:
        c = await nc.jetstream(timeout=5).consumer(stream, c.name)
        first = await collect(await c.fetch(1, max_wait=2))
        assert [m.metadata.sequence.stream for m in first] == [1]  # left unacked
        start = time.monotonic()
        batch = await c.fetch_no_wait(5)
        msgs = await collect(batch)
        took = time.monotonic() - start
        assert msgs == [] and batch.error is None
        assert took < 3, f"fetch_no_wait took {took:.2f}s"
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_fetch_on_an_empty_consumer_returns_once_the_server_took_the_pull(nats_url):
    """Nothing to deliver: fetch() returns the batch after a PING's round trip (sent once
    no answer came within CONFIRM_PING_AFTER), not at the request timeout, and the batch
    then yields what is published while it waits."""
    nc = await jetwire.connect(nats_url)
    js, stream, c = await make(nc, 0, ack_policy="none")
    try:
        c = await nc.jetstream(timeout=30).consumer(stream, c.name)  # no PONG: 30 s
        start = time.monotonic()
        batch = await c.fetch(1, max_wait=20)
        assert time.monotonic() - start < 10  # a hang detector, not a speed check
        await fill(js, f"{stream}.a", 1, b"late")
        assert [m.data for m in await collect(batch)] == [b"late"]
        # messages waiting: the first of them confirms the pull
        await fill(js, f"{stream}.a", 3, b"x")
        assert await wait_until(lambda: _pending(c, 3)), "the consumer never saw the 3 messages"
        assert len(await collect(await c.fetch(3, max_wait=20))) == 3
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_a_fetch_loop_leaves_no_subscription_behind(nats_server):
    """Each fetch has an inbox of its own, gone once its batch ended (complete, 404,
    408, or abandoned by the user: the server then drops that pull for lack of
    interest): 40 fetches leave the server's subscription count where it was, and every
    message comes once, in order."""
    nc = await jetwire.connect(nats_server.url)
    js, stream, c = await make(nc, 400, ack_policy="none")
    try:
        base = await server_subscriptions(nats_server, nc)
        seqs, sids = [], set()
        for _ in range(40):
            async for m in await c.fetch(10, max_wait=5):
                seqs.append(m.metadata.sequence.stream)
                sids.add(m.sid)  # the fetch's inbox subscription
        assert seqs == list(range(1, 401))
        assert len(sids) == 40
        assert await collect(await c.fetch_no_wait(5)) == []  # 404
        assert await collect(await c.fetch(5, max_wait=0.2)) == []  # 408
        assert await server_subscriptions(nats_server, nc) == base
        # abandoned: the user stops while 5 of 15 are still due
        await fill(js, f"{stream}.a", 10, b"y")
        assert await wait_until(lambda: _pending(c, 10)), "the consumer never saw the 10 messages"
        batch = await c.fetch(15, max_wait=5)
        got = [await batch.__anext__() for _ in range(10)]
        assert [m.metadata.sequence.stream for m in got] == list(range(401, 411))
        assert abandon(batch)  # the user leaves the loop early
        assert await server_subscriptions(nats_server, nc) == base
        await fill(js, f"{stream}.a", 3, b"z")
        later = [m.metadata.sequence.stream async for m in await c.fetch(3, max_wait=2)]
        assert all(411 <= q <= 413 for q in later) and later == sorted(set(later))
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_fetch_on_empty_stream_waits_max_wait(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream, c = await make(nc, 0, ack_policy="none")
    try:
        start = time.monotonic()
        batch = await c.fetch(5, max_wait=0.4)
        assert await collect(batch) == []
        assert batch.error is None
        assert 0.3 <= time.monotonic() - start < 1.6
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_fetch_with_heartbeat_on_empty_stream(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream, c = await make(nc, 0, ack_policy="none")
    try:
        batch = await c.fetch(5, max_wait=1.2, heartbeat=0.5)
        assert await collect(batch) == []
        assert batch.error is None  # heartbeats arrived: no NoHeartbeatError
        with pytest.raises(ValueError):
            await c.fetch(5, max_wait=1, heartbeat=0.6)
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_fetch_bytes_cut_off(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream, c = await make(nc, 0, ack_policy="none")
    try:
        await fill(js, f"{stream}.a", 10, b"z" * 100)
        batch = await c.fetch_bytes(400, max_wait=1)
        msgs = await collect(batch)
        assert 1 <= len(msgs) < 10
        assert sum(msg_size(m) for m in msgs) <= 400
        assert batch.error is None
        # smaller than one message: nothing, quietly (409 Message Size Exceeds MaxBytes)
        tiny = await c.fetch_bytes(10, max_wait=1)
        assert await collect(tiny) == [] and tiny.error is None
        rest = await collect(await c.fetch(20, max_wait=0.5))
        assert len(msgs) + len(rest) == 10
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_next_and_timeout(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream, c = await make(nc, 2, ack_policy="none")
    try:
        m1 = await c.next(timeout=2)
        m2 = await c.next(timeout=2)
        assert (m1.metadata.sequence.stream, m2.metadata.sequence.stream) == (1, 2)
        start = time.monotonic()
        with pytest.raises(jetwire.TimeoutError):
            await c.next(timeout=0.3)
        assert time.monotonic() - start < 1.5
        with pytest.raises(TimeoutError):  # the builtin too
            await c.next(timeout=0.2)
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_no_responders_ends_fetch_with_error(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream, c = await make(nc, 1, ack_policy="none")
    try:
        bogus = nc.jetstream(api_prefix="$NOBODY.API")
        c2 = type(c)(bogus, stream, c.cached_info())
        batch = await c2.fetch(1, max_wait=1)
        assert await collect(batch) == []
        assert isinstance(batch.error, jetwire.NoRespondersError)
        # the api prefix is respected: the real prefix still works
        c3 = type(c)(nc.jetstream(api_prefix="$JS.API"), stream, c.cached_info())
        assert len(await collect(await c3.fetch(1, max_wait=1))) == 1
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_consume_10k_exactly_once_with_many_refills(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream, c = await make(nc, 10_000, ack_policy="none")
    try:
        got = Collector(10_000)
        cc = await c.consume(got, max_messages=100)
        msgs = await got.wait(30)
        cc.stop()
        assert await cc.closed(5)
        seqs = [m.metadata.sequence.stream for m in msgs]
        assert seqs == list(range(1, 10_001))
        assert cc.delivered == 10_000
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_consume_by_bytes_and_explicit_acks(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream, c = await make(nc, 0)
    try:
        await fill(js, f"{stream}.a", 300, b"y" * 200)
        seen: list = []
        done = prims.Signal()

        async def cb(msg):
            seen.append(msg.metadata.sequence.stream)
            if len(seen) == 300:
                # the server applies acks in order: confirming the last confirms them all
                await msg.ack_sync()
                done.set()
            else:
                await msg.ack()

        cc = await c.consume(cb, max_bytes=4096, expires=2)
        assert await done.wait(20), len(seen)
        cc.stop()
        assert sorted(seen) == list(range(1, 301)) and len(set(seen)) == 300
        await nc.flush()
        info = await acks_applied(c)
        assert info.num_ack_pending == 0 and info.num_pending == 0
        with pytest.raises(ValueError):
            await c.consume(cb, max_messages=10, max_bytes=100)
        with pytest.raises(ValueError):
            await c.consume(cb, expires=0.5)
    finally:
        await js.delete_stream(stream)
        await nc.close()


class _PullCounter:
    """Counts the pulls of one consumer, as a core subscriber on its pull subject (from a
    second connection) sees them."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self, _msg) -> None:
        self.n += 1

    async def start(self, nats_url: str, stream: str, consumer: str):
        nc = await jetwire.connect(nats_url)
        await nc.subscribe(f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{consumer}", cb=self)
        await nc.flush(5)
        return nc

    async def count_for(self, seconds: float) -> int:
        before = self.n
        await prims.sleep(seconds)
        return self.n - before


async def test_consume_reports_a_message_larger_than_max_bytes_once_and_backs_off(nats_url):
    """Every pull of consume(max_bytes=100) is answered "409 Message Size Exceeds
    MaxBytes" while the next message is larger: error_cb hears it once (not per pull),
    the pull is sent again after a pause (not at once, forever), and consuming goes on
    once the message is gone."""
    nc = await jetwire.connect(nats_url)
    js, stream, c = await make(nc, 0, ack_policy="explicit")
    spy = _PullCounter()
    nc2 = await spy.start(nats_url, stream, c.name)
    try:
        await fill(js, f"{stream}.a", 1, b"x" * 1000)
        await fill(js, f"{stream}.a", 1, b"small")
        errors = Errors()
        got = Collector(1)
        cc = await c.consume(got, max_bytes=100, expires=2, error_cb=errors)
        err = await errors.wait_for(jetwire.PullStatusError, timeout=5)
        assert err.status == "409" and "MaxBytes" in str(err)
        pulls = await spy.count_for(1.0)
        assert pulls < 50, f"{pulls} pulls in 1 s"
        assert got.msgs == []
        assert len([e for e in errors.errors if isinstance(e, jetwire.PullStatusError)]) == 1
        # the big one goes: the next pull gets the small one
        await (await js.stream(stream)).delete_msg(1)
        assert [m.data for m in await got.wait(10)] == [b"small"]
        cc.stop()
        assert await cc.closed(5)
    finally:
        await nc2.close()
        await js.delete_stream(stream)
        await nc.close()


async def test_messages_raise_a_message_larger_than_max_bytes_once_and_back_off(nats_url):
    """messages(max_bytes=100) with a larger message next: next() raises the 409 once, then
    waits (the pull is re-sent after a pause, not at once, forever)."""
    nc = await jetwire.connect(nats_url)
    js, stream, c = await make(nc, 0, ack_policy="none")
    spy = _PullCounter()
    nc2 = await spy.start(nats_url, stream, c.name)
    try:
        await fill(js, f"{stream}.a", 1, b"x" * 1000)
        ctx = await c.messages(max_bytes=100, expires=2)
        with pytest.raises(jetwire.PullStatusError) as info:
            await ctx.next(timeout=5)
        assert info.value.status == "409" and "MaxBytes" in str(info.value)
        with pytest.raises(jetwire.TimeoutError):  # the same run: not raised again
            await ctx.next(timeout=1.0)
        assert await spy.count_for(1.0) < 50
        ctx.stop()
    finally:
        await nc2.close()
        await js.delete_stream(stream)
        await nc.close()


async def test_consume_stop_means_no_more_callbacks(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream, c = await make(nc, 500, ack_policy="none")
    try:
        calls: list = []
        holder: list = []
        ready = prims.Signal()

        async def cb(msg):
            assert await ready.wait(5)  # the blocking flavour may call before consume() returns
            calls.append(msg)
            if len(calls) == 50:
                holder[0].stop()

        cc = await c.consume(cb, max_messages=100)
        holder.append(cc)
        ready.set()
        assert await cc.closed(10)
        assert len(calls) == 50
        await fill(js, f"{stream}.a", 10, b"x")
        await nc.flush()
        assert len(calls) == 50
        cc.stop()  # idempotent
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_consume_ends_at_once_when_the_connection_closes_during_the_callback(nats_url):
    """close() while the callback runs: consuming ends when it returns (no wait for a
    heartbeat window), and nothing buffered is handed out after the close."""
    nc = await jetwire.connect(nats_url)
    admin = await jetwire.connect(nats_url)
    js, stream, _ = await make(admin, 50)
    try:
        calls: list = []
        closed = prims.Signal()

        async def cb(msg):
            calls.append(msg)
            if len(calls) == 1:
                await nc.close()  # the connection ends while the callback is busy
                closed.set()

        cc = await (await nc.jetstream().consumer(stream, "c")).consume(cb, max_messages=20)
        assert await closed.wait(10)
        t0 = time.monotonic()
        assert await cc.closed(5)
        assert time.monotonic() - t0 < 2  # not the heartbeat window (30 s)
        assert len(calls) == 1 and cc.is_closed
    finally:
        await js.delete_stream(stream)
        await admin.close()
        await nc.close()


async def test_messages_raise_connection_closed_at_once_after_a_close(nats_url):
    nc = await jetwire.connect(nats_url)
    admin = await jetwire.connect(nats_url)
    js, stream, _ = await make(admin, 30)
    try:
        it = await (await nc.jetstream().consumer(stream, "c")).messages(max_messages=10)
        first = await it.next(timeout=5)
        assert first.data == b"x"
        await nc.close()
        t0 = time.monotonic()
        with pytest.raises(jetwire.ConnectionClosedError):
            await it.next(timeout=10)  # buffered messages are not handed out: they cannot be acked
        with pytest.raises(jetwire.MsgIteratorClosedError):
            await it.next(timeout=10)
        assert time.monotonic() - t0 < 2
    finally:
        await js.delete_stream(stream)
        await admin.close()
        await nc.close()


async def test_consume_stop_after(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream, c = await make(nc, 100, ack_policy="none")
    try:
        calls: list = []
        cc = await c.consume(calls.append, max_messages=10, stop_after=25)
        assert await cc.closed(10)
        assert [m.metadata.sequence.stream for m in calls] == list(range(1, 26))
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_consume_drain_delivers_buffered(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream, c = await make(nc, 200, ack_policy="none")
    try:
        gate = prims.Signal()
        started = prims.Signal()
        calls: list = []

        async def cb(msg):
            calls.append(msg)
            started.set()
            assert await gate.wait(10)

        cc = await c.consume(cb, max_messages=200)
        assert await started.wait(10)
        await nc.flush()  # the first pull's messages are in by now
        buffered = len(cc._q)
        drain = prims.spawn(cc.drain, 10)
        gate.set()
        assert await prims.join(drain, 10)
        assert await cc.closed(1)
        # everything buffered when drain was asked for is handed out, in order; messages
        # of that pull still coming in before drain closed the subscription may be too
        # (the flush above does not wait for all of the server's deliveries)
        assert len(calls) >= buffered + 1
        seqs = [m.metadata.sequence.stream for m in calls]
        assert seqs == list(range(1, len(calls) + 1))
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_consume_error_cb_gets_consumer_deleted(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream, c = await make(nc, 0, ack_policy="none")
    try:
        errors = Errors()
        cc = await c.consume(lambda m: None, error_cb=errors, expires=2)
        await nc.flush()
        await js.delete_consumer(stream, c.name)
        err = await errors.wait_for(jetwire.ConsumerDeletedError)
        assert isinstance(err, jetwire.JetStreamError)
        assert await cc.closed(5)
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_consume_callback_failure_is_reported_and_consuming_goes_on(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream, c = await make(nc, 20, ack_policy="none")
    try:
        errors = Errors()
        got = Collector(20)

        def cb(msg):
            got(msg)
            if msg.metadata.sequence.stream == 3:
                raise RuntimeError("boom")

        cc = await c.consume(cb, error_cb=errors)
        await got.wait(10)
        assert isinstance(await errors.wait_for(RuntimeError), RuntimeError)
        cc.stop()
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_messages_iteration_stop_and_timeout(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream, c = await make(nc, 250, ack_policy="none")
    try:
        ctx = await c.messages(max_messages=50)
        seqs = []
        async for msg in ctx:
            seqs.append(msg.metadata.sequence.stream)
            if len(seqs) == 250:
                break
        assert seqs == list(range(1, 251))
        with pytest.raises(jetwire.TimeoutError):
            await ctx.next(timeout=0.2)
        await fill(js, f"{stream}.a", 1, b"x")
        assert (await ctx.next(timeout=5)).metadata.sequence.stream == 251
        ctx.stop()
        with pytest.raises(jetwire.SubscriptionClosedError):
            await ctx.next(timeout=1)
        assert [m async for m in ctx] == []
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_messages_drain_returns_buffered_then_ends(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream, c = await make(nc, 40, ack_policy="none")
    try:
        ctx = await c.messages(max_messages=100)
        first = await ctx.next(timeout=5)

        async def all_sent() -> bool:  # the server hands a pull's messages out on its own time
            return (await c.info()).delivered.stream_seq == 40

        assert await wait_until(all_sent, 10)
        await nc.flush()  # its PONG comes after them: all 40 are read
        await ctx.drain()
        rest = [m async for m in ctx]
        seqs = [first.metadata.sequence.stream] + [m.metadata.sequence.stream for m in rest]
        assert seqs == list(range(1, len(seqs) + 1))
        assert len(seqs) == 40
        with pytest.raises(jetwire.SubscriptionClosedError):
            await ctx.next()
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_heartbeat_loss_is_reported_and_consuming_recovers(fresh_nats_server: NatsServer):
    nc = await jetwire.connect(fresh_nats_server.url)
    js, stream, c = await make(nc, 0, ack_policy="none")
    try:
        errors = Errors()
        got = Collector(5)
        cc = await c.consume(got, expires=2, heartbeat=0.5, error_cb=errors)
        await nc.flush()
        fresh_nats_server.freeze()
        try:
            err = await errors.wait_for(jetwire.NoHeartbeatError, timeout=10)
            assert isinstance(err, jetwire.JetStreamError)
        finally:
            fresh_nats_server.thaw()
        await fill(js, f"{stream}.a", 5, b"x")
        msgs = await got.wait(15)
        assert sorted(m.metadata.sequence.stream for m in msgs) == [1, 2, 3, 4, 5]
        cc.stop()
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_consume_survives_server_restart(fresh_nats_server: NatsServer):
    nc = await jetwire.connect(fresh_nats_server.url, reconnect_time_wait=0.1, max_reconnect_attempts=-1)
    js, stream, c = await make(nc, 10, storage="file")
    try:
        seen: list = []
        signals = {10: prims.Signal(), 20: prims.Signal()}

        async def cb(msg):
            seen.append(msg.metadata.sequence.stream)
            await msg.ack_sync()
            sig = signals.get(len(set(seen)))
            if sig is not None:
                sig.set()

        cc = await c.consume(cb, max_messages=5)  # 15 s heartbeats: only the reconnect re-pulls in time
        assert await signals[10].wait(10)
        fresh_nats_server.restart()
        await publish_when_back(js, f"{stream}.a", 10)
        assert await signals[20].wait(10), seen
        assert sorted(set(seen)) == list(range(1, 21))
        cc.stop()
    finally:
        try:
            await js.delete_stream(stream)
        finally:
            await nc.close()


async def test_server_warnings_reach_error_cb_and_fetch_error(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream, c = await make(nc, 5, ack_policy="none", max_batch=2)
    try:
        batch = await c.fetch(10, max_wait=1)
        assert await collect(batch) == []
        assert isinstance(batch.error, jetwire.JetStreamError)
        assert "MaxRequestBatch" in str(batch.error)
        errors = Errors()
        cc = await c.consume(lambda m: None, max_messages=10, expires=1, error_cb=errors)
        err = await errors.wait_for(jetwire.JetStreamError)
        assert "MaxRequestBatch" in str(err)
        cc.stop()
        got = Collector(5)
        cc = await c.consume(got, max_messages=2)  # within the limit: fine
        await got.wait(10)
        cc.stop()
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_messages_raise_missed_heartbeats_and_go_on(fresh_nats_server: NatsServer):
    nc = await jetwire.connect(fresh_nats_server.url)
    js, stream, c = await make(nc, 0, ack_policy="none")
    try:
        ctx = await c.messages(expires=2, heartbeat=0.5)
        with pytest.raises(jetwire.TimeoutError):
            await ctx.next(timeout=0.3)
        fresh_nats_server.freeze()
        try:
            with pytest.raises(jetwire.NoHeartbeatError):
                await ctx.next(timeout=10)
        finally:
            fresh_nats_server.thaw()
        await fill(js, f"{stream}.a", 3, b"x")
        seqs = [(await ctx.next(timeout=10)).metadata.sequence.stream for _ in range(3)]
        assert seqs == [1, 2, 3]
        ctx.stop()
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_consume_goes_on_after_a_reconnect_during_the_callback(fresh_nats_server: NatsServer):
    """A reconnect that happens while the callback runs is handled when it returns (a
    new pull goes out): consuming neither stops nor spins on the noted reconnect."""
    reconnected = prims.Signal()
    nc = await jetwire.connect(fresh_nats_server.url, reconnect_time_wait=0.05, max_reconnect_attempts=-1,
                               reconnected_cb=reconnected.set)
    js, stream = await new_stream(nc, 20, storage="file")
    try:
        await js.create_consumer(stream, durable_name="d")
        c = await js.consumer(stream, "d")
        got = Collector(20)

        async def handle(msg):
            if not got.msgs:  # the first message: the server restarts before we return
                fresh_nats_server.restart()
                assert await reconnected.wait(10)
            got(msg)
            msg.ack()

        cc = await c.consume(handle, max_messages=5)
        msgs = await got.wait(15)
        cc.stop()
        assert sorted({m.metadata.sequence.stream for m in msgs}) == list(range(1, 21))
    finally:
        await nc.close()
