"""Stub of the compiled ``jetwire._c.msg`` (twin: ``jetwire.protocol._pure.msg``)."""
from typing import Any, Dict, List, Optional, Union

from jetwire.protocol.headers import Headers

from .metadata import MsgMetadata

_Buffer = Union[bytes, bytearray, memoryview]

class MsgBase:
    subject: str
    reply: Optional[str]
    data: bytes
    headers: Optional[Headers]
    sid: int
    _client: Any
    _ackd: bool
    _meta: Any
    def __init__(
        self,
        subject: str = "",
        data: _Buffer = b"",
        reply: Optional[str] = None,
        headers: Union[Headers, Dict[str, Union[str, List[str]]], None] = None,
        sid: int = 0,
    ) -> None: ...
    @property
    def metadata(self) -> MsgMetadata: ...
    def _ack_subject(self) -> str: ...
    def _ack(self, payload: bytes, terminal: bool) -> Any: ...
    def ack(self) -> Any: ...
