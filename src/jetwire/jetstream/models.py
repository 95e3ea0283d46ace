"""JetStream configuration and information types (dataclasses) and their enums.

Field names are the server's JSON names (see the JetStream JSON schemas); durations
are float seconds (nanoseconds on the wire), times are aware ``datetime`` objects,
base64 fields are decoded. Every model has ``from_json(dict_or_bytes)``,
``to_json_dict()`` (alias ``as_dict()``) and ``to_json()``; unknown JSON fields are
kept in ``_extra`` and written back. See :mod:`jetwire.jetstream._json` for the rules.

Config types (``StreamConfig``, ``ConsumerConfig`` and the small types nested in them)
leave out of their JSON whatever the user did not set, so the server applies its own
defaults; their dataclass defaults are the server's defaults, so values read back from
the server look the same as freshly built ones.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar, Self, TypeAlias

import orjson

from jetwire.errors import InvalidJSONError, api_error
from jetwire.jetstream._json import JSONObject, Model, config_from_kwargs, duration, jfield  # noqa: F401

if TYPE_CHECKING:
    from jetwire.protocol.headers import Headers

    HeadersOrNone: TypeAlias = Headers | None
else:
    # the hint of a headers field (any model's): what the models' reader and jetwire.schemas
    # resolve it to at run time (the field's kind converts it); Headers is not imported
    # here: it loads the protocol package
    HeadersOrNone = Any

__all__ = [
    "APIErrorInfo",
    "APIStats",
    "AccountInfo",
    "AccountLimits",
    "AckPolicy",
    "BatchAck",
    "ClusterInfo",
    "ConsumerConfig",
    "ConsumerInfo",
    "ConsumerLimits",
    "DeliverPolicy",
    "DiscardPolicy",
    "ExternalStream",
    "LostStreamData",
    "PeerInfo",
    "PersistMode",
    "Placement",
    "PriorityGroupState",
    "PriorityPolicy",
    "PubAck",
    "RawStreamMsg",
    "RePublish",
    "ReplayPolicy",
    "RetentionPolicy",
    "SequenceInfo",
    "StorageType",
    "StoreCompression",
    "StreamAlternate",
    "StreamConfig",
    "StreamConsumerLimits",
    "StreamConsumerSource",
    "StreamInfo",
    "StreamSource",
    "StreamSourceInfo",
    "StreamState",
    "SubjectTransformConfig",
    "Tier",
]
# ``__all__`` lists the public types (re-exported by ``jetwire``); the helpers
# ``check_api_error`` and ``loads_api`` are imported from this module directly.


# ---------------------------------------------------------------------------------
# enums: str enums whose values are the wire strings


class _WireEnum(StrEnum):
    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


class AckPolicy(_WireEnum):
    NONE = "none"
    ALL = "all"
    EXPLICIT = "explicit"
    FLOW_CONTROL = "flow_control"


class DeliverPolicy(_WireEnum):
    ALL = "all"
    LAST = "last"
    NEW = "new"
    BY_START_SEQUENCE = "by_start_sequence"
    BY_START_TIME = "by_start_time"
    LAST_PER_SUBJECT = "last_per_subject"

    @classmethod
    def _missing_(cls, value: object) -> Self | None:
        return cls.ALL if value == "undefined" else None


class ReplayPolicy(_WireEnum):
    INSTANT = "instant"
    ORIGINAL = "original"


class RetentionPolicy(_WireEnum):
    LIMITS = "limits"
    INTEREST = "interest"
    WORK_QUEUE = "workqueue"


class DiscardPolicy(_WireEnum):
    OLD = "old"
    NEW = "new"

    @classmethod
    def _missing_(cls, value: object) -> Self | None:
        if isinstance(value, str) and value.lower() in ("old", "new"):
            return cls(value.lower())
        return None


class StorageType(_WireEnum):
    FILE = "file"
    MEMORY = "memory"


class StoreCompression(_WireEnum):
    NONE = "none"
    S2 = "s2"


class PriorityPolicy(_WireEnum):
    """Consumer priority policy. ``NONE`` is never sent (the server's default);
    ``"none"`` from the server reads as ``NONE``."""

    NONE = ""
    OVERFLOW = "overflow"
    PINNED = "pinned_client"
    PRIORITIZED = "prioritized"

    @classmethod
    def _missing_(cls, value: object) -> Self | None:
        return cls.NONE if value == "none" else None


class PersistMode(_WireEnum):
    DEFAULT = "default"
    ASYNC = "async"

    @classmethod
    def _missing_(cls, value: object) -> Self | None:
        if value == "":
            return cls.DEFAULT
        if isinstance(value, str) and value.lower() in ("default", "async"):
            return cls(value.lower())
        return None


# ---------------------------------------------------------------------------------
# small config types


@dataclass
class Placement(Model):
    """Where replicas of a stream go (cluster and/or server tags)."""

    _omit_defaults: ClassVar[bool] = True
    cluster: str | None = None
    tags: list[str] | None = None
    preferred: str | None = None


@dataclass
class SubjectTransformConfig(Model):
    _omit_defaults: ClassVar[bool] = True
    src: str | None = None
    dest: str | None = None


@dataclass
class RePublish(Model):
    """Republish stored messages from subjects matching ``src`` to ``dest``."""

    _omit_defaults: ClassVar[bool] = True
    src: str | None = None
    dest: str | None = None
    headers_only: bool = False


@dataclass
class ExternalStream(Model):
    """A stream in another account or domain: ``api`` is its ``$JS.<domain>.API``-style prefix."""

    _omit_defaults: ClassVar[bool] = True
    api: str | None = None
    deliver: str | None = None


@dataclass
class StreamConsumerSource(Model):
    _omit_defaults: ClassVar[bool] = True
    name: str | None = None
    deliver_subject: str | None = None


@dataclass
class StreamSource(Model):
    """A mirror or source of a stream. ``domain`` (not on the wire) is a shortcut that
    sets ``external`` to ``$JS.<domain>.API``; giving both is an ``InvalidOptionError``
    (nats.go: "domain and external are both set")."""

    _omit_defaults: ClassVar[bool] = True
    name: str | None = None
    opt_start_seq: int | None = None
    opt_start_time: datetime | None = None
    filter_subject: str | None = None
    subject_transforms: list[SubjectTransformConfig] | None = None
    external: ExternalStream | None = None
    consumer: StreamConsumerSource | None = None
    domain: str | None = jfield(None, skip=True)

    def _json_out(self, d: JSONObject) -> JSONObject:
        if self.domain:
            if "external" in d:
                from ..errors import InvalidOptionError

                raise InvalidOptionError(f"stream source {self.name!r}: domain and external are both set")
            d["external"] = {"api": f"$JS.{self.domain}.API"}
        return d


@dataclass
class StreamConsumerLimits(Model):
    """Limits/defaults for the consumers of a stream."""

    _omit_defaults: ClassVar[bool] = True
    inactive_threshold: float | None = duration()
    max_ack_pending: int | None = None


ConsumerLimits = StreamConsumerLimits


# ---------------------------------------------------------------------------------
# streams


@dataclass
class StreamConfig(Model):
    """Configuration of a stream (``stream_configuration`` in the schema).

    Defaults are the server's: unset limits are -1 (unlimited), ``max_age`` 0
    (forever), ``duplicate_window`` ``None`` (the server picks 2 minutes, or
    ``max_age`` when shorter). Only what differs from these is sent.
    """

    _omit_defaults: ClassVar[bool] = True
    name: str | None = None
    description: str | None = None
    subjects: list[str] | None = None
    retention: RetentionPolicy = RetentionPolicy.LIMITS
    max_consumers: int = -1
    max_msgs: int = -1
    max_bytes: int = -1
    discard: DiscardPolicy = DiscardPolicy.OLD
    discard_new_per_subject: bool = False
    max_age: float = duration(0.0)
    max_msgs_per_subject: int = -1
    max_msg_size: int = -1
    storage: StorageType = StorageType.FILE
    num_replicas: int = 1
    no_ack: bool = False
    template_owner: str | None = None
    duplicate_window: float | None = duration()
    placement: Placement | None = None
    mirror: StreamSource | None = None
    sources: list[StreamSource] | None = None
    sealed: bool = False
    deny_delete: bool = False
    deny_purge: bool = False
    allow_rollup_hdrs: bool = False
    allow_direct: bool = False
    mirror_direct: bool = False
    republish: RePublish | None = None
    subject_transform: SubjectTransformConfig | None = None
    compression: StoreCompression = StoreCompression.NONE
    first_seq: int | None = None
    metadata: dict[str, str] | None = None
    consumer_limits: StreamConsumerLimits | None = None
    allow_msg_ttl: bool = False
    subject_delete_marker_ttl: float | None = duration()
    allow_msg_counter: bool = False
    allow_atomic: bool = False
    allow_msg_schedules: bool = False
    persist_mode: PersistMode | None = None
    allow_batched: bool = False


@dataclass
class LostStreamData(Model):
    msgs: list[int] | None = None
    bytes: int = 0


@dataclass
class StreamState(Model):
    """State of a stream. ``first_ts``/``last_ts`` are ``None`` for an empty stream."""

    messages: int = 0
    bytes: int = 0
    first_seq: int = 0
    first_ts: datetime | None = None
    last_seq: int = 0
    last_ts: datetime | None = None
    consumer_count: int = 0
    deleted: list[int] | None = None
    num_deleted: int = 0
    num_subjects: int = 0
    subjects: dict[str, int] | None = None
    lost: LostStreamData | None = None


@dataclass
class PeerInfo(Model):
    name: str = ""
    current: bool = False
    active: float = duration(0.0)
    offline: bool = False
    lag: int = 0
    peer: str | None = None


@dataclass
class ClusterInfo(Model):
    name: str | None = None
    leader: str | None = None
    replicas: list[PeerInfo] | None = None
    leader_since: datetime | None = None
    raft_group: str | None = None
    system_account: bool = False
    traffic_account: str | None = None


@dataclass
class APIErrorInfo(Model):
    """An ``api_error`` object inside an info (e.g. a failing source)."""

    code: int = 0
    err_code: int | None = None
    description: str | None = None


@dataclass
class StreamSourceInfo(Model):
    """State of a mirror or source. ``active`` is seconds since the last activity,
    ``None`` when there has been none."""

    name: str = ""
    lag: int = 0
    active: float | None = jfield(None, kind="duration", negative_none=True)
    filter_subject: str | None = None
    subject_transforms: list[SubjectTransformConfig] | None = None
    external: ExternalStream | None = None
    error: APIErrorInfo | None = None


@dataclass
class StreamAlternate(Model):
    name: str = ""
    cluster: str | None = None
    domain: str | None = None


@dataclass
class StreamInfo(Model):
    config: StreamConfig = field(default_factory=StreamConfig)
    created: datetime | None = None
    state: StreamState = field(default_factory=StreamState)
    cluster: ClusterInfo | None = None
    mirror: StreamSourceInfo | None = None
    sources: list[StreamSourceInfo] | None = None
    alternates: list[StreamAlternate] | None = None
    domain: str | None = None
    ts: datetime | None = None


# ---------------------------------------------------------------------------------
# consumers


class Flag(int):
    """A yes/no answer (``is_pull`` and friends) that reads as a bool property and can
    also be called, jsm.go style: ``cfg.is_pull`` and ``cfg.is_pull()`` both work;
    ``==``, ``not`` and ``bool()`` behave as with ``True``/``False``."""

    def __new__(cls, value: object) -> Flag:
        return super().__new__(cls, 1 if value else 0)

    def __call__(self) -> bool:
        return bool(self)

    def __repr__(self) -> str:
        return "True" if self else "False"

    __str__ = __repr__


class _ConsumerKind:
    """``is_pull``/``is_push``/``is_durable``/``is_sampled`` of a consumer config (mixin)."""

    def _kind_config(self) -> ConsumerConfig:
        raise NotImplementedError

    @property
    def is_pull(self) -> Flag:
        """A pull consumer (no ``deliver_subject``)."""
        return Flag(not self._kind_config().deliver_subject)

    @property
    def is_push(self) -> Flag:
        """A push consumer (with a ``deliver_subject``)."""
        return Flag(bool(self._kind_config().deliver_subject))

    @property
    def is_durable(self) -> Flag:
        """A durable consumer (``durable_name`` set)."""
        return Flag(bool(self._kind_config().durable_name))

    @property
    def is_sampled(self) -> Flag:
        """Acks are sampled into consumer-ack metrics (``sample_freq`` set)."""
        return Flag(bool(self._kind_config().sample_freq))


@dataclass
class SequenceInfo(Model):
    consumer_seq: int = 0
    stream_seq: int = 0
    last_active: datetime | None = None


@dataclass
class PriorityGroupState(Model):
    group: str = ""
    pinned_client_id: str | None = None
    pinned_ts: datetime | None = None


@dataclass
class ConsumerConfig(_ConsumerKind, Model):
    """Configuration of a consumer (``consumer_configuration`` in the schema).

    ``ack_policy`` defaults to ``EXPLICIT`` and is always sent. Other fields left at
    their defaults are not sent: the server fills them in (``ack_wait`` 30 s,
    ``max_deliver`` -1, ``max_waiting`` 512 for pull consumers, ``max_ack_pending``
    1000, ...), and :meth:`ConsumerInfo.config` then shows the real values.
    """

    _omit_defaults: ClassVar[bool] = True
    name: str | None = None
    durable_name: str | None = None
    description: str | None = None
    deliver_policy: DeliverPolicy = DeliverPolicy.ALL
    opt_start_seq: int | None = None
    opt_start_time: datetime | None = None
    ack_policy: AckPolicy = jfield(AckPolicy.EXPLICIT, always=True)
    ack_wait: float | None = duration()
    max_deliver: int | None = None
    backoff: list[float] | None = duration()
    filter_subject: str | None = None
    filter_subjects: list[str] | None = None
    replay_policy: ReplayPolicy = ReplayPolicy.INSTANT
    rate_limit_bps: int | None = None
    sample_freq: str | None = None
    max_waiting: int | None = None
    max_ack_pending: int | None = None
    flow_control: bool = False
    idle_heartbeat: float | None = duration()
    headers_only: bool = False
    max_batch: int | None = None
    max_expires: float | None = duration()
    max_bytes: int | None = None
    inactive_threshold: float | None = duration()
    num_replicas: int | None = None
    mem_storage: bool = False
    metadata: dict[str, str] | None = None
    deliver_subject: str | None = None
    deliver_group: str | None = None
    pause_until: datetime | None = None
    priority_policy: PriorityPolicy | None = None
    priority_groups: list[str] | None = None
    priority_timeout: float | None = duration()

    def _kind_config(self) -> ConsumerConfig:
        return self


@dataclass
class ConsumerInfo(_ConsumerKind, Model):
    stream_name: str = ""
    name: str = ""
    created: datetime | None = None
    config: ConsumerConfig = field(default_factory=ConsumerConfig)
    delivered: SequenceInfo = field(default_factory=SequenceInfo)
    ack_floor: SequenceInfo = field(default_factory=SequenceInfo)
    num_ack_pending: int = 0
    num_redelivered: int = 0
    num_waiting: int = 0
    num_pending: int = 0
    cluster: ClusterInfo | None = None
    push_bound: bool = False
    paused: bool = False
    pause_remaining: float | None = duration()
    priority_groups: list[PriorityGroupState] | None = None
    ts: datetime | None = None

    def _kind_config(self) -> ConsumerConfig:
        return self.config


# ---------------------------------------------------------------------------------
# publish acks


def check_api_error(d: JSONObject) -> JSONObject:
    """Raise the typed :class:`~jetwire.errors.APIError` if a JetStream API answer
    carries an ``error`` object; otherwise return ``d``."""
    err = d.get("error")
    if err is not None:
        raise api_error(err)
    return d


def loads_api(raw: bytes | bytearray | memoryview | str) -> JSONObject:
    """Decode a JetStream API answer with orjson and :func:`check_api_error` it."""
    try:
        d = orjson.loads(raw)
    except orjson.JSONDecodeError:
        d = None
    if not isinstance(d, dict):
        raise InvalidJSONError(f"not a JetStream API answer (a JSON object): {_shown(raw)!r}")
    if "error" in d:
        check_api_error(d)
    return d


_loads = orjson.loads
_new = object.__new__


def _shown(raw: bytes | bytearray | memoryview | str) -> bytes:
    """The first 100 bytes of a document, for an error message."""
    return (raw.encode("utf-8", "replace") if isinstance(raw, str) else bytes(raw))[:100]


def _bad_ack(raw: bytes | bytearray | memoryview | str) -> InvalidJSONError:
    return InvalidJSONError(f"invalid JetStream publish ack: {_shown(raw)!r}", "PubAck")


@dataclass
class PubAck(Model):
    """The server's answer to a JetStream publish. ``domain`` is ``None`` when absent;
    ``batch``/``count`` are set for atomic batch publishes, ``val`` for counter streams."""

    stream: str = ""
    seq: int = 0
    duplicate: bool = False
    domain: str | None = None
    batch: str | None = None
    count: int | None = None
    val: str | None = None

    @classmethod
    def from_json_bytes(cls, raw: bytes | bytearray | memoryview | str) -> PubAck:
        """Fast path for the publish hot path: decode with orjson and fill the fields
        directly. An ``error`` answer raises the typed ``APIError`` (for instance
        ``WrongLastSequenceError``)."""
        try:
            d = _loads(raw)
        except ValueError:
            d = None
        if type(d) is not dict:
            raise _bad_ack(raw)
        if "error" in d:
            raise api_error(d["error"])
        pop = d.pop
        obj = _new(cls)
        od = obj.__dict__
        od["stream"] = stream = pop("stream", "")
        od["seq"] = seq = pop("seq", None)
        if type(stream) is not str or not stream or type(seq) is not int:
            raise _bad_ack(raw)  # not an ack (nats.go's ErrInvalidJSAck), e.g. a plain responder's reply
        od["duplicate"] = pop("duplicate", False) is True
        od["domain"] = pop("domain", None) or None
        if d:  # rarely: batch/counter fields or fields from a newer server
            od["batch"] = pop("batch", None)
            od["count"] = pop("count", None)
            od["val"] = pop("val", None)
        else:
            od["batch"] = od["count"] = od["val"] = None
        od["_extra"] = d
        return obj

    @classmethod
    def plain(cls, stream: str, seq: int) -> PubAck:
        """The ack of the usual answer ``{"stream": ..., "seq": ...}`` (the async-publish
        mux's constructor: no JSON to decode, no other field set)."""
        obj = _new(cls)
        # attribute by attribute: the instance keeps its key-sharing dict (replacing
        # __dict__ with a new dict costs twice as much)
        obj.stream = stream
        obj.seq = seq
        obj.duplicate = False
        obj.domain = None
        obj.batch = None
        obj.count = None
        obj.val = None
        obj._extra = {}
        return obj

    @classmethod
    def _json_in(cls, data: JSONObject) -> JSONObject:
        if data.get("domain") == "":
            data = {k: v for k, v in data.items() if k != "domain"}
        return data


@dataclass
class BatchAck(Model):
    """The server's answer to the commit of an atomic batch (ADR-50): ``seq`` is the
    sequence of the batch's last message (the others took the ``count - 1`` before it),
    ``batch_id`` its ``Nats-Batch-Id`` (``"batch"`` on the wire), ``count`` how many
    messages it stored. ``domain`` is ``None`` when absent, ``val`` is set for counter
    streams."""

    stream: str = ""
    seq: int = 0
    batch_id: str = jfield("", json="batch")
    count: int = 0
    domain: str | None = None
    val: str | None = None

    @classmethod
    def _json_in(cls, data: JSONObject) -> JSONObject:
        if data.get("domain") == "":
            data = {k: v for k, v in data.items() if k != "domain"}
        return data

    @property
    def first_seq(self) -> int:
        """The sequence of the batch's first message."""
        return self.seq - self.count + 1


# ---------------------------------------------------------------------------------
# account


@dataclass
class AccountLimits(Model):
    max_memory: int = -1
    max_storage: int = -1
    max_streams: int = -1
    max_consumers: int = -1
    max_ack_pending: int = -1
    memory_max_stream_bytes: int = -1
    storage_max_stream_bytes: int = -1
    max_bytes_required: bool = False


@dataclass
class APIStats(Model):
    level: int = 0
    total: int = 0
    errors: int = 0
    inflight: int | None = None


@dataclass
class Tier(Model):
    memory: int = 0
    storage: int = 0
    reserved_memory: int = 0
    reserved_storage: int = 0
    streams: int = 0
    consumers: int = 0
    limits: AccountLimits = field(default_factory=AccountLimits)


@dataclass
class AccountInfo(Model):
    memory: int = 0
    storage: int = 0
    reserved_memory: int = 0
    reserved_storage: int = 0
    streams: int = 0
    consumers: int = 0
    limits: AccountLimits = field(default_factory=AccountLimits)
    domain: str | None = None
    api: APIStats = field(default_factory=APIStats)
    tiers: dict[str, Tier] | None = None


# ---------------------------------------------------------------------------------
# stored messages


@dataclass
class RawStreamMsg(Model):
    """A message read from a stream (``STREAM.MSG.GET`` or direct get).

    On the wire (``stored_message``) ``data`` and ``hdrs`` are base64; here ``data``
    is ``bytes`` and ``headers`` a :class:`~jetwire.protocol.headers.Headers` (or
    ``None``). ``from_json`` accepts either the ``stored_message`` object or the whole
    ``{"message": {...}}`` answer.
    """

    subject: str = ""
    seq: int = 0
    data: bytes = jfield(b"", kind="b64")
    headers: HeadersOrNone = jfield(None, kind="hdrs_b64", json="hdrs")
    time: datetime | None = None

    @classmethod
    def _json_in(cls, data: JSONObject) -> JSONObject:
        msg = data.get("message")
        if isinstance(msg, dict) and "subject" not in data:
            return msg
        return data

    @property
    def sequence(self) -> int:
        """Alias of ``seq`` (nats.go's name)."""
        return self.seq
