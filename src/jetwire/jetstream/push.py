"""Sans-IO state of push consumers (ADR-9 flow control, ADR-15 idle heartbeats, ADR-17
ordered consumers, ADR-8 watchers). No sockets, loops, threads or clocks: the one
flavour implementation (``jetwire/aio/push.py`` and its generated blocking twin) moves
the messages and serves ``js.subscribe()`` (plain and ordered), KV watchers
(``keys()``, ``history()``, ``purge_deletes()``), object-store watchers and object reads.

* :class:`PushState`: what the reader does with each delivery and status message of
  one push consumer: gap detection (ordered), flow-control answers held back until
  the reader took everything that came before the request (so memory stays bounded
  by the server's flow-control window), and the end-of-initial-values marker of
  watchers (decided from the consumer's ``num_pending`` at creation and from the
  ``num_pending`` of each delivery's ack subject).
* :func:`push_consumer_config`: the wire config of an ordered push consumer.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .. import _impl
from ._json import JSONObject
from .pull import (
    HDR_CONSUMER_STALLED,
    ORDERED_DEFAULT_HB,
    S_FLOW_CONTROL,
    OrderedCursor,
    classify_status,
    ordered_config,
)

if TYPE_CHECKING:
    from ..protocol.headers import Headers

__all__ = [
    "DEFAULT_PUSH_HEARTBEAT",
    "MISSED_HEARTBEATS",
    "PUSH_DATA",
    "PUSH_FLOW_CONTROL",
    "PUSH_GAP",
    "PUSH_HEARTBEAT",
    "PUSH_IGNORE",
    "PUSH_STATUS",
    "PushState",
    "push_consumer_config",
]

DEFAULT_PUSH_HEARTBEAT = ORDERED_DEFAULT_HB
# ADR-15: a push consumer is stalled after 3 missed heartbeats
MISSED_HEARTBEATS = 3.0

_parse_fields = _impl.parse_metadata_fields


def push_consumer_config(deliver_subject: str, cursor: OrderedCursor, filter_subjects: Sequence[str],
                         deliver_policy: Any = "all", opt_start_seq: int | None = None,
                         headers_only: bool = False, heartbeat: float = DEFAULT_PUSH_HEARTBEAT,
                         name: str | None = None, opt_start_time: str | None = None,
                         replay_policy: Any = "instant", inactive_threshold: float | None = 300.0,
                         metadata: dict[str, str] | None = None) -> JSONObject:
    """Wire config of an ordered push consumer: ephemeral, ack none, flow control,
    idle heartbeats, memory storage, R1; after a reset it restarts at the stream
    sequence after the last one delivered."""
    cfg = ordered_config(name or "", cursor, list(filter_subjects), deliver_policy, opt_start_seq, opt_start_time,
                         replay_policy, inactive_threshold, headers_only, deliver_subject=deliver_subject,
                         idle_heartbeat=heartbeat, flow_control=True, metadata=metadata)
    if not name:
        del cfg["name"]
    return cfg


# results of PushState.on_data / on_status
PUSH_DATA = 1  # hand the message to the reader (and check ``marker_due``)
PUSH_IGNORE = 0  # drop (a duplicate)
PUSH_GAP = 2  # out of order: recreate the consumer
PUSH_HEARTBEAT = 3  # idle heartbeat (activity only)
PUSH_FLOW_CONTROL = 4  # flow-control request (answered through ``fc_ready``)
PUSH_STATUS = 5  # another status (409 consumer deleted...): recreate an ordered consumer / report


class PushState:
    """The state of one push consumer as the reader sees it.

    ``ordered``: deliveries (:meth:`on_data`) are checked against the consumer sequence
    (ADR-17); the stream sequence of the last in-order one is where a recreated
    consumer resumes. Otherwise every delivery is data (a plain push subscription).

    *Flow control*: a ``100 FlowControl Request`` is answered only once the reader
    has taken every message that arrived before it (:meth:`consumed` returns the reply
    subject when it is time), so a slow reader holds the server back instead of
    growing a queue without bound.

    *Initial values* (``marker=True``): the marker (a watcher's ``None``; the end of an
    object's chunks) is due exactly once, when the messages that were pending when the
    consumer was made have all arrived: when a delivery's ``num_pending`` is 0, or when
    as many messages arrived as the consumer's info (``num_pending`` + already
    delivered) announced, or at once when that info says nothing is pending and
    nothing was delivered (an empty bucket). With ``initial=False`` (updates only)
    there are no initial values: the marker is due at once. ``marker=False``: never.
    An idle heartbeat (not a stalled one) before that also completes them: what was
    pending and never came was removed meanwhile (expired, purged, deleted).
    """

    __slots__ = (
        "cursor",
        "fc_answered",
        "fc_mark",
        "fc_reply",
        "init_done",
        "init_total",
        "last_pending",
        "marker_due",
        "ordered",
        "queued",
        "received",
        "taken",
    )

    def __init__(self, initial: bool = True, ordered: bool = True, marker: bool = True) -> None:
        self.cursor = OrderedCursor()
        self.ordered = ordered
        self.received = 0  # data messages received (in order, all consumers)
        self.queued = 0  # messages handed to the reader (= received)
        self.taken = 0  # messages the reader took
        self.fc_reply: str | None = None
        self.fc_mark = 0
        self.fc_answered = 0
        self.init_done = not (initial and marker)
        self.init_total: int | None = None
        self.marker_due = marker and not initial
        self.last_pending: int | None = None

    # -- consumer life ---------------------------------------------------------------
    def new_consumer(self) -> int:
        """A consumer is being (re)created; returns its serial. A pending flow-control
        request belonged to the old one and is forgotten."""
        self.fc_reply = None
        return self.cursor.new_consumer()

    def on_created(self, num_pending: int, delivered: int) -> bool:
        """The first consumer's creation answer arrived (deliveries may have come before
        it). Returns True when the initial-values marker becomes due now."""
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
    def on_data(self, reply: str | None) -> tuple[int, int]:
        """A data message with ack subject ``reply``: ``(PUSH_DATA | PUSH_GAP | PUSH_IGNORE,
        num_pending)``. After PUSH_DATA, ``marker_due`` tells whether the initial
        values are now complete."""
        if not self.ordered:
            self.received += 1
            self.queued += 1
            return PUSH_DATA, 0
        if not reply:
            return PUSH_IGNORE, 0
        try:
            f = _parse_fields(reply)
        except Exception:
            return PUSH_IGNORE, 0
        pending = f[8]
        ok = self.cursor.take(f[5], f[6])
        if not ok:
            return (PUSH_IGNORE if ok is None else PUSH_GAP), pending
        self.received += 1
        self.queued += 1
        self.last_pending = pending
        if not self.init_done and (pending == 0 or (self.init_total is not None and self.received >= self.init_total)):
            self._done()
        return PUSH_DATA, pending

    def on_status(self, headers: Headers, reply: str | None) -> int:
        """A status message: heartbeat, flow control or something else (that ends an
        ordered consumer). A heartbeat whose ``Nats-Last-Consumer`` shows deliveries
        we never saw is a gap (ordered)."""
        status = headers.status
        if status == "100":
            if reply and classify_status(status, headers.description) == S_FLOW_CONTROL:
                self.fc_reply = reply
                self.fc_mark = self.queued
                return PUSH_FLOW_CONTROL
            if self.ordered and self.cursor.hb_gap(headers):
                return PUSH_GAP
            if not self.init_done and self.init_total is not None and headers.get(HDR_CONSUMER_STALLED) is None:
                # idle with the initial values incomplete: some of what was pending went
                # (a TTL expired, a purge, a delete) before it could be delivered; the
                # consumer has nothing more, so they are complete
                self._done()
            return PUSH_HEARTBEAT
        return PUSH_STATUS

    def stalled_reply(self, headers: Headers | None) -> str | None:
        """A heartbeat's ``Nats-Consumer-Stalled`` subject (answer it at once), or None."""
        return headers.get(HDR_CONSUMER_STALLED) if headers is not None else None

    def fc_ready(self) -> str | None:
        """The flow-control reply to send now (the reader caught up with it), or None."""
        reply = self.fc_reply
        if reply is not None and self.taken >= self.fc_mark:
            self.fc_reply = None
            self.fc_answered += 1
            return reply
        return None

    def consumed(self, n: int = 1) -> str | None:
        """The reader took ``n`` messages; returns a flow-control reply to send, if due."""
        self.taken += n
        if self.fc_reply is None:
            return None
        return self.fc_ready()
