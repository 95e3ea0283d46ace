# The lock shared by the compiled hot path (see lock.pyx): taken from C by the outbox,
# the router and the ack mux.

cdef extern from *:
    """
    #include <sched.h>
    #include <time.h>
    /* An atomic flag: taken with one exchange, released with one store (holders keep it
       for a buffer append or swap, a queue push or pop, a dict insert or pop, so a waiter
       yields the CPU rather than sleeping). */
    /* seconds since t0 (CLOCK_MONOTONIC) */
    static inline double jw_elapsed(const struct timespec* t0) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
    }
    /* a polling loop's pause between two looks */
    static inline void jw_cpu_relax(void) {
    #if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
    #endif
    }
    static inline int jw_flag_try(int* f) { return !__atomic_test_and_set(f, __ATOMIC_ACQUIRE); }
    static inline void jw_flag_wait(int* f) { while (__atomic_test_and_set(f, __ATOMIC_ACQUIRE)) sched_yield(); }
    static inline void jw_flag_clear(int* f) { __atomic_clear(f, __ATOMIC_RELEASE); }
    /* Wait at most `timeout` seconds: 1 when taken, else 0. */
    static int jw_flag_wait_for(int* f, double timeout) {
        struct timespec t0;
        if (jw_flag_try(f)) return 1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (;;) {
            sched_yield();
            if (jw_flag_try(f)) return 1;
            if (jw_elapsed(&t0) >= timeout) return 0;
        }
    }
    """
    bint jw_flag_try(int* f) nogil
    void jw_flag_wait(int* f) nogil
    void jw_flag_clear(int* f) nogil
    bint jw_flag_wait_for(int* f, double timeout) nogil


cdef class Lock:
    cdef int _flag
    cdef bint _held


cdef inline int lock_acquire(Lock lk) except -1:
    """Take ``lk``: one exchange when free, else wait (yielding) without the GIL."""
    if not jw_flag_try(&lk._flag):
        with nogil:
            jw_flag_wait(&lk._flag)
    lk._held = True
    return 0


cdef inline void lock_release(Lock lk) noexcept:
    lk._held = False
    jw_flag_clear(&lk._flag)


cdef int enter_other(object lock) except -1
cdef int exit_other(object lock) except -1


cdef inline int acquire_any(object lock) except -1:
    """Enter ``lock``: a ``Lock`` from C, any other lock as ``with lock:`` does (the pure twin)."""
    if type(lock) is Lock:
        return lock_acquire(<Lock>lock)
    return enter_other(lock)


cdef inline int release_any(object lock) except -1:
    """Leave what ``acquire_any`` entered."""
    if type(lock) is Lock:
        lock_release(<Lock>lock)
        return 0
    return exit_other(lock)
