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
from typing import Any

__all__ = ["Lock", "WriteLock", "reader_idle", "recv_spin", "spin_wait"]

WriteLock = Lock  # the blocking writer's lock (the name the drivers use)


def recv_spin(sock: socket.socket, buf: bytearray, spin: float, reader: bool = False) -> int:
    """Read from ``sock`` (a socket in blocking mode) into ``buf`` without blocking, trying
    again for up to ``spin`` seconds while nothing has arrived: the bytes read (0: the peer
    closed), -1 when nothing came in time (then block in ``recv_into``). OSError on a
    socket error. ``reader``: the compiled twin's hint for ``spin_wait`` (none here)."""
    deadline = time.monotonic() + spin
    recv_into = sock.recv_into
    while True:
        try:
            return recv_into(buf, 0, socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            if time.monotonic() >= deadline:
                return -1


def reader_idle() -> None:
    """The compiled twin's hint for ``spin_wait`` (none here)."""


def spin_wait(lock: Any, spin: float, settle: float = 0.0) -> bool:
    """Take ``lock`` if it comes free within ``spin`` seconds (here by waiting on it: the
    compiled twin polls without sleeping); True when taken."""
    return bool(lock.acquire(True, spin))
