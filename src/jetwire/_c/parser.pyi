"""Stub of the compiled ``jetwire._c.parser`` (twin: ``jetwire.protocol._pure.parser``)."""
from typing import Any

from jetwire._c.msg import MsgBase

_Buffer = bytes | bytearray | memoryview

OP_INFO: int
OP_PING: int
OP_PONG: int
OP_OK: int
OP_ERR: int
OP_FRAME_ERROR: int
PING: bytes
PONG: bytes
DEFAULT_MAX_PAYLOAD: int

Event = MsgBase | tuple[int, Any]

class Parser:
    @property
    def sinks(self) -> dict[int, Any]: ...
    taken_msgs: int
    taken_bytes: int
    def __init__(
        self,
        msg_cls: type[MsgBase] | None = None,
        max_control_line: int = 1048576,
        max_payload: int = ...,
    ) -> None: ...
    @property
    def buffered(self) -> int: ...
    def feed(self, data: _Buffer) -> list[Any]: ...
    def reset(self) -> None: ...
