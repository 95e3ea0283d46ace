"""Connection options and the server pool (pure state, no I/O)."""
from __future__ import annotations

import difflib
import ipaddress
import math
import numbers
import os
import random
import socket
import ssl
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, TypeAlias
from urllib.parse import unquote, urlparse

from . import _impl
from ._redact import option_repr, redact_url
from .errors import BadSubjectError, NoServersError

DEFAULT_URL = "nats://127.0.0.1:4222"
DEFAULT_RECONNECT_BUFFER_SIZE = 8 * 1024 * 1024  # reconnect_buffer_size=0 means this (as nats.go)

#: ``error_cb``: called with an ``Exception``; in the asyncio flavour also with a callback's
#: own ``asyncio.CancelledError``. ``connect()`` is typed with its flavour's own
#: ``ErrorCallback`` (``jetwire.aio.client``, and ``jetwire._sync.client`` where it takes an
#: ``Exception``); this one, of ``Options`` (either flavour's), is the asyncio one.
ErrorCallback: TypeAlias = Callable[[BaseException], object]


@dataclass(repr=False)  # the generated repr would show passwords, tokens and seeds
class Options:
    """Every option of ``connect()``. This class is the one list of them: each field's
    docstring below is its line in ``connect()``'s docstring, and ``connect()``'s
    signature in ``jetwire/aio/client.py`` is written from these fields by
    ``tools/gen_connect.py`` (``--check`` in CI)."""

    servers: list[str] = field(default_factory=lambda: [DEFAULT_URL])
    """The servers to connect to (``connect()``'s first argument)."""
    name: str | None = None
    """The client's name, shown by the server (monitoring ``connz``)."""
    user: str | None = None
    """User name (also taken from a ``nats://user:pass@host`` URL)."""
    password: str | None = None
    """Password for ``user``."""
    token: str | None = None
    """Authentication token (also taken from a ``nats://token@host`` URL)."""
    nkey_seed: str | bytes | os.PathLike[str] | None = None
    """An nkey seed, or the path of a file holding one (``~`` and ``$VAR`` expanded)."""
    creds: str | bytes | os.PathLike[str] | tuple[str, str] | None = None
    """A ``.creds`` file's path (``~`` and ``$VAR`` expanded), its text (``str`` or ``bytes``), or a (jwt file,
    seed file) pair."""
    token_cb: Callable[[], object] | None = None
    """``() -> token``, asked on every (re)connect (a coroutine function too, in the asyncio flavour)."""
    user_cb: Callable[[], object] | None = None
    """``() -> (user, password)``, asked on every (re)connect."""
    user_jwt_cb: Callable[[], object] | None = None
    """``() -> user JWT``, asked on every (re)connect; needs ``signature_cb``."""
    signature_cb: Callable[[bytes], object] | None = None
    """``(nonce) -> signature``: signs the server's nonce (the client never sees the seed)."""
    nkey: str | None = None
    """The public nkey, used with ``signature_cb`` or ``nkey_seed``."""
    user_jwt: str | None = None
    """A user JWT as a string; needs ``nkey_seed``."""
    tls: ssl.SSLContext | bool | None = None
    """An ``ssl.SSLContext``, or True for the default context (``tls://`` URLs imply TLS)."""
    tls_hostname: str | None = None
    """The name to verify the server's certificate against (default: the URL's host)."""
    tls_handshake_first: bool = False
    """Start TLS before the server's INFO (servers with ``handshake_first``)."""
    tls_ca_file: str | None = None
    """CA bundle that verifies the server's certificate."""
    tls_cert_file: str | None = None
    """Client certificate (mutual TLS)."""
    tls_key_file: str | None = None
    """The client certificate's key; needs ``tls_cert_file``."""
    tls_context_cb: Callable[[], object] | None = None
    """``() -> ssl.SSLContext``, asked on every connect (rotated certificates apply)."""
    no_echo: bool = False
    """Do not receive the messages this connection publishes."""
    verbose: bool = False
    """Ask the server to acknowledge every protocol message (+OK)."""
    pedantic: bool = False
    """Ask the server for strict protocol checks."""
    connect_timeout: float = 2.0
    """Seconds to open a connection and complete the handshake."""
    ping_interval: float = 120.0
    """Seconds between client PINGs."""
    max_pings_outstanding: int = 2
    """Unanswered PINGs before the connection counts as stale and is dropped (at least 1)."""
    allow_reconnect: bool = True
    """Reconnect when the connection is lost."""
    retry_on_failed_connect: bool = False
    """When the first connect fails, return at once and keep trying in the background."""
    max_reconnect_attempts: int = 60
    """Reconnect attempts per server before it leaves the pool (-1: no limit)."""
    reconnect_time_wait: float = 2.0
    """Seconds between two attempts on the same server."""
    reconnect_jitter: float = 0.1
    """Random extra seconds (at most) added to ``reconnect_time_wait``."""
    reconnect_jitter_tls: float = 1.0
    """The same for TLS connections."""
    reconnect_buffer_size: int = 8 * 1024 * 1024
    """Bytes of publishes kept while reconnecting (over it: ``ReconnectBufferFullError``)."""
    reconnect_delay_cb: Callable[[int], object] | None = None
    """``(passes) -> seconds``: the pause before each pass over the pool (replaces the wait and jitter)."""
    reconnect_to_server_cb: Callable[[list[str], Any], object] | None = None
    """``(servers, info) -> (server, delay)`` or None: picks each reconnect's server (nats.go's ReconnectToServer)."""
    ignore_auth_error_abort: bool = False
    """Keep reconnecting after the same authorization error twice (default: close)."""
    no_callbacks_after_close: bool = False
    """No callbacks (closed_cb, disconnected_cb, ...) once ``close()``/``drain()`` was called."""
    socket_factory: Callable[[str, int, float], Any] | None = None
    """``(host, port, timeout) -> socket``: dials instead of the default (e.g. through a proxy)."""
    ws_proxy_path: str | None = None
    """WebSocket: a path appended to each ``ws://``/``wss://`` URL's path."""
    ws_compression: bool = False
    """WebSocket: permessage-deflate when the server allows it."""
    ws_headers: Mapping[str, str | bytes | Sequence[str | bytes]] | None = None
    """WebSocket: HTTP headers of the upgrade request (name -> value or list of values)."""
    ws_headers_cb: Callable[[], object] | None = None
    """WebSocket: ``() -> headers``, asked on every connect (instead of ``ws_headers``)."""
    skip_subject_validation: bool = False
    """No client-side subject checks on publish and subscribe (the server still refuses what it cannot take)."""
    ignore_discovered_servers: bool = False
    """Do not add the servers the cluster announces to the pool."""
    permission_err_on_subscribe: bool = False
    """A subscription the server refuses fails its ``next_msg()`` and iteration with ``PermissionViolationError``."""
    dont_randomize: bool = False
    """Try the servers in the order given (default: shuffled)."""
    inbox_prefix: str = "_INBOX"
    """The prefix of reply subjects (``new_inbox()``, requests)."""
    pending_msgs_limit: int = 512 * 1024
    """Messages a subscription may hold undelivered before it is a slow consumer."""
    pending_bytes_limit: int = 128 * 1024 * 1024
    """Bytes a subscription may hold undelivered before it is a slow consumer."""
    drain_timeout: float = 30.0
    """Seconds ``drain()`` may take before it raises ``DrainTimeoutError``."""
    flush_timeout: float = 10.0
    """Seconds ``flush()`` waits for the server's PONG by default."""
    busy_poll: float = 200e-6
    """Seconds the event loop (asyncio) polls for an expected reply instead of sleeping, and the
    longest poll of ``poll_io`` (0: off)."""
    poll_io: bool | None = None
    """While traffic flows, keep polling the socket for up to ``busy_poll`` seconds after each read
    (and, asyncio, each write) instead of sleeping: None (default) where the process may use 4 or
    more CPUs, where a sleeping core's wake-up costs more than the poll."""
    max_control_line: int = 1048576
    """Longest protocol line accepted from the server, in bytes: a bound against a broken
    server, not the server's own ``max_control_line`` (its MSG lines add the sid and the
    reply subject to what was published, its INFO lists the cluster's URLs)."""
    error_cb: ErrorCallback | None = None
    """``(error)``: asynchronous errors (slow consumers, refused subscriptions, ...): an
    ``Exception``, in the asyncio flavour also a callback's own ``asyncio.CancelledError``."""
    disconnected_cb: Callable[[], object] | None = None
    """``()``: the connection was lost."""
    reconnected_cb: Callable[[], object] | None = None
    """``()``: the connection is back."""
    closed_cb: Callable[[], object] | None = None
    """``()``: the connection is closed for good."""
    reconnect_error_cb: Callable[[Exception], object] | None = None
    """``(error)``: a failed reconnect attempt (default: it goes to ``error_cb``)."""
    connected_cb: Callable[[], object] | None = None
    """``()``: the first connection is made (also a late one, with ``retry_on_failed_connect``)."""
    discovered_servers_cb: Callable[[], object] | None = None
    """``()``: the cluster announced new servers."""
    lame_duck_mode_cb: Callable[[], object] | None = None
    """``()``: the server is entering lame duck mode (about to shut down)."""

    def __repr__(self) -> str:
        return f"Options({', '.join(option_repr(f.name, getattr(self, f.name)) for f in fields(self))})"

    @property
    def wants_tls(self) -> bool:
        """TLS on every connection, whatever the URLs' scheme: ``tls=``, a TLS file or
        callback, or ``tls_handshake_first`` (which implies TLS, as nats.go's)."""
        return bool(self.tls) or self.tls_context_cb is not None or bool(
            self.tls_ca_file or self.tls_cert_file) or self.tls_handshake_first

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context of ``tls=``, the ``tls_*_file`` options and
        ``tls_handshake_first`` (``tls_context_cb`` is asked by the client itself, on
        every connect)."""
        if isinstance(self.tls, ssl.SSLContext):
            ctx = self.tls
            if self.tls_ca_file:  # the files add to a given context (as nats.go's RootCAs())
                ctx.load_verify_locations(cafile=self.tls_ca_file)
        elif self.tls or self.tls_ca_file or self.tls_cert_file or self.tls_handshake_first:
            ctx = ssl.create_default_context(cafile=self.tls_ca_file)
        else:
            return None
        if self.tls_cert_file:
            ctx.load_cert_chain(self.tls_cert_file, self.tls_key_file)
        return ctx


def unexpected_keyword(func: str, key: str, valid: Iterable[str]) -> TypeError:
    """The ``TypeError`` for a keyword argument ``func`` does not take, naming the
    nearest valid one (a misspelt option)."""
    near = difflib.get_close_matches(key, list(valid), n=1)
    hint = f"; did you mean {near[0]!r}?" if near else ""
    return TypeError(f"{func}() got an unexpected keyword argument {key!r}{hint}")


def make_options(servers: str | Sequence[str] | None, kwargs: dict[str, Any]) -> Options:
    """Build Options from connect()'s arguments; unknown keywords raise TypeError."""
    known = Options.__dataclass_fields__
    for k in kwargs:
        if k not in known:
            raise unexpected_keyword("connect", k, known)
    if "servers" in kwargs:
        if servers is not None:
            raise TypeError("pass servers either positionally or as servers=, not both")
        servers = kwargs.pop("servers")
    if servers is None:
        urls = [DEFAULT_URL]
    elif isinstance(servers, str):
        urls = [s.strip() for s in servers.split(",") if s.strip()]
    else:
        urls = list(servers)
    if not urls:
        raise NoServersError("no servers given")
    opts = Options(servers=urls, **kwargs)
    _check_values(opts)
    if opts.poll_io is not None and not isinstance(opts.poll_io, bool):
        raise ValueError(f"poll_io must be True, False or None (automatic), not {opts.poll_io!r}")
    if not opts.busy_poll >= 0:
        raise ValueError(f"busy_poll must be 0 (off) or a positive number of seconds, not {opts.busy_poll!r}")
    _check_auth(opts)
    _check_inbox_prefix(opts.inbox_prefix)
    if opts.ws_headers is not None:
        if opts.ws_headers_cb is not None:
            raise ValueError("give ws_headers or ws_headers_cb, not both")
        ws_header_list(opts.ws_headers)  # checked now, before connecting
    return opts


# headers of the upgrade request that the WebSocket handshake itself sets
_WS_OWN_HEADERS = frozenset({"host", "upgrade", "connection", "sec-websocket-key", "sec-websocket-version",
                             "sec-websocket-extensions", "sec-websocket-protocol", "content-length",
                             "transfer-encoding"})


def ws_header_list(headers: object) -> list[tuple[bytes, bytes]]:
    """``ws_headers`` (or what ``ws_headers_cb`` returned) as the upgrade request's extra
    header lines: a mapping of name to a value or a list of values. ``TypeError`` for
    another type, ``ValueError`` for a name or value that would break the request (empty
    name, whitespace or ``:`` in a name, CR/LF/NUL anywhere) or for a header the
    handshake sets itself (``Host``, ``Upgrade``, ``Sec-WebSocket-*``, ...)."""
    if not hasattr(headers, "items"):
        raise TypeError(f"ws_headers must be a mapping of header names to values, not {type(headers).__name__}")
    out: list[tuple[bytes, bytes]] = []
    for name, values in headers.items():
        if not isinstance(name, str) or not name or not name.isascii() or any(c in name for c in " \t\r\n\0:"):
            raise ValueError(f"bad WebSocket header name {name!r}")
        if name.lower() in _WS_OWN_HEADERS:
            raise ValueError(f"WebSocket header {name!r} is set by the handshake itself")
        if isinstance(values, (str, bytes)):
            values = [values]
        for v in values:
            if not isinstance(v, (str, bytes)):
                raise TypeError(f"WebSocket header {name!r}: values are str or bytes, not {type(v).__name__}")
            raw = v.encode("utf-8") if isinstance(v, str) else bytes(v)
            if any(c in raw for c in b"\r\n\0"):
                raise ValueError(f"WebSocket header {name!r}: a value must not hold CR, LF or NUL")
            out.append((name.encode("ascii"), raw))
    return out


def _check_values(o: Options) -> None:
    """Option values nats.go refuses (or gives a meaning) at connect time: ``TypeError``
    or ``ValueError`` naming the option, before anything is dialled."""
    if o.name is not None and not isinstance(o.name, str):
        raise TypeError(f"name must be a str, not {type(o.name).__name__}")
    _check_seconds("connect_timeout", o.connect_timeout)
    _check_seconds("flush_timeout", o.flush_timeout)
    # 0: no client PINGs (nats.go starts its ping timer only for PingInterval > 0)
    _check_seconds("ping_interval", o.ping_interval, zero="no pings")
    _check_int("max_pings_outstanding", o.max_pings_outstanding)
    if o.max_pings_outstanding < 1:
        raise ValueError(f"max_pings_outstanding must be at least 1, not {o.max_pings_outstanding!r}")
    _check_int("reconnect_buffer_size", o.reconnect_buffer_size)
    if o.reconnect_buffer_size == 0:  # as nats.go: 0 is the default size; negative keeps nothing
        o.reconnect_buffer_size = DEFAULT_RECONNECT_BUFFER_SIZE
    if o.tls is False and o.tls_handshake_first:
        raise ValueError("tls_handshake_first needs TLS, and tls=False turns it off")


def _check_seconds(name: str, value: object, zero: str | None = None) -> None:
    """``value`` is a finite number of seconds above 0 (or 0 too, where ``zero`` says
    what it means)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number of seconds, not {type(value).__name__}")
    if not math.isfinite(value) or value < 0 or (value == 0 and zero is None):
        want = f"0 ({zero}) or a positive number of seconds" if zero else "a positive number of seconds"
        raise ValueError(f"{name} must be {want}, not {value!r}")


def _check_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")


def _check_inbox_prefix(prefix: str) -> None:
    """Inboxes are ``<prefix>.<id>`` and requests subscribe to ``<prefix>.<id>.*``: a
    subject without wildcards (``BadSubjectError`` before connecting)."""
    try:
        _impl.validate_filter(prefix)
    except BadSubjectError as exc:
        raise BadSubjectError(f"inbox_prefix: {exc}") from None
    if "*" in prefix or ">" in prefix:
        raise BadSubjectError(f"inbox_prefix {prefix!r} must not hold wildcards")


def _check_auth(o: Options) -> None:
    """Combinations of auth options that cannot work raise before anything is sent."""
    if o.user_jwt_cb is not None and o.signature_cb is None:
        raise ValueError("user_jwt_cb needs signature_cb (the client never sees the seed)")
    if o.nkey is not None and o.signature_cb is None and o.nkey_seed is None:
        raise ValueError("nkey (a public key) needs signature_cb or nkey_seed")
    if o.signature_cb is not None and o.user_jwt_cb is None and o.nkey is None:
        raise ValueError("signature_cb is used with user_jwt_cb or nkey")
    if o.user_jwt is not None and o.nkey_seed is None:
        raise ValueError("user_jwt needs nkey_seed to sign the server's nonce")
    jwt_ways = [o.creds is not None, o.user_jwt_cb is not None, o.user_jwt is not None]
    if sum(jwt_ways) > 1:
        raise ValueError("give one of creds, user_jwt_cb and user_jwt")
    if o.token is not None and o.token_cb is not None:
        raise ValueError("give token or token_cb, not both")
    if o.user is not None and o.user_cb is not None:
        raise ValueError("give user/password or user_cb, not both")
    if isinstance(o.creds, tuple) and len(o.creds) != 2:
        raise ValueError("creds is a path, the text of a .creds file or a (jwt file, seed file) pair")
    if o.creds is not None and not isinstance(o.creds, (str, bytes, bytearray, tuple, os.PathLike)):
        raise TypeError(f"creds is a path, the text of a .creds file (str or bytes) or a (jwt file, seed file) "
                        f"pair, not {type(o.creds).__name__}")
    if o.nkey_seed is not None and not isinstance(o.nkey_seed, (str, bytes, bytearray, os.PathLike)):
        raise TypeError(f"nkey_seed is a seed or the path of a file holding one, not {type(o.nkey_seed).__name__}")
    if o.tls_context_cb is not None and (o.tls_ca_file or o.tls_cert_file or isinstance(o.tls, ssl.SSLContext)):
        raise ValueError("tls_context_cb makes the whole TLS context: give it, or tls= and the tls_*_file options")
    if o.tls_key_file and not o.tls_cert_file:
        raise ValueError("tls_key_file needs tls_cert_file")


class Server:
    """One entry of the server pool."""

    __slots__ = (
        "did_connect",
        "discovered",
        "display",
        "host",
        "last_attempt",
        "last_auth_error",
        "password",
        "path",
        "port",
        "query",
        "reconnects",
        "scheme",
        "tls_name",
        "url",
        "user",
    )

    def __init__(self, url: str, discovered: bool = False) -> None:
        if "://" not in url:
            url = "nats://" + url
        u = urlparse(url)
        if u.scheme not in ("nats", "tls", "ws", "wss"):
            raise ValueError(f"unsupported URL scheme in {redact_url(url)!r}")
        self.scheme = u.scheme
        self.host = u.hostname or "127.0.0.1"
        # ws:// and wss:// default to the HTTP ports (as nats.go) and keep their path
        default_port = {"ws": 80, "wss": 443}.get(u.scheme, 4222)
        try:
            self.port = u.port or default_port
        except ValueError:
            raise ValueError(f"bad port in {redact_url(url)!r}") from None
        self.user = unquote(u.username) if u.username is not None else None
        self.password = unquote(u.password) if u.password is not None else None
        self.path = u.path if self.is_ws and u.path != "/" else ""
        # a ws URL's query goes with the upgrade request (as nats.go's); it is never shown,
        # since it may carry a token
        self.query = u.query if self.is_ws else ""
        host = f"[{self.host}]" if ":" in self.host else self.host
        # url: the server, without credentials; display: what is shown (nc.servers,
        # connected_url, messages), the URL's credentials masked (nats://alice:***@host:4222)
        self.url = f"{u.scheme}://{host}:{self.port}{self.path}"
        self.display = redact_url(f"{u.scheme}://{u.netloc.rpartition('@')[0]}@{host}:{self.port}{self.path}") \
            if "@" in u.netloc else self.url
        self.discovered = discovered
        self.reconnects = 0
        self.last_attempt = 0.0
        self.did_connect = False
        self.last_auth_error: str | None = None  # what the server said when it last refused us
        # the name its TLS certificate is verified against when that is not its host: a
        # discovered server announced by IP keeps the host name of the URL it was learned
        # through (nats.go's tlsName); None: its host (or the tls_hostname option)
        self.tls_name: str | None = None

    @property
    def is_ws(self) -> bool:
        """A WebSocket URL (``ws://`` or ``wss://``)."""
        return self.scheme in ("ws", "wss")

    @property
    def hostport(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def host_is_ip(self) -> bool:
        """The URL names the server by an IP address, not a host name."""
        try:
            ipaddress.ip_address(self.host)
        except ValueError:
            return False
        return True

    def __repr__(self) -> str:
        return f"<Server {self.display}>"


class ServerPool:
    """Ordered pool of servers; connect_urls from INFO are added as discovered."""

    def __init__(self, urls: Sequence[str], randomize: bool = True) -> None:
        self.servers: list[Server] = [Server(u) for u in urls]
        # WebSocket and plain URLs do not mix (as nats.go): discovered URLs follow suit
        self.ws = bool(self.servers) and self.servers[0].is_ws
        if any(s.is_ws != self.ws for s in self.servers):
            raise ValueError("mixing websocket (ws://, wss://) and non-websocket URLs is not allowed")
        # a tls:// (wss://) URL asks for TLS: the servers the cluster announces are dialled
        # with TLS too, whatever their INFO says (nats.go's Secure and connScheme); the TLS
        # options (tls=, tls_*_file, tls_context_cb, tls_handshake_first) give every
        # server TLS whatever its scheme (Options.wants_tls)
        self.secure = any(s.scheme in ("tls", "wss") for s in self.servers)
        self.randomize = randomize
        if randomize:
            random.shuffle(self.servers)
        self.current: Server | None = None

    def __len__(self) -> int:
        return len(self.servers)

    def urls(self, discovered_only: bool = False) -> list[str]:
        """The servers as shown: credentials masked (``Server.display``)."""
        return [s.display for s in self.servers if s.discovered or not discovered_only]

    def next_server(self, max_reconnects: int) -> Server | None:
        """Rotate: move the current server to the back, drop it if it ran out of attempts."""
        cur = self.current
        if cur is not None and cur in self.servers:
            self.servers.remove(cur)
            if max_reconnects < 0 or cur.reconnects < max_reconnects:
                self.servers.append(cur)
        if not self.servers:
            self.current = None
            return None
        self.current = self.servers[0]
        return self.current

    def find(self, url: str) -> Server | None:
        """The pool's entry for ``url``: as ``nc.servers`` shows it (``display``), or its
        URL (with or without credentials or scheme); None when it is not in the pool."""
        for s in self.servers:
            if url == s.display or url == s.url:
                return s
        try:
            want = Server(url)
        except ValueError:
            return None
        for s in self.servers:
            if want.url == s.url:
                return s
        return None

    def in_use(self) -> Server | None:
        """The server connected to, or being dialled: ``current`` once set (connected, or
        a reconnect attempt), else, while the first connect goes over the pool, the one
        tried last (the driver stamps ``last_attempt`` just before it dials)."""
        if self.current is not None:
            return self.current
        tried = [s for s in self.servers if s.last_attempt]
        return max(reversed(tried), key=lambda s: s.last_attempt) if tried else None

    def add_discovered(self, connect_urls: Sequence[str], tls: bool) -> list[str]:
        """Add unknown connect_urls (``tls``: the announcing server requires TLS); returns
        the URLs that were new. Over WebSocket the server sends its websocket URLs
        (``ws_connect_urls``) as these. A discovered server the list no longer names (it
        left the cluster) leaves the pool, unless it is the one in use; servers the user
        gave stay (nats.go prunes its implicit servers so).

        As nats.go's implicit servers, each takes from the server it was learned through
        (:meth:`in_use`) its URL's user and password (or token) and, announced by IP while
        that one is named by host, that host name to verify its TLS certificate against."""
        tls = tls or self.secure
        self._prune(connect_urls)
        known = {s.hostport for s in self.servers}
        scheme = ("wss" if tls else "ws") if self.ws else "tls" if tls else "nats"
        source = self.in_use()
        name = None
        if source is not None:
            name = source.tls_name or (None if source.host_is_ip else source.host)
        added: list[Server] = []
        for hp in connect_urls:
            try:
                srv = Server(f"{scheme}://{hp}", discovered=True)
            except ValueError:
                continue
            if srv.hostport in known:
                continue
            known.add(srv.hostport)
            if source is not None:
                if srv.user is None and source.user is not None:
                    srv.user, srv.password = source.user, source.password
                if name is not None and srv.host_is_ip:
                    srv.tls_name = name
            added.append(srv)
        if added:
            if self.randomize:
                random.shuffle(added)
            self.servers.extend(added)
        return [s.display for s in added]

    def _prune(self, connect_urls: Sequence[str]) -> None:
        announced = set()
        for hp in connect_urls:
            try:
                announced.add(Server(f"nats://{hp}").hostport)
            except ValueError:
                continue
        if not announced:  # nothing readable announced: nothing to go by
            return
        keep = self.in_use()
        self.servers = [s for s in self.servers if not s.discovered or s is keep or s.hostport in announced]


def io_poll_budget(opts: Options) -> float:
    """How long a connection keeps polling its socket after I/O while traffic flows
    (``poll_io``): ``busy_poll`` where it is on, else 0. Automatic (None): on where this
    process may run on 4 or more CPUs. With fewer, the server's own threads need the core a
    poll would take, and a sleeping core's wake-up costs less there."""
    on = opts.poll_io
    if on is None:
        on = usable_cpus() >= 4
    # (the blocking reader's poll reads with MSG_DONTWAIT, which not every platform has)
    return opts.busy_poll if on and hasattr(socket, "MSG_DONTWAIT") else 0.0


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the platform has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1
