"""Blocking waiting primitives with the same names as ``jetwire.aio._prims``."""
from __future__ import annotations

import concurrent.futures
import functools
import heapq
import logging
import threading
import time
from collections import deque
from typing import Any, Callable, Deque, List, Optional, cast

from .. import _impl
from .._units import wait_limit
from ..errors import TimeoutError as NatsTimeoutError

log = logging.getLogger("jetwire")

IS_ASYNC = False
Future = concurrent.futures.Future


def new_future() -> "concurrent.futures.Future[Any]":
    return concurrent.futures.Future()


def future_maker(cls: Any = None) -> Callable[[], "concurrent.futures.Future[Any]"]:
    """A function making futures (``new_future``, or ``cls``; the asyncio flavour binds
    its loop)."""
    return new_future if cls is None else cls


class Waiter:
    """A one-shot future for one waiting thread (requests): ``done()``, ``set_result()``,
    ``set_exception()`` like a ``concurrent.futures.Future``, waited for with
    :func:`wait_future`. It is a lock acquired when made and released by the first
    ``set_*``, so the waiter wakes straight from that release (no Condition, no
    RLock). Only the first ``set_*`` counts; later ones are ignored."""

    __slots__ = ("_lock", "_done", "_result", "_exc")

    def __init__(self) -> None:
        self._lock = lock = _allocate_lock()
        lock.acquire()
        self._done = False
        self._result: Any = None
        self._exc: Optional[BaseException] = None

    def done(self) -> bool:
        return self._done

    def set_result(self, result: Any) -> None:
        if self._done:
            return
        self._result = result
        self._done = True
        self._wake()

    def set_exception(self, exc: BaseException) -> None:
        if self._done:
            return
        self._exc = exc
        self._done = True
        self._wake()

    def _wake(self) -> None:
        try:
            self._lock.release()
        except RuntimeError:  # set concurrently by another thread
            pass

    def result(self) -> Any:
        if self._exc is not None:
            raise self._exc
        return self._result


_allocate_lock = threading.Lock
_spin_wait = _impl.spin_wait


class SpinWaiter(Waiter):
    """A ``Waiter`` whose thread first polls for its answer, without the GIL and without
    sleeping, for up to ``spin`` seconds (``poll_io``: an answer due soon, on a machine
    whose idle cores wake slowly), then sleeps as a ``Waiter`` does. One thread polls at a
    time (``_SPINNING``): the others sleep, so many requesters cost one core, not many."""

    __slots__ = ("_flag", "_spin")

    def __init__(self, spin: float) -> None:
        super().__init__()
        self._spin = spin
        self._flag = flag = _impl.Lock()
        flag.acquire()

    def _wake(self) -> None:
        try:
            self._flag.release()
        except RuntimeError:  # set concurrently by another thread
            pass
        Waiter._wake(self)


_SPINNING = threading.Lock()  # held by the one thread polling in a SpinWaiter's wait


def new_waiter() -> Waiter:
    """A future for exactly one waiter (a request): cheaper to make, resolve and wait for."""
    return Waiter()


def waiter_maker(spin: float = 0.0) -> Callable[[], Waiter]:
    """What makes a request's reply waiter: ``new_waiter``, or with ``spin`` seconds
    (``poll_io``) a ``SpinWaiter``."""
    if spin > 0:
        return functools.partial(SpinWaiter, spin)
    return new_waiter


def wait_future(fut: "concurrent.futures.Future[Any]", timeout: Optional[float]) -> Any:
    """Wait for ``fut``; on timeout raise jetwire's TimeoutError (the future is failed).
    Infinity waits as long as it takes; NaN is a ``ValueError``."""
    timeout = wait_limit(timeout)
    cls = fut.__class__
    if cls is Waiter or cls is SpinWaiter:
        return _wait_waiter(cast(Waiter, fut), timeout)
    try:
        return fut.result(timeout)
    except concurrent.futures.TimeoutError:
        if fut.done() and not fut.cancelled() and fut.exception() is None:
            return fut.result()
        if not fut.done():
            fut.set_exception(NatsTimeoutError("timed out"))
            raise NatsTimeoutError("timed out") from None
        raise


def _poll_first(gate: Any, flag: Any, spin: float, timeout: Optional[float]) -> tuple[bool, Optional[float]]:
    """Poll for ``flag`` (an ``_impl.Lock`` released when the answer comes) for up to
    ``spin`` seconds (never past ``timeout``) when no other thread holds ``gate`` (one
    poller at a time): whether it was taken, and the timeout left for sleeping."""
    if not gate.acquire(False):
        return False, timeout
    try:
        if timeout is not None and timeout < spin:
            spin = max(timeout, 0.0)
        got = _spin_wait(flag, spin, spin / 4)
    finally:
        gate.release()
    return got, (None if timeout is None else max(timeout - spin, 0.0))


def _wait_waiter(w: Waiter, timeout: Optional[float]) -> Any:
    if w.__class__ is SpinWaiter:
        got, timeout = _poll_first(_SPINNING, w._flag, w._spin, timeout)
        if got:
            return w.result()
    if w._lock.acquire(True, -1 if timeout is None else max(timeout, 0.0)) or w._done:
        return w.result()
    w.set_exception(NatsTimeoutError("timed out"))
    if w._exc.__class__ is not NatsTimeoutError:  # resolved just now after all
        return w.result()
    raise NatsTimeoutError("timed out")


class Signal:
    """A level-triggered wake-up flag: a lock held while the flag is clear.

    ``set()`` raises the flag and releases the lock, ``clear()`` lowers the flag and takes
    the lock back without blocking, ``wait()`` returns True at once when the flag is up,
    else blocks on the lock (passing it on: every waiter wakes) and returns the flag when
    woken or timed out. Cheaper than ``threading.Event`` (no Condition, no lock made per
    wait). A clear() racing a set() can leave the lock free with the flag down: a waiter
    then finds the flag down, takes the lock again and goes on waiting.
    """

    __slots__ = ("_flag", "_lock")

    def __init__(self) -> None:
        self._flag = False
        self._lock = lock = _allocate_lock()
        lock.acquire()

    def set(self) -> None:
        if self._flag:  # up already: the set() that raised it releases the lock
            return
        self._flag = True
        lock = self._lock
        if lock.locked():
            try:
                lock.release()
            except RuntimeError:  # released concurrently
                pass

    def clear(self) -> None:
        self._flag = False
        self._lock.acquire(False)

    def is_set(self) -> bool:
        return self._flag

    def wait(self, timeout: Optional[float] = None) -> bool:
        if self._flag:
            return True
        timeout = wait_limit(timeout)
        lock = self._lock
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if deadline is None:
                got = lock.acquire()
            else:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return self._flag
                got = lock.acquire(True, remaining)
            if not got:
                return self._flag
            try:
                lock.release()  # pass the wake-up on to other waiters
            except RuntimeError:
                pass
            if self._flag:
                return True
            lock.acquire(False)  # woken with the flag down (see the class docstring)
            if self._flag:
                return True


class SpinSignal(Signal):
    """A ``Signal`` whose waiter first polls for the flag, without the GIL and without
    sleeping, for up to ``spin`` seconds (``poll_io``: a subscription's callback thread,
    whose next message is due soon on a machine whose idle cores wake slowly), then
    sleeps as a ``Signal``'s does. One thread polls at a time (``_SPINNING_SIGNAL``;
    requesters have their own), so many subscriptions cost one core, not many."""

    __slots__ = ("_spin", "_poll")

    def __init__(self, spin: float) -> None:
        super().__init__()
        self._spin = spin
        self._poll = poll = _impl.Lock()  # held while the flag is down, like ``_lock``
        poll.acquire()

    def set(self) -> None:
        if self._flag:
            return
        Signal.set(self)
        try:
            self._poll.release()
        except RuntimeError:  # released concurrently
            pass

    def clear(self) -> None:
        self._flag = False
        self._poll.acquire(False)
        self._lock.acquire(False)

    def wait(self, timeout: Optional[float] = None) -> bool:
        if self._flag:
            return True
        got, timeout = _poll_first(_SPINNING_SIGNAL, self._poll, self._spin, timeout)
        if got and self._flag:
            return True
        return Signal.wait(self, timeout)


_SPINNING_SIGNAL = threading.Lock()  # held by the one thread polling in a SpinSignal's wait


def signal_maker(spin: float = 0.0) -> Callable[[], Signal]:
    """What makes a subscription's wake-up flag: ``Signal``, or with ``spin`` seconds
    (``poll_io``) a ``SpinSignal``."""
    if spin > 0:
        return functools.partial(SpinSignal, spin)
    return Signal


def write_lock() -> Any:
    return threading.Lock()


def queue_lock() -> Any:
    """The lock a subscription's queue needs between the reader thread and its consumer
    (taken from compiled code without a Python call)."""
    from .. import _impl

    return _impl.Lock()


def sleep(seconds: float) -> None:
    time.sleep(seconds)


def spawn(fn: Callable[..., Any], *args: Any, name: Optional[str] = None) -> threading.Thread:
    """Run ``fn(*args)`` on a daemon thread."""
    t = threading.Thread(target=fn, args=args, name=name or "jetwire", daemon=True)
    t.start()
    return t


def join(task: Any, timeout: Optional[float] = None) -> bool:
    if task is None or task is threading.current_thread():
        return True
    task.join(timeout)
    return not task.is_alive()


def current() -> object:
    """What runs this code: the current thread."""
    return threading.current_thread()


def cancel(task: Any) -> None:
    """Threads cannot be cancelled; their loops check the closed flags."""
    return None


def call(cb: Callable[..., Any], *args: Any) -> Any:
    return cb(*args)


def monotonic() -> float:
    return time.monotonic()


class _Entry:
    __slots__ = ("when", "seq", "fn", "args", "interval", "cancelled")

    def __init__(self, when: float, seq: int, fn: Callable[..., Any], args: Any, interval: float) -> None:
        self.when = when
        self.seq = seq
        self.fn = fn
        self.args = args
        self.interval = interval
        self.cancelled = False

    def __lt__(self, other: "_Entry") -> bool:
        return (self.when, self.seq) < (other.when, other.seq)

    def cancel(self) -> None:
        self.cancelled = True


class Scheduler:
    """One connection's timers (one thread, a heap of deadlines) and user-callback
    dispatcher (one thread, a queue), each started on first use.

    Timer functions are plain and must not block (they run one after another on the
    timer thread); an exception in one goes to ``on_error``. ``dispatch`` runs user
    callbacks in order on the dispatcher thread; an exception in one goes to
    ``on_error`` too (an exception while reporting is logged). ``on_timer_thread`` is
    called first on the timer thread (the connection's writer marks it as one that never
    writes: a stuck write must not hold up the pings)."""

    def __init__(self, on_error: Callable[[BaseException], None],
                 on_timer_thread: Optional[Callable[[], None]] = None) -> None:
        self._on_error = on_error
        self._on_timer_thread = on_timer_thread
        self._cond = threading.Condition(threading.Lock())
        self._heap: List[_Entry] = []
        self._seq = 0
        self._timer: Optional[threading.Thread] = None
        self._calls: Deque[Any] = deque()
        self._calls_cond = threading.Condition(threading.Lock())
        self._dispatcher: Optional[threading.Thread] = None
        self._closed = False

    # -- timers ------------------------------------------------------------------------
    def _add(self, delay: float, fn: Callable[..., Any], args: Any, interval: float) -> _Entry:
        with self._cond:
            self._seq += 1
            entry = _Entry(time.monotonic() + delay, self._seq, fn, args, interval)
            if self._closed:
                entry.cancelled = True
                return entry
            heapq.heappush(self._heap, entry)
            if self._timer is None:
                self._timer = threading.Thread(target=self._run_timers, name="jetwire-timer", daemon=True)
                self._timer.start()
            elif self._heap[0] is entry:
                self._cond.notify()
        return entry

    def call_later(self, delay: float, fn: Callable[..., Any], *args: Any) -> _Entry:
        return self._add(delay, fn, args, 0.0)

    def call_every(self, interval: float, fn: Callable[[], Any]) -> _Entry:
        return self._add(interval, fn, (), interval)

    def _run_timers(self) -> None:
        if self._on_timer_thread is not None:
            self._on_timer_thread()
        heap = self._heap
        cond = self._cond
        while True:
            with cond:
                while True:
                    if self._closed:
                        return
                    while heap and heap[0].cancelled:
                        heapq.heappop(heap)
                    now = time.monotonic()
                    if heap and heap[0].when <= now:
                        entry = heapq.heappop(heap)
                        if entry.interval:
                            entry.when = max(entry.when + entry.interval, now)
                            heapq.heappush(heap, entry)
                        break
                    cond.wait(heap[0].when - now if heap else None)
            try:
                entry.fn(*entry.args)
            except Exception as exc:
                self._report(exc)

    # -- user callbacks ----------------------------------------------------------------
    def dispatch(self, cb: Callable[..., Any], *args: Any) -> None:
        with self._calls_cond:
            self._calls.append((cb, args))
            if self._dispatcher is None:
                self._dispatcher = threading.Thread(target=self._run_calls, name="jetwire-callbacks", daemon=True)
                self._dispatcher.start()
            else:
                self._calls_cond.notify()

    def _run_calls(self) -> None:
        calls = self._calls
        cond = self._calls_cond
        while True:
            with cond:
                while not calls:
                    if self._closed:
                        return
                    cond.wait()
                cb, args = calls.popleft()
            try:
                cb(*args)
            except Exception as exc:
                self._report(exc)

    def _report(self, exc: BaseException) -> None:
        try:
            self._on_error(exc)
        except Exception:  # pragma: no cover - the error hook itself failed
            log.exception("jetwire: error while reporting %r", exc)

    def close(self) -> None:
        """Stop the timers; callbacks already dispatched still run, then the thread ends."""
        with self._cond:
            self._closed = True
            self._heap.clear()
            self._cond.notify()
        with self._calls_cond:
            self._calls_cond.notify()
