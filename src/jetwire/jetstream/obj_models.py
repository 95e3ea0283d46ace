"""Object store types (ADR-20) and the bucket-to-stream mapping. No I/O.

``ObjectInfo`` JSON has nats.go's layout::

    {"name", "description", "headers": {"K": ["v"]}, "metadata",
     "options": {"link": {"bucket", "name"}, "max_chunk_size"},
     "bucket", "nuid", "size", "mtime", "chunks", "digest", "deleted"}
"""
from __future__ import annotations

import base64
import copy
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, ClassVar

from jetwire.jetstream._json import JSONObject, Model, duration, jfield
from jetwire.jetstream._status import BucketStatus
from jetwire.jetstream.models import (
    DiscardPolicy,
    Placement,
    StorageType,
    StoreCompression,
    StreamConfig,
)
from jetwire.jetstream.validate import validate_bucket_name
from jetwire.protocol.headers import Headers

if TYPE_CHECKING:
    from jetwire.protocol.headers import HeadersInit

__all__ = ["ObjectInfo", "ObjectLink", "ObjectMeta", "ObjectStoreConfig", "ObjectStoreStatus"]

OBJ_STREAM_PREFIX = "OBJ_"
OBJ_DEFAULT_CHUNK_SIZE = 128 * 1024
OBJ_DIGEST_PREFIX = "SHA-256="


def obj_stream_name(bucket: str) -> str:
    """``OBJ_<bucket>``."""
    return OBJ_STREAM_PREFIX + bucket


def obj_bucket_from_stream(stream: str) -> str:
    return stream[len(OBJ_STREAM_PREFIX):] if stream.startswith(OBJ_STREAM_PREFIX) else stream


def obj_chunk_subject(bucket: str, nuid: str) -> str:
    """``$O.<bucket>.C.<nuid>``."""
    return f"$O.{bucket}.C.{nuid}"


def obj_meta_subject(bucket: str, name: str) -> str:
    """``$O.<bucket>.M.<urlsafe base64 of name>`` (padded, as nats.go)."""
    return f"$O.{bucket}.M.{encode_object_name(name)}"


def encode_object_name(name: str) -> str:
    return base64.urlsafe_b64encode(name.encode("utf-8")).decode("ascii")


def obj_digest(sha256_digest: bytes) -> str:
    """``SHA-256=<urlsafe base64>`` of a raw SHA-256 digest."""
    return OBJ_DIGEST_PREFIX + base64.urlsafe_b64encode(sha256_digest).decode("ascii")


@dataclass
class ObjectStoreConfig(Model):
    """Configuration of an object store bucket. ``ttl`` is seconds (``None``/0:
    forever); ``compression`` turns on S2 stream compression."""

    _omit_defaults: ClassVar[bool] = True
    bucket: str | None = None
    description: str | None = None
    ttl: float | None = duration()
    max_bytes: int = -1
    storage: StorageType = StorageType.FILE
    replicas: int = 1
    placement: Placement | None = None
    compression: bool = False
    metadata: dict[str, str] | None = None


def obj_stream_config(cfg: ObjectStoreConfig) -> StreamConfig:
    """The stream config of an object store bucket (nats.go ``prepareObjectStoreConfig``).
    Raises ``InvalidBucketNameError`` for a bad bucket name."""
    bucket = validate_bucket_name(cfg.bucket)  # type: ignore[arg-type]
    return StreamConfig(
        name=obj_stream_name(bucket),
        description=cfg.description,
        subjects=[f"$O.{bucket}.C.>", f"$O.{bucket}.M.>"],
        max_age=cfg.ttl or 0.0,
        max_bytes=cfg.max_bytes if cfg.max_bytes else -1,
        storage=cfg.storage or StorageType.FILE,
        num_replicas=cfg.replicas or 1,
        placement=copy.deepcopy(cfg.placement),
        discard=DiscardPolicy.NEW,
        allow_rollup_hdrs=True,
        allow_direct=True,
        metadata=dict(cfg.metadata) if cfg.metadata else None,
        compression=StoreCompression.S2 if cfg.compression else StoreCompression.NONE,
    )


@dataclass
class ObjectLink(Model):
    """A link to a whole bucket (``name`` None) or to one object in it."""

    _omit_defaults: ClassVar[bool] = True
    bucket: str = ""
    name: str | None = None


class _OptionsLayout:
    """Moves ``max_chunk_size``/``link`` to and from the nested ``options`` object."""

    _OPTION_FIELDS: ClassVar[tuple[str, ...]] = ("max_chunk_size", "link")

    @classmethod
    def _json_in(cls, data: JSONObject) -> JSONObject:
        opts = data.get("options")
        if not isinstance(opts, dict):
            return data
        data = dict(data)
        rest = dict(opts)
        data.pop("options")
        for k in cls._OPTION_FIELDS:
            if k in rest and k in cls.__dataclass_fields__:  # type: ignore[attr-defined]
                data[k] = rest.pop(k)
        if rest:  # unknown option keys: kept in _extra["options"] and written back
            data["options"] = rest
        return data

    def _json_out(self, d: JSONObject) -> JSONObject:
        opts = d.pop("options", None)
        opts = dict(opts) if isinstance(opts, dict) else {}
        for k in self._OPTION_FIELDS:
            if k in d:
                opts[k] = d.pop(k)
        if opts:
            d["options"] = opts
        return d


@dataclass
class ObjectMeta(_OptionsLayout, Model):
    """What a user says about an object: its name, description, headers
    (``Headers`` or a ``dict``), metadata and chunk size (bytes, default 128 KiB)."""

    _omit_defaults: ClassVar[bool] = True
    name: str = jfield(always=True)
    description: str | None = None
    headers: Headers | None = jfield(None, kind="headers")
    metadata: dict[str, str] | None = None
    max_chunk_size: int | None = None

    if TYPE_CHECKING:  # the dataclass's __init__, for type checkers: ``headers`` may be a dict (made Headers)
        def __init__(self, name: str, description: str | None = None, headers: HeadersInit | None = None,
                     metadata: dict[str, str] | None = None, max_chunk_size: int | None = None, *,
                     _extra: JSONObject = ...) -> None: ...


@dataclass
class ObjectInfo(ObjectMeta):
    """Metadata of a stored object. ``mtime`` is an aware datetime, ``digest`` is
    ``SHA-256=<urlsafe base64>``, ``link`` is set for links."""

    _omit_defaults: ClassVar[bool] = True
    bucket: str = jfield("", always=True)
    nuid: str = jfield("", always=True)
    size: int = jfield(0, always=True)
    mtime: datetime | None = jfield(None, always=True)
    chunks: int = jfield(0, always=True)
    digest: str | None = None
    deleted: bool = False
    link: ObjectLink | None = None

    if TYPE_CHECKING:  # the dataclass's __init__, for type checkers: ``headers`` may be a dict (made Headers)
        def __init__(self, name: str, description: str | None = None, headers: HeadersInit | None = None,
                     metadata: dict[str, str] | None = None, max_chunk_size: int | None = None,
                     bucket: str = "", nuid: str = "", size: int = 0, mtime: datetime | None = None, chunks: int = 0,
                     digest: str | None = None, deleted: bool = False, link: ObjectLink | None = None, *,
                     _extra: JSONObject = ...) -> None: ...

    @property
    def is_link(self) -> bool:
        return self.link is not None

    @property
    def meta(self) -> ObjectMeta:
        """The :class:`ObjectMeta` part (a copy)."""
        return ObjectMeta(name=self.name, description=self.description, headers=copy.deepcopy(self.headers),
                          metadata=dict(self.metadata) if self.metadata is not None else None,
                          max_chunk_size=self.max_chunk_size)


class ObjectStoreStatus(BucketStatus):
    """Status of an object store bucket, read from its stream's :class:`StreamInfo`."""

    __slots__ = ()

    _bucket_from_stream = staticmethod(obj_bucket_from_stream)  # type: ignore[assignment]

    @property
    def sealed(self) -> bool:
        return bool(self._info.config.sealed)

    def __repr__(self) -> str:
        return (f"ObjectStoreStatus(bucket={self.bucket!r}, size={self.size}, sealed={self.sealed}, "
                f"ttl={self.ttl}, is_compressed={self.is_compressed})")
