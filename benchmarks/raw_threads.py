"""Row s as the blocking flavour does it, with no client logic: the limit for threads.

    python benchmarks/raw_threads.py [rounds] [scale] [url]

REQUESTERS threads share one requester socket and send their requests one after the
other, each waiting for its reply; one reader thread reads that socket and wakes the
thread a reply is for (one lock per request, released by the reader). The responder
is one thread on a second socket answering each read's requests in one write. Stdlib
sockets and regular expressions, no futures, no message objects: what Python threads can
do on this machine when every reply crosses from a reader thread to a waiting thread,
which is the work of ``jetwire`` (blocking) in row s. ``benchmarks/raw_rows.py`` row s
is the other limit: one thread with ``select``, no hand-off at all.

Prints one line per round (requests/s, p50, client CPU per request) and the medians.
Without ``url`` an embedded nats-server is started (``jetwire.testing``).
"""
from __future__ import annotations

import re
import resource
import socket
import statistics
import sys
import threading
import time

from jetwire.cli.rows import COUNTS, PAYLOAD, REQUESTERS

CONNECT = b'CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":true,"protocol":1}\r\n'
# MSG <subject> <sid> [reply] <size>\r\n<payload>\r\n, payloads of a known size (no CR LF inside)
_MSG = re.compile(rb"MSG (\S+) \d+ (?:(\S+) )?(\d+)\r\n")


def dial(url: str) -> socket.socket:
    host, port = url.split("://", 1)[-1].rsplit("@", 1)[-1].rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    head = b""
    while b"\r\n" not in head:
        head += sock.recv(65536)
    sock.sendall(CONNECT)
    sock.settimeout(None)
    return sock


def frames(sock: socket.socket, stop: threading.Event):
    """Yield each read's whole frames as a list of (subject, reply, payload); PINGs answered."""
    buf = b""
    while not stop.is_set():
        try:
            data = sock.recv(262144)
        except OSError:
            return
        if not data:
            return
        buf += data
        out = []
        pos = 0
        while True:
            m = _MSG.match(buf, pos)
            if m is None:
                end = buf.find(b"\r\n", pos)
                if end < 0 or buf.startswith(b"MSG ", pos):
                    break  # an incomplete frame: wait for more
                if buf.startswith(b"PING", pos):
                    sock.sendall(b"PONG\r\n")
                pos = end + 2
                continue
            size = int(m.group(3))
            start = m.end()
            if len(buf) < start + size + 2:
                break
            out.append((m.group(1), m.group(2), buf[start:start + size]))
            pos = start + size + 2
        buf = buf[pos:]
        if out:
            yield out


def responder(url: str, subject: bytes, ready: threading.Event, stop: threading.Event) -> None:
    sock = dial(url)
    sock.sendall(b"SUB %s q 1\r\nPING\r\n" % subject)
    while b"PONG" not in sock.recv(65536):
        pass
    ready.set()
    try:
        for batch in frames(sock, stop):
            sock.sendall(b"".join(b"PUB %s %d\r\n%s\r\n" % (reply, len(data), data) for _, reply, data in batch))
    except OSError:  # closed at the end of the round
        pass
    sock.close()


def one_round(url: str, n: int) -> tuple[float, float, float]:
    """(requests/s, p50 µs, client CPU µs per request) of n requests."""
    subject = b"bench.rt.%d" % time.monotonic_ns()
    stop = threading.Event()
    ready = threading.Event()
    resp = threading.Thread(target=responder, args=(url, subject, ready, stop), daemon=True)
    resp.start()
    ready.wait(10)
    sock = dial(url)
    sock.sendall(b"SUB _RT.* 1\r\nPING\r\n")
    while b"PONG" not in sock.recv(65536):
        pass
    waiters: dict[bytes, threading.Lock] = {}
    send_lock = threading.Lock()

    def reader() -> None:
        try:
            for batch in frames(sock, stop):
                for subj, _, _ in batch:
                    lock = waiters.pop(subj, None)
                    if lock is not None:
                        lock.release()
        except OSError:  # closed at the end of the round
            pass

    rd = threading.Thread(target=reader, daemon=True)
    rd.start()
    lats: list[list[float]] = [[] for _ in range(REQUESTERS)]

    def requester(i: int, k: int) -> None:
        lat = lats[i]
        for j in range(k):
            inbox = b"_RT.%d_%d" % (i, j)
            lock = threading.Lock()
            lock.acquire()
            waiters[inbox] = lock
            t0 = time.perf_counter()
            with send_lock:
                sock.sendall(b"PUB %s %s %d\r\n%s\r\n" % (subject, inbox, len(PAYLOAD), PAYLOAD))
            if not lock.acquire(True, 5):
                raise RuntimeError("no reply within 5 s")
            lat.append(time.perf_counter() - t0)

    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    threads = [threading.Thread(target=requester, args=(i, n // REQUESTERS)) for i in range(REQUESTERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    dt = time.perf_counter() - t0
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    stop.set()
    sock.close()
    resp.join(2)
    done = sum(len(x) for x in lats)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    p50 = statistics.median(x for lat in lats for x in lat) * 1e6
    return done / dt, p50, cpu / done * 1e6


def main(argv: list[str]) -> int:
    rounds = int(argv[0]) if argv else 3
    scale = float(argv[1]) if len(argv) > 1 else 1.0
    url = argv[2] if len(argv) > 2 else ""
    server = None
    if not url:
        from jetwire.testing import NatsServer

        server = NatsServer()
        server.start()
        url = server.url
    n = max(REQUESTERS, int(COUNTS["s"] * scale))
    got = []
    try:
        for r in range(rounds):
            rate, p50, cpu = one_round(url, n)
            got.append((rate, p50, cpu))
            print(f"round {r + 1} row s raw-threads: {rate:,.0f} req/s   p50 {p50:.1f} us   cpu {cpu:.2f} us/msg",
                  flush=True)
    finally:
        if server is not None:
            server.stop()
    med = [statistics.median(x[i] for x in got) for i in range(3)]
    print(f"median row s raw-threads: {med[0]:,.0f} req/s   p50 {med[1]:.1f} us   cpu {med[2]:.2f} us/msg")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
