"""JetStream message metadata parsed from the ``$JS.ACK...`` reply subject."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Optional

__all__ = ["SequencePair", "MsgMetadata", "parse_metadata"]

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True, slots=True)
class SequencePair:
    """Stream and consumer sequence of a JetStream message."""

    stream: int
    consumer: int


@dataclass(frozen=True, slots=True)
class MsgMetadata:
    """What a JetStream ack subject tells about a message.

    ``timestamp`` is an aware UTC datetime (microsecond precision); ``timestamp_ns`` keeps
    the exact nanoseconds. ``domain`` is ``None`` when the subject has none (or ``_``).
    """

    sequence: SequencePair
    num_delivered: int
    num_pending: int
    timestamp: datetime
    timestamp_ns: int
    stream: str
    consumer: str
    domain: Optional[str] = None


_fields: Any = None


def parse_metadata(subject: str) -> MsgMetadata:
    """Parse an ack subject (v1 ``$JS.ACK.<stream>...`` or v2 with domain and account hash).

    Raises ``NotJSMessageError`` for anything else.
    """
    global _fields
    fields = _fields
    if fields is None:
        from jetwire._impl import parse_metadata_fields as fields

        _fields = fields
    domain, _acc, stream, consumer, delivered, sseq, cseq, ts_ns, pending = fields(subject)
    return MsgMetadata(
        SequencePair(sseq, cseq),
        delivered,
        pending,
        _EPOCH + timedelta(microseconds=ts_ns // 1000),
        ts_ns,
        stream,
        consumer,
        domain,
    )
