"""Receive hot path: ``Router`` (parse and route in one call) and ``SubState`` (the
per-subscription state it touches) (twin of the compiled ``jetwire._c.router``).
"""
from __future__ import annotations

from inspect import isawaitable as _isawaitable
from typing import Any

from ...errors import ProtocolError
from .msg import MsgBase

__all__ = ["Router", "SubState"]


class SubState:
    """The routing state of a subscription (base of ``jetwire.core.SubscriptionBase``).

    ``Router`` reads and updates these fields for every message: ``_direct`` (a handler
    called from the reader instead of queueing), ``delivered``, ``_max`` (auto-unsubscribe
    after that many, 0: none), ``_pending`` (a deque) with ``_pending_bytes`` and its
    limits ``_pmsgs_limit`` / ``_pbytes_limit``, ``_dropped``, ``_slow`` and ``_signal``
    (whose ``set()`` wakes the consumer). ``_client`` is the connection messages are
    bound to (``msg._client``) when they are handed out.

    Threads: ``_lock`` (None in the asyncio flavour) guards ``_pending`` and
    ``_pending_bytes``, which the reader (``Router``) and the consumer (``_next``,
    ``_deliver``, ``discard_pending``) both change. The other fields are written by one thread
    each (``_slow`` is a hint both may flip).

    Queued messages are not bound yet (in the compiled module they stay untracked by
    the cycle collector while they wait); ``_next()`` binds them as it hands them out.
    """

    __slots__ = (
        "_client",
        "_direct",
        "_dropped",
        "_lock",
        "_max",
        "_pbytes_limit",
        "_pending",
        "_pending_bytes",
        "_pmsgs_limit",
        "_signal",
        "_slow",
        "delivered",
    )
    _client: Any
    _direct: Any
    _pending: Any
    _signal: Any
    _lock: Any
    delivered: int
    _max: int
    _pending_bytes: int
    _pmsgs_limit: int
    _pbytes_limit: int
    _dropped: int
    _slow: bool

    def __new__(cls, *args: Any, **kwargs: Any) -> SubState:
        self = object.__new__(cls)
        self._client = self._direct = self._pending = self._signal = self._lock = None
        self.delivered = self._max = self._pending_bytes = 0
        self._pmsgs_limit = self._pbytes_limit = self._dropped = 0
        self._slow = False
        return self

    def _next(self) -> Any:
        """Pop the oldest pending message bound to ``_client`` (``None`` when there is none),
        keeping ``_pending_bytes``."""
        pending = self._pending
        if not pending:  # (a hint: checked again under the lock)
            return None
        lock = self._lock
        if lock is None:
            msg = pending.popleft()
            self._pending_bytes -= len(msg.data)
        else:
            with lock:
                if not pending:
                    return None
                msg = pending.popleft()
                self._pending_bytes -= len(msg.data)
        msg._client = self._client
        return msg

    def _deliver(self, cb: Any, report: Any) -> Any:
        """Hand the pending messages (as ``_next()`` pops them) to ``cb(msg)`` in order.

        Returns None once the queue is empty, or the result of a callback that returned an
        awaitable (the caller awaits it, then calls again). An exception raised by ``cb``
        goes to ``report(exc)`` and delivery goes on.
        """
        while True:
            msg = self._next()
            if msg is None:
                return None
            try:
                r = cb(msg)
            except Exception as exc:
                report(exc)
                continue
            if r is not None and _isawaitable(r):
                return r

    def discard_pending(self) -> None:
        """Drop every pending message (``_pending`` emptied, ``_pending_bytes`` 0)."""
        lock = self._lock
        if lock is None:
            self._pending.clear()
            self._pending_bytes = 0
        else:
            with lock:
                self._pending.clear()
                self._pending_bytes = 0


class Router:
    """The receive hot path: ``feed(data)`` parses ``data`` and routes every event.

    Control tuples go to ``control(event)`` in stream order (``(OP_FRAME_ERROR,
    ProtocolError)`` among them: a malformed message skipped). A message counts in
    ``in_msgs`` / ``in_bytes``; when ``subs`` (sid -> ``SubState``) has its subscription
    it is bound to the subscription's ``_client`` and handed to its ``_direct`` handler,
    or, within the subscription's limits, queued (unbound) in its ``_pending`` deque; past
    ``_max`` deliveries it is dropped silently (``on_max(sub)`` runs once, when the
    last one is delivered), past the pending limits it is dropped and counted in
    ``_dropped`` (``on_slow(sub)`` runs when the subscription becomes slow). Once the
    events are routed, ``_signal.set()`` is called for every subscription whose queue
    was empty before. An exception from a callback propagates: the counters of that
    feed are not added and the subscriptions touched so far are signalled next time.

    When the stream can no longer be framed, ``feed`` routes the events parsed before the
    bad frame, then raises the ``ProtocolError``. One thread (the reader) feeds a router;
    a subscription's queue is shared with its consumer under the subscription's ``_lock``.
    """

    __slots__ = ("control", "in_bytes", "in_msgs", "on_max", "on_slow", "parser", "subs", "touched")

    def __init__(self, parser: Any, subs: dict, control: Any = None, on_max: Any = None,
                 on_slow: Any = None) -> None:
        if not isinstance(subs, dict):
            raise TypeError(f"subs must be a dict, not {type(subs).__name__}")
        self.parser = parser
        self.subs = subs
        self.control = control
        self.on_max = on_max
        self.on_slow = on_slow
        self.in_msgs = 0
        self.in_bytes = 0
        self.touched: list[Any] = []

    def feed(self, data: Any) -> None:
        """Parse ``data`` and route the events. Raises ProtocolError when the stream can no
        longer be framed, after routing what was parsed before the bad frame."""
        try:
            events = self.parser.feed(data)
        except ProtocolError as exc:
            self._count_taken()
            if exc.events:
                self.route(exc.events)
            raise
        self._count_taken()
        if events:
            self.route(events)

    def _count_taken(self) -> None:
        """Add the frames the parser's sinks took to the counters."""
        parser = self.parser
        t = parser.taken_msgs
        if t:
            self.in_msgs += t
            self.in_bytes += parser.taken_bytes
            parser.taken_msgs = 0
            parser.taken_bytes = 0

    def route(self, events: list[Any]) -> None:
        """Route already parsed events (a list)."""
        if type(events) is not list:
            raise TypeError(f"events must be a list, not {type(events).__name__}")
        subs = self.subs
        n = 0
        nbytes = 0
        touched = self.touched
        for ev in events:
            if ev.__class__ is tuple:
                self.control(ev)
                continue
            if not isinstance(ev, MsgBase):
                raise TypeError(f"expected a message, got {type(ev).__name__}")
            dlen = len(ev.data)
            n += 1
            nbytes += dlen
            sub = subs.get(ev.sid)
            if sub is None:
                continue
            if not isinstance(sub, SubState):
                raise TypeError(f"expected a SubState, got {type(sub).__name__}")
            direct = sub._direct
            if direct is not None:
                ev._client = sub._client
                sub.delivered += 1
                direct(ev)
                continue
            if sub._max:
                if sub.delivered >= sub._max:
                    continue
                sub.delivered += 1
                if sub.delivered >= sub._max:
                    self.on_max(sub)
            else:
                sub.delivered += 1
            pending = sub._pending
            lock = sub._lock
            if lock is None:
                full = len(pending) >= sub._pmsgs_limit or sub._pending_bytes + dlen > sub._pbytes_limit
                if not full:
                    was_empty = not pending
                    pending.append(ev)
                    sub._pending_bytes += dlen
            else:
                with lock:
                    full = len(pending) >= sub._pmsgs_limit or sub._pending_bytes + dlen > sub._pbytes_limit
                    if not full:
                        was_empty = not pending
                        pending.append(ev)
                        sub._pending_bytes += dlen
            if full:
                sub._dropped += 1
                if not sub._slow:
                    sub._slow = True
                    self.on_slow(sub)
                continue
            if was_empty:
                touched.append(sub)
        self.in_msgs += n
        self.in_bytes += nbytes
        if touched:
            for sub in touched:
                sub._signal.set()
            touched.clear()
