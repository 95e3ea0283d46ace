"""Encoder, outbox and the writer's lock (twin of the compiled ``jetwire._c.encoder``)."""
from __future__ import annotations

import threading
from typing import Any, Optional, Tuple

from ...errors import BadSubjectError
from .common import DEFAULT_MAX_PAYLOAD

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


