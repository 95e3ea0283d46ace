"""Object store (ADR-20) (asyncio source; ``jetwire/_sync/objects.py`` is generated from it).

A bucket is the stream ``OBJ_<bucket>``. An object's chunks go to
``$O.<bucket>.C.<nuid>`` (a fresh NUID per put), its meta (JSON, nats.go's layout) to
``$O.<bucket>.M.<urlsafe-base64 name>`` with ``Nats-Rollup: sub`` so only the latest
meta stays. A put publishes the chunks with a bounded window of async publishes,
writes the meta last and then purges the chunks of the version it replaced; if
anything fails before the meta is sent, the new chunks are purged, and after it (a
lost ack, a cancelled put) the meta the bucket holds decides which version's chunks
go. A get streams the chunks through an ordered push consumer (flow control answered
as the reader takes them, so memory stays flat whatever the size) and checks size and
SHA-256 at EOF.
"""
from __future__ import annotations

import asyncio  # aio-only
import builtins
import io
import os
import weakref
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from .._nuid import NUID
from ..errors import (
    BadObjectMetaError,
    BucketNotFoundError,
    JetStreamError,
    LinkNotAllowedError,
    MsgNotFoundError,
    ObjectAlreadyExistsError,
    ObjectNotFoundError,
    StreamNotFoundError,
    payload_type_error,
)
from ..jetstream.kv_core import ROLLUP_HDR
from ..jetstream.obj_core import (
    DigestCheck,
    as_object_meta,
    chunk_size_of,
    info_from_stored,
    link_info,
    meta_payload,
    new_object_info,
    publish_window,
)
from ..jetstream.obj_models import (
    OBJ_STREAM_PREFIX,
    ObjectInfo,
    ObjectMeta,
    ObjectStoreConfig,
    ObjectStoreStatus,
    obj_chunk_subject,
    obj_meta_subject,
    obj_stream_config,
)
from ..jetstream.push import DEFAULT_PUSH_HEARTBEAT
from ..jetstream.validate import validate_bucket_name, validate_object_name
from . import _prims as prims
from .buckets import BucketKind
from .push_core import END, MARKER, PushCore, Watcher, initial_values, next_raw, orphan, started

if TYPE_CHECKING:
    from ..jetstream.models import StreamConfig
    from ..msg import Msg
    from .jetstream import JetStream
    from .stream import Stream

__all__ = ["ObjectResult", "ObjectStore", "ObjectWatcher"]

_ROLLUP = {ROLLUP_HDR: "sub"}
_nuid = NUID()
# a get gives up after this long without receiving anything (heartbeats reset the
# consumer well before)
_GET_IDLE_TIMEOUT = 30.0


def _now() -> datetime:
    return datetime.now(UTC)


class ObjectResult:
    """A readable binary stream of one object: ``read(n=-1)``, ``readinto(b)``,
    iteration in chunks (``async for``), ``close()``; ``info`` is its
    :class:`ObjectInfo`. Size and SHA-256 are checked when the end is reached:
    ``DigestMismatchError`` instead of the last ``b""``. One dropped without ``close()``
    before its end is garbage-collected: its consumer stops at its next delivery or
    heartbeat."""

    def __init__(self, info: ObjectInfo, push: PushCore | None, timeout: float | None = None) -> None:
        self.info = info
        self._push = push
        # orphan() only sets a flag (a finalizer may run on any thread, holding any lock)
        self._orphan = weakref.finalize(self, orphan, push) if push is not None else None
        self._timeout = timeout if timeout is not None else _GET_IDLE_TIMEOUT
        self._buf = b""
        self._pos = 0
        self._check = DigestCheck()
        self._eof = push is None
        self._verified = False
        self.closed = False

    def __repr__(self) -> str:
        return f"<ObjectResult name={self.info.name!r} size={self.info.size}>"

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def writable(self) -> bool:
        return False

    async def _fill(self) -> bool:
        """Load the next chunk into the buffer; False at the (verified) end."""
        if self.closed:
            raise ValueError("read from a closed ObjectResult")
        push = self._push
        if not self._eof and push is not None:
            item = await next_raw(push, self._timeout)
            if item is not MARKER and item is not END:
                data = item.data
                self._check.update(data)
                self._buf = data
                self._pos = 0
                return True
            self._eof = True
            push.stop()
            if item is END and self._check.size != self.info.size:
                raise JetStreamError(f"object {self.info.name!r}: reading stopped before the end")
        if not self._verified:
            self._check.verify(self.info)
            self._verified = True
        return False

    async def read(self, n: int = -1) -> bytes:
        """Up to ``n`` bytes (everything left when ``n`` is negative or None); ``b""`` at the end."""
        if n is None or n < 0:
            parts = [self._buf[self._pos:]] if self._pos < len(self._buf) else []
            self._buf, self._pos = b"", 0
            while await self._fill():
                parts.append(self._buf)
                self._buf = b""
            return b"".join(parts)
        if n == 0:
            return b""
        if self._pos >= len(self._buf) and not await self._fill():
            return b""
        buf, pos = self._buf, self._pos
        if pos == 0 and n >= len(buf):
            self._buf = b""
            return buf
        out = buf[pos:pos + n]
        self._pos = pos + len(out)
        return out

    async def readinto(self, b: bytearray | memoryview) -> int:
        """Read into a writable buffer; returns the number of bytes (0 at the end)."""
        view = memoryview(b).cast("B")
        data = await self.read(len(view))
        view[:len(data)] = data
        return len(data)

    async def readall(self) -> bytes:
        return await self.read(-1)

    def __aiter__(self) -> ObjectResult:
        return self

    async def __anext__(self) -> bytes:
        """The next chunk of data."""
        if self._pos < len(self._buf):
            out = self._buf[self._pos:]
            self._buf, self._pos = b"", 0
            return out
        if not await self._fill():
            raise StopAsyncIteration
        out = self._buf
        self._buf = b""
        return out

    def close(self) -> None:
        if self._push is not None:
            self._push.stop()
        if self._orphan is not None:
            self._orphan.detach()
        self.closed = True

    async def __aenter__(self) -> ObjectResult:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


class ObjectWatcher(Watcher[ObjectInfo]):
    """Iterate (with ``async for``) for :class:`ObjectInfo` updates: the current
    objects, then ``None`` exactly once, then every change until :meth:`stop`."""

    def __init__(self, store: ObjectStore, include_history: bool = False, ignore_deletes: bool = False,
                 updates_only: bool = False) -> None:
        policy = "new" if updates_only else ("all" if include_history else "last_per_subject")
        super().__init__(store._js, store._stream_name, [f"$O.{store._name}.M.>"], policy, initial=not updates_only,
                         heartbeat=store._push_heartbeat)
        self._ignore_deletes = ignore_deletes

    def _item(self, msg: Msg) -> ObjectInfo | None:
        try:
            info = info_from_stored(msg.data, msg.metadata.timestamp)
        except BadObjectMetaError:
            return None
        if self._ignore_deletes and info.deleted:
            return None
        return info


class ObjectStore:
    """An object store bucket: ``js.object_store(bucket)`` or ``js.create_object_store(...)``."""

    # idle heartbeat of the consumers of gets and watchers (seconds); 3 missed ones recreate it
    _push_heartbeat = DEFAULT_PUSH_HEARTBEAT

    def __init__(self, js: JetStream, stream: Stream, bucket: str) -> None:
        self._js = js
        self._stream = stream
        self._stream_name = stream.name
        self._name = bucket

    def __repr__(self) -> str:
        return f"<ObjectStore bucket={self._name!r}>"

    @property
    def bucket(self) -> str:
        return self._name

    # -- writing ---------------------------------------------------------------------
    async def put(self, meta_or_name: str | ObjectMeta | ObjectInfo, reader: Any = None) -> ObjectInfo:
        """Store the bytes read from ``reader`` (a binary file object; ``read`` may be a
        coroutine in aio; ``bytes`` and ``str`` (UTF-8) are accepted too) as the object named by
        ``meta_or_name`` (a name or an :class:`ObjectMeta`), replacing any previous
        version. Returns its :class:`ObjectInfo`."""
        meta = as_object_meta(meta_or_name)
        chunk_size = chunk_size_of(meta)
        if isinstance(reader, (bytes, bytearray, memoryview)):
            reader = io.BytesIO(reader)
        elif isinstance(reader, str):
            reader = io.BytesIO(reader.encode("utf-8"))
        elif reader is not None and not callable(getattr(reader, "read", None)):
            raise payload_type_error(reader, "reader", "str", "a binary file object")
        try:
            old: ObjectInfo | None = await self.get_info(meta.name, show_deleted=True)
        except ObjectNotFoundError:
            old = None
        nuid = _nuid.next()
        chunk_subject = obj_chunk_subject(self._name, nuid)
        js = self._js
        check = DigestCheck()
        chunks = 0
        window: deque[Any] = deque()
        limit = publish_window(chunk_size)
        use_async = hasattr(js, "publish_async")
        timeout = js.api.timeout
        try:
            while reader is not None:
                data = await _read_chunk(reader, chunk_size)
                if not data:
                    break
                check.update(data)
                chunks += 1
                if use_async:
                    window.append(await js.publish_async(chunk_subject, data))
                    while len(window) >= limit:
                        await prims.wait_future(window.popleft(), timeout)
                else:
                    await js.publish(chunk_subject, data)
            while window:
                await prims.wait_future(window.popleft(), timeout)
            info = new_object_info(meta, self._name, nuid, check.size, chunks, check.digest())
        except BaseException:
            for fut in window:  # let the chunks in flight land, then remove them all
                try:
                    await prims.wait_future(fut, timeout)
                except BaseException:
                    pass
            await self._purge_quietly(chunk_subject)
            raise
        # The meta goes last. Once sent it may be stored whatever becomes of this call (its
        # ack lost to a timeout, the put cancelled while awaiting it), so the put decides by
        # what the bucket holds: its meta stored, the new version stays (the old chunks go,
        # as after any put); the old meta still there, the new chunks go; not known (the
        # look-up failed too), nothing is purged. Never a meta without its chunks.
        failed, interrupted = await _see_through(self._publish_meta, info)
        if failed is not None:
            stored = await self._holds_meta(meta.name, nuid)
            if stored is not True:
                if stored is False:
                    await self._purge_quietly(chunk_subject)
                raise interrupted if interrupted is not None else failed
        info.mtime = _now()
        if old is not None and not old.deleted and old.nuid and old.nuid != nuid:
            await self._purge_quietly(obj_chunk_subject(self._name, old.nuid))
        if interrupted is not None:  # cancelled after the meta was stored: the put is done, and cancelled
            raise interrupted
        return info

    async def _holds_meta(self, name: str, nuid: str) -> bool | None:
        """Whether the stored meta of ``name`` is the one of the put ``nuid`` (None: the
        look-up failed, nobody knows)."""
        try:
            return (await self.get_info(name, show_deleted=True)).nuid == nuid
        except ObjectNotFoundError:
            return False
        except Exception:
            return None

    async def _purge_quietly(self, subject: str) -> None:
        """Purge ``subject`` from the bucket, best effort (what is left is unreferenced)."""
        try:
            await self._stream.purge(subject=subject)
        except Exception:
            pass

    async def _publish_meta(self, info: ObjectInfo) -> None:
        await self._js.publish(obj_meta_subject(self._name, info.name), meta_payload(info), headers=_ROLLUP)

    async def put_bytes(self, name: str, data: bytes | bytearray | memoryview) -> ObjectInfo:
        """``put(name, data)``; ``data`` is bytes-like (``TypeError`` otherwise)."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise payload_type_error(data, "data")
        return await self.put(name, data)

    async def put_string(self, name: str, data: str) -> ObjectInfo:
        """Store ``data`` encoded as UTF-8 (``TypeError`` when it is not a ``str``)."""
        if not isinstance(data, str):
            # payload_type_error names the bytes-like types, which put_string does not take
            raise TypeError(f"data must be a str, not {type(data).__name__}")
        return await self.put(name, data.encode("utf-8"))

    async def put_file(self, path: str | os.PathLike[str], name: str | None = None) -> ObjectInfo:
        """Store the file at ``path``, named ``name`` or the path as given."""
        path = os.fspath(path)
        with open(path, "rb") as f:
            return await self.put(ObjectMeta(name=name if name is not None else path), f)

    # -- reading ---------------------------------------------------------------------
    async def get_info(self, name: str, show_deleted: bool = False) -> ObjectInfo:
        """The info of ``name`` (``ObjectNotFoundError`` when missing, or deleted unless
        ``show_deleted``)."""
        validate_object_name(name)
        try:
            raw = await self._stream.get_last_msg_for_subject(obj_meta_subject(self._name, name))
        except MsgNotFoundError:
            raise ObjectNotFoundError(f"object {name!r} not found in bucket {self._name!r}") from None
        except StreamNotFoundError:
            raise BucketNotFoundError(f"bucket {self._name!r} not found") from None
        info = info_from_stored(raw.data, raw.time)
        if info.deleted and not show_deleted:
            raise ObjectNotFoundError(f"object {name!r} was deleted")
        return info

    async def get(self, name: str, show_deleted: bool = False, timeout: float | None = None) -> ObjectResult:
        """A readable stream of the object (links are followed). ``timeout``: seconds a
        read may wait for data (default 30)."""
        info = await self.get_info(name, show_deleted)
        if not info.nuid:
            raise BadObjectMetaError(f"object {name!r} has no nuid")
        link = info.link
        if link is not None:
            if not link.name:
                raise BadObjectMetaError(f"{name!r} links to the bucket {link.bucket!r}, not to an object")
            target = self if link.bucket == self._name else await OBJ_BUCKETS.bind(self._js, link.bucket)
            return await target.get(link.name, timeout=timeout)
        if info.size == 0 and info.chunks == 0:
            return ObjectResult(info, None, timeout)
        push = await started(PushCore(self._js, self._stream_name, self._push_heartbeat,
                                      spec={"filter_subjects": [obj_chunk_subject(self._name, info.nuid)]}))
        return ObjectResult(info, push, timeout)

    async def get_bytes(self, name: str, show_deleted: bool = False) -> bytes:
        """The whole object."""
        result = await self.get(name, show_deleted)
        try:
            return await result.read()
        finally:
            result.close()

    async def get_string(self, name: str, show_deleted: bool = False) -> str:
        """The whole object decoded as UTF-8."""
        return (await self.get_bytes(name, show_deleted)).decode("utf-8")

    async def get_file(self, name: str, path: str | os.PathLike[str], show_deleted: bool = False) -> None:
        """Write the object to the file at ``path`` (removed again if the read fails)."""
        result = await self.get(name, show_deleted)
        path = os.fspath(path)
        try:
            with open(path, "wb") as f:
                while True:
                    try:
                        chunk = await result.__anext__()
                    except StopAsyncIteration:
                        break
                    f.write(chunk)
        except BaseException:
            try:
                os.remove(path)
            except OSError:
                pass
            raise
        finally:
            result.close()

    # -- meta ------------------------------------------------------------------------
    async def update_meta(self, name: str, meta: ObjectMeta | ObjectInfo) -> ObjectInfo:
        """Change the name, description, headers and metadata of ``name`` (data and chunk
        size stay). Renaming onto an existing object raises ``ObjectAlreadyExistsError``."""
        info = await self.get_info(name)
        new = as_object_meta(meta)
        if new.name != name:
            try:
                existing = await self.get_info(new.name, show_deleted=True)
            except ObjectNotFoundError:
                existing = None
            if existing is not None and not existing.deleted:
                raise ObjectAlreadyExistsError(f"object {new.name!r} already exists")
        info.name = new.name
        info.description = new.description
        info.headers = new.headers
        info.metadata = new.metadata
        # seen through together, cancelled or not: a new meta without the old one's purge
        # would leave two names on the same chunks (a put to either purges the other's)
        await _see_through_or_raise(self._rename, info, name)
        info.mtime = _now()
        return info

    async def _rename(self, info: ObjectInfo, old_name: str) -> None:
        """Publish ``info``'s meta, then purge ``old_name``'s when the name changed."""
        await self._publish_meta(info)
        if info.name != old_name:
            await self._stream.purge(subject=obj_meta_subject(self._name, old_name))

    async def delete(self, name: str) -> None:
        """Delete ``name``: its chunks are purged; a meta with ``deleted=True`` (size 0) stays."""
        info = await self.get_info(name, show_deleted=True)
        if not info.nuid:
            raise BadObjectMetaError(f"object {name!r} has no nuid")
        nuid = info.nuid
        info.deleted = True
        info.size = 0
        info.chunks = 0
        info.digest = None
        # seen through together, cancelled or not: a deleted meta whose chunks stayed
        # would keep their storage for ever (nothing names them any more)
        await _see_through_or_raise(self._delete_chunks, info, nuid)

    async def _delete_chunks(self, info: ObjectInfo, nuid: str) -> None:
        """Publish ``info``'s (deleted) meta, then purge the chunks of ``nuid``."""
        await self._publish_meta(info)
        await self._stream.purge(subject=obj_chunk_subject(self._name, nuid))

    async def add_link(self, name: str, obj_info: ObjectInfo) -> ObjectInfo:
        """Add ``name``, a link to the object of ``obj_info`` (in this or another bucket).
        Links to links or to deleted objects raise ``LinkNotAllowedError``; an existing
        object (not a link) named ``name`` raises ``ObjectAlreadyExistsError``."""
        validate_object_name(name)
        if obj_info is None or not getattr(obj_info, "name", None):
            raise BadObjectMetaError("add_link needs the ObjectInfo of the object to link to")
        if obj_info.deleted:
            raise LinkNotAllowedError("cannot link to a deleted object")
        if obj_info.link is not None:
            raise LinkNotAllowedError("cannot link to a link")
        return await self._put_link(name, obj_info.bucket or self._name, obj_info.name)

    async def add_bucket_link(self, name: str, bucket: ObjectStore | str) -> ObjectInfo:
        """Add ``name``, a link to a whole bucket (an ``ObjectStore`` or a bucket name)."""
        validate_object_name(name)
        target = bucket.bucket if isinstance(bucket, ObjectStore) else bucket
        validate_bucket_name(target)
        return await self._put_link(name, target, None)

    async def _put_link(self, name: str, bucket: str, target: str | None) -> ObjectInfo:
        try:
            existing = await self.get_info(name, show_deleted=True)
        except ObjectNotFoundError:
            existing = None
        if existing is not None and existing.link is None:  # deleted too (as nats.go): only a link is replaced
            raise ObjectAlreadyExistsError(f"object {name!r} already exists")
        info = link_info(name, self._name, _nuid.next(), bucket, target)
        await self._publish_meta(info)
        info.mtime = _now()
        return info

    async def seal(self) -> None:
        """Seal the bucket: no more changes."""
        info = await self._stream.info()
        cfg = info.config.copy()
        cfg.sealed = True
        await self._js.update_stream(cfg)

    # -- listing ---------------------------------------------------------------------
    async def watch(self, include_history: bool = False, ignore_deletes: bool = False,
                    updates_only: bool = False) -> ObjectWatcher:
        """Watch the bucket's objects (see :class:`ObjectWatcher`)."""
        return await started(ObjectWatcher(self, include_history, ignore_deletes, updates_only))

    async def list(self, show_deleted: bool = False) -> builtins.list[ObjectInfo]:
        """Info of every object (deleted ones too with ``show_deleted``); ``[]`` when none;
        ``ConnectionClosedError`` when the connection closes before the list is complete."""
        out: list[ObjectInfo] = []
        async for info in initial_values(await self.watch(ignore_deletes=not show_deleted)):
            out.append(info)
        return out

    async def status(self) -> ObjectStoreStatus:
        try:
            info = await self._stream.info()
        except StreamNotFoundError:
            raise BucketNotFoundError(f"bucket {self._name!r} not found") from None
        return ObjectStoreStatus(info, self._name)


async def _read_chunk(reader: Any, size: int) -> bytes:
    """Up to ``size`` bytes from ``reader`` (fewer only at the end)."""
    data = await prims.call(reader.read, size)
    if not data:
        return b""
    if isinstance(data, str):
        raise TypeError("object data must be read from a binary file object")
    if len(data) >= size:
        return bytes(data)
    parts = [bytes(data)]
    got = len(data)
    while got < size:
        more = await prims.call(reader.read, size - got)
        if not more:
            break
        parts.append(bytes(more))
        got += len(more)
    return b"".join(parts)


# ---------------------------------------------------------------------------------
# bucket management (called by the JetStream context)


async def _stream_config(js: JetStream, cfg: ObjectStoreConfig) -> StreamConfig:
    return obj_stream_config(cfg)  # validates the bucket name before sending


def _obj_handle(js: JetStream, stream: Stream, bucket: str) -> ObjectStore:
    return ObjectStore(js, stream, bucket)


async def _see_through(work: Callable[..., Any],
                       *args: Any) -> tuple[BaseException | None, BaseException | None]:
    """Run ``work(*args)`` to its end: (what it failed with, the cancellation of this call
    that came meanwhile), None for none. In aio it runs in its own task, which a
    cancellation of the caller does not stop (the server may have done part of it
    already): the cancellation is noted and returned, for the caller to raise once it has
    decided."""
    # aio-only: begin
    task = asyncio.ensure_future(work(*args))
    interrupted: BaseException | None = None
    while not task.done():
        try:
            await asyncio.wait((task,))
        except asyncio.CancelledError as exc:
            interrupted = exc
    if task.cancelled():  # not by this call: the loop is ending
        return asyncio.CancelledError(), interrupted
    return task.exception(), interrupted
    # aio-only: end
    # sync-only: begin
    # try:
    #     work(*args)
    # except BaseException as exc:
    #     return exc, None
    # return None, None
    # sync-only: end


async def _see_through_or_raise(work: Callable[..., Any], *args: Any) -> None:
    """:func:`_see_through`, then raise what ``work`` failed with, else the cancellation
    that came meanwhile."""
    failed, interrupted = await _see_through(work, *args)
    if failed is not None:
        raise failed
    if interrupted is not None:
        raise interrupted


# the bucket management of object stores (js.create_object_store(), ...)
OBJ_BUCKETS: BucketKind[ObjectStore, ObjectStoreConfig, ObjectStoreStatus] = BucketKind(OBJ_STREAM_PREFIX, "$O.*.C.>", ObjectStoreConfig, _stream_config,
                                                  _obj_handle, ObjectStoreStatus)
