"""The sans-IO connection core: protocol state shared by the blocking and asyncio clients.

Nothing here touches a socket, a thread or an event loop. Drivers feed received bytes
to :meth:`ConnectionCore.feed`, take bytes to send from ``outbox`` (``outbox.take()``,
under the writer's lock) and act on the ``actions`` the core queues (callbacks to run,
the connection to drop).

The write buffer lives in ``outbox`` (an ``_impl.Outbox``: the compiled publish fast
path and its pure twin); ``wbuf``, ``max_payload``, ``out_msgs`` and ``out_bytes`` are
views of it, and setting ``status`` keeps ``outbox.connected`` equal to
``status == CONNECTED``.
"""
from __future__ import annotations

from collections import deque
from typing import Any, Callable, Deque, Dict, List, Optional, Tuple

import orjson

from . import _impl
from ._nuid import NUID
from .auth import Credentials
from .errors import (
    AuthorizationError,
    NoRespondersError,
    PermissionsError,
    ProtocolError,
    SlowConsumerError,
    StaleConnectionError,
)
from .msg import Msg
from .options import Options, ServerPool

OP_INFO = _impl.OP_INFO
OP_PING = _impl.OP_PING
OP_PONG = _impl.OP_PONG
OP_OK = _impl.OP_OK
OP_ERR = _impl.OP_ERR
PING = _impl.PING
PONG = _impl.PONG

LANG = "python3"
VERSION = "0.1.0"

# connection states
CONNECTING = "CONNECTING"
CONNECTED = "CONNECTED"
RECONNECTING = "RECONNECTING"
DRAINING_SUBS = "DRAINING_SUBS"
DRAINING_PUBS = "DRAINING_PUBS"
CLOSED = "CLOSED"
DISCONNECTED = "DISCONNECTED"

# actions queued for the driver
ACT_ERROR = 1  # (ACT_ERROR, exc): call error_cb
ACT_DISCOVERED = 2  # (ACT_DISCOVERED, urls)
ACT_LDM = 3  # (ACT_LDM, None)
ACT_FATAL = 4  # (ACT_FATAL, exc): drop the connection (reconnect or close)
ACT_PONG = 5  # the server pinged: send a PONG


class SubscriptionBase(_impl.SubState):
    """Per-subscription state the core manages: pending queue, limits, counters.

    The fields the receive path touches for every message (``_direct``, ``_pending``,
    ``_pending_bytes``, the limits, ``delivered``, ``_max``, ``_dropped``, ``_slow``,
    ``_signal``) live in the base ``_impl.SubState`` (compiled, or its pure twin).
    """

    __slots__ = ("_core", "sid", "subject", "queue", "_cb", "_closed", "_task", "_draining", "_jsi", "__weakref__")

    def __init__(self, core: "ConnectionCore", sid: int, subject: str, queue: Optional[str],
                 cb: Optional[Callable[..., Any]], signal: Any, pending_msgs_limit: int,
                 pending_bytes_limit: int) -> None:
        self._core = core
        self._client = core.client  # what messages handed out are bound to
        self.sid = sid
        self.subject = subject
        self.queue = queue
        self._cb = cb
        self._direct: Optional[Callable[[Msg], None]] = None
        self._pending: Deque[Msg] = deque()
        self._pending_bytes = 0
        self._pmsgs_limit = pending_msgs_limit
        self._pbytes_limit = pending_bytes_limit
        self._dropped = 0
        self._slow = False
        self.delivered = 0
        self._max = 0
        self._closed = False
        self._signal = signal
        self._task: Any = None
        self._draining = False
        self._jsi: Any = None

    @property
    def pending_msgs(self) -> int:
        return len(self._pending)

    @property
    def pending_bytes(self) -> int:
        return self._pending_bytes

    @property
    def dropped(self) -> int:
        return self._dropped

    @property
    def is_valid(self) -> bool:
        return not self._closed

    def _take(self) -> Optional[Msg]:
        """Pop the next pending message (or None)."""
        msg = self._next()
        if msg is not None and self._slow and len(self._pending) < self._pmsgs_limit // 2:
            self._slow = False
        return msg

    def _mark_closed(self) -> None:
        self._closed = True
        self._signal.set()


class ConnectionCore:
    """Protocol state of one client connection, free of I/O."""

    def __init__(self, opts: Options, client: Any) -> None:
        self.opts = opts
        self.client = client
        self.parser = _impl.Parser(Msg, opts.max_control_line)
        self.outbox = _impl.Outbox(max_payload=1024 * 1024)
        self.subs: Dict[int, SubscriptionBase] = {}
        self.router = _impl.Router(self.parser, self.subs, self._control, self._auto_unsub_done,
                                   self._slow_consumer)
        self._next_sid = 0
        self.pongs: Deque[Any] = deque()
        self.pings_out = 0
        self.actions: List[Tuple[int, Any]] = []
        self.pool = ServerPool(opts.servers, randomize=not opts.dont_randomize)
        self.creds = Credentials(opts.user, opts.password, opts.token, opts.nkey_seed, opts.creds)
        self.info: Dict[str, Any] = {}
        self.headers_ok = True
        self._status = DISCONNECTED
        self.handshaking = False
        self.reconnects = 0
        self.last_error: Optional[BaseException] = None
        self._nuid = NUID()
        # request/reply multiplexing over one wildcard subscription
        self.resp_sub: Optional[SubscriptionBase] = None
        self.resp_prefix = ""
        self._resp_prefix_len = 0
        self.resp_map: Dict[str, Any] = {}
        self._resp_n = 0

    # -- state kept in the outbox -------------------------------------------------------
    @property
    def status(self) -> str:
        return self._status

    @status.setter
    def status(self, value: str) -> None:
        self._status = value
        self.outbox.connected = value == CONNECTED  # the publish fast path runs only then

    @property
    def wbuf(self) -> bytearray:
        """The write buffer (``outbox.buf``). Append to it only holding the writer's lock."""
        return self.outbox.buf

    @wbuf.setter
    def wbuf(self, value: bytearray) -> None:
        self.outbox.buf = value

    @property
    def max_payload(self) -> int:
        return self.outbox.max_payload

    @max_payload.setter
    def max_payload(self, value: int) -> None:
        self.outbox.max_payload = min(int(value), 1 << 62)

    @property
    def in_msgs(self) -> int:
        return self.router.in_msgs

    @in_msgs.setter
    def in_msgs(self, value: int) -> None:
        self.router.in_msgs = value

    @property
    def in_bytes(self) -> int:
        return self.router.in_bytes

    @in_bytes.setter
    def in_bytes(self, value: int) -> None:
        self.router.in_bytes = value

    @property
    def out_msgs(self) -> int:
        return self.outbox.out_msgs

    @out_msgs.setter
    def out_msgs(self, value: int) -> None:
        self.outbox.out_msgs = value

    @property
    def out_bytes(self) -> int:
        return self.outbox.out_bytes

    @out_bytes.setter
    def out_bytes(self, value: int) -> None:
        self.outbox.out_bytes = value

    # -- ids -------------------------------------------------------------------------
    def new_inbox(self) -> str:
        return f"{self.opts.inbox_prefix}.{self._nuid.next()}"

    def next_sid(self) -> int:
        self._next_sid += 1
        return self._next_sid

    def next_resp_token(self) -> str:
        self._resp_n += 1
        return str(self._resp_n)

    def setup_resp_mux(self, sub: SubscriptionBase) -> None:
        sub._direct = self._on_response
        self.resp_sub = sub

    # -- handshake -------------------------------------------------------------------
    def process_info(self, info: Dict[str, Any], initial: bool) -> None:
        self.info = info
        self.max_payload = int(info.get("max_payload", self.max_payload))
        self.headers_ok = bool(info.get("headers", False))
        urls = info.get("connect_urls") or []
        if urls:
            added = self.pool.add_discovered(urls, tls=bool(info.get("tls_required")))
            if added and not initial:
                self.actions.append((ACT_DISCOVERED, added))
        if info.get("ldm"):
            self.actions.append((ACT_LDM, None))

    def connect_line(self, url_user: Optional[str], url_password: Optional[str]) -> bytes:
        o = self.opts
        fields: Dict[str, Any] = {
            "verbose": o.verbose,
            "pedantic": o.pedantic,
            "lang": LANG,
            "version": VERSION,
            "protocol": 1,
            "headers": True,
            "no_responders": True,
            "tls_required": bool(o.tls),
        }
        if o.name:
            fields["name"] = o.name
        if o.no_echo:
            fields["echo"] = False
        fields.update(self.creds.connect_fields(self.info, url_user, url_password))
        return b"CONNECT " + orjson.dumps(fields) + b"\r\n"

    def resubscribe_bytes(self) -> bytes:
        """SUB (and UNSUB for auto-unsubscribe remainders) of every live subscription."""
        buf = bytearray()
        for sub in list(self.subs.values()):
            if sub._closed:
                continue
            _impl.append_sub(buf, sub.subject, sub.queue, sub.sid)
            if sub._max:
                left = sub._max - sub.delivered
                if left <= 0:
                    continue
                _impl.append_unsub(buf, sub.sid, left)
        return bytes(buf)

    # -- receiving -------------------------------------------------------------------
    def feed(self, data: bytes) -> None:
        """Parse ``data`` and route every event (``router``: compiled, or its pure twin).

        Raises ProtocolError on garbage."""
        self.router.feed(data)

    def _slow_consumer(self, sub: SubscriptionBase) -> None:
        self.actions.append((ACT_ERROR, SlowConsumerError(
            f"slow consumer on subject {sub.subject!r}, messages dropped", subject=sub.subject, sid=sub.sid)))

    def _auto_unsub_done(self, sub: SubscriptionBase) -> None:
        self.subs.pop(sub.sid, None)
        sub._closed = True
        sub._signal.set()

    def _control(self, ev: Tuple[int, Any]) -> None:
        op = ev[0]
        if op == OP_PING:
            self.actions.append((ACT_PONG, None))
        elif op == OP_PONG:
            self.pings_out = 0
            if self.pongs:
                fut = self.pongs.popleft()
                if fut is not None and not fut.done():
                    fut.set_result(True)
        elif op == OP_INFO:
            self.process_info(ev[1], initial=False)
        elif op == OP_ERR:
            self._on_err(ev[1])
        # +OK needs nothing

    def _on_err(self, text: str) -> None:
        low = text.lower()
        if low.startswith("permissions violation"):
            self.actions.append((ACT_ERROR, PermissionsError(text)))
            return
        if "authorization violation" in low or "authentication" in low or "user authentication" in low \
                or "account authentication" in low:
            err: BaseException = AuthorizationError(text)
        elif "stale connection" in low:
            err = StaleConnectionError(text)
        else:
            err = ProtocolError(f"server error: {text}")
        self.last_error = err
        if self.handshaking and self.pongs:
            fut = self.pongs.popleft()
            if fut is not None and not fut.done():
                fut.set_exception(err)
            return
        self.actions.append((ACT_FATAL, err))

    def _on_response(self, msg: Msg) -> None:
        token = msg.subject[self._resp_prefix_len:]
        fut = self.resp_map.pop(token, None)
        if fut is None or fut.done():
            return
        h = msg.headers
        if h is not None and h.status == "503" and not msg.data:
            fut.set_exception(NoRespondersError(f"no responders for request"))
        else:
            fut.set_result(msg)

    def set_resp_prefix(self, prefix: str) -> None:
        self.resp_prefix = prefix
        self._resp_prefix_len = len(prefix)

    # -- pings -----------------------------------------------------------------------
    def ping_tick(self) -> Tuple[bool, Optional[BaseException]]:
        """Called every ping_interval: (send a PING?, stale-connection error or None)."""
        if self.status != CONNECTED:
            return False, None
        self.pings_out += 1
        if self.pings_out > self.opts.max_pings_outstanding:
            return False, StaleConnectionError("stale connection: server did not answer pings")
        return True, None

    def fail_pongs(self, exc: BaseException) -> None:
        while self.pongs:
            fut = self.pongs.popleft()
            if fut is not None and not fut.done():
                fut.set_exception(exc)
        self.pings_out = 0

    def take_actions(self) -> List[Tuple[int, Any]]:
        acts = self.actions
        self.actions = []
        return acts

    def stats(self) -> Dict[str, int]:
        return {
            "in_msgs": self.in_msgs,
            "out_msgs": self.out_msgs,
            "in_bytes": self.in_bytes,
            "out_bytes": self.out_bytes,
            "reconnects": self.reconnects,
        }
