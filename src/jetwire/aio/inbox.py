"""A private inbox whose replies the reader queues for one caller (asyncio source;
``jetwire/_sync/inbox.py`` is generated from it). Used where one request brings many
replies: snapshot chunks and restore answers, batched direct gets."""
from __future__ import annotations

from collections import deque
from typing import Any, Deque, Optional

from ..errors import ConnectionClosedError, ConnectionLostError, TimeoutError
from ..msg import Msg
from . import _prims as prims

__all__ = ["Inbox"]


class Inbox:
    """A private inbox whose messages the reader queues for one waiting caller
    (``wait()``, ``take()``); waiting ends early when the connection is lost or closed."""

    __slots__ = ("_link", "q", "signal", "lost", "sub", "_unhook", "__weakref__")

    def __init__(self, link: Any) -> None:
        self._link = link
        self.q: Deque[Any] = deque()
        self.signal = prims.Signal()
        self.lost: Optional[BaseException] = None
        self.sub = link.subscribe_direct(link.new_inbox(), self._on_msg, wake=self.signal)
        self._unhook = link.on_lost(self._on_lost)

    @property
    def subject(self) -> str:
        return self.sub.subject

    def _on_msg(self, msg: Msg) -> None:  # from the reader: never blocks
        self.q.append(msg)
        self.signal.set()

    def _on_lost(self, exc: BaseException) -> None:
        if self.lost is None:
            self.lost = exc
        self.signal.set()

    async def wait(self, timeout: float, what: str) -> None:
        """Return once a message is queued; ``TimeoutError`` after ``timeout`` seconds
        without one, ``ConnectionLostError``/``ConnectionClosedError`` when the
        connection goes."""
        q = self.q
        signal = self.signal
        deadline = prims.monotonic() + timeout
        while not q:
            if self.lost is not None:
                raise ConnectionLostError(f"{what}: connection lost ({self.lost})")
            if not self.sub.is_valid:
                raise ConnectionClosedError(f"{what}: connection closed")
            left = deadline - prims.monotonic()
            if left <= 0:
                raise TimeoutError(f"{what}: no answer from the server in {timeout:g}s")
            signal.clear()
            if q or self.lost is not None:
                continue
            await signal.wait(left)

    async def take(self, timeout: float, what: str) -> Msg:
        """The next message (see :meth:`wait`)."""
        await self.wait(timeout, what)
        return self.q.popleft()

    def close(self) -> None:
        self._unhook()
        if self.sub.is_valid:
            self._link.unsubscribe(self.sub)
