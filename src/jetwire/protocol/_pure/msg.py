"""``MsgBase`` (twin of the compiled ``jetwire._c.msg``)."""
from __future__ import annotations

from typing import Any

from ...errors import MsgAlreadyAckedError, NatsError, NotJSMessageError, payload_type_error
from ..headers import Headers
from .metadata import MsgMetadata, parse_metadata


def _as_bytes(data: Any) -> bytes:
    """A message's data given by hand: a copy of a bytes-like object (``bytes(5)`` would
    be five zero bytes), or the payload ``TypeError``."""
    try:
        return bytes(memoryview(data))
    except TypeError:
        raise payload_type_error(data) from None


class MsgBase:
    """Base of ``jetwire.Msg``: the fields of a delivered or to-be-published message.

    The parser creates instances without calling ``__init__``; ``__init__`` is for
    users building a message by hand.
    """

    __slots__ = ("_ackd", "_client", "_meta", "data", "headers", "reply", "sid", "subject")

    def __init__(self, subject: str = "", data: Any = b"", reply: str | None = None, headers: Any = None, sid: int = 0) -> None:
        self.subject = subject
        self.data = data if type(data) is bytes else _as_bytes(data)
        self.reply = reply
        if headers is not None and not isinstance(headers, Headers):
            headers = Headers(headers)
        self.headers: Headers | None = headers
        self.sid = sid
        self._client: Any = None
        self._ackd = False
        self._meta: MsgMetadata | None = None

    @property
    def metadata(self) -> MsgMetadata:
        """JetStream metadata parsed from the ack subject, once (``NotJSMessageError`` when
        the message has none)."""
        m: MsgMetadata | None = self._meta
        if m is None:
            if not self.reply:
                raise NotJSMessageError("message has no JetStream ack subject")
            m = self._meta = parse_metadata(self.reply)
        return m

    # -- JetStream acks: fire and forget, through the connection that delivered it ----
    def _ack_subject(self) -> str:
        """The ack subject, after checking the message can still be acknowledged."""
        if self._client is None:
            raise NatsError("message is not bound to a connection")
        if self._ackd:
            raise MsgAlreadyAckedError("message was already acknowledged")
        reply = self.reply
        if not reply or not reply.startswith("$JS.ACK."):
            raise NotJSMessageError("message is not a JetStream message")
        return reply

    def _ack(self, payload: bytes, terminal: bool) -> Any:
        """Send ``payload`` to the ack subject now: what the connection's ``publish``
        returns (in ``jetwire.aio`` an awaitable). ``terminal``: no ack may follow."""
        reply = self._ack_subject()
        r = self._client.publish(reply, payload)
        if terminal:
            self._ackd = True
        return r

    def ack(self) -> Any:
        """Acknowledge (fire and forget)."""
        return self._ack(b"+ACK", True)

    def __repr__(self) -> str:
        data = self.data
        shown = data[:32] + (b"..." if len(data) > 32 else b"")
        return (
            f"<{type(self).__name__} subject={self.subject!r} sid={self.sid!r} reply={self.reply!r} "
            f"data={shown!r} headers={self.headers!r}>"
        )




class FrameSink:
    """A subscription handler that may take its messages straight from the parser's
    buffer, before any message object is built. The parser offers it every MSG/HMSG frame
    of a subscription whose handler it is (``Parser.sinks``: sid -> sink):
    ``take(subject, reply, hdr, data)`` gets the frame's parts as bytes (``reply`` and
    ``hdr`` None when absent) and returns True when it took the frame, False to have it
    built into a message and routed as usual (to the handler's ``__call__``, after the
    frames of the same chunk that were taken). ``take`` must not raise. Taken frames count
    in the router's ``in_msgs`` / ``in_bytes``, not in the subscription's ``delivered``."""

    __slots__ = ()

    def take(self, subject: bytes, reply: bytes | None, hdr: bytes | None, data: bytes) -> bool:
        return False

    def take_frame(self, subject: bytes, reply: bytes | None, hdr: bytes | None, data: bytes) -> bool:
        """Python entry to ``take`` (the compiled twin's ``take`` is C-only)."""
        if type(subject) is not bytes or type(data) is not bytes or not (reply is None or type(reply) is bytes) \
                or not (hdr is None or type(hdr) is bytes):
            raise TypeError("take_frame takes bytes (reply and hdr: bytes or None)")
        return bool(self.take(subject, reply, hdr, data))
