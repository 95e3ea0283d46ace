"""Who writes to the socket in the blocking flavour (the latency paths of issue 15).

A lone publish on a quiet connection and a request are sent by the calling thread
itself, at once, with no flusher thread to wake; a stream of publishes is batched by
the flusher (far fewer writes than messages), and every message arrives. The socket is
a real one (through ``socket_factory``) that notes the thread of each ``sendall``.
"""
from __future__ import annotations

import socket
import threading
import time
from typing import Any

import jetwire


def recording_factory(calls: list[tuple[str, bytes]]) -> Any:
    class Recording(socket.socket):
        def sendall(self, data: Any, *args: Any) -> None:  # type: ignore[override]
            calls.append((threading.current_thread().name, bytes(data)))
            super().sendall(data, *args)

    def factory(host: str, port: int, timeout: float) -> socket.socket:
        sock = Recording(socket.AF_INET, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        sock.connect((host, port))
        return sock

    return factory


def test_a_lone_publish_on_a_quiet_connection_is_written_by_the_caller(nats_url: str) -> None:
    calls: list[tuple[str, bytes]] = []
    sub_nc = jetwire.connect(nats_url)
    nc = jetwire.connect(nats_url, socket_factory=recording_factory(calls))
    try:
        sub = sub_nc.subscribe("send.paths.lone")
        sub_nc.flush()
        nc.flush()
        me = threading.current_thread().name
        for i in range(3):
            del calls[:]
            time.sleep(0.001)  # not a wait for anything: 1 ms without a write is what "quiet" means
            nc.publish("send.paths.lone", b"m%d" % i)
            # written before publish() returned, by this thread
            assert calls == [(me, b"PUB send.paths.lone 2\r\nm%d\r\n" % i)]
            assert sub.next_msg(5).data == b"m%d" % i
    finally:
        nc.close()
        sub_nc.close()


def test_a_request_is_written_by_the_caller_in_one_write(nats_url: str) -> None:
    calls: list[tuple[str, bytes]] = []
    srv = jetwire.connect(nats_url)
    nc = jetwire.connect(nats_url, socket_factory=recording_factory(calls))
    try:
        srv.subscribe("send.paths.req", cb=lambda m: m.respond(m.data + b"!"))
        srv.flush()
        assert nc.request("send.paths.req", b"warm", timeout=5).data == b"warm!"  # makes the reply inbox
        me = threading.current_thread().name
        for i in range(3):
            del calls[:]
            assert nc.request("send.paths.req", b"q%d" % i, timeout=5).data == b"q%d!" % i
            assert len(calls) == 1 and calls[0][0] == me
            assert calls[0][1].startswith(b"PUB send.paths.req _INBOX.") and calls[0][1].endswith(b"\r\nq%d\r\n" % i)
    finally:
        nc.close()
        srv.close()


def test_a_stream_of_publishes_is_batched_and_every_message_arrives(nats_url: str) -> None:
    calls: list[tuple[str, bytes]] = []
    n = 20_000
    got = [0]
    done = threading.Event()

    def cb(msg: Any) -> None:
        got[0] += 1
        if got[0] == n:
            done.set()

    sub_nc = jetwire.connect(nats_url)
    nc = jetwire.connect(nats_url, socket_factory=recording_factory(calls))
    try:
        sub_nc.subscribe("send.paths.many", cb=cb, pending_msgs_limit=n + 1, pending_bytes_limit=-1)
        sub_nc.flush()
        nc.flush()
        del calls[:]
        for i in range(n):
            nc.publish("send.paths.many", b"%d" % i)
        nc.flush(10)
        assert done.wait(10), f"received {got[0]} of {n}"
        sent = b"".join(data for _, data in calls)
        assert sent.count(b"PUB send.paths.many ") == n
        assert len(calls) < n // 10  # batched, not a write per message
    finally:
        nc.close()
        sub_nc.close()


def test_the_reader_thread_never_writes(nats_url: str) -> None:
    """What a direct handler publishes (on the reader thread) goes out through the flusher:
    the reader never waits on a write."""
    calls: list[tuple[str, bytes]] = []
    other = jetwire.connect(nats_url)
    nc = jetwire.connect(nats_url, socket_factory=recording_factory(calls))
    try:
        nc.link.subscribe_direct("send.paths.direct", lambda m: nc.link.try_publish("send.paths.echo", None, m.data))
        echo = other.subscribe("send.paths.echo")
        other.flush()
        nc.flush()
        for i in range(3):
            del calls[:]
            other.publish("send.paths.direct", b"d%d" % i)
            assert echo.next_msg(5).data == b"d%d" % i
            assert [name for name, data in calls if b"send.paths.echo" in data] == ["jetwire-flusher"]
    finally:
        nc.close()
        other.close()
