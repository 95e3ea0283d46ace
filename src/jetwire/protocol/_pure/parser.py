"""The incremental protocol parser (twin of the compiled ``jetwire._c.parser``).

Bytes-faithful, never fatal for content: subjects, reply subjects, header names and
values (and the status description) are ``str``; bytes that are not UTF-8 are kept as
surrogate escapes, and ``.encode("utf-8", "surrogateescape")`` recovers them. A message
whose header block is malformed is skipped and reported as ``(OP_FRAME_ERROR,
ProtocolError)`` (with the message's ``subject``); only a stream that can no longer be
framed raises ``ProtocolError``, whose ``events`` are the events parsed before it.
"""
from __future__ import annotations

from typing import Any

import orjson

from ...errors import ProtocolError
from .common import (
    _COMPACT_AT,
    _EV_OK,
    _EV_PING,
    _EV_PONG,
    _MAX_DIGITS,
    DEFAULT_MAX_CONTROL_LINE,
    DEFAULT_MAX_PAYLOAD,
    OP_ERR,
    OP_FRAME_ERROR,
    OP_INFO,
    _frame_error,
    _perr,
)
from .headers import decode_headers
from .msg import MsgBase

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
    ``(OP_ERR, str)``, ``(OP_FRAME_ERROR, ProtocolError)`` (one well-framed message whose
    content is malformed, skipped). Input that cannot be framed raises ``ProtocolError``
    (its ``events``: what was parsed before); the parser should then be ``reset()`` (or
    dropped) before it is fed again. One thread feeds a parser.

    ``sinks`` (sid -> ``FrameSink``) are offered their subscription's frames before any
    message is built (``take``); a frame a sink takes makes no event and counts in
    ``taken_msgs`` / ``taken_bytes`` (payload bytes), which the router adds to its own
    counters after each feed. Events of the same chunk that were not taken are routed
    after it, so a sink sees its frames before any event that followed them in the chunk.
    """

    __slots__ = ("_buf", "_cls", "_max_line", "_max_payload", "_pos", "_sinks", "taken_bytes", "taken_msgs")

    def __init__(self, msg_cls: Any = None, max_control_line: int = DEFAULT_MAX_CONTROL_LINE, max_payload: int = DEFAULT_MAX_PAYLOAD) -> None:
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
        self._sinks: dict[int, Any] = {}
        self.taken_msgs = 0
        self.taken_bytes = 0

    @property
    def sinks(self) -> dict[int, Any]:
        """sid -> ``FrameSink`` (the dict itself is changed; it cannot be replaced)."""
        return self._sinks

    @property
    def buffered(self) -> int:
        """Bytes received but not yet turned into events."""
        return len(self._buf) - self._pos

    def reset(self) -> None:
        """Discard buffered bytes (used on reconnect or after a protocol error)."""
        self._buf = bytearray()
        self._pos = 0

    def feed(self, data: Any) -> list[Any]:
        """Parse ``data``: the events (messages and control tuples) it completes.

        A framing error raises ``ProtocolError`` whose ``events`` are those parsed before
        it; what was buffered is discarded (``reset``: the stream cannot be framed)."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"a bytes-like object is required, not '{type(data).__name__}'")
        if isinstance(data, memoryview) and not data.c_contiguous:
            raise BufferError("memoryview: underlying buffer is not C-contiguous")
        events: list[Any] = []
        try:
            return self._feed(data, events)
        except ProtocolError as exc:
            exc.events = events
            self.reset()
            raise

    def _take(self, sink: Any, subject: Any, reply: Any, hdr: Any, data: Any) -> bool:
        """Offer a frame to its subscription's sink (if it has one); True when taken."""
        if sink is None or not sink.take(bytes(subject), None if reply is None else bytes(reply),
                                         None if hdr is None else bytes(hdr), bytes(data)):
            return False
        self.taken_msgs += 1
        self.taken_bytes += len(data)
        return True

    def _feed(self, data: Any, events: list[Any]) -> list[Any]:
        buf = self._buf
        buf += data
        pos = self._pos
        n = len(buf)
        append = events.append
        find = buf.find
        max_line = self._max_line
        window = max_line + 2
        cls = self._cls
        sinks = self.sinks
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
                    if sinks and self._take(sinks.get(sid), args[1], reply_tok, None, buf[start:stop]):
                        pos = stop + 2
                        continue
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
                    if sinks and self._take(sinks.get(sid), args[1], reply_tok, buf[start : start + hlen],
                                            buf[start + hlen : stop]):
                        continue
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


