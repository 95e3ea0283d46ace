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
from os import strerror as _strerror


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


# -- waiting for the socket with the core kept awake -------------------------------------
cdef extern from *:
    """
    #include <sys/socket.h>
    #include <errno.h>
    #include <time.h>
    /* reader threads between a poll that returned data and their next poll: in Python,
       holding the GIL or about to (a hint for spin_wait, never needed for correctness) */
    static int jw_readers_busy = 0;
    static __thread int jw_me_busy = 0;  /* this thread counts in jw_readers_busy */
    static inline void jw_reader_idle(void) {
        if (jw_me_busy) { jw_me_busy = 0; __atomic_fetch_sub(&jw_readers_busy, 1, __ATOMIC_RELEASE); }
    }
    static inline void jw_reader_busy(void) {
        if (!jw_me_busy) { jw_me_busy = 1; __atomic_fetch_add(&jw_readers_busy, 1, __ATOMIC_ACQ_REL); }
    }
    /* recv() without blocking, retried for up to `spin` seconds while nothing has arrived:
       the bytes read (0: the peer closed), -1 when nothing came in time, -2 - errno on
       an error. */
    static Py_ssize_t jw_recv_spin(int fd, char* p, size_t len, double spin) {
        struct timespec t0;
        ssize_t n;
        int i = 0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (;;) {
            n = recv(fd, p, len, MSG_DONTWAIT);
            if (n >= 0) return n;
            if (errno == EINTR) continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK) return -2 - errno;
            if ((++i & 15) == 0 && jw_elapsed(&t0) >= spin) return -1;
            jw_cpu_relax();
        }
    }
    """
    Py_ssize_t jw_recv_spin(int fd, char* p, size_t len, double spin) nogil
    void jw_reader_idle() nogil
    void jw_reader_busy() nogil


def recv_spin(sock, unsigned char[::1] buf, double spin, bint reader=False):
    """Read from ``sock`` (a socket in blocking mode) into ``buf`` without blocking,
    trying again for up to ``spin`` seconds (the GIL released) while nothing has arrived:
    the bytes read (0: the peer closed), -1 when nothing came in time (then block in
    ``recv_into``). OSError on a socket error. ``reader``: the caller is a connection's reader thread, which
    ``spin_wait`` lets route what it read before taking the GIL (until the thread's next
    poll, or ``reader_idle()``, which it calls before any other wait and when it ends)."""
    cdef Py_ssize_t n
    cdef size_t size = buf.shape[0]
    cdef int fd = sock.fileno()
    if fd < 0:
        raise OSError(9, _strerror(9))
    if reader:
        jw_reader_idle()
    with nogil:
        n = jw_recv_spin(fd, <char*>&buf[0], size, spin)
    if reader and n > 0:
        jw_reader_busy()
    if n < -1:
        raise OSError(-2 - n, _strerror(-2 - n))
    return n


cdef extern from *:
    """
    /* Wait for flag `f` (taken when free) for up to `spin` seconds without sleeping; once
       taken, wait up to `settle` seconds more while a reader thread is routing what it read
       (it holds the GIL: taking it now would sleep until the reader lets go). 1 when taken. */
    static int jw_spin_wait(int* f, double spin, double settle) {
        struct timespec t0;
        int i = 0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (;;) {
            if (!__atomic_load_n(f, __ATOMIC_RELAXED) && jw_flag_try(f)) break;
            if ((++i & 15) == 0 && jw_elapsed(&t0) >= spin) return 0;
            jw_cpu_relax();
        }
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (i = 1; __atomic_load_n(&jw_readers_busy, __ATOMIC_ACQUIRE) > 0; i++) {
            if ((i & 15) == 0 && jw_elapsed(&t0) >= settle) break;
            jw_cpu_relax();
        }
        return 1;
    }
    """
    int jw_spin_wait(int* f, double spin, double settle) nogil


def reader_idle():
    """The calling reader thread is about to wait elsewhere than ``recv_spin`` (or ends):
    ``spin_wait`` no longer waits for it."""
    jw_reader_idle()


def spin_wait(Lock lock, double spin, double settle=0.0):
    """Take ``lock`` if it comes free within ``spin`` seconds, polling without the GIL
    and without sleeping (a waiter whose answer is due soon on a core that would otherwise
    sleep and be woken); then, for up to ``settle`` seconds, let reader threads finish
    routing what they read (``recv_spin(reader=True)``) before taking the GIL back.
    True when taken, else False (the lock is not taken)."""
    cdef bint got
    with nogil:
        got = jw_spin_wait(&lock._flag, spin, settle)
    if got:
        lock._held = True
    return got
