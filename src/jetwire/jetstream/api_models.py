"""Wire models of the JetStream API requests and responses that are not already config
or info types (:mod:`jetwire.jetstream.models`): the ``*_request`` bodies jetwire sends
and the ``*_response`` envelopes the server answers with. They exist so that
:mod:`jetwire.schemas` builds every schema from a typed model; the client code builds
the same JSON in :mod:`jetwire.jetstream.manage`, ``pull`` and ``backup_core``.
No I/O here.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import ClassVar

from jetwire.jetstream._json import Model, duration, jfield
from jetwire.jetstream.models import (
    AccountInfo,
    APIErrorInfo,
    ConsumerConfig,
    ConsumerInfo,
    Placement,
    PubAck,
    StreamConfig,
    StreamInfo,
    StreamState,
)

__all__ = [
    "AccountInfoResponse",
    "AccountPurgeResponse",
    "ConsumerCreateRequest",
    "ConsumerGetNextRequest",
    "ConsumerInfoResponse",
    "ConsumerListResponse",
    "ConsumerNamesResponse",
    "ConsumerPauseRequest",
    "ConsumerPauseResponseBody",
    "ConsumerResetRequest",
    "ConsumerResetResponse",
    "ConsumerUnpinRequest",
    "EmptyRequest",
    "EmptyResponse",
    "IterableRequest",
    "LeaderStepdownRequest",
    "MetaServerRemoveRequest",
    "PubAckResponse",
    "StoredMessage",
    "StreamCreateRequest",
    "StreamInfoRequest",
    "StreamInfoResponse",
    "StreamListRequest",
    "StreamListResponse",
    "StreamMsgDeleteRequest",
    "StreamMsgGetRequest",
    "StreamMsgGetResponse",
    "StreamNamesRequest",
    "StreamNamesResponse",
    "StreamPurgeRequest",
    "StreamPurgeResponse",
    "StreamRemovePeerRequest",
    "StreamRestoreRequest",
    "StreamRestoreResponse",
    "StreamSnapshotRequest",
    "StreamSnapshotResponse",
    "SuccessResponse",
]


# ---------------------------------------------------------------------------------
# requests


@dataclass
class StreamCreateRequest(StreamConfig):
    """``STREAM.CREATE``/``STREAM.UPDATE``: a stream config, plus ``pedantic``."""

    pedantic: bool = False


@dataclass
class ConsumerCreateRequest(Model):
    """``CONSUMER.CREATE``: the stream, the config and the action (``create``,
    ``update`` or none for create-or-update)."""

    _omit_defaults: ClassVar[bool] = True
    stream_name: str = jfield("", always=True)
    config: ConsumerConfig = field(default_factory=ConsumerConfig)
    action: str | None = None
    pedantic: bool = False


@dataclass
class IterableRequest(Model):
    _omit_defaults: ClassVar[bool] = True
    offset: int = 0


@dataclass
class StreamNamesRequest(IterableRequest):
    subject: str | None = None


@dataclass
class StreamListRequest(IterableRequest):
    subject: str | None = None


@dataclass
class StreamInfoRequest(IterableRequest):
    deleted_details: bool = False
    subjects_filter: str | None = None


@dataclass
class StreamPurgeRequest(Model):
    _omit_defaults: ClassVar[bool] = True
    filter: str | None = None
    seq: int | None = None
    keep: int | None = None


@dataclass
class StreamMsgGetRequest(Model):
    _omit_defaults: ClassVar[bool] = True
    seq: int | None = None
    last_by_subj: str | None = None
    next_by_subj: str | None = None
    batch: int | None = None
    max_bytes: int | None = None
    start_time: datetime | None = None
    multi_last: list[str] | None = None
    up_to_seq: int | None = None
    up_to_time: datetime | None = None


@dataclass
class StreamMsgDeleteRequest(Model):
    _omit_defaults: ClassVar[bool] = True
    seq: int = jfield(0, always=True)
    no_erase: bool = False


@dataclass
class ConsumerPauseRequest(Model):
    _omit_defaults: ClassVar[bool] = True
    pause_until: datetime | None = None


@dataclass
class ConsumerUnpinRequest(Model):
    _omit_defaults: ClassVar[bool] = True
    group: str = jfield("", always=True)


@dataclass
class ConsumerGetNextRequest(Model):
    """A pull request (``CONSUMER.MSG.NEXT``); durations in seconds."""

    _omit_defaults: ClassVar[bool] = True
    expires: float | None = duration()
    batch: int | None = None
    max_bytes: int | None = None
    no_wait: bool = False
    idle_heartbeat: float | None = duration()
    group: str | None = None
    id: str | None = None
    min_pending: int | None = None
    min_ack_pending: int | None = None
    priority: int | None = None


@dataclass
class StreamSnapshotRequest(Model):
    _omit_defaults: ClassVar[bool] = True
    deliver_subject: str = jfield("", always=True)
    no_consumers: bool = False
    chunk_size: int | None = None
    jsck: bool = False


@dataclass
class StreamRestoreRequest(Model):
    _omit_defaults: ClassVar[bool] = True
    config: StreamConfig = field(default_factory=StreamConfig)
    state: StreamState = field(default_factory=StreamState)


@dataclass
class StreamRemovePeerRequest(Model):
    _omit_defaults: ClassVar[bool] = True
    peer: str = jfield("", always=True)


@dataclass
class LeaderStepdownRequest(Model):
    """A leader stepdown (stream, consumer or meta): where the new leader may go."""

    _omit_defaults: ClassVar[bool] = True
    placement: Placement | None = None


@dataclass
class EmptyRequest(Model):
    """A request without fields (``CONSUMER.INFO``)."""

    _omit_defaults: ClassVar[bool] = True


@dataclass
class ConsumerResetRequest(Model):
    """``CONSUMER.RESET`` (2.14+): the stream sequence to reset the consumer to."""

    _omit_defaults: ClassVar[bool] = True
    seq: int | None = None


@dataclass
class MetaServerRemoveRequest(Model):
    _omit_defaults: ClassVar[bool] = True
    peer: str | None = None
    peer_id: str | None = None


# ---------------------------------------------------------------------------------
# responses (every one may instead carry ``error``)


@dataclass
class _Response(Model):
    type: str | None = None
    error: APIErrorInfo | None = None


@dataclass
class EmptyResponse(_Response):
    pass


@dataclass
class SuccessResponse(_Response):
    success: bool = False


@dataclass
class StreamPurgeResponse(SuccessResponse):
    purged: int = 0


@dataclass
class _IterableResponse(_Response):
    total: int = 0
    offset: int = 0
    limit: int = 0


@dataclass
class StreamNamesResponse(_IterableResponse):
    streams: list[str] | None = None


@dataclass
class StreamListResponse(_IterableResponse):
    streams: list[StreamInfo] | None = None
    missing: list[str] | None = None


@dataclass
class ConsumerNamesResponse(_IterableResponse):
    consumers: list[str] | None = None


@dataclass
class ConsumerListResponse(_IterableResponse):
    consumers: list[ConsumerInfo] | None = None
    missing: list[str] | None = None


@dataclass
class StoredMessage(Model):
    """A stored message as the API sends it (``data``/``hdrs`` base64 strings)."""

    subject: str = ""
    seq: int = 0
    hdrs: str | None = None
    data: str | None = None
    time: datetime | None = None


@dataclass
class StreamMsgGetResponse(_Response):
    message: StoredMessage | None = None


@dataclass
class ConsumerPauseResponseBody(_Response):
    paused: bool = False
    pause_until: datetime | None = None
    pause_remaining: float | None = duration()


@dataclass
class StreamSnapshotResponse(_Response):
    config: StreamConfig | None = None
    state: StreamState | None = None


@dataclass
class StreamRestoreResponse(_Response):
    deliver_subject: str = ""


@dataclass
class StreamInfoResponse(StreamInfo, _IterableResponse):
    pass


@dataclass
class ConsumerInfoResponse(ConsumerInfo, _Response):
    pass


@dataclass
class ConsumerResetResponse(ConsumerInfo, _Response):
    reset_seq: int = 0


@dataclass
class AccountInfoResponse(AccountInfo, _Response):
    pass


@dataclass
class AccountPurgeResponse(_Response):
    initiated: bool = False


@dataclass
class PubAckResponse(PubAck):
    error: APIErrorInfo | None = None
