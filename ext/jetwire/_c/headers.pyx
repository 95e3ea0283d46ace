# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The header codec: ``NATS/1.0`` blocks to ``Headers`` and back (pure twin:
``jetwire.protocol._pure.headers``).

Header names and values are ``str``; bytes that are not UTF-8 are kept as surrogate
escapes, and ``.encode("utf-8", "surrogateescape")`` recovers them (the encoder sends
exactly those bytes back). Values (and names) given as ``bytes`` are sent verbatim. A
malformed block raises ``ProtocolError`` (the parser then skips that one message).
"""
include "common.pxi"

from jetwire.errors import BadHeaderError, ProtocolError
from jetwire.protocol.headers import Headers, as_text, check_key, check_value

cdef object _Headers = Headers
if type(Headers) is not type or Headers.__base__ is not object:
    raise ImportError("jetwire.protocol.headers.Headers must be a plain class")
jw_set_headers_type(
    Headers,
    Headers.__dict__.get("_d"),
    Headers.__dict__.get("status"),
    Headers.__dict__.get("description"),
)


# ------------------------------------------------------------------------------- headers
cdef object _make_headers(dict d, object status, object description):
    """A Headers instance without __init__ (the decoder has validated everything): its
    three slots, checked at import to be plain slots, set as ``headers._make`` sets them
    (through setattr when they are not).

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
        jw_trim_value(line, &a, &b)
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
                parts = ["NATS/1.0 ", as_text(status), " ", as_text(description), "\r\n"]
            else:
                parts = ["NATS/1.0 ", as_text(status), "\r\n"]
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


