"""The asyncio request spinner (``busy_poll``): its adaptive policy and its loop
callback, without a server (tests/integration/test_busy_poll.py has the server side)."""
from __future__ import annotations

import asyncio
import math
import os
import time
from collections import deque

import pytest

from jetwire import options
from jetwire.aio._transport import Spinner
from jetwire.options import io_poll_budget, make_options


def test_budget_zero_is_off() -> None:
    sp = Spinner(0.0, {"1": object()})
    assert not sp.should_spin()
    sp.arm()  # outside a loop too: nothing is scheduled, nothing recorded
    assert not sp.running and not sp.sent
    sp.replied()
    assert sp.avg == 0.0  # nothing is tracked when off


def test_slow_replies_stop_it_and_fast_ones_bring_it_back() -> None:
    sp = Spinner(200e-6, {"1": object()})
    assert sp.should_spin()  # no reply seen yet: try
    for _ in range(20):
        sp.sent.append(time.perf_counter() - 0.010)  # a 10 ms reply
        sp.replied()
    assert sp.avg == pytest.approx(4 * 200e-6, rel=0.1)  # samples are capped at 4x the budget
    assert not sp.should_spin()
    for _ in range(40):
        sp.sent.append(time.perf_counter())  # replies within microseconds
        sp.replied()
    assert sp.avg < 200e-6
    assert sp.should_spin()


def test_many_requests_in_flight_to_a_slow_responder_are_timed_from_the_oldest() -> None:
    outstanding = {str(i): object() for i in range(50)}
    sp = Spinner(200e-6, outstanding)
    t0 = time.perf_counter()
    for i in range(50):  # 50 requests 100 us apart, each answered 5 ms after it went out
        sp.sent.append(t0 - 0.005 + i * 100e-6)
    for i in range(50):
        del outstanding[str(i)]
        sp.replied()
    # timed from the last request sent, every reply would look like 100 us or less
    assert sp.avg > 200e-6
    assert not sp.should_spin()
    assert not sp.sent


def test_send_times_of_timed_out_requests_are_forgotten() -> None:
    outstanding = {"a": object()}
    sp = Spinner(200e-6, outstanding)
    sp.sent.extend([time.perf_counter()] * 3)  # two requests timed out, one is answered
    del outstanding["a"]
    sp.replied()
    assert not sp.sent  # nothing outstanding: nothing to time later replies from
    for _ in range(5000):
        sp.sent.append(time.perf_counter())
    assert len(sp.sent) == Spinner.REMEMBER  # bounded whatever happens


def test_the_loop_is_kept_polling_while_a_request_is_outstanding() -> None:
    async def main() -> None:
        outstanding = {"1": object()}
        sp = Spinner(10.0, outstanding)
        sp.arm()
        assert sp.running
        for _ in range(5):
            await asyncio.sleep(0)
            assert sp.running
        outstanding.clear()  # answered
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert not sp.running

    asyncio.run(main())


def test_a_ping_awaiting_its_pong_keeps_it_polling_too() -> None:
    async def main() -> None:
        pongs: deque = deque([object()])
        sp = Spinner(10.0, {}, pongs)
        sp.arm()
        for _ in range(5):
            await asyncio.sleep(0)
            assert sp.running
        pongs.popleft()  # the PONG came
        sp.replied()
        assert not sp.sent
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert not sp.running

    asyncio.run(main())


def test_it_stops_after_the_budget_even_without_a_reply() -> None:
    async def main() -> None:
        sp = Spinner(0.002, {"1": object()})
        sp.arm()
        turns = 0
        while sp.running and turns < 10_000_000:
            await asyncio.sleep(0)
            turns += 1
        assert not sp.running
        assert time.perf_counter() >= sp.until

    asyncio.run(main())


def test_a_slow_connection_is_not_kept_awake() -> None:
    async def main() -> None:
        sp = Spinner(200e-6, {"1": object()})
        sp.avg = 0.005  # replies take 5 ms here
        sp.arm()
        assert not sp.running

    asyncio.run(main())


@pytest.mark.parametrize("bad", [-1e-6, math.nan])
def test_bad_busy_poll_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="busy_poll"):
        make_options("nats://127.0.0.1:4222", {"busy_poll": bad})


def test_busy_poll_defaults_on() -> None:
    assert make_options(None, {}).busy_poll == 200e-6
    assert make_options(None, {"busy_poll": 0}).busy_poll == 0


@pytest.mark.parametrize("bad", [1, "yes", 0.5])
def test_poll_io_takes_a_bool_or_none(bad: object) -> None:
    with pytest.raises(ValueError, match="poll_io"):
        make_options("nats://127.0.0.1:4222", {"poll_io": bad})


def test_poll_io_budget_follows_the_option_and_the_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    assert io_poll_budget(make_options(None, {"poll_io": True})) == 200e-6
    assert io_poll_budget(make_options(None, {"poll_io": True, "busy_poll": 0})) == 0
    assert io_poll_budget(make_options(None, {"poll_io": False})) == 0
    monkeypatch.setattr(options, "usable_cpus", lambda: 16)
    assert io_poll_budget(make_options(None, {})) == 200e-6
    monkeypatch.setattr(options, "usable_cpus", lambda: 2)
    assert io_poll_budget(make_options(None, {})) == 0


def test_usable_cpus_is_the_affinity_mask() -> None:
    assert options.usable_cpus() == len(os.sched_getaffinity(0))


async def _turns_while(sp: Spinner) -> int:
    turns = 0
    while sp.running and turns < 10_000_000:
        await asyncio.sleep(0)
        turns += 1
    return turns


def test_reads_close_together_keep_the_loop_polling() -> None:
    async def main() -> None:
        sp = Spinner(200e-6, {}, (), linger=0.002)
        sp.heard()  # the first read after a quiet spell: no polling
        assert not sp.running
        sp.heard()  # the next within the poll time: a stream, poll on
        assert sp.running
        await _turns_while(sp)
        assert time.perf_counter() >= sp.until

    asyncio.run(main())


def test_a_write_answered_soon_makes_the_next_write_poll() -> None:
    async def main() -> None:
        a = Spinner(200e-6, {}, (), linger=0.05)
        b = Spinner(200e-6, {}, (), linger=0.05)  # another connection of the same loop
        a.wrote()
        assert not a.running  # nothing answered a write yet
        b.heard()  # came within the poll time of a's write: an echo
        assert b.running
        await _turns_while(b)
        a.wrote()
        assert a.running  # the loop polls for what answers this write
        await _turns_while(a)

    asyncio.run(main())


def test_without_linger_io_never_polls() -> None:
    async def main() -> None:
        sp = Spinner(200e-6, {}, ())
        for _ in range(3):
            sp.heard()
            sp.wrote()
        assert not sp.running

    asyncio.run(main())
