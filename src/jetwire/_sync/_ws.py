"""Blocking WebSocket transport: the TCP ``Transport`` underneath (socket, TLS, reader
thread, write deadline), the shared sans-IO ``WsAdapter`` in between, the client's byte
stream above."""
from __future__ import annotations

import socket
import ssl
import threading
import time
from typing import Any, Callable, List, Optional, Tuple

from ..connection.ws import WsAdapter
from ..errors import ProtocolError
from ..errors import TimeoutError as NatsTimeoutError
from ._transport import _INFO_LIMIT, Transport, _time_left, handshake_timeout


class WsTransport(Transport):
    """One WebSocket (``ws://``, or ``wss://``: TLS before the upgrade) connection to a
    server. ``open()`` makes the HTTP Upgrade request to ``path`` and returns the NATS
    bytes of the first WebSocket messages (the INFO line first), as the TCP transport
    does; then the reader thread unframes every read before the client sees it, and
    every write is one masked binary frame (permessage-deflate when ``compression`` is
    asked and the server agrees). Frames are made and sent under one lock, so that
    writers on several threads keep them whole and in order."""

    def __init__(self, socket_factory: Optional[Callable[..., Any]] = None, path: str = "/",
                 compression: bool = False, headers: Optional[List[Tuple[bytes, bytes]]] = None) -> None:
        super().__init__(socket_factory)
        self._path = path
        self._compression = compression
        self._headers = headers  # extra header lines of the upgrade request (ws_headers)
        self._ws: Optional[WsAdapter] = None
        self._frame_lock = threading.Lock()
        self._started = False

    @property
    def compressed(self) -> bool:
        """permessage-deflate is in use."""
        return self._ws is not None and self._ws.compressed

    def open(self, host: str, port: int, timeout: float, tls: Optional[ssl.SSLContext],
             tls_first: bool, tls_hostname: Optional[str], need_tls: Callable[[bytes], bool]) -> bytes:
        """Connect (TLS first when ``tls`` is given), upgrade to WebSocket and return the
        first NATS bytes (INFO ...\\r\\n and anything after it)."""
        hostport = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        ws = self._ws = WsAdapter(hostport, self._path, self._compression, self._headers)
        # dialling, TLS, the upgrade and the INFO share one deadline (as the TCP transport's)
        deadline = time.monotonic() + timeout
        sock = self._dial(host, port, timeout, tls, tls_hostname, deadline)
        self._sock = sock  # close() from another thread ends a handshake that hangs
        try:
            sock.settimeout(_time_left(deadline, host, port, timeout))
            sock.sendall(ws.request())
            head = bytearray()
            while b"\r\n" not in head:
                sock.settimeout(_time_left(deadline, host, port, timeout))
                try:
                    chunk = sock.recv(65536)
                except TimeoutError:  # socket.timeout: the deadline came
                    raise NatsTimeoutError(handshake_timeout(host, port, timeout)) from None
                if self.closed:
                    raise ConnectionError("closed during the handshake")
                if not chunk:
                    raise ws.closed_error() or ConnectionError("connection closed by server")
                head += ws.receive(chunk)
                ctrl = ws.take_control()
                if ctrl:
                    sock.sendall(ctrl)
                if ws.peer_closed is not None:
                    raise ws.closed_error()  # type: ignore[misc]
                if len(head) > _INFO_LIMIT:
                    raise ProtocolError(f"no INFO line from server: {bytes(head[:64])!r}")
            sock.settimeout(timeout)
            self._sock = sock
            self._tls = isinstance(sock, ssl.SSLSocket)
            self._timeout = timeout
            return bytes(head)
        except BaseException:
            self.closed = True
            try:
                sock.close()
            except OSError:
                pass
            raise

    def start(self, on_data: Callable[[Any], None], on_lost: Callable[[Optional[BaseException]], None],
              rest: bytes) -> None:
        ws = self._ws
        assert ws is not None
        if rest:
            on_data(rest)

        def feed(data: Any) -> None:  # on the reader thread
            nats = ws.receive(data)
            ctrl = ws.take_control()
            if ctrl:
                self._send_frame(ctrl)
            if nats:
                on_data(nats)
            if ws.peer_closed is not None:
                raise ws.closed_error()  # type: ignore[misc]  # the reader reports it to on_lost

        self._started = True
        super().start(feed, on_lost, b"")

    def _send_frame(self, frame: bytes) -> None:
        with self._frame_lock:
            Transport.write(self, frame)

    def write(self, data: Any, timeout: Optional[float] = None) -> None:
        ws = self._ws
        if ws is None or self.closed:
            raise ConnectionError("not connected")
        with self._frame_lock:
            Transport.write(self, ws.encode(data), timeout)

    def close(self) -> None:
        if self.closed:
            return
        ws = self._ws
        sock = self._sock
        if self._started and ws is not None and ws.peer_closed is None and sock is not None:
            # a CLOSE frame, if it goes out at once: closing never waits for the server
            if self._frame_lock.acquire(timeout=0.05):
                try:
                    frame = ws.close_frame()
                    if self._tls:
                        with self._ssl_lock:
                            sock.send(frame)  # non-blocking once started
                    else:
                        sock.send(frame, socket.MSG_DONTWAIT)
                except (OSError, ValueError):
                    pass
                finally:
                    self._frame_lock.release()
        super().close()

    abort = close
