"""Stub of the compiled ``jetwire._c.router`` (twin: ``jetwire.protocol._pure.router``)."""
from collections.abc import Callable
from typing import Any

from jetwire._c.msg import MsgBase

class SubState:
    _client: Any
    _direct: Callable[[Any], None] | None
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
    def _next(self) -> MsgBase | None: ...
    def _deliver(self, cb: Callable[[Any], Any], report: Callable[[BaseException], Any]) -> Any: ...
    def discard_pending(self) -> None: ...

class Router:
    parser: Any
    subs: dict[int, SubState]
    control: Callable[[tuple[int, Any]], Any] | None
    on_max: Callable[[SubState], Any] | None
    on_slow: Callable[[SubState], Any] | None
    in_msgs: int
    in_bytes: int
    def __init__(
        self,
        parser: Any,
        subs: dict[int, SubState],
        control: Callable[[tuple[int, Any]], Any] | None = None,
        on_max: Callable[[SubState], Any] | None = None,
        on_slow: Callable[[SubState], Any] | None = None,
    ) -> None: ...
    def feed(self, data: Any) -> None: ...
    def route(self, events: list[Any]) -> None: ...
