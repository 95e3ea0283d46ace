"""``Msg``: a received (or to-be-published) message. One class for both flavours.

Network methods delegate to the connection that delivered the message, so in
``jetwire.aio`` they return awaitables and in ``jetwire`` they block.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import _impl
from .errors import NatsError

if TYPE_CHECKING:
    from .protocol.headers import HeadersInit

_ACK = b"+ACK"
_NAK = b"-NAK"
_WPI = b"+WPI"
_TERM = b"+TERM"


class Msg(_impl.MsgBase):
    """A NATS message: ``subject``, ``reply``, ``data``, ``headers``, ``sid``."""

    __slots__ = ()

    def __repr__(self) -> str:
        data = self.data
        shown = data[:32] + (b"..." if len(data) > 32 else b"")
        return f"<Msg subject={self.subject!r} reply={self.reply!r} data={shown!r} headers={self.headers!r}>"

    def _conn(self) -> Any:
        client = self._client
        if client is None:
            raise NatsError("message is not bound to a connection")
        return client

    def respond(self, data: bytes | bytearray | memoryview = b"", headers: HeadersInit | None = None) -> Any:
        """Publish ``data`` to this message's reply subject."""
        if not self.reply:
            raise NatsError("message has no reply subject")
        return self._conn().publish(self.reply, data, headers=headers)

    # -- JetStream (``metadata``, ``ack`` and ``_ack`` are MsgBase's: compiled code) ----
    def ack_sync(self, timeout: float | None = None) -> Any:
        """Acknowledge and wait for the server to confirm (double ack)."""
        reply = self._ack_subject()  # checked: bound, not acked yet, a JetStream message
        client: Any = self._client
        return client.link.double_ack(self, reply, _ACK, timeout)

    double_ack = ack_sync

    def nak(self, delay: float | None = None) -> Any:
        """Negative-acknowledge: redeliver, after ``delay`` seconds when given."""
        return self._ack(_NAK if delay is None else b'-NAK {"delay":%d}' % int(delay * 1e9), True)

    def in_progress(self) -> Any:
        """Tell the server work is ongoing (resets the ack wait); may be sent many times."""
        return self._ack(_WPI, False)

    def term(self, reason: str | None = None) -> Any:
        """Stop redelivery of this message."""
        return self._ack(_TERM if not reason else _TERM + b" " + reason.encode(), True)
