"""Resources released against a real nats-server: a fetched batch nobody iterates ends
at its deadline when the server lost its pull, answered waits leave no deadline records
behind (asyncio), ``messages().drain()`` closes its context, and an ordered consumer
deletes its server consumer when its context ends (asyncio source; the blocking twin is
generated)."""
from __future__ import annotations

import asyncio  # aio-only

import pytest

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims
from tests.aio._helpers import Seqs, fill, new_stream, server_subscriptions, uniq, wait_until


async def _back_to(server, nc, n: int) -> bool:
    async def same() -> bool:
        return await server_subscriptions(server, nc) == n

    return await wait_until(same, 5.0)


# ---------------------------------------------------------------------------------
# fetch: a batch ends at its deadline, iterated or not


async def test_unread_fetch_ends_at_its_deadline_when_the_server_lost_the_pull(fresh_nats_server):
    server = fresh_nats_server
    back = prims.Signal()
    nc = await jetwire.connect(server.url, reconnect_time_wait=0.1, reconnected_cb=back.set,
                               error_cb=lambda e: None)
    try:
        js, stream = await new_stream(nc, 2, storage="file")
        c = await js.create_consumer(stream, durable_name="D")
        base = await server_subscriptions(server, nc)
        # not iterated (yet): the first gets both messages and waits for more, the others
        # wait for anything
        batches = [await c.fetch(5, max_wait=1.0) for _ in range(3)]
        assert await server_subscriptions(server, nc) == base + 3
        back.clear()
        server.restart(kill=True)  # the server forgets the pulls: no 408 will end them
        assert await back.wait(20)
        # each ends at max_wait + the grace (2 s after its fetch): unsubscribed, client and
        # server side, not re-subscribed for ever
        assert await wait_until(lambda: all(b.done for b in batches), 5.0)
        assert await _back_to(server, nc, base)
        # what came before stays readable; the batch then ends quietly
        got = [m.metadata.sequence.stream async for m in batches[0]]
        assert got == [1, 2]
        assert batches[0].error is None
        assert [m async for m in batches[1]] == []
    finally:
        await nc.close()


async def test_fetch_deadline_records_stay_bounded(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc, 150)
    try:
        c = await js.create_consumer(stream, durable_name="D", ack_policy="none")
        idle = await js.create_consumer(stream, durable_name="I", filter_subject=f"{stream}.none")
        # the earliest deadline is a batch still running (nobody reads it), the ones
        # behind it finish at once: their records go before the first one's deadline
        stuck = await idle.fetch(1, max_wait=1.0)
        for _ in range(150):
            got = [m async for m in await c.fetch(1, max_wait=5.0)]
            assert len(got) == 1
        deadlines = nc._shared["jetstream.fetch_deadlines"]
        assert len(deadlines._heap) <= 64 + 1
        assert await wait_until(lambda: stuck.done, 5.0)
        assert [m async for m in stuck] == []
    finally:
        await js.delete_stream(stream)
        await nc.close()


# ---------------------------------------------------------------------------------
# request/flush timeouts (asyncio: one loop timer for all, a record per wait)

# aio-only: begin
async def test_answered_waits_leave_no_deadline_records(nats_url):
    nc = await jetwire.connect(nats_url)
    try:
        echo, sink = uniq("echo"), uniq("sink")
        await nc.subscribe(echo, cb=lambda m: m.respond(b"ok"))
        await nc.subscribe(sink)  # takes requests, answers none
        await nc.flush()
        loop = asyncio.get_running_loop()

        def records(timeout: float) -> int:  # the wait records of that timeout value
            dl = getattr(loop, "_jetwire_deadlines", None)
            return 0 if dl is None else len(dl.queues.get(timeout, ()))

        for _ in range(300):
            await nc.request(echo, b"", timeout=3600)
            await nc.flush(timeout=3600)
        assert records(3600) <= 1  # not one per wait until its timeout (an hour)
        # behind a wait still pending (its FIFO's head), the answered ones are dropped too
        stuck = prims.eager_start(nc.request(sink, b"", timeout=2.0))  # waits from here
        assert stuck is not None and records(2.0) == 1
        for _ in range(300):
            await nc.request(echo, b"", timeout=2.0)
        assert records(2.0) <= 64 + 1
        with pytest.raises(jetwire.TimeoutError):  # and the pending one still times out
            await stuck
    finally:
        await nc.close()
# aio-only: end


# ---------------------------------------------------------------------------------
# messages().drain()


async def test_messages_drain_with_nothing_buffered_closes_at_once(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc)
    try:
        c = await js.create_consumer(stream, durable_name="D")
        hooks = (len(nc._on_reconnect), len(nc._on_close_cbs))
        mc = await c.messages(expires=1)
        assert (len(nc._on_reconnect), len(nc._on_close_cbs)) == (hooks[0] + 1, hooks[1] + 1)
        await mc.drain()
        assert mc.is_closed
        assert (len(nc._on_reconnect), len(nc._on_close_cbs)) == hooks
        with pytest.raises(jetwire.MsgIteratorClosedError, match="drained"):
            await mc.next(1)
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_messages_drain_closes_when_the_buffer_empties(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc, 5)
    try:
        c = await js.create_consumer(stream, durable_name="D", ack_policy="none")
        hooks = (len(nc._on_reconnect), len(nc._on_close_cbs))
        mc = await c.messages(max_messages=10)
        seqs = [(await mc.next(5)).metadata.sequence.stream]
        await mc.drain()
        # nothing is pulled again: the reconnect hook goes now; the close hook stays while
        # buffered messages are handed out
        assert len(nc._on_reconnect) == hooks[0]
        while not mc.is_closed:  # closed as the last buffered one is handed out
            seqs.append((await mc.next(5)).metadata.sequence.stream)
        assert seqs == list(range(1, len(seqs) + 1))
        assert (len(nc._on_reconnect), len(nc._on_close_cbs)) == hooks
        with pytest.raises(jetwire.MsgIteratorClosedError, match="drained"):
            await mc.next(1)
    finally:
        await js.delete_stream(stream)
        await nc.close()


# ---------------------------------------------------------------------------------
# ordered consumers: the server consumer goes when the context ends


async def test_ordered_consumer_deletes_its_consumer_when_a_context_ends(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc, 3)
    try:
        deleted = await nc.subscribe(f"$JS.EVENT.ADVISORY.CONSUMER.DELETED.{stream}.*")
        await nc.flush()
        oc = await js.ordered_consumer(stream)

        async def names() -> list:
            return [n async for n in js.consumer_names(stream)]

        async def none_left() -> bool:
            return await names() == []

        async def gone(name: str) -> None:
            ev = await deleted.next_msg(timeout=5)
            assert ev.subject.rsplit(".", 1)[1] == name
            # (the server may send the advisory before it has let go of the consumer)
            assert await wait_until(none_left, 5.0)

        # consume(), stopped
        rec = Seqs()
        done = rec.at(3)
        cc = await oc.consume(rec)
        assert await done.wait(5)
        name = oc.cached_info().name
        cc.stop()
        assert await cc.closed(5)
        await gone(name)
        # messages(), drained (nothing buffered: it ends at once)
        await fill(js, f"{stream}.a", 1, start=3)
        mc = await oc.messages()
        assert (await mc.next(5)).metadata.sequence.stream == 4
        name = oc.cached_info().name
        await mc.drain()
        await gone(name)
        # messages(), stopped
        await fill(js, f"{stream}.a", 1, start=4)
        mc = await oc.messages()
        assert (await mc.next(5)).metadata.sequence.stream == 5
        name = oc.cached_info().name
        mc.stop()
        await gone(name)
        # one-off next() keeps its consumer for the next call (as nats.go's does) ...
        await fill(js, f"{stream}.a", 2, start=5)
        assert (await oc.next(5)).metadata.sequence.stream == 6
        name = oc.cached_info().name
        assert (await oc.next(5)).metadata.sequence.stream == 7
        assert oc.cached_info().name == name
        assert await names() == [name]
        # ... and a context that goes on with it deletes it when it ends
        cc = await oc.consume(lambda m: None)
        cc.stop()
        assert await cc.closed(5)
        await gone(name)
    finally:
        await js.delete_stream(stream)
        await nc.close()
