"""asyncio waiting primitives. ``jetwire._sync._prims`` has the same names, blocking."""
from __future__ import annotations

import asyncio
import functools
import inspect
import weakref
from collections import deque
from collections.abc import Callable, Coroutine, Generator
from typing import Any, TypeVar

from .._units import wait_limit
from ..errors import TimeoutError as NatsTimeoutError

T = TypeVar("T")
IS_ASYNC = True
_ref = weakref.ref
Future = asyncio.Future


def new_future() -> asyncio.Future[Any]:
    return asyncio.get_running_loop().create_future()


new_waiter = new_future  # a future for exactly one waiter (the blocking flavour's is lighter)


def future_maker(cls: type[asyncio.Future[Any]] | None = None) -> Callable[[], asyncio.Future[Any]]:
    """A function making futures (of class ``cls``, an ``asyncio.Future``, if given) of
    the running loop: ``new_future`` without looking the loop up per call (which costs a
    ``getpid`` system call). Call it from the loop the futures are for."""
    loop = asyncio.get_running_loop()
    if cls is None:
        return loop.create_future
    return functools.partial(cls, loop=loop)


def waiter_maker(spin: float = 0.0) -> Callable[[], asyncio.Future[Any]]:
    """What makes a request's reply waiter: futures of the running loop (``future_maker``;
    ``spin`` is the blocking flavour's: the loop polls instead, see ``Spinner``)."""
    return future_maker()



class _Queue(deque[tuple[float, "weakref.ref[asyncio.Future[Any]]"]]):
    """One timeout value's FIFO of ``(deadline, weakref(future))``, with the length at
    which it is next compacted."""

    __slots__ = ("limit",)

    def __init__(self) -> None:
        super().__init__()
        self.limit = _COMPACT_MIN


# a timeout's FIFO is compacted (its finished waits dropped) when it reaches this many
# records, and then again at twice what is still pending (amortised O(1) per wait)
_COMPACT_MIN = 64


class _Deadlines:
    """The timeouts of ``wait_future`` on one loop, with one loop timer for all of them.

    A timer per wait (``call_later`` then ``cancel``) cost more than the rest of a request
    (about 2.5 us on uvloop). Here a wait appends ``(deadline, weakref(future))`` to the
    FIFO of its timeout value (deadlines of one value only grow), and one timer, armed for
    the earliest head, fails the futures still pending when it fires (at most ~1 ms late).
    The weak reference keeps nothing alive, and the records of waits already over (the
    future answered, or collected) are dropped early, not kept until their timeout: from
    the head of the FIFO before each append (a request answered before the next one is
    made leaves none behind), and, behind a head still pending, by compacting the FIFO
    when it reaches twice what was pending at the last compaction (at least
    ``_COMPACT_MIN``). So the records grow with what is pending, not with rate x timeout."""

    __slots__ = ("armed_at", "handle", "loop", "queues")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.queues: dict[float, _Queue] = {}
        self.handle: asyncio.TimerHandle | None = None
        self.armed_at = _INF

    def add(self, timeout: float, fut: asyncio.Future[Any]) -> None:
        q = self.queues.get(timeout)
        if q is None:
            q = self.queues[timeout] = _Queue()
        else:
            while q:  # the waits over already, at the head (each record is dropped once)
                f = q[0][1]()
                if f is not None and not f.done():
                    break
                q.popleft()
            if len(q) >= q.limit:
                _compact(q)
        deadline = self.loop.time() + timeout
        q.append((deadline, _ref(fut)))
        if deadline < self.armed_at:
            self._arm(deadline)

    def _arm(self, deadline: float) -> None:
        if self.handle is not None:
            self.handle.cancel()
        self.handle = self.loop.call_at(deadline, self._fire)
        self.armed_at = deadline

    def _fire(self) -> None:
        self.handle = None
        self.armed_at = _INF
        now = self.loop.time() + 0.001  # the loop's timers may fire a little early
        nxt = _INF
        for timeout, q in list(self.queues.items()):
            while q:
                deadline, ref = q[0]
                fut = ref()
                if fut is not None and not fut.done():
                    if deadline > now:
                        break
                    fut.set_exception(NatsTimeoutError("timed out"))
                q.popleft()
            if q:
                nxt = min(nxt, q[0][0])
            else:
                del self.queues[timeout]
        if nxt < _INF:
            self._arm(nxt)


def _compact(q: _Queue) -> None:
    """Drop the records of ``q`` whose wait is over (answered, or the future collected),
    keeping the order; the next compaction comes at twice what is left."""
    live = [r for r in q if (f := r[1]()) is not None and not f.done()]
    q.clear()
    q.extend(live)
    q.limit = max(_COMPACT_MIN, 2 * len(live))


_INF = float("inf")


async def wait_future(fut: asyncio.Future[T], timeout: float | None) -> T:
    """Wait for ``fut``; on timeout raise jetwire's TimeoutError (the future is failed,
    not cancelled). Infinity waits as long as it takes; NaN is a ``ValueError``."""
    timeout = wait_limit(timeout)
    if timeout is None or fut.done():
        return await fut
    loop = fut.get_loop()
    dl = getattr(loop, "_jetwire_deadlines", None)  # the loop owns its one (no global to leak loops)
    if dl is None:
        dl = _Deadlines(loop)
        loop._jetwire_deadlines = dl  # type: ignore[attr-defined]
    dl.add(timeout, fut)
    return await fut


class Signal:
    """A level-triggered wake-up flag (the loop of its first ``wait`` is kept: one loop
    waits on a signal). One waiter is the common case and costs one future; more (tasks
    sharing a subscription's ``next_msg``) are kept aside, and ``set()`` wakes them all."""

    __slots__ = ("_flag", "_loop", "_more", "_waiter")

    def __init__(self) -> None:
        self._flag = False
        self._waiter: asyncio.Future[bool] | None = None
        self._more: list[asyncio.Future[bool]] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def set(self) -> None:
        if self._flag:  # up already: its waiters (if any) were woken when it went up
            return
        self._flag = True
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(True)
        more = self._more
        if more:
            self._more = None
            for w in more:
                if not w.done():
                    w.set_result(True)

    def clear(self) -> None:
        self._flag = False

    def is_set(self) -> bool:
        return self._flag

    async def wait(self, timeout: float | None = None) -> bool:
        if self._flag:
            return True
        timeout = wait_limit(timeout)
        if timeout is not None and timeout <= 0:
            return False
        loop = self._loop
        if loop is None or loop.is_closed():
            loop = self._loop = asyncio.get_running_loop()
        fut: asyncio.Future[bool] = loop.create_future()
        first = self._waiter
        if first is None or first.done():
            self._waiter = fut
        elif self._more is None:
            self._more = [fut]
        else:
            self._more.append(fut)
        handle = None
        if timeout is not None:
            handle = loop.call_later(timeout, _false, fut)
        try:
            return await fut
        finally:
            if handle is not None:
                handle.cancel()
            if self._waiter is fut:
                self._waiter = None
            elif self._more:
                try:
                    self._more.remove(fut)
                except ValueError:
                    pass


def signal_maker(spin: float = 0.0) -> Callable[[], Signal]:
    """What makes a subscription's wake-up flag: ``Signal`` (the blocking flavour's
    polls for up to ``spin`` seconds first, ``poll_io``)."""
    return Signal


def _false(fut: asyncio.Future[bool]) -> None:
    if not fut.done():
        fut.set_result(False)


class NoLock:
    """The asyncio flavour runs on one thread: locking is free (the one no-op lock)."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
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


def spawn(fn: Callable[..., Coroutine[object, object, T]], *args: object, name: str | None = None) -> asyncio.Task[T]:
    """Run ``fn(*args)`` (a coroutine function) concurrently."""
    return asyncio.get_running_loop().create_task(fn(*args), name=name)


async def join(task: asyncio.Future[T] | None, timeout: float | None = None) -> bool:
    """Wait for a spawned task to finish; False on timeout."""
    if task is None or task is asyncio.current_task():
        return True
    try:
        await asyncio.wait_for(asyncio.shield(task), timeout)
        return True
    except TimeoutError:
        return False
    except asyncio.CancelledError:
        if task.cancelled() and not cancelling():  # the joined task was; the caller was not
            return True
        raise
    except Exception:
        return True


CancelledError = asyncio.CancelledError


def cancelling() -> bool:
    """Whether the current task is being cancelled (a ``CancelledError`` seen now is its
    own, not one a callback raised)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


class _Rest:
    """The rest of a coroutine that :func:`eager_start` ran up to its first wait."""

    __slots__ = ("coro", "first")

    def __init__(self, coro: Any, first: Any) -> None:
        self.coro = coro
        self.first = first

    def __await__(self) -> Generator[object, object, object]:
        coro, y = self.coro, self.first
        self.coro = self.first = None
        while True:
            try:
                v = yield y  # the task waits for what the coroutine waits for, and passes it on
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:  # e.g. the task was cancelled
                try:
                    y = coro.throw(exc)
                except StopIteration as stop:
                    return stop.value
            else:
                try:
                    y = coro.send(v)
                except StopIteration as stop:
                    return stop.value


async def _finish(rest: _Rest) -> object:
    return await rest


def eager_start(coro: Coroutine[object, object, object]) -> asyncio.Task[object] | None:
    """Run ``coro`` now, on the caller's stack, up to its first wait (as Python 3.12's eager
    tasks do): None when it finished there (what it raised is raised here), else a task
    that runs the rest. Until that first wait ``asyncio.current_task()`` is the caller's."""
    try:
        first = coro.send(None)
    except StopIteration:
        return None
    return asyncio.get_running_loop().create_task(_finish(_Rest(coro, first)))


def current() -> object:
    """What runs this code: the current task (None outside one)."""
    return asyncio.current_task()


def cancel(task: asyncio.Future[T] | None) -> None:
    if task is not None and task is not asyncio.current_task():
        task.cancel()


async def call(cb: Callable[..., object], *args: object) -> Any:
    """Call a user callback that may be a plain or a coroutine function."""
    r = cb(*args)
    if inspect.isawaitable(r):
        r = await r
    return r


def monotonic() -> float:
    return asyncio.get_running_loop().time()


class _Repeat:
    """``fn()`` every ``interval`` seconds on the loop until cancelled."""

    __slots__ = ("_fn", "_handle", "_interval", "_loop")

    def __init__(self, loop: asyncio.AbstractEventLoop, interval: float, fn: Callable[[], object]) -> None:
        self._interval = interval
        self._fn = fn
        self._loop = loop
        self._handle: asyncio.TimerHandle | None = loop.call_later(interval, self._fire)

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
    task, in order; its exception goes to ``on_error`` too. ``on_timer_thread`` is for
    the blocking flavour's timer thread (none here)."""

    def __init__(self, on_error: Callable[[BaseException], None],
                 on_timer_thread: Callable[[], None] | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        self._on_error = on_error

    def _guard(self, fn: Callable[..., object], args: tuple[object, ...]) -> None:
        try:
            fn(*args)
        except Exception as exc:
            self._on_error(exc)

    def call_later(self, delay: float, fn: Callable[..., object], *args: object) -> asyncio.TimerHandle:
        return self._loop.call_later(delay, self._guard, fn, args)

    def call_every(self, interval: float, fn: Callable[[], object]) -> _Repeat:
        return _Repeat(self._loop, interval, lambda: self._guard(fn, ()))

    def dispatch(self, cb: Callable[..., object], *args: object) -> None:
        self._loop.create_task(self._run(cb, args))

    async def _run(self, cb: Callable[..., object], args: tuple[object, ...]) -> None:
        try:
            await call(cb, *args)
        except Exception as exc:
            self._on_error(exc)

    def close(self) -> None:
        return None
