"""Atomic batch publishing (ADR-50), the part without I/O shared by both flavours: the
``Nats-Batch-*`` headers of each message and the reading of the commit's answer. The
flavour code is ``jetwire/aio/batch.py`` (``AtomicBatch``; the blocking twin is
generated).

Wire protocol (nats-server 2.12+, streams with ``allow_atomic``): every message of a
batch carries ``Nats-Batch-Id: <id>`` (at most 64 characters) and
``Nats-Batch-Sequence: <n>`` (1, 2, 3, ... without gaps); the last one also
``Nats-Batch-Commit: 1`` and is sent as a request. The server stages the messages and,
on the commit, checks every expectation under the stream's lock and stores all of them
(consecutive sequences; the answer is a publish ack with ``batch`` and ``count``) or none
(an error answer). A batch that sees no message for 10 seconds is abandoned.
"""
from __future__ import annotations

from typing import Any

import orjson

from ..errors import APIError, AtomicBatchError, InvalidJSONError, api_error
from ..protocol.headers import Headers
from .manage import publish_headers
from .models import BatchAck

__all__ = ["BATCH_COMMIT_HDR", "BATCH_ID_HDR", "BATCH_SEQ_HDR", "batch_ack", "batch_failed", "batch_headers"]

BATCH_ID_HDR = "Nats-Batch-Id"
BATCH_SEQ_HDR = "Nats-Batch-Sequence"
BATCH_COMMIT_HDR = "Nats-Batch-Commit"


def batch_headers(headers: Any, batch_id: str, seq: int, commit: bool, msg_id: str | None,
                  expected_stream: str | None, expected_last_seq: int | None,
                  expected_last_subject_seq: int | None, expected_last_subject_seq_subject: str | None,
                  ttl: Any) -> Headers:
    """The headers of message ``seq`` of batch ``batch_id``: the user's ``headers`` (never
    modified), the publish options (as :func:`~jetwire.jetstream.manage.publish_headers`
    checks and writes them) and the batch's own, which replace same-named user headers."""
    base = publish_headers(headers, msg_id, expected_stream, expected_last_seq, expected_last_subject_seq, None,
                           ttl, expected_last_subject_seq_subject=expected_last_subject_seq_subject)
    h = Headers(base) if base else Headers()
    h[BATCH_ID_HDR] = batch_id
    h[BATCH_SEQ_HDR] = str(seq)
    if commit:
        h[BATCH_COMMIT_HDR] = "1"
    elif BATCH_COMMIT_HDR in h:
        del h[BATCH_COMMIT_HDR]
    return h


def batch_failed(batch_id: str, error: BaseException) -> AtomicBatchError:
    """The ``AtomicBatchError`` of batch ``batch_id`` failed with ``error`` (kept as
    ``.error``; an ``APIError``'s code, err_code and description are copied)."""
    if isinstance(error, AtomicBatchError) and error.batch_id == batch_id:
        return error
    if isinstance(error, APIError):
        return AtomicBatchError(error.code, error.err_code, error.description, batch_id=batch_id, error=error)
    return AtomicBatchError(None, None, str(error) or type(error).__name__, batch_id=batch_id, error=error)


def batch_ack(data: Any, batch_id: str) -> BatchAck:
    """The ``BatchAck`` in the commit's answer ``data``, or the ``AtomicBatchError`` the
    answer carries (raised); ``InvalidJSONError`` for an answer that is not a batch ack."""
    try:
        d = orjson.loads(data)
    except orjson.JSONDecodeError:
        d = None
    if type(d) is not dict:
        raise InvalidJSONError(f"invalid atomic batch ack: {bytes(data[:100])!r}", "BatchAck")
    err = d.get("error")
    if err:
        typed = api_error(err)
        raise batch_failed(batch_id, typed) from typed
    ack = BatchAck.from_json(d)
    if not ack.stream or ack.batch_id != batch_id:
        raise InvalidJSONError(f"invalid atomic batch ack for batch {batch_id!r}: {bytes(data[:100])!r}", "BatchAck")
    return ack
