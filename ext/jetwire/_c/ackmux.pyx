# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The per-ack part of the JetStream async-publish mux, ``AckMux``, and the blocking
flavour's future, ``AckFuture`` (pure twin: ``jetwire.protocol._pure.ackmux``)."""
include "common.pxi"

from jetwire._c.lock cimport Lock, acquire_any, lock_acquire, lock_release, release_any
from jetwire._c.msg cimport MsgBase
from cpython.tuple cimport PyTuple_GET_SIZE

import threading
import time
from concurrent.futures import Future as _CFuture
from concurrent.futures import InvalidStateError
from concurrent.futures._base import CANCELLED, CANCELLED_AND_NOTIFIED, FINISHED, PENDING

cdef frozenset _DONE = frozenset((CANCELLED, CANCELLED_AND_NOTIFIED, FINISHED))
cdef object _FINISHED = FINISHED
cdef object _Condition = threading.Condition
cdef object _base_set_result = _CFuture.set_result
cdef object _base_set_exception = _CFuture.set_exception
cdef object _getattribute = object.__getattribute__
cdef extern from *:
    """
    #include <time.h>
    /* time.monotonic() without a Python call where it is clock_gettime(CLOCK_MONOTONIC)
       (Linux; the same nanoseconds to float seconds as CPython), else 0: call it. */
    #if defined(__linux__)
    #define JW_MONO_C 1
    static inline double jw_monotonic(void) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)((long long)t.tv_sec * 1000000000LL + (long long)t.tv_nsec) / 1e9;
    }
    #else
    #define JW_MONO_C 0
    static inline double jw_monotonic(void) { return 0.0; }
    #endif
    """
    const int JW_MONO_C
    double jw_monotonic() nogil

cdef object _monotonic = time.monotonic


cdef inline double _now() except? -1.0:
    if JW_MONO_C:
        return jw_monotonic()
    return <double>_monotonic()

cdef double _INF = float("inf")
# the deadlines' timer re-arms at least this much later (publishes sent microseconds
# apart expire together, and their acks are not looked for once per publish)
cdef double _GRAIN = 0.02
cdef Lock _lazy = Lock()  # makes a future's condition, and resolves a future that has none


class AckFuture(_CFuture):
    """The ``concurrent.futures.Future`` that blocking ``publish_async`` returns.

    A plain ``Future`` builds a ``Condition`` (and an ``RLock``) when it is made and
    takes it to resolve; per message that costs more than the rest of an async publish.
    This one makes its condition only when someone first needs it (to wait, add a
    callback, cancel, ...), under one module lock; ``set_result`` / ``set_exception`` on
    a future that has no condition yet store its outcome under that same lock (nobody
    can be waiting or have callbacks then). Every inherited method works unchanged, so
    it is a ``concurrent.futures.Future`` in every respect (``result()``,
    ``concurrent.futures.wait``/``as_completed``, callbacks, cancellation).
    """

    _has_condition = False  # set (under the module lock) once _condition exists

    def __init__(self):  # no Condition until needed; see __getattr__
        self._state = PENDING
        self._result = None
        self._exception = None

    def __getattr__(self, name):
        if name == "_condition":
            lock_acquire(_lazy)
            try:
                try:
                    return _getattribute(self, "_condition")  # made meanwhile by another thread
                except AttributeError:
                    pass
                cond = _Condition()
                self._condition = cond
                self._has_condition = True
            finally:
                lock_release(_lazy)
            return cond
        if name == "_waiters" or name == "_done_callbacks":
            # only touched under the condition (or after the state is final)
            return self.__dict__.setdefault(name, [])
        raise AttributeError(name)

    def done(self):
        return self._state in _DONE

    def result(self, timeout=None):
        """As ``Future.result``; a resolved future answers without building its condition
        (what reading an ack costs on a hot path)."""
        if self._state == FINISHED:
            exc = self._exception
            if exc is not None:
                try:
                    raise exc
                finally:
                    exc = None  # no reference cycle through the traceback
            return self._result
        return _CFuture.result(self, timeout)

    def cancel(self):
        """Cancel a pending future. No executor will ever run it, so it is at once
        "cancelled and notified": ``concurrent.futures.wait``/``as_completed`` count it
        done (a plain ``Future`` stays "not done" there until its executor looks)."""
        if not _CFuture.cancel(self):
            return False
        with self._condition:
            if self._state == CANCELLED:
                self._state = CANCELLED_AND_NOTIFIED
                for waiter in self._waiters:
                    waiter.add_cancelled(self)
        return True

    def set_result(self, result):
        if not _set_fast(self, 0, result):
            _base_set_result(self, result)

    def set_exception(self, exception):
        if not _set_fast(self, 1, exception):
            _base_set_exception(self, exception)


cdef bint _set_fast(object fut, int exception, object value) except -1:
    """Resolve ``fut`` when it has no condition yet (True), else False (the caller goes
    through the condition). Raises InvalidStateError when it is done already."""
    cdef object state
    if fut._has_condition:
        return False
    lock_acquire(_lazy)
    try:
        if fut._has_condition:
            return False
        state = fut._state
        if state not in _DONE:
            if exception:
                fut._exception = value
            else:
                fut._result = value
            fut._state = _FINISHED
            return True
    finally:
        lock_release(_lazy)
    raise InvalidStateError(f"{state}: {fut!r}")  # outside the lock: repr() takes the condition


cdef object _plain_ack(object data, long long* seq):
    """The stream name when ``data`` is exactly ``{"stream":"<name>","seq":<n>}`` (see the
    pure twin's ``_plain_ack``), with ``seq`` set; else None."""
    cdef const unsigned char* p
    cdef Py_ssize_t n, i, a, b, end
    cdef long long v = 0
    cdef unsigned char c
    if type(data) is not bytes:
        return None
    p = <const unsigned char*>PyBytes_AS_STRING(data)
    n = PyBytes_GET_SIZE(data)
    # '{"stream":"' is 11 bytes, '","seq":' 8; then at least one name byte, one digit and '}'
    if n < 22 or memcmp(p, b'{"stream":"', 11) != 0 or p[n - 1] != c'}':
        return None
    i = 11
    a = i
    while i < n:
        c = p[i]
        if c == c'"' or c == c'\\' or c < 0x20:
            break
        i += 1
    if i == a or n - i < 10 or memcmp(p + i, b'","seq":', 8) != 0:
        return None
    b = i
    i += 8
    end = n - 1  # the '}'
    if i >= end or end - i > 18:
        return None
    if p[i] == c'0' and end - i > 1:
        return None
    while i < end:
        c = p[i]
        if c < c'0' or c > c'9':
            return None
        v = v * 10 + (c - c'0')
        i += 1
    try:
        name = PyUnicode_DecodeUTF8(<const char*>(p + a), b - a, NULL)
    except UnicodeDecodeError:
        return None
    seq[0] = v
    return name


cdef class AckMux:
    """The per-message part of the JetStream async-publish mux (base of
    ``jetwire.jetstream.pubmux.PubAckMux``, which documents the whole).

    ``pending`` maps a token to the publish's future; ``add()`` registers a publish
    under the next token (``str`` of a counter), returns the token and gives the future
    its record, ``fut._pub = (subject, header_bytes_or_None, data, retries_left,
    retry_wait, deadline_or_None, on_fail_or_None)``. The future is the
    one object a publish in flight keeps for the cycle collector to look at: the record
    holds atomic values (and the context's error callback, if it has one), so CPython
    stops tracking it at its first collection, and a full window of publishes puts half
    as many objects in the older generations as a record holding the future did.
    ``on_msg(msg)`` handles one
    reply on ``<prefix><token>``: an unknown token is ignored; the usual answer
    ``{"stream":"<name>","seq":<n>}`` (see ``_plain_ack``) becomes ``make_ack(name, n)``
    (the ack type's constructor, such as ``PubAck.plain``), which resolves the
    future through its ``set_result`` (an error from it -- a future done or
    cancelled already -- is ignored); then ``self._after_pop()`` runs when it has
    someone to wake: a stall waiter once at most ``wake_at`` publishes are pending, a
    completion waiter once none is. Any other reply (or ``make_ack`` None) goes
    to ``self._other(msg, token, fut)`` after the future was popped.

    Ack deadlines: ``add``/``submit`` with a ``timeout`` (seconds) put the deadline
    ``time.monotonic() + timeout`` in the record. One timer serves them all:
    ``armed_at`` is when the live one fires (inf: none); a deadline earlier than that
    calls ``self._arm(deadline)`` (outside the lock), which must arrange
    ``expire(now, deadline)`` at that time. ``expire(now, at=None)`` removes the
    pending publishes whose deadline is ``<= now``, hands their futures to
    ``self._expired(futs)`` (outside the lock), and, when ``at`` is the live timer's,
    arms the next one for the earliest deadline still pending (at least ``_GRAIN``
    after ``now``). Nothing is kept per publish once it is answered, and a publisher
    whose acks come in time has the timer fire about once per timeout. A late ack for
    an expired token finds no entry and is ignored.

    Threads: ``lock`` (None: a single thread) guards ``_n``, ``pending``, the records and
    ``armed_at`` (``add`` from publishing threads, ``on_msg`` from the reader,
    ``expire`` from the timer); the subclass takes it for its own state too. Futures
    are resolved and callbacks run outside it.
    """

    cdef public str prefix
    cdef public Py_ssize_t _plen
    cdef public dict pending
    cdef public long long _n
    cdef public list stall_waiters
    cdef public list complete_waiters
    cdef public long long wake_at
    cdef public object make_ack
    cdef public object lock
    cdef public double armed_at

    def __init__(self, prefix, make_ack=None, lock=None):
        if type(prefix) is not str:
            raise TypeError(f"prefix must be a str, not {type(prefix).__name__}")
        self.prefix = prefix
        self._plen = len(prefix)
        self.pending = {}
        self._n = 0
        self.stall_waiters = []
        self.complete_waiters = []
        self.wake_at = 0
        self.make_ack = make_ack
        self.lock = lock
        self.armed_at = _INF

    cdef object _register(self, object fut, object subject, object hdr, object data, object retries,
                          object retry_wait, object timeout, object on_fail):
        """Register a publish under the next token; returns the token, or ``(token,
        deadline)`` when a timer must be armed for its deadline."""
        cdef object lock = self.lock
        cdef object token, deadline = None
        cdef double d = 0.0
        cdef bint arm = False
        if timeout is not None:
            d = _now() + <double>timeout
            deadline = d
        fut._pub = (subject, hdr, data, retries, retry_wait, deadline, on_fail)
        if lock is not None:
            acquire_any(lock)
        try:
            self._n += 1
            token = str(self._n)
            self.pending[token] = fut
            if deadline is not None and d < self.armed_at:
                self.armed_at = d
                arm = True
        finally:
            if lock is not None:
                release_any(lock)
        if arm:
            return (token, deadline)
        return token

    def add(self, fut, subject, hdr, data, retries, retry_wait, timeout=None, on_fail=None):
        """Register a publish; returns its token (the reply subject is ``prefix + token``).
        ``timeout``: seconds to wait for its ack (None: no deadline); ``on_fail``: kept
        in the record for the subclass (the context's error callback)."""
        cdef object token = self._register(fut, subject, hdr, data, retries, retry_wait, timeout, on_fail)
        if type(token) is tuple:
            self._arm((<tuple>token)[1])
            token = (<tuple>token)[0]
        return token

    def submit(self, fut, subject, data, retries, retry_wait, publish, timeout=None, on_fail=None):
        """``add(fut, subject, None, data, retries, retry_wait, timeout, on_fail)`` and then
        ``publish(subject, data, prefix + token)``, whose result it returns; when
        ``publish`` raises, the entry is removed again (waking a waiter that is due) and
        the exception propagates."""
        cdef object token = self._register(fut, subject, None, data, retries, retry_wait, timeout, on_fail)
        cdef bint wake
        if type(token) is tuple:
            self._arm((<tuple>token)[1])
            token = (<tuple>token)[0]
        try:
            return publish(subject, data, self.prefix + token)
        except BaseException:
            _pop(self, token, &wake)
            if wake:
                self._after_pop()
            raise

    def expire(self, double now, at=None):
        """Expire the pending publishes whose deadline is ``<= now`` (see the class
        docstring); ``at``: the time the calling timer was armed for. Returns how many
        expired."""
        cdef object lock = self.lock
        cdef list expired = []
        cdef list due = []
        cdef object token, fut, rec, dl
        cdef double nxt = _INF, d
        cdef bint rearm = False
        cdef dict pending = self.pending
        if lock is not None:
            acquire_any(lock)
        try:
            for token, fut in pending.items():
                rec = getattr(fut, "_pub", None)
                if type(rec) is not tuple or PyTuple_GET_SIZE(rec) < 7:
                    continue
                dl = (<tuple>rec)[5]
                if dl is None:
                    continue
                d = <double>dl
                if d <= now:
                    due.append(token)
                elif d < nxt:
                    nxt = d
            for token in due:
                expired.append(pending.pop(token))
            if at is not None and <double>at == self.armed_at:  # the live timer
                if nxt == _INF:
                    self.armed_at = _INF
                else:
                    if nxt < now + _GRAIN:
                        nxt = now + _GRAIN
                    self.armed_at = nxt
                    rearm = True
        finally:
            if lock is not None:
                release_any(lock)
        if expired:
            self._expired(expired)
        if rearm:
            self._arm(nxt)
        return len(expired)

    def disarm(self):
        """Forget the live timer (the mux closed): the next deadline arms a new one."""
        cdef object lock = self.lock
        if lock is not None:
            acquire_any(lock)
        self.armed_at = _INF
        if lock is not None:
            release_any(lock)

    def on_msg(self, msg):
        """Handle one reply on ``<prefix>*`` (see the class docstring)."""
        cdef object subject, data, token, fut, name, ack
        cdef long long seq = 0
        cdef bint wake
        if isinstance(msg, MsgBase):
            subject = (<MsgBase>msg).c_subject
            data = (<MsgBase>msg).c_data
        else:
            subject = msg.subject
            data = msg.data
        token = subject[self._plen:]
        fut = _pop(self, token, &wake)
        if fut is None:
            return
        name = _plain_ack(data, &seq) if self.make_ack is not None else None
        if name is None:
            self._other(msg, token, fut)
            return
        ack = self.make_ack(name, seq)
        try:
            fut.set_result(ack)
        except Exception:  # done or cancelled already (another thread, a timeout)
            pass
        if wake:
            self._after_pop()

    def _other(self, msg, token, fut):
        raise NotImplementedError

    def _after_pop(self):
        raise NotImplementedError

    def _arm(self, at):
        raise NotImplementedError

    def _expired(self, futs):
        raise NotImplementedError


cdef inline object _pop(AckMux mux, object token, bint* wake):
    """Take ``token``'s future out of ``pending`` (None when it is not there) under the
    mux's lock; ``wake``: whether a stalled publisher or a completion waiter is due."""
    cdef object lock = mux.lock
    cdef object entry
    cdef Py_ssize_t n
    if lock is not None:
        acquire_any(lock)
    try:
        entry = mux.pending.pop(token, None)
        n = len(mux.pending)
        wake[0] = (bool(mux.stall_waiters) and n <= mux.wake_at) or (bool(mux.complete_waiters) and n == 0)
    finally:
        if lock is not None:
            release_any(lock)
    return entry
