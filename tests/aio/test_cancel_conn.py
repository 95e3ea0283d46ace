"""The connection when a task is cancelled or the server reads nothing, against real
servers (through the fault proxy where the network misbehaves): what was published
while the socket was congested survives a lost connection, PINGs of a lost connection
are not sent on the next, and cancelling one waiter (a publish, close(), drain(), a
join, a service's stop()) leaves everything else working. Most of it is asyncio's
(tasks are cancelled); the slow-consumer count holds in both flavours. (asyncio source;
the blocking twin is generated.)"""
from __future__ import annotations

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims
from tests.aio._helpers import uniq, wait_until


async def test_a_slow_consumer_error_counts_what_was_dropped(nats_url):
    nc = await jetwire.connect(nats_url, error_cb=lambda e: errors.append(e))
    errors: list = []
    gate = prims.Signal()
    subject = uniq("slowcount")
    try:
        async def stuck(msg) -> None:
            await gate.wait(10)

        sub = await nc.subscribe(subject, cb=stuck, pending_msgs_limit=5)
        await nc.flush()
        for _ in range(50):
            await nc.publish(subject, b"x")
        await nc.flush()
        assert await wait_until(lambda: any(isinstance(e, jetwire.SlowConsumerError) for e in errors))
        slow = next(e for e in errors if isinstance(e, jetwire.SlowConsumerError))
        assert slow.dropped >= 1 and slow.sid == sub.sid
        gate.set()
    finally:
        await nc.close()


# aio-only: begin
import asyncio  # noqa: E402

from tests.chaos.proxy import UP, FaultProxy  # noqa: E402

BIG = b"." * 100_000


async def _congest(nc, subject: str) -> int:
    """Publish BIG (not awaited) until the connection stays congested (the server behind
    a stalled proxy reads nothing); the index of the publish that found it so."""
    for i in range(4000):
        r = nc.publish(subject, BIG)
        if isinstance(r, asyncio.Future) and not r.done():  # the back-pressure wait
            await asyncio.sleep(0.2)
            if not r.done():  # not a passing pause: the kernel's buffers are full
                return i
        elif i % 8 == 7:
            await asyncio.sleep(0)
    raise AssertionError("the connection never became congested")


async def test_publishes_held_while_congested_survive_a_lost_connection(nats_server, nats_url):
    with FaultProxy(nats_server.host, nats_server.port).start() as proxy:
        nc = await jetwire.connect(proxy.url, flush_timeout=30, ping_interval=0, reconnect_time_wait=0.05,
                                   max_reconnect_attempts=-1, reconnect_buffer_size=64 << 20)
        watcher = await jetwire.connect(nats_url)
        subject = uniq("held")
        got: list[bytes] = []
        try:
            await watcher.subscribe(subject, cb=lambda m: got.append(m.data[:8]))
            await watcher.flush()
            proxy.stall()
            k = await _congest(nc, subject)
            tags = [b"tag%05d" % i for i in range(20)]
            for tag in tags:  # published while the socket is full: they wait in the outbox ...
                nc.publish(subject, tag + BIG[8:])
            back = prims.Signal()
            nc.link.on_reconnect(back.set)
            proxy.cut()  # ... the connection is lost with them queued ...
            proxy.heal()
            assert await back.wait(20)
            await nc.flush(10)
            # ... and they go out on the next one, in order (what the socket had taken is lost)
            assert await wait_until(lambda: len([g for g in got if g.startswith(b"tag")]) == len(tags), 20), \
                (k, len(got))
            assert [g for g in got if g.startswith(b"tag")] == tags
        finally:
            await watcher.close()
            await nc.close()


async def test_pings_of_a_lost_connection_are_not_sent_on_the_next(nats_server):
    with FaultProxy(nats_server.host, nats_server.port).start() as proxy:
        nc = await jetwire.connect(proxy.url, flush_timeout=30, ping_interval=0, reconnect_time_wait=0.05,
                                   max_reconnect_attempts=-1, reconnect_buffer_size=64 << 20)
        try:
            proxy.stall()
            await _congest(nc, uniq("pings"))
            # flushes made while the socket is full: their PINGs wait in the outbox
            flushes = [prims.spawn(nc.flush, 30) for _ in range(3)]
            await asyncio.sleep(0)
            back = prims.Signal()
            nc.link.on_reconnect(back.set)
            proxy.cut()
            for f in flushes:  # they fail with the connection ...
                with_error = await asyncio.gather(f, return_exceptions=True)
                assert isinstance(with_error[0], jetwire.ConnectionClosedError), with_error
            proxy.captured[UP].clear()  # from here: the next connection's bytes
            proxy.heal()
            assert await back.wait(20)
            await nc.flush(10)
            # ... and their PINGs are not sent again: the new connection carries the
            # handshake's PING and this flush's, nothing else (a stale PING's PONG would
            # have answered this flush before the server had what came before it)
            sent = bytes(proxy.captured[UP])
            last = sent[sent.rindex(b"CONNECT "):]
            assert last.count(b"PING\r\n") == 2, last.count(b"PING\r\n")
        finally:
            await nc.close()


async def test_cancelling_one_publish_waiter_leaves_the_others_waiting(nats_server):
    with FaultProxy(nats_server.host, nats_server.port).start() as proxy:
        nc = await jetwire.connect(proxy.url, flush_timeout=30, ping_interval=0)
        try:
            proxy.stall()
            await _congest(nc, uniq("shared"))

            async def publish_and_wait(tag: str) -> str:
                await nc.publish("sink.x", b"y")  # back-pressure: waits for the drain
                return tag

            a, b = prims.spawn(publish_and_wait, "a"), prims.spawn(publish_and_wait, "b")
            await asyncio.sleep(0.05)
            assert not a.done() and not b.done()
            a.cancel()
            await asyncio.sleep(0.05)
            assert a.cancelled()
            assert not b.cancelled()  # nobody cancelled b (it waits, or the socket drained)
            proxy.heal()
            assert await b == "b"
        finally:
            proxy.heal()
            await nc.close()


async def test_close_cancelled_while_it_flushes_still_closes(nats_server):
    with FaultProxy(nats_server.host, nats_server.port).start() as proxy:
        nc = await jetwire.connect(proxy.url, flush_timeout=30, ping_interval=0)
        sub = await nc.subscribe(uniq("closing"))
        await nc.flush()
        waiter = prims.spawn(sub.next_msg, None)
        closed = prims.Signal()
        nc.link.on_close(lambda exc: closed.set())
        proxy.stall()
        await _congest(nc, uniq("closing"))
        try:
            await asyncio.wait_for(nc.close(), 0.2)  # cancelled while it waits for the socket
        except TimeoutError:
            pass
        assert nc.is_closed and closed.is_set()
        done = await asyncio.gather(asyncio.wait_for(waiter, 5), return_exceptions=True)
        assert isinstance(done[0], jetwire.ConnectionClosedError), done
        proxy.heal()  # the proxy reads again: it sees the client went away
        assert await wait_until(lambda: proxy.open_connections == 0)  # the socket was let go


async def test_drain_cancelled_midway_closes_the_connection(nats_url):
    nc = await jetwire.connect(nats_url)
    gate, entered = prims.Signal(), prims.Signal()
    subject = uniq("draincancel")

    async def slow(msg) -> None:
        entered.set()
        await gate.wait(10)

    await nc.subscribe(subject, cb=slow)
    await nc.publish(subject, b"x")
    await nc.flush()
    assert await entered.wait(5)
    try:
        await asyncio.wait_for(nc.drain(timeout=10), 0.2)  # waits for the callback: cancelled
    except TimeoutError:
        pass
    assert nc.is_closed  # not left half-drained, refusing everything
    gate.set()


async def test_a_callback_raising_cancelled_error_is_reported_and_delivery_goes_on(nats_url):
    errors: list = []
    nc = await jetwire.connect(nats_url, error_cb=errors.append)
    subject = uniq("cbcancel")
    got: list = []

    async def cb(msg) -> None:
        if msg.data == b"boom":
            raise asyncio.CancelledError()  # e.g. it awaited something cancelled elsewhere
        got.append(msg.data)

    try:
        await nc.subscribe(subject, cb=cb)
        for data in (b"boom", b"after"):
            await nc.publish(subject, data)
        await nc.flush()
        assert await wait_until(lambda: got == [b"after"])
        assert await wait_until(lambda: any(isinstance(e, asyncio.CancelledError) for e in errors)), errors
    finally:
        await nc.close()


async def test_join_does_not_swallow_the_callers_cancellation():
    async def forever() -> None:
        await asyncio.sleep(30)

    joined = asyncio.get_running_loop().create_task(forever())
    seen: list = []

    async def joiner() -> None:
        try:
            seen.append(await prims.join(joined, 30))
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    waiting = asyncio.get_running_loop().create_task(joiner())
    await asyncio.sleep(0)
    joined.cancel()
    waiting.cancel()  # both at once, as a shutdown cancels every task
    await asyncio.gather(joined, waiting, return_exceptions=True)
    assert seen == ["cancelled"] and waiting.cancelled()


async def test_a_service_handler_raising_cancelled_error_answers_500_and_the_endpoint_goes_on(nats_url):
    nc = await jetwire.connect(nats_url)
    client = await jetwire.connect(nats_url)
    name = uniq("svccancel").replace(".", "_")
    try:
        async def handler(req) -> None:
            if req.data == b"boom":
                await asyncio.sleep(0)  # not eager any more: a worker task runs it
                raise asyncio.CancelledError()
            await req.respond(b"ok")

        svc = await jetwire.micro.add_service(nc, name=name, version="1.0.0", concurrency=1)
        await svc.add_endpoint("ep", handler, subject=f"{name}.ep")
        for _ in range(3):  # with one worker, a dead worker would leave the endpoint mute
            answer = await client.request(f"{name}.ep", b"boom", timeout=5)
            assert answer.headers and answer.headers.get("Nats-Service-Error-Code") == "500"
        assert (await client.request(f"{name}.ep", b"fine", timeout=5)).data == b"ok"
        await svc.stop()
    finally:
        await client.close()
        await nc.close()


async def test_a_cancelled_stop_still_stops_the_service(nats_url):
    nc = await jetwire.connect(nats_url)
    client = await jetwire.connect(nats_url)
    name = uniq("stopcancel").replace(".", "_")
    gate, started = prims.Signal(), prims.Signal()
    done_with: list = []
    try:
        async def slow(req) -> None:
            started.set()
            await gate.wait(10)
            await req.respond(b"late")

        svc = await jetwire.micro.add_service(nc, name=name, version="1.0.0", done_cb=done_with.append)
        await svc.add_endpoint("slow", slow, subject=f"{name}.slow")
        asker = prims.spawn(client.request, f"{name}.slow", b"", 10)
        assert await started.wait(5)
        try:
            await asyncio.wait_for(svc.stop(), 0.2)  # waits for the handler: cancelled
        except TimeoutError:
            pass
        assert svc.stopped
        assert await wait_until(lambda: done_with == [svc])  # done_cb still runs, once
        try:  # nothing answers discovery any more
            await client.request(f"$SRV.PING.{name}", b"", timeout=0.5)
            raise AssertionError("a stopped service answered PING")
        except (jetwire.NoRespondersError, jetwire.TimeoutError):
            pass
        await svc.stop()  # returns at once
        gate.set()
        await asyncio.gather(asker, return_exceptions=True)
    finally:
        await client.close()
        await nc.close()
# aio-only: end
