"""Messages to column values for bulk readers (twin of the compiled
``jetwire._c.columns``): what the Spark reader turns into Arrow record batches.

* ``DirectRows`` / ``DirectCollector``: replies of a batched direct get, whose headers
  carry the message's subject, sequence and time (``Nats-Subject``, ``Nats-Sequence``,
  ``Nats-Time-Stamp``, RFC 3339 with up to 9 fractional digits), turned into rows as
  they arrive.
* ``AckRows`` / ``AckCollector`` and ``ack_columns(msgs, hi)``: messages of a pull
  consumer, whose ack subjects carry the stream sequence, the time in nanoseconds and
  the pending count; rows are taken (as they arrive, on the reader thread, or from any
  iterable) until one at or past stream sequence ``hi``, one with no more pending, or
  the one at ``hi - 1``.

Sequences and times come back as ``array('q')`` (times in microseconds since the epoch,
floored): Arrow wraps them without a Python int per row. A time that is not the RFC 3339
form ``YYYY-MM-DDTHH:MM:SS[.f{1,9}](Z|+HH:MM|-HH:MM)`` is left to the caller: its row
text is listed in ``odd_times`` (its slot holds 0).
"""
from __future__ import annotations

import sys
from array import array
from collections.abc import Iterable
from typing import Any, cast

from ...errors import NotJSMessageError, ProtocolError
from .headers import decode_headers
from .metadata import parse_metadata_fields
from .msg import FrameSink, MsgBase

__all__ = ["DIRECT_KEYS", "AckCollector", "AckRows", "DirectCollector", "DirectRows", "ack_columns", "rfc3339_us"]

K_SUBJECT = "Nats-Subject"
K_SEQ = "Nats-Sequence"
K_TIME = "Nats-Time-Stamp"
# headers a batched direct get adds to every message; what remains is what was published
DIRECT_KEYS = frozenset(("Nats-Stream", K_SUBJECT, K_SEQ, K_TIME, "Nats-Num-Pending", "Nats-Last-Sequence"))
_N_DIRECT = len(DIRECT_KEYS)

_DIGITS = frozenset("0123456789")
_INT64_MAX = 2**63 - 1


def _days_from_civil(y: int, m: int, d: int) -> int:
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


_MDAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _int(s: str) -> int:
    if not s or not (set(s) <= _DIGITS):
        raise ValueError
    return int(s)


def rfc3339_us(s: str) -> int | None:
    """Microseconds since the epoch (floored) of an RFC 3339 time, or None when ``s`` is not
    of the form ``YYYY-MM-DDTHH:MM:SS[.f{1,9}](Z|+HH:MM|-HH:MM)``."""
    n = len(s)
    if n < 20 or s[4] != "-" or s[7] != "-" or s[10] not in "Tt" or s[13] != ":" or s[16] != ":":
        return None
    try:
        y, mo, d = _int(s[0:4]), _int(s[5:7]), _int(s[8:10])
        hh, mi, ss = _int(s[11:13]), _int(s[14:16]), _int(s[17:19])
        i = 19
        frac = 0
        if s[i] == ".":
            j = i + 1
            while j < n and s[j] in _DIGITS:
                j += 1
            digits = s[i + 1 : j]
            if not 1 <= len(digits) <= 9:
                return None
            frac = int((digits + "000000")[:6])
            i = j
        if i >= n:
            return None
        if s[i] in "Zz" and i + 1 == n:
            off = 0
        elif s[i] in "+-" and n - i == 6 and s[i + 3] == ":":
            off = (_int(s[i + 1 : i + 3]) * 60 + _int(s[i + 4 : i + 6])) * 60
            if s[i] == "-":
                off = -off
        else:
            return None
    except ValueError:
        return None
    if not (1 <= mo <= 12 and 1 <= d <= _MDAYS[mo - 1] and hh <= 23 and mi <= 59 and ss <= 60):
        return None
    if mo == 2 and d == 29 and not (y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)):
        return None
    secs = _days_from_civil(y, mo, d) * 86400 + hh * 3600 + mi * 60 + ss - off
    return secs * 1_000_000 + frac


def _seq(s: str) -> int:
    if 1 <= len(s) <= 18 and set(s) <= _DIGITS:
        return int(s)
    raise ValueError(f"invalid {K_SEQ} header {s!r} in a direct get reply")


_MAX_OFFSET = 0x7FFFFFFF  # Arrow binary / string offsets are int32
_new = object.__new__


def _header_row(h: Any) -> list[tuple[str, list[str]]]:
    """A row of the headers column: ``[(name, [values])]`` of a ``Headers``."""
    return list(h.to_dict().items())


def _has_status(hdr: bytes) -> bool:
    """Whether the header block ``hdr`` has a status on its version line."""
    eol = hdr.find(b"\r\n")
    return eol > 8 and bool(hdr[8:eol].strip(b" \t"))


class AckRows:
    """The rows of pull-consumer messages below stream sequence ``hi``, taken one by one
    with ``add(m)`` (by ``ack_columns``, or on the reader thread by an ``AckCollector``,
    which may also ``take`` them from a frame's raw parts): a message at or past ``hi``
    is not taken and ends the rows; the one at ``hi - 1`` or one with no more pending is
    taken and ends them (``end``; ``add`` then returns True). ``delivered`` counts the
    messages offered, ``want`` is the pull's batch size (0: none). ``columns()`` gives
    ``(subject_offsets, subject_bytes, seqs, times_us, data_offsets, data_bytes, headers)``:
    subjects (UTF-8, as they came) and data as the value bytes and ``n + 1`` int32
    offsets of Arrow's string / binary layout; ``headers`` is None when no message has
    headers, else one entry per row: None or a list of ``(name, [values])``. A reply that
    is not an ack subject raises ``NotJSMessageError``; more than 2 GiB of subjects or of
    data in one set of rows raises ``OverflowError``."""

    __slots__ = ("_data", "_doff", "_headers", "_seqs", "_soff", "_subj", "_times", "delivered", "end", "error",
                 "hi", "reply", "want")

    def __init__(self, reply: str | None, hi: int, want: int = 0) -> None:
        self.reply = reply
        self.error: BaseException | None = None
        self.hi = hi
        self.want = want
        self.delivered = 0
        self.end = False
        self._subj = bytearray()
        self._data = bytearray()
        self._soff = array("i", [0])
        self._doff = array("i", [0])
        self._seqs = array("q")
        self._times = array("q")
        self._headers: list[Any] | None = None

    def __len__(self) -> int:
        return len(self._seqs)

    @property
    def last_seq(self) -> int:
        """The sequence of the last row (0 when there is none)."""
        return self._seqs[-1] if self._seqs else 0

    def _numbers(self, reply: str) -> tuple[int, int, int]:
        """(stream sequence, time in ns, pending) of an ack subject."""
        f = parse_metadata_fields(reply)
        if max(f[4:9]) > _INT64_MAX:
            raise OverflowError("ack subject number out of range")
        return f[5], f[7], f[8]

    def _row(self, sseq: int, ts_ns: int, pending: int, subject: bytes, data: bytes, hrow: Any) -> bool:
        if len(self._subj) + len(subject) > _MAX_OFFSET or len(self._data) + len(data) > _MAX_OFFSET:
            raise OverflowError("one fetch holds more than 2 GiB of column data; lower fetchMaxBytes")
        i = len(self._seqs)
        self._subj += subject
        self._data += data
        self._soff.append(len(self._subj))
        self._doff.append(len(self._data))
        self._seqs.append(sseq)
        self._times.append(ts_ns // 1000)
        headers = self._headers
        if hrow is not None:
            if headers is None:
                headers = self._headers = [None] * i
            headers.append(hrow)
        elif headers is not None:
            headers.append(None)
        if pending == 0 or sseq + 1 >= self.hi:
            self.end = True
        return self.end

    def add(self, m: Any) -> bool:
        self.delivered += 1
        reply = m.reply
        if not reply:
            raise NotJSMessageError("message has no JetStream ack subject")
        sseq, ts_ns, pending = self._numbers(reply)
        if sseq >= self.hi:
            self.end = True
            return True
        h = m.headers
        hrow = _header_row(h) if h is not None and len(h) else None
        return self._row(sseq, ts_ns, pending, m.subject.encode("utf-8", "surrogateescape"), bytes(m.data), hrow)

    def take(self, subject: bytes, reply: bytes | None, hdr: bytes | None, data: bytes) -> int:
        """``add`` from a frame's raw parts: 1 when the rows end, 0 when not, 2 when the
        frame is declined (a malformed header block: the parser reports it)."""
        hrow = None
        if hdr is not None:
            try:
                h = decode_headers(hdr)
            except ProtocolError:
                return 2
            if len(h):
                hrow = _header_row(h)
        self.delivered += 1
        if not reply:
            raise NotJSMessageError("message has no JetStream ack subject")
        sseq, ts_ns, pending = self._numbers(reply.decode("utf-8", "surrogateescape"))
        if sseq >= self.hi:
            self.end = True
            return 1
        return 1 if self._row(sseq, ts_ns, pending, subject, data, hrow) else 0

    def columns(self) -> tuple[array[int], bytearray, array[int], array[int], array[int], bytearray, list[Any] | None]:
        """``(subject_offsets, subject_bytes, seqs, times_us, data_offsets, data_bytes, headers)``."""
        return self._soff, self._subj, self._seqs, self._times, self._doff, self._data, self._headers


def ack_columns(msgs: Iterable[Any], hi: int) -> tuple[Any, ...]:
    """``(subject_offsets, subject_bytes, seqs, times_us, data_offsets, data_bytes, headers,
    end)`` of pull-consumer messages below stream sequence ``hi`` (see the module
    docstring and ``AckRows``); ``end``: nothing more to read."""
    rows = AckRows(None, hi)
    for m in msgs:
        if rows.add(m):
            break
    return (*rows.columns(), rows.end)


class AckCollector(FrameSink):
    """The direct handler of a pull's reply subscription, and its frame sink: a status
    reply (``408``, ``409``, ``503``, ...) on ``target.reply`` goes to ``on_event(msg)``
    (one on another subject, a late status, is dropped); a delivered message becomes a row
    of ``target`` (an ``AckRows``), and ``on_event(None)`` runs once the rows end, fail
    (``target.error``: what ``add`` raised) or hold the pull's ``want`` messages. Messages
    after that, or with no ``target``, are dropped. As a sink it takes every frame but
    those with a status line (which come to ``__call__`` as messages) and those whose
    header block is malformed (which the parser reports); an exception ``on_event``
    raises there is reported as unraisable (``sys.unraisablehook``)."""

    __slots__ = ("on_event", "target")

    def __init__(self, on_event: Any) -> None:
        self.target: AckRows | None = None
        self.on_event = on_event

    def __call__(self, m: Any) -> None:
        t = self.target
        if t is None:
            return
        h = m.headers
        if h is not None and h.status is not None and not m.data:
            if m.subject == t.reply:
                self.on_event(m)
            return
        if t.end or t.error is not None or t.delivered >= t.want:
            return  # (the pull is over)
        try:
            done = t.add(m)
        except Exception as exc:
            t.error = exc
            done = True
        if done or t.delivered >= t.want:
            self.on_event(None)

    def take(self, subject: bytes, reply: bytes | None, hdr: bytes | None, data: bytes) -> bool:
        t = self.target
        if t is None:
            return True  # (dropped, as __call__ drops it)
        if type(t) is not AckRows or (hdr is not None and _has_status(hdr)):
            return False  # status replies go to __call__, as messages
        if t.end or t.error is not None or t.delivered >= t.want:
            return True  # (the pull is over)
        try:
            r = t.take(subject, reply, hdr, data)
        except Exception as exc:
            t.error = exc
            r = 1
        if r == 2:
            return False
        if r == 1 or t.delivered >= t.want:
            try:
                self.on_event(None)
            except BaseException as exc:
                sys.unraisablehook(cast(Any, _Unraisable(exc, self)))
        return True


class _Unraisable:
    """The argument ``sys.unraisablehook`` takes (as ``PyErr_WriteUnraisable`` builds it)."""

    __slots__ = ("err_msg", "exc_traceback", "exc_type", "exc_value", "object")

    def __init__(self, exc: BaseException, where: Any) -> None:
        self.exc_type = type(exc)
        self.exc_value = exc
        self.exc_traceback = exc.__traceback__
        self.err_msg = None
        self.object = where


class DirectRows:
    """The rows of one batched direct get, filled by a ``DirectCollector`` as the replies
    arrive (on the connection's reader thread), so no message outlives its arrival.
    ``columns()`` gives them as ``(subjects, seqs, times_us, data, headers, odd_times)``;
    ``headers`` is None when no message has headers beyond the direct-get ones, else one
    entry per row: None or a list of ``(name, [values])``. A reply that could not be read
    (a missing direct-get header: ``KeyError``; a sequence that is not 1-18 ASCII digits:
    ``ValueError``) is kept as ``error``, and nothing is added after it."""

    __slots__ = ("_data", "_headers", "_odd", "_seqs", "_subjects", "_times", "error", "reply")

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.error: BaseException | None = None
        self._subjects: list[str] = []
        self._seqs = array("q")
        self._times = array("q")
        self._data: list[bytes] = []
        self._headers: list[Any] | None = None
        self._odd: list[tuple[int, str]] = []

    def __len__(self) -> int:
        return len(self._subjects)

    @property
    def last_seq(self) -> int:
        """The sequence of the last row (0 when there is none)."""
        return self._seqs[-1] if self._seqs else 0

    def add(self, m: Any) -> None:
        if self.error is not None:
            return
        try:
            d = m.headers.to_dict()
            subject = d[K_SUBJECT][0]
            seq = _seq(d[K_SEQ][0])
            text = d[K_TIME][0]
        except Exception as exc:
            self.error = exc
            return
        i = len(self._subjects)
        t = rfc3339_us(text) if type(text) is str else None
        if t is None:
            self._odd.append((i, text))
            t = 0
        self._subjects.append(subject)
        self._seqs.append(seq)
        self._times.append(t)
        self._data.append(m.data)
        headers = self._headers
        if len(d) != _N_DIRECT:
            row = [(k, list(v)) for k, v in d.items() if k not in DIRECT_KEYS] or None
            if headers is None:
                if row is None:
                    return
                headers = self._headers = [None] * i
            headers.append(row)
        elif headers is not None:
            headers.append(None)

    def columns(self) -> tuple[list[str], array[int], array[int], list[bytes], list[Any] | None,
                               list[tuple[int, str]]]:
        """``(subjects, seqs, times_us, data, headers, odd_times)``; ``odd_times`` lists
        ``(row, text)`` of the times ``rfc3339_us`` could not read (their slot holds 0)."""
        return self._subjects, self._seqs, self._times, self._data, self._headers, self._odd


class DirectCollector(FrameSink):
    """The direct handler of a batched direct get's reply subscription, and its frame
    sink: a data reply on ``target.reply`` becomes a row of ``target`` (a
    ``DirectRows``); a status reply (the ``204`` end of batch, ``404``, an error) or one
    without headers goes to ``on_status(msg)``; anything else (a late reply) is dropped.
    As a sink it takes the data replies (the compiled twin reads the usual direct-get
    header block in place) and the late ones, and declines the rest, which come to
    ``__call__`` as messages (a malformed header block is reported by the parser)."""

    __slots__ = ("on_status", "target")

    def __init__(self, on_status: Any) -> None:
        self.target: DirectRows | None = None
        self.on_status = on_status

    def __call__(self, m: Any) -> None:
        t = self.target
        if t is None or m.subject != t.reply:
            return
        h = m.headers
        if h is not None and h.status is None:
            t.add(m)
        else:
            self.on_status(m)

    def take(self, subject: bytes, reply: bytes | None, hdr: bytes | None, data: bytes) -> bool:
        t = self.target
        if t is None:
            return True  # (dropped, as __call__ drops it)
        if type(t) is not DirectRows or hdr is None or _has_status(hdr) or type(t.reply) is not str:
            return False
        if subject != t.reply.encode("utf-8", "surrogateescape"):
            return True  # a late reply to an abandoned request
        if t.error is not None:
            return True
        try:
            h = decode_headers(hdr)
        except ProtocolError:
            return False
        m = _new(MsgBase)
        m.subject, m.reply, m.headers, m.data, m.sid = t.reply, None, h, data, 0
        m._client, m._ackd, m._meta = None, False, None
        t.add(m)
        return True
