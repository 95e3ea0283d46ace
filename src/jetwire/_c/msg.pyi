"""Stub of the compiled ``jetwire._c.msg`` (twin: ``jetwire.protocol._pure.msg``)."""
from typing import Any

from jetwire.protocol.headers import Headers

from .metadata import MsgMetadata

_Buffer = bytes | bytearray | memoryview

class MsgBase:
    subject: str
    reply: str | None
    data: bytes
    headers: Headers | None
    sid: int
    _client: Any
    _ackd: bool
    _meta: Any
    def __init__(
        self,
        subject: str = "",
        data: _Buffer = b"",
        reply: str | None = None,
        headers: Headers | dict[str, str | list[str]] | None = None,
        sid: int = 0,
    ) -> None: ...
    @property
    def metadata(self) -> MsgMetadata: ...
    def _ack_subject(self) -> str: ...
    def _ack(self, payload: bytes, terminal: bool) -> Any: ...
    def ack(self) -> Any: ...

class FrameSink:
    def take_frame(self, subject: bytes, reply: bytes | None, hdr: bytes | None, data: bytes) -> bool: ...
