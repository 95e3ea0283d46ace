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


def _expire(fut: "asyncio.Future[Any]") -> None:
    if not fut.done():
        fut.set_exception(NatsTimeoutError("timed out"))


async def wait_future(fut: "asyncio.Future[Any]", timeout: Optional[float]) -> Any:
    """Wait for ``fut``; on timeout raise jetwire's TimeoutError (the future is failed, not cancelled)."""
    if timeout is None or fut.done():
        return await fut
    handle = asyncio.get_running_loop().call_later(timeout, _expire, fut)
    try:
        return await fut
    finally:
        handle.cancel()


class Signal:
    """A level-triggered wake-up flag for one waiter at a time."""

    __slots__ = ("_flag", "_waiter")

    def __init__(self) -> None:
        self._flag = False
        self._waiter: Optional[asyncio.Future[Any]] = None

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
        loop = asyncio.get_running_loop()
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
    """The asyncio flavour runs on one thread: write-buffer locking is free."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


def write_lock() -> NoLock:
    return NoLock()


async def sleep(seconds: float) -> None:
    await asyncio.sleep(seconds)


def spawn(fn: Callable[..., Any], *args: Any, name: Optional[str] = None) -> "asyncio.Task[Any]":
    """Run ``fn(*args)`` (a coroutine function) concurrently."""
    return asyncio.get_running_loop().create_task(fn(*args), name=name)


def spawn_soon(fn: Callable[..., Any], *args: Any) -> None:
    """From a non-async context on the loop thread: start ``fn(*args)`` as a task."""
    loop = asyncio.get_running_loop()
    loop.create_task(fn(*args))


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


class Timer:
    """Calls ``fn()`` every ``interval`` seconds on the loop until cancelled."""

    def __init__(self, interval: float, fn: Callable[[], Any]) -> None:
        self._interval = interval
        self._fn = fn
        self._loop = asyncio.get_running_loop()
        self._handle = self._loop.call_later(interval, self._fire)

    def _fire(self) -> None:
        self._handle = self._loop.call_later(self._interval, self._fire)
        self._fn()

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
