# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""``Lock``: the lock of the compiled hot path (pure twin: ``jetwire.protocol._pure.lock``).

A non-reentrant lock like ``threading.Lock`` (``acquire(blocking=True, timeout=-1)``,
``release()`` by any thread, ``locked()``, a context manager) whose acquire and release
the compiled modules call as C functions (``lock.pxd``: ``lock_acquire`` /
``lock_release``): an atomic flag, one exchange to take and one store to release; a
waiter yields the CPU with the GIL released (holders keep it only for a buffer append or
swap, a queue push or pop, a dict insert or pop).

The rule of the hot path (both implementations): state that two threads change (the
outbox's buffer and counters, a subscription's queue and byte count, the ack mux's
tokens and waiters) is changed only while holding its lock when a lock is set (the
blocking flavour); the asyncio flavour runs everything on the loop's thread and sets
none. Thread safety never rests on the GIL or on "no Python code runs in between".
"""
import _thread


cdef class Lock:
    """A non-reentrant lock (``threading.Lock``'s interface) shared with compiled code."""

    def acquire(self, bint blocking=True, double timeout=-1):
        """Take the lock; False when not blocking (or after ``timeout`` seconds) without it."""
        cdef bint got
        if not blocking:
            if timeout != -1:
                raise ValueError("can't specify a timeout for a non-blocking call")
            got = jw_flag_try(&self._flag)
        elif timeout == -1:
            lock_acquire(self)
            return True
        elif timeout < 0:
            raise ValueError("timeout value must be a non-negative number")
        else:
            with nogil:
                got = jw_flag_wait_for(&self._flag, timeout)
        if got:
            self._held = True
            return True
        return False

    def release(self):
        """Release the lock (held by any thread); RuntimeError when it is not held."""
        if not self._held:
            raise RuntimeError("release unlocked lock")
        lock_release(self)

    def locked(self):
        """True while the lock is held."""
        return self._held

    def __enter__(self):
        lock_acquire(self)
        return True

    def __exit__(self, *exc):
        if not self._held:
            raise RuntimeError("release unlocked lock")
        lock_release(self)
        return None

    def __repr__(self):
        return f"<jetwire Lock {'locked' if self._held else 'unlocked'}>"


WriteLock = Lock  # the blocking writer's lock (the name the drivers use)


# Any other lock is entered and left as ``with lock:`` does; the interpreter's own lock
# (``threading.Lock``) through its methods, looked up once (``acquire`` is its
# ``__enter__``, ``release`` its ``__exit__``).
cdef object _LockType = _thread.LockType
cdef object _thread_acquire = _thread.LockType.acquire
cdef object _thread_release = _thread.LockType.release


cdef int enter_other(object lock) except -1:
    if type(lock) is _LockType:
        _thread_acquire(lock)
    else:
        lock.__enter__()
    return 0


cdef int exit_other(object lock) except -1:
    if type(lock) is _LockType:
        _thread_release(lock)
    else:
        lock.__exit__(None, None, None)
    return 0
