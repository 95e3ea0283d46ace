# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Ack-subject metadata: ``SequencePair``, ``MsgMetadata`` and the parsers of a
``$JS.ACK...`` subject (pure twin: ``jetwire.protocol._pure.metadata``).

The two types behave like frozen dataclasses (fields, keyword or positional
construction, ``==``, ``hash``, ``repr``, assignment raising ``FrozenInstanceError``,
pickling), and ``MsgMetadata.timestamp`` (an aware UTC datetime) is built from
``timestamp_ns`` on first use. ``parse_metadata`` builds them in one C call.

They are not cycle-collected types (``cython.no_gc``): what they hold is ints, strs,
None, a datetime and a ``SequencePair``, which cannot lead back to them, and leaving
the collector out makes each parse two plain allocations that do not count towards
(and trigger) collections -- half the cost of a parse when messages are kept. A
reference cycle through a hand-built instance (a field holding a container that holds
the instance) would never be freed.

A subject that is not a JetStream ack subject -- including one holding bytes that are
not UTF-8 (surrogate escapes) -- raises ``NotJSMessageError`` for that one message.
"""
include "common.pxi"

from cpython.datetime cimport datetime_new, import_datetime
from cpython.long cimport PyLong_FromUnsignedLongLong

from dataclasses import FrozenInstanceError
from datetime import datetime, timedelta, timezone

from jetwire.errors import NotJSMessageError

import_datetime()

cdef object _UTC = timezone.utc
cdef object _EPOCH = datetime(1970, 1, 1, tzinfo=_UTC)
cdef object _timedelta = timedelta
cdef object _Frozen = FrozenInstanceError

cdef enum:
    _US_PER_DAY = 86400000000
    _LAST_DAY = 2932896  # 9999-12-31, in days since 1970-01-01


cdef object _utc_from_ns(object ns):
    """``_EPOCH + timedelta(microseconds=ns // 1000)``, built directly for an int in
    datetime's range (the civil date from the day count: H. Hinnant's algorithm)."""
    cdef long long v, us, days, z, era, doe, yoe, doy, mp, y, m, d, rem
    if type(ns) is int and 0 <= ns < 9223372036854775807:
        v = ns
        us = v // 1000
        days = us // _US_PER_DAY
        if days <= _LAST_DAY:
            rem = us - days * _US_PER_DAY
            z = days + 719468
            era = z // 146097
            doe = z - era * 146097
            yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
            doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
            mp = (5 * doy + 2) // 153
            d = doy - (153 * mp + 2) // 5 + 1
            m = mp + 3 if mp < 10 else mp - 9
            y = yoe + era * 400 + (1 if m <= 2 else 0)
            return datetime_new(<int>y, <int>m, <int>d, <int>(rem // 3600000000), <int>(rem // 60000000 % 60),
                                <int>(rem // 1000000 % 60), <int>(rem % 1000000), _UTC)
    return _EPOCH + _timedelta(microseconds=ns // 1000)


# --------------------------------------------------------------------------------- types
@cython.no_gc
@cython.freelist(16)
cdef class SequencePair:
    """Stream and consumer sequence of a JetStream message (immutable)."""

    __match_args__ = ("stream", "consumer")

    def __init__(self, stream, consumer):
        self.stream = stream
        self.consumer = consumer

    def __setattr__(self, name, value):
        raise _Frozen(f"cannot assign to field {name!r}")

    def __delattr__(self, name):
        raise _Frozen(f"cannot delete field {name!r}")

    def __repr__(self):
        return f"{type(self).__qualname__}(stream={self.stream!r}, consumer={self.consumer!r})"

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        cdef SequencePair o = <SequencePair>other
        return (self.stream, self.consumer) == (o.stream, o.consumer)

    def __hash__(self):
        return hash((self.stream, self.consumer))

    def __reduce__(self):
        return type(self), (self.stream, self.consumer)


@cython.no_gc
@cython.freelist(16)
cdef class MsgMetadata:
    """What a JetStream ack subject tells about a message (immutable).

    ``timestamp`` is an aware UTC datetime (microsecond precision), built from
    ``timestamp_ns`` (the exact nanoseconds) on first use unless one is given.
    ``domain`` is ``None`` when the subject has none (or ``_``).
    """

    __match_args__ = ("sequence", "num_delivered", "num_pending", "timestamp", "timestamp_ns", "stream",
                      "consumer", "domain")

    def __init__(self, sequence, num_delivered, num_pending, timestamp, timestamp_ns, stream, consumer,
                 domain=None):
        self.sequence = sequence
        self.num_delivered = num_delivered
        self.num_pending = num_pending
        self._ts = timestamp
        self.timestamp_ns = timestamp_ns
        self.stream = stream
        self.consumer = consumer
        self.domain = domain

    @property
    def timestamp(self):
        """When the message was stored: an aware UTC datetime (microseconds, truncated)."""
        ts = self._ts
        if ts is None:
            ts = self._ts = _utc_from_ns(self.timestamp_ns)
        return ts

    def __setattr__(self, name, value):
        raise _Frozen(f"cannot assign to field {name!r}")

    def __delattr__(self, name):
        raise _Frozen(f"cannot delete field {name!r}")

    def __repr__(self):
        return (
            f"{type(self).__qualname__}(sequence={self.sequence!r}, num_delivered={self.num_delivered!r}, "
            f"num_pending={self.num_pending!r}, timestamp={self.timestamp!r}, timestamp_ns={self.timestamp_ns!r}, "
            f"stream={self.stream!r}, consumer={self.consumer!r}, domain={self.domain!r})"
        )

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        cdef MsgMetadata o = <MsgMetadata>other
        if not ((self.sequence, self.num_delivered, self.num_pending, self.timestamp_ns, self.stream,
                 self.consumer, self.domain)
                == (o.sequence, o.num_delivered, o.num_pending, o.timestamp_ns, o.stream, o.consumer, o.domain)):
            return False
        if self._ts is None and o._ts is None:
            return True  # both derived from the same timestamp_ns
        return self.timestamp == o.timestamp

    def __hash__(self):
        return hash((self.sequence, self.num_delivered, self.num_pending, self.timestamp, self.timestamp_ns,
                     self.stream, self.consumer, self.domain))

    def __reduce__(self):
        return type(self), (self.sequence, self.num_delivered, self.num_pending, self._ts, self.timestamp_ns,
                            self.stream, self.consumer, self.domain)


# -------------------------------------------------------------------------------- parsing
cdef inline bint _digits(const char* s, Py_ssize_t a, Py_ssize_t b, unsigned long long* out) noexcept:
    """True when s[a:b] is one or more ASCII digits; ``out``: their value (modulo 2**64)."""
    cdef unsigned long long v = 0
    cdef unsigned int d
    cdef Py_ssize_t i
    if a >= b:
        return False
    for i in range(a, b):
        d = <unsigned char>s[i] - 48
        if d > 9:
            return False
        v = v * 10 + d
    out[0] = v
    return True


cdef object _bad_number(const char* s, Py_ssize_t a, Py_ssize_t b):
    tok = PyUnicode_DecodeUTF8(s + a, b - a, "surrogateescape")
    return NotJSMessageError(f"invalid number {tok!r} in ack subject")


cdef object _meta_num(const char* s, Py_ssize_t a, Py_ssize_t b):
    """The decimal number s[a:b] (ASCII digits only), else ``NotJSMessageError``."""
    cdef unsigned long long v
    if not _digits(s, a, b, &v):
        raise _bad_number(s, a, b)
    if b - a <= 19:  # 19 digits always fit in 64 bits
        return PyLong_FromUnsignedLongLong(v)
    return int(PyBytes_FromStringAndSize(s + a, b - a))


cdef inline object _not_ack(object subject):
    return NotJSMessageError(f"not a JetStream ack subject: {subject!r}")


cdef int _split_raw(const char* s, Py_ssize_t n, Py_ssize_t* ts, Py_ssize_t* te) noexcept:
    """Token bounds of an ack subject (at most 12 kept); the number of tokens, and the
    index of the stream token (2 or 4) in the high bits: ``nt | (i << 8)``; -1 when
    ``s`` is not an ack subject. (The empty stream or consumer check comes after the
    pending count, as in the pure twin.)"""
    cdef Py_ssize_t i, nt, st
    cdef const char* q
    cdef const char* end = s + n
    if n < 8 or s[0] != b'$' or s[1] != b'J' or s[2] != b'S' or s[3] != b'.' or s[4] != b'A' or s[5] != b'C' or s[6] != b'K' or s[7] != b'.':
        return -1
    ts[0] = 0
    te[0] = 3
    ts[1] = 4
    te[1] = 7
    nt = 2
    st = 8
    while True:
        q = <const char*>memchr(s + st, 46, <size_t>(end - (s + st)))  # the next "."
        if q == NULL:
            break
        i = q - s
        if nt < 12:
            ts[nt] = st
            te[nt] = i
        nt += 1
        st = i + 1
    if nt < 12:
        ts[nt] = st
        te[nt] = n
    nt += 1
    if nt == 9 or nt == 8:
        i = 2
    elif nt >= 11:
        i = 4
    else:
        return -1
    return <int>(nt if nt < 12 else 12) | (<int>i << 8)


cdef const char* _utf8(object subject, Py_ssize_t* n) except NULL:
    """The UTF-8 bytes of a str subject (``NotJSMessageError`` for anything else)."""
    if type(subject) is not str:
        raise _not_ack(subject)
    try:
        return PyUnicode_AsUTF8AndSize(subject, n)
    except UnicodeEncodeError:
        raise _not_ack(subject) from None


cdef int _split(object subject, const char** sp, Py_ssize_t* ts, Py_ssize_t* te) except -1:
    """``_split_raw`` of a str (``NotJSMessageError`` when it is not an ack subject)."""
    cdef Py_ssize_t n
    cdef const char* s = _utf8(subject, &n)
    cdef int r = _split_raw(s, n, ts, te)
    if r < 0:
        raise _not_ack(subject)
    sp[0] = s
    return r


cdef inline object _domain(const char* s, Py_ssize_t a, Py_ssize_t b):
    if b == a or (b - a == 1 and s[a] == b'_'):
        return None
    return jw_str(<const unsigned char*>s + a, b - a)


def parse_metadata_fields(subject):
    """Split a ``$JS.ACK...`` subject into
    ``(domain, acc_hash, stream, consumer, delivered, stream_seq, consumer_seq, timestamp_ns, pending)``.
    """
    cdef Py_ssize_t ts[12]
    cdef Py_ssize_t te[12]
    cdef const char* s = NULL
    cdef int r = _split(subject, &s, ts, te)
    cdef int nt = r & 0xff
    cdef Py_ssize_t i = r >> 8
    cdef object domain = None, acc = None, pending = 0
    if nt == 9:
        pending = _meta_num(s, ts[8], te[8])
    elif nt >= 11:
        domain = _domain(s, ts[2], te[2])
        acc = None if te[3] == ts[3] else jw_str(<const unsigned char*>s + ts[3], te[3] - ts[3])
        pending = _meta_num(s, ts[10], te[10])
    if te[i] == ts[i] or te[i + 1] == ts[i + 1]:
        raise _not_ack(subject)
    return (
        domain, acc,
        jw_str(<const unsigned char*>s + ts[i], te[i] - ts[i]),
        jw_str(<const unsigned char*>s + ts[i + 1], te[i + 1] - ts[i + 1]),
        _meta_num(s, ts[i + 2], te[i + 2]),
        _meta_num(s, ts[i + 3], te[i + 3]),
        _meta_num(s, ts[i + 4], te[i + 4]),
        _meta_num(s, ts[i + 5], te[i + 5]),
        pending,
    )


cdef long long _num_ll(const char* s, Py_ssize_t a, Py_ssize_t b) except -1:
    """The decimal number s[a:b] as an int64 (``NotJSMessageError`` as ``_meta_num``;
    ``OverflowError`` past int64)."""
    cdef unsigned long long v
    if not _digits(s, a, b, &v):
        raise _bad_number(s, a, b)
    if b - a <= 18:  # 18 digits always fit in int64
        return <long long>v
    while s[a] == 48 and b - a > 1:  # (leading zeros)
        a += 1
    if b - a <= 18 or (b - a == 19 and v <= <unsigned long long>0x7FFFFFFFFFFFFFFF):
        return <long long>v  # (19 digits never wrap past 2**64: v is exact)
    raise OverflowError("ack subject number out of range")


cdef int ack_numbers_raw(const char* s, Py_ssize_t n, long long* out) except -1:
    """The numbers of the ack subject ``s[:n]``, checked in ``parse_metadata_fields``' order."""
    cdef Py_ssize_t ts[12]
    cdef Py_ssize_t te[12]
    cdef int r = _split_raw(s, n, ts, te)
    cdef int nt
    cdef Py_ssize_t i
    if r < 0:
        raise _not_ack(jw_str(<const unsigned char*>s, n))
    nt = r & 0xff
    i = r >> 8
    if nt == 9:
        out[4] = _num_ll(s, ts[8], te[8])
    elif nt >= 11:
        out[4] = _num_ll(s, ts[10], te[10])
    else:
        out[4] = 0
    if te[i] == ts[i] or te[i + 1] == ts[i + 1]:
        raise _not_ack(jw_str(<const unsigned char*>s, n))
    out[0] = _num_ll(s, ts[i + 2], te[i + 2])
    out[1] = _num_ll(s, ts[i + 3], te[i + 3])
    out[2] = _num_ll(s, ts[i + 4], te[i + 4])
    out[3] = _num_ll(s, ts[i + 5], te[i + 5])
    return 0


cdef int ack_numbers(object subject, long long* out) except -1:
    """The numbers of an ack subject, checked in ``parse_metadata_fields``' order."""
    cdef Py_ssize_t n
    cdef const char* s = _utf8(subject, &n)
    return ack_numbers_raw(s, n, out)


cdef MsgMetadata parse_metadata_c(object subject):
    """``parse_metadata`` for C callers (``MsgBase.metadata``)."""
    cdef Py_ssize_t ts[12]
    cdef Py_ssize_t te[12]
    cdef const char* s = NULL
    cdef int r = _split(subject, &s, ts, te)
    cdef int nt = r & 0xff
    cdef Py_ssize_t i = r >> 8
    cdef SequencePair seq = SequencePair.__new__(SequencePair)
    cdef MsgMetadata m = MsgMetadata.__new__(MsgMetadata)
    if nt == 9:
        m.num_pending = _meta_num(s, ts[8], te[8])
    elif nt >= 11:
        m.domain = _domain(s, ts[2], te[2])
        m.num_pending = _meta_num(s, ts[10], te[10])
    else:
        m.num_pending = 0
    if te[i] == ts[i] or te[i + 1] == ts[i + 1]:
        raise _not_ack(subject)
    m.stream = jw_str(<const unsigned char*>s + ts[i], te[i] - ts[i])
    m.consumer = jw_str(<const unsigned char*>s + ts[i + 1], te[i + 1] - ts[i + 1])
    m.num_delivered = _meta_num(s, ts[i + 2], te[i + 2])
    seq.stream = _meta_num(s, ts[i + 3], te[i + 3])
    seq.consumer = _meta_num(s, ts[i + 4], te[i + 4])
    m.timestamp_ns = _meta_num(s, ts[i + 5], te[i + 5])
    m.sequence = seq
    return m


def parse_metadata(subject):
    """Parse an ack subject (v1 ``$JS.ACK.<stream>...`` or v2 with domain and account hash)
    into a ``MsgMetadata``. Raises ``NotJSMessageError`` for anything else."""
    return parse_metadata_c(subject)
