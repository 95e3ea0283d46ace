# Shared by every compiled module (included, so each module has its own copy of the
# static C helpers, as a header would give it).
cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE, PyByteArray_Resize
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_Append, PyList_GET_ITEM, PyList_GET_SIZE
from cpython.long cimport PyLong_AsUnsignedLongLong, PyLong_FromLongLong
from cpython.ref cimport PyObject
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memchr, memcmp, memcpy, memmove

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

    /* A header value's bounds [*a, *b) in line without the spaces and tabs around it. */
    static inline void jw_trim_value(const unsigned char* line, Py_ssize_t* a, Py_ssize_t* b) {
        while (*a < *b && (line[*a] == ' ' || line[*a] == '\\t')) (*a)++;
        while (*b > *a && (line[*b - 1] == ' ' || line[*b - 1] == '\\t')) (*b)--;
    }

    /* The index of the first whitespace byte (jw_isws) in p[i:L], or L. Eight bytes at a
       time while none is <= 32 (the "has a byte less than n" test of a 64-bit word is exact
       about whether one is there); a control byte that is not whitespace stays in the token. */
    static inline Py_ssize_t jw_token_end(const unsigned char* p, Py_ssize_t i, Py_ssize_t L) {
        uint64_t w;
        Py_ssize_t stop = i + 8 < L ? i + 8 : L;
        while (i < stop && p[i] > 32) i++;  /* short tokens (sids, sizes) byte by byte */
        if (i < stop && jw_isws(p[i])) return i;
        for (;;) {
            while (i + 8 <= L) {
                memcpy(&w, p + i, 8);
                if (((w - 0x2121212121212121ULL) & ~w & 0x8080808080808080ULL) != 0) break;
                i += 8;
            }
            while (i < L && p[i] > 32) i++;
            if (i >= L || jw_isws(p[i])) return i;
            i++;
        }
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

    /* 0 when the subject's wire bytes are publishable, else 1 (whitespace or a control
       character, ASCII or the UTF-8 of Unicode whitespace) or 2 (an empty token).
       p[n] must be readable (a NUL terminator). */
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
                if (c1 == 0x80 || c1 == 0x81) {  /* then p[i + 2] is at most the terminator */
                    c2 = p[i + 2];
                    if (c1 == 0x80 && ((c2 >= 0x80 && c2 <= 0x8A) || c2 == 0xA8 || c2 == 0xA9 || c2 == 0xAF)) return 1;
                    if (c1 == 0x81 && c2 == 0x9F) return 1;
                }
            } else if (c == 0xE3) {
                if (c1 == 0x80 && p[i + 2] == 0x80) return 1;
            }
        }
        return empty_token ? 2 : 0;
    }

    /* Eight bytes at a time (little-endian only): 1 when every byte of p[0:n] is printable
       ASCII (0x21-0x7e), no token is empty (tokens 1, 2) and, with tokens 2, no byte is a
       wildcard; 0 when that is not certain (the exact checks then decide). An ack subject
       is 60-90 bytes: this keeps a publish's checks at a fraction of the byte loops. */
    #define JW_ONES 0x0101010101010101ULL
    #define JW_LOW7 0x7f7f7f7f7f7f7f7fULL
    static inline unsigned long long jw_zero_bytes(unsigned long long y) {
        /* the high bit of each byte of y that is zero, and only those */
        return ~((((y & JW_LOW7) + JW_LOW7) | y) | JW_LOW7);
    }
    static inline int jw_plain_subject(const unsigned char* p, Py_ssize_t n, int tokens) {
    #if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        Py_ssize_t i = 0;
        unsigned long long x, bad, dots, prev = 0;
        unsigned char c;
        if (tokens && (p[0] == '.' || p[n - 1] == '.')) return 0;
        for (; i + 8 <= n; i += 8) {
            memcpy(&x, p + i, 8);
            /* a byte below 0x21 (exact as to whether there is one), at or above 0x80, or 0x7f */
            bad = ((x - 0x21 * JW_ONES) & ~x & ~JW_LOW7) | (x & ~JW_LOW7) | jw_zero_bytes(x ^ (0x7f * JW_ONES));
            if (tokens == 2) bad |= jw_zero_bytes(x ^ (0x2a * JW_ONES)) | jw_zero_bytes(x ^ (0x3e * JW_ONES));
            if (bad) return 0;
            if (tokens) {
                dots = jw_zero_bytes(x ^ (0x2e * JW_ONES));
                if ((dots & (dots << 8)) || (prev && (dots & 0x80))) return 0;
                prev = dots >> 63;
            }
        }
        for (; i < n; i++) {
            c = p[i];
            if (c <= 0x20 || c >= 0x7f || (tokens == 2 && (c == '*' || c == '>'))) return 0;
            if (tokens && c == '.') {
                if (prev) return 0;
                prev = 1;
            } else {
                prev = 0;
            }
        }
        return 1;
    #else
        return 0;
    #endif
    }

    /* The shared Headers class (set once at import by the modules that need it): a Headers
       value cannot lead back to a message, and the decoder fills its slots. */
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
    Py_ssize_t jw_token_end(const unsigned char* p, Py_ssize_t i, Py_ssize_t L) nogil
    void jw_trim_value(const unsigned char* line, Py_ssize_t* a, Py_ssize_t* b) nogil
    object jw_str(const unsigned char* p, Py_ssize_t n)
    object jw_cached_str(PyObject** table, const unsigned char* p, Py_ssize_t n)
    void jw_cache_clear(PyObject** table)
    object jw_key_str(PyObject** table, const unsigned char* p, Py_ssize_t n)
    long long jw_uint(const unsigned char* p, Py_ssize_t n) nogil
    int jw_ndigits(unsigned long long v) nogil
    char* jw_write_uint(char* p, unsigned long long v, int nd) nogil
    int jw_check_subject(const unsigned char* p, Py_ssize_t n, int tokens) nogil
    int jw_plain_subject(const unsigned char* p, Py_ssize_t n, int tokens) nogil
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



from jetwire.errors import ProtocolError

cdef enum:
    COMPACT_AT = 65536
    SHRINK_ABOVE = 1048576
    INITIAL_CAP = 32768


cdef inline str _summary(const unsigned char* p, Py_ssize_t n):
    cdef bytes head = PyBytes_FromStringAndSize(<const char*>p, n if n < 64 else 64)
    return repr(head) + ("..." if n > 64 else "")


cdef inline object _perr(str what, const unsigned char* p, Py_ssize_t n):
    return ProtocolError(f"{what}: {_summary(p, n)}")


OP_INFO = 1
OP_PING = 2
OP_PONG = 3
OP_OK = 4
OP_ERR = 5
OP_FRAME_ERROR = 6  # (OP_FRAME_ERROR, ProtocolError): one malformed message skipped, the stream goes on
DEFAULT_MAX_PAYLOAD = 1 << 30
DEFAULT_MAX_CONTROL_LINE = 1 << 20  # a bound against a broken server (see options.max_control_line)
