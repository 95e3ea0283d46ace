# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Ack-subject metadata: the fields of a ``$JS.ACK...`` subject (pure twin:
``jetwire.protocol._pure.metadata``).

A subject that is not a JetStream ack subject -- including one holding bytes that are
not UTF-8 (surrogate escapes) -- raises ``NotJSMessageError`` for that one message.
"""
include "common.pxi"

from jetwire.errors import NotJSMessageError


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


