"""Stub of the compiled ``jetwire._c.encoder`` (twin: ``jetwire.protocol._pure.encoder``)."""
from typing import Any, Callable, Optional, Union

from jetwire._c.lock import WriteLock as WriteLock

_Buffer = Union[bytes, bytearray, memoryview]

DEFAULT_MAX_PAYLOAD: int

def validate_subject(subject: str) -> None: ...
def validate_filter(subject: str, queue: Optional[str] = None) -> None: ...
def append_pub(buf: bytearray, subject: str, reply: Optional[str], data: _Buffer) -> None: ...
def append_hpub(buf: bytearray, subject: str, reply: Optional[str], hdr: _Buffer, data: _Buffer) -> None: ...
def append_sub(buf: bytearray, subject: str, queue: Optional[str], sid: int) -> None: ...
def append_unsub(buf: bytearray, sid: int, max_msgs: Optional[int] = 0) -> None: ...

class Done:
    def __await__(self) -> Any: ...

DONE: Done

class Outbox:
    buf: bytearray
    connected: bool
    congested: bool
    max_payload: int
    out_msgs: int
    out_bytes: int
    threshold: int
    on_first: Optional[Callable[[], Any]]
    on_full: Optional[Callable[[], Any]]
    slow: Optional[Callable[[str, _Buffer, Optional[str], Any], Any]]
    ret: Any
    lock: Any
    def __init__(
        self,
        slow: Optional[Callable[[str, _Buffer, Optional[str], Any], Any]] = None,
        max_payload: int = ...,
        threshold: int = 65536,
        on_first: Optional[Callable[[], Any]] = None,
        on_full: Optional[Callable[[], Any]] = None,
        ret: Any = None,
        lock: Any = None,
    ) -> None: ...
    def take(self) -> Union[bytearray, bytes]: ...
    def publish(self, subject: str, data: _Buffer = b"", reply: Optional[str] = None, headers: Any = None) -> Any: ...
    def append_pub(self, subject: str, reply: Optional[str], data: _Buffer) -> None: ...
    def append_hpub(self, subject: str, reply: Optional[str], hdr: _Buffer, data: _Buffer) -> None: ...
