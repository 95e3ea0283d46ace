"""Encoder and write buffer: ``validate_subject``, ``append_pub`` / ``append_hpub`` /
``append_sub`` / ``append_unsub``, ``DONE`` and ``Outbox`` (twin of the compiled
``jetwire._c.encoder``).

Subjects, replies and queues are ``str``; surrogate escapes (bytes that were not UTF-8
when received) go out as the bytes they stand for, so a ``respond()``, an ack or a
re-publish sends exactly what was received. Validation looks at those wire bytes: no
whitespace (ASCII or Unicode) or control character, no empty token.
"""
from __future__ import annotations

from typing import Any

from ...errors import BadSubjectError, payload_type_error
from .common import DEFAULT_MAX_PAYLOAD
from .lock import WriteLock

__all__ = [
    "DEFAULT_MAX_PAYLOAD",
    "DONE",
    "Outbox",
    "WriteLock",
    "append_hpub",
    "append_pub",
    "append_sub",
    "append_unsub",
    "validate_filter",
    "validate_subject",
]

# Characters str.isspace() accepts, plus the C0 controls and DEL.
_WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
_BAD_CHARS = frozenset(_WHITESPACE) | frozenset(map(chr, range(0x20))) | {"\x7f"}

def _wire(subject: Any, what: str, tokens: int) -> bytes:
    """Validate a subject (``tokens`` 2: no empty token, wildcards only as whole tokens and
    ``>`` only last: what is published to or subscribed to), reply (1: no empty token)
    or queue (0); return its wire bytes (surrogate escapes stand for the bytes they
    escaped)."""
    if not isinstance(subject, str):
        raise BadSubjectError(f"{what} must be a str, not {type(subject).__name__}")
    if not subject:
        raise BadSubjectError(f"{what} is empty")
    if subject.isascii():
        if not subject.isprintable() or " " in subject:
            raise BadSubjectError(f"{what} {subject!r} contains whitespace or control characters")
        b = subject.encode("ascii")
    else:
        text = subject
        try:
            b = subject.encode()
        except UnicodeEncodeError:
            try:  # bytes that were not UTF-8 when received: send them as they came
                b = subject.encode("utf-8", "surrogateescape")
            except UnicodeEncodeError:  # lone surrogates that are no escapes
                if not _BAD_CHARS.isdisjoint(subject):
                    raise BadSubjectError(f"{what} {subject!r} contains whitespace or control characters") from None
                raise BadSubjectError(f"{what} {subject!r} is not encodable as UTF-8") from None
            text = b.decode("utf-8", "surrogateescape")  # what the wire bytes say
        if not _BAD_CHARS.isdisjoint(text):
            raise BadSubjectError(f"{what} {subject!r} contains whitespace or control characters")
    if tokens and (b[0] == 46 or b[-1] == 46 or b".." in b):
        raise BadSubjectError(f"{what} {subject!r} has an empty token")
    if tokens == 2 and (b"*" in b or b">" in b) and not _wildcards_ok(b):
        raise BadSubjectError(f"{what} {subject!r} has a wildcard that is not a whole token ('>' only last)")
    return b


def _wildcards_ok(b: bytes) -> bool:
    """``*`` and ``>`` only as whole tokens, ``>`` only as the last one."""
    toks = b.split(b".")
    last = len(toks) - 1
    for i, t in enumerate(toks):
        if (b"*" in t or b">" in t) and t != b"*" and not (t == b">" and i == last):
            return False
    return True


def _subject_bytes(subject: Any, what: str = "subject") -> bytes:
    """Validate a subject (or reply) and return its wire bytes."""
    return _wire(subject, what, 2 if what == "subject" else 1)


def _given(reply: Any) -> bool:
    """A reply (or queue) to send: not None and not empty."""
    return reply is not None and not (isinstance(reply, str) and not reply)


def validate_subject(subject: Any) -> None:
    """Raise ``BadSubjectError`` unless ``subject`` can be published to.

    Rejected: non-str, empty, any whitespace (including Unicode whitespace) or control
    character, lone surrogates that stand for no byte, empty tokens (leading/trailing
    '.' or '..'), and wildcards that are not whole tokens (``foo.*bar``, ``foo.>.bar``;
    ``>`` only last). Surrogate escapes (bytes that were not UTF-8) are accepted: they
    are sent as those bytes.
    """
    _subject_bytes(subject)


def validate_filter(subject: Any, queue: Any = None) -> None:
    """Raise ``BadSubjectError`` unless ``subject`` (and ``queue``, when given) can be
    subscribed to: ``validate_subject``'s rules, wildcards whole tokens (``foo.*.bar``,
    ``foo.>``; not ``foo.*bar``, ``foo.b>``, ``foo.>.bar``). A queue
    group is checked for whitespace and control characters. Subscriptions, JetStream
    filter subjects and stream subjects are checked here.
    """
    _wire(subject, "subject", 2)
    if _given(queue):
        _wire(queue, "queue", 0)


def _data_len(data: Any) -> tuple[Any, int]:
    t = type(data)
    if t is bytes or t is bytearray:
        return data, len(data)
    try:
        mv = memoryview(data)
    except TypeError:  # no bytes-like object
        raise payload_type_error(data) from None
    if not mv.c_contiguous:
        raise BufferError("data must be a C-contiguous buffer")
    return mv, mv.nbytes


def _check_buf(buf: Any) -> None:
    if type(buf) is not bytearray and not isinstance(buf, bytearray):
        raise TypeError(f"buf must be a bytearray, not {type(buf).__name__}")


def append_pub(buf: bytearray, subject: str, reply: str | None, data: Any) -> None:
    """Append ``PUB <subject> [reply] <len>\\r\\n<data>\\r\\n`` to ``buf``."""
    s = _subject_bytes(subject)
    r = _subject_bytes(reply, "reply") if _given(reply) else None
    if type(data) is not bytes:
        data, n = _data_len(data)
    else:
        n = len(data)
    _check_buf(buf)
    if r is not None:
        buf += b"PUB %s %s %d\r\n" % (s, r, n)
    else:
        buf += b"PUB %s %d\r\n" % (s, n)
    buf += data
    buf += b"\r\n"


def append_hpub(buf: bytearray, subject: str, reply: str | None, hdr: Any, data: Any) -> None:
    """Append ``HPUB <subject> [reply] <hdr_len> <total_len>\\r\\n<hdr><data>\\r\\n`` to ``buf``."""
    s = _subject_bytes(subject)
    r = _subject_bytes(reply, "reply") if _given(reply) else None
    hdr, hn = _data_len(hdr)
    data, n = _data_len(data)
    _check_buf(buf)
    if r is not None:
        buf += b"HPUB %s %s %d %d\r\n" % (s, r, hn, hn + n)
    else:
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


def append_sub(buf: bytearray, subject: str, queue: str | None, sid: int) -> None:
    """Append ``SUB <subject> [queue] <sid>\\r\\n`` to ``buf``."""
    s = _wire(subject, "subject", 2)
    _check_uint(sid, "sid")
    q = _wire(queue, "queue", 0) if _given(queue) else None
    _check_buf(buf)
    if q is not None:
        buf += b"SUB %s %s %d\r\n" % (s, q, sid)
    else:
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

    Threads: ``lock`` (None in the asyncio flavour, where one thread does everything)
    guards ``buf`` and the counters. ``publish`` holds it from reading ``buf`` to
    counting. ``append_pub``, ``append_hpub``, ``take``, replacing ``buf`` and any Python
    code appending to ``buf`` need their caller to hold it. ``on_first`` / ``on_full`` /
    ``slow`` run outside it.
    """

    __slots__ = (
        "_buf",
        "congested",
        "connected",
        "lock",
        "max_payload",
        "on_first",
        "on_full",
        "out_bytes",
        "out_msgs",
        "ret",
        "slow",
        "threshold",
    )

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

    def _append(self, subject: str, reply: str | None, data: Any, n: int) -> tuple[int, int]:
        buf = self._buf
        if data is buf:
            raise BufferError("cannot publish the outbox's own buffer")
        before = len(buf)
        append_pub(buf, subject, reply, data)
        self.out_msgs += 1
        self.out_bytes += n
        return before, len(buf)

    def publish(self, subject: str, data: Any = b"", reply: str | None = None, headers: Any = None) -> Any:
        """Queue ``PUB``; the fast path returns ``ret``, anything else goes to ``slow``."""
        if not self.connected or headers is not None or self.congested:
            return self.slow(subject, data, reply, headers)
        t = type(data)
        if t is bytes:
            n = len(data)
        elif t is bytearray or t is memoryview:
            _mv, n = _data_len(data)
        else:
            return self.slow(subject, data, reply, headers)
        if n > self.max_payload:
            return self.slow(subject, data, reply, headers)
        lock = self.lock
        if lock is None:
            before, after = self._append(subject, reply, data, n)
        else:
            with lock:
                before, after = self._append(subject, reply, data, n)
        if after >= self.threshold:
            if self.on_full is not None:
                self.on_full()
        elif before == 0 and self.on_first is not None:
            self.on_first()
        return self.ret

    def append_pub(self, subject: str, reply: str | None, data: Any) -> None:
        """Append ``PUB`` to ``buf`` and count it (no checks beyond the encoder's, no callbacks;
        the caller holds ``lock``)."""
        buf = self._buf
        if data is buf:
            raise BufferError("cannot publish the outbox's own buffer")
        append_pub(buf, subject, reply, data)
        self.out_msgs += 1
        self.out_bytes += _data_len(data)[1]

    def append_hpub(self, subject: str, reply: str | None, hdr: Any, data: Any) -> None:
        """Append ``HPUB`` to ``buf`` and count it (``out_bytes`` counts ``data`` only; the
        caller holds ``lock``)."""
        buf = self._buf
        if data is buf or hdr is buf:
            raise BufferError("cannot publish the outbox's own buffer")
        append_hpub(buf, subject, reply, hdr, data)
        self.out_msgs += 1
        self.out_bytes += _data_len(data)[1]
