"""``Lock``: the lock of the hot path (twin of the compiled ``jetwire._c.lock``).

Here it is the interpreter's own lock (``threading.Lock``): the pure modules take any lock
through ``with lock:``. The rule both implementations follow: state that two threads change
(the outbox's buffer and counters, a subscription's queue and byte count, the ack mux's
tokens and waiters) is changed only while holding its lock when a lock is set (the
blocking flavour); the asyncio flavour runs everything on the loop's thread and sets none.
Thread safety never rests on the GIL or on "no Python code runs in between".
"""
from __future__ import annotations

from _thread import allocate_lock as Lock

__all__ = ["Lock", "WriteLock"]

WriteLock = Lock  # the blocking writer's lock (the name the drivers use)
