"""``SpinSignal`` (the blocking flavour's wake-up flag of a subscription's callback thread
and of a fetch, ``poll_io``): its waiter polls before it sleeps. It must behave like
``Signal``: no wake-up lost, none invented, timeouts kept, one poller at a time."""
from __future__ import annotations

import threading
import time

from jetwire._sync import _prims as prims


def test_signal_maker_gives_a_spin_signal_only_with_a_poll_time() -> None:
    assert prims.signal_maker(0.0)().__class__ is prims.Signal
    sig = prims.signal_maker(0.001)()
    assert isinstance(sig, prims.SpinSignal)
    assert isinstance(sig, prims.Signal)


def test_a_raised_flag_returns_at_once_and_clear_lowers_it() -> None:
    sig = prims.SpinSignal(0.5)
    sig.set()
    assert sig.wait(5) is True
    assert sig.wait() is True  # level-triggered: still up
    sig.clear()
    assert not sig.is_set()
    t0 = time.monotonic()
    assert sig.wait(0.05) is False
    assert time.monotonic() - t0 >= 0.04


def test_a_set_while_the_waiter_polls_wakes_it() -> None:
    sig = prims.SpinSignal(2.0)  # polls for up to 2 s: the set comes during the poll
    threading.Timer(0.02, sig.set).start()
    assert sig.wait(10) is True


def test_a_set_after_the_poll_gave_up_wakes_the_sleeping_waiter() -> None:
    sig = prims.SpinSignal(0.001)
    threading.Timer(0.1, sig.set).start()
    t0 = time.monotonic()
    assert sig.wait(10) is True
    assert time.monotonic() - t0 < 5  # woken, not timed out


def test_the_timeout_counts_the_poll() -> None:
    sig = prims.SpinSignal(0.2)
    t0 = time.monotonic()
    assert sig.wait(0.05) is False  # the poll is cut to the timeout
    assert 0.04 <= time.monotonic() - t0 < 1.0  # a hang detector, not a speed check


def test_two_waiters_on_two_signals_are_both_woken_while_one_polls() -> None:
    a, b = prims.SpinSignal(1.0), prims.SpinSignal(1.0)
    got: list[bool] = []

    def waiter(sig: prims.Signal) -> None:
        got.append(sig.wait(10))

    ts = [threading.Thread(target=waiter, args=(s,)) for s in (a, b)]
    for t in ts:
        t.start()
    time.sleep(0.01)  # (both are waiting, one polling: nothing to wait for as an event)
    a.set()
    b.set()
    for t in ts:
        t.join(10)
    assert got == [True, True]


def test_no_wake_up_is_lost_between_a_producer_and_a_consumer() -> None:
    """The consumer clears, looks at the queue, waits; the producer appends, sets: every
    item is seen, and the consumer never sleeps past a set (10 s would fail the test)."""
    sig = prims.SpinSignal(0.0005)
    items: list[int] = []
    seen: list[int] = []
    n = 3000

    def produce() -> None:
        for i in range(n):
            items.append(i)
            sig.set()
            if i % 97 == 0:
                time.sleep(0.001)  # let the consumer fall asleep now and then

    t = threading.Thread(target=produce)
    t.start()
    while len(seen) < n:
        sig.clear()
        if len(items) > len(seen):
            seen.extend(items[len(seen):])
            continue
        assert sig.wait(10), f"lost a wake-up after {len(seen)} of {n}"
    t.join(10)
    assert seen == list(range(n))
