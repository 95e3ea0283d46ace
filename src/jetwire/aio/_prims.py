"""asyncio waiting primitives. ``jetwire._sync._prims`` has the same names, blocking."""
from __future__ import annotations

import asyncio
import inspect
from typing import Any, Callable, Optional

from ..errors import TimeoutError as NatsTimeoutError

IS_ASYNC = True
Future = asyncio.Future


def new_future() -> "asyncio.Future[Any]":
    return asyncio.get_running_loop().create_future()


new_waiter = new_future  # a future for exactly one waiter (the blocking flavour's is lighter)


def future_maker() -> Callable[[], "asyncio.Future[Any]"]:
    """A function making futures of the running loop: ``new_future`` without looking the
    loop up per call (which costs a ``getpid`` system call). Call it from the loop the
    futures are for."""
    return asyncio.get_running_loop().create_future


def _expire(fut: "asyncio.Future[Any]") -> None:
    if not fut.done():
        fut.set_exception(NatsTimeoutError("timed out"))


async def wait_future(fut: "asyncio.Future[Any]", timeout: Optional[float]) -> Any:
    """Wait for ``fut``; on timeout raise jetwire's TimeoutError (the future is failed, not cancelled)."""
    if timeout is None or fut.done():
        return await fut
    handle = fut.get_loop().call_later(timeout, _expire, fut)
    try:
        return await fut
    finally:
        handle.cancel()


class Signal:
    """A level-triggered wake-up flag for one waiter at a time (the loop of its first
    ``wait`` is kept: one loop waits on a signal)."""

    __slots__ = ("_flag", "_waiter", "_loop")

    def __init__(self) -> None:
        self._flag = False
        self._waiter: Optional[asyncio.Future[Any]] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None

    def set(self) -> None:
        self._flag = True
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(True)

    def clear(self) -> None:
        self._flag = False

    def is_set(self) -> bool:
        return self._flag

    async def wait(self, timeout: Optional[float] = None) -> bool:
        if self._flag:
            return True
        if timeout is not None and timeout <= 0:
            return False
        loop = self._loop
        if loop is None or loop.is_closed():
            loop = self._loop = asyncio.get_running_loop()
        fut = loop.create_future()
        self._waiter = fut
        handle = None
        if timeout is not None:
            handle = loop.call_later(timeout, _false, fut)
        try:
            return await fut
        finally:
            if handle is not None:
                handle.cancel()
            self._waiter = None


def _false(fut: "asyncio.Future[Any]") -> None:
    if not fut.done():
        fut.set_result(False)


class NoLock:
    """The asyncio flavour runs on one thread: locking is free (the one no-op lock)."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        return True

    def release(self) -> None:
        return None


NO_LOCK = NoLock()


def queue_lock() -> Any:
    """The lock a subscription's queue needs between the reader and its consumer: none
    (one thread)."""
    return None


def write_lock() -> NoLock:
    return NO_LOCK


async def sleep(seconds: float) -> None:
    await asyncio.sleep(seconds)


def spawn(fn: Callable[..., Any], *args: Any, name: Optional[str] = None) -> "asyncio.Task[Any]":
    """Run ``fn(*args)`` (a coroutine function) concurrently."""
    return asyncio.get_running_loop().create_task(fn(*args), name=name)


async def join(task: Any, timeout: Optional[float] = None) -> bool:
    """Wait for a spawned task to finish; False on timeout."""
    if task is None or task is asyncio.current_task():
        return True
    try:
        await asyncio.wait_for(asyncio.shield(task), timeout)
        return True
    except asyncio.TimeoutError:
        return False
    except asyncio.CancelledError:
        if task.cancelled():
            return True
        raise
    except Exception:
        return True


def cancel(task: Any) -> None:
    if task is not None and task is not asyncio.current_task():
        task.cancel()


async def call(cb: Callable[..., Any], *args: Any) -> Any:
    """Call a user callback that may be a plain or a coroutine function."""
    r = cb(*args)
    if inspect.isawaitable(r):
        r = await r
    return r


def monotonic() -> float:
    return asyncio.get_running_loop().time()


class _Repeat:
    """``fn()`` every ``interval`` seconds on the loop until cancelled."""

    __slots__ = ("_interval", "_fn", "_loop", "_handle")

    def __init__(self, loop: asyncio.AbstractEventLoop, interval: float, fn: Callable[[], Any]) -> None:
        self._interval = interval
        self._fn = fn
        self._loop = loop
        self._handle: Optional[asyncio.TimerHandle] = loop.call_later(interval, self._fire)

    def _fire(self) -> None:
        self._handle = self._loop.call_later(self._interval, self._fire)
        self._fn()

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


class Scheduler:
    """One connection's timers and user-callback dispatcher, on the event loop.

    Timer functions are plain and must not block; an exception in one goes to
    ``on_error``. ``dispatch`` runs a user callback (plain or coroutine function) as a
    task, in order; its exception goes to ``on_error`` too."""

    def __init__(self, on_error: Callable[[BaseException], None]) -> None:
        self._loop = asyncio.get_running_loop()
        self._on_error = on_error

    def _guard(self, fn: Callable[..., Any], args: Any) -> None:
        try:
            fn(*args)
        except Exception as exc:
            self._on_error(exc)

    def call_later(self, delay: float, fn: Callable[..., Any], *args: Any) -> Any:
        return self._loop.call_later(delay, self._guard, fn, args)

    def call_every(self, interval: float, fn: Callable[[], Any]) -> Any:
        return _Repeat(self._loop, interval, lambda: self._guard(fn, ()))

    def dispatch(self, cb: Callable[..., Any], *args: Any) -> None:
        self._loop.create_task(self._run(cb, args))

    async def _run(self, cb: Callable[..., Any], args: Any) -> None:
        try:
            await call(cb, *args)
        except Exception as exc:
            self._on_error(exc)

    def close(self) -> None:
        return None
