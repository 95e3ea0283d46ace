"""Sans-IO pieces of the key-value store (ADR-8). No sockets, loops, threads or clocks:
``jetwire/aio/kv.py`` (and its generated blocking twin) moves the bytes. Watchers run
on the one push-consumer machinery (``jetwire/aio/push.py`` over
:class:`jetwire.jetstream.push.PushState`).

* :func:`kv_operation`, :func:`entry_from_raw`, :func:`entry_from_delivery`: KV entries
  from stored messages (direct/``MSG.GET`` answers) and from consumer deliveries.
* :func:`kv_filter_subjects`: the consumer filter subjects of a watch.
* :func:`purge_deletes_plan`: what ``purge_deletes()`` purges.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from .. import _impl
from ..errors import KeyDeletedError, KeyNotFoundError
from .kv_models import KV_OPERATION_HDR, KeyValueEntry, KeyValueOp
from .validate import is_valid_key, validate_key_filter

if TYPE_CHECKING:
    from ..msg import Msg
    from ..protocol.headers import Headers
    from .models import RawStreamMsg

__all__ = [
    "MARKER_REASON_HDR",
    "ROLLUP_HDR",
    "entry_from_delivery",
    "entry_from_raw",
    "kv_filter_subjects",
    "kv_operation",
    "purge_deletes_plan",
    "raise_if_deleted",
]

MARKER_REASON_HDR = "Nats-Marker-Reason"  # server-placed markers (limit markers, ADR-48)
ROLLUP_HDR = "Nats-Rollup"

_parse_fields = _impl.parse_metadata_fields
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_PUT = KeyValueOp.PUT
_DEL = KeyValueOp.DEL
_PURGE = KeyValueOp.PURGE
_OPS = {"DEL": _DEL, "PURGE": _PURGE, "PUT": _PUT}
_MARKER_OPS = {"MaxAge": _PURGE, "Purge": _PURGE, "Remove": _DEL}


def kv_operation(headers: Headers | None) -> KeyValueOp:
    """The operation of a stored KV message: ``KV-Operation`` (DEL/PURGE), else a
    server limit marker's ``Nats-Marker-Reason`` (MaxAge/Purge -> PURGE, Remove -> DEL),
    else PUT."""
    if headers is None:
        return _PUT
    op = headers.get(KV_OPERATION_HDR)
    if op:
        return _OPS.get(op, _PUT)
    reason = headers.get(MARKER_REASON_HDR)
    if reason:
        return _MARKER_OPS.get(reason, _PUT)
    return _PUT


def entry_from_raw(bucket: str, key: str, raw: RawStreamMsg) -> KeyValueEntry:
    """The entry of a message read with direct get / ``STREAM.MSG.GET`` (a ``RawStreamMsg``)."""
    return KeyValueEntry(bucket, key, raw.data, raw.seq, raw.time, 0, kv_operation(raw.headers))


def raise_if_deleted(entry: KeyValueEntry) -> KeyValueEntry:
    """Return ``entry``, or raise ``KeyDeletedError`` (carrying it as ``.entry``) for a
    delete or purge marker."""
    if entry.operation is not _PUT:
        err = KeyDeletedError(f"key {entry.key!r} was {'purged' if entry.operation is _PURGE else 'deleted'}")
        err.entry = entry  # type: ignore[attr-defined]
        raise err
    return entry


def key_not_found(key: str, revision: int | None = None) -> KeyNotFoundError:
    if revision is None:
        return KeyNotFoundError(f"key {key!r} not found")
    return KeyNotFoundError(f"key {key!r} has no revision {revision}")


def entry_from_delivery(bucket: str, prefix_len: int, msg: Msg) -> KeyValueEntry:
    """The entry of a message delivered by a watcher's consumer: revision, time and
    ``delta`` (messages still pending) come from the ack subject."""
    f = _parse_fields(msg.reply)
    ts_ns = f[7]
    return KeyValueEntry(bucket, msg.subject[prefix_len:], msg.data, f[5],
                         _EPOCH + timedelta(microseconds=ts_ns // 1000), f[8], kv_operation(msg.headers))


def kv_filter_subjects(prefix: str, keys: str | Sequence[str] | None) -> list[str]:
    """Consumer filter subjects of a watch on ``keys`` (a key, a pattern with ``*``/``>``
    or a list of them; None or empty: every key). Raises ``InvalidKeyError``."""
    if keys is None:
        keys = [">"]
    elif isinstance(keys, str):
        keys = [keys]
    else:
        keys = list(keys) or [">"]
    for k in keys:
        validate_key_filter(k)
    return [prefix + k for k in keys]


def purge_deletes_plan(markers: Iterable[KeyValueEntry], prefix: str, now: datetime,
                       older_than: float | None) -> list[tuple[str, int]]:
    """``(subject, keep)`` purges of ``purge_deletes``: markers younger than
    ``older_than`` seconds keep their last message (the marker itself); older ones (or
    all, when ``older_than`` is negative) are purged completely. 0/None: 30 minutes."""
    if not older_than:
        older_than = 30 * 60.0
    limit = now - timedelta(seconds=older_than) if older_than > 0 else None
    plan = []
    for e in markers:
        if not is_valid_key(e.key):
            # a marker written past the client's checks (a wildcard key): purging by its
            # subject would purge every key it matches
            continue
        keep = 1 if (limit is not None and e.created is not None and e.created > limit) else 0
        plan.append((prefix + e.key, keep))
    return plan
