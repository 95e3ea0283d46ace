"""Connection options and the server pool (pure state, no I/O)."""
from __future__ import annotations

import os
import random
import ssl
from dataclasses import dataclass, field, fields
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union
from urllib.parse import unquote, urlparse

from . import _impl
from ._redact import option_repr, redact_url
from .errors import BadSubjectError, NoServersError

DEFAULT_URL = "nats://127.0.0.1:4222"


@dataclass(repr=False)  # the generated repr would show passwords, tokens and seeds
class Options:
    servers: List[str] = field(default_factory=lambda: [DEFAULT_URL])
    name: Optional[str] = None
    user: Optional[str] = None
    password: Optional[str] = None
    token: Optional[str] = None
    nkey_seed: Optional[str] = None
    # a .creds file's path, its text (str or bytes), or a (jwt file, seed file) pair
    creds: Union[str, bytes, "os.PathLike[str]", Tuple[str, str], None] = None
    # auth callbacks (plain, or coroutine functions in jetwire.aio), asked on every (re)connect
    token_cb: Optional[Callable[[], Any]] = None
    user_cb: Optional[Callable[[], Any]] = None
    user_jwt_cb: Optional[Callable[[], Any]] = None
    signature_cb: Optional[Callable[[bytes], Any]] = None
    nkey: Optional[str] = None
    user_jwt: Optional[str] = None
    tls: Union[ssl.SSLContext, bool, None] = None
    tls_hostname: Optional[str] = None
    tls_handshake_first: bool = False
    tls_ca_file: Optional[str] = None
    tls_cert_file: Optional[str] = None
    tls_key_file: Optional[str] = None
    tls_context_cb: Optional[Callable[[], Any]] = None
    no_echo: bool = False
    verbose: bool = False
    pedantic: bool = False
    connect_timeout: float = 2.0
    ping_interval: float = 120.0
    max_pings_outstanding: int = 2
    allow_reconnect: bool = True
    retry_on_failed_connect: bool = False
    max_reconnect_attempts: int = 60
    reconnect_time_wait: float = 2.0
    reconnect_jitter: float = 0.1
    reconnect_jitter_tls: float = 1.0
    reconnect_buffer_size: int = 8 * 1024 * 1024
    reconnect_delay_cb: Optional[Callable[[int], Any]] = None
    # nats.go's ReconnectToServer: cb(servers as nc.servers shows them, the last INFO dict)
    # -> (one of those servers, delay in seconds), asked before every reconnect attempt
    reconnect_to_server_cb: Optional[Callable[[List[str], Any], Any]] = None
    ignore_auth_error_abort: bool = False
    no_callbacks_after_close: bool = False
    socket_factory: Optional[Callable[..., Any]] = None
    # WebSocket (ws:// and wss:// URLs): a path appended to each URL's path (nats.go's
    # ProxyPath), and permessage-deflate when the server allows it
    ws_proxy_path: Optional[str] = None
    ws_compression: bool = False
    # HTTP headers of the WebSocket upgrade request: a mapping (name -> value, or a list of
    # values), or a callback returning one, asked on every connect (nats.go's
    # WebSocketConnectionHeaders / WebSocketConnectionHeadersHandler)
    ws_headers: Optional[Any] = None
    ws_headers_cb: Optional[Callable[[], Any]] = None
    # no client-side subject checks on publish and subscribe (the server still refuses
    # what it cannot take)
    skip_subject_validation: bool = False
    # servers the cluster announces (INFO connect_urls) are not added to the pool
    ignore_discovered_servers: bool = False
    # a subscription the server refuses (Permissions Violation) fails its next_msg() and
    # iteration with PermissionViolationError (error_cb hears of it either way)
    permission_err_on_subscribe: bool = False
    dont_randomize: bool = False
    inbox_prefix: str = "_INBOX"
    pending_msgs_limit: int = 512 * 1024
    pending_bytes_limit: int = 128 * 1024 * 1024
    drain_timeout: float = 30.0
    flush_timeout: float = 10.0
    # jetwire.aio: while a request, a JetStream publish or a flush awaits a reply that usually
    # comes within this many seconds, the event loop polls instead of sleeping (see
    # docs/performance.md); 0 turns it off. The blocking flavour does not use it.
    busy_poll: float = 200e-6
    max_control_line: int = 4096
    error_cb: Optional[Callable[..., Any]] = None
    disconnected_cb: Optional[Callable[..., Any]] = None
    reconnected_cb: Optional[Callable[..., Any]] = None
    closed_cb: Optional[Callable[..., Any]] = None
    # every failed reconnect attempt that is not fatal (nats.go's ReconnectErrHandler);
    # when None, each goes to error_cb
    reconnect_error_cb: Optional[Callable[..., Any]] = None
    connected_cb: Optional[Callable[..., Any]] = None
    discovered_servers_cb: Optional[Callable[..., Any]] = None
    lame_duck_mode_cb: Optional[Callable[..., Any]] = None

    def __repr__(self) -> str:
        return f"Options({', '.join(option_repr(f.name, getattr(self, f.name)) for f in fields(self))})"

    @property
    def wants_tls(self) -> bool:
        return bool(self.tls) or self.tls_context_cb is not None or bool(
            self.tls_ca_file or self.tls_cert_file)

    def ssl_context(self) -> Optional[ssl.SSLContext]:
        """The TLS context of ``tls=`` and the ``tls_*_file`` options (``tls_context_cb``
        is asked by the client itself, on every connect)."""
        if isinstance(self.tls, ssl.SSLContext):
            ctx = self.tls
        elif self.tls or self.tls_ca_file or self.tls_cert_file:
            ctx = ssl.create_default_context(cafile=self.tls_ca_file)
        else:
            return None
        if self.tls_cert_file:
            ctx.load_cert_chain(self.tls_cert_file, self.tls_key_file)
        return ctx


def make_options(servers: Union[str, Sequence[str], None], kwargs: dict) -> Options:
    """Build Options from connect()'s arguments; unknown keywords raise TypeError."""
    known = Options.__dataclass_fields__
    bad = [k for k in kwargs if k not in known]
    if bad:
        raise TypeError(f"connect() got unexpected keyword argument(s): {', '.join(sorted(bad))}")
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
    if opts.max_pings_outstanding < 1:
        raise ValueError("max_pings_outstanding must be at least 1")
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


def ws_header_list(headers: Any) -> List[Tuple[bytes, bytes]]:
    """``ws_headers`` (or what ``ws_headers_cb`` returned) as the upgrade request's extra
    header lines: a mapping of name to a value or a list of values. ``TypeError`` for
    another type, ``ValueError`` for a name or value that would break the request (empty
    name, whitespace or ``:`` in a name, CR/LF/NUL anywhere) or for a header the
    handshake sets itself (``Host``, ``Upgrade``, ``Sec-WebSocket-*``, ...)."""
    if not hasattr(headers, "items"):
        raise TypeError(f"ws_headers must be a mapping of header names to values, not {type(headers).__name__}")
    out: List[Tuple[bytes, bytes]] = []
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


def _check_inbox_prefix(prefix: Any) -> None:
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
    if o.tls_key_file and not o.tls_cert_file:
        raise ValueError("tls_key_file needs tls_cert_file")


class Server:
    """One entry of the server pool."""

    __slots__ = ("url", "display", "scheme", "host", "port", "user", "password", "discovered", "reconnects",
                 "last_attempt", "did_connect", "tls_name", "last_auth_error", "path")

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
        self.last_auth_error: Optional[str] = None  # what the server said when it last refused us
        self.tls_name: Optional[str] = None

    @property
    def is_ws(self) -> bool:
        """A WebSocket URL (``ws://`` or ``wss://``)."""
        return self.scheme in ("ws", "wss")

    @property
    def hostport(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def __repr__(self) -> str:
        return f"<Server {self.display}>"


class ServerPool:
    """Ordered pool of servers; connect_urls from INFO are added as discovered."""

    def __init__(self, urls: Sequence[str], randomize: bool = True) -> None:
        self.servers: List[Server] = [Server(u) for u in urls]
        # WebSocket and plain URLs do not mix (as nats.go): discovered URLs follow suit
        self.ws = bool(self.servers) and self.servers[0].is_ws
        if any(s.is_ws != self.ws for s in self.servers):
            raise ValueError("mixing websocket (ws://, wss://) and non-websocket URLs is not allowed")
        self.randomize = randomize
        if randomize:
            random.shuffle(self.servers)
        self.current: Optional[Server] = None

    def __len__(self) -> int:
        return len(self.servers)

    def urls(self, discovered_only: bool = False) -> List[str]:
        """The servers as shown: credentials masked (``Server.display``)."""
        return [s.display for s in self.servers if s.discovered or not discovered_only]

    def next_server(self, max_reconnects: int) -> Optional[Server]:
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

    def find(self, url: str) -> Optional[Server]:
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

    def add_discovered(self, connect_urls: Sequence[str], tls: bool) -> List[str]:
        """Add unknown connect_urls; returns the URLs that were new. Over WebSocket the
        server sends its websocket URLs (``ws_connect_urls``) as these."""
        known = {s.hostport for s in self.servers}
        if self.ws:
            scheme = "wss" if tls else "ws"
        else:
            scheme = "tls" if tls else "nats"
        added: List[Server] = []
        for hp in connect_urls:
            try:
                srv = Server(f"{scheme}://{hp}", discovered=True)
            except ValueError:
                continue
            if srv.hostport in known:
                continue
            known.add(srv.hostport)
            added.append(srv)
        if added:
            if self.randomize:
                random.shuffle(added)
            self.servers.extend(added)
        return [s.display for s in added]
