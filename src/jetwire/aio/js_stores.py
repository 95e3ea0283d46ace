"""Key-value stores, object stores and backups of a JetStream context (asyncio source;
``jetwire/_sync/js_stores.py`` is generated from it): the bucket management of
:mod:`.kv` and :mod:`.objects` and the snapshot/restore of :mod:`.backup` (nats.go's
``jetstream.KeyValueManager`` and ``ObjectStoreManager``). :class:`~jetwire.aio.jetstream.JetStream`
is made of these and the other managers."""
from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Unpack, cast

from .._typing import JSONObject
from ..jetstream.backup_core import SnapshotResult
from ..jetstream.config_kwargs import KeyValueConfigFields, ObjectStoreConfigFields
from ..jetstream.kv_models import KeyValueConfig, KeyValueStatus
from ..jetstream.models import StreamInfo
from ..jetstream.obj_models import ObjectStoreConfig, ObjectStoreStatus
from . import backup
from .jsapi import ContextBase
from .kv import KV_BUCKETS, KeyValue
from .objects import OBJ_BUCKETS, ObjectStore

if TYPE_CHECKING:
    from .jetstream import JetStream


class KeyValueManager(ContextBase):
    """Key-value buckets (a part of ``JetStream``)."""

    async def create_key_value(self, config: KeyValueConfig | JSONObject | None = None,
                               **fields: Unpack[KeyValueConfigFields]) -> KeyValue:
        """Create a key-value bucket from a ``KeyValueConfig`` (or a dict) and/or its
        fields (``bucket``, ``history``, ``ttl``, ...). The same bucket again with the same
        config returns it; with another config raises ``StreamNameInUseError``.
        ``InvalidBucketNameError``/``HistoryTooLargeError`` before anything is sent."""
        return await KV_BUCKETS.create(cast("JetStream", self), config, fields)

    async def update_key_value(self, config: KeyValueConfig | JSONObject | None = None,
                               **fields: Unpack[KeyValueConfigFields]) -> KeyValue:
        """Update a bucket's config (``BucketNotFoundError`` when it does not exist)."""
        return await KV_BUCKETS.update(cast("JetStream", self), config, fields)

    async def create_or_update_key_value(self, config: KeyValueConfig | JSONObject | None = None,
                                         **fields: Unpack[KeyValueConfigFields]) -> KeyValue:
        """Create the bucket, or update it when it exists."""
        return await KV_BUCKETS.create_or_update(cast("JetStream", self), config, fields)

    async def key_value(self, bucket: str) -> KeyValue:
        """Bind to an existing bucket (``BucketNotFoundError`` when it does not exist)."""
        return await KV_BUCKETS.bind(cast("JetStream", self), bucket)

    async def delete_key_value(self, bucket: str) -> bool:
        """Delete a bucket and everything in it (``BucketNotFoundError`` when missing)."""
        return await KV_BUCKETS.delete(cast("JetStream", self), bucket)

    async def key_value_store_names(self) -> AsyncIterator[str]:
        """Name of every key-value bucket (iterate with ``async for``)."""
        async for name in KV_BUCKETS.names(cast("JetStream", self)):
            yield name

    async def key_value_stores(self) -> AsyncIterator[KeyValueStatus]:
        """``KeyValueStatus`` of every key-value bucket (iterate with ``async for``)."""
        async for status in KV_BUCKETS.statuses(cast("JetStream", self)):
            yield status


class ObjectStoreManager(ContextBase):
    """Object stores (a part of ``JetStream``)."""

    async def create_object_store(self, config: ObjectStoreConfig | JSONObject | None = None,
                                  **fields: Unpack[ObjectStoreConfigFields]) -> ObjectStore:
        """Create an object store bucket from an ``ObjectStoreConfig`` (or a dict) and/or
        its fields (``InvalidBucketNameError`` before anything is sent)."""
        return await OBJ_BUCKETS.create(cast("JetStream", self), config, fields)

    async def update_object_store(self, config: ObjectStoreConfig | JSONObject | None = None,
                                  **fields: Unpack[ObjectStoreConfigFields]) -> ObjectStore:
        """Update an object store's config (``BucketNotFoundError`` when missing)."""
        return await OBJ_BUCKETS.update(cast("JetStream", self), config, fields)

    async def create_or_update_object_store(self, config: ObjectStoreConfig | JSONObject | None = None,
                                            **fields: Unpack[ObjectStoreConfigFields]) -> ObjectStore:
        """Create the object store, or update it when it exists."""
        return await OBJ_BUCKETS.create_or_update(cast("JetStream", self), config, fields)

    async def object_store(self, bucket: str) -> ObjectStore:
        """Bind to an existing object store (``BucketNotFoundError`` when missing)."""
        return await OBJ_BUCKETS.bind(cast("JetStream", self), bucket)

    async def delete_object_store(self, bucket: str) -> bool:
        """Delete an object store and every object in it (``BucketNotFoundError`` when missing)."""
        return await OBJ_BUCKETS.delete(cast("JetStream", self), bucket)

    async def object_store_names(self) -> AsyncIterator[str]:
        """Name of every object store (iterate with ``async for``)."""
        async for name in OBJ_BUCKETS.names(cast("JetStream", self)):
            yield name

    async def object_stores(self) -> AsyncIterator[ObjectStoreStatus]:
        """``ObjectStoreStatus`` of every object store (iterate with ``async for``)."""
        async for status in OBJ_BUCKETS.statuses(cast("JetStream", self)):
            yield status


class BackupManager(ContextBase):
    """Stream backups (a part of ``JetStream``; implemented in :mod:`.backup`)."""

    async def snapshot_stream(self, name: str, dest: str | os.PathLike[str], chunk_size: int = 128 * 1024,
                              check_msgs: bool = False,
                              progress: Callable[[int, int | None], object] | None = None) -> SnapshotResult:
        """Back stream ``name`` up into directory ``dest`` (made if missing): ``backup.json``
        (its config and state) and ``stream.tar.s2`` (the server's snapshot, consumers
        included), the layout of ``nats stream backup``. ``chunk_size`` (1 KiB..1 MiB) is
        the size of the chunks the server sends; ``check_msgs`` has the server check the
        data first. ``progress(done_bytes, total_bytes)`` is called as chunks arrive
        (uncompressed bytes, the total the server announced). Files already in ``dest``
        are replaced only once the snapshot is complete; a failed one leaves nothing new
        behind (``TimeoutError`` when the server stops sending, ``ConnectionLostError``,
        ``JetStreamError`` when the server reports a failure or a chunk is missing)."""
        return await backup.snapshot_stream(self, name, dest, chunk_size, check_msgs, progress)

    async def restore_stream(self, src: str | os.PathLike[str], name: str | None = None,
                             progress: Callable[[int, int | None], object] | None = None) -> StreamInfo:
        """Restore the stream backed up in directory ``src`` (as ``snapshot_stream`` or
        ``nats stream backup`` wrote it), its consumers included, under ``name`` when
        given (where the server allows it), and return its info.
        ``StreamNameInUseError`` before any data is sent when the stream exists; a
        missing, truncated or corrupt backup raises ``JetStreamError`` naming the problem,
        and a partial stream the server made is deleted (also after ``TimeoutError`` or a
        lost connection, in the background once the server answers again).
        ``progress(done_bytes, total_bytes)`` is called as the file is sent."""
        return await backup.restore_stream(self, src, name, progress)
