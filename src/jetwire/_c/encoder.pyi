"""Stub of the compiled ``jetwire._c.encoder`` (twin: ``jetwire.protocol._pure.encoder``)."""
from collections.abc import Callable
from typing import Any

from jetwire._c.lock import WriteLock as WriteLock

_Buffer = bytes | bytearray | memoryview

DEFAULT_MAX_PAYLOAD: int

def validate_subject(subject: str) -> None: ...
def validate_filter(subject: str, queue: str | None = None) -> None: ...
def append_pub(buf: bytearray, subject: str, reply: str | None, data: _Buffer) -> None: ...
def append_hpub(buf: bytearray, subject: str, reply: str | None, hdr: _Buffer, data: _Buffer) -> None: ...
def append_sub(buf: bytearray, subject: str, queue: str | None, sid: int) -> None: ...
def append_unsub(buf: bytearray, sid: int, max_msgs: int | None = 0) -> None: ...

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
    on_first: Callable[[], Any] | None
    on_full: Callable[[], Any] | None
    slow: Callable[[str, _Buffer, str | None, Any], Any] | None
    ret: Any
    lock: Any
    def __init__(
        self,
        slow: Callable[[str, _Buffer, str | None, Any], Any] | None = None,
        max_payload: int = ...,
        threshold: int = 65536,
        on_first: Callable[[], Any] | None = None,
        on_full: Callable[[], Any] | None = None,
        ret: Any = None,
        lock: Any = None,
    ) -> None: ...
    def take(self) -> bytearray | bytes: ...
    def publish(self, subject: str, data: _Buffer = b"", reply: str | None = None, headers: Any = None) -> Any: ...
    def append_pub(self, subject: str, reply: str | None, data: _Buffer) -> None: ...
    def append_hpub(self, subject: str, reply: str | None, hdr: _Buffer, data: _Buffer) -> None: ...
