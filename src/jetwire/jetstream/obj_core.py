"""Sans-IO pieces of the object store (ADR-20), shared by both flavours: what a ``put``
publishes (meta normalisation, chunk size, the ack window, the meta message), how a
stored meta message reads back, and the running SHA-256 check of a ``get``. No I/O."""
from __future__ import annotations

import base64
import binascii
import copy
import hashlib
import re
from datetime import datetime
from typing import Any

import orjson

from ..errors import BadObjectMetaError, DigestMismatchError, LinkNotAllowedError
from .obj_models import (
    OBJ_DEFAULT_CHUNK_SIZE,
    OBJ_DIGEST_PREFIX,
    ObjectInfo,
    ObjectLink,
    ObjectMeta,
    obj_digest,
)
from .validate import validate_object_name

__all__ = [
    "ZERO_TIME",
    "DigestCheck",
    "as_object_meta",
    "chunk_size_of",
    "decode_digest",
    "decode_object_digest",
    "info_from_stored",
    "link_info",
    "meta_payload",
    "new_object_info",
    "object_digest",
    "publish_window",
]

# nats.go writes the meta with Go's zero time; the real time is the message's
ZERO_TIME = "0001-01-01T00:00:00Z"
# bytes of chunks a put keeps in flight (awaiting their acks)
PUT_WINDOW_BYTES = 8 * 1024 * 1024


def as_object_meta(meta_or_name: Any) -> ObjectMeta:
    """An ``ObjectMeta`` of its own (a copy) from a name, an ``ObjectMeta`` or an
    ``ObjectInfo`` (its meta part). A link (an ``ObjectInfo`` with ``link``) raises
    ``LinkNotAllowedError``; a missing name ``BadObjectMetaError``."""
    if isinstance(meta_or_name, str):
        meta = ObjectMeta(name=meta_or_name)
    elif isinstance(meta_or_name, ObjectInfo):
        if meta_or_name.link is not None:
            raise LinkNotAllowedError("an object's meta may not carry a link (use add_link)")
        meta = meta_or_name.meta
    elif isinstance(meta_or_name, ObjectMeta):
        meta = copy.deepcopy(meta_or_name)
    elif isinstance(meta_or_name, dict):
        meta = ObjectMeta(**meta_or_name)
    else:
        raise BadObjectMetaError(f"expected an object name or ObjectMeta, not {type(meta_or_name).__name__}")
    validate_object_name(meta.name)
    return meta


def chunk_size_of(meta: ObjectMeta) -> int:
    """The chunk size of a put (``max_chunk_size`` or 128 KiB); stored back in ``meta``."""
    size = meta.max_chunk_size
    if size is None or size == 0:
        size = OBJ_DEFAULT_CHUNK_SIZE
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise BadObjectMetaError(f"max_chunk_size must be a positive int, not {size!r}")
    meta.max_chunk_size = size
    return size


def publish_window(chunk_size: int) -> int:
    """How many chunks a put keeps awaiting their acks (about 8 MiB, at least 2)."""
    return max(2, PUT_WINDOW_BYTES // max(1, chunk_size))


def new_object_info(meta: ObjectMeta, bucket: str, nuid: str, size: int, chunks: int,
                    digest: str | None) -> ObjectInfo:
    return ObjectInfo(name=meta.name, description=meta.description, headers=meta.headers, metadata=meta.metadata,
                      max_chunk_size=meta.max_chunk_size, bucket=bucket, nuid=nuid, size=size, chunks=chunks,
                      digest=digest)


def link_info(name: str, bucket: str, nuid: str, target_bucket: str, target_name: str | None) -> ObjectInfo:
    """The meta of a link named ``name`` in ``bucket`` to an object (or a whole bucket
    when ``target_name`` is None)."""
    validate_object_name(name)
    return ObjectInfo(name=name, bucket=bucket, nuid=nuid, link=ObjectLink(bucket=target_bucket, name=target_name))


def meta_payload(info: ObjectInfo) -> bytes:
    """The JSON of a meta message (nats.go layout; ``mtime`` is Go's zero time, the
    stored message's time is the real one)."""
    d = info.to_json_dict()
    d["mtime"] = ZERO_TIME
    return orjson.dumps(d)


# what a meta's nuid may be: one plain token (nats.go writes NUIDs, 22 base62 characters)
_NUID = re.compile(r"[A-Za-z0-9_-]{1,128}")


def info_from_stored(data: bytes, mtime: datetime | None) -> ObjectInfo:
    """An ``ObjectInfo`` from a stored meta message (``BadObjectMetaError`` when it is not one)."""
    try:
        info = ObjectInfo.from_json(data)
    except Exception as exc:
        raise BadObjectMetaError(f"bad object meta: {bytes(data[:80])!r}") from exc
    if info.nuid and not _NUID.fullmatch(info.nuid):
        # it names the chunks' subject: a wildcard (written by anyone who may publish to
        # the bucket) would purge or read every object's chunks
        raise BadObjectMetaError(f"object {info.name!r}: its meta's nuid {info.nuid[:40]!r} is not one token")
    info.mtime = mtime
    return info


def object_digest(data: bytes) -> str:
    """The object-store digest of ``data``: ``"SHA-256=<URL-safe base64 of its SHA-256>"``,
    what ``ObjectInfo.digest`` holds for an object with these bytes (nats.go's
    ``GetObjectDigestValue``)."""
    check = DigestCheck()
    check.update(data)
    return check.digest()


def decode_digest(digest: str) -> bytes:
    """The raw SHA-256 of ``SHA-256=<base64>`` (URL-safe as nats.go writes it; standard
    base64 is accepted too). ``DigestMismatchError`` when ``digest`` is not one."""
    if not isinstance(digest, str) or "=" not in digest:
        raise DigestMismatchError(f"invalid object digest {digest!r}")
    kind, _, value = digest.partition("=")
    if kind.upper() != OBJ_DIGEST_PREFIX[:-1]:
        raise DigestMismatchError(f"unsupported object digest {digest!r}")
    value = value.strip()
    padded = value + "=" * (-len(value) % 4)
    try:
        raw = base64.urlsafe_b64decode(padded.replace("+", "-").replace("/", "_"))
    except (binascii.Error, ValueError):
        raise DigestMismatchError(f"invalid object digest {digest!r}") from None
    if len(raw) != hashlib.sha256().digest_size:
        raise DigestMismatchError(f"invalid object digest {digest!r}: not a SHA-256")
    return raw


class DigestCheck:
    """Running SHA-256 and size of the bytes of a get, checked against the meta at EOF."""

    __slots__ = ("_h", "size")

    def __init__(self) -> None:
        self._h = hashlib.sha256()
        self.size = 0

    def update(self, data: bytes) -> None:
        self._h.update(data)
        self.size += len(data)

    def digest(self) -> str:
        return obj_digest(self._h.digest())

    def verify(self, info: ObjectInfo) -> None:
        """Raise ``DigestMismatchError`` unless size and digest match ``info``."""
        if self.size != info.size:
            raise DigestMismatchError(
                f"object {info.name!r}: got {self.size} bytes, the meta says {info.size}")
        if info.digest and self._h.digest() != decode_digest(info.digest):
            raise DigestMismatchError(f"object {info.name!r}: SHA-256 digest mismatch")


decode_object_digest = decode_digest  # the public name (``jetwire.decode_object_digest``)
