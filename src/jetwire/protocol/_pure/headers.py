"""The header codec (twin of the compiled ``jetwire._c.headers``).

Header names and values are ``str``; bytes that are not UTF-8 are kept as surrogate
escapes, and ``.encode("utf-8", "surrogateescape")`` recovers them (the encoder sends
exactly those bytes back). Values (and names) given as ``bytes`` are sent verbatim. A
malformed block raises ``ProtocolError`` (the parser then skips that one message).
"""
from __future__ import annotations

from typing import Any

from ...errors import BadHeaderError
from ..headers import Headers, _make, as_text, check_key, check_value
from .common import _perr

# --------------------------------------------------------------------------- headers
_VERSION = b"NATS/1.0"


def decode_headers(raw: Any) -> Headers:
    """Parse a header block ``NATS/1.0[ SSS[ description]]\\r\\nK: V\\r\\n...\\r\\n\\r\\n``."""
    raw = bytes(raw)
    n = len(raw)
    if n < 12 or not raw.startswith(_VERSION) or not raw.endswith(b"\r\n\r\n"):
        raise _perr("invalid header block", raw)
    eol = raw.find(b"\r\n")
    status = description = None
    if eol > 8:
        rest = raw[8:eol]
        c = rest[0]
        if c != 32 and c != 9:
            raise _perr("invalid header version line", raw)
        if b"\r" in rest or b"\n" in rest:
            raise _perr("invalid header version line", raw)
        rest = rest.strip(b" \t")
        if rest:
            text = rest.decode("utf-8", "surrogateescape")
            status = text[:3]
            description = text[3:].strip(" \t") or None
    d: dict = {}
    pos = eol + 2
    last = n - 2
    while pos < last:
        eol = raw.find(b"\r\n", pos)
        line = raw[pos:eol]
        colon = line.find(b":")
        if colon <= 0:
            raise _perr("invalid header line", line)
        kb = line[:colon]
        if not kb.isascii() or not kb.isalnum():
            for c in kb:
                if c < 33 or c == 127:
                    raise _perr("invalid header key", line)
        vb = line[colon + 1 :].strip(b" \t")
        if b"\r" in vb or b"\n" in vb:
            raise _perr("CR or LF inside a header value", line)
        key = kb.decode("utf-8", "surrogateescape")
        value = vb.decode("utf-8", "surrogateescape")
        values = d.get(key)
        if values is None:
            d[key] = [value]
        else:
            values.append(value)
        pos = eol + 2
    return _make(d, status, description)


def encode_headers(headers: Any) -> bytes:
    """Encode ``Headers`` or a ``dict[str, str | list[str]]`` as a wire header block.

    ``None`` gives ``b""``; an empty mapping gives ``b"NATS/1.0\\r\\n\\r\\n"``.
    """
    if headers is None:
        return b""
    if isinstance(headers, Headers):
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
        for k, v in headers.items():
            parts += (k, ": ", v, "\r\n")
    elif isinstance(headers, dict):
        parts = ["NATS/1.0\r\n"]
        for k, v in headers.items():
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


