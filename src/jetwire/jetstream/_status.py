"""What the statuses of key-value and object store buckets share. No I/O."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from jetwire.jetstream.models import StoreCompression, StreamInfo


class BucketStatus:
    """Status of a bucket, read from its stream's :class:`StreamInfo`. Subclasses name
    how a bucket is found from its stream's name (``_bucket_from_stream``)."""

    __slots__ = ("_bucket", "_info")

    _bucket_from_stream: ClassVar[Callable[[str], str]]

    def __init__(self, info: StreamInfo, bucket: str | None = None):
        self._info = info
        self._bucket = bucket if bucket is not None else type(self)._bucket_from_stream(info.config.name or "")

    @property
    def bucket(self) -> str:
        return self._bucket

    @property
    def description(self) -> str | None:
        return self._info.config.description

    @property
    def ttl(self) -> float:
        """Seconds values are kept (0: forever)."""
        return self._info.config.max_age or 0.0

    @property
    def storage(self) -> Any:
        return self._info.config.storage

    @property
    def replicas(self) -> int:
        return self._info.config.num_replicas

    @property
    def size(self) -> int:
        """Bytes stored, history, markers and metadata included."""
        return self._info.state.bytes

    @property
    def backing_store(self) -> str:
        return "JetStream"

    @property
    def metadata(self) -> dict[str, str]:
        return self._info.config.metadata or {}

    @property
    def is_compressed(self) -> bool:
        c = self._info.config.compression
        return bool(c) and c != StoreCompression.NONE

    @property
    def stream_info(self) -> StreamInfo:
        return self._info

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, type(self)):
            return NotImplemented
        return self._bucket == other._bucket and self._info == other._info
