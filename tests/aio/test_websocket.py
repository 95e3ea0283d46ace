"""NATS over WebSocket against a real nats-server's websocket listener: JetStream, wss
with TLS options, permessage-deflate on and off (checked on the wire), reconnect from one
ws server to another, ws_proxy_path through a path-checking proxy, server PING and CLOSE
frames (asyncio source; the blocking twin is generated). The whole core-client module
runs over ws as well (tests/aio/test_core_client.py)."""
from __future__ import annotations

import socket
import struct
import threading

import pytest
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, BytesMessage, CloseConnection, Ping, Pong, Request

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims
from jetwire.testing.certs import make_tls_files, server_tls_config
from tests.aio._helpers import uniq


class _Relay:
    """A loopback HTTP proxy in front of a websocket listener. It answers 404 unless the
    upgrade request asks for ``path`` (when given), and records the bytes each way
    before passing them on: ``up`` (client to server) and ``down``."""

    def __init__(self, upstream_port: int, path=None) -> None:
        self.upstream_port = upstream_port
        self.path = path
        self.paths: list = []
        self.heads: list = []  # each upgrade request's HTTP head, as it came
        self.up = bytearray()
        self.down = bytearray()
        self._socks: list = []
        self._ls = socket.socket()
        self._ls.bind(("127.0.0.1", 0))
        self._ls.listen(8)
        self.port = self._ls.getsockname()[1]
        self.url = f"ws://127.0.0.1:{self.port}"
        threading.Thread(target=self._accept, daemon=True).start()

    def reset(self) -> None:
        self.paths.clear()
        self.heads.clear()
        self.up.clear()
        self.down.clear()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._ls.accept()
            except OSError:
                return
            self._socks.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn) -> None:
        head = b""
        try:
            while b"\r\n\r\n" not in head:
                data = conn.recv(4096)
                if not data:
                    conn.close()
                    return
                head += data
        except OSError:
            return
        target = head.split(b" ", 2)[1].decode()
        self.paths.append(target)
        self.heads.append(bytes(head))
        if self.path is not None and target != self.path:
            conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            conn.close()
            return
        up = socket.create_connection(("127.0.0.1", self.upstream_port))
        self._socks.append(up)
        self.up += head
        up.sendall(head)
        threading.Thread(target=self._pump, args=(up, conn, self.down), daemon=True).start()
        self._pump(conn, up, self.up)

    @staticmethod
    def _pump(src, dst, record) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                record += data
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def drop(self) -> None:
        """Cut every connection (the relay keeps listening)."""
        socks, self._socks = self._socks, []
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
                s.close()
            except OSError:
                pass

    def close(self) -> None:
        self._ls.close()
        for s in self._socks:
            try:
                s.close()
            except OSError:
                pass


def _frames(stream: bytes, masked: bool) -> list:
    """(rsv1, opcode, payload length) of each whole WebSocket frame after the HTTP head."""
    out = []
    i = stream.index(b"\r\n\r\n") + 4
    while i + 2 <= len(stream):
        b0, b1 = stream[i], stream[i + 1]
        assert bool(b1 & 0x80) == masked, "client frames are masked, server frames are not"
        n = b1 & 0x7F
        i += 2
        if n == 126:
            n = struct.unpack("!H", stream[i:i + 2])[0]
            i += 2
        elif n == 127:
            n = struct.unpack("!Q", stream[i:i + 8])[0]
            i += 8
        i += 4 if masked else 0
        if i + n > len(stream):
            break
        out.append((bool(b0 & 0x40), b0 & 0x0F, n))
        i += n
    return out


async def test_ws_jetstream_publish_and_fetch(nats_ws_url):
    nc = await jetwire.connect(nats_ws_url)
    try:
        assert nc.connected_url == nats_ws_url
        js = nc.jetstream()
        name = uniq("WS")
        await js.create_stream(name=name, subjects=[f"{name}.>"])
        for i in range(20):
            ack = await js.publish(f"{name}.x", b"%d" % i, headers={"I": str(i)})
            assert ack.stream == name and ack.seq == i + 1
        futs = [await js.publish_async(f"{name}.y", b"async-%d" % i) for i in range(10)]
        assert [(await prims.wait_future(f, 5)).seq for f in futs] == list(range(21, 31))
        cons = await js.create_consumer(name, durable_name="d", filter_subject=f"{name}.x")
        batch = await cons.fetch(20, max_wait=5)
        got = []
        async for m in batch:
            got.append((m.data, m.headers["I"], m.metadata.sequence.stream))
            await m.ack_sync()
        assert got == [(b"%d" % i, str(i), i + 1) for i in range(20)]
        info = await cons.info()
        assert info.num_ack_pending == 0 and info.num_pending == 0
        await js.delete_stream(name)
    finally:
        await nc.close()


async def test_wss_with_tls_options(nats_server_factory, tmp_path):
    files = make_tls_files(tmp_path)
    srv = nats_server_factory(websocket={"tls": server_tls_config(files)})
    assert srv.ws_url.startswith("wss://")
    nc = await jetwire.connect(srv.ws_url, tls_ca_file=files["ca_file"])
    try:
        assert nc.connected_url == srv.ws_url
        sub = await nc.subscribe("wss.x")
        await nc.publish("wss.x", b"over tls", headers={"K": "v"})
        msg = await sub.next_msg(timeout=5)
        assert msg.data == b"over tls" and msg.headers["K"] == "v"
    finally:
        await nc.close()
    # the server's certificate is checked: without its CA the connection is refused
    with pytest.raises(jetwire.NoServersError):
        await jetwire.connect(srv.ws_url, allow_reconnect=False, connect_timeout=2)
    # and ws:// (no TLS) cannot talk to a TLS listener
    with pytest.raises(jetwire.NoServersError):
        await jetwire.connect(srv.ws_url.replace("wss://", "ws://"), allow_reconnect=False, connect_timeout=2)


async def test_ws_compression_on_and_off(nats_server_factory):
    srv = nats_server_factory(websocket={"compression": True})
    relay = _Relay(srv.ws_port)
    big = b"jetwire over websocket " * 8000  # ~180 KB that deflate shrinks a lot
    try:
        for compress in (True, False):
            relay.reset()
            nc = await jetwire.connect(relay.url, ws_compression=compress)
            try:
                sub = await nc.subscribe("z.x")
                await nc.publish("z.x", big, headers={"Compressed": str(compress)})
                msg = await sub.next_msg(timeout=5)
                assert msg.data == big and msg.headers["Compressed"] == str(compress)
            finally:
                await nc.close()
            response = bytes(relay.down[:relay.down.index(b"\r\n\r\n")]).lower()
            assert (b"permessage-deflate" in response) == compress
            up = _frames(bytes(relay.up), masked=True)
            down = _frames(bytes(relay.down), masked=False)
            assert up and down
            assert all(op == 2 for _, op, _ in up if op < 8), "NATS goes in binary frames"
            assert any(rsv1 for rsv1, _, _ in up) == compress
            assert any(rsv1 for rsv1, _, _ in down) == compress
            sent = sum(n for _, _, n in up)
            assert (sent < len(big) // 4) if compress else (sent > len(big))
    finally:
        relay.close()
    # a server without compression: asked for, not used, and everything still works
    plain = nats_server_factory(websocket=True)
    relay = _Relay(plain.ws_port)
    try:
        nc = await jetwire.connect(relay.url, ws_compression=True)
        sub = await nc.subscribe("z.y")
        await nc.publish("z.y", big)
        assert (await sub.next_msg(timeout=5)).data == big
        await nc.close()
        assert not any(rsv1 for rsv1, _, _ in _frames(bytes(relay.up), masked=True))
    finally:
        relay.close()


async def test_ws_reconnect_to_another_server(nats_server_factory):
    a = nats_server_factory(websocket=True)
    b = nats_server_factory(websocket=True)
    reconnected = prims.Signal()
    nc = await jetwire.connect([a.ws_url, b.ws_url], dont_randomize=True, reconnect_time_wait=0.1,
                               max_reconnect_attempts=-1, reconnected_cb=reconnected.set)
    other = None
    try:
        assert nc.connected_url == a.ws_url
        assert nc.servers == [a.ws_url, b.ws_url]
        sub = await nc.subscribe("rc.ws")
        await nc.flush()
        a.stop()
        assert await reconnected.wait(20)
        assert nc.connected_url == b.ws_url
        other = await jetwire.connect(b.ws_url)
        await other.publish("rc.ws", b"after the move")
        await other.flush()
        assert (await sub.next_msg(timeout=5)).data == b"after the move"
        resp = await nc.request("$JS.API.INFO", b"", timeout=5)
        assert b"account_info_response" in resp.data
    finally:
        if other is not None:
            await other.close()
        await nc.close()


async def test_ws_proxy_path(nats_server_factory):
    srv = nats_server_factory(websocket=True)
    relay = _Relay(srv.ws_port, path="/nats/ws")
    try:
        nc = await jetwire.connect(relay.url, ws_proxy_path="nats/ws")
        try:
            sub = await nc.subscribe("pp.x")
            await nc.publish("pp.x", b"through the proxy")
            assert (await sub.next_msg(timeout=5)).data == b"through the proxy"
            assert nc.connected_url == relay.url
        finally:
            await nc.close()
        # the proxy path is appended to the URL's own path
        nc = await jetwire.connect(relay.url + "/nats", ws_proxy_path="/ws")
        assert nc.connected_url == relay.url + "/nats"
        await nc.flush()
        await nc.close()
        assert relay.paths == ["/nats/ws", "/nats/ws"]
        # without it the proxy refuses the upgrade, and the error says so
        with pytest.raises(jetwire.NoServersError, match="404"):
            await jetwire.connect(relay.url, allow_reconnect=False, connect_timeout=2)
        assert relay.paths[-1] == "/"
    finally:
        relay.close()


async def test_ws_and_plain_urls_do_not_mix():
    with pytest.raises(ValueError, match="mixing"):
        await jetwire.connect(["ws://127.0.0.1:1", "nats://127.0.0.1:2"])


def _ws_fake_server(script):
    """A fake NATS-over-WebSocket server: the upgrade and the NATS handshake, then
    ``script(conn, ws, read_event)``; what it saw is in the returned list."""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)
    port = ls.getsockname()[1]
    seen: list = []

    def serve():
        conn, _ = ls.accept()
        ws = WSConnection(ConnectionType.SERVER)
        pending: list = []

        def read_event():  # the next WebSocket event from the client; None at EOF
            while not pending:
                data = conn.recv(65536)
                if not data:
                    return None
                ws.receive_data(data)
                pending.extend(ws.events())
            return pending.pop(0)

        try:
            ev = read_event()
            assert isinstance(ev, Request)
            conn.sendall(ws.send(AcceptConnection()))
            conn.sendall(ws.send(BytesMessage(data=b'INFO {"server_id":"fake","max_payload":1048576,'
                                                   b'"headers":true,"proto":1}\r\n')))
            buf = b""
            while b"PING\r\n" not in buf:
                ev = read_event()
                if ev is None:
                    return
                if isinstance(ev, BytesMessage):
                    buf += ev.data
            conn.sendall(ws.send(BytesMessage(data=b"PONG\r\n")))
            script(conn, ws, read_event, seen)
        except (OSError, AssertionError) as exc:
            seen.append(exc)
        finally:
            conn.close()
            ls.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return port, t, seen


def _ping_then_close(conn, ws, read_event, seen):
    conn.sendall(ws.send(Ping(payload=b"are you there")))
    while True:
        ev = read_event()
        if ev is None or isinstance(ev, Pong):
            seen.append(ev)
            break
    conn.sendall(ws.send(CloseConnection(code=1001, reason="going away")))
    while True:
        ev = read_event()
        if ev is None or isinstance(ev, CloseConnection):
            seen.append(ev)
            break


async def test_ws_server_ping_and_close_frames():
    port, t, seen = _ws_fake_server(_ping_then_close)
    disconnected = prims.Signal()
    closed = prims.Signal()
    nc = await jetwire.connect(f"ws://127.0.0.1:{port}", allow_reconnect=False,
                               disconnected_cb=disconnected.set, closed_cb=closed.set)
    assert await closed.wait(10)
    assert nc.is_closed
    t.join(5)
    pong, close = seen
    assert isinstance(pong, Pong) and pong.payload == b"are you there"
    assert isinstance(close, CloseConnection)  # the client answers the server's CLOSE


async def test_ws_connection_dropped_mid_stream_reconnects(nats_server_factory):
    srv = nats_server_factory(websocket=True)
    relay = _Relay(srv.ws_port)
    reconnected = prims.Signal()
    nc = await jetwire.connect(relay.url, reconnect_time_wait=0.1, max_reconnect_attempts=-1,
                               reconnected_cb=reconnected.set)
    try:
        sub = await nc.subscribe("lost.x")
        await nc.flush()
        relay.drop()  # the TCP connection goes without a CLOSE frame
        assert await reconnected.wait(10)
        assert nc.connected_url == relay.url
        await nc.publish("lost.x", b"still here")
        assert (await sub.next_msg(timeout=5)).data == b"still here"
        assert nc.stats["reconnects"] == 1
    finally:
        await nc.close()
        relay.close()
