"""Ack-subject metadata (twin of the compiled ``jetwire._c.metadata``): ``SequencePair``,
``MsgMetadata`` and the parsers of a ``$JS.ACK...`` subject.

The two types behave like frozen dataclasses (fields, keyword or positional
construction, ``==``, ``hash``, ``repr``, assignment raising ``FrozenInstanceError``,
pickling), and ``MsgMetadata.timestamp`` (an aware UTC datetime) is built from
``timestamp_ns`` on first use.

A subject that is not a JetStream ack subject -- including one holding bytes that are
not UTF-8 (surrogate escapes) -- raises ``NotJSMessageError`` for that one message.
"""
from __future__ import annotations

from dataclasses import FrozenInstanceError
from datetime import UTC, datetime, timedelta
from typing import Any

from ...errors import NotJSMessageError

__all__ = ["MsgMetadata", "SequencePair", "parse_metadata", "parse_metadata_fields"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


# ------------------------------------------------------------------------------------ types
class SequencePair:
    """Stream and consumer sequence of a JetStream message (immutable)."""

    __slots__ = ("consumer", "stream")
    __match_args__ = ("stream", "consumer")

    stream: int
    consumer: int

    def __init__(self, stream: int, consumer: int) -> None:
        _set_stream(self, stream)
        _set_consumer(self, consumer)

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}(stream={self.stream!r}, consumer={self.consumer!r})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, SequencePair)
        return (self.stream, self.consumer) == (other.stream, other.consumer)

    def __hash__(self) -> int:
        return hash((self.stream, self.consumer))

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.stream, self.consumer)


_set_stream = SequencePair.__dict__["stream"].__set__
_set_consumer = SequencePair.__dict__["consumer"].__set__


class MsgMetadata:
    """What a JetStream ack subject tells about a message (immutable).

    ``timestamp`` is an aware UTC datetime (microsecond precision), built from
    ``timestamp_ns`` (the exact nanoseconds) on first use unless one is given.
    ``domain`` is ``None`` when the subject has none (or ``_``).
    """

    __slots__ = ("_ts", "consumer", "domain", "num_delivered", "num_pending", "sequence", "stream", "timestamp_ns")
    __match_args__ = ("sequence", "num_delivered", "num_pending", "timestamp", "timestamp_ns", "stream",
                      "consumer", "domain")

    sequence: SequencePair
    num_delivered: int
    num_pending: int
    timestamp_ns: int
    stream: str
    consumer: str
    domain: str | None
    _ts: datetime | None

    def __init__(self, sequence: SequencePair, num_delivered: int, num_pending: int, timestamp: datetime | None,
                 timestamp_ns: int, stream: str, consumer: str, domain: str | None = None) -> None:
        _fill(self, sequence, num_delivered, num_pending, timestamp, timestamp_ns, stream, consumer, domain)

    @property
    def timestamp(self) -> datetime:
        """When the message was stored: an aware UTC datetime (microseconds, truncated)."""
        ts: datetime | None = self._ts
        if ts is None:
            ts = _EPOCH + timedelta(microseconds=self.timestamp_ns // 1000)
            _set_ts(self, ts)
        return ts

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __repr__(self) -> str:
        return (
            f"{type(self).__qualname__}(sequence={self.sequence!r}, num_delivered={self.num_delivered!r}, "
            f"num_pending={self.num_pending!r}, timestamp={self.timestamp!r}, timestamp_ns={self.timestamp_ns!r}, "
            f"stream={self.stream!r}, consumer={self.consumer!r}, domain={self.domain!r})"
        )

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, MsgMetadata)
        if not ((self.sequence, self.num_delivered, self.num_pending, self.timestamp_ns, self.stream, self.consumer,
                 self.domain)
                == (other.sequence, other.num_delivered, other.num_pending, other.timestamp_ns, other.stream,
                    other.consumer, other.domain)):
            return False
        if self._ts is None and other._ts is None:
            return True  # both derived from the same timestamp_ns
        return self.timestamp == other.timestamp

    def __hash__(self) -> int:
        return hash((self.sequence, self.num_delivered, self.num_pending, self.timestamp, self.timestamp_ns,
                     self.stream, self.consumer, self.domain))

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.sequence, self.num_delivered, self.num_pending, self._ts, self.timestamp_ns,
                            self.stream, self.consumer, self.domain)


_SETTERS = tuple(MsgMetadata.__dict__[n].__set__ for n in (
    "sequence", "num_delivered", "num_pending", "_ts", "timestamp_ns", "stream", "consumer", "domain"))
_set_ts = _SETTERS[3]


def _fill(m: MsgMetadata, *values: Any) -> None:
    for setter, v in zip(_SETTERS, values, strict=False):
        setter(m, v)


# ---------------------------------------------------------------------------------- parsing
def _num(tok: str) -> int:
    if tok and tok.isdigit() and tok.isascii():
        return int(tok)
    raise NotJSMessageError(f"invalid number {tok!r} in ack subject")


def parse_metadata_fields(subject: Any) -> tuple[Any, ...]:
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


_new = object.__new__


def parse_metadata(subject: Any) -> MsgMetadata:
    """Parse an ack subject (v1 ``$JS.ACK.<stream>...`` or v2 with domain and account hash)
    into a ``MsgMetadata``. Raises ``NotJSMessageError`` for anything else."""
    domain, _acc, stream, consumer, delivered, sseq, cseq, ts_ns, pending = parse_metadata_fields(subject)
    seq = _new(SequencePair)
    _set_stream(seq, sseq)
    _set_consumer(seq, cseq)
    m = _new(MsgMetadata)
    _fill(m, seq, delivered, pending, None, ts_ns, stream, consumer, domain)
    return m
