# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The per-ack part of the JetStream async-publish mux."""
include "common.pxi"

from jetwire._c.msg cimport MsgBase

jw_set_msgbase(MsgBase)


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
