"""Ack-subject metadata (twin of the compiled ``jetwire._c.metadata``).

A subject that is not a JetStream ack subject -- including one holding bytes that are
not UTF-8 (surrogate escapes) -- raises ``NotJSMessageError`` for that one message.
"""
from __future__ import annotations

from typing import Any, Tuple

from ...errors import NotJSMessageError


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


