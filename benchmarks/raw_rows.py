"""The raw-socket limit of BENCHMARKS.md: stdlib sockets speaking the protocol with no
client logic (no futures, no message objects, no threads), beside the clients.

    python benchmarks/raw_rows.py <row> raw <url> <monitor-url> [scale]

Rows a, c, d, e, f, f2, h and s, with the same set-up and accounting as every client
(jetwire's row harness, ``jetwire.cli.rows``). What it shows is what the server and the
loopback allow on this machine: a client that reaches a good fraction of it spends its
time where the server does.
"""
from __future__ import annotations

import os
import re
import select
import socket
import sys
import time
from collections.abc import Iterator
from typing import Any

from jetwire.cli.rows import CLIENT_ROWS, FETCH, IDLE, PAYLOAD, RATE, REQUESTERS, WAIT, WINDOW, RowFailed, main, now
from jetwire.cli.rows_aio import stamp, stamp_age

CONNECT = b'CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":true,"protocol":1}\r\n'


class Conn:
    """One socket and a frame reader: ``msgs()`` yields ``(subject, reply, payload)``."""

    def __init__(self, url: str) -> None:
        hostport = url.split("://", 1)[-1].rsplit("@", 1)[-1]
        host, port = hostport.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.pos = 0
        self.rbuf = bytearray(262144)
        self.rview = memoryview(self.rbuf)
        while b"\r\n" not in self.buf:
            self._fill()
        del self.buf[: self.buf.index(b"\r\n") + 2]
        self.sendall(CONNECT + b"PING\r\n")
        self.wait_pong()

    def sendall(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _fill(self) -> None:
        try:
            # into one buffer: sock.recv(262144) would allocate (mmap) 256 KiB per read
            n = self.sock.recv_into(self.rbuf)
        except BlockingIOError:  # a non-blocking socket (row s) with nothing to read yet
            return
        if not n:
            raise RowFailed("connection closed by the server")
        if self.pos:
            del self.buf[: self.pos]
            self.pos = 0
        self.buf += self.rview[:n]

    def frame(self, block: bool = True) -> Any:
        """The next MSG/HMSG as (subject, reply, payload) (PINGs answered, others
        skipped), None at a PONG; ``block=False``: ``...`` when no whole frame is buffered."""
        while True:
            buf = self.buf
            end = buf.find(b"\r\n", self.pos)
            if end < 0:
                if not block:
                    return ...
                self._fill()
                continue
            line = bytes(buf[self.pos:end])
            if line.startswith(b"MSG ") or line.startswith(b"HMSG "):
                parts = line.split(b" ")
                size = int(parts[-1])
                if len(buf) < end + 2 + size + 2:
                    if not block:
                        return ...
                    self._fill()
                    continue
                start = end + 2
                if line[0:1] == b"H":  # headers then payload: skip the header block
                    hsize = int(parts[-2])
                    payload = bytes(buf[start + hsize:start + size])
                    reply = parts[3] if len(parts) == 6 else b""
                else:
                    payload = bytes(buf[start:start + size])
                    reply = parts[3] if len(parts) == 5 else b""
                self.pos = start + size + 2
                return parts[1], reply, payload
            self.pos = end + 2
            if line == b"PING":
                self.sendall(b"PONG\r\n")
            elif line.startswith(b"-ERR"):
                raise RowFailed(f"server error: {line.decode(errors='replace')}")
            elif line == b"PONG":
                return None

    def read_frames(self) -> Iterator[tuple[bytes, bytes, bytes]]:
        """One read, then the MSG/HMSG frames it completed (PONGs skipped)."""
        self._fill()
        while True:
            got = self.frame(block=False)
            if got is ...:
                return
            if got is not None:
                yield got

    def wait_pong(self) -> None:
        while self.frame() is not None:
            pass

    def close(self) -> None:
        self.sock.close()


def _pub(subject: bytes, data: bytes, reply: bytes = b"") -> bytes:
    if reply:
        return b"PUB %s %s %d\r\n%s\r\n" % (subject, reply, len(data), data)
    return b"PUB %s %d\r\n%s\r\n" % (subject, len(data), data)


def row_a(cl: Any, url: str, n: int, ctx: dict[str, Any]) -> float:
    c = Conn(url)
    one = _pub(b"bench.a", PAYLOAD)
    chunk = one * 4096
    t0 = now()
    left = n
    while left:
        k = min(left, 4096)
        c.sendall(chunk if k == 4096 else one * k)
        left -= k
    c.sendall(b"PING\r\n")
    c.wait_pong()
    dt = now() - t0
    c.close()
    return dt


def row_c(cl: Any, url: str, n: int, ctx: dict[str, Any]) -> list[float]:
    srv = Conn(url)
    srv.sendall(b"SUB bench.c 1\r\nPING\r\n")
    srv.wait_pong()
    c = Conn(url)
    c.sendall(b"SUB _RAW.* 1\r\nPING\r\n")
    c.wait_pong()
    lat = []
    for i in range(n):
        t0 = now()
        c.sendall(_pub(b"bench.c", PAYLOAD, b"_RAW.%d" % i))
        got = srv.frame()
        assert got is not None
        srv.sendall(_pub(got[1], got[2]))
        if c.frame() is None:
            raise RowFailed("no reply")
        lat.append(now() - t0)
    c.close()
    srv.close()
    return lat


def _js_conn(url: str) -> Conn:
    c = Conn(url)
    c.sendall(b"SUB _RAW.* 1\r\nPING\r\n")
    c.wait_pong()
    return c


def row_d(cl: Any, url: str, n: int, ctx: dict[str, Any]) -> float:
    c = _js_conn(url)
    subj = ctx["subject"].encode()
    t0 = now()
    for i in range(n):
        c.sendall(_pub(subj, PAYLOAD, b"_RAW.%d" % i))
        got = c.frame()
        if got is None or b'"seq"' not in got[2]:
            raise RowFailed(f"bad ack: {got!r}")
    dt = now() - t0
    c.close()
    return dt


def row_e(cl: Any, url: str, n: int, ctx: dict[str, Any]) -> float:
    """Up to WINDOW publishes in flight; acks are counted in each read (every ack is one
    ``MSG`` on the reply subscription), the next batch goes out in one write."""
    c = _js_conn(url)
    subj = ctx["subject"].encode()
    sock = c.sock
    sent = acked = 0
    tail = b""
    rview = c.rview
    t0 = now()
    while acked < n:
        room = min(n - sent, WINDOW - (sent - acked))
        if room > 0:
            sock.sendall(b"".join(_pub(subj, PAYLOAD, b"_RAW.%d" % (sent + k)) for k in range(room)))
            sent += room
        got = sock.recv_into(c.rbuf)
        if not got:
            raise RowFailed("connection closed by the server")
        data = tail + rview[:got]
        acked += data.count(b"MSG _RAW.")
        tail = data[-8:]  # a header split across reads is counted once
        if b"MSG _RAW." in tail:
            tail = tail[tail.rindex(b"MSG _RAW.") + 1:]
    dt = now() - t0
    c.close()
    return dt


_MSG_REPLY = re.compile(rb"MSG [^ \r\n]+ [^ \r\n]+ ([^ \r\n]+) [0-9]+\r\n")


def _fetch(url: str, n: int, ctx: dict[str, Any], ack: bool) -> float:
    """Pull requests of FETCH messages, one after the other as a fetch loop does. Each
    read's whole lines are scanned with one regular expression for the messages' ack
    subjects (no frame objects); with ``ack`` their acks go out in one write per read."""
    c = _js_conn(url)
    sock, rbuf, rview = c.sock, c.rbuf, c.rview
    api = b"$JS.API.CONSUMER.MSG.NEXT.%s.%s" % (ctx["stream"].encode(), ctx["consumer"].encode())
    findall = _MSG_REPLY.findall
    got = 0
    t0 = now()
    # an experiment: RAW_FETCH_SUB=1 sends a SUB, PING and UNSUB per fetch (jetwire's fetch
    # before it held its confirming PING back), "sub" the SUB and UNSUB alone (a new inbox
    # per fetch, as jetwire's and nats.go's jetstream Fetch), "ping" the PING alone
    extra = os.environ.get("RAW_FETCH_SUB", "")
    per_fetch_sub = extra in ("1", "sub")
    per_fetch_ping = extra in ("1", "ping")
    while got < n:
        want = min(FETCH, n - got)
        body = b'{"batch":%d,"expires":%d}' % (want, int(WAIT * 1e9))
        if per_fetch_sub:
            out = b"UNSUB %d\r\nSUB _F.%d %d\r\n" % (got + 100, got, got + 101) + _pub(api, body, b"_F.%d" % got)
        else:
            out = _pub(api, body, b"_RAW.%d" % got)
        sock.sendall(out + b"PING\r\n" if per_fetch_ping else out)
        k = 0
        tail = b""
        while k < want:
            r = sock.recv_into(rbuf)
            if not r:
                raise RowFailed("connection closed by the server")
            data = tail + rview[:r]
            cut = data.rfind(b"\r\n") + 2  # whole lines now, the rest with the next read
            tail = data[cut:]
            lines = data[:cut]
            if per_fetch_ping:
                lines = lines.replace(b"PONG\r\n", b"")
            if b"HMSG" in lines:  # a status (404/408): the pull ended short
                raise RowFailed(f"lost messages: fetched {got + k} of {n}")
            replies = findall(lines)
            k += len(replies)
            if ack and replies:
                sock.sendall(b"".join([b"PUB %s 4\r\n+ACK\r\n" % rp for rp in replies]))
        got += k
    if ack:
        c.sendall(b"PING\r\n")
        c.wait_pong()
    dt = now() - t0
    ctx["received"] = got
    c.close()
    return dt


def row_f(cl: Any, url: str, n: int, ctx: dict[str, Any]) -> float:
    return _fetch(url, n, ctx, ack=False)


def row_f2(cl: Any, url: str, n: int, ctx: dict[str, Any]) -> float:
    return _fetch(url, n, ctx, ack=True)


def row_h(cl: Any, url: str, n: int, ctx: dict[str, Any]) -> list[float]:
    """One thread: publish when due, then read the subscriber's socket until it came."""
    sub = Conn(url)
    sub.sendall(b"SUB bench.h 1\r\nPING\r\n")
    sub.wait_pong()
    pub = Conn(url)
    interval = 1.0 / RATE
    lat = []
    t0 = now()
    for i in range(n):
        delay = t0 + i * interval - now()
        if delay > 0:
            time.sleep(delay)
        pub.sendall(_pub(b"bench.h", stamp()))
        got = sub.frame()
        if got is None:
            raise RowFailed("no message")
        lat.append(stamp_age(got[2]))
    pub.close()
    sub.close()
    return lat


def _send_all(c: Conn, frames: list[bytes]) -> None:
    c.sock.setblocking(True)
    c.sendall(b"".join(frames))
    c.sock.setblocking(False)


def row_s(cl: Any, url: str, n: int, ctx: dict[str, Any]) -> tuple[float, list[float]]:
    """One thread with ``select``: a responder socket (one queue subscription) and a
    requester socket keeping REQUESTERS requests in flight; each read's answers (or next
    requests) go out in one write. No service protocol (no stats, no discovery)."""
    subject = b"bench.s.%d" % os.getpid()
    srv = Conn(url)
    srv.sendall(b"SUB %s q 1\r\nPING\r\n" % subject)
    srv.wait_pong()
    c = Conn(url)
    c.sendall(b"SUB _RAW.* 1\r\nPING\r\n")
    c.wait_pong()
    srv.sock.setblocking(False)
    c.sock.setblocking(False)
    started: dict[int, float] = {}
    lat: list[float] = []
    sent = 0
    t0 = now()
    first = []
    for _ in range(min(REQUESTERS, n)):
        started[sent] = now()
        first.append(_pub(subject, PAYLOAD, b"_RAW.%d" % sent))
        sent += 1
    _send_all(c, first)
    while len(lat) < n:
        ready, _, _ = select.select([srv.sock, c.sock], [], [], IDLE)
        if not ready:
            raise RowFailed(f"{len(lat)} of {n} requests answered")
        if srv.sock in ready:
            answers = [_pub(got[1], got[2]) for got in srv.read_frames()]
            if answers:
                _send_all(srv, answers)
        if c.sock in ready:
            more = []
            for got in c.read_frames():
                lat.append(now() - started.pop(int(got[0][5:])))
                if sent < n:
                    started[sent] = now()
                    more.append(_pub(subject, PAYLOAD, b"_RAW.%d" % sent))
                    sent += 1
            if more:
                _send_all(c, more)
    dt = now() - t0
    c.close()
    srv.close()
    return dt, lat


class Raw:
    """The raw-socket limit as a row client."""

    name = "raw"

    def __init__(self) -> None:
        impl = {"a": row_a, "c": row_c, "d": row_d, "e": row_e, "f": row_f, "f2": row_f2, "h": row_h,
                "s": row_s}
        self.rows = {r: impl[r] for r in CLIENT_ROWS[self.name]}


CLIENT = Raw()

if __name__ == "__main__":
    sys.exit(main(peer=CLIENT))
