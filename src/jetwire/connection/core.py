"""The sans-IO connection core: protocol state shared by the blocking and asyncio clients.

Nothing here touches a socket, a thread, an event loop, a future or the client. The
driver (each flavour's ``client.py``) feeds received bytes to
:meth:`ConnectionCore.receive_data`, which routes every message to its subscription
(compiled ``Router``, or its pure twin) and returns the connection-level events of that
read (:class:`PingReceived`, :class:`PongReceived`, :class:`InfoReceived`,
:class:`ServerError`, :class:`SubscriptionError`); the driver acts on them (send a PONG,
resolve the flush waiters, call ``error_cb``, drop the connection). Bytes to send are
queued in ``outbox`` (an ``_impl.Outbox``: the compiled publish fast path and its twin)
and taken by the driver's writer.
"""
from __future__ import annotations

import re
import ssl
from collections import deque
from collections.abc import Callable
from typing import Any

import orjson

from .. import _impl
from .._nuid import NUID
from .._typing import JSONObject
from .._version import __version__
from ..auth import Credentials
from ..errors import (
    AuthorizationError,
    BadSubjectError,
    MaxSubscriptionsError,
    PermissionsError,
    PermissionViolationError,
    ProtocolError,
    SlowConsumerError,
    StaleConnectionError,
    SubscriptionClosedError,
)
from ..msg import Msg
from ..options import Options, ServerPool

OP_INFO = _impl.OP_INFO
OP_PING = _impl.OP_PING
OP_PONG = _impl.OP_PONG
OP_OK = _impl.OP_OK
OP_ERR = _impl.OP_ERR
OP_FRAME_ERROR = _impl.OP_FRAME_ERROR
PING = _impl.PING
PONG = _impl.PONG

LANG = "python3"

# connection states
CONNECTING = "CONNECTING"
CONNECTED = "CONNECTED"
RECONNECTING = "RECONNECTING"
DRAINING_SUBS = "DRAINING_SUBS"
DRAINING_PUBS = "DRAINING_PUBS"
CLOSED = "CLOSED"
DISCONNECTED = "DISCONNECTED"

# subscription states (sub.status; what sub.add_status_listener callbacks receive)
SUB_ACTIVE = "active"
SUB_SLOW = "slow_consumer"
SUB_DRAINING = "draining"
SUB_CLOSED = "closed"

_NO_LIMIT = 1 << 62  # a pending limit that never bites

# -ERR 'Permissions Violation for Subscription to "foo.>" using queue "q"'
_SUB_VIOLATION = re.compile(r'permissions violation for subscription to "([^"]*)"(?: using queue "([^"]*)")?',
                            re.IGNORECASE)


def lax_wire(text: object, what: str = "subject") -> bytes:
    """``skip_subject_validation``: the wire bytes of a subject, reply or queue group
    checked only for what the protocol line itself needs (a non-empty ``str`` without
    whitespace or control characters: the encoder's rules for queue groups); empty
    tokens and wildcards inside tokens are left to the server."""
    if not isinstance(text, str) or not text:
        raise BadSubjectError(f"{what} must be a non-empty str")
    try:
        _impl.validate_filter("_", text)  # the encoder's framing check (it applies it to queues)
    except BadSubjectError as exc:
        raise BadSubjectError(str(exc).replace("queue", what, 1)) from None
    return text.encode("utf-8", "surrogateescape")


def tls_state(ssl_object: ssl.SSLObject | ssl.SSLSocket | None) -> JSONObject | None:
    """The live TLS session of a connection as ``nc.tls_info`` shows it (None without
    TLS): ``version`` (``"TLSv1.3"``), ``cipher`` (its name), ``cipher_bits``,
    ``peer_cert`` (the server's certificate as ``ssl.SSLSocket.getpeercert()`` decodes
    it; ``{}`` when it was not verified), ``peer_cert_der`` (its DER bytes) and
    ``server_hostname``."""
    if ssl_object is None:
        return None
    cipher = ssl_object.cipher()
    return {
        "version": ssl_object.version(),
        "cipher": cipher[0] if cipher else None,
        "cipher_bits": cipher[2] if cipher else None,
        "peer_cert": ssl_object.getpeercert() or {},
        "peer_cert_der": ssl_object.getpeercert(binary_form=True),
        "server_hostname": ssl_object.server_hostname,
    }


# -- events returned by receive_data ---------------------------------------------------
class Event:
    """Something the connection (not one subscription) has to act on."""

    __slots__ = ()


class PingReceived(Event):
    """The server pinged: answer with a PONG."""

    __slots__ = ()


class PongReceived(Event):
    """The server answered our oldest outstanding PING."""

    __slots__ = ()


class InfoReceived(Event):
    """An asynchronous INFO: ``discovered`` URLs new to the pool, ``lame_duck`` mode."""

    __slots__ = ("discovered", "info", "lame_duck")

    def __init__(self, info: JSONObject, discovered: list[str], lame_duck: bool) -> None:
        self.info = info
        self.discovered = discovered
        self.lame_duck = lame_duck


class ServerError(Event):
    """A ``-ERR``: ``fatal`` ones end the connection (the server closes it)."""

    __slots__ = ("error", "fatal")

    def __init__(self, error: BaseException, fatal: bool) -> None:
        self.error = error
        self.fatal = fatal


class SubscriptionError(Event):
    """A problem with one subscription or one message (slow consumer, a malformed frame):
    reported, the connection goes on."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


_PING_RECEIVED = PingReceived()
_PONG_RECEIVED = PongReceived()
_NO_EVENTS: list[Event] = []


class SubscriptionBase(_impl.SubState):
    """Per-subscription state the core routes to: pending queue, limits, counters.

    The fields the receive path touches for every message (``_direct``, ``_pending``,
    ``_pending_bytes``, the limits, ``delivered``, ``_max``, ``_dropped``, ``_slow``,
    ``_signal``, ``_client``: what messages handed out are bound to) live in the base
    ``_impl.SubState`` (compiled, or its pure twin). The driver makes subscriptions
    (its ``Subscription`` subclass) and registers them with :meth:`ConnectionCore.add_sub`.
    """

    __slots__ = (
        "__weakref__",
        "_cb",
        "_closed",
        "_draining",
        "_perm_err",
        "_runner_done",
        "_status",
        "_status_cbs",
        "_task",
        "queue",
        "sid",
        "subject",
    )

    def __init__(self, owner: Any, sid: int, subject: str, queue: str | None,
                 cb: Callable[[Msg], object] | None, signal: Any, pending_msgs_limit: int,
                 pending_bytes_limit: int) -> None:
        self._client = owner  # what messages handed out are bound to (msg.respond, acks)
        self.sid = sid
        self.subject = subject
        self.queue = queue
        self._cb = cb
        self._direct: Callable[[Msg], None] | None = None
        self._pending: deque[Msg] = deque()
        self._pending_bytes = 0
        self._pmsgs_limit = pending_msgs_limit if pending_msgs_limit > 0 else _NO_LIMIT
        self._pbytes_limit = pending_bytes_limit if pending_bytes_limit > 0 else _NO_LIMIT
        self._dropped = 0
        self._slow = False
        self.delivered = 0
        self._max = 0
        self._closed = False
        self._signal = signal
        self._task: Any = None
        self._draining = False
        self._status = SUB_ACTIVE
        self._status_cbs: list[Callable[[str], object]] | None = None  # add_status_listener
        self._perm_err: BaseException | None = None  # the server refused it (permission_err_on_subscribe)
        self._runner_done = False  # the callback runner (task/thread) has ended

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

    @property
    def status(self) -> str:
        """``"active"``, ``"slow_consumer"`` (dropping messages), ``"draining"`` or ``"closed"``."""
        return self._status

    @property
    def pending_limits(self) -> tuple[int, int]:
        """(messages, bytes) this subscription may hold before it drops (-1: no limit)."""
        return (-1 if self._pmsgs_limit >= _NO_LIMIT else int(self._pmsgs_limit),
                -1 if self._pbytes_limit >= _NO_LIMIT else int(self._pbytes_limit))

    def set_pending_limits(self, msgs: int, bytes: int) -> None:
        """Change how many messages and bytes may wait before new ones are dropped (a
        negative value: no limit; 0 is refused, as nats.go). Messages already held stay."""
        for what, v in (("msgs", msgs), ("bytes", bytes)):
            if not isinstance(v, int) or isinstance(v, bool):
                raise ValueError(f"pending limit {what} must be an int, not {type(v).__name__}")
            if v == 0:
                raise ValueError(f"pending limit {what} must not be 0 (a negative value means no limit)")
        if self._closed:
            raise SubscriptionClosedError("subscription closed")
        self._pmsgs_limit = msgs if msgs > 0 else _NO_LIMIT
        self._pbytes_limit = bytes if bytes > 0 else _NO_LIMIT

    def _take(self) -> Msg | None:
        """Pop the next pending message (or None)."""
        msg: Msg | None = self._next()
        if msg is not None and self._slow:
            self._end_slow_episode()
        return msg

    def _end_slow_episode(self) -> None:
        """A slow-consumer episode ends (the next drop is reported again) once the backlog
        is under half of both limits: one taken message does not end it."""
        if len(self._pending) < self._pmsgs_limit // 2 and self._pending_bytes < self._pbytes_limit // 2:
            self._slow = False

    def _mark_closed(self) -> None:
        self._closed = True
        self._signal.set()


def strip_pings(buf: bytes | bytearray) -> bytearray:
    """The commands of an outbox (whole commands, as it holds them) without their PINGs.
    A connection lost with PINGs still queued must not send them on the next one: their
    waiters failed with the loss, and each PONG would answer a later ``flush()`` before
    the server had what came before it."""
    out = bytearray()
    i, n = 0, len(buf)
    while i < n:
        j = buf.find(b"\r\n", i)
        if j < 0:
            out += buf[i:]
            break
        if buf[i:i + 4] == b"PUB " or buf[i:i + 5] == b"HPUB ":
            try:
                end = j + 2 + int(bytes(buf[i:j]).rsplit(None, 1)[-1]) + 2  # the payload and its CRLF
            except ValueError:  # not ours: keep the rest as it is
                out += buf[i:]
                break
            out += buf[i:end]
            i = end
        elif j - i == 4 and buf[i:j] == b"PING":
            i = j + 2
        else:
            out += buf[i:j + 2]
            i = j + 2
    return out


class ConnectionCore:
    """Protocol state of one client connection, free of I/O."""

    def __init__(self, opts: Options) -> None:
        self.opts = opts
        self.parser = _impl.Parser(Msg, opts.max_control_line)
        self.outbox = _impl.Outbox(max_payload=1024 * 1024)
        self.subs: dict[int, SubscriptionBase] = {}
        self.router = _impl.Router(self.parser, self.subs, self._control, self._auto_unsub_done,
                                   self._slow_consumer)
        self._events: list[Event] = []
        self._next_sid = 0
        self.pings_out = 0
        self.pool = ServerPool(opts.servers, randomize=not opts.dont_randomize)
        self.creds = Credentials(opts)
        self.info: JSONObject = {}
        self.headers_ok = True
        self._status = DISCONNECTED
        self.on_status: Callable[[str], None] | None = None  # the driver hears of each change
        self.reconnects = 0
        self.last_error: BaseException | None = None
        self._nuid = NUID()

    # -- state kept in the outbox -------------------------------------------------------
    @property
    def status(self) -> str:
        return self._status

    @status.setter
    def status(self, value: str) -> None:
        old = self._status
        self._status = value
        self.outbox.connected = value == CONNECTED  # the publish fast path runs only then
        if value != old and self.on_status is not None:
            self.on_status(value)

    @property
    def max_payload(self) -> int:
        return int(self.outbox.max_payload)

    @max_payload.setter
    def max_payload(self, value: int) -> None:
        self.outbox.max_payload = min(int(value), 1 << 62)

    def stats(self) -> dict[str, int]:
        router = self.router
        outbox = self.outbox
        return {
            "in_msgs": router.in_msgs,
            "out_msgs": outbox.out_msgs,
            "in_bytes": router.in_bytes,
            "out_bytes": outbox.out_bytes,
            "reconnects": self.reconnects,
        }

    # -- ids and subscriptions ---------------------------------------------------------
    def new_inbox(self) -> str:
        return f"{self.opts.inbox_prefix}.{self._nuid.next()}"

    def next_sid(self) -> int:
        self._next_sid += 1
        return self._next_sid

    def add_sub(self, sub: SubscriptionBase) -> None:
        """Route messages for ``sub.sid`` to ``sub`` (the caller queues the SUB). A direct
        handler that is an ``_impl.FrameSink`` is offered the frames before any message is
        built (they then count in the connection's statistics, not in ``sub.delivered``)."""
        self.subs[sub.sid] = sub
        if isinstance(sub._direct, _impl.FrameSink):
            self.parser.sinks[sub.sid] = sub._direct

    def remove_sub(self, sub: SubscriptionBase, discard: bool = True) -> bool:
        """Stop routing to ``sub`` and mark it closed, dropping what it still holds unless
        ``discard`` is False (a drain lets it be handled); False when it was closed already."""
        self._unroute(sub.sid)
        if sub._closed:
            return False
        if discard:
            sub.discard_pending()
        sub._mark_closed()
        return True

    def _unroute(self, sid: int) -> None:
        """Route nothing more to ``sid`` (its subscription, and its frame sink if any)."""
        self.subs.pop(sid, None)
        self.parser.sinks.pop(sid, None)

    def close_all_subs(self) -> None:
        """The connection closed: every subscription ends. A callback's messages still
        queued are dropped (at most the callback running finishes, as nats.go's); a
        ``next_msg()`` reader may still take what was queued."""
        subs = list(self.subs.values())
        self.subs.clear()
        self.parser.sinks.clear()
        for sub in subs:
            if sub._cb is not None:
                sub.discard_pending()
            sub._mark_closed()

    # -- handshake -------------------------------------------------------------------
    def process_info(self, info: JSONObject, initial: bool) -> InfoReceived | None:
        """Take an INFO; for an asynchronous one (not ``initial``) the event to act on."""
        self.info = info
        self.max_payload = int(info.get("max_payload", self.max_payload))
        self.headers_ok = bool(info.get("headers", False))
        # over WebSocket the server's websocket URLs (it sends them as connect_urls)
        urls = (self.pool.ws and info.get("ws_connect_urls")) or info.get("connect_urls") or []
        added: list[str] = []
        if urls and not self.opts.ignore_discovered_servers:
            added = self.pool.add_discovered(urls, tls=bool(info.get("tls_required")))
        ldm = bool(info.get("ldm"))
        if initial or not (added or ldm):
            return None
        return InfoReceived(info, added, ldm)

    def connect_line(self, url_user: str | None, url_password: str | None,
                     answers: dict[str, Any] | None = None) -> bytes:
        """The CONNECT line (``answers``: what the auth callbacks returned, see
        ``Credentials.callbacks``)."""
        o = self.opts
        fields: JSONObject = {
            "verbose": o.verbose,
            "pedantic": o.pedantic,
            "lang": LANG,
            "version": __version__,
            "protocol": 1,
            "headers": True,
            "no_responders": True,
            "tls_required": o.wants_tls,
        }
        if o.name:
            fields["name"] = o.name
        if o.no_echo:
            fields["echo"] = False
        fields.update(self.creds.connect_fields(self.info, url_user, url_password, answers))
        return b"CONNECT " + orjson.dumps(fields) + b"\r\n"

    def check_filter(self, subject: str, queue: str | None) -> None:
        """Raise ``BadSubjectError`` for what cannot be subscribed to: the encoder's
        ``validate_filter``, or with ``skip_subject_validation`` :func:`lax_wire`'s checks."""
        if not self.opts.skip_subject_validation:
            _impl.validate_filter(subject, queue)
            return
        lax_wire(subject)
        if queue:
            lax_wire(queue, "queue")

    def append_sub(self, buf: bytearray, subject: str, queue: str | None, sid: int) -> None:
        """Append a SUB: the encoder's (checked as a filter), or with
        ``skip_subject_validation`` one checked only by :func:`lax_wire`."""
        if not self.opts.skip_subject_validation:
            _impl.append_sub(buf, subject, queue, sid)
            return
        s = lax_wire(subject)
        if queue:
            buf += b"SUB %s %s %d\r\n" % (s, lax_wire(queue, "queue"), sid)
        else:
            buf += b"SUB %s %d\r\n" % (s, sid)

    def append_pub_lax(self, subject: str, reply: str | None, hdr: bytes | None,
                       data: bytes | bytearray | memoryview) -> None:
        """``skip_subject_validation``: append a PUB/HPUB (``hdr``: encoded headers or
        None) whose subject and reply are checked only by :func:`lax_wire`, counted as
        the outbox counts (the caller holds the writer's lock)."""
        s = lax_wire(subject)
        r = b" " + lax_wire(reply, "reply") if reply else b""
        n = memoryview(data).nbytes
        outbox = self.outbox
        buf = outbox.buf
        if hdr is None:
            buf += b"PUB %s%s %d\r\n" % (s, r, n)
        else:
            hn = memoryview(hdr).nbytes
            buf += b"HPUB %s%s %d %d\r\n" % (s, r, hn, hn + n)
            buf += hdr
        buf += data
        buf += b"\r\n"
        outbox.out_msgs += 1
        outbox.out_bytes += n

    def resubscribe_bytes(self) -> bytes:
        """SUB (and UNSUB for auto-unsubscribe remainders) of every live subscription."""
        buf = bytearray()
        for sub in list(self.subs.values()):
            if sub._closed:
                continue
            self.append_sub(buf, sub.subject, sub.queue, sub.sid)
            if sub._max:
                left = sub._max - sub.delivered
                if left <= 0:
                    continue
                _impl.append_unsub(buf, sub.sid, left)
        return bytes(buf)

    # -- receiving -------------------------------------------------------------------
    def receive_data(self, data: bytes) -> list[Event]:
        """Parse ``data``, route every message to its subscription, and return the
        connection-level events of this read (usually none).

        Raises ProtocolError when the byte stream can no longer be framed."""
        self.router.feed(data)
        events = self._events
        if not events:
            return _NO_EVENTS
        self._events = []
        return events

    def _slow_consumer(self, sub: SubscriptionBase) -> None:
        self._events.append(SubscriptionError(SlowConsumerError(
            f"slow consumer on subject {sub.subject!r}, messages dropped", subject=sub.subject, sid=sub.sid,
            dropped=sub.dropped)))

    def _auto_unsub_done(self, sub: SubscriptionBase) -> None:
        self._unroute(sub.sid)
        sub._mark_closed()

    def _control(self, ev: Any) -> None:
        op = ev[0]
        if op == OP_PING:
            self._events.append(_PING_RECEIVED)
        elif op == OP_PONG:
            self.pings_out = 0
            self._events.append(_PONG_RECEIVED)
        elif op == OP_INFO:
            got = self.process_info(ev[1], initial=False)
            if got is not None:
                self._events.append(got)
        elif op == OP_ERR:
            self._events.append(self.server_error(ev[1]))
        elif op == OP_FRAME_ERROR:
            self._events.append(SubscriptionError(ev[1]))
        # +OK needs nothing

    def server_error(self, text: str) -> ServerError:
        """Classify a ``-ERR`` text: a typed error, and whether it ends the connection.

        Not fatal: what nats-server answers without closing the connection (a refused
        SUB or PUB: ``Invalid Subject``, ``Invalid Publish Subject``, ``Invalid
        Subscription``, ``Permissions Violation ...``, ``maximum subscriptions
        exceeded``). Everything else (an authorization violation, a stale connection, a
        parser error, the maximum payload or connections, an unknown operation, TLS
        required, ...) is followed by the server closing the connection, and drops it."""
        low = text.lower()
        if low.startswith("permissions violation"):
            m = _SUB_VIOLATION.match(text)
            if m is not None:  # a refused SUB: its subject (and queue) name the subscription(s)
                return ServerError(PermissionViolationError(text, m.group(1), m.group(2)), fatal=False)
            return ServerError(PermissionsError(text), fatal=False)
        if low.startswith(("invalid subject", "invalid publish subject", "invalid subscription")):
            return ServerError(BadSubjectError(f"server error: {text}"), fatal=False)
        if low.startswith("maximum subscriptions exceeded"):
            return ServerError(MaxSubscriptionsError(f"server error: {text}"), fatal=False)
        if "authorization violation" in low or "authentication" in low:
            auth = AuthorizationError(text)
            auth.from_server = True
            err: BaseException = auth
        elif "stale connection" in low:
            err = StaleConnectionError(text)
        else:
            err = ProtocolError(f"server error: {text}")
        self.last_error = err
        return ServerError(err, fatal=True)

    # -- pings -----------------------------------------------------------------------
    def ping_tick(self) -> BaseException | None:
        """Called every ping_interval while connected: count a PING to send (None), or
        the stale-connection error once too many went unanswered."""
        self.pings_out += 1
        if self.pings_out > self.opts.max_pings_outstanding:
            return StaleConnectionError("stale connection: server did not answer pings")
        return None
