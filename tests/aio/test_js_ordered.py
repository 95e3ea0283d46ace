"""Ordered consumers (ADR-17) against a real nats-server: in-order delivery, recovery
from consumer deletion and server restarts with no gaps or duplicates (asyncio source;
the blocking twin is generated)."""
from __future__ import annotations

import pytest

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims
from jetwire.testing import NatsServer
from tests.aio._helpers import Errors, Seqs, fill, new_stream, publish_when_back, uniq, wait_until


async def test_ordered_consume_delivers_everything_in_order(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc, 300)
    try:
        oc = await js.ordered_consumer(stream)
        info = oc.cached_info()
        assert info.config.ack_policy == jetwire.AckPolicy.NONE
        assert info.config.mem_storage is True
        assert info.config.durable_name is None
        rec = Seqs()
        done = rec.at(600)
        cc = await oc.consume(rec, max_messages=50)
        await fill(js, f"{stream}.b", 300)
        assert await done.wait(20), len(rec.seqs)
        with pytest.raises(jetwire.JetStreamError):
            await oc.consume(rec)  # one at a time
        cc.stop()
        assert await cc.closed(5)
        assert rec.seqs == list(range(1, 601))
        await fill(js, f"{stream}.a", 5)
        more = rec.at(605)
        cc2 = await oc.consume(rec)  # after stop, consuming resumes after the last one seen
        assert await more.wait(10)
        cc2.stop()
        assert rec.seqs == list(range(1, 606))
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_ordered_messages_and_filters(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc)
    try:
        for i in range(30):
            await js.publish(f"{stream}.{'x' if i % 3 == 0 else 'y'}", b"%d" % i)
        oc = await js.ordered_consumer(stream, filter_subjects=f"{stream}.x")
        ctx = await oc.messages(max_messages=5)
        got = []
        async for msg in ctx:
            got.append(msg.metadata.sequence.stream)
            if len(got) == 10:
                break
        ctx.stop()
        assert got == list(range(1, 31, 3))
        oc2 = await js.ordered_consumer(stream, deliver_policy=jetwire.DeliverPolicy.BY_START_SEQUENCE,
                                        opt_start_seq=25)
        ctx2 = await oc2.messages()
        assert [(await ctx2.next(timeout=5)).metadata.sequence.stream for _ in range(6)] == list(range(25, 31))
        ctx2.stop()
        oc3 = await js.ordered_consumer(stream, filter_subjects=[f"{stream}.x", f"{stream}.y"],
                                        deliver_policy="last_per_subject")
        ctx3 = await oc3.messages()
        last = sorted([(await ctx3.next(timeout=5)).metadata.sequence.stream for _ in range(2)])
        ctx3.stop()
        assert last == [28, 30]
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_ordered_fetch_and_next(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc, 120)
    try:
        oc = await js.ordered_consumer(stream)
        seqs = []
        while len(seqs) < 100:
            batch = await oc.fetch(25, max_wait=2)
            seqs += [m.metadata.sequence.stream async for m in batch]
            assert batch.error is None
        assert seqs == list(range(1, 101))
        m = await oc.next(timeout=2)
        assert m.metadata.sequence.stream == 101
        rest = [x.metadata.sequence.stream async for x in await oc.fetch_no_wait(100)]
        assert rest == list(range(102, 121))
        with pytest.raises(jetwire.TimeoutError):
            await oc.next(timeout=0.3)
        # the consumer behind it vanishes: the next fetch recreates it after the last one
        await js.delete_consumer(stream, oc.name)
        await fill(js, f"{stream}.a", 5)
        batch = await oc.fetch(10, max_wait=1)
        got = [x.metadata.sequence.stream async for x in batch]
        while len(got) < 5:
            got += [x.metadata.sequence.stream async for x in await oc.fetch(10, max_wait=1)]
        assert got == list(range(121, 126))
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def _read_two(batch) -> list:
    """The stream sequences of the first two messages of ``batch``, once the rest of it
    has arrived too and waits unread."""
    got = []
    async for m in batch:
        got.append(m.metadata.sequence.stream)
        if len(got) == 2:
            break
    assert await wait_until(lambda: batch.done), "the batch never ended"
    return got


async def test_ordered_fetch_after_a_partly_read_batch_goes_on_after_the_last_one_read(nats_url):
    """A batch that ended with messages left unread: the next fetch (fetch, fetch_no_wait,
    fetch_bytes) starts right after the last message the user read, not with an empty
    batch (the server's consumer had delivered past it)."""
    nc = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc, 20)
    try:
        oc = await js.ordered_consumer(stream)
        assert await _read_two(await oc.fetch(5, max_wait=2)) == [1, 2]
        batch = await oc.fetch(5, max_wait=2)
        assert [m.metadata.sequence.stream async for m in batch] == [3, 4, 5, 6, 7]
        assert batch.error is None
        assert await _read_two(await oc.fetch_no_wait(5)) == [8, 9]
        batch = await oc.fetch_no_wait(5)
        assert [m.metadata.sequence.stream async for m in batch] == [10, 11, 12, 13, 14]
        assert batch.error is None
        # 15..20 arrive, the request expires after 0.5 s; two are read
        assert await _read_two(await oc.fetch_bytes(100_000, max_wait=0.5)) == [15, 16]
        batch = await oc.fetch_bytes(100_000, max_wait=0.5)
        assert [m.metadata.sequence.stream async for m in batch] == [17, 18, 19, 20]
        assert batch.error is None
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_ordered_consume_survives_consumer_deletion(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc, 200)
    try:
        oc = await js.ordered_consumer(stream)
        rec = Seqs()
        errors = Errors()
        half = rec.at(200)
        done = rec.at(400)
        cc = await oc.consume(rec, max_messages=20, expires=2, error_cb=errors)
        assert await half.wait(10)
        first = oc.name
        await js.api_request(f"CONSUMER.DELETE.{stream}.{first}")
        await fill(js, f"{stream}.a", 200, start=200)
        assert await done.wait(20), (len(rec.seqs), errors.errors)
        assert oc.name != first
        cc.stop()
        assert rec.seqs == list(range(1, 401))
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_ordered_messages_survive_consumer_deletion(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc, 50)
    try:
        oc = await js.ordered_consumer(stream)
        ctx = await oc.messages(max_messages=10, expires=2)
        seqs = [(await ctx.next(timeout=5)).metadata.sequence.stream for _ in range(25)]
        await js.delete_consumer(stream, oc.name)
        await fill(js, f"{stream}.a", 10)
        seqs += [(await ctx.next(timeout=10)).metadata.sequence.stream for _ in range(35)]
        ctx.stop()
        assert seqs == list(range(1, 61))
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_ordered_consume_survives_server_restart(fresh_nats_server: NatsServer):
    nc = await jetwire.connect(fresh_nats_server.url, reconnect_time_wait=0.1, max_reconnect_attempts=-1)
    js, stream = await new_stream(nc, 100, storage="file")
    try:
        oc = await js.ordered_consumer(stream)
        rec = Seqs()
        first = rec.at(100)
        done = rec.at(150)
        cc = await oc.consume(rec, max_messages=10)  # 5 s heartbeats: the reconnect resets first
        assert await first.wait(10)
        fresh_nats_server.restart()
        await publish_when_back(js, f"{stream}.a", 50)
        assert await done.wait(8), len(rec.seqs)
        cc.stop()
        assert rec.seqs == list(range(1, 151))
    finally:
        try:
            await js.delete_stream(stream)
        finally:
            await nc.close()


async def test_ordered_reset_gives_up_after_max_attempts(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    stream = uniq("S")
    # room for one consumer: once another takes the slot, the ordered one cannot come back
    await js.create_stream(name=stream, subjects=[f"{stream}.>"], storage="memory", max_consumers=1)
    try:
        await fill(js, f"{stream}.a", 5)
        oc = await js.ordered_consumer(stream, max_reset_attempts=2)
        rec = Seqs()
        errors = Errors()
        got = rec.at(5)
        cc = await oc.consume(rec, expires=2, error_cb=errors)
        assert await got.wait(10)
        # take the slot: the ordered consumer recreates its consumer at once when it is
        # deleted, so it may win the slot back a few times before the squatter gets it
        for _ in range(50):
            for name in [n async for n in js.consumer_names(stream)]:
                try:
                    await js.delete_consumer(stream, name)
                except jetwire.ConsumerNotFoundError:
                    pass
            try:
                await js.create_consumer(stream, durable_name="squatter")
                break
            except jetwire.APIError:  # maximum consumers limit reached: it came back first
                continue
        else:
            raise AssertionError("the squatter never got the stream's one consumer slot")
        err = await errors.wait_for(jetwire.OrderedConsumerResetError, timeout=15)
        assert isinstance(err, jetwire.JetStreamError)
        assert await cc.closed(5)
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_ordered_consume_on_a_deleted_stream_stops_at_once(nats_url):
    """Recreating cannot bring the stream back: StreamNotFoundError, no retries."""
    nc = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc, 5)
    try:
        oc = await js.ordered_consumer(stream)  # no max_reset_attempts: it would retry for ever
        rec = Seqs()
        errors = Errors()
        got = rec.at(5)
        cc = await oc.consume(rec, expires=2, error_cb=errors)
        assert await got.wait(10)
        await js.delete_stream(stream)
        err = await errors.wait_for(jetwire.StreamNotFoundError, timeout=5)
        assert stream in str(err)
        assert await cc.closed(5)
    finally:
        try:
            await js.delete_stream(stream)
        except jetwire.StreamNotFoundError:
            pass
        await nc.close()


async def test_ordered_consumer_refuses_a_second_request_while_one_is_under_way(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc)
    try:
        oc = await js.ordered_consumer(stream)
        got: list = []

        async def reader():
            got.append((await oc.next(timeout=10)).metadata.sequence.stream)

        worker = prims.spawn(reader)
        assert await wait_until(lambda: oc._pulling.locked())  # the worker's next() waits
        # another thread or task would restart the consumer under it: both would get message 1
        with pytest.raises(jetwire.JetStreamError, match="concurrent"):
            await oc.next(timeout=1)
        with pytest.raises(jetwire.JetStreamError, match="concurrent"):
            await oc.fetch(5, max_wait=1)
        await js.publish(f"{stream}.a", b"one")
        assert await prims.join(worker, 10)
        assert got == [1]
        await js.publish(f"{stream}.a", b"two")
        assert (await oc.next(timeout=5)).metadata.sequence.stream == 2  # one at a time is fine
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_ordered_next_keeps_its_timeout_when_the_consumer_cannot_be_recreated(nats_server_factory):
    """A server that answers nothing (frozen) leaves the ordered consumer unable to make its
    next consumer: next() and a messages() context's next() still end at their timeout,
    and close() ends a next() under way at once (they retried forever)."""
    srv = nats_server_factory()
    nc = await jetwire.connect(srv.url, ping_interval=60)
    js = nc.jetstream(timeout=1)
    name = uniq("OFROZEN")
    await js.create_stream(name=name, subjects=[f"{name}.>"], storage="memory")
    await js.publish(f"{name}.a", b"1")
    oc = await js.ordered_consumer(name)
    oc2 = await js.ordered_consumer(name)
    ctx = await oc2.messages(heartbeat=0.5)
    outcome: list = []

    async def next_until_closed() -> None:
        try:
            outcome.append(await oc.next(timeout=60))
        except Exception as exc:
            outcome.append(exc)

    try:
        assert (await oc.next(timeout=5)).data == b"1"
        assert (await ctx.next(timeout=5)).data == b"1"
        srv.freeze()
        for call in (lambda: oc.next(timeout=2), lambda: ctx.next(timeout=2)):
            started = prims.monotonic()
            with pytest.raises(jetwire.TimeoutError):
                await call()
            # (a pull may wait its max_wait plus a second's grace, then the reset its time left)
            assert prims.monotonic() - started < 2 + 1 + 1.5
        ctx.stop()
        pending = prims.spawn(next_until_closed)
        await prims.sleep(0.2)  # (under way: waiting for a message or remaking its consumer)
        await nc.close()
        assert await prims.join(pending, 5), "next() still waiting after close()"
        assert len(outcome) == 1 and isinstance(outcome[0], jetwire.NatsError), outcome
    finally:
        srv.thaw()
        await nc.close()
