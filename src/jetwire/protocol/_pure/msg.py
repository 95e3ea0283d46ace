"""``MsgBase`` (twin of the compiled ``jetwire._c.msg``)."""
from __future__ import annotations

from typing import Any, Optional

from ...errors import NotJSMessageError
from ..headers import Headers
from .metadata import MsgMetadata, parse_metadata


class MsgBase:
    """Base of ``jetwire.Msg``: the fields of a delivered or to-be-published message.

    The parser creates instances without calling ``__init__``; ``__init__`` is for
    users building a message by hand.
    """

    __slots__ = ("subject", "reply", "data", "headers", "sid", "_client", "_ackd", "_meta")

    def __init__(self, subject: str = "", data: Any = b"", reply: Optional[str] = None, headers: Any = None, sid: int = 0) -> None:
        self.subject = subject
        self.data = data if type(data) is bytes else bytes(data)
        self.reply = reply
        if headers is not None and not isinstance(headers, Headers):
            headers = Headers(headers)
        self.headers = headers
        self.sid = sid
        self._client = None
        self._ackd = False
        self._meta: Optional[MsgMetadata] = None

    @property
    def metadata(self) -> MsgMetadata:
        """JetStream metadata parsed from the ack subject, once (``NotJSMessageError`` when
        the message has none)."""
        m: Optional[MsgMetadata] = self._meta
        if m is None:
            if not self.reply:
                raise NotJSMessageError("message has no JetStream ack subject")
            m = self._meta = parse_metadata(self.reply)
        return m

    def __repr__(self) -> str:
        data = self.data
        shown = data[:32] + (b"..." if len(data) > 32 else b"")
        return (
            f"<{type(self).__name__} subject={self.subject!r} sid={self.sid!r} reply={self.reply!r} "
            f"data={shown!r} headers={self.headers!r}>"
        )


