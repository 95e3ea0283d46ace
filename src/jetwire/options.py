"""Connection options and the server pool (pure state, no I/O)."""
from __future__ import annotations

import random
import ssl
from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional, Sequence, Union
from urllib.parse import unquote, urlparse

from .errors import NoServersError

DEFAULT_URL = "nats://127.0.0.1:4222"


@dataclass
class Options:
    servers: List[str] = field(default_factory=lambda: [DEFAULT_URL])
    name: Optional[str] = None
    user: Optional[str] = None
    password: Optional[str] = None
    token: Optional[str] = None
    nkey_seed: Optional[str] = None
    creds: Optional[str] = None
    tls: Union[ssl.SSLContext, bool, None] = None
    tls_hostname: Optional[str] = None
    tls_handshake_first: bool = False
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
    dont_randomize: bool = False
    inbox_prefix: str = "_INBOX"
    pending_msgs_limit: int = 512 * 1024
    pending_bytes_limit: int = 128 * 1024 * 1024
    drain_timeout: float = 30.0
    flush_timeout: float = 10.0
    max_control_line: int = 4096
    error_cb: Optional[Callable[..., Any]] = None
    disconnected_cb: Optional[Callable[..., Any]] = None
    reconnected_cb: Optional[Callable[..., Any]] = None
    closed_cb: Optional[Callable[..., Any]] = None
    discovered_servers_cb: Optional[Callable[..., Any]] = None
    lame_duck_mode_cb: Optional[Callable[..., Any]] = None

    def ssl_context(self) -> Optional[ssl.SSLContext]:
        if isinstance(self.tls, ssl.SSLContext):
            return self.tls
        if self.tls:
            return ssl.create_default_context()
        return None


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
    return opts


class Server:
    """One entry of the server pool."""

    __slots__ = ("url", "scheme", "host", "port", "user", "password", "discovered", "reconnects",
                 "last_attempt", "did_connect", "tls_name")

    def __init__(self, url: str, discovered: bool = False) -> None:
        if "://" not in url:
            url = "nats://" + url
        u = urlparse(url)
        if u.scheme not in ("nats", "tls", "ws", "wss"):
            raise ValueError(f"unsupported URL scheme in {url!r}")
        if u.scheme in ("ws", "wss"):
            raise ValueError("websocket URLs are not supported")
        self.scheme = u.scheme
        self.host = u.hostname or "127.0.0.1"
        try:
            self.port = u.port or 4222
        except ValueError as exc:
            raise ValueError(f"bad port in {url!r}") from exc
        self.user = unquote(u.username) if u.username is not None else None
        self.password = unquote(u.password) if u.password is not None else None
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.url = f"{u.scheme}://{host}:{self.port}"
        self.discovered = discovered
        self.reconnects = 0
        self.last_attempt = 0.0
        self.did_connect = False
        self.tls_name: Optional[str] = None

    @property
    def hostport(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def __repr__(self) -> str:
        return f"<Server {self.url}>"


class ServerPool:
    """Ordered pool of servers; connect_urls from INFO are added as discovered."""

    def __init__(self, urls: Sequence[str], randomize: bool = True) -> None:
        self.servers: List[Server] = [Server(u) for u in urls]
        self.randomize = randomize
        if randomize:
            random.shuffle(self.servers)
        self.current: Optional[Server] = None

    def __len__(self) -> int:
        return len(self.servers)

    def urls(self, discovered_only: bool = False) -> List[str]:
        return [s.url for s in self.servers if s.discovered or not discovered_only]

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

    def add_discovered(self, connect_urls: Sequence[str], tls: bool) -> List[str]:
        """Add unknown connect_urls; returns the URLs that were new."""
        known = {s.hostport for s in self.servers}
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
        return [s.url for s in added]
