"""Blocking waiting primitives with the same names as ``jetwire.aio._prims``."""
from __future__ import annotations

import concurrent.futures
import threading
import time
from typing import Any, Callable, Optional

from ..errors import TimeoutError as NatsTimeoutError

IS_ASYNC = False
Future = concurrent.futures.Future


def new_future() -> "concurrent.futures.Future[Any]":
    return concurrent.futures.Future()


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
        try:
            self._lock.release()
        except RuntimeError:  # set concurrently by another thread
            pass

    def set_exception(self, exc: BaseException) -> None:
        if self._done:
            return
        self._exc = exc
        self._done = True
        try:
            self._lock.release()
        except RuntimeError:
            pass

    def result(self) -> Any:
        if self._exc is not None:
            raise self._exc
        return self._result


_allocate_lock = threading.Lock


def new_waiter() -> Waiter:
    """A future for exactly one waiter (a request): cheaper to make, resolve and wait for."""
    return Waiter()


def wait_future(fut: "concurrent.futures.Future[Any]", timeout: Optional[float]) -> Any:
    if fut.__class__ is Waiter:
        if fut._lock.acquire(True, -1 if timeout is None else max(timeout, 0.0)) or fut._done:
            return fut.result()
        fut.set_exception(NatsTimeoutError("timed out"))
        if fut._exc.__class__ is not NatsTimeoutError:  # resolved just now after all
            return fut.result()
        raise NatsTimeoutError("timed out")
    try:
        return fut.result(timeout)
    except concurrent.futures.TimeoutError:
        if fut.done() and not fut.cancelled() and fut.exception() is None:
            return fut.result()
        if not fut.done():
            fut.set_exception(NatsTimeoutError("timed out"))
            raise NatsTimeoutError("timed out") from None
        raise


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


def write_lock() -> Any:
    return threading.Lock()


def sleep(seconds: float) -> None:
    time.sleep(seconds)


def spawn(fn: Callable[..., Any], *args: Any, name: Optional[str] = None) -> threading.Thread:
    """Run ``fn(*args)`` on a daemon thread."""
    t = threading.Thread(target=fn, args=args, name=name or "jetwire", daemon=True)
    t.start()
    return t


def spawn_soon(fn: Callable[..., Any], *args: Any) -> None:
    spawn(fn, *args)


def join(task: Any, timeout: Optional[float] = None) -> bool:
    if task is None or task is threading.current_thread():
        return True
    task.join(timeout)
    return not task.is_alive()


def cancel(task: Any) -> None:
    """Threads cannot be cancelled; their loops check the closed flags."""
    return None


def call(cb: Callable[..., Any], *args: Any) -> Any:
    return cb(*args)


def monotonic() -> float:
    return time.monotonic()


class Timer:
    """Calls ``fn()`` every ``interval`` seconds on a daemon thread until cancelled."""

    def __init__(self, interval: float, fn: Callable[[], Any]) -> None:
        self._interval = interval
        self._fn = fn
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="jetwire-timer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._fn()
            except Exception:  # pragma: no cover - a timer must not die
                pass

    def cancel(self) -> None:
        self._stop.set()
