"""busy_poll in jetwire.aio against a real server: while a request awaits a reply that
usually comes within the budget the event loop keeps polling (the spinner runs), it
stops once answered, slow responders switch it off, and answers, errors and timeouts
are what they are without it."""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

import jetwire.aio as jetwire
from jetwire.errors import NoRespondersError, TimeoutError

try:
    import uvloop
except ImportError:  # pragma: no cover
    uvloop = None


def run(fn: Callable[[], Awaitable[None]]) -> None:
    if uvloop is not None:
        uvloop.run(fn())
    else:
        asyncio.run(fn())


async def responder(url: str, subject: str, delay: float = 0.0, gate: Any = None) -> Any:
    srv = await jetwire.connect(url)

    async def handler(m: Any) -> None:
        if gate is not None:
            await gate.wait()
        if delay:
            await asyncio.sleep(delay)  # the responder's work, not a wait for the test
        await m.respond(b"re:" + m.data)

    await srv.subscribe(subject, cb=handler)
    await srv.flush()
    return srv


def test_the_loop_polls_while_a_fast_reply_is_due_and_stops_when_answered(nats_url: str) -> None:
    async def main() -> None:
        gate = asyncio.Event()
        srv = await responder(nats_url, "bp.fast", gate=gate)
        nc = await jetwire.connect(nats_url, busy_poll=5.0)  # a long budget: the gate decides
        try:
            task = asyncio.ensure_future(nc.request("bp.fast", b"1", timeout=10))
            for _ in range(50):  # the request goes out and the loop keeps turning
                await asyncio.sleep(0)
            assert nc._spin.running
            gate.set()
            assert (await task).data == b"re:1"
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            assert not nc._spin.running  # nothing outstanding: the loop may sleep again
            for i in range(20):
                assert (await nc.request("bp.fast", b"%d" % i, timeout=5)).data == b"re:%d" % i
            assert nc._spin.should_spin()
        finally:
            await nc.close()
            await srv.close()

    run(main)


def test_slow_responders_switch_it_off_and_fast_ones_back_on(nats_url: str) -> None:
    async def main() -> None:
        # a 2 ms budget: a loopback reply (about 0.1 ms, more on a busy VM) is well inside
        # it, a 20 ms one well outside, whatever the machine (the default is 200 us)
        slow = await responder(nats_url, "bp.slow", delay=0.02)
        fast = await responder(nats_url, "bp.quick")
        nc = await jetwire.connect(nats_url, busy_poll=0.002)
        try:
            for i in range(24):
                assert (await nc.request("bp.slow", b"%d" % i, timeout=5)).data == b"re:%d" % i
            assert not nc._spin.should_spin()
            task = asyncio.ensure_future(nc.request("bp.slow", b"x", timeout=5))
            await asyncio.sleep(0)
            assert not nc._spin.running  # a 20 ms reply is not polled for
            assert (await task).data == b"re:x"
            for i in range(60):
                assert (await nc.request("bp.quick", b"%d" % i, timeout=5)).data == b"re:%d" % i
            assert nc._spin.should_spin()
        finally:
            await nc.close()
            await slow.close()
            await fast.close()

    run(main)


def test_off_never_polls(nats_url: str) -> None:
    async def main() -> None:
        gate = asyncio.Event()
        srv = await responder(nats_url, "bp.off", gate=gate)
        nc = await jetwire.connect(nats_url, busy_poll=0)
        try:
            task = asyncio.ensure_future(nc.request("bp.off", b"1", timeout=10))
            for _ in range(20):
                await asyncio.sleep(0)
                assert not nc._spin.running
            gate.set()
            assert (await task).data == b"re:1"
        finally:
            await nc.close()
            await srv.close()

    run(main)


def test_errors_and_timeouts_are_unchanged_and_stop_the_polling(nats_url: str) -> None:
    async def main() -> None:
        gate = asyncio.Event()  # never set: nobody answers
        srv = await responder(nats_url, "bp.never", gate=gate)
        nc = await jetwire.connect(nats_url, busy_poll=5.0)
        try:
            with pytest.raises(NoRespondersError):
                await nc.request("bp.nobody.listens", b"", timeout=5)
            with pytest.raises(TimeoutError):
                await nc.request("bp.never", b"", timeout=0.2)
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            assert not nc._spin.running  # the timed-out request is no longer outstanding
        finally:
            await nc.close()
            await srv.close()

    run(main)


def test_jetstream_publish_is_polled_for_too(nats_url: str) -> None:
    async def main() -> None:
        nc = await jetwire.connect(nats_url, busy_poll=5.0)
        try:
            js = nc.jetstream()
            await js.create_stream(name="BP", subjects=["bp.js"])
            task = asyncio.ensure_future(js.publish("bp.js", b"x"))
            await asyncio.sleep(0)
            assert nc._spin.running or task.done()
            ack = await task
            assert ack.stream == "BP" and ack.seq == 1
        finally:
            await nc.close()

    run(main)


def test_a_flush_is_polled_for_and_times_a_round_trip(nats_url: str) -> None:
    async def main() -> None:
        nc = await jetwire.connect(nats_url, busy_poll=5.0)
        try:
            task = asyncio.ensure_future(nc.flush(timeout=5))
            await asyncio.sleep(0)  # the PING goes out
            assert nc._spin.running or task.done()
            await task
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            assert not nc._spin.running  # the PONG came: nothing is awaited any more
            assert 0 < nc._spin.avg < 5.0  # the round trip was timed
            assert await nc.rtt() > 0
        finally:
            await nc.close()

    run(main)
