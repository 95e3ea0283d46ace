"""Sans-IO state of JetStream consumers (ADR-37 pull, ADR-9/15 heartbeats and flow
control, ADR-17 ordered consumers). No sockets, loops, threads or clocks: the flavour
code (``jetwire/aio/consumer.py`` and its generated twin) moves messages, waits and
passes ``now`` in; everything that decides lives here and is unit-tested alone.

Pieces:

* :class:`ConsumeOptions` / :func:`consume_options` / :func:`fetch_heartbeat`: option
  defaults and validation (expires >= 1 s, heartbeat = expires/2 within [0.5 s, 30 s],
  50 % thresholds, ``max_messages`` xor ``max_bytes``).
* :func:`pull_request` builds the JSON body of ``CONSUMER.MSG.NEXT``;
  :func:`priority_fields` checks and builds its priority-group part (ADR-42).
* :func:`classify_status` sorts a status message (100, 404, 408, 409 ..., 503) into
  what a consumer does with it; :func:`status_error` gives the error to report; :func:`gone_error` says what is gone
  when a lookup after a 503 fails.
* :class:`PullState`: pending message/byte accounting and refill decisions (and
  :func:`oversize_error` when the next message can never fit a pull's ``max_bytes``).
* :class:`HeartbeatMonitor`: missed-heartbeat detection from an activity counter.
* :class:`OrderedCursor` and :func:`ordered_config`: ordered-consumer bookkeeping.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from .. import _impl
from ..errors import (
    BadRequestError,
    ConsumerDeletedError,
    ConsumerGoneError,
    ConsumerIsPushBasedError,
    ConsumerNotFoundError,
    InvalidOptionError,
    NoRespondersError,
    PinIdMismatchError,
    PullStatusError,
    StreamNotFoundError,
)
from ._json import JSONObject

if TYPE_CHECKING:
    from ..msg import Msg
    from ..protocol.headers import Headers

__all__ = [
    "ACK_HOLD",
    "BATCH_BYTES_ONLY",
    "DEFAULT_EXPIRES",
    "DEFAULT_MAX_MESSAGES",
    "GONE_ERRORS",
    "MAX_HEARTBEAT",
    "MIN_EXPIRES",
    "MIN_HEARTBEAT",
    "OVERSIZE_RETRY",
    "PIN_ID_HDR",
    "RESET_DELAY",
    "RESET_DELAY_MAX",
    "S_END",
    "S_FLOW_CONTROL",
    "S_HEARTBEAT",
    "S_NO_RESPONDERS",
    "S_PENDING",
    "S_PIN_RESET",
    "S_RESET",
    "S_TERMINAL",
    "S_USER",
    "S_WARN",
    "ConsumeOptions",
    "ConsumerIsPushBasedError",
    "HeartbeatMonitor",
    "OrderedCursor",
    "PullState",
    "PullStatusError",
    "classify_status",
    "consume_options",
    "fetch_heartbeat",
    "gone_error",
    "msg_size",
    "ordered_config",
    "oversize_error",
    "parse_pending",
    "priority_fields",
    "pull_request",
    "status_error",
]

DEFAULT_MAX_MESSAGES = 500
DEFAULT_EXPIRES = 30.0
BATCH_BYTES_ONLY = 1_000_000
MIN_EXPIRES = 1.0
MIN_HEARTBEAT = 0.5
MAX_HEARTBEAT = 30.0
# fetch/next: without an explicit heartbeat, pulls of 10 s or more get a 5 s heartbeat
FETCH_HB_MIN_EXPIRES = 10.0
FETCH_DEFAULT_HB = 5.0
ORDERED_DEFAULT_HB = 5.0
# a fetch's acks made while more of its batch is due leave together, at most this many
# seconds after the first (or when the batch ends): one write for many acks, not one small
# write per read (on 16 cores row f2, 1.6x the rate, a third of the CPU per message)
ACK_HOLD = 0.002
# ordered consumers: backoff between attempts to recreate the consumer (doubling)
RESET_DELAY = 0.25
RESET_DELAY_MAX = 2.0
# consume()/messages() with max_bytes: while every pull is refused because the next message
# is larger than max_bytes (PullState.oversized), pulls go out again no sooner than this
# (or the heartbeat interval, when shorter: heartbeats are not missed meanwhile), not at once
OVERSIZE_RETRY = 1.0

HDR_PENDING_MSGS = "Nats-Pending-Messages"
HDR_PENDING_BYTES = "Nats-Pending-Bytes"
HDR_LAST_CONSUMER = "Nats-Last-Consumer"
HDR_CONSUMER_STALLED = "Nats-Consumer-Stalled"
# priority groups (ADR-42): the pinned client's id, on every message it is delivered
PIN_ID_HDR = "Nats-Pin-Id"
MAX_PULL_PRIORITY = 9


# ---------------------------------------------------------------------------------
# options


@dataclass
class ConsumeOptions:
    """Validated settings of a continuous pull (``consume()``/``messages()``).

    ``max_bytes`` is 0 when the pull is limited by message count only. Durations are
    float seconds; ``heartbeat`` 0 disables idle heartbeats.
    """

    max_messages: int
    max_bytes: int
    expires: float
    heartbeat: float
    threshold_messages: int
    threshold_bytes: int
    stop_after: int = 0


def consume_options(max_messages: int | None = None, max_bytes: int | None = None,
                    expires: float | None = None, threshold_messages: int | None = None,
                    threshold_bytes: int | None = None, heartbeat: float | None = None,
                    stop_after: int | None = None, ordered: bool = False) -> ConsumeOptions:
    """Apply ADR-37 defaults and checks; raise ``ValueError`` on bad combinations.

    * ``max_messages`` and ``max_bytes`` are mutually exclusive (``max_messages`` at its
      default, 500, counts as not given); with bytes only the batch is 1,000,000
      messages. Default 500 messages.
    * ``expires`` defaults to 30 s and must be at least 1 s.
    * ``heartbeat`` defaults to expires/2 capped at 30 s (ordered consumers: 5 s, or
      expires/2 when expires < 10 s); an explicit one must be within [0.5 s, 30 s]
      and at most half of ``expires``.
    * thresholds default to 50 % (rounded up) and are clamped to the maximum.
    """
    if max_bytes is not None and max_messages == DEFAULT_MAX_MESSAGES:
        max_messages = None  # the signature's default: only max_bytes was asked for
    if max_messages is not None and max_bytes is not None:
        raise InvalidOptionError("only one of max_messages and max_bytes can be specified")
    if max_bytes is not None:
        if max_bytes <= 0:
            raise InvalidOptionError("max_bytes must be positive")
        batch = BATCH_BYTES_ONLY
        nbytes = int(max_bytes)
    else:
        if max_messages is not None and max_messages <= 0:
            raise InvalidOptionError("max_messages must be positive")
        batch = int(max_messages) if max_messages is not None else DEFAULT_MAX_MESSAGES
        nbytes = 0
    if expires is None:
        expires = DEFAULT_EXPIRES
    expires = float(expires)
    if expires < MIN_EXPIRES:
        raise InvalidOptionError(f"expires must be at least {MIN_EXPIRES:g}s")
    if heartbeat is None:
        hb = (ORDERED_DEFAULT_HB if expires >= 10.0 else expires / 2) if ordered else min(expires / 2, MAX_HEARTBEAT)
    else:
        hb = float(heartbeat)
        if hb < MIN_HEARTBEAT or hb > MAX_HEARTBEAT:
            raise InvalidOptionError(f"heartbeat must be within [{MIN_HEARTBEAT:g}s, {MAX_HEARTBEAT:g}s]")
    if hb > expires / 2:
        raise InvalidOptionError("heartbeat must be at most 50% of expires")
    if threshold_messages is None or threshold_messages <= 0 or threshold_messages > batch:
        tm = math.ceil(batch / 2)
    else:
        tm = int(threshold_messages)
    if threshold_bytes is None or threshold_bytes <= 0 or threshold_bytes > nbytes:
        tb = math.ceil(nbytes / 2)
    else:
        tb = int(threshold_bytes)
    if stop_after is not None and stop_after < 0:
        raise InvalidOptionError("stop_after must not be negative")
    return ConsumeOptions(batch, nbytes, expires, hb, tm, tb, int(stop_after or 0))


def fetch_heartbeat(max_wait: float, heartbeat: float | None) -> float:
    """Heartbeat of a one-off pull: explicit, else 5 s for waits of 10 s or more, else none.
    Raises ``ValueError`` when ``max_wait`` is below twice the heartbeat."""
    if heartbeat is None:
        hb = FETCH_DEFAULT_HB if max_wait >= FETCH_HB_MIN_EXPIRES else 0.0
    else:
        hb = float(heartbeat)
        if hb < 0:
            raise InvalidOptionError("heartbeat must not be negative")
    if hb and max_wait < 2 * hb:
        raise InvalidOptionError("max_wait must be at least twice the heartbeat")
    return hb


def _ns(seconds: float) -> int:
    return round(seconds * 1e9)


def pull_request(batch: int, expires: float = 0.0, no_wait: bool = False, max_bytes: int = 0,
                 heartbeat: float = 0.0, priority: JSONObject | None = None,
                 pin_id: str | None = None) -> bytes:
    """JSON body of ``$JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>`` (ADR-13/37):
    ``{batch, expires(ns), no_wait, max_bytes, idle_heartbeat(ns)}``, zero fields left out;
    plus the priority-group fields of :func:`priority_fields` and the pinned client's
    ``id`` (ADR-42) when given."""
    if batch < 1:
        raise InvalidOptionError("batch must be at least 1")
    req: JSONObject = {"batch": int(batch)}
    if expires:
        req["expires"] = _ns(expires)
    if no_wait:
        req["no_wait"] = True
    if max_bytes:
        req["max_bytes"] = int(max_bytes)
    if heartbeat:
        req["idle_heartbeat"] = _ns(heartbeat)
    if priority:
        req.update(priority)
        if pin_id:
            req["id"] = pin_id
    return orjson.dumps(req)


def _count_option(name: str, v: object, lo: int, hi: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < lo or (hi is not None and v > hi):
        bound = f"between {lo} and {hi}" if hi is not None else f"at least {lo}"
        raise InvalidOptionError(f"{name} must be an int {bound}, not {v!r}")
    return v


def priority_fields(groups: Sequence[str] | None, group: str | None = None,
                    min_pending: int | None = None, min_ack_pending: int | None = None,
                    priority: int | None = None) -> JSONObject | None:
    """The priority-group fields of a pull (ADR-42), checked against the consumer's
    ``priority_groups``: a consumer with groups needs ``group`` (one of them) on every
    pull; a consumer without groups takes none of these options. ``min_pending`` and
    ``min_ack_pending`` (``overflow`` policy) are at least 1, ``priority``
    (``prioritized`` policy) 0-9. Returns None for a consumer without groups; raises
    ``InvalidOptionError`` (a ``ValueError``) before anything is sent."""
    if not groups:
        if group is not None or min_pending is not None or min_ack_pending is not None or priority is not None:
            what = "group" if group is not None else "min_pending/min_ack_pending/priority"
            raise InvalidOptionError(f"{what} given, but the consumer has no priority groups")
        return None
    if not group:
        raise InvalidOptionError(f"the consumer has priority groups {list(groups)!r}: pulls need group=")
    if group not in groups:
        raise InvalidOptionError(f"group {group!r} is not one of the consumer's priority groups {list(groups)!r}")
    out: JSONObject = {"group": group}
    if min_pending is not None:
        out["min_pending"] = _count_option("min_pending", min_pending, 1)
    if min_ack_pending is not None:
        out["min_ack_pending"] = _count_option("min_ack_pending", min_ack_pending, 1)
    if priority is not None:
        p = _count_option("priority", priority, 0, MAX_PULL_PRIORITY)
        if p:
            out["priority"] = p
    return out


_encode_headers = _impl.encode_headers


def msg_size(msg: Msg) -> int:
    """Size the server counts against ``max_bytes``: subject + reply + headers + payload."""
    n = len(msg.subject) + len(msg.data)
    if msg.reply:
        n += len(msg.reply)
    h = msg.headers
    if h is not None:
        n += len(_encode_headers(h))
    return n


def _int_header(h: Headers, key: str) -> int:
    v = h.get(key)
    if not v:
        return 0
    try:
        return max(0, int(v))
    except ValueError:
        return 0


def parse_pending(h: Headers | None) -> tuple[int, int]:
    """``(Nats-Pending-Messages, Nats-Pending-Bytes)`` of a status message (0 when absent)."""
    if h is None:
        return 0, 0
    return _int_header(h, HDR_PENDING_MSGS), _int_header(h, HDR_PENDING_BYTES)


# ---------------------------------------------------------------------------------
# status messages

S_USER = 0  # not a status: a message for the user
S_HEARTBEAT = 1  # 100 Idle Heartbeat: activity only
S_FLOW_CONTROL = 2  # 100 FlowControl Request (push): answer the reply subject
S_END = 3  # 404 No Messages / 408 Request Timeout / 409 Batch Completed: a pull ended (silent)
S_PENDING = 4  # 409 Message Size Exceeds MaxBytes: a pull ended short (silent, but see PullState.oversized)
S_WARN = 5  # 409 Exceeded MaxRequestBatch/Expires/MaxBytes/MaxWaiting, others: report, go on
S_RESET = 6  # 409 Leadership Change: report, forget pending pulls
S_TERMINAL = 7  # 400, 409 Consumer Deleted, 409 Consumer is push based: report and stop
S_NO_RESPONDERS = 8  # 503
S_PIN_RESET = 9  # 423 Nats-Pin-Id mismatch: forget the pin id, forget pending pulls, report, pull again


def classify_status(status: str | None, description: str | None) -> int:
    """What a consumer does with a status message (``S_*``). ``status`` None is a user message."""
    if status is None:
        return S_USER
    if status == "100":
        if description and "flowcontrol" in description.replace(" ", "").lower():
            return S_FLOW_CONTROL
        return S_HEARTBEAT
    if status == "404" or status == "408":
        return S_END
    if status == "409":
        d = (description or "").lower()
        if "consumer deleted" in d or "push based" in d:
            return S_TERMINAL
        if "message size exceeds maxbytes" in d:
            return S_PENDING
        if "batch completed" in d:
            return S_END
        if "leadership change" in d:
            return S_RESET
        return S_WARN
    if status == "400":
        return S_TERMINAL
    if status == "503":
        return S_NO_RESPONDERS
    if status == "423":  # Nats-Pin-Id mismatch / Nats-Wrong-Pin-Id (priority groups)
        return S_PIN_RESET
    return S_WARN


def status_error(status: str, description: str | None, where: str = "") -> BaseException | None:
    """The error a status reports, or None for the silent ones (100, 404, 408, size/batch 409).
    ``where`` names the consumer in the message (``"consumer 'C' of stream 'S'"``)."""
    desc = description or ""
    kind = classify_status(status, desc)
    if kind in (S_USER, S_HEARTBEAT, S_FLOW_CONTROL, S_END, S_PENDING):
        return None
    if kind == S_NO_RESPONDERS:
        on = f" on {where}" if where else ""
        return NoRespondersError(f"no responders: JetStream is not available for this pull{on}")
    if status == "400":
        return BadRequestError(code=400, err_code=None, description=desc or "Bad Request")
    low = desc.lower()
    if "consumer deleted" in low:
        return ConsumerDeletedError(f"nats: {where or 'consumer'} deleted ({status} {desc})")
    if "push based" in low:
        return ConsumerIsPushBasedError(status, desc)
    if kind == S_PIN_RESET:
        return PinIdMismatchError(status, desc or "Nats-Pin-Id mismatch")
    return PullStatusError(status, desc)


def oversize_error(status: str, description: str | None, where: str, max_bytes: int) -> PullStatusError:
    """The error reported (once) when a continuous pull's every request is refused with
    "409 Message Size Exceeds MaxBytes": the next message of ``where`` is larger than
    ``max_bytes``."""
    desc = description or "Message Size Exceeds MaxBytes"
    return PullStatusError(status, f"{desc} (the next message of {where or 'the consumer'} is larger "
                                   f"than max_bytes={max_bytes})")


# what a pull raises (never an empty batch) when its consumer or stream no longer exists
GONE_ERRORS = (ConsumerNotFoundError, ConsumerDeletedError, StreamNotFoundError)


def gone_error(lookup: BaseException, stream: str, consumer: str) -> BaseException | None:
    """A pull was answered 503 (nobody listens on its subject) and looking the consumer up
    failed with ``lookup``: the error naming what is gone (``ConsumerGoneError``, which is
    both ``ConsumerNotFoundError`` and ``ConsumerDeletedError``, or
    ``StreamNotFoundError``), or None when ``lookup`` says neither is gone."""
    where = f"consumer {consumer!r} of stream {stream!r}"
    if isinstance(lookup, StreamNotFoundError):
        return StreamNotFoundError(lookup.code, lookup.err_code,
                                   f"stream {stream!r} no longer exists (pull of {where})")
    if isinstance(lookup, ConsumerNotFoundError):
        return ConsumerGoneError(lookup.code, lookup.err_code, f"{where} no longer exists")
    return None


# ---------------------------------------------------------------------------------
# pending accounting


class PullState:
    """Pending message/byte accounting of a continuous pull (ADR-37).

    ``pending_msgs``/``pending_bytes`` count what was asked for and not yet handed to
    the user. The consumer's delivery loop decrements them for every message it hands
out (inline: it is the per-message path); a status
    carrying ``Nats-Pending-Messages``/``-Bytes`` gives back what a pull will not
    deliver (:meth:`on_status_pending`). When a count falls below its threshold,
    :meth:`next_pull` asks for the difference and counts it pending again.
    """

    __slots__ = (
        "delivered",
        "expires",
        "heartbeat",
        "max_bytes",
        "max_messages",
        "pending_bytes",
        "pending_msgs",
        "priority",
        "stop_after",
        "threshold_bytes",
        "threshold_messages",
    )

    def __init__(self, opts: ConsumeOptions) -> None:
        self.max_messages = opts.max_messages
        self.max_bytes = opts.max_bytes
        self.threshold_messages = opts.threshold_messages
        self.threshold_bytes = opts.threshold_bytes
        self.expires = opts.expires
        self.heartbeat = opts.heartbeat
        self.stop_after = opts.stop_after
        self.pending_msgs = 0
        self.pending_bytes = 0
        self.delivered = 0
        # the priority-group fields of every pull (priority_fields), None without groups
        self.priority: JSONObject | None = None

    # -- counting --------------------------------------------------------------------
    def on_status_pending(self, msgs: int, nbytes: int) -> None:
        """A pull ended with ``msgs``/``nbytes`` it will never deliver."""
        self.pending_msgs -= msgs
        if self.pending_msgs < 0:
            self.pending_msgs = 0
        if self.max_bytes:
            self.pending_bytes -= nbytes
            if self.pending_bytes < 0:
                self.pending_bytes = 0

    def oversized(self, nbytes_left: int) -> bool:
        """A "409 Message Size Exceeds MaxBytes" gave back ``nbytes_left`` bytes of its pull:
        True when that pull asked for the whole ``max_bytes`` and got nothing, so the next
        message is larger than ``max_bytes`` and every pull is refused alike (a refill
        asks for less and may end so while the next message would fit a whole pull)."""
        return self.max_bytes > 0 and nbytes_left >= self.max_bytes

    def oversize_retry(self) -> float:
        """Seconds to wait before pulling again after :meth:`oversized`."""
        hb = self.heartbeat
        return min(OVERSIZE_RETRY, hb) if hb > 0 else OVERSIZE_RETRY

    def clear_pending(self) -> None:
        """Forget every outstanding pull (missed heartbeats, reconnect, leadership change)."""
        self.pending_msgs = 0
        self.pending_bytes = 0

    # -- refills ---------------------------------------------------------------------
    def needs_pull(self) -> bool:
        """Cheap test: below a threshold?"""
        return self.pending_msgs < self.threshold_messages or (
            self.max_bytes != 0 and self.pending_bytes < self.threshold_bytes)

    def next_pull(self) -> tuple[int, int] | None:
        """``(batch, max_bytes)`` of the pull to send now (counted pending), or None."""
        if not self.needs_pull():
            return None
        if self.max_bytes:
            batch = self.max_messages
            nbytes = self.max_bytes - self.pending_bytes
            if nbytes <= 0:
                return None
        else:
            batch = self.max_messages - self.pending_msgs
            nbytes = 0
        if self.stop_after:
            batch = min(batch, self.stop_after - self.delivered - self.pending_msgs)
        if batch <= 0:
            return None
        self.pending_msgs += batch
        self.pending_bytes += nbytes
        return batch, nbytes

    def request(self, batch: int, nbytes: int, pin_id: str | None = None) -> bytes:
        """JSON body for a pull of ``batch``/``nbytes`` with this state's expires,
        heartbeat and priority-group fields (and ``pin_id`` with those)."""
        return pull_request(batch, self.expires, False, nbytes, self.heartbeat, self.priority, pin_id)


# ---------------------------------------------------------------------------------
# heartbeats


class HeartbeatMonitor:
    """Missed-heartbeat detection without a per-message clock read.

    The receiving side only increments an activity counter; :meth:`poll` compares it
    with the last value seen. No change for ``factor`` x ``interval`` seconds means the
    heartbeats stopped. While :meth:`pause`\\ d (disconnected), nothing is missed.
    """

    __slots__ = ("_count", "_since", "factor", "interval", "paused")

    def __init__(self, interval: float, now: float, factor: float = 2.0) -> None:
        self.interval = interval
        self.factor = factor
        self._count = -1
        self._since = now
        self.paused = False

    @property
    def enabled(self) -> bool:
        return self.interval > 0

    @property
    def window(self) -> float:
        return self.interval * self.factor

    def reset(self, now: float, count: int | None = None) -> None:
        """Start a fresh window at ``now``."""
        self._since = now
        if count is not None:
            self._count = count

    def pause(self) -> None:
        self.paused = True

    def resume(self, now: float) -> None:
        self.paused = False
        self._since = now

    def poll(self, now: float, count: int) -> bool:
        """True once per silent window: heartbeats were missed (the window restarts)."""
        if self.interval <= 0:
            return False
        if count != self._count:
            self._count = count
            self._since = now
            return False
        if self.paused:
            self._since = now
            return False
        if now - self._since >= self.window:
            self._since = now
            return True
        return False

    def check(self, now: float, count: int, connected: bool) -> bool:
        """:meth:`poll` that pauses while the connection is down and starts a fresh
        window once it is up again: True once per silent window."""
        if not connected:
            self.paused = True
            return False
        if self.paused:
            self.resume(now)
        return self.poll(now, count)

    def wait_time(self, now: float) -> float | None:
        """Seconds until the current window could expire (None when disabled or paused)."""
        if self.interval <= 0 or self.paused:
            return None
        return max(0.0, self._since + self.window - now)


# ---------------------------------------------------------------------------------
# ordered consumers (ADR-17)


class OrderedCursor:
    """Last stream and consumer sequence delivered to the user by an ordered consumer.

    A message is next in order when its consumer sequence is one past the last delivered;
    anything else is a gap (or a stale message) and the consumer must be recreated at
    ``stream_seq + 1``. The cursor only moves in :meth:`take` (or :meth:`advance`),
    called for messages actually handed on.
    """

    __slots__ = ("consumer_seq", "serial", "stream_seq")

    def __init__(self) -> None:
        self.stream_seq = 0
        self.consumer_seq = 0
        self.serial = 0

    def in_order(self, consumer_seq: int) -> bool:
        return consumer_seq == self.consumer_seq + 1

    def advance(self, stream_seq: int, consumer_seq: int) -> None:
        self.stream_seq = stream_seq
        self.consumer_seq = consumer_seq

    def take(self, stream_seq: int, consumer_seq: int) -> bool | None:
        """A delivery with these sequences: True when it is next in order (the cursor
        moves), False on a gap (deliveries went missing), None when it is stale (a
        duplicate of one already taken)."""
        if consumer_seq == self.consumer_seq + 1:
            self.advance(stream_seq, consumer_seq)
            return True
        if consumer_seq <= self.consumer_seq:
            return None
        return False

    def new_consumer(self) -> int:
        """A consumer is being (re)created: consumer sequences restart; returns its serial."""
        self.consumer_seq = 0
        self.serial += 1
        return self.serial

    def hb_gap(self, h: Headers | None) -> bool:
        """A heartbeat's ``Nats-Last-Consumer`` says messages we never saw were delivered."""
        if h is None:
            return False
        v = h.get(HDR_LAST_CONSUMER)
        if not v:
            return False
        try:
            last = int(v)
        except ValueError:
            return False
        return last != self.consumer_seq


def _enum(v: object) -> object:
    return getattr(v, "value", v)


def ordered_config(name: str, cursor: OrderedCursor, filter_subjects: str | Sequence[str] | None = None,
                   deliver_policy: Any = "all", opt_start_seq: int | None = None,
                   opt_start_time: str | None = None, replay_policy: Any = "instant",
                   inactive_threshold: float | None = 300.0, headers_only: bool = False,
                   deliver_subject: str | None = None, idle_heartbeat: float | None = None,
                   flow_control: bool = False, metadata: dict[str, str] | None = None) -> JSONObject:
    """Wire config (a JSON dict) of the next consumer of an ordered consumer.

    Forced: ephemeral, ack none, max_deliver 1, memory storage, one replica. The first
    consumer honours the requested deliver policy; once something was delivered,
    every new one starts at ``cursor.stream_seq + 1``. ``opt_start_time`` is an
    RFC 3339 string here.
    """
    cfg: JSONObject = {
        "name": name,
        "ack_policy": "none",
        "max_deliver": 1,
        "mem_storage": True,
        "num_replicas": 1,
        "replay_policy": _enum(replay_policy) or "instant",
    }
    if inactive_threshold:
        cfg["inactive_threshold"] = _ns(inactive_threshold)
    if headers_only:
        cfg["headers_only"] = True
    if metadata:
        cfg["metadata"] = dict(metadata)
    if deliver_subject:
        cfg["deliver_subject"] = deliver_subject
    if idle_heartbeat:
        cfg["idle_heartbeat"] = _ns(idle_heartbeat)
    if flow_control:
        cfg["flow_control"] = True
    subjects: list[str]
    if filter_subjects is None:
        subjects = []
    elif isinstance(filter_subjects, str):
        subjects = [filter_subjects] if filter_subjects else []
    else:
        subjects = [s for s in filter_subjects if s]
    if len(subjects) == 1:
        cfg["filter_subject"] = subjects[0]
    elif subjects:
        cfg["filter_subjects"] = subjects
    if cursor.stream_seq:
        cfg["deliver_policy"] = "by_start_sequence"
        cfg["opt_start_seq"] = cursor.stream_seq + 1
        return cfg
    policy = _enum(deliver_policy) or "all"
    cfg["deliver_policy"] = policy
    if policy == "by_start_sequence":
        cfg["opt_start_seq"] = int(opt_start_seq or 1)
    elif policy == "by_start_time":
        if not opt_start_time:
            raise InvalidOptionError("deliver_policy by_start_time needs opt_start_time")
        cfg["opt_start_time"] = opt_start_time
    elif opt_start_seq:
        cfg["deliver_policy"] = "by_start_sequence"
        cfg["opt_start_seq"] = int(opt_start_seq)
    elif opt_start_time:
        cfg["deliver_policy"] = "by_start_time"
        cfg["opt_start_time"] = opt_start_time
    if policy == "last_per_subject" and not subjects:
        cfg["filter_subjects"] = [">"]
    return cfg
