"""Sans-IO pieces of the key-value store (ADR-8) and of the ordered push consumer that
KV watchers, object-store watchers and object reads share. No sockets, loops, threads
or clocks: ``jetwire/aio/kv.py`` (and its generated blocking twin) moves the bytes.

* :func:`kv_operation`, :func:`entry_from_raw`, :func:`entry_from_delivery`: KV entries
  from stored messages (direct/``MSG.GET`` answers) and from consumer deliveries.
* :class:`OrderedPushState`: one ordered, ephemeral push consumer (ADR-15/17): gap
  detection, flow-control answers held back until the reader caught up (so memory
  stays bounded by the server's flow-control window), and the end-of-initial-values
  marker of watchers (ADR-8), decided from the consumer's ``num_pending`` at creation
  and from the ``num_pending`` of each delivery's ack subject.
* :func:`push_consumer_config`: the wire config of such a consumer.
* :func:`purge_deletes_plan`: what ``purge_deletes()`` purges.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from .. import _impl
from ..errors import KeyDeletedError, KeyNotFoundError
from .kv_models import KV_OPERATION_HDR, KeyValueEntry, KeyValueOp
from .pull import HDR_CONSUMER_STALLED, OrderedCursor, ordered_config
from .validate import validate_key_filter

__all__ = [
    "MARKER_REASON_HDR",
    "ROLLUP_HDR",
    "kv_operation",
    "entry_from_raw",
    "entry_from_delivery",
    "raise_if_deleted",
    "kv_filter_subjects",
    "push_consumer_config",
    "OrderedPushState",
    "PUSH_DATA",
    "PUSH_IGNORE",
    "PUSH_GAP",
    "PUSH_HEARTBEAT",
    "PUSH_FLOW_CONTROL",
    "PUSH_STATUS",
    "purge_deletes_plan",
]

MARKER_REASON_HDR = "Nats-Marker-Reason"  # server-placed markers (limit markers, ADR-48)
ROLLUP_HDR = "Nats-Rollup"
DEFAULT_PUSH_HEARTBEAT = 5.0

_parse_fields = _impl.parse_metadata_fields
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_PUT = KeyValueOp.PUT
_DEL = KeyValueOp.DEL
_PURGE = KeyValueOp.PURGE
_OPS = {"DEL": _DEL, "PURGE": _PURGE, "PUT": _PUT}
_MARKER_OPS = {"MaxAge": _PURGE, "Purge": _PURGE, "Remove": _DEL}


def kv_operation(headers: Any) -> KeyValueOp:
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


def entry_from_raw(bucket: str, key: str, raw: Any) -> KeyValueEntry:
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


def key_not_found(key: str, revision: Optional[int] = None) -> KeyNotFoundError:
    if revision is None:
        return KeyNotFoundError(f"key {key!r} not found")
    return KeyNotFoundError(f"key {key!r} has no revision {revision}")


def entry_from_delivery(bucket: str, prefix_len: int, msg: Any) -> KeyValueEntry:
    """The entry of a message delivered by a watcher's consumer: revision, time and
    ``delta`` (messages still pending) come from the ack subject."""
    f = _parse_fields(msg.reply)
    ts_ns = f[7]
    return KeyValueEntry(bucket, msg.subject[prefix_len:], msg.data, f[5],
                         _EPOCH + timedelta(microseconds=ts_ns // 1000), f[8], kv_operation(msg.headers))


def kv_filter_subjects(prefix: str, keys: Union[str, Sequence[str], None]) -> List[str]:
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


def push_consumer_config(deliver_subject: str, cursor: OrderedCursor, filter_subjects: Sequence[str],
                         deliver_policy: str = "all", opt_start_seq: Optional[int] = None,
                         headers_only: bool = False, heartbeat: float = DEFAULT_PUSH_HEARTBEAT,
                         name: Optional[str] = None) -> Dict[str, Any]:
    """Wire config of an ordered push consumer: ephemeral, ack none, flow control,
    idle heartbeats, memory storage, R1; after a reset it restarts at the stream
    sequence after the last one delivered."""
    cfg = ordered_config("", cursor, list(filter_subjects), deliver_policy=deliver_policy,
                         opt_start_seq=opt_start_seq, headers_only=headers_only,
                         deliver_subject=deliver_subject, idle_heartbeat=heartbeat, flow_control=True)
    if name:
        cfg["name"] = name
    return cfg


# results of OrderedPushState.on_msg
PUSH_DATA = 1  # hand the message to the reader (and check ``marker_due``)
PUSH_IGNORE = 0  # drop (a duplicate)
PUSH_GAP = 2  # out of order: recreate the consumer
PUSH_HEARTBEAT = 3  # idle heartbeat (activity only)
PUSH_FLOW_CONTROL = 4  # flow-control request (answered through ``fc_ready``)
PUSH_STATUS = 5  # another status (409 consumer deleted...): recreate the consumer


class OrderedPushState:
    """The state of one ordered push consumer as the reader sees it.

    Deliveries (:meth:`on_msg`) are checked against the consumer sequence (ADR-17);
    the stream sequence of the last in-order one is where a recreated consumer resumes.

    *Flow control*: a ``100 FlowControl Request`` is answered only once the reader
    has taken every message that arrived before it (:meth:`consumed` returns the reply
    subject when it is time), so a slow reader holds the server back instead of
    growing a queue without bound.

    *Initial values*: the marker (a watcher's ``None``; the end of an object's chunks)
    is due exactly once, when the messages that were pending when the consumer was
    made have all arrived: when a delivery's ``num_pending`` is 0, or when as many
    messages arrived as the consumer's info (``num_pending`` + already delivered)
    announced, or at once when that info says nothing is pending and nothing was
    delivered (an empty bucket). With ``initial=False`` (updates only) there are no
    initial values: the marker is due at once.
    """

    __slots__ = ("cursor", "received", "queued", "taken", "fc_reply", "fc_mark", "init_done", "init_total",
                 "marker_due", "last_pending", "fc_answered")

    def __init__(self, initial: bool = True) -> None:
        self.cursor = OrderedCursor()
        self.received = 0  # in-order data messages received (all consumers)
        self.queued = 0  # messages handed to the reader (= received)
        self.taken = 0  # messages the reader took
        self.fc_reply: Optional[str] = None
        self.fc_mark = 0
        self.fc_answered = 0
        self.init_done = not initial
        self.init_total: Optional[int] = None
        self.marker_due = not initial
        self.last_pending: Optional[int] = None

    # -- consumer life ---------------------------------------------------------------
    def new_consumer(self) -> int:
        """A consumer is being (re)created; returns its serial. A pending flow-control
        request belonged to the old one and is forgotten."""
        self.fc_reply = None
        return self.cursor.new_consumer()

    def on_created(self, num_pending: int, delivered: int) -> bool:
        """The first consumer's info arrived (deliveries may have come before it).
        Returns True when the initial-values marker becomes due now."""
        if self.init_done:
            return False
        self.init_total = max(0, int(num_pending)) + max(0, int(delivered))
        if self.init_total == 0 or self.received >= self.init_total:
            return self._done()
        return False

    def _done(self) -> bool:
        self.init_done = True
        self.marker_due = True
        return True

    def take_marker(self) -> bool:
        """True once: the marker is due and the caller now queues it."""
        if self.marker_due:
            self.marker_due = False
            return True
        return False

    # -- deliveries ------------------------------------------------------------------
    def on_data(self, reply: Optional[str]) -> Tuple[int, int]:
        """A data message with ack subject ``reply``: ``(PUSH_DATA | PUSH_GAP | PUSH_IGNORE,
        num_pending)``. After PUSH_DATA, ``marker_due`` tells whether the initial
        values are now complete."""
        if not reply:
            return PUSH_IGNORE, 0
        try:
            f = _parse_fields(reply)
        except Exception:
            return PUSH_IGNORE, 0
        sseq = f[5]
        cseq = f[6]
        cursor = self.cursor
        if cseq != cursor.consumer_seq + 1:
            if cseq <= cursor.consumer_seq:
                return PUSH_IGNORE, f[8]
            return PUSH_GAP, f[8]
        cursor.stream_seq = sseq
        cursor.consumer_seq = cseq
        pending = f[8]
        self.received += 1
        self.queued += 1
        self.last_pending = pending
        if not self.init_done and (pending == 0 or (self.init_total is not None and self.received >= self.init_total)):
            self._done()
        return PUSH_DATA, pending

    def on_status(self, headers: Any, reply: Optional[str]) -> int:
        """A status message: heartbeat, flow control or something that ends the consumer."""
        status = headers.status
        if status == "100":
            if reply:
                self.fc_reply = reply
                self.fc_mark = self.queued
                return PUSH_FLOW_CONTROL
            if self.cursor.hb_gap(headers):
                return PUSH_GAP
            return PUSH_HEARTBEAT
        return PUSH_STATUS

    def stalled_reply(self, headers: Any) -> Optional[str]:
        """A heartbeat's ``Nats-Consumer-Stalled`` subject (answer it at once), or None."""
        return headers.get(HDR_CONSUMER_STALLED) if headers is not None else None

    def fc_ready(self) -> Optional[str]:
        """The flow-control reply to send now (the reader caught up with it), or None."""
        reply = self.fc_reply
        if reply is not None and self.taken >= self.fc_mark:
            self.fc_reply = None
            self.fc_answered += 1
            return reply
        return None

    def consumed(self, n: int = 1) -> Optional[str]:
        """The reader took ``n`` messages; returns a flow-control reply to send, if due."""
        self.taken += n
        if self.fc_reply is None:
            return None
        return self.fc_ready()


def purge_deletes_plan(markers: Iterable[KeyValueEntry], prefix: str, now: datetime,
                       older_than: Optional[float]) -> List[Tuple[str, int]]:
    """``(subject, keep)`` purges of ``purge_deletes``: markers younger than
    ``older_than`` seconds keep their last message (the marker itself); older ones (or
    all, when ``older_than`` is negative) are purged completely. 0/None: 30 minutes."""
    if not older_than:
        older_than = 30 * 60.0
    limit = now - timedelta(seconds=older_than) if older_than > 0 else None
    plan = []
    for e in markers:
        keep = 1 if (limit is not None and e.created is not None and e.created > limit) else 0
        plan.append((prefix + e.key, keep))
    return plan
