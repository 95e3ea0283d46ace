"""The fault proxy itself, against a loopback echo server: each fault does what it says."""
from __future__ import annotations

import socket
import socketserver
import threading
import time

import pytest

from tests.chaos.proxy import DOWN, UP, FaultProxy


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while True:
            try:
                data = self.request.recv(65536)
            except OSError:
                return
            if not data:
                return
            self.request.sendall(data)


class _Sink(socketserver.BaseRequestHandler):
    """Records what it receives (the server never answers)."""

    got: bytearray

    def handle(self) -> None:
        while True:
            try:
                data = self.request.recv(65536)
            except OSError:
                return
            if not data:
                return
            self.server.got += data  # type: ignore[attr-defined]


def _serve(handler):
    srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    srv.got = bytearray()  # type: ignore[attr-defined]
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


@pytest.fixture
def echo():
    srv = _serve(_Echo)
    with FaultProxy(*srv.server_address).start() as proxy:
        yield proxy
    srv.shutdown()
    srv.server_close()


def _conn(proxy: FaultProxy) -> socket.socket:
    s = socket.create_connection((proxy.host, proxy.port), timeout=5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def _recv_exactly(s: socket.socket, n: int, timeout: float = 5.0) -> bytes:
    s.settimeout(timeout)
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            break
        buf += chunk
    return buf


def _closed(s: socket.socket, timeout: float = 5.0) -> bytes:
    """What arrives until the peer closes (reset or EOF)."""
    s.settimeout(timeout)
    buf = b""
    while True:
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            return buf
        if not chunk:
            return buf
        buf += chunk


def test_passes_bytes_unchanged_both_ways(echo):
    with _conn(echo) as s:
        data = bytes(range(256)) * 400
        s.sendall(data)
        assert _recv_exactly(s, len(data)) == data
    assert echo.accepted == 1
    assert echo.bytes_out[UP] == echo.bytes_out[DOWN] == len(data)


def test_trickle_writes_one_byte_at_a_time(echo):
    echo.trickle(True)
    with _conn(echo) as s:
        s.sendall(b"PING\r\nPONG\r\n")
        assert _recv_exactly(s, 12) == b"PING\r\nPONG\r\n"
    assert echo.writes[UP] == 12 and echo.writes[DOWN] == 12


def test_stall_holds_bytes_until_resume(echo):
    with _conn(echo) as s:
        s.sendall(b"a")
        assert _recv_exactly(s, 1) == b"a"
        echo.stall()
        s.sendall(b"held")
        s.settimeout(0.3)
        with pytest.raises(socket.timeout):
            s.recv(10)
        echo.resume()
        assert _recv_exactly(s, 4) == b"held"


def test_stall_for_seconds_resumes_by_itself(echo):
    with _conn(echo) as s:
        s.sendall(b"a")
        assert _recv_exactly(s, 1) == b"a"
        t0 = time.monotonic()
        echo.stall(0.3)
        s.sendall(b"later")
        assert _recv_exactly(s, 5) == b"later"
        assert time.monotonic() - t0 >= 0.3


def test_drop_one_direction_only():
    sink = _serve(_Sink)
    with FaultProxy(*sink.server_address).start() as proxy, _conn(proxy) as s:
        s.sendall(b"first")
        deadline = time.monotonic() + 5
        while bytes(sink.got) != b"first" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert bytes(sink.got) == b"first"
        proxy.drop(UP)
        s.sendall(b"lost")
        deadline = time.monotonic() + 5
        while proxy.bytes_in[UP] < 9 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert proxy.bytes_in[UP] == 9 and proxy.bytes_out[UP] == 5
        proxy.drop(None)
        s.sendall(b"back")
        deadline = time.monotonic() + 5
        while bytes(sink.got) != b"firstback" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert bytes(sink.got) == b"firstback"
    sink.shutdown()
    sink.server_close()


def test_drop_down_keeps_up_flowing(echo):
    with _conn(echo) as s:
        echo.drop(DOWN)
        s.sendall(b"x" * 10)
        deadline = time.monotonic() + 5
        while echo.bytes_in[DOWN] < 10 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert echo.bytes_out[UP] == 10 and echo.bytes_in[DOWN] == 10 and echo.bytes_out[DOWN] == 0


def test_cut_mid_frame_forwards_half_then_resets(echo):
    with _conn(echo) as s:
        echo.cut_mid_frame(DOWN)
        s.sendall(b"0123456789")
        got = _closed(s)
        assert got == b"01234"
    assert echo.open_connections == 0 or _wait_zero(echo)


def _wait_zero(proxy: FaultProxy) -> bool:
    deadline = time.monotonic() + 5
    while proxy.open_connections and time.monotonic() < deadline:
        time.sleep(0.01)
    return proxy.open_connections == 0


def test_cut_resets_and_new_connections_still_work(echo):
    with _conn(echo) as s:
        s.sendall(b"a")
        assert _recv_exactly(s, 1) == b"a"
        echo.cut()
        assert _closed(s) == b""
    with _conn(echo) as s:
        s.sendall(b"again")
        assert _recv_exactly(s, 5) == b"again"
    assert echo.accepted == 2


def test_inject_garbage_toward_the_client(echo):
    with _conn(echo) as s:
        s.sendall(b"a")
        assert _recv_exactly(s, 1) == b"a"
        echo.inject(b"\x00garbage\xff")
        assert _recv_exactly(s, 9) == b"\x00garbage\xff"


def test_latency_delays_every_write(echo):
    echo.latency(0.2)
    with _conn(echo) as s:
        t0 = time.monotonic()
        s.sendall(b"slow")
        assert _recv_exactly(s, 4) == b"slow"
        assert time.monotonic() - t0 >= 0.4  # one delay each way
    echo.heal()
    with _conn(echo) as s:
        s.sendall(b"fast")
        assert _recv_exactly(s, 4) == b"fast"


def test_target_down_closes_the_client_side():
    s0 = socket.socket()
    s0.bind(("127.0.0.1", 0))
    port = s0.getsockname()[1]
    s0.close()  # nothing listens there
    with FaultProxy("127.0.0.1", port).start() as proxy, _conn(proxy) as s:
        assert _closed(s) == b""
