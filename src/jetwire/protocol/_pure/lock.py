"""``Lock``: the lock of the hot path (twin of the compiled ``jetwire._c.lock``).

Here it is the interpreter's own lock (``threading.Lock``): the pure modules take any lock
through ``with lock:``. The rule both implementations follow: state that two threads change
(the outbox's buffer and counters, a subscription's queue and byte count, the ack mux's
tokens and waiters) is changed only while holding its lock when a lock is set (the
blocking flavour); the asyncio flavour runs everything on the loop's thread and sets none.
Thread safety never rests on the GIL or on "no Python code runs in between".
"""
from __future__ import annotations

import socket
import time
from _thread import allocate_lock as Lock

__all__ = ["Lock", "WriteLock", "recv_spin"]

WriteLock = Lock  # the blocking writer's lock (the name the drivers use)


def recv_spin(sock: socket.socket, buf: bytearray, spin: float) -> int:
    """Read from ``sock`` (a socket in blocking mode) into ``buf`` without blocking, trying
    again for up to ``spin`` seconds while nothing has arrived: the bytes read (0: the peer
    closed), -1 when nothing came in time (then block in ``recv_into``). OSError on a
    socket error."""
    deadline = time.monotonic() + spin
    recv_into = sock.recv_into
    while True:
        try:
            return recv_into(buf, 0, socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            if time.monotonic() >= deadline:
                return -1
