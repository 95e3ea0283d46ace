# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Messages to column values for bulk readers (pure twin, with the rules:
``jetwire.protocol._pure.columns``): ``DirectRows`` filled by a ``DirectCollector`` for
batched direct get replies, ``AckRows`` (filled by an ``AckCollector``, or by
``ack_columns``) for pull-consumer messages. Sequences and times are filled into
``array('q')`` buffers in C, with no Python int per row; the direct-get headers are
read straight from the decoded header dict and the RFC 3339 time parsed in C."""
include "common.pxi"

from cpython cimport array

import array as _array_mod

from jetwire._c.headers cimport _decode_headers
from jetwire._c.metadata cimport ack_numbers, ack_numbers_raw
from jetwire._c.msg cimport FrameSink, MsgBase

from jetwire.errors import NotJSMessageError, ProtocolError

K_SUBJECT = "Nats-Subject"
K_SEQ = "Nats-Sequence"
K_TIME = "Nats-Time-Stamp"
DIRECT_KEYS = frozenset(("Nats-Stream", K_SUBJECT, K_SEQ, K_TIME, "Nats-Num-Pending", "Nats-Last-Sequence"))
cdef Py_ssize_t _N_DIRECT = len(DIRECT_KEYS)
cdef object _K_SUBJECT = K_SUBJECT
cdef object _K_SEQ = K_SEQ
cdef object _K_TIME = K_TIME
cdef object _DIRECT_KEYS = DIRECT_KEYS
cdef array.array _QTEMPLATE = _array_mod.array("q")
cdef array.array _ITEMPLATE = _array_mod.array("i")


cdef extern from "Python.h":
    void PyErr_SetObject(object type, object value)
    void PyErr_WriteUnraisable(object obj)


cdef void _unraisable(BaseException exc, object where) noexcept:
    """Report ``exc`` where nothing can raise it (``sys.unraisablehook``, as Python does
    for an exception in a finalizer)."""
    PyErr_SetObject(type(exc), exc)
    PyErr_WriteUnraisable(where)

cdef int[12] _MDAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


cdef inline int _d2(const unsigned char* p) noexcept:
    """Two ASCII digits -> 0..99, else -1."""
    cdef unsigned int a = p[0] - 48, b = p[1] - 48
    if a > 9 or b > 9:
        return -1
    return <int>(a * 10 + b)


cdef inline long long _days_from_civil(long long y, long long m, long long d) noexcept:
    cdef long long era, yoe, doy, doe
    if m <= 2:
        y -= 1
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


cdef bint _rfc3339_us(const unsigned char* s, Py_ssize_t n, long long* out) noexcept:
    """See ``rfc3339_us`` in the pure twin (the same rules, on the UTF-8 bytes)."""
    cdef int y1, y2, mo, d, hh, mi, ss, oh, om
    cdef long long y, frac = 0, off = 0, secs
    cdef Py_ssize_t i, j, nd
    if n < 20 or s[4] != 45 or s[7] != 45 or (s[10] != 84 and s[10] != 116) or s[13] != 58 or s[16] != 58:
        return False
    y1 = _d2(s)
    y2 = _d2(s + 2)
    mo = _d2(s + 5)
    d = _d2(s + 8)
    hh = _d2(s + 11)
    mi = _d2(s + 14)
    ss = _d2(s + 17)
    if y1 < 0 or y2 < 0 or mo < 0 or d < 0 or hh < 0 or mi < 0 or ss < 0:
        return False
    y = y1 * 100 + y2
    i = 19
    if s[i] == 46:
        j = i + 1
        while j < n and s[j] >= 48 and s[j] <= 57:
            j += 1
        nd = j - i - 1
        if nd < 1 or nd > 9:
            return False
        for k in range(6):
            frac = frac * 10 + ((s[i + 1 + k] - 48) if k < nd else 0)
        i = j
    if i >= n:
        return False
    if (s[i] == 90 or s[i] == 122) and i + 1 == n:
        off = 0
    elif (s[i] == 43 or s[i] == 45) and n - i == 6 and s[i + 3] == 58:
        oh = _d2(s + i + 1)
        om = _d2(s + i + 4)
        if oh < 0 or om < 0:
            return False
        off = (oh * 60 + om) * 60
        if s[i] == 45:
            off = -off
    else:
        return False
    if mo < 1 or mo > 12 or d < 1 or d > _MDAYS[mo - 1] or hh > 23 or mi > 59 or ss > 60:
        return False
    if mo == 2 and d == 29 and not (y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)):
        return False
    secs = _days_from_civil(y, mo, d) * 86400 + hh * 3600 + mi * 60 + ss - off
    out[0] = secs * 1000000 + frac
    return True


def rfc3339_us(s):
    """Microseconds since the epoch (floored) of an RFC 3339 time, or None when ``s`` is not
    of the form ``YYYY-MM-DDTHH:MM:SS[.f{1,9}](Z|+HH:MM|-HH:MM)``."""
    cdef Py_ssize_t n
    cdef const char* p
    cdef long long v
    if type(s) is not str:
        raise TypeError("rfc3339_us() takes a str")
    try:
        p = PyUnicode_AsUTF8AndSize(s, &n)
    except UnicodeEncodeError:
        return None
    if _rfc3339_us(<const unsigned char*>p, n, &v):
        return v
    return None


cdef long long _seq(object s) except? -1:
    cdef Py_ssize_t n
    cdef const char* p = NULL
    cdef long long v = -1
    if type(s) is str:
        try:
            p = PyUnicode_AsUTF8AndSize(s, &n)
        except UnicodeEncodeError:
            p = NULL
        if p != NULL:
            v = jw_uint(<const unsigned char*>p, n)
    if v < 0:
        raise ValueError(f"invalid {K_SEQ} header {s!r} in a direct get reply")
    return v


cdef inline object _first(dict d, object key):
    values = d.get(key)
    if values is None:
        raise KeyError(key)
    return (<list>values)[0]


cdef Py_ssize_t _MAX_OFFSET = 0x7FFFFFFF  # Arrow binary / string offsets are int32


cdef inline Py_ssize_t _put(bytearray buf, Py_ssize_t used, const char* p, Py_ssize_t n) except -1:
    """Append ``p[:n]`` at ``used`` in ``buf`` (grown by doubling); the new used length."""
    cdef Py_ssize_t need = used + n, cap = PyByteArray_GET_SIZE(buf)
    if need > _MAX_OFFSET:
        raise OverflowError("one fetch holds more than 2 GiB of column data; lower fetchMaxBytes")
    if need > cap:
        cap = cap * 2 if cap else 4096
        while cap < need:
            cap *= 2
        PyByteArray_Resize(buf, cap if cap <= _MAX_OFFSET else _MAX_OFFSET)
    if n:
        memcpy(PyByteArray_AS_STRING(buf) + used, p, n)
    return need


cdef inline bint _has_status(const unsigned char* h, Py_ssize_t n) noexcept:
    """Whether the header block ``h[:n]`` has a status on its version line."""
    cdef Py_ssize_t eol = jw_find_crlf(h, n), i
    for i in range(8, eol):
        if h[i] != 32 and h[i] != 9:
            return True
    return False


cdef class AckRows:
    """The rows of pull-consumer messages below stream sequence ``hi``, taken one by one
    (by ``ack_columns`` or, as they arrive, by an ``AckCollector``; see the pure twin)."""

    cdef public object reply
    cdef public object error
    cdef readonly long long hi
    cdef readonly Py_ssize_t want
    cdef readonly Py_ssize_t delivered
    cdef readonly bint end
    cdef bytearray _subj, _data
    cdef Py_ssize_t _slen, _dlen
    cdef object _headers
    cdef array.array _seqs, _times, _soff, _doff
    cdef Py_ssize_t _n, _cap

    def __init__(self, reply, long long hi, Py_ssize_t want=0):
        self.reply = reply
        self.error = None
        self.hi = hi
        self.want = want
        self.delivered = 0
        self.end = False
        self._subj = bytearray()
        self._data = bytearray()
        self._slen = self._dlen = 0
        self._headers = None
        self._seqs = array.clone(_QTEMPLATE, 0, False)
        self._times = array.clone(_QTEMPLATE, 0, False)
        self._soff = array.clone(_ITEMPLATE, 1, True)
        self._doff = array.clone(_ITEMPLATE, 1, True)
        self._n = 0
        self._cap = 0

    def __len__(self):
        return self._n

    @property
    def last_seq(self):
        """The sequence of the last row (0 when there is none)."""
        return self._seqs.data.as_longlongs[self._n - 1] if self._n else 0

    cdef int _row(self, long long* nums, const char* subject, Py_ssize_t sn, const char* data, Py_ssize_t dn,
                  object hrow) except -1:
        """Append one row (``hrow``: None or the row's ``[(name, [values])]``)."""
        cdef Py_ssize_t i = self._n
        if i == self._cap:
            self._cap = self._cap * 2 if self._cap else 1024
            array.resize(self._seqs, self._cap)
            array.resize(self._times, self._cap)
            array.resize(self._soff, self._cap + 1)
            array.resize(self._doff, self._cap + 1)
        self._slen = _put(self._subj, self._slen, subject, sn)
        self._dlen = _put(self._data, self._dlen, data, dn)
        self._seqs.data.as_longlongs[i] = nums[1]
        self._times.data.as_longlongs[i] = nums[3] // 1000
        self._soff.data.as_ints[i + 1] = <int>self._slen
        self._doff.data.as_ints[i + 1] = <int>self._dlen
        if hrow is not None:
            if self._headers is None:
                self._headers = [None] * i
            PyList_Append(self._headers, hrow)
        elif self._headers is not None:
            PyList_Append(self._headers, None)
        self._n = i + 1
        return 0

    cdef bint _ends(self, long long* nums) noexcept:
        """Whether the row just taken (``nums``) ends the rows."""
        if nums[4] == 0 or nums[1] + 1 >= self.hi:
            self.end = True
        return self.end

    cdef bint _add(self, object m) except -1:
        """Take ``m``; True when nothing more is to be taken (``end``)."""
        cdef object reply, h, subject, payload, hrow = None, raw
        cdef long long nums[5]
        cdef const char* sp
        cdef Py_ssize_t sn
        self.delivered += 1
        if isinstance(m, MsgBase):
            reply = (<MsgBase>m).c_reply
        else:
            reply = m.reply
        if not reply:
            raise NotJSMessageError("message has no JetStream ack subject")
        ack_numbers(reply, nums)
        if nums[1] >= self.hi:
            self.end = True
            return True
        if isinstance(m, MsgBase):
            subject = (<MsgBase>m).c_subject
            payload = (<MsgBase>m).c_data
            h = (<MsgBase>m).c_headers
        else:
            subject = m.subject
            payload = m.data
            h = m.headers
        try:
            sp = PyUnicode_AsUTF8AndSize(subject, &sn)
        except UnicodeEncodeError:  # bytes another client sent that are not UTF-8: as they came
            raw = (<str>subject).encode("utf-8", "surrogateescape")
            sp = PyBytes_AS_STRING(raw)
            sn = PyBytes_GET_SIZE(raw)
        if type(payload) is not bytes:
            payload = bytes(payload)
        if h is not None and len(h):
            hrow = [(k, list(v)) for k, v in h._d.items()]
        self._row(nums, sp, sn, PyBytes_AS_STRING(payload), PyBytes_GET_SIZE(payload), hrow)
        return self._ends(nums)

    cdef int _take(self, const unsigned char* subject, Py_ssize_t sn, const unsigned char* reply, Py_ssize_t rn,
                   const unsigned char* hdr, Py_ssize_t hn, const unsigned char* data, Py_ssize_t dn) except -1:
        """``_add`` from a frame's raw parts: 1 when the rows end, 0 when not, 2 when the
        frame is declined (a malformed header block: the parser reports it)."""
        cdef long long nums[5]
        cdef object h, hrow = None
        if hdr != NULL:
            try:
                h = _decode_headers(hdr, hn, NULL)
            except ProtocolError:
                return 2
            if len(h):
                hrow = [(k, list(v)) for k, v in h._d.items()]
        self.delivered += 1
        if reply == NULL or rn == 0:
            raise NotJSMessageError("message has no JetStream ack subject")
        ack_numbers_raw(<const char*>reply, rn, nums)
        if nums[1] >= self.hi:
            self.end = True
            return 1
        self._row(nums, <const char*>subject, sn, <const char*>data, dn, hrow)
        return 1 if self._ends(nums) else 0

    def add(self, m):
        """Take ``m`` (raises what a bad ack subject raises); True when ``end``."""
        return self._add(m)

    def columns(self):
        """``(subject_offsets, subject_bytes, seqs, times_us, data_offsets, data_bytes,
        headers)`` (see the pure twin)."""
        array.resize(self._seqs, self._n)
        array.resize(self._times, self._n)
        array.resize(self._soff, self._n + 1)
        array.resize(self._doff, self._n + 1)
        PyByteArray_Resize(self._subj, self._slen)
        PyByteArray_Resize(self._data, self._dlen)
        self._cap = self._n
        return self._soff, self._subj, self._seqs, self._times, self._doff, self._data, self._headers


def ack_columns(msgs, long long hi):
    """``(subject_offsets, subject_bytes, seqs, times_us, data_offsets, data_bytes, headers,
    end)`` of pull-consumer messages below stream sequence ``hi`` (see the pure twin)."""
    cdef AckRows rows = AckRows(None, hi)
    for m in msgs:
        if rows._add(m):
            break
    return rows.columns() + (rows.end,)


cdef class AckCollector(FrameSink):
    """The direct handler of a pull's reply subscription, and its frame sink (see the
    pure twin)."""

    cdef public object target
    cdef public object on_event

    def __init__(self, on_event):
        self.target = None
        self.on_event = on_event

    def __call__(self, m):
        cdef object t = self.target, h
        cdef AckRows rows
        cdef bint done
        if t is None:
            return
        rows = <AckRows?>t
        h = (<MsgBase>m).c_headers if isinstance(m, MsgBase) else m.headers
        if h is not None and h.status is not None and not ((<MsgBase>m).c_data if isinstance(m, MsgBase) else m.data):
            if ((<MsgBase>m).c_subject if isinstance(m, MsgBase) else m.subject) == rows.reply:
                self.on_event(m)
            return
        if rows.end or rows.error is not None or rows.delivered >= rows.want:
            return  # (the pull is over)
        try:
            done = rows._add(m)
        except Exception as exc:
            rows.error = exc
            done = True
        if done or rows.delivered >= rows.want:
            self.on_event(None)

    cdef int take(self, const unsigned char* subject, Py_ssize_t sn, const unsigned char* reply, Py_ssize_t rn,
                  const unsigned char* hdr, Py_ssize_t hn, const unsigned char* data, Py_ssize_t dn) noexcept:
        cdef object t = self.target
        cdef AckRows rows
        cdef int r
        if t is None:
            return 1  # (dropped, as __call__ drops it)
        if type(t) is not AckRows or (hdr != NULL and _has_status(hdr, hn)):
            return 0  # status replies go to __call__, as messages
        rows = <AckRows>t
        if rows.end or rows.error is not None or rows.delivered >= rows.want:
            return 1  # (the pull is over)
        try:
            r = rows._take(subject, sn, reply, rn, hdr, hn, data, dn)
        except Exception as exc:
            rows.error = exc
            r = 1
        if r == 2:
            return 0
        if r == 1 or rows.delivered >= rows.want:
            try:
                self.on_event(None)
            except BaseException as exc:
                _unraisable(exc, self)
        return 1


cdef inline bint _is_key(const unsigned char* p, Py_ssize_t n, const char* key, Py_ssize_t kn) noexcept:
    return n == kn and memcmp(p, key, kn) == 0


cdef class DirectRows:
    """The rows of one batched direct get, filled by a ``DirectCollector`` as the replies
    arrive (see the pure twin)."""

    cdef public object reply
    cdef public object error
    cdef list _subjects, _data, _odd
    cdef object _headers
    cdef array.array _seqs, _times
    cdef Py_ssize_t _n, _cap

    def __init__(self, reply):
        self.reply = reply
        self.error = None
        self._subjects = []
        self._data = []
        self._odd = []
        self._headers = None
        self._seqs = array.clone(_QTEMPLATE, 0, False)
        self._times = array.clone(_QTEMPLATE, 0, False)
        self._n = 0
        self._cap = 0

    def __len__(self):
        return self._n

    @property
    def last_seq(self):
        """The sequence of the last row (0 when there is none)."""
        return self._seqs.data.as_longlongs[self._n - 1] if self._n else 0

    cdef int _row(self, object subject, long long seq, long long t, object text, object data) except -1:
        """Append the row's values (``text``: the time when ``_rfc3339_us`` could not read it)."""
        cdef Py_ssize_t i = self._n
        if text is not None:
            PyList_Append(self._odd, (i, text))
        if i == self._cap:
            self._cap = self._cap * 2 if self._cap else 1024
            array.resize(self._seqs, self._cap)
            array.resize(self._times, self._cap)
        self._seqs.data.as_longlongs[i] = seq
        self._times.data.as_longlongs[i] = t
        PyList_Append(self._subjects, subject)
        PyList_Append(self._data, data)
        self._n = i + 1
        if self._headers is not None:
            PyList_Append(self._headers, None)
        return 0

    cdef int _add(self, object data, dict d) except -1:
        cdef Py_ssize_t i = self._n, tn
        cdef long long seq, t = 0
        cdef const char* tp = NULL
        cdef object subject, text, row, headers
        if self.error is not None:
            return 0
        try:
            subject = _first(d, _K_SUBJECT)
            seq = _seq(_first(d, _K_SEQ))
            text = _first(d, _K_TIME)
        except Exception as exc:
            self.error = exc
            return 0
        if type(text) is str:
            try:
                tp = PyUnicode_AsUTF8AndSize(text, &tn)
            except UnicodeEncodeError:
                tp = NULL
        if tp != NULL and _rfc3339_us(<const unsigned char*>tp, tn, &t):
            text = None
        else:
            t = 0
        headers = self._headers
        if len(d) != _N_DIRECT:
            row = [(k, list(v)) for k, v in d.items() if k not in _DIRECT_KEYS] or None
            if row is not None and headers is None:
                self._headers = [None] * i
        else:
            row = None
        self._row(subject, seq, t, text, data)
        if row is not None:
            (<list>self._headers)[i] = row
        return 0

    cdef int _take(self, const unsigned char* h, Py_ssize_t hn, const unsigned char* data, Py_ssize_t dn) except -1:
        """A data reply from its raw header block (no status) and payload: 1 when taken, 0
        to be declined (a malformed header block, which the parser reports). The usual
        block (the direct-get headers, each once, nothing else) is read in place; any
        other goes through the header decoder and ``_add``."""
        cdef Py_ssize_t pos, eol, colon, a, b, i, last, L
        cdef const unsigned char* line
        cdef const unsigned char* sp = NULL
        cdef const unsigned char* qp = NULL
        cdef const unsigned char* tp = NULL
        cdef Py_ssize_t sn = 0, qn = 0, tn = 0
        cdef long long seq, t = 0
        cdef bint plain = hn >= 12 and memcmp(h, b"NATS/1.0\r\n", 10) == 0 \
            and h[hn - 4] == 13 and h[hn - 3] == 10 and h[hn - 2] == 13 and h[hn - 1] == 10
        cdef object hdrs, text
        if self.error is not None:
            return 1
        pos = 10
        last = hn - 2
        while plain and pos < last:
            eol = jw_find_crlf(h + pos, last - pos + 2)
            if eol <= 0:
                plain = False
                break
            line = h + pos
            L = eol
            colon = -1
            for i in range(L):
                if line[i] == 58:
                    colon = i
                    break
                if line[i] <= 32:
                    break
            if colon <= 0:
                plain = False
                break
            a = colon + 1
            b = L
            jw_trim_value(line, &a, &b)
            if memchr(line + a, 13, b - a) != NULL or memchr(line + a, 10, b - a) != NULL:
                plain = False
                break
            if _is_key(line, colon, b"Nats-Subject", 12):
                if sp != NULL:
                    plain = False
                sp = line + a
                sn = b - a
            elif _is_key(line, colon, b"Nats-Sequence", 13):
                if qp != NULL:
                    plain = False
                qp = line + a
                qn = b - a
            elif _is_key(line, colon, b"Nats-Time-Stamp", 15):
                if tp != NULL:
                    plain = False
                tp = line + a
                tn = b - a
            elif not (_is_key(line, colon, b"Nats-Stream", 11) or _is_key(line, colon, b"Nats-Num-Pending", 16)
                      or _is_key(line, colon, b"Nats-Last-Sequence", 18)):
                plain = False  # a header the message was published with
            pos += L + 2
        if plain and sp != NULL and qp != NULL and tp != NULL:
            seq = jw_uint(qp, qn)
            if seq >= 0:
                text = None
                if not _rfc3339_us(tp, tn, &t):
                    text = jw_str(tp, tn)
                    t = 0
                self._row(jw_str(sp, sn), seq, t, text, PyBytes_FromStringAndSize(<const char*>data, dn))
                return 1
        try:
            hdrs = _decode_headers(h, hn, NULL)
        except ProtocolError:
            return 0
        self._add(PyBytes_FromStringAndSize(<const char*>data, dn), <dict?>hdrs._d)
        return 1

    def add(self, m):
        try:
            d = <dict?>m.headers._d
        except Exception as exc:
            if self.error is None:
                self.error = exc
            return
        self._add((<MsgBase>m).c_data if isinstance(m, MsgBase) else m.data, d)

    def columns(self):
        """``(subjects, seqs, times_us, data, headers, odd_times)`` (see the pure twin)."""
        array.resize(self._seqs, self._n)
        array.resize(self._times, self._n)
        self._cap = self._n
        return self._subjects, self._seqs, self._times, self._data, self._headers, self._odd


cdef class DirectCollector(FrameSink):
    """The direct handler of a batched direct get's reply subscription, and its frame
    sink (see the pure twin)."""

    cdef public object target
    cdef public object on_status

    def __init__(self, on_status):
        self.target = None
        self.on_status = on_status

    def __call__(self, m):
        cdef object t = self.target, subject, reply, h, d
        if t is None:
            return
        subject = (<MsgBase>m).c_subject if isinstance(m, MsgBase) else m.subject
        reply = (<DirectRows>t).reply if type(t) is DirectRows else t.reply
        if subject != reply:
            return
        h = (<MsgBase>m).c_headers if isinstance(m, MsgBase) else m.headers
        if h is not None and h.status is None:
            if type(t) is DirectRows:
                try:
                    d = <dict?>h._d
                except Exception as exc:
                    if (<DirectRows>t).error is None:
                        (<DirectRows>t).error = exc
                    return
                (<DirectRows>t)._add((<MsgBase>m).c_data if isinstance(m, MsgBase) else m.data, d)
            else:
                t.add(m)
        else:
            self.on_status(m)

    cdef int take(self, const unsigned char* subject, Py_ssize_t sn, const unsigned char* reply, Py_ssize_t rn,
                  const unsigned char* hdr, Py_ssize_t hn, const unsigned char* data, Py_ssize_t dn) noexcept:
        cdef object t = self.target, r
        cdef const char* rp
        cdef Py_ssize_t n
        if t is None:
            return 1  # (dropped, as __call__ drops it)
        if type(t) is not DirectRows or hdr == NULL or _has_status(hdr, hn):
            return 0  # statuses and replies without headers go to __call__, as messages
        r = (<DirectRows>t).reply
        if type(r) is not str:
            return 0
        try:
            rp = PyUnicode_AsUTF8AndSize(r, &n)
        except BaseException:
            return 0
        if n != sn or memcmp(rp, subject, n) != 0:
            return 1  # a late reply to an abandoned request
        try:
            return (<DirectRows>t)._take(hdr, hn, data, dn)
        except BaseException as exc:
            if (<DirectRows>t).error is None:
                (<DirectRows>t).error = exc
            return 1
