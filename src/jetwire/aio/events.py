"""Subscribing to advisories and metrics (asyncio source; the blocking twin is generated):
``js.events(kinds=None)`` and ``js.consumer_ack_metrics(stream, consumer)`` return an
:class:`EventStream` of parsed events (:func:`jetwire.events.parse`)."""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..errors import SubscriptionClosedError
from ..events import AnyEvent, UnknownEvent, accepts, kinds_filter, parse
from ..msg import Msg
from . import _prims as prims
from .inbox import Mailbox

if TYPE_CHECKING:
    from ..connection import interface as _api


class EventStream(Mailbox):
    """Parsed events from one or more event subjects, in arrival order: ``next(timeout=None)``,
    iteration (``async for``) until ``stop()``, and a context manager that stops it.

    ``kinds`` (full type strings or their last token) keeps only those types. With a
    JetStream ``domain``, events that name another domain are skipped. Messages that
    are not JSON are skipped and reported to the connection's ``error_cb``."""

    def __init__(self, link: _api.Link, subjects: list[str], kinds: Iterable[str] | None = None,
                 domain: str | None = None) -> None:
        self._kinds = kinds_filter(kinds)
        self._domain = domain
        self._stopped = False
        super().__init__(link, subjects)

    @property
    def subjects(self) -> list[str]:
        return [s.subject for s in self.subs]

    def _accept(self, msg: Msg) -> AnyEvent | None:
        try:
            ev = parse(msg.data)
        except ValueError as exc:
            self._link.report_error(ValueError(f"event on {msg.subject!r} is not JSON: {exc}"))
            return None
        if not accepts(self._kinds, ev.type):
            return None
        dom = getattr(ev, "domain", None)
        if dom is None and isinstance(ev, UnknownEvent) and isinstance(ev.data, dict):
            dom = ev.data.get("domain")  # a type jetwire has no class for may name its domain too
        if self._domain and dom and dom != self._domain:
            return None
        return ev

    def _ended(self, what: str) -> BaseException | None:
        if self._stopped or not all(s.is_valid for s in self.subs):
            return SubscriptionClosedError("event stream stopped")
        return None

    def _no_message(self, what: str, timeout: float) -> str:
        return what

    async def next(self, timeout: float | None = None) -> AnyEvent:
        """The next event; ``TimeoutError`` after ``timeout`` seconds (``None``: no limit),
        ``SubscriptionClosedError`` once stopped or the connection closed."""
        q = self.q
        deadline = None if timeout is None else prims.monotonic() + timeout
        while True:
            while q:
                ev = self._accept(q.popleft())
                if ev is not None:
                    return ev
            left = None if deadline is None else max(0.0, deadline - prims.monotonic())
            await self.wait(left, f"no event within {timeout:g}s" if timeout is not None else "")

    def stop(self) -> None:
        """Unsubscribe; iteration ends once the events already received are taken."""
        if self._stopped:
            return
        self._stopped = True
        self.unsubscribe()
        self.signal.set()

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> AnyEvent:
        try:
            return await self.next(None)
        except SubscriptionClosedError:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> EventStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.stop()
