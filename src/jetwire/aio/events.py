"""Subscribing to advisories and metrics (asyncio source; the blocking twin is generated):
``js.events(kinds=None)`` and ``js.consumer_ack_metrics(stream, consumer)`` return an
:class:`EventStream` of parsed events (:func:`jetwire.events.parse`)."""
from __future__ import annotations

from collections import deque
from typing import Any, Deque, Iterable, List, Optional

from ..errors import SubscriptionClosedError, TimeoutError
from ..events import AnyEvent, accepts, kinds_filter, parse
from ..msg import Msg
from . import _prims as prims


class EventStream:
    """Parsed events from one or more event subjects, in arrival order: ``next(timeout=None)``,
    iteration (``async for`` in aio) until ``stop()``, and a context manager that stops it.

    ``kinds`` (full type strings or their last token) keeps only those types. With a
    JetStream ``domain``, events that name another domain are skipped. Messages that
    are not JSON are skipped and reported to the connection's ``error_cb``."""

    def __init__(self, link: Any, subjects: List[str], kinds: Optional[Iterable[str]] = None,
                 domain: Optional[str] = None) -> None:
        self._link = link
        self._kinds = kinds_filter(kinds)
        self._domain = domain
        self._q: Deque[Msg] = deque()
        self._signal = prims.Signal()
        self._stopped = False
        self._subs = [link.subscribe_direct(s, self._on_msg, wake=self._signal) for s in subjects]

    def _on_msg(self, msg: Msg) -> None:  # from the reader: never blocks
        self._q.append(msg)
        self._signal.set()

    @property
    def subjects(self) -> List[str]:
        return [s.subject for s in self._subs]

    def _accept(self, msg: Msg) -> Optional[AnyEvent]:
        try:
            ev = parse(msg.data)
        except ValueError as exc:
            self._link.report_error(ValueError(f"event on {msg.subject!r} is not JSON: {exc}"))
            return None
        if not accepts(self._kinds, ev.type):
            return None
        dom = getattr(ev, "domain", None)
        if self._domain and dom and dom != self._domain:
            return None
        return ev

    async def next(self, timeout: Optional[float] = None) -> AnyEvent:
        """The next event; ``TimeoutError`` after ``timeout`` seconds (``None``: no limit),
        ``SubscriptionClosedError`` once stopped or the connection closed."""
        q = self._q
        signal = self._signal
        deadline = None if timeout is None else prims.monotonic() + timeout
        while True:
            while q:
                ev = self._accept(q.popleft())
                if ev is not None:
                    return ev
            if self._stopped or not all(s.is_valid for s in self._subs):
                raise SubscriptionClosedError("event stream stopped")
            signal.clear()
            if q:
                continue
            if deadline is None:
                await signal.wait(None)
                continue
            left = deadline - prims.monotonic()
            if left <= 0:
                raise TimeoutError(f"no event within {timeout:g}s")
            await signal.wait(left)

    def stop(self) -> None:
        """Unsubscribe; iteration ends once the events already received are taken."""
        if self._stopped:
            return
        self._stopped = True
        for s in self._subs:
            try:
                self._link.unsubscribe(s)
            except Exception:  # the connection is closed: nothing to undo
                pass
        self._signal.set()

    def __aiter__(self) -> "EventStream":
        return self

    async def __anext__(self) -> AnyEvent:
        try:
            return await self.next(None)
        except SubscriptionClosedError:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> "EventStream":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.stop()
