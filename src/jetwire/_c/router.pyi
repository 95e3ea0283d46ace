"""Stub of the compiled ``jetwire._c.router`` (twin: ``jetwire.protocol._pure.router``)."""
from typing import Any, Callable, Dict, List, Optional, Tuple

from jetwire._c.msg import MsgBase

class SubState:
    _client: Any
    _direct: Optional[Callable[[Any], None]]
    _pending: Any
    _signal: Any
    _lock: Any
    delivered: int
    _max: int
    _pending_bytes: int
    _pmsgs_limit: int
    _pbytes_limit: int
    _dropped: int
    _slow: bool
    def _next(self) -> Optional[MsgBase]: ...
    def _deliver(self, cb: Callable[[Any], Any], report: Callable[[BaseException], Any]) -> Any: ...
    def _discard(self) -> None: ...

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
    def feed(self, data: Any) -> None: ...
    def route(self, events: List[Any]) -> None: ...
