"""Messages the reader queues for one caller (asyncio source; ``jetwire/_sync/inbox.py``
is generated from it): :class:`Mailbox`, the queue and the wait shared by
:class:`Inbox` (a private inbox whose replies answer one request: snapshot chunks and
restore answers, batched direct gets) and ``EventStream`` (advisories and metrics)."""
from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from ..errors import ConnectionClosedError, ConnectionLostError, TimeoutError
from ..msg import Msg
from . import _prims as prims

if TYPE_CHECKING:
    from ..connection import interface as _api

__all__ = ["Inbox", "Mailbox"]


class Mailbox:
    """Direct subscriptions to ``subjects`` whose handler (on the reader, never
    blocking) queues each message in ``q`` and wakes the one caller of :meth:`wait`.
    :meth:`_ended` says when waiting must stop early (an exception to raise, or None)."""

    __slots__ = ("__weakref__", "_link", "q", "signal", "subs")

    def __init__(self, link: _api.Link, subjects: list[str]) -> None:
        self._link = link
        self.q: deque[Any] = deque()
        self.signal = prims.Signal()
        self.subs = [link.subscribe_direct(s, self._on_msg, wake=self.signal) for s in subjects]

    def _on_msg(self, msg: Msg) -> None:  # from the reader: never blocks
        self.q.append(msg)
        self.signal.set()

    def _ended(self, what: str) -> BaseException | None:
        """Why waiting must end now though nothing is queued (None: go on waiting)."""
        return None

    def _no_message(self, what: str, timeout: float) -> str:
        return f"{what}: no answer from the server in {timeout:g}s"

    async def wait(self, timeout: float | None, what: str) -> None:
        """Return once a message is queued; ``TimeoutError`` after ``timeout`` seconds
        without one (None: no limit), or what :meth:`_ended` gives."""
        q = self.q
        signal = self.signal
        deadline = None if timeout is None else prims.monotonic() + timeout
        while not q:
            exc = self._ended(what)
            if exc is not None:
                raise exc
            left = None
            if deadline is not None:
                left = deadline - prims.monotonic()
                if left <= 0:
                    raise TimeoutError(self._no_message(what, timeout or 0.0))
            signal.clear()
            if q or self._ended(what) is not None:  # came between the checks and the clear
                continue
            await signal.wait(left)

    def unsubscribe(self) -> None:
        for s in self.subs:
            if s.is_valid:
                try:
                    self._link.unsubscribe(s)
                except Exception:  # the connection is closed: nothing to undo
                    pass


class Inbox(Mailbox):
    """A private inbox whose replies the reader queues for one waiting caller
    (``wait()``, ``take()``); waiting ends early when the connection is lost or closed."""

    __slots__ = ("_unhook", "lost")

    def __init__(self, link: _api.Link) -> None:
        self.lost: BaseException | None = None
        super().__init__(link, [link.new_inbox()])
        self._unhook = link.on_lost(self._on_lost)

    @property
    def sub(self) -> Any:
        return self.subs[0]

    @property
    def subject(self) -> str:
        return self.subs[0].subject

    def _on_lost(self, exc: BaseException) -> None:
        if self.lost is None:
            self.lost = exc
        self.signal.set()

    def _ended(self, what: str) -> BaseException | None:
        if self.lost is not None:
            return ConnectionLostError(f"{what}: connection lost ({self.lost})")
        if not self.subs[0].is_valid:
            return ConnectionClosedError(f"{what}: connection closed")
        return None

    async def take(self, timeout: float, what: str) -> Msg:
        """The next message (see :meth:`wait`)."""
        await self.wait(timeout, what)
        msg: Msg = self.q.popleft()
        return msg

    def close(self) -> None:
        self._unhook()
        self.unsubscribe()
