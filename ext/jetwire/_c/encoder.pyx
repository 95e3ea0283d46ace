# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The encoder (PUB/HPUB/SUB/UNSUB) and the outbox (a connection's write buffer and its
publish fast path) (pure twin: ``jetwire.protocol._pure.encoder``).

Subjects, replies and queues are ``str``; surrogate escapes (bytes that were not UTF-8
when received) go out as the bytes they stand for, so a ``respond()``, an ack or a
re-publish sends exactly what was received. Validation looks at those wire bytes: no
whitespace (ASCII or Unicode) or control character, no empty token.
"""
include "common.pxi"

from cpython.buffer cimport PyObject_CheckBuffer
from cpython.exc cimport PyErr_Clear, PyErr_ExceptionMatches


cdef extern from "Python.h":
    # PyObject_GetBuffer returning its -1 (not raised at once): checked by _data_view
    int _get_buffer "PyObject_GetBuffer"(object obj, Py_buffer* view, int flags)

from jetwire._c.lock cimport acquire_any, release_any

from jetwire._c.lock import WriteLock  # noqa: F401 - the blocking writer's lock, also here
from jetwire.errors import BadSubjectError, payload_type_error

cdef object _NO_SUBJECT = object()  # what the outbox's subject cache holds at first


# ------------------------------------------------------------------------------- encoder
cdef object _wire(object subject, str what, int tokens):
    """Validate a subject (``tokens`` 2: no empty token, wildcards only as whole tokens and
    ``>`` only last: what is published to or subscribed to), reply (1: no empty token)
    or queue (0); return what holds its wire
    bytes: the str itself (its UTF-8), or the bytes its surrogate escapes stand for.
    ``what`` names it in the ``BadSubjectError``."""
    cdef Py_ssize_t n
    cdef const char* s
    cdef int r
    cdef object wire = subject
    if type(subject) is not str and not isinstance(subject, str):
        raise BadSubjectError(f"{what} must be a str, not {type(subject).__name__}")
    if len(<str>subject) == 0:
        raise BadSubjectError(f"{what} is empty")
    try:
        s = PyUnicode_AsUTF8AndSize(subject, &n)
    except UnicodeEncodeError:
        try:  # bytes that were not UTF-8 when received: send them as they came
            wire = (<str>subject).encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:  # lone surrogates that are no escapes
            for ch in subject:
                if ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7f:
                    raise BadSubjectError(f"{what} {subject!r} contains whitespace or control characters") from None
            raise BadSubjectError(f"{what} {subject!r} is not encodable as UTF-8") from None
        s = PyBytes_AS_STRING(wire)
        n = PyBytes_GET_SIZE(wire)
    if jw_plain_subject(<const unsigned char*>s, n, tokens):  # the common case, 8 bytes at a time
        return wire
    r = jw_check_subject(<const unsigned char*>s, n, tokens)
    if r == 1:
        raise BadSubjectError(f"{what} {subject!r} contains whitespace or control characters")
    if r == 2:
        raise BadSubjectError(f"{what} {subject!r} has an empty token")
    if tokens == 2 and not _wildcards_ok(<const unsigned char*>s, n):
        raise BadSubjectError(f"{what} {subject!r} has a wildcard that is not a whole token ('>' only last)")
    return wire


cdef inline bint _wildcards_ok(const unsigned char* p, Py_ssize_t n):
    """``*`` and ``>`` only as whole tokens, ``>`` only as the last one (``p[n]`` is a NUL)."""
    cdef Py_ssize_t i
    cdef unsigned char c
    for i in range(n):
        c = p[i]
        if c == 42 or c == 62:  # '*', '>'
            if (i > 0 and p[i - 1] != 46) or (i + 1 < n and (c == 62 or p[i + 1] != 46)):
                return False
    return True


cdef inline const char* _ptr(object wire, Py_ssize_t* n) except NULL:
    """The wire bytes of what ``_wire`` returned (valid while ``wire`` lives)."""
    if type(wire) is bytes:
        n[0] = PyBytes_GET_SIZE(wire)
        return PyBytes_AS_STRING(wire)
    return PyUnicode_AsUTF8AndSize(wire, n)


cdef inline bint _given(object reply):
    """A reply (or queue) to send: not None and not empty."""
    return reply is not None and not (isinstance(reply, str) and len(<str>reply) == 0)


def validate_subject(subject):
    """Raise ``BadSubjectError`` unless ``subject`` can be published to.

    Rejected: non-str, empty, any whitespace (including Unicode whitespace) or control
    character, lone surrogates that stand for no byte, empty tokens (leading/trailing
    '.' or '..'), and wildcards that are not whole tokens (``foo.*bar``, ``foo.>.bar``;
    ``>`` only last). Surrogate escapes (bytes that were not UTF-8) are accepted: they
    are sent as those bytes.
    """
    _wire(subject, "subject", 2)


def validate_filter(subject, queue=None):
    """Raise ``BadSubjectError`` unless ``subject`` (and ``queue``, when given) can be
    subscribed to: ``validate_subject``'s rules, wildcards whole tokens (``foo.*.bar``,
    ``foo.>``; not ``foo.*bar``, ``foo.b>``, ``foo.>.bar``). A queue
    group is checked for whitespace and control characters. Subscriptions, JetStream
    filter subjects and stream subjects are checked here.
    """
    _wire(subject, "subject", 2)
    if _given(queue):
        _wire(queue, "queue", 0)


cdef inline int _data_view(object data, Py_buffer* view) except -1:
    """``data``'s buffer (release it), or the payload ``TypeError`` (it is no bytes-like object)."""
    if not PyObject_CheckBuffer(data):
        raise payload_type_error(data)
    if _get_buffer(data, view, PyBUF_SIMPLE) < 0:  # (no try block: nothing to save per call)
        return _buffer_refused()
    return 0


cdef int _buffer_refused() except -1:
    """The error of a buffer that could not be taken: a strided one in the pure twin's
    words, anything else as it is."""
    if PyErr_ExceptionMatches(BufferError):
        PyErr_Clear()
        raise BufferError("data must be a C-contiguous buffer")
    return -1  # (the error set stays)


cdef inline char* _grow(object buf, Py_ssize_t extra) except NULL:
    cdef Py_ssize_t old
    if not isinstance(buf, bytearray):
        raise TypeError(f"buf must be a bytearray, not {type(buf).__name__}")
    old = PyByteArray_GET_SIZE(buf)
    PyByteArray_Resize(buf, old + extra)
    return PyByteArray_AS_STRING(buf) + old


# small writers shared by the command encoders: each copies at ``w`` and returns the
# position after what it wrote (inlined by the C compiler: no call at run time)
cdef inline char* _put(char* w, const char* s, Py_ssize_t n) noexcept nogil:
    memcpy(w, s, n)
    return w + n


cdef inline char* _put_word(char* w, const char* s, Py_ssize_t n) noexcept nogil:
    """``s`` and the space after it."""
    memcpy(w, s, n)
    w[n] = 32
    return w + n + 1


cdef inline char* _put_crlf(char* w) noexcept nogil:
    w[0] = 13
    w[1] = 10
    return w + 2


cdef int _put_pub(object buf, const char* s, Py_ssize_t sn, const char* r, Py_ssize_t rn,
                  const char* d, Py_ssize_t dn) except -1:
    """Append ``PUB s [r] dn\\r\\n<d>\\r\\n`` to ``buf`` (checked arguments; ``r`` may be NULL)."""
    cdef Py_ssize_t total
    cdef int nd
    cdef char* w
    nd = jw_ndigits(dn)
    total = 4 + sn + (rn + 1 if r != NULL else 0) + 1 + nd + 2 + dn + 2
    w = _put(_grow(buf, total), b"PUB ", 4)
    w = _put_word(w, s, sn)
    if r != NULL:
        w = _put_word(w, r, rn)
    w = _put_crlf(jw_write_uint(w, dn, nd))
    _put_crlf(_put(w, d, dn))
    return 0


def append_pub(buf, subject, reply, data):
    """Append ``PUB <subject> [reply] <len>\\r\\n<data>\\r\\n`` to ``buf`` (a bytearray)."""
    cdef Py_ssize_t sn, rn = 0
    cdef const char* s
    cdef const char* r = NULL
    cdef Py_buffer view
    cdef object sw = _wire(subject, "subject", 2)
    cdef object rw = None
    if _given(reply):
        rw = _wire(reply, "reply", 1)
    s = _ptr(sw, &sn)
    if rw is not None:
        r = _ptr(rw, &rn)
    if type(data) is bytes:
        _put_pub(buf, s, sn, r, rn, PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data))
        return
    _data_view(data, &view)
    try:
        _put_pub(buf, s, sn, r, rn, <const char*>view.buf, view.len)
    finally:
        PyBuffer_Release(&view)


cdef int _put_hpub(object buf, const char* s, Py_ssize_t sn, const char* r, Py_ssize_t rn,
                   const char* h, Py_ssize_t hn, const char* d, Py_ssize_t dn) except -1:
    """Append ``HPUB s [r] hn hn+dn\\r\\n<h><d>\\r\\n`` to ``buf``."""
    cdef Py_ssize_t total
    cdef int nh, nt
    cdef char* w
    nh = jw_ndigits(hn)
    nt = jw_ndigits(hn + dn)
    total = 5 + sn + (rn + 1 if r != NULL else 0) + 1 + nh + 1 + nt + 2 + hn + dn + 2
    w = _put(_grow(buf, total), b"HPUB ", 5)
    w = _put_word(w, s, sn)
    if r != NULL:
        w = _put_word(w, r, rn)
    w = jw_write_uint(w, hn, nh)
    w[0] = 32
    w = _put_crlf(jw_write_uint(w + 1, hn + dn, nt))
    _put_crlf(_put(_put(w, h, hn), d, dn))
    return 0


cdef Py_ssize_t _hpub_views(object buf, object sw, object rw, object hdr, object data) except -1:
    cdef Py_ssize_t sn, rn = 0
    cdef const char* s
    cdef const char* r = NULL
    cdef Py_buffer hview
    cdef Py_buffer dview
    s = _ptr(sw, &sn)
    if rw is not None:
        r = _ptr(rw, &rn)
    PyObject_GetBuffer(hdr, &hview, PyBUF_SIMPLE)
    try:
        _data_view(data, &dview)
        try:
            _put_hpub(buf, s, sn, r, rn, <const char*>hview.buf, hview.len, <const char*>dview.buf, dview.len)
            return dview.len
        finally:
            PyBuffer_Release(&dview)
    finally:
        PyBuffer_Release(&hview)


def append_hpub(buf, subject, reply, hdr, data):
    """Append ``HPUB <subject> [reply] <hdr_len> <total_len>\\r\\n<hdr><data>\\r\\n`` to ``buf``."""
    cdef object sw = _wire(subject, "subject", 2)
    cdef object rw = None
    if _given(reply):
        rw = _wire(reply, "reply", 1)
    _hpub_views(buf, sw, rw, hdr, data)


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
    cdef object sw = _wire(subject, "subject", 2)
    cdef object qw = None
    v = _uint_arg(sid, "sid")
    if _given(queue):
        qw = _wire(queue, "queue", 0)
    s = _ptr(sw, &sn)
    if qw is not None:
        q = _ptr(qw, &qn)
    nd = jw_ndigits(v)
    total = 4 + sn + 1 + (qn + 1 if q != NULL else 0) + nd + 2
    w = _put(_grow(buf, total), b"SUB ", 4)
    w = _put_word(w, s, sn)
    if q != NULL:
        w = _put_word(w, q, qn)
    _put_crlf(jw_write_uint(w, v, nd))


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
    w = jw_write_uint(_put(_grow(buf, 6 + nd + (nm + 1 if mx else 0) + 2), b"UNSUB ", 6), v, nd)
    if mx:
        w[0] = 32
        w = jw_write_uint(w + 1, mx, nm)
    _put_crlf(w)


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
        "jetwire._c.encoder.Done",   /* tp_name */
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


@cython.final
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

    Threads: ``lock`` (None in the asyncio flavour, where one thread does everything)
    guards ``buf``, the counters and the subject cache. ``publish`` holds it from reading
    ``buf`` to counting (a ``jetwire._c.lock.Lock`` is taken from C; any other lock
    through its ``acquire``/``release``). ``append_pub``, ``append_hpub``, ``take``,
    replacing ``buf`` and any Python code appending to ``buf`` need their caller to hold
    it. ``on_first`` / ``on_full`` / ``slow`` run outside it.
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
    cdef object _lock
    cdef object _last_subject  # the last subject that passed validation (guarded by the lock)

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
        self._lock = lock
        self._last_subject = _NO_SUBJECT

    @property
    def lock(self):
        """The lock guarding the buffer and counters (None: a single thread)."""
        return self._lock

    @lock.setter
    def lock(self, value):
        self._lock = value

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

    cdef inline object _subject(self, object subject):
        """``_wire(subject)`` with a one-entry cache (call with the lock held)."""
        if subject is self._last_subject:
            return subject
        wire = _wire(subject, "subject", 2)
        if wire is subject and type(subject) is str:
            self._last_subject = subject
        return wire

    def publish(self, subject, data=b"", reply=None, headers=None):
        """Queue ``PUB``; the fast path returns ``ret``, anything else goes to ``slow``."""
        cdef Py_ssize_t sn, rn = 0, dn, before, after
        cdef const char* s
        cdef const char* r = NULL
        cdef const char* d
        cdef Py_buffer view
        cdef bint has_view = False
        cdef object t, sw, rw, lock
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
            _data_view(data, &view)
            if view.len > self.max_payload:
                PyBuffer_Release(&view)
                return self.slow(subject, data, reply, headers)
            has_view = True
            d = <const char*>view.buf
            dn = view.len
        else:
            return self.slow(subject, data, reply, headers)
        lock = self._lock
        try:
            if lock is not None:
                acquire_any(lock)
            try:
                buf = self._buf
                if data is buf:
                    raise BufferError("cannot publish the outbox's own buffer")
                sw = self._subject(subject)
                rw = _wire(reply, "reply", 1) if _given(reply) else None
                s = _ptr(sw, &sn)
                if rw is not None:
                    r = _ptr(rw, &rn)
                before = PyByteArray_GET_SIZE(buf)
                _put_pub(buf, s, sn, r, rn, d, dn)
                self.out_msgs += 1
                self.out_bytes += dn
                after = PyByteArray_GET_SIZE(buf)
            finally:
                if lock is not None:
                    release_any(lock)
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
        """Append ``PUB`` to ``buf`` and count it (no checks beyond the encoder's, no callbacks;
        the caller holds ``lock``)."""
        cdef Py_ssize_t sn, rn = 0
        cdef const char* s
        cdef const char* r = NULL
        cdef Py_buffer view
        cdef object sw, rw = None
        if data is self._buf:
            raise BufferError("cannot publish the outbox's own buffer")
        sw = self._subject(subject)
        if _given(reply):
            rw = _wire(reply, "reply", 1)
        s = _ptr(sw, &sn)
        if rw is not None:
            r = _ptr(rw, &rn)
        _data_view(data, &view)
        try:
            _put_pub(self._buf, s, sn, r, rn, <const char*>view.buf, view.len)
            self.out_msgs += 1
            self.out_bytes += view.len
        finally:
            PyBuffer_Release(&view)

    def append_hpub(self, subject, reply, hdr, data):
        """Append ``HPUB`` to ``buf`` and count it (``out_bytes`` counts ``data`` only; the
        caller holds ``lock``)."""
        cdef object sw, rw = None
        if data is self._buf or hdr is self._buf:
            raise BufferError("cannot publish the outbox's own buffer")
        sw = self._subject(subject)
        if _given(reply):
            rw = _wire(reply, "reply", 1)
        self.out_bytes += _hpub_views(self._buf, sw, rw, hdr, data)
        self.out_msgs += 1
