"""Pure-Python twin of the compiled ``jetwire._speedups`` module.

Every function and class here behaves exactly like its compiled counterpart in
``ext/_speedups.pyx``; the differential tests in ``tests/unit`` hold both to that. When
changing a rule, change both files and the tests together.

Wire rules shared by both implementations:

* A control line ends with CRLF and may be at most ``max_control_line`` bytes long
  (CRLF excluded). Arguments are separated by runs of ASCII whitespace (space, tab,
  and also VT, FF, CR and LF inside the line). Operation names are case-insensitive
  and must start the line.
* ``MSG <subject> <sid> [reply] <size>`` and
  ``HMSG <subject> <sid> [reply] <hdr_len> <total_len>``: sid and sizes are 1-18
  ASCII digits, ``hdr_len <= total_len <= max_payload``. The frame must end in CRLF.
* Errors are checked in this order: control line, operation, arguments; then the
  parser waits for the whole frame; then the trailing CRLF, subject/reply UTF-8 and
  the header block are checked.
"""
from __future__ import annotations

import re
import threading
from inspect import isawaitable as _isawaitable
from typing import Any, List, Optional, Tuple

import orjson

from ..errors import BadHeaderError, BadSubjectError, NotJSMessageError, ProtocolError
from .headers import Headers, _make, as_text, check_key, check_value

__all__ = [
    "OP_INFO",
    "OP_PING",
    "OP_PONG",
    "OP_OK",
    "OP_ERR",
    "OP_FRAME_ERROR",
    "PING",
    "PONG",
    "DEFAULT_MAX_PAYLOAD",
    "MsgBase",
    "Parser",
    "decode_headers",
    "encode_headers",
    "parse_metadata_fields",
    "validate_subject",
    "append_pub",
    "append_hpub",
    "append_sub",
    "append_unsub",
    "DONE",
    "Outbox",
    "WriteLock",
    "SubState",
    "Router",
    "AckMux",
]

OP_INFO = 1
OP_PING = 2
OP_PONG = 3
OP_OK = 4
OP_ERR = 5
OP_FRAME_ERROR = 6  # (OP_FRAME_ERROR, ProtocolError): one malformed message skipped, the stream goes on

PING = b"PING\r\n"
PONG = b"PONG\r\n"

DEFAULT_MAX_PAYLOAD = 1 << 30
_COMPACT_AT = 1 << 16
_MAX_DIGITS = 18

_EV_PING = (OP_PING, None)
_EV_PONG = (OP_PONG, None)
_EV_OK = (OP_OK, None)


def _summary(raw: Any) -> str:
    return repr(bytes(raw[:64])) + ("..." if len(raw) > 64 else "")


def _perr(what: str, raw: Any) -> ProtocolError:
    return ProtocolError(f"{what}: {_summary(raw)}")


def _frame_error(exc: ProtocolError, subject: str) -> ProtocolError:
    """The error of one malformed message, naming its subject."""
    return ProtocolError(f"{exc} in a message on subject {subject!r} (message skipped)", subject=subject)


class MsgBase:
    """Base of ``jetwire.Msg``: the fields of a delivered or to-be-published message.

    The parser creates instances without calling ``__init__``; ``__init__`` is for
    users building a message by hand.
    """

    __slots__ = ("subject", "reply", "data", "headers", "sid", "_client", "_ackd", "_meta")

    def __init__(self, subject: str = "", data: Any = b"", reply: Optional[str] = None, headers: Any = None, sid: int = 0) -> None:
        self.subject = subject
        self.data = data if type(data) is bytes else bytes(data)
        self.reply = reply
        if headers is not None and not isinstance(headers, Headers):
            headers = Headers(headers)
        self.headers = headers
        self.sid = sid
        self._client = None
        self._ackd = False
        self._meta = None

    def __repr__(self) -> str:
        data = self.data
        shown = data[:32] + (b"..." if len(data) > 32 else b"")
        return (
            f"<{type(self).__name__} subject={self.subject!r} sid={self.sid!r} reply={self.reply!r} "
            f"data={shown!r} headers={self.headers!r}>"
        )


_new = object.__new__


def _uint(tok: Any, raw: Any) -> int:
    if 0 < len(tok) <= _MAX_DIGITS and tok.isdigit():
        return int(tok)
    raise _perr("invalid number in protocol line", raw)


def _decode(tok: Any) -> str:
    """Subject/reply text, bytes-faithful: what is not UTF-8 is kept as surrogate escapes."""
    return tok.decode("utf-8", "surrogateescape")


class Parser:
    """Incremental NATS protocol parser: ``feed(chunk)`` returns the completed events.

    Events are ``msg_cls`` instances for MSG/HMSG and ``(kind, arg)`` tuples otherwise:
    ``(OP_INFO, dict)``, ``(OP_PING, None)``, ``(OP_PONG, None)``, ``(OP_OK, None)``,
    ``(OP_ERR, str)``. Malformed input raises ``ProtocolError``; the parser should then
    be ``reset()`` (or dropped) before it is fed again.
    """

    __slots__ = ("_buf", "_pos", "_cls", "_max_line", "_max_payload")

    def __init__(self, msg_cls: Any = None, max_control_line: int = 4096, max_payload: int = DEFAULT_MAX_PAYLOAD) -> None:
        if msg_cls is None:
            msg_cls = MsgBase
        if not isinstance(msg_cls, type) or not issubclass(msg_cls, MsgBase):
            raise TypeError("msg_cls must be a subclass of MsgBase")
        if max_control_line < 1 or max_payload < 0:
            raise ValueError("max_control_line must be >= 1 and max_payload >= 0")
        self._cls = msg_cls
        self._max_line = int(max_control_line)
        self._max_payload = int(max_payload)
        self._buf = bytearray()
        self._pos = 0

    @property
    def buffered(self) -> int:
        """Bytes received but not yet turned into events."""
        return len(self._buf) - self._pos

    def reset(self) -> None:
        """Discard buffered bytes (used on reconnect or after a protocol error)."""
        self._buf = bytearray()
        self._pos = 0

    def feed(self, data: Any) -> List[Any]:
        """Parse ``data``: the events (messages and control tuples) it completes.

        A framing error raises ``ProtocolError`` whose ``events`` are those parsed before it."""
        events: List[Any] = []
        try:
            return self._feed(data, events)
        except ProtocolError as exc:
            exc.events = events
            raise

    def _feed(self, data: Any, events: List[Any]) -> List[Any]:
        buf = self._buf
        buf += data
        pos = self._pos
        n = len(buf)
        append = events.append
        find = buf.find
        max_line = self._max_line
        window = max_line + 2
        cls = self._cls
        while pos < n:
            end = find(b"\r\n", pos, pos + window)
            if end < 0:
                if n - pos > max_line + 1:
                    self._pos = pos
                    raise _perr("control line too long", buf[pos : pos + 64])
                break
            c = buf[pos]
            if c == 77 or c == 109 or c == 72 or c == 104:  # M m H h
                line = buf[pos:end]
                args = line.split()
                op = args[0]
                nargs = len(args)
                if op == b"MSG" or op.upper() == b"MSG":
                    if nargs == 4:
                        reply_tok = None
                    elif nargs == 5:
                        reply_tok = args[3]
                    else:
                        raise _perr("invalid MSG arguments", line)
                    sid = _uint(args[2], line)
                    size = _uint(args[-1], line)
                    if size > self._max_payload:
                        raise _perr("MSG payload larger than max_payload", line)
                    start = end + 2
                    stop = start + size
                    if stop + 2 > n:
                        break
                    if buf[stop] != 13 or buf[stop + 1] != 10:
                        raise _perr("missing CRLF after MSG payload", buf[stop : stop + 64])
                    m = _new(cls)
                    m.subject = _decode(args[1])
                    m.reply = None if reply_tok is None else _decode(reply_tok)
                    m.data = bytes(buf[start:stop])
                    m.headers = None
                    m.sid = sid
                    m._client = None
                    m._ackd = False
                    m._meta = None
                    append(m)
                    pos = stop + 2
                    continue
                if op.upper() == b"HMSG":
                    if nargs == 5:
                        reply_tok = None
                    elif nargs == 6:
                        reply_tok = args[3]
                    else:
                        raise _perr("invalid HMSG arguments", line)
                    sid = _uint(args[2], line)
                    hlen = _uint(args[-2], line)
                    size = _uint(args[-1], line)
                    if hlen > size:
                        raise _perr("HMSG header length exceeds total length", line)
                    if size > self._max_payload:
                        raise _perr("HMSG payload larger than max_payload", line)
                    start = end + 2
                    stop = start + size
                    if stop + 2 > n:
                        break
                    if buf[stop] != 13 or buf[stop + 1] != 10:
                        raise _perr("missing CRLF after HMSG payload", buf[stop : stop + 64])
                    pos = stop + 2
                    try:
                        headers = decode_headers(buf[start : start + hlen])
                    except ProtocolError as exc:  # this frame only: report it, go on
                        append((OP_FRAME_ERROR, _frame_error(exc, _decode(args[1]))))
                        continue
                    m = _new(cls)
                    m.subject = _decode(args[1])
                    m.reply = None if reply_tok is None else _decode(reply_tok)
                    m.headers = headers
                    m.data = bytes(buf[start + hlen : stop])
                    m.sid = sid
                    m._client = None
                    m._ackd = False
                    m._meta = None
                    append(m)
                    continue
                raise _perr("unknown protocol operation", line)
            if c == 80 or c == 112:  # P p
                line = buf[pos:end]
                args = line.split()
                op = args[0].upper()
                if op == b"PING" and len(args) == 1:
                    append(_EV_PING)
                elif op == b"PONG" and len(args) == 1:
                    append(_EV_PONG)
                else:
                    raise _perr("unknown protocol operation", line)
                pos = end + 2
                continue
            if c == 43:  # +
                line = buf[pos:end]
                args = line.split()
                if len(args) == 1 and args[0].upper() == b"+OK":
                    append(_EV_OK)
                    pos = end + 2
                    continue
                raise _perr("unknown protocol operation", line)
            if c == 45 or c == 73 or c == 105:  # - I i
                line = buf[pos:end]
                parts = line.split(None, 1)
                op = parts[0].upper()
                rest = parts[1].rstrip() if len(parts) > 1 else b""
                if op == b"-ERR":
                    if len(rest) >= 2 and rest[0] == 39 and rest[-1] == 39:
                        rest = rest[1:-1]
                    append((OP_ERR, rest.decode("utf-8", "replace")))
                elif op == b"INFO":
                    try:
                        info = orjson.loads(rest)
                    except orjson.JSONDecodeError:
                        raise _perr("invalid INFO JSON", line) from None
                    if type(info) is not dict:
                        raise _perr("INFO is not a JSON object", line)
                    append((OP_INFO, info))
                else:
                    raise _perr("unknown protocol operation", line)
                pos = end + 2
                continue
            raise _perr("unknown protocol operation", buf[pos:end])
        if pos == n:
            buf.clear()
            pos = 0
        elif pos >= _COMPACT_AT:
            del buf[:pos]
            pos = 0
        self._pos = pos
        return events


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
                parts = ["NATS/1.0 ", status, " ", description, "\r\n"]
            else:
                parts = ["NATS/1.0 ", status, "\r\n"]
        for k, values in headers._d.items():
            for v in values:
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


# -------------------------------------------------------------------------- metadata
def _num(tok: str) -> int:
    if tok and tok.isdigit() and tok.isascii():
        return int(tok)
    raise NotJSMessageError(f"invalid number {tok!r} in ack subject")


def parse_metadata_fields(subject: Any) -> Tuple[Any, ...]:
    """Split a ``$JS.ACK...`` subject into
    ``(domain, acc_hash, stream, consumer, delivered, stream_seq, consumer_seq, timestamp_ns, pending)``.
    """
    if type(subject) is not str or not subject.startswith("$JS.ACK."):
        raise NotJSMessageError(f"not a JetStream ack subject: {subject!r}")
    if not subject.isascii():
        try:
            subject.encode()
        except UnicodeEncodeError:
            raise NotJSMessageError(f"not a JetStream ack subject: {subject!r}") from None
    t = subject.split(".")
    nt = len(t)
    if nt == 9:
        domain = acc = None
        stream, consumer = t[2], t[3]
        i = 4
        pending = _num(t[8])
    elif nt >= 11:
        domain = t[2]
        if domain == "_" or not domain:
            domain = None
        acc = t[3] or None
        stream, consumer = t[4], t[5]
        i = 6
        pending = _num(t[10])
    elif nt == 8:
        domain = acc = None
        stream, consumer = t[2], t[3]
        i = 4
        pending = 0
    else:
        raise NotJSMessageError(f"not a JetStream ack subject: {subject!r}")
    if not stream or not consumer:
        raise NotJSMessageError(f"not a JetStream ack subject: {subject!r}")
    return (domain, acc, stream, consumer, _num(t[i]), _num(t[i + 1]), _num(t[i + 2]), _num(t[i + 3]), pending)


# --------------------------------------------------------------------------- encoder
# Characters str.isspace() accepts, plus the C0 controls and DEL.
_WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
_BAD_CHARS = frozenset(_WHITESPACE) | frozenset(map(chr, range(0x20))) | {"\x7f"}

def _subject_bytes(subject: Any, what: str = "subject") -> bytes:
    """Validate a subject and return its UTF-8 bytes."""
    if not isinstance(subject, str):
        raise BadSubjectError(f"{what} must be a str, not {type(subject).__name__}")
    if not subject:
        raise BadSubjectError(f"{what} is empty")
    if subject.isascii():
        if not subject.isprintable() or " " in subject:
            raise BadSubjectError(f"{what} {subject!r} contains whitespace or control characters")
        b = subject.encode("ascii")
    else:
        if not _BAD_CHARS.isdisjoint(subject):
            raise BadSubjectError(f"{what} {subject!r} contains whitespace or control characters")
        try:
            b = subject.encode("utf-8", "surrogateescape")  # non-UTF-8 bytes received stay as they were
        except UnicodeEncodeError:
            raise BadSubjectError(f"{what} {subject!r} is not encodable as UTF-8") from None
    if b[0] == 46 or b[-1] == 46 or b".." in b:
        raise BadSubjectError(f"{what} {subject!r} has an empty token")
    return b


def _queue_bytes(queue: Any) -> bytes:
    if not isinstance(queue, str):
        raise BadSubjectError(f"queue must be a str, not {type(queue).__name__}")
    if queue.isascii():
        if not queue.isprintable() or " " in queue:
            raise BadSubjectError(f"queue {queue!r} contains whitespace or control characters")
        return queue.encode("ascii")
    if not _BAD_CHARS.isdisjoint(queue):
        raise BadSubjectError(f"queue {queue!r} contains whitespace or control characters")
    try:
        return queue.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raise BadSubjectError(f"queue {queue!r} is not encodable as UTF-8") from None


def validate_subject(subject: Any) -> None:
    """Raise ``BadSubjectError`` unless ``subject`` can be published to.

    Rejected: non-str, empty, any whitespace (including Unicode whitespace) or control
    character, lone surrogates, and empty tokens (leading/trailing '.' or '..').
    """
    _subject_bytes(subject)


def _data_len(data: Any) -> Tuple[Any, int]:
    t = type(data)
    if t is bytes or t is bytearray:
        return data, len(data)
    mv = memoryview(data)
    if not mv.c_contiguous:
        raise BufferError("data must be a C-contiguous buffer")
    return mv, mv.nbytes


def _check_buf(buf: Any) -> None:
    if type(buf) is not bytearray and not isinstance(buf, bytearray):
        raise TypeError(f"buf must be a bytearray, not {type(buf).__name__}")


def append_pub(buf: bytearray, subject: str, reply: Optional[str], data: Any) -> None:
    """Append ``PUB <subject> [reply] <len>\\r\\n<data>\\r\\n`` to ``buf``."""
    s = _subject_bytes(subject)
    data, n = _data_len(data)
    _check_buf(buf)
    if reply:
        buf += b"PUB %s %s %d\r\n" % (s, _subject_bytes(reply, "reply"), n)
    else:
        if reply is not None and reply != "":
            _subject_bytes(reply, "reply")
        buf += b"PUB %s %d\r\n" % (s, n)
    buf += data
    buf += b"\r\n"


def append_hpub(buf: bytearray, subject: str, reply: Optional[str], hdr: Any, data: Any) -> None:
    """Append ``HPUB <subject> [reply] <hdr_len> <total_len>\\r\\n<hdr><data>\\r\\n`` to ``buf``."""
    s = _subject_bytes(subject)
    hdr, hn = _data_len(hdr)
    data, n = _data_len(data)
    _check_buf(buf)
    if reply:
        buf += b"HPUB %s %s %d %d\r\n" % (s, _subject_bytes(reply, "reply"), hn, hn + n)
    else:
        if reply is not None and reply != "":
            _subject_bytes(reply, "reply")
        buf += b"HPUB %s %d %d\r\n" % (s, hn, hn + n)
    buf += hdr
    buf += data
    buf += b"\r\n"


_U64 = 1 << 64


def _check_uint(value: Any, what: str) -> int:
    if not isinstance(value, int):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    if value < 0 or value >= _U64:
        raise ValueError(f"{what} must be in 0..2**64-1, got {value}")
    return value


def append_sub(buf: bytearray, subject: str, queue: Optional[str], sid: int) -> None:
    """Append ``SUB <subject> [queue] <sid>\\r\\n`` to ``buf``."""
    s = _subject_bytes(subject)
    _check_uint(sid, "sid")
    _check_buf(buf)
    if queue:
        buf += b"SUB %s %s %d\r\n" % (s, _queue_bytes(queue), sid)
    else:
        if queue is not None and queue != "":
            _queue_bytes(queue)
        buf += b"SUB %s %d\r\n" % (s, sid)


def append_unsub(buf: bytearray, sid: int, max_msgs: int = 0) -> None:
    """Append ``UNSUB <sid>[ <max_msgs>]\\r\\n`` to ``buf`` (``max_msgs`` 0 means none)."""
    _check_uint(sid, "sid")
    if max_msgs is None:
        max_msgs = 0
    _check_uint(max_msgs, "max_msgs")
    _check_buf(buf)
    if max_msgs:
        buf += b"UNSUB %d %d\r\n" % (sid, max_msgs)
    else:
        buf += b"UNSUB %d\r\n" % sid


# ---------------------------------------------------------------------------- outbox
class _Done:
    """An awaitable that is already done (its result is None)."""

    __slots__ = ()

    def __await__(self) -> Any:
        return iter(())

    def __repr__(self) -> str:
        return "DONE"


DONE = _Done()


def WriteLock() -> Any:  # noqa: N802 - a class in the compiled module
    """The blocking writer's lock (the compiled module's is taken without a Python call)."""
    return threading.Lock()


class Outbox:
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

    Threads: this twin's ``publish`` holds ``lock`` (when not None: the blocking
    writer's lock) while it reads ``buf``, appends and counts. ``append_pub``,
    ``append_hpub`` and ``take`` take no lock: their callers hold the writer's lock,
    as does any Python code appending to ``buf`` itself. ``on_first`` / ``on_full``
    run after the append, outside the lock (the compiled ``Outbox`` does the same).
    """

    __slots__ = ("_buf", "connected", "congested", "max_payload", "out_msgs", "out_bytes", "threshold",
                 "on_first", "on_full", "slow", "ret", "lock")

    def __init__(self, slow: Any = None, max_payload: int = DEFAULT_MAX_PAYLOAD, threshold: int = 65536,
                 on_first: Any = None, on_full: Any = None, ret: Any = None, lock: Any = None) -> None:
        self._buf = bytearray()
        self.connected = False
        self.congested = False
        self.max_payload = int(max_payload)
        self.out_msgs = 0
        self.out_bytes = 0
        self.threshold = int(threshold)
        self.on_first = on_first
        self.on_full = on_full
        self.slow = slow
        self.ret = ret
        self.lock = lock

    @property
    def buf(self) -> bytearray:
        """The bytearray being filled (replace only with another bytearray)."""
        return self._buf

    @buf.setter
    def buf(self, value: bytearray) -> None:
        if not isinstance(value, bytearray):
            raise TypeError(f"buf must be a bytearray, not {type(value).__name__}")
        self._buf = value

    def take(self) -> Any:
        """The buffered bytes: ``buf`` itself, replaced by a new empty bytearray (``b""`` when empty)."""
        buf = self._buf
        if not buf:
            return b""
        self._buf = bytearray()
        return buf

    def publish(self, subject: str, data: Any = b"", reply: Optional[str] = None, headers: Any = None) -> Any:
        """Queue ``PUB``; the fast path returns ``ret``, anything else goes to ``slow``."""
        if not self.connected or headers is not None or self.congested:
            return self.slow(subject, data, reply, headers)
        t = type(data)
        if t is bytes:
            n = len(data)
        elif t is bytearray or t is memoryview:
            if data is self._buf:
                raise BufferError("cannot publish the outbox's own buffer")
            data, n = _data_len(data)
        else:
            return self.slow(subject, data, reply, headers)
        if n > self.max_payload:
            return self.slow(subject, data, reply, headers)
        lock = self.lock
        if lock is None:
            buf = self._buf
            before = len(buf)
            append_pub(buf, subject, reply, data)
            self.out_msgs += 1
            self.out_bytes += n
            after = len(buf)
        else:
            with lock:
                buf = self._buf
                before = len(buf)
                append_pub(buf, subject, reply, data)
                self.out_msgs += 1
                self.out_bytes += n
                after = len(buf)
        if after >= self.threshold:
            if self.on_full is not None:
                self.on_full()
        elif before == 0:
            if self.on_first is not None:
                self.on_first()
        return self.ret

    def append_pub(self, subject: str, reply: Optional[str], data: Any) -> None:
        """Append ``PUB`` to ``buf`` and count it (no checks beyond the encoder's, no callbacks)."""
        buf = self._buf
        if data is buf:
            raise BufferError("cannot publish the outbox's own buffer")
        append_pub(buf, subject, reply, data)
        self.out_msgs += 1
        self.out_bytes += _data_len(data)[1]

    def append_hpub(self, subject: str, reply: Optional[str], hdr: Any, data: Any) -> None:
        """Append ``HPUB`` to ``buf`` and count it (``out_bytes`` counts ``data`` only)."""
        buf = self._buf
        if data is buf or hdr is buf:
            raise BufferError("cannot publish the outbox's own buffer")
        append_hpub(buf, subject, reply, hdr, data)
        self.out_msgs += 1
        self.out_bytes += _data_len(data)[1]


# --------------------------------------------------------------------------- routing
class SubState:
    """The routing state of a subscription (base of ``jetwire.core.SubscriptionBase``).

    ``Router`` reads and updates these fields for every message: ``_direct`` (a handler
    called from the reader instead of queueing), ``delivered``, ``_max`` (auto-unsubscribe
    after that many, 0: none), ``_pending`` (a deque) with ``_pending_bytes`` and its
    limits ``_pmsgs_limit`` / ``_pbytes_limit``, ``_dropped``, ``_slow`` and ``_signal``
    (whose ``set()`` wakes the consumer). ``_client`` is the connection messages are
    bound to (``msg._client``) when they are handed out.

    Queued messages are not bound yet (in the compiled module they stay untracked by
    the cycle collector while they wait); ``_next()`` binds them as it hands them out.
    """

    __slots__ = ("_client", "_direct", "_pending", "_signal", "delivered", "_max", "_pending_bytes",
                 "_pmsgs_limit", "_pbytes_limit", "_dropped", "_slow")
    _client: Any
    _direct: Any
    _pending: Any
    _signal: Any
    delivered: int
    _max: int
    _pending_bytes: int
    _pmsgs_limit: int
    _pbytes_limit: int
    _dropped: int
    _slow: bool

    def __new__(cls, *args: Any, **kwargs: Any) -> "SubState":
        self = object.__new__(cls)
        self._client = self._direct = self._pending = self._signal = None
        self.delivered = self._max = self._pending_bytes = 0
        self._pmsgs_limit = self._pbytes_limit = self._dropped = 0
        self._slow = False
        return self

    def _next(self) -> Any:
        """Pop the oldest pending message bound to ``_client`` (``None`` when there is none),
        keeping ``_pending_bytes``."""
        pending = self._pending
        if not pending:
            return None
        msg = pending.popleft()
        self._pending_bytes -= len(msg.data)
        msg._client = self._client
        return msg

    def _deliver(self, cb: Any, report: Any) -> Any:
        """Hand the pending messages (as ``_next()`` pops them) to ``cb(msg)`` in order.

        Returns None once the queue is empty, or the result of a callback that returned an
        awaitable (the caller awaits it, then calls again). An exception raised by ``cb``
        goes to ``report(exc)`` and delivery goes on.
        """
        while True:
            msg = self._next()
            if msg is None:
                return None
            try:
                r = cb(msg)
            except Exception as exc:
                report(exc)
                continue
            if r is not None and _isawaitable(r):
                return r


class Router:
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

    __slots__ = ("parser", "subs", "control", "on_max", "on_slow", "in_msgs", "in_bytes", "touched")

    def __init__(self, parser: Any, subs: dict, control: Any = None, on_max: Any = None,
                 on_slow: Any = None) -> None:
        if not isinstance(subs, dict):
            raise TypeError(f"subs must be a dict, not {type(subs).__name__}")
        self.parser = parser
        self.subs = subs
        self.control = control
        self.on_max = on_max
        self.on_slow = on_slow
        self.in_msgs = 0
        self.in_bytes = 0
        self.touched: List[Any] = []

    def feed(self, data: Any) -> None:
        """Parse ``data`` and route the events. Raises ProtocolError when the stream can no
        longer be framed, after routing what was parsed before the bad frame."""
        try:
            events = self.parser.feed(data)
        except ProtocolError as exc:
            if exc.events:
                self.route(exc.events)
            raise
        if events:
            self.route(events)

    def route(self, events: List[Any]) -> None:
        """Route already parsed events (a list)."""
        if type(events) is not list:
            raise TypeError(f"events must be a list, not {type(events).__name__}")
        subs = self.subs
        n = 0
        nbytes = 0
        touched = self.touched
        for ev in events:
            if ev.__class__ is tuple:
                self.control(ev)
                continue
            if not isinstance(ev, MsgBase):
                raise TypeError(f"expected a message, got {type(ev).__name__}")
            dlen = len(ev.data)
            n += 1
            nbytes += dlen
            sub = subs.get(ev.sid)
            if sub is None:
                continue
            if not isinstance(sub, SubState):
                raise TypeError(f"expected a SubState, got {type(sub).__name__}")
            direct = sub._direct
            if direct is not None:
                ev._client = sub._client
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
            for sub in touched:
                sub._signal.set()
            touched.clear()


# ------------------------------------------------------------------ publish-ack mux
_PLAIN_ACK = re.compile(rb'\{"stream":"([^"\\\x00-\x1f]+)","seq":(0|[1-9][0-9]{0,17})\}\Z')


def _plain_ack(data: Any) -> Optional[Tuple[str, int]]:
    """``(stream, seq)`` when ``data`` is exactly ``{"stream":"<name>","seq":<n>}`` (the
    server's usual answer: compact, a non-empty name without escapes or control characters
    in strict UTF-8, ``n`` of 1-18 digits without leading zeros); else None."""
    if type(data) is not bytes:
        return None
    m = _PLAIN_ACK.match(data)
    if m is None:
        return None
    try:
        stream = m.group(1).decode("utf-8")
    except UnicodeDecodeError:
        return None
    return stream, int(m.group(2))


class AckMux:
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

    __slots__ = ("prefix", "_plen", "pending", "_n", "stall_waiters", "complete_waiters", "wake_at",
                 "make_ack")

    def __init__(self, prefix: str, make_ack: Any = None) -> None:
        if type(prefix) is not str:
            raise TypeError(f"prefix must be a str, not {type(prefix).__name__}")
        self.prefix = prefix
        self._plen = len(prefix)
        self.pending: dict = {}
        self._n = 0
        self.stall_waiters: List[Any] = []
        self.complete_waiters: List[Any] = []
        self.wake_at = 0
        self.make_ack = make_ack

    def add(self, fut: Any, subject: str, hdr: Any, data: Any, retries: int, retry_wait: float) -> str:
        """Register a publish; returns its token (the reply subject is ``prefix + token``)."""
        n = self._n + 1
        self._n = n
        token = str(n)
        self.pending[token] = (fut, subject, hdr, data, retries, retry_wait)
        return token

    def on_msg(self, msg: Any) -> None:
        """Handle one reply on ``<prefix>*`` (see the class docstring)."""
        token = msg.subject[self._plen:]
        entry = self.pending.pop(token, None)
        if entry is None:
            return
        make = self.make_ack
        plain = _plain_ack(msg.data) if make is not None else None
        if plain is None:
            self._other(msg, token, entry)
            return
        ack = make(plain[0], plain[1])
        fut = entry[0]
        try:
            if not fut.done():
                fut.set_result(ack)
        except Exception:  # cancelled / resolved concurrently by another thread
            pass
        if self.stall_waiters or self.complete_waiters:
            self._after_pop()

    def _other(self, msg: Any, token: str, entry: tuple) -> None:
        raise NotImplementedError

    def _after_pop(self) -> None:
        raise NotImplementedError
