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


def wait_future(fut: "concurrent.futures.Future[Any]", timeout: Optional[float]) -> Any:
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
    """A level-triggered wake-up flag (threading.Event)."""

    __slots__ = ("_ev",)

    def __init__(self) -> None:
        self._ev = threading.Event()

    def set(self) -> None:
        if not self._ev.is_set():
            self._ev.set()

    def clear(self) -> None:
        self._ev.clear()

    def is_set(self) -> bool:
        return self._ev.is_set()

    def wait(self, timeout: Optional[float] = None) -> bool:
        return self._ev.wait(timeout)


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
