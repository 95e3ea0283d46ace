"""``WriteHold``: the part of both flavours' ``Writer`` that lets a fetch's acks leave
together (``hold`` / ``release``), one implementation for the two."""
from __future__ import annotations

from typing import Any


class WriteHold:
    """Holding what the outbox's fast path queues. The writer using it has ``outbox``
    (whose ``on_first`` it swaps), ``tr`` (None: not connected) and ``kick()``, and sets
    ``timers`` (the connection's ``Scheduler``) before the first ``hold``; it calls
    ``init_hold()`` in its ``__init__`` and ``release()`` when it closes."""

    outbox: Any
    tr: Any

    def kick(self) -> None:  # the writer's own
        raise NotImplementedError

    def init_hold(self) -> None:
        self.timers: Any = None  # the connection's Scheduler (set by the client): the hold's bound
        self._held = False
        self._hold_for = 0.0
        self._hold_timer: Any = None

    def hold(self, seconds: float) -> None:
        """Let what the outbox's fast path queues (a fetch's acks) wait up to ``seconds``
        and leave together: when the hold ends (``release``, or ``seconds`` after the first
        bytes held, from the timer), when the buffer reaches ``FLUSH_THRESHOLD``, or with
        anything sent explicitly meanwhile (requests, PINGs, ``send_now``). Nothing waits
        longer."""
        if self._held or seconds <= 0 or self.tr is None or self.timers is None:
            return
        self._held = True
        self._hold_for = seconds
        self.outbox.on_first = self._held_first

    @property
    def holding(self) -> bool:
        """A ``hold`` is on."""
        return self._held

    def _held_first(self) -> None:
        if not self._held:  # released meanwhile (another thread)
            self.kick()
        elif self._hold_timer is None:
            self._hold_timer = self.timers.call_later(self._hold_for, self.release)

    def release(self) -> None:
        """End a ``hold``: what it kept leaves now (from the blocking flavour's timer
        thread: through the flusher)."""
        if not self._held:
            return
        self._held = False
        self.outbox.on_first = self.kick
        timer = self._hold_timer
        self._hold_timer = None
        if timer is not None:
            timer.cancel()
        if self.outbox.buf:
            self.kick()
