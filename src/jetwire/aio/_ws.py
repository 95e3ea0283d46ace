"""asyncio WebSocket transport: the TCP ``Transport`` underneath (socket, TLS, flow
control), the shared sans-IO ``WsAdapter`` in between, the client's byte stream above."""
from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from typing import Any

from ..connection.ws import WsAdapter
from ..errors import ProtocolError
from ..errors import TimeoutError as NatsTimeoutError
from ._transport import _INFO_LIMIT, Transport, handshake_timeout


class WsTransport(Transport):
    """One WebSocket (``ws://``, or ``wss://``: TLS before the upgrade) connection to a
    server. ``open()`` makes the HTTP Upgrade request to ``path`` and returns the NATS
    bytes of the first WebSocket messages (the INFO line first), as the TCP transport
    does; then every read is unframed before the client sees it and every write is one
    masked binary frame (permessage-deflate when ``compression`` is asked and the server
    agrees)."""

    def __init__(self, socket_factory: Callable[..., Any] | None = None, path: str = "/",
                 compression: bool = False, headers: list[tuple[bytes, bytes]] | None = None) -> None:
        super().__init__(socket_factory)
        self._path = path
        self._compression = compression
        self._headers = headers  # extra header lines of the upgrade request (ws_headers)
        self._ws: WsAdapter | None = None
        self._user_on_data: Callable[[bytes], None] | None = None
        self._pending = bytearray()  # NATS bytes read before start()

    @property
    def compressed(self) -> bool:
        """permessage-deflate is in use."""
        return self._ws is not None and self._ws.compressed

    async def open(self, host: str, port: int, timeout: float, tls: ssl.SSLContext | None,
                   tls_first: bool, tls_hostname: str | None,
                   need_tls: Callable[[bytes], bool]) -> bytes:
        """Connect (TLS first when ``tls`` is given), upgrade to WebSocket and return the
        first NATS bytes (INFO ...\\r\\n and anything after it)."""
        hostport = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        ws = self._ws = WsAdapter(hostport, self._path, self._compression, self._headers)
        proto = self._proto
        proto.head_fut = self._loop.create_future()
        proto.on_data = self._feed  # every byte read goes through the adapter

        async def go() -> bytes:
            await self._dial(host, port, timeout, tls, tls_hostname)
            self._send(ws.request())
            await proto.head_fut  # type: ignore[misc]
            head = bytes(self._pending)
            self._pending.clear()
            if b"\r\n" not in head:
                raise ProtocolError(f"no INFO line from server: {head[:64]!r}")
            return head

        try:
            return await asyncio.wait_for(go(), timeout)
        except TimeoutError as exc:
            self.abort()
            if str(exc):  # the socket's own (e.g. ETIMEDOUT): it says what it is
                raise
            raise NatsTimeoutError(handshake_timeout(host, port, timeout)) from None  # wait_for's has no text
        except BaseException:
            self.abort()
            raise

    def _send(self, frame: bytes) -> None:
        tr = self._tr
        if tr is not None and not tr.is_closing():
            tr.write(frame)

    def _feed(self, data: bytes) -> None:
        """The socket read ``data``: unframe it, answer control frames, pass NATS bytes on."""
        ws = self._ws
        if ws is None or ws.peer_closed is not None:
            return
        proto = self._proto
        try:
            nats = ws.receive(data)
        except ProtocolError as exc:
            self._fail(exc)
            return
        ctrl = ws.take_control()
        if ctrl:
            self._send(ctrl)
        if nats:
            on_data = self._user_on_data
            if on_data is not None:
                on_data(nats)
            else:
                self._pending += nats
                fut = proto.head_fut
                if fut is not None and not fut.done() and (
                        b"\r\n" in self._pending or len(self._pending) > _INFO_LIMIT):
                    fut.set_result(None)
        if ws.peer_closed is not None:
            self._fail(ws.closed_error())

    def _fail(self, exc: BaseException | None) -> None:
        """The WebSocket is done (CLOSE from the server, bad framing): drop the socket;
        ``on_lost`` (or ``open``) learns why."""
        proto = self._proto
        fut = proto.head_fut
        if fut is not None and not fut.done():
            fut.set_exception(exc or ConnectionError("websocket closed by the server"))
        on_lost = proto.on_lost
        proto.on_lost = None  # reported here, not again by connection_lost
        tr = self._tr
        if tr is not None:
            tr.close()  # what is queued (the CLOSE answer) goes out first
        if on_lost is not None:
            proto.lost = True
            on_lost(exc)

    def start(self, on_data: Callable[[bytes], None], on_lost: Callable[[BaseException | None], None],
              rest: bytes) -> None:
        proto = self._proto
        self._user_on_data = on_data
        proto.on_lost = on_lost
        if rest:
            on_data(rest)
        if self._pending:
            more = bytes(self._pending)
            self._pending.clear()
            on_data(more)
        if proto.lost:
            on_lost(None)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        ws = self._ws
        tr = self._tr
        if tr is None or ws is None or self.closed:
            raise ConnectionError("not connected")
        self._put(tr, ws.encode(data))

    def close(self) -> None:
        if self.closed:
            return
        ws = self._ws
        if ws is not None and ws.peer_closed is None:
            try:
                self._send(ws.close_frame())
            except (ConnectionError, RuntimeError, OSError):
                pass
        self._user_on_data = None
        super().close()

    def abort(self) -> None:
        self._user_on_data = None
        super().abort()
