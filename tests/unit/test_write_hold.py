"""``WriteHold`` (both flavours' writers: a fetch's acks leave together) without a server:
what a hold does to the outbox's ``on_first``, its one timer per hold, and its release."""
from __future__ import annotations

from typing import Any

from jetwire.connection.hold import WriteHold


class Outbox:
    def __init__(self) -> None:
        self.buf = bytearray()
        self.on_first: Any = None


class Timer:
    def __init__(self, delay: float, fn: Any) -> None:
        self.delay = delay
        self.fn = fn
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Timers:
    def __init__(self) -> None:
        self.made: list[Timer] = []

    def call_later(self, delay: float, fn: Any) -> Timer:
        t = Timer(delay, fn)
        self.made.append(t)
        return t


class FakeWriter(WriteHold):
    def __init__(self) -> None:
        self.outbox = Outbox()
        self.tr: Any = object()
        self.kicks = 0
        self.init_hold()
        self.timers = Timers()
        self.outbox.on_first = self.kick

    def kick(self) -> None:
        self.kicks += 1

    def publish(self, data: bytes) -> None:
        """What the outbox's fast path does: append, and call on_first when it was empty."""
        first = not self.outbox.buf
        self.outbox.buf += data
        if first:
            self.outbox.on_first()


def test_a_hold_keeps_fast_path_publishes_until_its_timer_releases_them() -> None:
    w = FakeWriter()
    w.hold(0.002)
    assert w.holding
    w.publish(b"ack1")
    w.publish(b"ack2")
    assert w.kicks == 0  # nothing sent yet
    [timer] = w.timers.made  # one timer for the hold, armed by the first bytes
    assert timer.delay == 0.002
    timer.fn()  # the timer fires: the hold ends and what it kept leaves
    assert not w.holding
    assert w.kicks == 1
    w.publish(b"later")  # the buffer still holds the first two here: no new kick
    w.outbox.buf.clear()
    w.publish(b"next")
    assert w.kicks == 2  # without a hold, the first bytes kick at once


def test_release_sends_what_was_held_and_cancels_the_timer() -> None:
    w = FakeWriter()
    w.hold(0.002)
    w.publish(b"ack")
    w.release()
    assert w.kicks == 1
    assert w.timers.made[0].cancelled
    assert w.outbox.on_first == w.kick
    w.release()  # a second release does nothing
    assert w.kicks == 1


def test_release_with_nothing_held_does_not_kick() -> None:
    w = FakeWriter()
    w.hold(0.002)
    w.release()
    assert w.kicks == 0
    assert w.timers.made == []


def test_a_second_hold_while_holding_keeps_the_first_bound() -> None:
    w = FakeWriter()
    w.hold(0.002)
    w.publish(b"ack")
    w.hold(5.0)
    assert [t.delay for t in w.timers.made] == [0.002]


def test_no_hold_without_a_connection_a_timer_or_a_time() -> None:
    for setup in ("no tr", "no timers", "zero"):
        w = FakeWriter()
        if setup == "no tr":
            w.tr = None
        elif setup == "no timers":
            w.timers = None
        w.hold(0.0 if setup == "zero" else 0.002)
        assert not w.holding
        w.publish(b"x")
        assert w.kicks == 1


def test_bytes_arriving_after_a_release_from_another_thread_are_kicked() -> None:
    """A publisher that picked up the held ``on_first`` just before another thread
    released the hold still gets its bytes sent."""
    w = FakeWriter()
    w.hold(0.002)
    held_first = w.outbox.on_first
    w.release()
    w.outbox.buf += b"x"
    held_first()
    assert w.kicks == 1
    assert w.timers.made == []
