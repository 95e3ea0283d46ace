# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The incremental protocol parser: bytes in, messages and control events out (pure twin:
``jetwire.protocol._pure.parser``; the rules listed there apply here too).

Bytes-faithful, never fatal for content: subjects, reply subjects, header names and
values (and the status description) are ``str``; bytes that are not UTF-8 are kept as
surrogate escapes, and ``.encode("utf-8", "surrogateescape")`` recovers them. A message
whose header block is malformed is skipped and reported as ``(OP_FRAME_ERROR,
ProtocolError)`` (with the message's ``subject``); only a stream that can no longer be
framed raises ``ProtocolError``, whose ``events`` are the events parsed before it.
"""
include "common.pxi"

from cpython.dict cimport PyDict_GetItem


cdef extern from "Python.h":
    Py_ssize_t PyDict_GET_SIZE(object d)

import orjson

from jetwire._c.headers cimport _decode_headers
from jetwire._c.msg cimport FrameSink, MsgBase

from jetwire.errors import ProtocolError

PING = b"PING\r\n"
PONG = b"PONG\r\n"

cdef tuple _EV_PING = (OP_PING, None)
cdef tuple _EV_PONG = (OP_PONG, None)
cdef tuple _EV_OK = (OP_OK, None)
cdef object _loads = orjson.loads
cdef object _JSONDecodeError = orjson.JSONDecodeError
cdef tuple _EMPTY = ()
jw_set_msgbase(MsgBase)


# -------------------------------------------------------------------------------- Parser
@cython.final
cdef class Parser:
    """Incremental NATS protocol parser: ``feed(chunk)`` returns the completed events.

    Events are ``msg_cls`` instances for MSG/HMSG and ``(kind, arg)`` tuples otherwise:
    ``(OP_INFO, dict)``, ``(OP_PING, None)``, ``(OP_PONG, None)``, ``(OP_OK, None)``,
    ``(OP_ERR, str)``, ``(OP_FRAME_ERROR, ProtocolError)`` (one well-framed message whose
    content is malformed, skipped). Input that cannot be framed raises ``ProtocolError``
    (its ``events``: what was parsed before); the parser should then be ``reset()`` (or
    dropped) before it is fed again. One thread feeds a parser (its caches are its own).

    ``sinks`` (sid -> ``FrameSink``) are offered their subscription's frames before any
    message is built; a frame a sink takes makes no event and counts in ``taken_msgs`` /
    ``taken_bytes`` (payload bytes), which the router collects (see the pure twin).
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
    cdef readonly dict sinks
    cdef public long long taken_msgs
    cdef public long long taken_bytes
    cdef PyObject* _subjects[JW_CACHE + 1]
    cdef PyObject* _keys[JW_CACHE + 1]

    def __cinit__(self):
        self._buf = NULL
        self._len = self._cap = self._pos = 0
        self._cls = MsgBase
        self._untrack = True
        self._max_line = DEFAULT_MAX_CONTROL_LINE
        self._max_payload = DEFAULT_MAX_PAYLOAD
        self._busy = False
        self._sid_val = -1
        self._sid_obj = None
        self.sinks = {}
        self.taken_msgs = self.taken_bytes = 0
        for i in range(JW_CACHE + 1):
            self._subjects[i] = NULL
            self._keys[i] = NULL

    def __init__(self, msg_cls=None, max_control_line=DEFAULT_MAX_CONTROL_LINE, max_payload=DEFAULT_MAX_PAYLOAD):
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
            self._pos = self._len = 0  # and discard what is buffered (as reset())
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
        cdef object subject, reply, text, headers, sink
        cdef PyObject* sinkp
        cdef const unsigned char* rp
        cdef const unsigned char* hp
        cdef Py_ssize_t rn, hn
        cdef dict sinks = self.sinks
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
                i = jw_token_end(line, i, L)
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
            if PyDict_GET_SIZE(sinks) != 0:
                sinkp = PyDict_GetItem(sinks, self._sid(sid))
                if sinkp != NULL:
                    sink = <object>sinkp  # (held: the sink may be unregistered while it runs)
                    if nt == 5 or (nt == 4 and not hmsg):
                        rp = line + ts[2]
                        rn = te[2] - ts[2]
                    else:
                        rp = NULL
                        rn = 0
                    if hmsg:
                        hp = p + start
                        hn = <Py_ssize_t>hlen
                    else:
                        hp = NULL
                        hn = 0
                    if (<FrameSink?>sink).take(line + ts[0], te[0] - ts[0], rp, rn, hp, hn, p + start + hn,
                                               <Py_ssize_t>size - hn):
                        self.taken_msgs += 1
                        self.taken_bytes += <Py_ssize_t>size - hn
                        pos = stop + 2
                        continue
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


