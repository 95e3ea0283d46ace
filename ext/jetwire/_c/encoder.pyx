# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The encoder (PUB/HPUB/SUB/UNSUB), the outbox (a connection's write buffer and its
publish fast path) and the blocking writer's lock."""
include "common.pxi"

import inspect

from jetwire.errors import BadSubjectError

cdef object _isawaitable = inspect.isawaitable


# ------------------------------------------------------------------------------- encoder


cdef extern from "Python.h":
    bint PyUnicode_IS_ASCII(object o)


class _EscapedBytes(bytes):
    """The wire bytes of a subject whose str holds surrogate escapes (bytes that were not
    UTF-8 when received): encoded once, sent exactly as they came."""

    __slots__ = ()


cdef inline object _esc(object x):
    """A subject (or reply) as the encoder takes it: the str itself, or, when it holds
    surrogate escapes, its ``_EscapedBytes``."""
    if type(x) is str and not PyUnicode_IS_ASCII(x):
        try:
            PyUnicode_AsUTF8AndSize(x, <Py_ssize_t*>NULL)
        except UnicodeEncodeError:
            try:
                return _EscapedBytes((<str>x).encode("utf-8", "surrogateescape"))
            except UnicodeEncodeError:
                return x  # lone surrogates that are not escapes: _subject_utf8 rejects them
    return x


cdef const char* _subject_utf8(object subject, Py_ssize_t* n, str what) except NULL:
    """Validate a subject (or reply) and return its UTF-8 bytes."""
    cdef const char* s
    cdef int r
    if type(subject) is not str:
        if type(subject) is _EscapedBytes:
            s = PyBytes_AS_STRING(subject)
            n[0] = PyBytes_GET_SIZE(subject)
            r = jw_check_subject(<const unsigned char*>s, n[0], 1)
            if r:
                text = (<bytes>subject).decode("utf-8", "surrogateescape")
                if r == 1:
                    raise BadSubjectError(f"{what} {text!r} contains whitespace or control characters")
                raise BadSubjectError(f"{what} {text!r} has an empty token")
            return s
        if not isinstance(subject, str):
            raise BadSubjectError(f"{what} must be a str, not {type(subject).__name__}")
    try:
        s = PyUnicode_AsUTF8AndSize(subject, n)
    except UnicodeEncodeError:
        s = NULL
    if n[0] == 0:
        raise BadSubjectError(f"{what} is empty")
    if s == NULL:
        # lone surrogates; report whitespace/control first like the pure twin does
        for ch in subject:
            if ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7f:
                raise BadSubjectError(f"{what} {subject!r} contains whitespace or control characters")
        raise BadSubjectError(f"{what} {subject!r} is not encodable as UTF-8")
    r = jw_check_subject(<const unsigned char*>s, n[0], 1)
    if r == 1:
        raise BadSubjectError(f"{what} {subject!r} contains whitespace or control characters")
    if r == 2:
        raise BadSubjectError(f"{what} {subject!r} has an empty token")
    return s


cdef const char* _queue_utf8(object queue, Py_ssize_t* n) except NULL:
    cdef const char* s
    if not isinstance(queue, str):
        raise BadSubjectError(f"queue must be a str, not {type(queue).__name__}")
    try:
        s = PyUnicode_AsUTF8AndSize(queue, n)
    except UnicodeEncodeError:
        for ch in queue:
            if ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7f:
                raise BadSubjectError(f"queue {queue!r} contains whitespace or control characters")
        raise BadSubjectError(f"queue {queue!r} is not encodable as UTF-8") from None
    if jw_check_subject(<const unsigned char*>s, n[0], 0):
        raise BadSubjectError(f"queue {queue!r} contains whitespace or control characters")
    return s


def validate_subject(subject):
    """Raise ``BadSubjectError`` unless ``subject`` can be published to.

    Rejected: non-str, empty, any whitespace (including Unicode whitespace) or control
    character, lone surrogates, and empty tokens (leading/trailing '.' or '..').
    """
    cdef Py_ssize_t n
    _subject_utf8(_esc(subject), &n, "subject")


cdef inline char* _grow(object buf, Py_ssize_t extra) except NULL:
    cdef Py_ssize_t old
    if not isinstance(buf, bytearray):
        raise TypeError(f"buf must be a bytearray, not {type(buf).__name__}")
    old = PyByteArray_GET_SIZE(buf)
    PyByteArray_Resize(buf, old + extra)
    return PyByteArray_AS_STRING(buf) + old


cdef inline void _get_data(object data, Py_buffer* view) except *:
    PyObject_GetBuffer(data, view, PyBUF_SIMPLE)


cdef int _put_pub(object buf, const char* s, Py_ssize_t sn, const char* r, Py_ssize_t rn,
                  const char* d, Py_ssize_t dn) except -1:
    """Append ``PUB s [r] dn\\r\\n<d>\\r\\n`` to ``buf`` (checked arguments; ``r`` may be NULL).

    Runs no Python code: nothing else can touch ``buf`` (or take it) while it runs.
    """
    cdef Py_ssize_t total
    cdef int nd
    cdef char* w
    nd = jw_ndigits(dn)
    total = 4 + sn + (rn + 1 if r != NULL else 0) + 1 + nd + 2 + dn + 2
    w = _grow(buf, total)
    memcpy(w, b"PUB ", 4)
    w += 4
    memcpy(w, s, sn)
    w += sn
    w[0] = 32
    w += 1
    if r != NULL:
        memcpy(w, r, rn)
        w += rn
        w[0] = 32
        w += 1
    w = jw_write_uint(w, dn, nd)
    w[0] = 13
    w[1] = 10
    w += 2
    memcpy(w, d, dn)
    w += dn
    w[0] = 13
    w[1] = 10
    return 0


def append_pub(buf, subject, reply, data):
    """Append ``PUB <subject> [reply] <len>\\r\\n<data>\\r\\n`` to ``buf`` (a bytearray)."""
    cdef Py_ssize_t sn, rn = 0, dn
    cdef const char* s
    cdef const char* r = NULL
    cdef Py_buffer view
    subject = _esc(subject)  # a local keeps the escaped bytes alive while s points into them
    s = _subject_utf8(subject, &sn, "subject")
    if reply is not None and not (type(reply) is str and len(<str>reply) == 0):
        reply = _esc(reply)
        r = _subject_utf8(reply, &rn, "reply")
    if type(data) is bytes:
        _put_pub(buf, s, sn, r, rn, PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data))
        return
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        _put_pub(buf, s, sn, r, rn, <const char*>view.buf, view.len)
    finally:
        PyBuffer_Release(&view)


cdef int _put_hpub(object buf, const char* s, Py_ssize_t sn, const char* r, Py_ssize_t rn,
                   const char* h, Py_ssize_t hn, const char* d, Py_ssize_t dn) except -1:
    """Append ``HPUB s [r] hn hn+dn\\r\\n<h><d>\\r\\n`` to ``buf`` (runs no Python code)."""
    cdef Py_ssize_t total
    cdef int nh, nt
    cdef char* w
    nh = jw_ndigits(hn)
    nt = jw_ndigits(hn + dn)
    total = 5 + sn + (rn + 1 if r != NULL else 0) + 1 + nh + 1 + nt + 2 + hn + dn + 2
    w = _grow(buf, total)
    memcpy(w, b"HPUB ", 5)
    w += 5
    memcpy(w, s, sn)
    w += sn
    w[0] = 32
    w += 1
    if r != NULL:
        memcpy(w, r, rn)
        w += rn
        w[0] = 32
        w += 1
    w = jw_write_uint(w, hn, nh)
    w[0] = 32
    w += 1
    w = jw_write_uint(w, hn + dn, nt)
    w[0] = 13
    w[1] = 10
    w += 2
    memcpy(w, h, hn)
    w += hn
    memcpy(w, d, dn)
    w += dn
    w[0] = 13
    w[1] = 10
    return 0


def append_hpub(buf, subject, reply, hdr, data):
    """Append ``HPUB <subject> [reply] <hdr_len> <total_len>\\r\\n<hdr><data>\\r\\n`` to ``buf``."""
    cdef Py_ssize_t sn, rn = 0
    cdef const char* s
    cdef const char* r = NULL
    cdef Py_buffer hview
    cdef Py_buffer dview
    subject = _esc(subject)  # a local keeps the escaped bytes alive while s points into them
    s = _subject_utf8(subject, &sn, "subject")
    if reply is not None and not (type(reply) is str and len(<str>reply) == 0):
        reply = _esc(reply)
        r = _subject_utf8(reply, &rn, "reply")
    PyObject_GetBuffer(hdr, &hview, PyBUF_SIMPLE)
    try:
        PyObject_GetBuffer(data, &dview, PyBUF_SIMPLE)
        try:
            _put_hpub(buf, s, sn, r, rn, <const char*>hview.buf, hview.len, <const char*>dview.buf, dview.len)
        finally:
            PyBuffer_Release(&dview)
    finally:
        PyBuffer_Release(&hview)


cdef unsigned long long _uint_arg(object value, str what) except? 0xFFFFFFFFFFFFFFFF:
    if not isinstance(value, int):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    if value < 0 or value >= (1 << 64):
        raise ValueError(f"{what} must be in 0..2**64-1, got {value}")
    return PyLong_AsUnsignedLongLong(value)


def append_sub(buf, subject, queue, sid):
    """Append ``SUB <subject> [queue] <sid>\\r\\n`` to ``buf``."""
    cdef Py_ssize_t sn, qn = 0, total
    cdef const char* s
    cdef const char* q = NULL
    cdef unsigned long long v
    cdef int nd
    cdef char* w
    subject = _esc(subject)
    s = _subject_utf8(subject, &sn, "subject")
    v = _uint_arg(sid, "sid")
    if queue is not None and not (type(queue) is str and len(<str>queue) == 0):
        q = _queue_utf8(queue, &qn)
    nd = jw_ndigits(v)
    total = 4 + sn + 1 + (qn + 1 if q != NULL else 0) + nd + 2
    w = _grow(buf, total)
    memcpy(w, b"SUB ", 4)
    w += 4
    memcpy(w, s, sn)
    w += sn
    w[0] = 32
    w += 1
    if q != NULL:
        memcpy(w, q, qn)
        w += qn
        w[0] = 32
        w += 1
    w = jw_write_uint(w, v, nd)
    w[0] = 13
    w[1] = 10


def append_unsub(buf, sid, max_msgs=0):
    """Append ``UNSUB <sid>[ <max_msgs>]\\r\\n`` to ``buf`` (``max_msgs`` 0 means none)."""
    cdef unsigned long long v, mx
    cdef int nd, nm = 0
    cdef char* w
    v = _uint_arg(sid, "sid")
    if max_msgs is None:
        max_msgs = 0
    mx = _uint_arg(max_msgs, "max_msgs")
    nd = jw_ndigits(v)
    if mx:
        nm = jw_ndigits(mx)
    w = _grow(buf, 6 + nd + (nm + 1 if mx else 0) + 2)
    memcpy(w, b"UNSUB ", 6)
    w += 6
    w = jw_write_uint(w, v, nd)
    if mx:
        w[0] = 32
        w += 1
        w = jw_write_uint(w, mx, nm)
    w[0] = 13
    w[1] = 10


# -------------------------------------------------------------------------------- outbox
cdef extern from *:
    """
    /* DONE: an awaitable that completes at once with None. __await__ returns the object
       itself; as an iterator its first next() ends the iteration (NULL with no exception
       set is StopIteration(None)), so `await DONE` never suspends. */
    static PyObject* jw_done_self(PyObject* self) { Py_INCREF(self); return self; }
    static PyObject* jw_done_next(PyObject* self) { (void)self; return NULL; }
    static PyObject* jw_done_repr(PyObject* self) { (void)self; return PyUnicode_FromString("DONE"); }
    #if PY_VERSION_HEX >= 0x030A0000
    static PySendResult jw_done_send(PyObject* self, PyObject* arg, PyObject** result) {
        (void)self; (void)arg;
        Py_INCREF(Py_None);
        *result = Py_None;
        return PYGEN_RETURN;
    }
    static PyAsyncMethods jw_done_async = { jw_done_self, NULL, NULL, jw_done_send };
    #else
    static PyAsyncMethods jw_done_async = { jw_done_self, NULL, NULL };
    #endif
    static PyTypeObject jw_done_type = {
        PyVarObject_HEAD_INIT(NULL, 0)
        "jetwire._speedups.Done",    /* tp_name */
        sizeof(PyObject),            /* tp_basicsize */
    };
    static PyObject* jw_make_done(void) {
        jw_done_type.tp_flags = Py_TPFLAGS_DEFAULT;
        jw_done_type.tp_doc = "An awaitable that is already done (its result is None).";
        jw_done_type.tp_as_async = &jw_done_async;
        jw_done_type.tp_iter = jw_done_self;
        jw_done_type.tp_iternext = jw_done_next;
        jw_done_type.tp_repr = jw_done_repr;
        if (PyType_Ready(&jw_done_type) < 0) return NULL;
        return (PyObject*)PyObject_New(PyObject, &jw_done_type);
    }
    """
    object jw_make_done()

DONE = jw_make_done()


cdef extern from *:
    """
    #include <sched.h>
    /* An atomic flag: taken with one exchange, released with one store (holders keep it
       for a buffer append or swap, so a waiter yields the CPU rather than sleeping). */
    static inline int jw_flag_try(int* f) { return !__atomic_test_and_set(f, __ATOMIC_ACQUIRE); }
    static inline void jw_flag_wait(int* f) { while (__atomic_test_and_set(f, __ATOMIC_ACQUIRE)) sched_yield(); }
    static inline void jw_flag_clear(int* f) { __atomic_clear(f, __ATOMIC_RELEASE); }
    """
    bint jw_flag_try(int* f) nogil
    void jw_flag_wait(int* f) nogil
    void jw_flag_clear(int* f) nogil


@cython.final
cdef class WriteLock:
    """The blocking writer's lock (``acquire``/``release``, a context manager, like
    ``threading.Lock``): an atomic flag the compiled ``Outbox.publish`` takes without a
    Python call. Waiting for it releases the GIL."""

    cdef int _flag
    cdef bint _held

    cdef inline void _acquire(self):
        if not jw_flag_try(&self._flag):
            with nogil:
                jw_flag_wait(&self._flag)
        self._held = True

    cdef inline void _release(self):
        self._held = False
        jw_flag_clear(&self._flag)

    def acquire(self, blocking=True, timeout=-1):
        if blocking and timeout == -1:
            self._acquire()
            return True
        if not blocking:
            if jw_flag_try(&self._flag):
                self._held = True
                return True
            return False
        raise NotImplementedError("WriteLock.acquire() takes no timeout")

    def release(self):
        if not self._held:
            raise RuntimeError("release unlocked lock")
        self._release()

    def locked(self):
        return self._held

    def __enter__(self):
        self._acquire()
        return True

    def __exit__(self, *exc):
        self._release()
        return False


cdef class Outbox:
    """A connection's write buffer and its ``publish`` fast path.

    ``buf`` is the bytearray of protocol bytes waiting to be sent. ``publish(subject,
    data=b"", reply=None, headers=None)`` appends ``PUB`` directly when the common case
    holds -- ``connected``, no headers, not ``congested``, ``data`` is bytes, bytearray
    or a memoryview of at most ``max_payload`` bytes -- counts it in ``out_msgs`` /
    ``out_bytes``, then calls ``on_full()`` when ``buf`` reached ``threshold`` bytes or
    else ``on_first()`` when the append made an empty ``buf`` non-empty, and returns
    ``ret``. Every other call returns ``slow(subject, data, reply, headers)``. Bad
    subjects raise ``BadSubjectError`` (bad buffers ``TypeError``/``BufferError``)
    before ``buf`` is touched. ``take()`` hands over the buffered bytes.

    Threads: ``publish`` holds ``lock`` (when not None: the blocking writer's lock, a
    ``WriteLock`` taken without a Python call) while it reads ``buf``, appends and
    counts; ``append_pub``, ``append_hpub`` and ``take`` take no lock: their callers
    hold the writer's lock, as does any Python code appending to ``buf`` itself. Thread
    safety never rests on the GIL. ``on_first`` / ``on_full`` run after the append,
    outside the lock.
    """

    cdef bytearray _buf
    cdef public bint connected
    cdef public bint congested
    cdef public long long max_payload
    cdef public long long out_msgs
    cdef public long long out_bytes
    cdef public Py_ssize_t threshold
    cdef public object on_first
    cdef public object on_full
    cdef public object slow
    cdef public object ret
    cdef public object lock
    cdef str _last  # the subject the fast path validated last (a str is immutable)

    def __init__(self, slow=None, max_payload=DEFAULT_MAX_PAYLOAD, threshold=65536, on_first=None,
                 on_full=None, ret=None, lock=None):
        self._buf = bytearray()
        self.connected = False
        self.congested = False
        self.max_payload = max_payload
        self.out_msgs = 0
        self.out_bytes = 0
        self.threshold = threshold
        self.on_first = on_first
        self.on_full = on_full
        self.slow = slow
        self.ret = ret
        self.lock = lock

    @property
    def buf(self):
        """The bytearray being filled (replace only with another bytearray)."""
        return self._buf

    @buf.setter
    def buf(self, value):
        if not isinstance(value, bytearray):
            raise TypeError(f"buf must be a bytearray, not {type(value).__name__}")
        self._buf = value

    def take(self):
        """The buffered bytes: ``buf`` itself, replaced by a new empty bytearray (``b""`` when empty)."""
        cdef bytearray buf = self._buf
        if PyByteArray_GET_SIZE(buf) == 0:
            return b""
        self._buf = bytearray()
        return buf

    def publish(self, subject, data=b"", reply=None, headers=None):
        """Queue ``PUB``; the fast path returns ``ret``, anything else goes to ``slow``."""
        cdef Py_ssize_t sn, rn = 0, dn, before, after
        cdef const char* s
        cdef const char* r = NULL
        cdef const char* d
        cdef Py_buffer view
        cdef bint has_view = False
        cdef object t, lk
        cdef bytearray buf
        if not self.connected or headers is not None or self.congested:
            return self.slow(subject, data, reply, headers)
        t = type(data)
        if t is bytes:
            dn = PyBytes_GET_SIZE(data)
            if dn > self.max_payload:
                return self.slow(subject, data, reply, headers)
            d = PyBytes_AS_STRING(data)
        elif t is bytearray or t is memoryview:
            if data is self._buf:
                raise BufferError("cannot publish the outbox's own buffer")
            PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
            if view.len > self.max_payload:
                PyBuffer_Release(&view)
                return self.slow(subject, data, reply, headers)
            has_view = True
            d = <const char*>view.buf
            dn = view.len
        else:
            return self.slow(subject, data, reply, headers)
        lk = self.lock
        try:
            if subject is self._last and subject is not None:  # validated already (UTF-8 cached in the str)
                s = PyUnicode_AsUTF8AndSize(subject, &sn)
            else:
                subject = _esc(subject)
                s = _subject_utf8(subject, &sn, "subject")
                if type(subject) is str:
                    self._last = subject
            if reply is not None and not (type(reply) is str and len(<str>reply) == 0):
                reply = _esc(reply)
                r = _subject_utf8(reply, &rn, "reply")
            if lk is not None:
                if type(lk) is WriteLock:
                    (<WriteLock>lk)._acquire()
                else:
                    lk.__enter__()
            try:
                buf = self._buf
                before = PyByteArray_GET_SIZE(buf)
                _put_pub(buf, s, sn, r, rn, d, dn)
                self.out_msgs += 1
                self.out_bytes += dn
                after = PyByteArray_GET_SIZE(buf)
            finally:
                if lk is not None:
                    if type(lk) is WriteLock:
                        (<WriteLock>lk)._release()
                    else:
                        lk.__exit__(None, None, None)
        finally:
            if has_view:
                PyBuffer_Release(&view)
        if after >= self.threshold:
            if self.on_full is not None:
                self.on_full()
        elif before == 0:
            if self.on_first is not None:
                self.on_first()
        return self.ret

    def append_pub(self, subject, reply, data):
        """Append ``PUB`` to ``buf`` and count it (no checks beyond the encoder's, no callbacks)."""
        cdef Py_ssize_t sn, rn = 0
        cdef const char* s
        cdef const char* r = NULL
        cdef Py_buffer view
        subject = _esc(subject)  # a local keeps the escaped bytes alive while s points into them
        s = _subject_utf8(subject, &sn, "subject")
        if reply is not None and not (type(reply) is str and len(<str>reply) == 0):
            reply = _esc(reply)
            r = _subject_utf8(reply, &rn, "reply")
        if data is self._buf:
            raise BufferError("cannot publish the outbox's own buffer")
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
        try:
            _put_pub(self._buf, s, sn, r, rn, <const char*>view.buf, view.len)
            self.out_msgs += 1
            self.out_bytes += view.len
        finally:
            PyBuffer_Release(&view)

    def append_hpub(self, subject, reply, hdr, data):
        """Append ``HPUB`` to ``buf`` and count it (``out_bytes`` counts ``data`` only)."""
        cdef Py_ssize_t sn, rn = 0
        cdef const char* s
        cdef const char* r = NULL
        cdef Py_buffer hview
        cdef Py_buffer dview
        subject = _esc(subject)  # a local keeps the escaped bytes alive while s points into them
        s = _subject_utf8(subject, &sn, "subject")
        if reply is not None and not (type(reply) is str and len(<str>reply) == 0):
            reply = _esc(reply)
            r = _subject_utf8(reply, &rn, "reply")
        if data is self._buf or hdr is self._buf:
            raise BufferError("cannot publish the outbox's own buffer")
        PyObject_GetBuffer(hdr, &hview, PyBUF_SIMPLE)
        try:
            PyObject_GetBuffer(data, &dview, PyBUF_SIMPLE)
            try:
                _put_hpub(self._buf, s, sn, r, rn, <const char*>hview.buf, hview.len,
                          <const char*>dview.buf, dview.len)
                self.out_msgs += 1
                self.out_bytes += dview.len
            finally:
                PyBuffer_Release(&dview)
        finally:
            PyBuffer_Release(&hview)


