# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled NATS wire-protocol hot path: parser, header codec, ack-subject metadata, encoder.

``jetwire.protocol._pure`` is the behaviour-identical pure-Python twin; the rules listed
in its module docstring apply here too, and the differential tests hold the two to the
same events and errors. Change both together.
"""
cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE, PyByteArray_Resize
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_Append, PyList_GET_ITEM, PyList_GET_SIZE
from cpython.long cimport PyLong_AsUnsignedLongLong, PyLong_FromLongLong
from cpython.pythread cimport (
    NOWAIT_LOCK,
    WAIT_LOCK,
    PyThread_acquire_lock,
    PyThread_allocate_lock,
    PyThread_free_lock,
    PyThread_release_lock,
    PyThread_type_lock,
)
from cpython.ref cimport PyObject
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memchr, memcmp, memcpy, memmove

import inspect

import orjson

from jetwire.errors import BadHeaderError, BadSubjectError, NotJSMessageError, ProtocolError
from jetwire.protocol.headers import Headers, as_text, check_key, check_value

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object s, Py_ssize_t* size) except NULL

cdef extern from *:
    """
    #include <string.h>
    #include "structmember.h"

    /* Index of the first CRLF in p[0:n] (the '\\r'), or -1. */
    static inline Py_ssize_t jw_find_crlf(const unsigned char* p, Py_ssize_t n) {
        const unsigned char* q = p;
        const unsigned char* end = p + n - 1;
        while (q < end) {
            q = (const unsigned char*)memchr(q, '\\r', (size_t)(end - q));
            if (q == NULL) return -1;
            if (q[1] == '\\n') return q - p;
            q++;
        }
        return -1;
    }

    /* Whitespace as bytes.split() sees it. */
    static inline int jw_isws(unsigned char c) {
        return c == ' ' || c == '\\t' || c == '\\n' || c == '\\r' || c == '\\v' || c == '\\f';
    }

    /* A str from bytes that may be non-ASCII: UTF-8, bytes-faithful (what is not UTF-8 is kept
       as surrogate escapes); NULL with an exception set on error (memory only). */
    static inline PyObject* jw_str(const unsigned char* p, Py_ssize_t n) {
        Py_ssize_t i;
        unsigned char acc = 0;
        PyObject* s;
        for (i = 0; i < n; i++) acc |= p[i];
        if (acc & 0x80) return PyUnicode_DecodeUTF8((const char*)p, n, "surrogateescape");
        s = PyUnicode_New(n, 127);
        if (s == NULL) return NULL;
        memcpy(PyUnicode_DATA(s), p, (size_t)n);
        return s;
    }

    #define JW_CACHE 64

    /* Like jw_str, but ASCII results are kept in a small direct-mapped cache of JW_CACHE
       entries; table[JW_CACHE] holds the last result, checked first (runs of one subject). */
    static inline PyObject* jw_cached_str(PyObject** table, const unsigned char* p, Py_ssize_t n) {
        Py_ssize_t i;
        unsigned int h = 2166136261u;
        unsigned char acc = 0;
        PyObject** slot;
        PyObject* s = table[JW_CACHE];
        if (s != NULL && PyUnicode_GET_LENGTH(s) == n && memcmp(PyUnicode_DATA(s), p, (size_t)n) == 0) {
            Py_INCREF(s);
            return s;
        }
        for (i = 0; i < n; i++) { acc |= p[i]; h = (h ^ p[i]) * 16777619u; }
        if (acc & 0x80) return PyUnicode_DecodeUTF8((const char*)p, n, "surrogateescape");
        slot = &table[(h ^ (h >> 15)) & (JW_CACHE - 1)];
        s = *slot;
        if (s == NULL || PyUnicode_GET_LENGTH(s) != n || memcmp(PyUnicode_DATA(s), p, (size_t)n) != 0) {
            s = PyUnicode_New(n, 127);
            if (s == NULL) return NULL;
            memcpy(PyUnicode_DATA(s), p, (size_t)n);
            Py_XSETREF(*slot, s);  /* the slot owns the new str */
        }
        Py_INCREF(s);
        Py_XSETREF(table[JW_CACHE], s);  /* ... and so does the last-result entry */
        Py_INCREF(s);
        return s;
    }

    /* Header names repeat from message to message: each parser keeps its recent ones (their
       hash is cached); a NULL table (decode_headers() outside a parser) caches nothing. */
    static inline PyObject* jw_key_str(PyObject** table, const unsigned char* p, Py_ssize_t n) {
        return table == NULL ? jw_str(p, n) : jw_cached_str(table, p, n);
    }

    static inline void jw_cache_clear(PyObject** table) {
        int i;
        for (i = 0; i <= JW_CACHE; i++) { Py_CLEAR(table[i]); }
    }

    /* 1..18 ASCII digits -> value, else -1. */
    static inline long long jw_uint(const unsigned char* p, Py_ssize_t n) {
        long long v = 0;
        Py_ssize_t i;
        if (n <= 0 || n > 18) return -1;
        for (i = 0; i < n; i++) {
            unsigned int d = (unsigned int)p[i] - '0';
            if (d > 9) return -1;
            v = v * 10 + d;
        }
        return v;
    }

    static inline int jw_ndigits(unsigned long long v) {
        int n = 1;
        while (v >= 10) { v /= 10; n++; }
        return n;
    }

    /* Write v in decimal at p (exactly nd digits), return p + nd. */
    static inline char* jw_write_uint(char* p, unsigned long long v, int nd) {
        char* e = p + nd;
        char* q = e;
        do { *--q = (char)('0' + (v % 10)); v /= 10; } while (v);
        return e;
    }

    /* 0 when the UTF-8 subject is publishable, else 1 (bad char) or 2 (empty token). */
    static inline int jw_check_subject(const unsigned char* p, Py_ssize_t n, int tokens) {
        Py_ssize_t i;
        unsigned char c, c1, c2;
        int empty_token = tokens && (p[0] == '.' || p[n - 1] == '.');
        for (i = 0; i < n; i++) {
            c = p[i];
            if (c < 0x80) {
                if (c <= 0x20 || c == 0x7f) return 1;
                if (tokens && c == '.' && p[i + 1] == '.') empty_token = 1;  /* p[n] is the NUL terminator */
                continue;
            }
            c1 = p[i + 1];
            if (c == 0xC2) {
                if (c1 == 0x85 || c1 == 0xA0) return 1;
            } else if (c == 0xE1) {
                if (c1 == 0x9A && p[i + 2] == 0x80) return 1;
            } else if (c == 0xE2) {
                c2 = p[i + 2];
                if (c1 == 0x80 && ((c2 >= 0x80 && c2 <= 0x8A) || c2 == 0xA8 || c2 == 0xA9 || c2 == 0xAF)) return 1;
                if (c1 == 0x81 && c2 == 0x9F) return 1;
            } else if (c == 0xE3) {
                if (c1 == 0x80 && p[i + 2] == 0x80) return 1;
            }
        }
        return empty_token ? 2 : 0;
    }

    /* The shared Headers class; set once at import. */
    static PyTypeObject* jw_headers_type = NULL;
    /* Byte offsets of Headers' __slots__ (_d, status, description), or -1 to use setattr. */
    static Py_ssize_t jw_off_d = -1, jw_off_status = -1, jw_off_desc = -1;

    static Py_ssize_t jw_slot_offset(PyObject* descr) {
        if (descr == NULL || Py_TYPE(descr) != &PyMemberDescr_Type) return -1;
        if (((PyMemberDescrObject*)descr)->d_member->type != T_OBJECT_EX) return -1;
        return ((PyMemberDescrObject*)descr)->d_member->offset;
    }

    static void jw_set_headers_type(PyObject* t, PyObject* d, PyObject* status, PyObject* desc) {
        jw_headers_type = (PyTypeObject*)t;
        jw_off_d = jw_slot_offset(d);
        jw_off_status = jw_slot_offset(status);
        jw_off_desc = jw_slot_offset(desc);
    }

    static inline int jw_fast_headers(void) {
        return jw_off_d > 0 && jw_off_status > 0 && jw_off_desc > 0;
    }

    /* Fill a fresh Headers instance's empty slots (steals nothing; increfs the values). */
    static inline void jw_fill_headers(PyObject* h, PyObject* d, PyObject* status, PyObject* desc) {
        PyObject** p;
        p = (PyObject**)((char*)h + jw_off_d); Py_INCREF(d); Py_XSETREF(*p, d);
        p = (PyObject**)((char*)h + jw_off_status); Py_INCREF(status); Py_XSETREF(*p, status);
        p = (PyObject**)((char*)h + jw_off_desc); Py_INCREF(desc); Py_XSETREF(*p, desc);
    }

    /* Re-track a message for the cycle collector once it holds a value that could lead
       back to it. Atomic values and Headers (which only hold str) cannot. */
    static inline void jw_track_if(PyObject* self, PyObject* v) {
        PyTypeObject* t;
        if (v == Py_None) return;
        t = Py_TYPE(v);
        if (t == &PyUnicode_Type || t == &PyBytes_Type || t == &PyLong_Type || t == &PyBool_Type
                || t == &PyFloat_Type || t == jw_headers_type)
            return;
        if (!PyObject_GC_IsTracked(self)) PyObject_GC_Track(self);
    }

    /* New instance of a MsgBase subclass through MsgBase's own tp_new: no __init__, and a
       Python-level __new__ override cannot hand back an object of another layout. */
    static newfunc jw_msgbase_tp_new = NULL;

    static void jw_set_msgbase(PyObject* t) {
        jw_msgbase_tp_new = ((PyTypeObject*)t)->tp_new;
    }

    static inline PyObject* jw_new_msg(PyObject* cls, PyObject* empty) {
        return jw_msgbase_tp_new((PyTypeObject*)cls, empty, NULL);
    }

    /* True when instances of cls have no fields beyond MsgBase's (no __dict__, no extra slots). */
    static inline int jw_plain_layout(PyObject* cls, Py_ssize_t basesize) {
        PyTypeObject* t = (PyTypeObject*)cls;
        return t->tp_basicsize == basesize && t->tp_dictoffset == 0 && t->tp_weaklistoffset == 0;
    }

    static PyObject* jw_generic_new(PyObject* t) {
        return PyType_GenericNew((PyTypeObject*)t, NULL, NULL);
    }
    """
    Py_ssize_t jw_find_crlf(const unsigned char* p, Py_ssize_t n) nogil
    bint jw_isws(unsigned char c) nogil
    object jw_str(const unsigned char* p, Py_ssize_t n)
    object jw_cached_str(PyObject** table, const unsigned char* p, Py_ssize_t n)
    void jw_cache_clear(PyObject** table)
    object jw_key_str(PyObject** table, const unsigned char* p, Py_ssize_t n)
    long long jw_uint(const unsigned char* p, Py_ssize_t n) nogil
    int jw_ndigits(unsigned long long v) nogil
    char* jw_write_uint(char* p, unsigned long long v, int nd) nogil
    int jw_check_subject(const unsigned char* p, Py_ssize_t n, int tokens) nogil
    object jw_generic_new(object t)
    void jw_set_headers_type(object t, object d, object status, object desc)
    bint jw_fast_headers()
    void jw_fill_headers(object h, object d, object status, object desc)
    void jw_track_if(object self, object v)
    object jw_new_msg(object cls, object empty)
    void jw_set_msgbase(object t)
    bint jw_plain_layout(object cls, Py_ssize_t basesize)
    int PyObject_GC_IsTracked(object o)
    void PyObject_GC_UnTrack(void* o)
    enum:
        JW_CACHE

OP_INFO = 1
OP_PING = 2
OP_PONG = 3
OP_OK = 4
OP_ERR = 5
OP_FRAME_ERROR = 6  # (OP_FRAME_ERROR, ProtocolError): one malformed message skipped, the stream goes on

PING = b"PING\r\n"
PONG = b"PONG\r\n"

DEFAULT_MAX_PAYLOAD = 1 << 30

cdef enum:
    COMPACT_AT = 65536
    SHRINK_ABOVE = 1048576
    INITIAL_CAP = 32768

cdef tuple _EV_PING = (OP_PING, None)
cdef tuple _EV_PONG = (OP_PONG, None)
cdef tuple _EV_OK = (OP_OK, None)
cdef object _isawaitable = inspect.isawaitable
cdef object _loads = orjson.loads
cdef object _JSONDecodeError = orjson.JSONDecodeError
cdef object _Headers = Headers
if type(Headers) is not type or Headers.__base__ is not object:
    raise ImportError("jetwire.protocol.headers.Headers must be a plain class")
jw_set_headers_type(
    Headers,
    Headers.__dict__.get("_d"),
    Headers.__dict__.get("status"),
    Headers.__dict__.get("description"),
)
cdef tuple _EMPTY = ()


cdef str _summary(const unsigned char* p, Py_ssize_t n):
    cdef bytes head = PyBytes_FromStringAndSize(<const char*>p, n if n < 64 else 64)
    return repr(head) + ("..." if n > 64 else "")


cdef object _perr(str what, const unsigned char* p, Py_ssize_t n):
    return ProtocolError(f"{what}: {_summary(p, n)}")


# ------------------------------------------------------------------------------- MsgBase
cdef class MsgBase:
    """Base of ``jetwire.Msg``: the fields of a delivered or to-be-published message.

    The parser creates instances without calling ``__init__``; ``__init__`` is for
    users building a message by hand.

    Garbage collection: a message whose fields are all atomic (None, str, bytes, int)
    or a ``Headers`` (which only holds str) cannot be part of a reference cycle, so the
    parser untracks the messages it builds from the cycle collector (as CPython does
    for tuples and dicts of atomic values). Every setter re-tracks the message as soon
    as any other value is stored (``_client``, ``_meta``, ...), and so does the C code
    that binds ``_client`` (``Router`` for direct handlers, ``SubState._next``): a
    message waiting in a subscription's queue is not bound yet, so it stays untracked.
    """

    cdef object c_subject
    cdef object c_reply
    cdef object c_data
    cdef object c_headers
    cdef object c_sid
    cdef object c_client
    cdef object c_meta
    cdef public bint _ackd

    def __init__(self, subject="", data=b"", reply=None, headers=None, sid=0):
        self.c_subject = subject
        self.c_data = data if type(data) is bytes else bytes(data)
        self.c_reply = reply
        if headers is not None and not isinstance(headers, _Headers):
            headers = _Headers(headers)
        self.c_headers = headers
        self.c_sid = sid
        self.c_client = None
        self._ackd = False
        self.c_meta = None
        jw_track_if(self, subject)
        jw_track_if(self, reply)
        jw_track_if(self, headers)
        jw_track_if(self, sid)

    @property
    def subject(self):
        return self.c_subject

    @subject.setter
    def subject(self, value):
        self.c_subject = value
        jw_track_if(self, value)

    @property
    def reply(self):
        return self.c_reply

    @reply.setter
    def reply(self, value):
        self.c_reply = value
        jw_track_if(self, value)

    @property
    def data(self):
        return self.c_data

    @data.setter
    def data(self, value):
        self.c_data = value
        jw_track_if(self, value)

    @property
    def headers(self):
        return self.c_headers

    @headers.setter
    def headers(self, value):
        self.c_headers = value
        jw_track_if(self, value)

    @property
    def sid(self):
        return self.c_sid

    @sid.setter
    def sid(self, value):
        self.c_sid = value
        jw_track_if(self, value)

    @property
    def _client(self):
        return self.c_client

    @_client.setter
    def _client(self, value):
        self.c_client = value
        jw_track_if(self, value)

    @property
    def _meta(self):
        return self.c_meta

    @_meta.setter
    def _meta(self, value):
        self.c_meta = value
        jw_track_if(self, value)

    def __repr__(self):
        data = self.data
        shown = data[:32] + (b"..." if len(data) > 32 else b"")
        return (
            f"<{type(self).__name__} subject={self.subject!r} sid={self.sid!r} reply={self.reply!r} "
            f"data={shown!r} headers={self.headers!r}>"
        )


jw_set_msgbase(MsgBase)


# -------------------------------------------------------------------------------- Parser
@cython.final
cdef class Parser:
    """Incremental NATS protocol parser: ``feed(chunk)`` returns the completed events.

    Events are ``msg_cls`` instances for MSG/HMSG and ``(kind, arg)`` tuples otherwise:
    ``(OP_INFO, dict)``, ``(OP_PING, None)``, ``(OP_PONG, None)``, ``(OP_OK, None)``,
    ``(OP_ERR, str)``. Malformed input raises ``ProtocolError``; the parser should then
    be ``reset()`` (or dropped) before it is fed again.
    """

    cdef unsigned char* _buf
    cdef Py_ssize_t _len
    cdef Py_ssize_t _cap
    cdef Py_ssize_t _pos
    cdef Py_ssize_t _max_line
    cdef long long _max_payload
    cdef object _cls
    cdef bint _untrack
    cdef bint _busy
    cdef long long _sid_val
    cdef object _sid_obj
    cdef list _partial
    cdef PyObject* _subjects[JW_CACHE + 1]
    cdef PyObject* _keys[JW_CACHE + 1]

    def __cinit__(self):
        self._buf = NULL
        self._len = self._cap = self._pos = 0
        self._cls = MsgBase
        self._untrack = True
        self._max_line = 4096
        self._max_payload = DEFAULT_MAX_PAYLOAD
        self._busy = False
        self._sid_val = -1
        self._sid_obj = None
        for i in range(JW_CACHE + 1):
            self._subjects[i] = NULL
            self._keys[i] = NULL

    def __init__(self, msg_cls=None, max_control_line=4096, max_payload=DEFAULT_MAX_PAYLOAD):
        if msg_cls is None:
            msg_cls = MsgBase
        if not isinstance(msg_cls, type) or not issubclass(msg_cls, MsgBase):
            raise TypeError("msg_cls must be a subclass of MsgBase")
        if max_control_line < 1 or max_payload < 0:
            raise ValueError("max_control_line must be >= 1 and max_payload >= 0")
        self._cls = msg_cls
        self._untrack = jw_plain_layout(msg_cls, MsgBase.__basicsize__)
        self._max_line = max_control_line if max_control_line < (1 << 40) else (1 << 40)
        self._max_payload = max_payload if max_payload < 10 ** 18 else 10 ** 18

    def __dealloc__(self):
        jw_cache_clear(self._subjects)
        jw_cache_clear(self._keys)
        if self._buf != NULL:
            free(self._buf)
            self._buf = NULL

    @property
    def buffered(self):
        """Bytes received but not yet turned into events."""
        return self._len - self._pos

    def reset(self):
        """Discard buffered bytes (used on reconnect or after a protocol error)."""
        if self._busy:
            raise RuntimeError("Parser.reset() called from inside feed()")
        self._len = self._pos = 0
        if self._cap > SHRINK_ABOVE:
            free(self._buf)
            self._buf = NULL
            self._cap = 0
        jw_cache_clear(self._subjects)
        jw_cache_clear(self._keys)
        self._sid_val = -1
        self._sid_obj = None

    cdef int _append(self, const unsigned char* p, Py_ssize_t n) except -1:
        cdef Py_ssize_t keep, need, cap
        cdef unsigned char* nb
        if self._pos > 0 and (self._pos >= COMPACT_AT or self._len + n > self._cap):
            keep = self._len - self._pos
            if keep:
                memmove(self._buf, self._buf + self._pos, keep)
            self._len = keep
            self._pos = 0
        need = self._len + n
        if need > self._cap:
            cap = self._cap * 2 if self._cap else INITIAL_CAP
            if cap < need:
                cap = need
            nb = <unsigned char*>realloc(self._buf, cap)
            if nb == NULL:
                raise MemoryError()
            self._buf = nb
            self._cap = cap
        memcpy(self._buf + self._len, p, n)
        self._len += n
        return 0

    def feed(self, data):
        """Parse ``data`` (bytes, bytearray or memoryview); return the completed events."""
        cdef Py_buffer view
        cdef Py_ssize_t consumed = 0
        cdef list events
        if self._busy:
            raise RuntimeError("Parser.feed() is not re-entrant")
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
        self._busy = True
        self._partial = None
        try:
            if self._pos == self._len:
                # Nothing buffered: parse straight from the caller's memory, keep the tail.
                self._pos = self._len = 0
                events = self._parse(<const unsigned char*>view.buf, view.len, &consumed)
                if consumed < view.len:
                    self._append(<const unsigned char*>view.buf + consumed, view.len - consumed)
                elif self._cap > SHRINK_ABOVE:
                    free(self._buf)
                    self._buf = NULL
                    self._cap = 0
            else:
                self._append(<const unsigned char*>view.buf, view.len)
                events = self._parse(self._buf + self._pos, self._len - self._pos, &consumed)
                self._pos += consumed
                if self._pos == self._len:
                    self._pos = self._len = 0
                    if self._cap > SHRINK_ABOVE:
                        free(self._buf)
                        self._buf = NULL
                        self._cap = 0
        except ProtocolError as exc:  # the stream cannot be framed: keep what came before
            exc.events = self._partial if self._partial is not None else []
            raise
        finally:
            self._busy = False
            self._partial = None
            PyBuffer_Release(&view)
        return events

    cdef object _sid(self, long long v):
        if v != self._sid_val:
            self._sid_obj = PyLong_FromLongLong(v)
            self._sid_val = v
        return self._sid_obj

    cdef list _parse(self, const unsigned char* p, Py_ssize_t n, Py_ssize_t* consumed):
        cdef list events = []
        cdef Py_ssize_t pos = 0, avail, lim, L, i, ol, nt, start, stop
        cdef Py_ssize_t ts[6]
        cdef Py_ssize_t te[6]
        cdef Py_ssize_t max_line = self._max_line
        cdef const unsigned char* line
        cdef unsigned char c0, c1, c2, c3
        cdef long long sid, size, hlen
        cdef bint hmsg
        cdef MsgBase m
        cdef object cls = self._cls
        cdef bint untrack = self._untrack
        cdef object subject, reply, text, headers
        self._partial = events  # what a framing error leaves behind (see feed)
        while pos < n:
            avail = n - pos
            lim = avail if avail < max_line + 2 else max_line + 2
            L = jw_find_crlf(p + pos, lim)
            if L < 0:
                if avail > max_line + 1:
                    consumed[0] = pos
                    raise _perr("control line too long", p + pos, 64 if avail > 64 else avail)
                break
            line = p + pos
            # operation token
            ol = 0
            while ol < L and not jw_isws(line[ol]):
                ol += 1
            c0 = line[0] | 0x20
            hmsg = False
            if ol == 3 and c0 == b'm' and (line[1] | 0x20) == b's' and (line[2] | 0x20) == b'g':
                pass
            elif (ol == 4 and c0 == b'h' and (line[1] | 0x20) == b'm' and (line[2] | 0x20) == b's'
                    and (line[3] | 0x20) == b'g'):
                hmsg = True
            else:
                # everything but MSG/HMSG
                i = ol
                while i < L and jw_isws(line[i]):
                    i += 1
                if ol == 4:
                    c1 = line[1] | 0x20
                    c2 = line[2] | 0x20
                    c3 = line[3] | 0x20
                    if c0 == b'p' and c1 == b'i' and c2 == b'n' and c3 == b'g' and i == L:
                        events.append(_EV_PING)
                        pos += L + 2
                        continue
                    if c0 == b'p' and c1 == b'o' and c2 == b'n' and c3 == b'g' and i == L:
                        events.append(_EV_PONG)
                        pos += L + 2
                        continue
                    if line[0] == b'-' and c1 == b'e' and c2 == b'r' and c3 == b'r':
                        events.append((OP_ERR, self._err_text(line, i, L)))
                        pos += L + 2
                        continue
                    if c0 == b'i' and c1 == b'n' and c2 == b'f' and c3 == b'o':
                        events.append((OP_INFO, self._info(line, i, L)))
                        pos += L + 2
                        continue
                elif ol == 3 and line[0] == b'+' and (line[1] | 0x20) == b'o' and (line[2] | 0x20) == b'k' and i == L:
                    events.append(_EV_OK)
                    pos += L + 2
                    continue
                consumed[0] = pos
                raise _perr("unknown protocol operation", line, L)

            # MSG / HMSG arguments (tokens after the operation)
            nt = 0
            i = ol
            while i < L:
                while i < L and jw_isws(line[i]):
                    i += 1
                if i >= L:
                    break
                if nt == 5:
                    nt = 6
                    break
                ts[nt] = i
                while i < L and not jw_isws(line[i]):
                    i += 1
                te[nt] = i
                nt += 1
            if hmsg:
                if nt != 4 and nt != 5:
                    raise _perr("invalid HMSG arguments", line, L)
            elif nt != 3 and nt != 4:
                raise _perr("invalid MSG arguments", line, L)
            sid = jw_uint(line + ts[1], te[1] - ts[1])
            if sid < 0:
                raise _perr("invalid number in protocol line", line, L)
            if hmsg:
                hlen = jw_uint(line + ts[nt - 2], te[nt - 2] - ts[nt - 2])
                if hlen < 0:
                    raise _perr("invalid number in protocol line", line, L)
            else:
                hlen = 0
            size = jw_uint(line + ts[nt - 1], te[nt - 1] - ts[nt - 1])
            if size < 0:
                raise _perr("invalid number in protocol line", line, L)
            if hmsg:
                if hlen > size:
                    raise _perr("HMSG header length exceeds total length", line, L)
                if size > self._max_payload:
                    raise _perr("HMSG payload larger than max_payload", line, L)
            elif size > self._max_payload:
                raise _perr("MSG payload larger than max_payload", line, L)
            start = pos + L + 2
            stop = start + <Py_ssize_t>size
            if stop + 2 > n:
                break
            if p[stop] != 13 or p[stop + 1] != 10:
                consumed[0] = pos
                raise _perr(
                    "missing CRLF after HMSG payload" if hmsg else "missing CRLF after MSG payload",
                    p + stop, 64 if n - stop > 64 else n - stop,
                )
            subject = jw_cached_str(self._subjects, line + ts[0], te[0] - ts[0])
            if nt == 5 or (nt == 4 and not hmsg):
                reply = jw_str(line + ts[2], te[2] - ts[2])
            else:
                reply = None
            if hmsg:
                try:
                    headers = _decode_headers(p + start, <Py_ssize_t>hlen, self._keys)
                except ProtocolError as exc:  # this frame only: report it, go on
                    events.append((OP_FRAME_ERROR, ProtocolError(
                        f"{exc} in a message on subject {subject!r} (message skipped)", subject=subject)))
                    pos = stop + 2
                    continue
            m = <MsgBase>jw_new_msg(cls, _EMPTY)
            m.c_subject = subject
            m.c_reply = reply
            m.c_sid = self._sid(sid)
            if hmsg:
                m.c_headers = headers
                m.c_data = PyBytes_FromStringAndSize(<const char*>p + start + hlen, <Py_ssize_t>(size - hlen))
            else:
                m.c_data = PyBytes_FromStringAndSize(<const char*>p + start, <Py_ssize_t>size)
            if untrack:
                PyObject_GC_UnTrack(<void*>m)
            PyList_Append(events, m)
            pos = stop + 2
        consumed[0] = pos
        return events

    cdef object _err_text(self, const unsigned char* line, Py_ssize_t i, Py_ssize_t L):
        while L > i and jw_isws(line[L - 1]):
            L -= 1
        if L - i >= 2 and line[i] == 39 and line[L - 1] == 39:
            i += 1
            L -= 1
        return PyUnicode_DecodeUTF8(<const char*>line + i, L - i, "replace")

    cdef object _info(self, const unsigned char* line, Py_ssize_t i, Py_ssize_t L):
        while L > i and jw_isws(line[L - 1]):
            L -= 1
        try:
            info = _loads(PyBytes_FromStringAndSize(<const char*>line + i, L - i))
        except _JSONDecodeError:
            raise _perr("invalid INFO JSON", line, L) from None
        if type(info) is not dict:
            raise _perr("INFO is not a JSON object", line, L)
        return info


# ------------------------------------------------------------------------------- headers
cdef object _make_headers(dict d, object status, object description):
    """A Headers instance without __init__ (the decoder has validated everything).

    A decoded Headers holds only str (in lists in a dict), so no reference cycle can
    pass through it: the instance, its dict and its lists are untracked from the cycle
    collector, like CPython untracks tuples and dicts of atomic values. The dict
    re-tracks itself if a container is inserted later.
    """
    for values in d.values():
        PyObject_GC_UnTrack(<void*>values)
    PyObject_GC_UnTrack(<void*>d)
    h = jw_generic_new(_Headers)
    if jw_fast_headers():
        jw_fill_headers(h, d, status, description)
    else:
        h._d = d
        h.status = status
        h.description = description
    PyObject_GC_UnTrack(<void*>h)
    return h


cdef object _decode_headers(const unsigned char* p, Py_ssize_t n, PyObject** keys):
    cdef Py_ssize_t eol, pos, last, a, b, colon, i, L
    cdef const unsigned char* line
    cdef dict d = {}
    cdef object status = None, description = None, key, value, values, text
    cdef unsigned char c
    if (n < 12 or p[0] != b'N' or p[1] != b'A' or p[2] != b'T' or p[3] != b'S' or p[4] != b'/'
            or p[5] != b'1' or p[6] != b'.' or p[7] != b'0'
            or p[n - 4] != 13 or p[n - 3] != 10 or p[n - 2] != 13 or p[n - 1] != 10):
        raise _perr("invalid header block", p, n)
    eol = jw_find_crlf(p, n)
    if eol > 8:
        c = p[8]
        if c != 32 and c != 9:
            raise _perr("invalid header version line", p, n)
        for i in range(8, eol):
            if p[i] == 13 or p[i] == 10:
                raise _perr("invalid header version line", p, n)
        a = 8
        b = eol
        while a < b and (p[a] == 32 or p[a] == 9):
            a += 1
        while b > a and (p[b - 1] == 32 or p[b - 1] == 9):
            b -= 1
        if b > a:
            text = PyUnicode_DecodeUTF8(<const char*>p + a, b - a, "surrogateescape")
            status = text[:3]
            description = text[3:].strip(" \t") or None
    pos = eol + 2
    last = n - 2
    while pos < last:
        eol = pos + jw_find_crlf(p + pos, n - pos)
        line = p + pos
        L = eol - pos
        colon = 0
        while colon < L and line[colon] != 58:
            colon += 1
        if colon == 0 or colon == L:
            raise _perr("invalid header line", line, L)
        for i in range(colon):
            c = line[i]
            if c < 33 or c == 127:
                raise _perr("invalid header key", line, L)
        a = colon + 1
        b = L
        while a < b and (line[a] == 32 or line[a] == 9):
            a += 1
        while b > a and (line[b - 1] == 32 or line[b - 1] == 9):
            b -= 1
        for i in range(a, b):
            c = line[i]
            if c == 13 or c == 10:
                raise _perr("CR or LF inside a header value", line, L)
        key = jw_key_str(keys, line, colon)
        value = jw_str(line + a, b - a)
        values = d.get(key)
        if values is None:
            d[key] = [value]
        else:
            (<list>values).append(value)
        pos = eol + 2
    return _make_headers(d, status, description)


def decode_headers(raw):
    """Parse a header block ``NATS/1.0[ SSS[ description]]\\r\\nK: V\\r\\n...\\r\\n\\r\\n``."""
    cdef Py_buffer view
    PyObject_GetBuffer(raw, &view, PyBUF_SIMPLE)
    try:
        return _decode_headers(<const unsigned char*>view.buf, view.len, NULL)
    finally:
        PyBuffer_Release(&view)


def encode_headers(headers):
    """Encode ``Headers`` or a ``dict[str, str | list[str]]`` as a wire header block.

    ``None`` gives ``b""``; an empty mapping gives ``b"NATS/1.0\\r\\n\\r\\n"``.
    """
    cdef list parts
    cdef object k, v, x, status, description
    if headers is None:
        return b""
    if isinstance(headers, _Headers):
        status = headers.status
        if status is None:
            parts = ["NATS/1.0\r\n"]
        else:
            check_value(status)
            description = headers.description
            if description:
                check_value(description)
                parts = ["NATS/1.0 ", status, " ", description, "\r\n"]
            else:
                parts = ["NATS/1.0 ", status, "\r\n"]
        for k, v in (<dict>headers._d).items():
            for x in <list>v:
                parts += (k, ": ", x, "\r\n")
    elif isinstance(headers, dict):
        parts = ["NATS/1.0\r\n"]
        for k, v in (<dict>headers).items():
            k = as_text(k)
            check_key(k)
            if isinstance(v, (str, bytes, bytearray)):
                check_value(v)
                parts += (k, ": ", as_text(v), "\r\n")
            elif isinstance(v, (list, tuple)):
                for x in v:
                    check_value(x)
                    parts += (k, ": ", as_text(x), "\r\n")
            else:
                raise BadHeaderError(f"header {k!r}: value must be a str or a list of str, not {type(v).__name__}")
    else:
        raise TypeError(f"headers must be Headers, dict or None, not {type(headers).__name__}")
    parts.append("\r\n")
    try:  # surrogate escapes (bytes that were not UTF-8 when received) go out as those bytes
        return "".join(parts).encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raise BadHeaderError("header value is not encodable as UTF-8") from None


# ------------------------------------------------------------------------------ metadata
cdef object _meta_num(const char* s, Py_ssize_t a, Py_ssize_t b):
    cdef long long v
    cdef Py_ssize_t i
    if b - a <= 18:
        v = jw_uint(<const unsigned char*>s + a, b - a)
        if v >= 0:
            return PyLong_FromLongLong(v)
    else:
        for i in range(a, b):
            if s[i] < b'0' or s[i] > b'9':
                break
        else:
            return int(PyBytes_FromStringAndSize(s + a, b - a))
    tok = PyUnicode_DecodeUTF8(s + a, b - a, NULL)
    raise NotJSMessageError(f"invalid number {tok!r} in ack subject")


def parse_metadata_fields(subject):
    """Split a ``$JS.ACK...`` subject into
    ``(domain, acc_hash, stream, consumer, delivered, stream_seq, consumer_seq, timestamp_ns, pending)``.
    """
    cdef Py_ssize_t n, i, nt, st
    cdef Py_ssize_t ts[12]
    cdef Py_ssize_t te[12]
    cdef const char* s
    cdef object domain, acc, stream, consumer, pending
    if type(subject) is not str:
        raise NotJSMessageError(f"not a JetStream ack subject: {subject!r}")
    try:
        s = PyUnicode_AsUTF8AndSize(subject, &n)
    except UnicodeEncodeError:
        raise NotJSMessageError(f"not a JetStream ack subject: {subject!r}") from None
    if n < 8 or s[0] != b'$' or s[1] != b'J' or s[2] != b'S' or s[3] != b'.' or s[4] != b'A' or s[5] != b'C' or s[6] != b'K' or s[7] != b'.':
        raise NotJSMessageError(f"not a JetStream ack subject: {subject!r}")
    ts[0] = 0
    te[0] = 3
    ts[1] = 4
    te[1] = 7
    nt = 2
    st = 8
    for i in range(8, n):
        if s[i] == b'.':
            if nt < 12:
                ts[nt] = st
                te[nt] = i
            nt += 1
            st = i + 1
    if nt < 12:
        ts[nt] = st
        te[nt] = n
    nt += 1
    if nt == 9:
        domain = acc = None
        i = 2
        pending = _meta_num(s, ts[8], te[8])
    elif nt >= 11:
        domain = None if (te[2] == ts[2] or (te[2] - ts[2] == 1 and s[ts[2]] == b'_')) else PyUnicode_DecodeUTF8(s + ts[2], te[2] - ts[2], NULL)
        acc = None if te[3] == ts[3] else PyUnicode_DecodeUTF8(s + ts[3], te[3] - ts[3], NULL)
        i = 4
        pending = _meta_num(s, ts[10], te[10])
    elif nt == 8:
        domain = acc = None
        i = 2
        pending = 0
    else:
        raise NotJSMessageError(f"not a JetStream ack subject: {subject!r}")
    if te[i] == ts[i] or te[i + 1] == ts[i + 1]:
        raise NotJSMessageError(f"not a JetStream ack subject: {subject!r}")
    stream = PyUnicode_DecodeUTF8(s + ts[i], te[i] - ts[i], NULL)
    consumer = PyUnicode_DecodeUTF8(s + ts[i + 1], te[i + 1] - ts[i + 1], NULL)
    return (
        domain, acc, stream, consumer,
        _meta_num(s, ts[i + 2], te[i + 2]),
        _meta_num(s, ts[i + 3], te[i + 3]),
        _meta_num(s, ts[i + 4], te[i + 4]),
        _meta_num(s, ts[i + 5], te[i + 5]),
        pending,
    )


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


@cython.final
cdef class WriteLock:
    """The blocking writer's lock (``acquire``/``release``, a context manager, like
    ``threading.Lock``): a raw lock the compiled ``Outbox.publish`` takes without a
    Python call. Waiting for it releases the GIL."""

    cdef PyThread_type_lock _lk
    cdef bint _held

    def __cinit__(self):
        self._lk = PyThread_allocate_lock()
        if self._lk == NULL:
            raise MemoryError()

    def __dealloc__(self):
        if self._lk != NULL:
            PyThread_free_lock(self._lk)

    cdef inline void _acquire(self):
        if not PyThread_acquire_lock(self._lk, NOWAIT_LOCK):
            with nogil:
                PyThread_acquire_lock(self._lk, WAIT_LOCK)
        self._held = True

    cdef inline void _release(self):
        self._held = False
        PyThread_release_lock(self._lk)

    def acquire(self, blocking=True, timeout=-1):
        if blocking and timeout == -1:
            self._acquire()
            return True
        if not blocking:
            if PyThread_acquire_lock(self._lk, NOWAIT_LOCK):
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


# ------------------------------------------------------------------------------- routing
cdef class SubState:
    """The routing state of a subscription (base of ``jetwire.core.SubscriptionBase``).

    ``Router`` reads and updates these fields for every message: ``_direct`` (a handler
    called from the reader instead of queueing), ``delivered``, ``_max`` (auto-unsubscribe
    after that many, 0: none), ``_pending`` (a deque) with ``_pending_bytes`` and its
    limits ``_pmsgs_limit`` / ``_pbytes_limit``, ``_dropped``, ``_slow`` and ``_signal``
    (whose ``set()`` wakes the consumer). ``_client`` is the connection messages are
    bound to (``msg._client``) when they are handed out.

    Queued messages are not bound yet: a parsed message holds only atomic values (see
    ``MsgBase``), so it stays untracked by the cycle collector while it waits in
    ``_pending``; ``_next()`` binds it (which re-tracks it) as it hands it out.
    """

    cdef public object _client
    cdef public object _direct
    cdef public object _pending
    cdef public object _signal
    cdef public long long delivered
    cdef public long long _max
    cdef public long long _pending_bytes
    cdef public long long _pmsgs_limit
    cdef public long long _pbytes_limit
    cdef public long long _dropped
    cdef public bint _slow

    def _next(self):
        """Pop the oldest pending message bound to ``_client`` (``None`` when there is none),
        keeping ``_pending_bytes``."""
        return self._pop()

    def _deliver(self, cb, report):
        """Hand the pending messages (as ``_next()`` pops them) to ``cb(msg)`` in order.

        Returns None once the queue is empty, or the result of a callback that returned an
        awaitable (the caller awaits it, then calls again). An exception raised by ``cb``
        goes to ``report(exc)`` and delivery goes on.
        """
        cdef object msg, r
        while True:
            msg = self._pop()
            if msg is None:
                return None
            try:
                r = cb(msg)
            except Exception as exc:
                report(exc)
                continue
            if r is not None and _isawaitable(r):
                return r

    cdef object _pop(self):
        cdef object pending = self._pending
        cdef object msg
        cdef MsgBase m
        if not pending:
            return None
        msg = pending.popleft()
        if isinstance(msg, MsgBase):
            m = <MsgBase>msg
            self._pending_bytes -= len(m.c_data)
            m.c_client = self._client
            jw_track_if(m, m.c_client)
        else:
            self._pending_bytes -= len(msg.data)
            msg._client = self._client
        return msg


@cython.final
cdef class Router:
    """The receive hot path: ``feed(data)`` parses ``data`` and routes every event.

    Control tuples go to ``control(event)`` in stream order. A message counts in
    ``in_msgs`` / ``in_bytes``; when ``subs`` (sid -> ``SubState``) has its subscription
    it is bound to the subscription's ``_client`` and handed to its ``_direct`` handler,
    or, within the subscription's limits, queued (unbound) in its ``_pending`` deque; past
    ``_max`` deliveries it is dropped silently (``on_max(sub)`` runs once, when the
    last one is delivered), past the pending limits it is dropped and counted in
    ``_dropped`` (``on_slow(sub)`` runs when the subscription becomes slow). Once the
    events are routed, ``_signal.set()`` is called for every subscription whose queue
    was empty before. An exception from a callback propagates: the counters of that
    feed are not added and the subscriptions touched so far are signalled next time.
    """

    cdef public object parser
    cdef public dict subs
    cdef public object control
    cdef public object on_max
    cdef public object on_slow
    cdef public long long in_msgs
    cdef public long long in_bytes
    cdef list touched

    def __init__(self, parser, subs, control=None, on_max=None, on_slow=None):
        if not isinstance(subs, dict):
            raise TypeError(f"subs must be a dict, not {type(subs).__name__}")
        self.parser = parser
        self.subs = subs
        self.control = control
        self.on_max = on_max
        self.on_slow = on_slow
        self.in_msgs = 0
        self.in_bytes = 0
        self.touched = []

    def feed(self, data):
        """Parse ``data`` and route the events. Raises ProtocolError on garbage."""
        cdef object events
        try:
            events = self.parser.feed(data)
        except ProtocolError as exc:  # route what came before the bad frame, then fail
            if exc.events:
                self._route(<list?>exc.events)
            raise
        if events:
            self._route(<list?>events)

    def route(self, events):
        """Route already parsed events (a list)."""
        self._route(<list?>events)

    cdef int _route(self, list events) except -1:
        cdef Py_ssize_t i, dlen
        cdef long long n = 0, nbytes = 0
        cdef object ev, sub_obj, direct, pending
        cdef MsgBase m
        cdef SubState sub
        cdef dict subs = self.subs
        cdef list touched = self.touched
        i = 0
        while i < PyList_GET_SIZE(events):
            ev = <object>PyList_GET_ITEM(events, i)
            i += 1
            if type(ev) is tuple:
                self.control(ev)
                continue
            m = <MsgBase?>ev
            dlen = len(m.c_data)
            n += 1
            nbytes += dlen
            sub_obj = subs.get(m.c_sid)
            if sub_obj is None:
                continue
            sub = <SubState?>sub_obj
            direct = sub._direct
            if direct is not None:
                m.c_client = sub._client
                jw_track_if(m, m.c_client)
                sub.delivered += 1
                direct(ev)
                continue
            if sub._max:
                if sub.delivered >= sub._max:
                    continue
                sub.delivered += 1
                if sub.delivered >= sub._max:
                    self.on_max(sub)
            else:
                sub.delivered += 1
            pending = sub._pending
            if len(pending) >= sub._pmsgs_limit or sub._pending_bytes + dlen > sub._pbytes_limit:
                sub._dropped += 1
                if not sub._slow:
                    sub._slow = True
                    self.on_slow(sub)
                continue
            if not pending:
                touched.append(sub)
            pending.append(ev)
            sub._pending_bytes += dlen
        self.in_msgs += n
        self.in_bytes += nbytes
        if touched:
            for sub_obj in touched:
                (<SubState>sub_obj)._signal.set()
            del touched[:]
        return 0


# ------------------------------------------------------------------------ publish-ack mux


cdef object _plain_ack(object data, long long* seq):
    """The stream name when ``data`` is exactly ``{"stream":"<name>","seq":<n>}`` (see the
    pure twin's ``_plain_ack``), with ``seq`` set; else None."""
    cdef const unsigned char* p
    cdef Py_ssize_t n, i, a, b, end
    cdef long long v = 0
    cdef unsigned char c
    if type(data) is not bytes:
        return None
    p = <const unsigned char*>PyBytes_AS_STRING(data)
    n = PyBytes_GET_SIZE(data)
    # '{"stream":"' is 11 bytes, '","seq":' 8; then at least one name byte, one digit and '}'
    if n < 22 or memcmp(p, b'{"stream":"', 11) != 0 or p[n - 1] != c'}':
        return None
    i = 11
    a = i
    while i < n:
        c = p[i]
        if c == c'"' or c == c'\\' or c < 0x20:
            break
        i += 1
    if i == a or n - i < 10 or memcmp(p + i, b'","seq":', 8) != 0:
        return None
    b = i
    i += 8
    end = n - 1  # the '}'
    if i >= end or end - i > 18:
        return None
    if p[i] == c'0' and end - i > 1:
        return None
    while i < end:
        c = p[i]
        if c < c'0' or c > c'9':
            return None
        v = v * 10 + (c - c'0')
        i += 1
    try:
        name = PyUnicode_DecodeUTF8(<const char*>(p + a), b - a, NULL)
    except UnicodeDecodeError:
        return None
    seq[0] = v
    return name


cdef class AckMux:
    """The per-message part of the JetStream async-publish mux (base of
    ``jetwire.jetstream.pubmux.PubAckMux``, which documents the whole).

    ``pending`` maps a token to ``(future, subject, header_bytes_or_None, data,
    retries_left, retry_wait)``; ``add()`` registers a publish under the next token
    (``str`` of a counter) and returns it. ``on_msg(msg)`` handles one reply on
    ``<prefix><token>``: an unknown token is ignored; the usual answer
    ``{"stream":"<name>","seq":<n>}`` (see ``_plain_ack``) becomes ``make_ack(name, seq)``
    (the ack type's constructor), resolves the entry's future with its ``set_result``
    (unless it is done already; an error from ``set_result`` is ignored) and then, when
    ``stall_waiters`` or ``complete_waiters`` is non-empty, calls ``self._after_pop()``.
    Any other reply (or ``make_ack`` None) goes to ``self._other(msg, token, entry)``
    after the entry was popped.
    """

    cdef public str prefix
    cdef public Py_ssize_t _plen
    cdef public dict pending
    cdef public long long _n
    cdef public list stall_waiters
    cdef public list complete_waiters
    cdef public long long wake_at
    cdef public object make_ack

    def __init__(self, prefix, make_ack=None):
        if type(prefix) is not str:
            raise TypeError(f"prefix must be a str, not {type(prefix).__name__}")
        self.prefix = prefix
        self._plen = len(prefix)
        self.pending = {}
        self._n = 0
        self.stall_waiters = []
        self.complete_waiters = []
        self.wake_at = 0
        self.make_ack = make_ack

    def add(self, fut, subject, hdr, data, retries, retry_wait):
        """Register a publish; returns its token (the reply subject is ``prefix + token``)."""
        self._n += 1
        token = str(self._n)
        self.pending[token] = (fut, subject, hdr, data, retries, retry_wait)
        return token

    def on_msg(self, msg):
        """Handle one reply on ``<prefix>*`` (see the class docstring)."""
        cdef object subject, data, token, entry, make, name, fut, ack
        cdef long long seq = 0
        cdef MsgBase m
        if isinstance(msg, MsgBase):
            m = <MsgBase>msg
            subject = m.c_subject
            data = m.c_data
        else:
            subject = msg.subject
            data = msg.data
        token = subject[self._plen:]
        entry = self.pending.pop(token, None)
        if entry is None:
            return
        make = self.make_ack
        name = _plain_ack(data, &seq) if make is not None else None
        if name is None:
            self._other(msg, token, entry)
            return
        ack = make(name, seq)
        fut = (<tuple?>entry)[0]
        try:
            if not fut.done():
                fut.set_result(ack)
        except Exception:  # cancelled / resolved concurrently by another thread
            pass
        if self.stall_waiters or self.complete_waiters:
            self._after_pop()

    def _other(self, msg, token, entry):
        raise NotImplementedError

    def _after_pop(self):
        raise NotImplementedError
