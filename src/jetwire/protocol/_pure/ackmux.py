"""Per-ack path of the JetStream async-publish mux: ``AckMux`` and the blocking flavour's
future, ``AckFuture`` (twin of the compiled ``jetwire._c.ackmux``).
"""
from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future as _CFuture
from concurrent.futures import InvalidStateError
from concurrent.futures._base import CANCELLED, CANCELLED_AND_NOTIFIED, FINISHED, PENDING
from typing import TYPE_CHECKING, Any

__all__ = ["AckFuture", "AckMux"]

_DONE = frozenset((CANCELLED, CANCELLED_AND_NOTIFIED, FINISHED))
_monotonic = time.monotonic
_INF = float("inf")
# the deadlines' timer re-arms at least this much later (publishes sent microseconds
# apart expire together, and their acks are not looked for once per publish)
_GRAIN = 0.02
_lazy_lock = threading.Lock()  # makes a future's condition, and resolves a future that has none

if TYPE_CHECKING:  # a future of the PubAck (the models are not imported at run time)
    from jetwire.jetstream.models import PubAck

    _FutureBase = _CFuture[PubAck]
else:
    _FutureBase = _CFuture


class AckFuture(_FutureBase):
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

    def __init__(self) -> None:  # no Condition until needed; see __getattr__
        self._state = PENDING
        self._result = None
        self._exception = None

    def __getattr__(self, name: str) -> Any:
        if name == "_condition":
            with _lazy_lock:
                try:
                    return object.__getattribute__(self, "_condition")  # made meanwhile by another thread
                except AttributeError:
                    pass
                cond = threading.Condition()
                self._condition = cond
                self._has_condition = True
            return cond
        if name == "_waiters" or name == "_done_callbacks":
            # only touched under the condition (or after the state is final)
            return self.__dict__.setdefault(name, [])
        raise AttributeError(name)

    def done(self) -> bool:
        return self._state in _DONE

    def result(self, timeout: float | None = None) -> PubAck:
        """As ``Future.result``; a resolved future answers without building its condition
        (what reading an ack costs on a hot path)."""
        if self._state == FINISHED:
            exc = self._exception
            if exc is not None:
                try:
                    raise exc
                finally:
                    exc = None  # no reference cycle through the traceback
            return self._result  # type: ignore[return-value]  # (finished without an exception: the ack)
        return _CFuture.result(self, timeout)

    def cancel(self) -> bool:
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

    def set_result(self, result: Any) -> None:
        if not self._has_condition:
            with _lazy_lock:
                fast = not self._has_condition  # nobody can be waiting or have callbacks
                if fast:
                    state = self._state
                    if state not in _DONE:
                        self._result = result
                        self._state = FINISHED
                        return
            if fast:  # raised outside the lock: repr() takes the condition
                raise InvalidStateError(f"{state}: {self!r}")
        _CFuture.set_result(self, result)

    def set_exception(self, exception: BaseException | None) -> None:
        if not self._has_condition:
            with _lazy_lock:
                fast = not self._has_condition
                if fast:
                    state = self._state
                    if state not in _DONE:
                        self._exception = exception
                        self._state = FINISHED
                        return
            if fast:  # raised outside the lock: repr() takes the condition
                raise InvalidStateError(f"{state}: {self!r}")
        _CFuture.set_exception(self, exception)


_PLAIN_ACK = re.compile(rb'\{"stream":"([^"\\\x00-\x1f]+)","seq":(0|[1-9][0-9]{0,17})\}\Z')


def _plain_ack(data: Any) -> tuple[str, int] | None:
    """``(stream, seq)`` when ``data`` is exactly ``{"stream":"<name>","seq":<n>}`` (the
    server's usual answer: compact, a non-empty name without escapes or control characters
    in strict UTF-8, ``n`` of 1-18 digits without leading zeros); else None."""
    if type(data) is not bytes:
        return None
    m = _PLAIN_ACK.match(data)
    if m is None:
        return None
    try:
        stream = m.group(1).decode("utf-8")
    except UnicodeDecodeError:
        return None
    return stream, int(m.group(2))


class AckMux:
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

    __slots__ = (
        "_n",
        "_plen",
        "armed_at",
        "complete_waiters",
        "lock",
        "make_ack",
        "pending",
        "prefix",
        "stall_waiters",
        "wake_at",
    )

    def __init__(self, prefix: str, make_ack: Any = None, lock: Any = None) -> None:
        if type(prefix) is not str:
            raise TypeError(f"prefix must be a str, not {type(prefix).__name__}")
        self.prefix = prefix
        self._plen = len(prefix)
        self.pending: dict = {}
        self._n = 0
        self.stall_waiters: list[Any] = []
        self.complete_waiters: list[Any] = []
        self.wake_at = 0
        self.make_ack = make_ack
        self.lock = lock
        self.armed_at = _INF

    def _register_locked(self, fut: Any, deadline: float | None) -> tuple[str, bool]:
        n = self._n = self._n + 1
        token = str(n)
        self.pending[token] = fut
        if deadline is not None and deadline < self.armed_at:
            self.armed_at = deadline
            return token, True
        return token, False

    def add(self, fut: Any, subject: str, hdr: Any, data: Any, retries: int, retry_wait: float,
            timeout: float | None = None, on_fail: Any = None) -> str:
        """Register a publish; returns its token (the reply subject is ``prefix + token``).
        ``timeout``: seconds to wait for its ack (None: no deadline); ``on_fail``: kept
        in the record for the subclass (the context's error callback)."""
        deadline: float | None = None
        if timeout is not None:
            if isinstance(timeout, (str, bytes, bytearray)):  # float() would parse them; C does not
                raise TypeError(f"must be real number, not {type(timeout).__name__}")
            deadline = _monotonic() + float(timeout)
        fut._pub = (subject, hdr, data, retries, retry_wait, deadline, on_fail)
        lock = self.lock
        if lock is None:
            token, arm = self._register_locked(fut, deadline)
        else:
            with lock:
                token, arm = self._register_locked(fut, deadline)
        if arm and deadline is not None:  # arm: a deadline earlier than the live timer's
            self._arm(deadline)
        return token

    def submit(self, fut: Any, subject: str, data: Any, retries: int, retry_wait: float,
               publish: Callable[[str, Any, str], Any], timeout: float | None = None, on_fail: Any = None) -> Any:
        """``add(fut, subject, None, data, retries, retry_wait, timeout, on_fail)`` and then
        ``publish(subject, data, prefix + token)``, whose result it returns; when
        ``publish`` raises, the entry is removed again (waking a waiter that is due) and
        the exception propagates."""
        token = self.add(fut, subject, None, data, retries, retry_wait, timeout, on_fail)
        try:
            return publish(subject, data, self.prefix + token)
        except BaseException:
            lock = self.lock
            if lock is None:
                self.pending.pop(token, None)
                wake = self._wake()
            else:
                with lock:
                    self.pending.pop(token, None)
                    wake = self._wake()
            if wake:
                self._after_pop()
            raise

    def expire(self, now: float, at: float | None = None) -> int:
        """Expire the pending publishes whose deadline is ``<= now`` (see the class
        docstring); ``at``: the time the calling timer was armed for. Returns how many
        expired."""
        lock = self.lock
        if lock is None:
            expired, nxt, rearm = self._expire_locked(now, at)
        else:
            with lock:
                expired, nxt, rearm = self._expire_locked(now, at)
        if expired:
            self._expired(expired)
        if rearm:
            self._arm(nxt)
        return len(expired)

    def _expire_locked(self, now: float, at: float | None) -> tuple[list[Any], float, bool]:
        pending = self.pending
        due: list[str] = []
        nxt = _INF
        for token, fut in pending.items():
            rec = getattr(fut, "_pub", None)
            if type(rec) is not tuple or len(rec) < 7:
                continue
            d = rec[5]
            if d is None:
                continue
            if d <= now:
                due.append(token)
            elif d < nxt:
                nxt = d
        expired = [pending.pop(token) for token in due]
        rearm = False
        if at is not None and float(at) == self.armed_at:  # the live timer
            if nxt == _INF:
                self.armed_at = _INF
            else:
                nxt = max(nxt, now + _GRAIN)
                self.armed_at = nxt
                rearm = True
        return expired, nxt, rearm

    def disarm(self) -> None:
        """Forget the live timer (the mux closed): the next deadline arms a new one."""
        lock = self.lock
        if lock is None:
            self.armed_at = _INF
        else:
            with lock:
                self.armed_at = _INF

    def on_msg(self, msg: Any) -> None:
        """Handle one reply on ``<prefix>*`` (see the class docstring)."""
        token = msg.subject[self._plen:]
        lock = self.lock
        if lock is None:
            fut = self.pending.pop(token, None)
            wake = self._wake()
        else:
            with lock:
                fut = self.pending.pop(token, None)
                wake = self._wake()
        if fut is None:
            return
        make = self.make_ack
        plain = _plain_ack(msg.data) if make is not None else None
        if plain is None:
            self._other(msg, token, fut)
            return
        ack = make(plain[0], plain[1])
        try:
            fut.set_result(ack)
        except Exception:  # done or cancelled already (another thread, a timeout)
            pass
        if wake:
            self._after_pop()

    def _wake(self) -> bool:
        """Whether a waiter is due (call with the lock held)."""
        n = len(self.pending)
        return bool((self.stall_waiters and n <= self.wake_at) or (self.complete_waiters and not n))

    def _other(self, msg: Any, token: str, fut: Any) -> None:
        raise NotImplementedError

    def _after_pop(self) -> None:
        raise NotImplementedError

    def _arm(self, at: float) -> None:
        raise NotImplementedError

    def _expired(self, futs: list[Any]) -> None:
        raise NotImplementedError
