# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The receive hot path: ``Router`` (parse and route in one call) and ``SubState`` (the
per-subscription state it touches) (pure twin: ``jetwire.protocol._pure.router``)."""
include "common.pxi"

import inspect

from jetwire._c.lock cimport acquire_any, release_any
from jetwire._c.msg cimport MsgBase

cdef object _isawaitable = inspect.isawaitable


# ------------------------------------------------------------------------------- routing
cdef class SubState:
    """The routing state of a subscription (base of ``jetwire.core.SubscriptionBase``).

    ``Router`` reads and updates these fields for every message: ``_direct`` (a handler
    called from the reader instead of queueing), ``delivered``, ``_max`` (auto-unsubscribe
    after that many, 0: none), ``_pending`` (a deque) with ``_pending_bytes`` and its
    limits ``_pmsgs_limit`` / ``_pbytes_limit``, ``_dropped``, ``_slow`` and ``_signal``
    (whose ``set()`` wakes the consumer). ``_client`` is the connection messages are
    bound to (``msg._client``) when they are handed out.

    Threads: ``_lock`` (None in the asyncio flavour) guards ``_pending`` and
    ``_pending_bytes``, which the reader (``Router``) and the consumer (``_next``,
    ``_deliver``, ``discard_pending``) both change; a ``jetwire._c.lock.Lock`` is taken
    from C, any other lock through its ``acquire``/``release``. The other fields are
    written by one thread each (``_slow`` is a hint both may flip).

    Queued messages are not bound yet: a parsed message holds only atomic values (see
    ``MsgBase``), so it stays untracked by the cycle collector while it waits in
    ``_pending``; ``_next()`` binds it (which re-tracks it) as it hands it out.
    """

    cdef public object _client
    cdef public object _direct
    cdef public object _pending
    cdef public object _signal
    cdef public object _lock
    cdef public long long delivered
    cdef public long long _max
    cdef public long long _pending_bytes
    cdef public long long _pmsgs_limit
    cdef public long long _pbytes_limit
    cdef public long long _dropped
    cdef public bint _slow

    def _next(self):
        """Pop the oldest pending message bound to ``_client`` (``None`` when there is none),
        keeping ``_pending_bytes``."""
        return self._pop()

    def _deliver(self, cb, report):
        """Hand the pending messages (as ``_next()`` pops them) to ``cb(msg)`` in order.

        Returns None once the queue is empty, or the result of a callback that returned an
        awaitable (the caller awaits it, then calls again). An exception raised by ``cb``
        goes to ``report(exc)`` and delivery goes on.
        """
        cdef object msg, r
        while True:
            msg = self._pop()
            if msg is None:
                return None
            try:
                r = cb(msg)
            except Exception as exc:
                report(exc)
                continue
            if r is not None and _isawaitable(r):
                return r

    def discard_pending(self):
        """Drop every pending message (``_pending`` emptied, ``_pending_bytes`` 0)."""
        cdef object lock = self._lock
        if lock is not None:
            acquire_any(lock)
        try:
            self._pending.clear()
            self._pending_bytes = 0
        finally:
            if lock is not None:
                release_any(lock)

    cdef object _pop(self):
        cdef object pending = self._pending
        cdef object lock = self._lock
        cdef object msg = None
        if not pending:  # (a hint: checked again under the lock)
            return None
        if lock is not None:
            acquire_any(lock)
        try:
            if not pending:
                return None
            msg = pending.popleft()
            if isinstance(msg, MsgBase):
                self._pending_bytes -= len((<MsgBase>msg).c_data)
            else:
                self._pending_bytes -= len(msg.data)
        finally:
            if lock is not None:
                release_any(lock)
        if isinstance(msg, MsgBase):
            (<MsgBase>msg).c_client = self._client
            jw_track_if(msg, self._client)
        else:
            msg._client = self._client
        return msg


@cython.final
cdef class Router:
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

    cdef public object parser
    cdef public dict subs
    cdef public object control
    cdef public object on_max
    cdef public object on_slow
    cdef public long long in_msgs
    cdef public long long in_bytes
    cdef list touched

    def __init__(self, parser, subs, control=None, on_max=None, on_slow=None):
        if not isinstance(subs, dict):
            raise TypeError(f"subs must be a dict, not {type(subs).__name__}")
        self.parser = parser
        self.subs = subs
        self.control = control
        self.on_max = on_max
        self.on_slow = on_slow
        self.in_msgs = 0
        self.in_bytes = 0
        self.touched = []

    def feed(self, data):
        """Parse ``data`` and route the events. Raises ProtocolError when the stream can no
        longer be framed, after routing what was parsed before the bad frame."""
        cdef object events
        try:
            events = self.parser.feed(data)
        except ProtocolError as exc:  # route what came before the bad frame, then fail
            self._count_taken()
            if exc.events:
                self._route(<list?>exc.events)
            raise
        self._count_taken()
        if events:
            self._route(<list?>events)

    cdef int _count_taken(self) except -1:
        """Add the frames the parser's sinks took to the counters."""
        cdef object parser = self.parser
        cdef long long t = parser.taken_msgs
        if t:
            self.in_msgs += t
            self.in_bytes += <long long>parser.taken_bytes
            parser.taken_msgs = 0
            parser.taken_bytes = 0
        return 0

    def route(self, events):
        """Route already parsed events (a list)."""
        self._route(<list?>events)

    cdef int _route(self, list events) except -1:
        cdef Py_ssize_t i, dlen
        cdef long long n = 0, nbytes = 0
        cdef object ev, sub_obj, direct, pending, lock
        cdef MsgBase m
        cdef SubState sub
        cdef dict subs = self.subs
        cdef list touched = self.touched
        cdef bint full, was_empty = False
        i = 0
        while i < PyList_GET_SIZE(events):
            ev = <object>PyList_GET_ITEM(events, i)
            i += 1
            if type(ev) is tuple:
                self.control(ev)
                continue
            m = <MsgBase?>ev
            dlen = len(m.c_data)
            n += 1
            nbytes += dlen
            sub_obj = subs.get(m.c_sid)
            if sub_obj is None:
                continue
            sub = <SubState?>sub_obj
            direct = sub._direct
            if direct is not None:
                m.c_client = sub._client
                jw_track_if(m, m.c_client)
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
            if lock is not None:
                acquire_any(lock)
            try:
                full = len(pending) >= sub._pmsgs_limit or sub._pending_bytes + dlen > sub._pbytes_limit
                if not full:
                    was_empty = not pending
                    pending.append(ev)
                    sub._pending_bytes += dlen
            finally:
                if lock is not None:
                    release_any(lock)
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
            for sub_obj in touched:
                (<SubState>sub_obj)._signal.set()
            del touched[:]
        return 0
