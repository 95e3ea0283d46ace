"""Against a real nats-server: a fetch's acks held to leave together (``hold_writes``),
and ``poll_io`` (the socket polled after I/O while traffic flows). Nothing held is lost
or kept past its bound; with polling on, messages, requests, reconnects and close behave
as without it (asyncio source; the blocking twin is generated)."""
from __future__ import annotations

import os
import time

import pytest

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims
from jetwire.errors import TimeoutError
from jetwire.jetstream.pull import ACK_HOLD
from jetwire.testing import NatsServer
from tests.aio._helpers import Collector, acks_applied, new_stream, wait_until


async def test_acks_held_during_a_fetch_all_arrive(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc, 300, data=b"x")
    try:
        cons = await js.create_consumer(stream, durable_name="held", ack_policy="explicit", max_ack_pending=-1)
        got = 0
        for _ in range(3):
            async for m in await cons.fetch(100, max_wait=5):
                await m.ack()
                got += 1
        assert got == 300
        info = await acks_applied(cons)  # no flush: what the batches held left on its own
        assert info.num_ack_pending == 0
        assert info.ack_floor.stream_seq == 300
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_acks_held_by_an_abandoned_batch_leave_within_the_bound(nats_url):
    """The user stops iterating while more of the batch is due: nothing on that connection
    ends the hold but its timer (the consumer is watched from another connection), and
    the ack still reaches the server."""
    assert 0 < ACK_HOLD <= 0.05
    nc = await jetwire.connect(nats_url)
    obs = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc, 1)  # the first message, there before the fetch
    try:
        cons = await js.create_consumer(stream, durable_name="gone", ack_policy="explicit", max_ack_pending=-1)
        watched = await obs.jetstream().consumer(stream, "gone")
        batch = await cons.fetch(10, max_wait=30)  # 9 more are due: the batch stays open
        pending = prims.spawn(_ack_first_then_wait, batch)
        assert await wait_until(lambda: _acked(watched, 1), timeout=5)
        await obs.jetstream().publish(f"{stream}.a", b"2")  # ends the waiting iteration
        assert await prims.join(pending, 10)
    finally:
        await obs.close()
        await js.delete_stream(stream)
        await nc.close()


async def _ack_first_then_wait(batch) -> None:
    """Ack the first message, then wait in the iteration (holding writes) for a second."""
    n = 0
    async for m in batch:
        await m.ack()
        n += 1
        if n == 2:
            return


async def _acked(cons, n: int) -> bool:
    info = await cons.info()
    return info.ack_floor.stream_seq >= n and info.num_ack_pending == 0


async def test_a_publish_during_a_held_fetch_is_delivered(nats_url):
    nc = await jetwire.connect(nats_url)
    other = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc, 1)
    try:
        seen = Collector(1)
        await other.subscribe("held.out", cb=seen)
        await other.flush()
        cons = await js.create_consumer(stream, durable_name="pub", ack_policy="explicit", max_ack_pending=-1)
        batch = await cons.fetch(5, max_wait=30)
        waiter = prims.spawn(_publish_then_wait, batch, nc)
        assert [m.data for m in await seen.wait(5)] == [b"result"]
        await other.jetstream().publish(f"{stream}.a", b"2")
        assert await prims.join(waiter, 10)
    finally:
        await js.delete_stream(stream)
        await nc.close()
        await other.close()


async def _publish_then_wait(batch, nc) -> None:
    """Publish a result for the first message (queued while the batch holds writes), then
    wait in the iteration for a second."""
    n = 0
    async for m in batch:
        await m.ack()
        if n == 0:
            await nc.publish("held.out", b"result")
        n += 1
        if n == 2:
            return


async def test_poll_io_fetches_and_pulls_every_message_in_order(nats_url):
    """With polling on, a fetch's and a pull iterator's waits poll before they sleep
    (blocking: ``SpinSignal``): every message comes, in order, and an empty pull still
    ends on time."""
    nc = await jetwire.connect(nats_url, poll_io=True, busy_poll=0.001)
    js, stream = await new_stream(nc, 600, data=b"x")
    try:
        cons = await js.create_consumer(stream, durable_name="pio", ack_policy="explicit", max_ack_pending=-1)
        seqs = []
        for _ in range(3):
            async for m in await cons.fetch(150, max_wait=5):
                seqs.append(m.metadata.sequence.stream)
                await m.ack()
        it = await cons.messages(max_messages=50)
        try:
            while len(seqs) < 600:
                m = await it.next(timeout=5)
                seqs.append(m.metadata.sequence.stream)
                await m.ack()
        finally:
            it.stop()
        assert seqs == list(range(1, 601))
        t0 = time.monotonic()
        assert [m async for m in await cons.fetch(10, max_wait=0.3)] == []
        assert time.monotonic() - t0 < 5  # a hang detector, not a speed check
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_poll_io_delivers_requests_and_streams_like_without(nats_url):
    for poll in (True, False):
        nc = await jetwire.connect(nats_url, poll_io=poll, busy_poll=0.001)
        srv = await jetwire.connect(nats_url, poll_io=poll, busy_poll=0.001)
        try:
            async def echo(m) -> None:
                await m.respond(m.data)

            await srv.subscribe("pio.echo", cb=echo)
            seen = Collector(2000)
            await srv.subscribe("pio.stream", cb=seen)
            await srv.flush()
            for i in range(200):
                assert (await nc.request("pio.echo", b"%d" % i, timeout=5)).data == b"%d" % i
            for i in range(2000):
                await nc.publish("pio.stream", b"%d" % i)
            await nc.flush()
            assert [m.data for m in await seen.wait(10)] == [b"%d" % i for i in range(2000)]
        finally:
            await nc.close()
            await srv.close()


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def test_poll_io_reconnects_and_closes_without_leaking_descriptors():
    server = NatsServer()
    server.start()
    try:
        after: list[int] = []  # descriptors open after each round (the server's own change too)
        for _ in range(4):
            back = prims.Signal()
            nc = await jetwire.connect(server.url, poll_io=True, reconnect_time_wait=0.05,
                                       max_reconnect_attempts=-1, reconnected_cb=back.set)
            try:
                seen = Collector(1)
                await nc.subscribe("pio.r", cb=seen)
                await nc.flush()
                server.restart()
                assert await back.wait(10)
                await nc.publish("pio.r", b"back")
                await seen.wait(5)
            finally:
                await nc.close()
            assert nc.is_closed
            after.append(_fds())
        # a leak grows the count by a descriptor or two per connection and reconnect
        assert await wait_until(lambda: _fds() <= after[0], timeout=5), after
    finally:
        server.stop()


async def test_poll_io_requests_time_out_on_time_and_many_requesters_get_their_replies(nats_url):
    nc = await jetwire.connect(nats_url, poll_io=True, busy_poll=0.002)
    srv = await jetwire.connect(nats_url)
    try:
        async def silent(m) -> None:
            return None

        async def echo(m) -> None:
            await m.respond(m.data)

        await srv.subscribe("pio.silent", cb=silent)
        await srv.subscribe("pio.many", cb=echo)
        await srv.flush()
        t0 = time.monotonic()
        with pytest.raises(TimeoutError):
            await nc.request("pio.silent", b"", timeout=0.3)
        assert 0.29 <= time.monotonic() - t0 < 3  # a hang detector, not a speed check

        async def requester(i: int, out: list) -> None:
            for j in range(50):
                out.append((await nc.request("pio.many", b"%d.%d" % (i, j), timeout=5)).data)

        outs: list[list] = [[] for _ in range(8)]
        tasks = [prims.spawn(requester, i, outs[i]) for i in range(8)]
        for t in tasks:
            assert await prims.join(t, 30)
        assert outs == [[b"%d.%d" % (i, j) for j in range(50)] for i in range(8)]
    finally:
        await nc.close()
        await srv.close()
