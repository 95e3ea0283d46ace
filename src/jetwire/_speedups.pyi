"""Type stubs of the compiled protocol module (same API as ``jetwire.protocol._pure``)."""
from typing import Any, Callable, Dict, List, Optional, Tuple, Type, Union

from jetwire.protocol.headers import Headers

_Buffer = Union[bytes, bytearray, memoryview]

OP_INFO: int
OP_PING: int
OP_PONG: int
OP_OK: int
OP_ERR: int
OP_FRAME_ERROR: int
PING: bytes
PONG: bytes
DEFAULT_MAX_PAYLOAD: int

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

Event = Union[MsgBase, Tuple[int, Any]]

class Parser:
    def __init__(
        self,
        msg_cls: Optional[Type[MsgBase]] = None,
        max_control_line: int = 4096,
        max_payload: int = ...,
    ) -> None: ...
    @property
    def buffered(self) -> int: ...
    def feed(self, data: _Buffer) -> List[Any]: ...
    def reset(self) -> None: ...

def decode_headers(raw: _Buffer) -> Headers: ...
def encode_headers(headers: Union[Headers, Dict[str, Union[str, List[str], Tuple[str, ...]]], None]) -> bytes: ...
def parse_metadata_fields(
    subject: str,
) -> Tuple[Optional[str], Optional[str], str, str, int, int, int, int, int]: ...
def validate_subject(subject: str) -> None: ...
def append_pub(buf: bytearray, subject: str, reply: Optional[str], data: _Buffer) -> None: ...
def append_hpub(buf: bytearray, subject: str, reply: Optional[str], hdr: _Buffer, data: _Buffer) -> None: ...
def append_sub(buf: bytearray, subject: str, queue: Optional[str], sid: int) -> None: ...
def append_unsub(buf: bytearray, sid: int, max_msgs: Optional[int] = 0) -> None: ...

class Done:
    def __await__(self) -> Any: ...

DONE: Done

class WriteLock:
    def acquire(self, blocking: bool = ..., timeout: float = ...) -> bool: ...
    def release(self) -> None: ...
    def locked(self) -> bool: ...
    def __enter__(self) -> bool: ...
    def __exit__(self, *exc: Any) -> bool: ...

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

class SubState:
    _client: Any
    _direct: Optional[Callable[[Any], None]]
    _pending: Any
    _signal: Any
    delivered: int
    _max: int
    _pending_bytes: int
    _pmsgs_limit: int
    _pbytes_limit: int
    _dropped: int
    _slow: bool
    def _next(self) -> Optional[MsgBase]: ...
    def _deliver(self, cb: Callable[[Any], Any], report: Callable[[BaseException], Any]) -> Any: ...

class Router:
    parser: Any
    subs: Dict[int, SubState]
    control: Optional[Callable[[Tuple[int, Any]], Any]]
    on_max: Optional[Callable[[SubState], Any]]
    on_slow: Optional[Callable[[SubState], Any]]
    in_msgs: int
    in_bytes: int
    def __init__(
        self,
        parser: Any,
        subs: Dict[int, SubState],
        control: Optional[Callable[[Tuple[int, Any]], Any]] = None,
        on_max: Optional[Callable[[SubState], Any]] = None,
        on_slow: Optional[Callable[[SubState], Any]] = None,
    ) -> None: ...
    def feed(self, data: _Buffer) -> None: ...
    def route(self, events: List[Any]) -> None: ...

class AckMux:
    prefix: str
    _plen: int
    pending: Dict[str, tuple]
    _n: int
    stall_waiters: List[Any]
    complete_waiters: List[Any]
    wake_at: int
    make_ack: Any
    def __init__(self, prefix: str, make_ack: Any = None) -> None: ...
    def add(self, fut: Any, subject: str, hdr: Optional[bytes], data: Any, retries: int, retry_wait: float) -> str: ...
    def on_msg(self, msg: Any) -> None: ...
    def _other(self, msg: Any, token: str, entry: tuple) -> None: ...
    def _after_pop(self) -> None: ...
