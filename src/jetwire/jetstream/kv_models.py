"""Key-value store types (ADR-8) and the bucket-to-stream mapping. No I/O."""
from __future__ import annotations

import copy
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import ClassVar

from jetwire.errors import HistoryTooLargeError
from jetwire.jetstream._json import Model, duration
from jetwire.jetstream._status import BucketStatus
from jetwire.jetstream.models import (
    DiscardPolicy,
    Placement,
    RePublish,
    StorageType,
    StoreCompression,
    StreamConfig,
    StreamSource,
    SubjectTransformConfig,
)
from jetwire.jetstream.validate import validate_bucket_name

__all__ = ["KeyValueConfig", "KeyValueEntry", "KeyValueOp", "KeyValueStatus"]

KV_MAX_HISTORY = 64
KV_STREAM_PREFIX = "KV_"
KV_SUBJECT_PREFIX = "$KV."
KV_OPERATION_HDR = "KV-Operation"
_DEFAULT_DUPLICATE_WINDOW = 120.0


def kv_stream_name(bucket: str) -> str:
    """``KV_<bucket>``."""
    return KV_STREAM_PREFIX + bucket


def kv_subject_prefix(bucket: str) -> str:
    """``$KV.<bucket>.`` (the key follows)."""
    return f"{KV_SUBJECT_PREFIX}{bucket}."


def kv_bucket_from_stream(stream: str) -> str:
    """The bucket name of a ``KV_<bucket>`` stream (the name itself otherwise)."""
    return stream[len(KV_STREAM_PREFIX):] if stream.startswith(KV_STREAM_PREFIX) else stream


class KeyValueOp(StrEnum):
    """The operation of a KV entry, as in the ``KV-Operation`` header."""

    PUT = "PUT"
    DEL = "DEL"
    PURGE = "PURGE"

    def __str__(self) -> str:
        return self.value


@dataclass
class KeyValueConfig(Model):
    """Configuration of a key-value bucket (nats.go ``KeyValueConfig``).

    ``ttl`` is seconds (``None`` or 0: values never expire); ``compression`` turns on
    S2 stream compression; ``limit_marker_ttl`` (seconds) enables per-key TTLs and
    markers for keys removed by limits (needs a server with JetStream API level >= 1;
    the caller checks that). ``mirror``/``sources`` may name buckets or ``KV_`` streams.
    """

    _omit_defaults: ClassVar[bool] = True
    bucket: str | None = None
    description: str | None = None
    max_value_size: int = -1
    history: int = 1
    ttl: float | None = duration()
    max_bytes: int = -1
    storage: StorageType = StorageType.FILE
    replicas: int = 1
    placement: Placement | None = None
    republish: RePublish | None = None
    mirror: StreamSource | None = None
    sources: list[StreamSource] | None = None
    compression: bool = False
    limit_marker_ttl: float | None = duration()
    metadata: dict[str, str] | None = None


def kv_stream_config(cfg: KeyValueConfig) -> StreamConfig:
    """The stream config of a bucket (ADR-8), as nats.go's ``prepareKeyValueConfig``.

    Raises ``InvalidBucketNameError`` for a bad bucket name and
    ``HistoryTooLargeError`` unless 1 <= history <= 64 (0 means the default, 1).
    """
    bucket = validate_bucket_name(cfg.bucket)  # type: ignore[arg-type]
    history = cfg.history or 1
    if not isinstance(history, int) or history < 1 or history > KV_MAX_HISTORY:
        raise HistoryTooLargeError(f"history must be between 1 and {KV_MAX_HISTORY}, got {cfg.history!r}")
    ttl = cfg.ttl or 0.0
    duplicate_window = ttl if 0 < ttl < _DEFAULT_DUPLICATE_WINDOW else _DEFAULT_DUPLICATE_WINDOW
    limit_marker_ttl = cfg.limit_marker_ttl or None
    scfg = StreamConfig(
        name=kv_stream_name(bucket),
        description=cfg.description,
        max_msgs_per_subject=history,
        max_bytes=cfg.max_bytes if cfg.max_bytes else -1,
        max_age=ttl,
        max_msg_size=cfg.max_value_size if cfg.max_value_size else -1,
        storage=cfg.storage or StorageType.FILE,
        num_replicas=cfg.replicas or 1,
        placement=copy.deepcopy(cfg.placement),
        allow_rollup_hdrs=True,
        deny_delete=True,
        duplicate_window=duplicate_window,
        max_msgs=-1,
        max_consumers=-1,
        allow_direct=True,
        republish=copy.deepcopy(cfg.republish),
        compression=StoreCompression.S2 if cfg.compression else StoreCompression.NONE,
        discard=DiscardPolicy.NEW,
        allow_msg_ttl=limit_marker_ttl is not None,
        subject_delete_marker_ttl=limit_marker_ttl,
        metadata=dict(cfg.metadata) if cfg.metadata else None,
    )
    own_subjects = f"{KV_SUBJECT_PREFIX}{bucket}.>"
    if cfg.mirror is not None:
        m = copy.deepcopy(cfg.mirror)
        if m.name and not m.name.startswith(KV_STREAM_PREFIX):
            m.name = kv_stream_name(m.name)
        scfg.mirror = m
        scfg.mirror_direct = True
    elif cfg.sources:
        sources = []
        for src in cfg.sources:
            ss = copy.deepcopy(src)
            if ss.subject_transforms:
                # transforms given: used as is (e.g. a non-KV stream as source)
                sources.append(ss)
                continue
            name = ss.name or ""
            if name.startswith(KV_STREAM_PREFIX):
                source_bucket = name[len(KV_STREAM_PREFIX):]
            else:
                source_bucket = name
                ss.name = kv_stream_name(name)
            if ss.external is None or source_bucket != bucket:
                ss.subject_transforms = [SubjectTransformConfig(
                    src=f"{KV_SUBJECT_PREFIX}{source_bucket}.>", dest=own_subjects)]
            sources.append(ss)
        scfg.sources = sources
        scfg.subjects = [own_subjects]
    else:
        scfg.subjects = [own_subjects]
    return scfg


@dataclass(eq=True)
class KeyValueEntry:
    """One revision of a key. ``value`` is ``b""`` for delete/purge markers; ``delta``
    is how far this revision is from the latest (watchers/history fill it)."""

    bucket: str
    key: str
    value: bytes
    revision: int
    created: datetime | None
    delta: int = 0
    operation: KeyValueOp = KeyValueOp.PUT

    def __post_init__(self) -> None:
        op = self.operation
        if type(op) is not KeyValueOp:
            self.operation = KeyValueOp(op) if op is not None else KeyValueOp.PUT


class KeyValueStatus(BucketStatus):
    """Status of a bucket, read from its stream's :class:`StreamInfo` (nats.go
    ``KeyValueBucketStatus``)."""

    __slots__ = ()

    _bucket_from_stream = staticmethod(kv_bucket_from_stream)  # type: ignore[assignment]

    @property
    def values(self) -> int:
        """Messages in the bucket, history and markers included."""
        return self._info.state.messages

    @property
    def history(self) -> int:
        return self._info.config.max_msgs_per_subject

    @property
    def bytes(self) -> int:
        return self._info.state.bytes

    @property
    def limit_marker_ttl(self) -> float:
        """Seconds limit markers are kept (0: markers disabled)."""
        return self._info.config.subject_delete_marker_ttl or 0.0

    @property
    def config(self) -> KeyValueConfig:
        """The bucket's configuration rebuilt from the stream config."""
        c = self._info.config
        return KeyValueConfig(
            bucket=self._bucket,
            description=c.description,
            max_value_size=c.max_msg_size,
            history=c.max_msgs_per_subject,
            ttl=c.max_age,
            max_bytes=c.max_bytes,
            storage=c.storage,
            replicas=c.num_replicas,
            placement=c.placement,
            republish=c.republish,
            mirror=c.mirror,
            sources=c.sources,
            compression=self.is_compressed,
            limit_marker_ttl=c.subject_delete_marker_ttl,
            metadata=c.metadata,
        )

    def __repr__(self) -> str:
        return (f"KeyValueStatus(bucket={self.bucket!r}, values={self.values}, history={self.history}, "
                f"ttl={self.ttl}, bytes={self.bytes}, is_compressed={self.is_compressed})")
