"""``python -m jetwire.testing``: start an embedded nats-server, check that it answers
PING and JetStream requests over a raw socket, print what it found, stop it."""

from __future__ import annotations

import json
import socket
import sys
import time
from typing import Any

from .server import NatsServer, find_nats_server


def _read_until(sock: socket.socket, buf: bytearray, marker: bytes, deadline: float) -> bytes:
    while marker not in buf:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("server closed the connection")
        buf += chunk
    i = buf.index(marker) + len(marker)
    out = bytes(buf[:i])
    del buf[:i]
    return out


def smoke(timeout: float = 10.0) -> dict[str, Any]:
    with NatsServer() as server:
        deadline = time.monotonic() + timeout
        with socket.create_connection((server.host, server.port), timeout=timeout) as sock:
            buf = bytearray()
            info = json.loads(_read_until(sock, buf, b"\r\n", deadline)[5:])
            sock.sendall(b'CONNECT {"verbose":false,"pedantic":false}\r\nPING\r\n')
            pong = _read_until(sock, buf, b"\r\n", deadline)
            if pong != b"PONG\r\n":
                raise RuntimeError(f"expected PONG, got {pong!r}")
            sock.sendall(b"SUB _INBOX.smoke 1\r\nPUB $JS.API.INFO _INBOX.smoke 0\r\n\r\n")
            header = _read_until(sock, buf, b"\r\n", deadline)
            size = int(header.split()[-1])
            payload = _read_until(sock, buf, b"\r\n", deadline)
            while len(payload) < size + 2:
                payload += _read_until(sock, buf, b"\r\n", deadline)
            account = json.loads(payload[:size])
        return {"url": server.url, "version": info.get("version"), "jetstream": account}


def main() -> int:
    print(f"nats-server binary: {find_nats_server()}")
    t0 = time.perf_counter()
    result = smoke()
    ms = (time.perf_counter() - t0) * 1000
    print(f"embedded nats-server {result['version']} at {result['url']}: PING/PONG ok")
    js = result["jetstream"]
    if js.get("type") != "io.nats.jetstream.api.v1.account_info_response" or "error" in js:
        print(f"JetStream account info failed: {js}", file=sys.stderr)
        return 1
    print(f"JetStream account info ok (streams={js.get('streams')}, api level={js.get('api', {}).get('level')})")
    print(f"start, check and stop took {ms:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
