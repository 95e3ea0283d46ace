"""NATS over WebSocket, sans-IO: one adapter shared by both flavours' ``_ws`` transports.

``WsAdapter`` (over the ``wsproto`` library) makes the HTTP Upgrade request, turns the
WebSocket bytes read from the socket into the plain NATS byte stream that the parser
takes (``receive``), and NATS bytes to send into one masked binary frame each
(``encode``). PING frames are answered and a CLOSE frame is answered and reported
(``peer_closed``); answers to send are collected in ``control`` (``take_control``).
With ``compression`` it offers permessage-deflate as nats-server speaks it (no context
takeover either way) and uses it only when the server accepts.
"""
from __future__ import annotations

from typing import Any

from wsproto import ConnectionType, WSConnection
from wsproto.connection import Connection
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Ping,
    RejectConnection,
    RejectData,
    Request,
    TextMessage,
)
from wsproto.extensions import Extension, PerMessageDeflate
from wsproto.frame_protocol import CloseReason
from wsproto.utilities import LocalProtocolError, RemoteProtocolError

from ..errors import ProtocolError

# the longest HTTP response head we wait for before giving up on the upgrade
_HEAD_LIMIT = 64 * 1024


def ws_path(url_path: str, proxy_path: str | None, query: str = "") -> str:
    """The request target: the URL's path with ``proxy_path`` appended (nats.go's
    ``ProxyPath``; a leading ``/`` is added when missing), ``/`` when both are empty,
    then the URL's ``query`` (``?a=b``) when it has one."""
    path = url_path or ""
    if proxy_path:
        proxy = proxy_path if proxy_path.startswith("/") else "/" + proxy_path
        path = path.rstrip("/") + proxy
    return (path or "/") + (f"?{query}" if query else "")


class WsAdapter:
    """One client WebSocket connection's protocol state (no I/O).

    ``request()`` gives the bytes of the HTTP Upgrade request; feed everything read to
    ``receive(data)``, which returns the NATS bytes it carried (raising ``ProtocolError``
    when the server refuses the upgrade or breaks the WebSocket framing); send what
    ``take_control()`` returns (PONG and CLOSE answers) and ``encode(nats_bytes)`` for
    the NATS stream. Not thread-safe: the blocking transport serialises ``encode``.
    """

    __slots__ = (
        "_conn",
        "_control",
        "_head_bytes",
        "_ws",
        "compressed",
        "compression",
        "headers",
        "host",
        "path",
        "peer_closed",
    )

    def __init__(self, host: str, path: str = "/", compression: bool = False,
                 headers: list[tuple[bytes, bytes]] | None = None) -> None:
        self.host = host  # the Host header: "host:port"
        self.path = path or "/"
        self.compression = compression
        self.headers = headers or []  # extra header lines of the upgrade request (ws_headers)
        self._ws = WSConnection(ConnectionType.CLIENT)
        self._conn: Connection | None = None
        self._control = bytearray()
        self._head_bytes = 0
        #: the server's CLOSE frame (code, reason), once received
        self.peer_closed: tuple[int, str] | None = None
        #: permessage-deflate was agreed
        self.compressed = False

    @property
    def open(self) -> bool:
        """The upgrade is done: NATS bytes flow."""
        return self._conn is not None

    def request(self) -> bytes:
        """The HTTP Upgrade request."""
        extensions: list[Extension] = []
        if self.compression:
            extensions.append(PerMessageDeflate(client_no_context_takeover=True,
                                                server_no_context_takeover=True))
        return self._ws.send(Request(host=self.host, target=self.path, extensions=extensions,
                                     extra_headers=list(self.headers)))

    def receive(self, data: bytes | bytearray | memoryview) -> bytes:
        """Take bytes read from the socket; return the NATS bytes they complete."""
        conn = self._conn
        if conn is None:
            return self._handshake(bytes(data))
        try:
            conn.receive_data(bytes(data))
        except LocalProtocolError as exc:  # bytes after the connection closed
            raise ProtocolError(f"websocket: {exc}") from None
        return self._drain(conn)

    def _handshake(self, data: bytes) -> bytes:
        ws = self._ws
        self._head_bytes += len(data)
        out = bytearray()
        try:
            ws.receive_data(data)
            # the handshake's events, then the frames that came with the 101 response
            for ev in ws.events():
                if isinstance(ev, AcceptConnection):
                    self._conn = ws.connection
                    self.compressed = any(isinstance(e, PerMessageDeflate) for e in ev.extensions)
                elif isinstance(ev, (RejectConnection, RejectData)):
                    status = getattr(ev, "status_code", None)
                    raise ProtocolError(f"websocket upgrade refused by the server"
                                        f"{f' (HTTP {status})' if status else ''}; path {self.path!r}")
                elif self._conn is not None and self._event(self._conn, ev, out):
                    break
        except RemoteProtocolError as exc:
            raise ProtocolError(f"websocket upgrade failed: {exc}") from None
        if self._conn is None and self._head_bytes > _HEAD_LIMIT:
            raise ProtocolError("websocket upgrade failed: no HTTP response head")
        return bytes(out)

    def _drain(self, conn: Connection) -> bytes:
        out = bytearray()
        for ev in conn.events():
            if self._event(conn, ev, out):
                break
        return bytes(out)

    def _event(self, conn: Connection, ev: Any, out: bytearray) -> bool:
        """Act on one event: data to ``out``, answers to ``control``; True on CLOSE."""
        kind = ev.__class__
        if kind is BytesMessage:
            out += ev.data
        elif kind is TextMessage:
            out += ev.data.encode("utf-8")
        elif kind is Ping:
            self._control += conn.send(ev.response())
        elif kind is CloseConnection:
            # the server's CLOSE, or wsproto failing a frame it could not parse
            if self.peer_closed is None:
                self.peer_closed = (int(ev.code), ev.reason or "")
            try:
                self._control += conn.send(ev.response())
            except LocalProtocolError:
                pass
            return True
        return False

    def take_control(self) -> bytes:
        """Frames to send now (answers to PING and CLOSE); empty most of the time."""
        if not self._control:
            return b""
        out = bytes(self._control)
        self._control.clear()
        return out

    def encode(self, data: Any) -> bytes:
        """One masked binary frame carrying ``data`` (compressed when agreed)."""
        conn = self._conn
        if conn is None:
            raise ConnectionError("websocket not open")
        try:
            return conn.send(BytesMessage(data=data))
        except LocalProtocolError:
            raise ConnectionError("websocket closed") from None

    def close_frame(self) -> bytes:
        """A CLOSE frame to send before closing the socket (empty when not open)."""
        conn = self._conn
        if conn is None:
            return b""
        try:
            return conn.send(CloseConnection(code=CloseReason.NORMAL_CLOSURE))
        except LocalProtocolError:
            return b""

    def closed_error(self) -> BaseException | None:
        """What the server's CLOSE frame said, as the reason the connection was lost."""
        if self.peer_closed is None:
            return None
        code, reason = self.peer_closed
        return ConnectionError(f"websocket closed by the server ({code}{': ' + reason if reason else ''})")
