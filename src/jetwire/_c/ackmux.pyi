"""Stub of the compiled ``jetwire._c.ackmux`` (twin: ``jetwire.protocol._pure.ackmux``)."""
from concurrent.futures import Future
from typing import Any, Callable, Dict, List, Optional

class AckFuture(Future[Any]):
    def __init__(self) -> None: ...

class AckMux:
    prefix: str
    _plen: int
    pending: Dict[str, tuple]
    _n: int
    stall_waiters: List[Any]
    complete_waiters: List[Any]
    wake_at: int
    make_ack: Any
    lock: Any
    def __init__(self, prefix: str, make_ack: Any = None, lock: Any = None) -> None: ...
    def add(self, fut: Any, subject: str, hdr: Optional[bytes], data: Any, retries: int, retry_wait: float) -> str: ...
    def submit(self, fut: Any, subject: str, data: Any, retries: int, retry_wait: float,
               publish: Callable[[str, Any, str], Any]) -> Any: ...
    def on_msg(self, msg: Any) -> None: ...
    def _other(self, msg: Any, token: str, entry: tuple) -> None: ...
    def _after_pop(self) -> None: ...
