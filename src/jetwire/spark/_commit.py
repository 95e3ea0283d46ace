"""The streaming writer's commit log (option ``commitBucket``). No Spark imports.

One KV entry per streaming write query: bucket ``commitBucket``, key the query's id
(Spark's ``StreamingQuery.id``, kept in the checkpoint, so the same across restarts),
value ``{"batchId": <last committed micro-batch>, "count": ..., "duplicates": ...}``
(JSON). The driver writes it in ``DataSourceStreamWriter.commit(messages, batchId)``,
i.e. after every task of the micro-batch has had all its acks, creating the bucket on
first use. Each write task reads it before publishing: a micro-batch whose id is at or
below the committed one is a replay (Spark re-runs the last batch when its own commit
log missed it, e.g. the driver died between the two commits) and publishes nothing,
however long after the first run -- unlike message ids, which only de-duplicate
within the stream's ``duplicate_window``.

Every failure to read or write the log (permissions, no JetStream, a timeout, an entry
that is not ours) raises :class:`~jetwire.errors.CommitLogError`: nothing is skipped on
a log that could not be read, and a batch whose commit failed is not marked done.
"""
from __future__ import annotations

import json
from typing import Any

from ..errors import (
    BucketNotFoundError,
    CommitLogError,
    KeyNotFoundError,
    StreamNameInUseError,
    WrongLastSequenceError,
)
from ._read import open_js

__all__ = ["commit_batch", "committed_batch"]

_DESCRIPTION = "jetwire Spark streaming writer: last committed micro-batch per query"
_CAS_ATTEMPTS = 5


def _fail(what: str, bucket: str, key: str, exc: BaseException) -> CommitLogError:
    hint = ""
    if isinstance(exc, TimeoutError):
        hint = (" (a request the server does not answer: often a permission the account lacks, "
                f"for $JS.API.STREAM.*.KV_{bucket}, $JS.API.DIRECT.GET.KV_{bucket}.> or $KV.{bucket}.>)")
    return CommitLogError(f"commit log {bucket}/{key}: {what} failed: {type(exc).__name__}: {exc}{hint}",
                          bucket=bucket, key=key)


def _batch_of(entry: Any, bucket: str, key: str) -> int | None:
    """The committed batch id of a KV entry (``None`` for a deleted entry)."""
    if entry is None or entry.value in (None, b""):
        return None
    try:
        batch = json.loads(entry.value)["batchId"]
        if isinstance(batch, bool) or not isinstance(batch, int):
            raise TypeError(f"batchId is {batch!r}")
    except (ValueError, KeyError, TypeError) as exc:
        raise CommitLogError(f"commit log {bucket}/{key}: the entry is not a jetwire commit record "
                             f"({exc}); delete it or choose another commitBucket", bucket=bucket, key=key) from None
    return batch


def _get(kv: Any, bucket: str, key: str) -> tuple[int | None, int | None]:
    """(committed batch id, revision) of the key; (None, None) when it has none."""
    try:
        entry = kv.get(key)
    except KeyNotFoundError:  # never written, or deleted / purged
        return None, None
    return _batch_of(entry, bucket, key), entry.revision


def committed_batch(conn: dict[str, Any], bucket: str, key: str, timeout: float) -> int | None:
    """The last micro-batch id committed for ``key`` (a query id), or ``None`` when the
    bucket or the key does not exist yet (nothing was committed). Runs in the tasks."""
    try:
        with open_js(conn, timeout=timeout) as (_nc, js):
            try:
                kv = js.key_value(bucket)
            except BucketNotFoundError:  # made by the first commit
                return None
            return _get(kv, bucket, key)[0]
    except CommitLogError:
        raise
    except Exception as exc:
        raise _fail("reading the last committed batch", bucket, key, exc) from exc


def commit_batch(conn: dict[str, Any], bucket: str, key: str, batch_id: int, summary: dict[str, Any],
                 timeout: float) -> bool:
    """Record ``batch_id`` as ``key``'s last committed micro-batch (on the driver, after
    every task's acks). Creates the bucket when it does not exist. Never moves the log
    backwards: returns False (and writes nothing) when ``batch_id`` is not above what is
    recorded (a replayed batch). Compare-and-set on the entry's revision."""
    value = json.dumps({"batchId": batch_id, "count": summary.get("count", 0),
                        "duplicates": summary.get("duplicates", 0)}, separators=(",", ":")).encode()
    try:
        with open_js(conn, timeout=timeout) as (_nc, js):
            try:
                kv = js.key_value(bucket)
            except BucketNotFoundError:
                try:
                    kv = js.create_key_value(bucket=bucket, history=1, description=_DESCRIPTION)
                except StreamNameInUseError:  # made meanwhile (with another config): use it
                    kv = js.key_value(bucket)
            for _ in range(_CAS_ATTEMPTS):
                done, revision = _get(kv, bucket, key)
                if done is not None and done >= batch_id:
                    return False
                try:
                    if revision is None:
                        kv.create(key, value)
                    else:
                        kv.update(key, value, revision)
                    return True
                except WrongLastSequenceError:  # another writer of the same key: look again
                    continue
            raise CommitLogError(f"commit log {bucket}/{key}: the entry kept changing while batch {batch_id} "
                                 "was committed (is another query writing the same key?)", bucket=bucket, key=key)
    except CommitLogError:
        raise
    except Exception as exc:
        raise _fail(f"committing batch {batch_id}", bucket, key, exc) from exc
