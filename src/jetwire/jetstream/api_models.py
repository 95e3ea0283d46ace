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
from typing import ClassVar, Optional

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
    "StreamCreateRequest", "ConsumerCreateRequest", "IterableRequest", "StreamNamesRequest", "StreamListRequest",
    "StreamInfoRequest", "StreamPurgeRequest", "StreamMsgGetRequest", "StreamMsgDeleteRequest",
    "ConsumerPauseRequest", "ConsumerUnpinRequest", "ConsumerGetNextRequest", "StreamSnapshotRequest",
    "StreamRestoreRequest", "StreamRemovePeerRequest", "LeaderStepdownRequest", "MetaServerRemoveRequest",
    "StoredMessage", "SuccessResponse", "StreamPurgeResponse", "StreamNamesResponse", "StreamListResponse",
    "ConsumerNamesResponse", "ConsumerListResponse", "StreamMsgGetResponse", "ConsumerPauseResponseBody",
    "StreamSnapshotResponse", "StreamRestoreResponse", "StreamInfoResponse", "ConsumerInfoResponse",
    "AccountInfoResponse", "PubAckResponse", "EmptyResponse", "EmptyRequest", "ConsumerResetRequest",
    "ConsumerResetResponse", "AccountPurgeResponse",
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
    action: Optional[str] = None
    pedantic: bool = False


@dataclass
class IterableRequest(Model):
    _omit_defaults: ClassVar[bool] = True
    offset: int = 0


@dataclass
class StreamNamesRequest(IterableRequest):
    subject: Optional[str] = None


@dataclass
class StreamListRequest(IterableRequest):
    subject: Optional[str] = None


@dataclass
class StreamInfoRequest(IterableRequest):
    deleted_details: bool = False
    subjects_filter: Optional[str] = None


@dataclass
class StreamPurgeRequest(Model):
    _omit_defaults: ClassVar[bool] = True
    filter: Optional[str] = None
    seq: Optional[int] = None
    keep: Optional[int] = None


@dataclass
class StreamMsgGetRequest(Model):
    _omit_defaults: ClassVar[bool] = True
    seq: Optional[int] = None
    last_by_subj: Optional[str] = None
    next_by_subj: Optional[str] = None
    batch: Optional[int] = None
    max_bytes: Optional[int] = None
    start_time: Optional[datetime] = None
    multi_last: Optional[list[str]] = None
    up_to_seq: Optional[int] = None
    up_to_time: Optional[datetime] = None


@dataclass
class StreamMsgDeleteRequest(Model):
    _omit_defaults: ClassVar[bool] = True
    seq: int = jfield(0, always=True)
    no_erase: bool = False


@dataclass
class ConsumerPauseRequest(Model):
    _omit_defaults: ClassVar[bool] = True
    pause_until: Optional[datetime] = None


@dataclass
class ConsumerUnpinRequest(Model):
    _omit_defaults: ClassVar[bool] = True
    group: str = jfield("", always=True)


@dataclass
class ConsumerGetNextRequest(Model):
    """A pull request (``CONSUMER.MSG.NEXT``); durations in seconds."""

    _omit_defaults: ClassVar[bool] = True
    expires: Optional[float] = duration()
    batch: Optional[int] = None
    max_bytes: Optional[int] = None
    no_wait: bool = False
    idle_heartbeat: Optional[float] = duration()
    group: Optional[str] = None
    id: Optional[str] = None
    min_pending: Optional[int] = None
    min_ack_pending: Optional[int] = None
    priority: Optional[int] = None


@dataclass
class StreamSnapshotRequest(Model):
    _omit_defaults: ClassVar[bool] = True
    deliver_subject: str = jfield("", always=True)
    no_consumers: bool = False
    chunk_size: Optional[int] = None
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
    placement: Optional[Placement] = None


@dataclass
class EmptyRequest(Model):
    """A request without fields (``CONSUMER.INFO``)."""

    _omit_defaults: ClassVar[bool] = True


@dataclass
class ConsumerResetRequest(Model):
    """``CONSUMER.RESET`` (2.14+): the stream sequence to reset the consumer to."""

    _omit_defaults: ClassVar[bool] = True
    seq: Optional[int] = None


@dataclass
class MetaServerRemoveRequest(Model):
    _omit_defaults: ClassVar[bool] = True
    peer: Optional[str] = None
    peer_id: Optional[str] = None


# ---------------------------------------------------------------------------------
# responses (every one may instead carry ``error``)


@dataclass
class _Response(Model):
    type: Optional[str] = None
    error: Optional[APIErrorInfo] = None


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
    streams: Optional[list[str]] = None


@dataclass
class StreamListResponse(_IterableResponse):
    streams: Optional[list[StreamInfo]] = None
    missing: Optional[list[str]] = None


@dataclass
class ConsumerNamesResponse(_IterableResponse):
    consumers: Optional[list[str]] = None


@dataclass
class ConsumerListResponse(_IterableResponse):
    consumers: Optional[list[ConsumerInfo]] = None
    missing: Optional[list[str]] = None


@dataclass
class StoredMessage(Model):
    """A stored message as the API sends it (``data``/``hdrs`` base64 strings)."""

    subject: str = ""
    seq: int = 0
    hdrs: Optional[str] = None
    data: Optional[str] = None
    time: Optional[datetime] = None


@dataclass
class StreamMsgGetResponse(_Response):
    message: Optional[StoredMessage] = None


@dataclass
class ConsumerPauseResponseBody(_Response):
    paused: bool = False
    pause_until: Optional[datetime] = None
    pause_remaining: Optional[float] = duration()


@dataclass
class StreamSnapshotResponse(_Response):
    config: Optional[StreamConfig] = None
    state: Optional[StreamState] = None


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
    error: Optional[APIErrorInfo] = None
