"""Key-value store (ADR-8) (asyncio source; ``jetwire/_sync/kv.py`` is generated from it).

A bucket is the stream ``KV_<bucket>``; a key is the subject ``$KV.<bucket>.<key>``.
Reads use direct get (``$JS.API.DIRECT.GET.KV_<bucket>.$KV.<bucket>.<key>``) when the
stream allows it; writes are JetStream publishes (with the API prefix in front when
the context has a domain or API prefix, as nats.go does).

Watchers (and ``keys()``, ``history()``, ``purge_deletes()`` and the object store's
watchers) are :class:`~jetwire.aio.push_core.Watcher` objects: ordered, ephemeral push
consumers of the one push-consumer machinery (``push_core.PushCore``: flow control answered once the
reader caught up, idle heartbeats, recreation after the last stream sequence seen)
that also queue the end-of-initial-values marker, yielded as ``None``.
"""
from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..errors import (
    APIError,
    BucketNotFoundError,
    InvalidOptionError,
    JetStreamError,
    KeyDeletedError,
    KeyExistsError,
    MsgNotFoundError,
    MsgTTLDisabledError,
    StreamNotFoundError,
    WrongLastSequenceError,
    payload_type_error,
)
from ..jetstream.kv_core import (
    ROLLUP_HDR,
    entry_from_delivery,
    entry_from_raw,
    key_not_found,
    kv_filter_subjects,
    purge_deletes_plan,
    raise_if_deleted,
)
from ..jetstream.kv_models import (
    KV_OPERATION_HDR,
    KV_STREAM_PREFIX,
    KV_SUBJECT_PREFIX,
    KeyValueConfig,
    KeyValueEntry,
    KeyValueOp,
    KeyValueStatus,
    kv_stream_config,
    kv_stream_name,
)
from ..jetstream.manage import publish_headers
from ..jetstream.push import DEFAULT_PUSH_HEARTBEAT
from ..jetstream.validate import validate_key
from .buckets import BucketKind
from .push_core import Watcher, initial_values, started

if TYPE_CHECKING:
    from ..jetstream.models import StreamConfig, StreamInfo
    from ..msg import Msg
    from ..protocol.headers import HeadersInit
    from .jetstream import JetStream
    from .stream import Stream

__all__ = ["KeyValue", "KeyWatcher"]

_PUT = KeyValueOp.PUT
_DEL_HDRS = {KV_OPERATION_HDR: "DEL"}
_PURGE_HDRS = {KV_OPERATION_HDR: "PURGE", ROLLUP_HDR: "sub"}
_WRONG_LAST_SEQ = (10071, 10164)  # 10164: the same on replicated streams


def _wrong_last_seq(exc: BaseException) -> bool:
    return isinstance(exc, WrongLastSequenceError) or (isinstance(exc, APIError) and exc.err_code in _WRONG_LAST_SEQ)


def _as_value(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    raise payload_type_error(value, "value", "str")


# ---------------------------------------------------------------------------------
# watcher


class KeyWatcher(Watcher[KeyValueEntry]):
    """Iterate (with ``async for``) for the entries of the watched keys: first the
    initial values, then ``None`` exactly once, then live updates until :meth:`stop`.

    The ``None`` comes also when there are no initial values (an empty bucket, or
    ``updates_only=True``, where it is the first thing yielded). :meth:`next` takes one
    item with a timeout. After :meth:`stop` iteration ends quietly; when the connection
    closes (or drains) under the watcher, ``ConnectionClosedError`` once what arrived
    before is taken.
    """

    def __init__(self, kv: KeyValue, filters: Sequence[str], include_history: bool = False,
                 ignore_deletes: bool = False, meta_only: bool = False, updates_only: bool = False,
                 resume_from_revision: int | None = None) -> None:
        if include_history and updates_only:  # (nats.go: ErrInvalidOption)
            raise InvalidOptionError("include_history and updates_only cannot be used together")
        if resume_from_revision:
            policy, start = "by_start_sequence", int(resume_from_revision)
        elif updates_only:
            policy, start = "new", None
        elif include_history:
            policy, start = "all", None
        else:
            policy, start = "last_per_subject", None
        super().__init__(kv._js, kv._stream_name, filters, policy, start, meta_only,
                         initial=not (updates_only and not resume_from_revision), heartbeat=kv._push_heartbeat)
        self._bucket = kv._name
        self._prefix_len = len(kv._pre)
        self._ignore_deletes = ignore_deletes

    def __repr__(self) -> str:
        return f"<KeyWatcher bucket={self._bucket!r} filters={self._filters!r}>"

    def _item(self, msg: Msg) -> KeyValueEntry | None:
        entry = entry_from_delivery(self._bucket, self._prefix_len, msg)
        if self._ignore_deletes and entry.operation is not _PUT:
            return None
        return entry


# ---------------------------------------------------------------------------------
# the bucket handle


class KeyValue:
    """A key-value bucket: ``js.key_value(bucket)`` or ``js.create_key_value(...)``."""

    # idle heartbeat of the watchers' consumers (seconds); 3 missed ones recreate it
    _push_heartbeat = DEFAULT_PUSH_HEARTBEAT

    def __init__(self, js: JetStream, stream: Any) -> None:
        info = stream.cached_info()
        cfg = info.config
        self._js = js
        self._stream = stream
        self._stream_name: str = cfg.name
        bucket = cfg.name[len(KV_STREAM_PREFIX):] if cfg.name.startswith(KV_STREAM_PREFIX) else cfg.name
        self._name: str = bucket
        self._pre = f"{KV_SUBJECT_PREFIX}{bucket}."
        put_pre = self._pre
        use_js_prefix = not js.api.default_prefix
        mirror = cfg.mirror
        if mirror is not None and mirror.name:
            # a mirror stores (and is written through) the subjects of its origin
            origin = mirror.name[len(KV_STREAM_PREFIX):] if mirror.name.startswith(KV_STREAM_PREFIX) else mirror.name
            self._pre = f"{KV_SUBJECT_PREFIX}{origin}."
            ext = mirror.external
            if ext is not None and ext.api:
                use_js_prefix = False
                put_pre = f"{ext.api}.{KV_SUBJECT_PREFIX}{origin}."
            else:
                put_pre = self._pre
        self._put_pre = f"{js.api.prefix}.{put_pre}" if use_js_prefix else put_pre

    def __repr__(self) -> str:
        return f"<KeyValue bucket={self._name!r}>"

    @property
    def bucket(self) -> str:
        return self._name

    # -- reading ---------------------------------------------------------------------
    async def get(self, key: str, revision: int | None = None) -> KeyValueEntry:
        """The latest entry of ``key`` (or the one at ``revision``; 0 is the latest too).

        ``KeyNotFoundError`` when there is none (also when ``revision`` belongs to
        another key); ``KeyDeletedError`` (a ``KeyNotFoundError``; its ``entry`` is the
        marker) when the key was deleted or purged."""
        validate_key(key)
        subject = self._pre + key
        try:
            if not revision:  # None or 0: the latest (nats.go's kvLatestRevision is 0)
                raw = await self._stream.get_last_msg_for_subject(subject)
            else:
                raw = await self._stream.get_msg(revision)
        except MsgNotFoundError:
            raise key_not_found(key, revision) from None
        if revision and raw.subject != subject:
            raise key_not_found(key, revision)
        return raise_if_deleted(entry_from_raw(self._name, key, raw))

    # -- writing ---------------------------------------------------------------------
    async def put(self, key: str, value: bytes | bytearray | memoryview) -> int:
        """Store ``value`` under ``key``; returns the new revision."""
        validate_key(key)
        ack = await self._js.publish(self._put_pre + key, _as_value(value))
        return ack.seq

    async def create(self, key: str, value: bytes | bytearray | memoryview, ttl: float | None = None) -> int:
        """Store ``value`` only if ``key`` has no value (never written, deleted or
        purged); ``KeyExistsError`` otherwise. Returns the new revision.

        ``ttl`` (seconds, at least 1): the value is removed that long after it was
        stored (a per-message TTL); the bucket needs ``limit_marker_ttl``, else
        ``MsgTTLDisabledError``."""
        validate_key(key)
        data = _as_value(value)
        hdrs = None if ttl is None else publish_headers(None, None, None, None, None, None, ttl)
        try:
            return await self._update(key, data, 0, hdrs)
        except APIError as exc:
            if not _wrong_last_seq(exc):
                raise
            err = exc
        try:
            await self.get(key)
        except KeyDeletedError as deleted:  # a delete/purge marker: create over it
            try:
                return await self._update(key, data, deleted.entry.revision, hdrs)  # type: ignore[attr-defined]
            except APIError as exc:
                if not _wrong_last_seq(exc):
                    raise
                err = exc
        except JetStreamError:
            pass
        raise KeyExistsError(code=err.code, err_code=err.err_code,
                             description=f"key {key!r} exists ({err.description})") from None

    async def update(self, key: str, value: bytes | bytearray | memoryview, last_revision: int) -> int:
        """Store ``value`` only if the latest revision of ``key`` is ``last_revision``;
        ``WrongLastSequenceError`` otherwise. Returns the new revision."""
        validate_key(key)
        data = _as_value(value)
        try:
            return await self._update(key, data, last_revision)
        except APIError as exc:
            if isinstance(exc, WrongLastSequenceError) or not _wrong_last_seq(exc):
                raise
            raise WrongLastSequenceError(code=exc.code, err_code=exc.err_code, description=exc.description) from None

    async def _update(self, key: str, data: bytes, revision: int, headers: HeadersInit | None = None) -> int:
        try:
            ack = await self._js.publish(self._put_pre + key, data, headers, expected_last_subject_seq=revision)
        except MsgTTLDisabledError as exc:
            raise self._no_ttl(exc) from None
        return ack.seq

    def _no_ttl(self, exc: MsgTTLDisabledError) -> MsgTTLDisabledError:
        return MsgTTLDisabledError(code=exc.code, err_code=exc.err_code,
                                   description=f"bucket {self._name!r} does not allow per-key TTLs (create it "
                                               f"with limit_marker_ttl): {exc.description}")

    async def delete(self, key: str, last_revision: int | None = None) -> bool:
        """Add a delete marker (history stays); with ``last_revision``, only if that is
        still the latest revision (``WrongLastSequenceError`` otherwise). Returns True."""
        return await self._marker(key, _DEL_HDRS, last_revision)

    async def purge(self, key: str, last_revision: int | None = None, ttl: float | None = None) -> bool:
        """Add a purge marker and remove every earlier revision of ``key`` (conditional
        on ``last_revision`` like :meth:`delete`). Returns True. ``ttl`` (seconds, at
        least 1): the marker itself is removed that long after (a limit marker; the
        bucket needs ``limit_marker_ttl``, else ``MsgTTLDisabledError``)."""
        return await self._marker(key, _PURGE_HDRS, last_revision, ttl)

    async def _marker(self, key: str, headers: dict[str, str], last_revision: int | None, ttl: float | None = None) -> bool:
        validate_key(key)
        try:
            await self._js.publish(self._put_pre + key, b"", headers=headers,
                                   expected_last_subject_seq=last_revision or None, ttl=ttl)
            return True
        except MsgTTLDisabledError as exc:
            raise self._no_ttl(exc) from None
        except APIError as exc:
            if isinstance(exc, WrongLastSequenceError) or not _wrong_last_seq(exc):
                raise
            raise WrongLastSequenceError(code=exc.code, err_code=exc.err_code, description=exc.description) from None

    # -- watching --------------------------------------------------------------------
    async def watch(self, keys: str | Sequence[str] | None, include_history: bool = False,
                    ignore_deletes: bool = False, meta_only: bool = False, updates_only: bool = False,
                    resume_from_revision: int | None = None) -> KeyWatcher:
        """Watch ``keys`` (a key, a pattern with ``*``/``>`` or a list of them).

        Without options the watcher yields the latest entry of each matching key, then
        ``None``, then every update. ``include_history``: every stored revision first;
        ``ignore_deletes``: skip delete/purge markers; ``meta_only``: entries without
        values (``value`` is ``b""``); ``updates_only``: no initial values (``None``
        comes first); ``resume_from_revision``: start at that revision (the entries up
        to now are the initial values)."""
        filters = kv_filter_subjects(self._pre, keys)
        return await started(KeyWatcher(self, filters, include_history, ignore_deletes, meta_only, updates_only,
                                        resume_from_revision))

    async def watch_all(self, include_history: bool = False, ignore_deletes: bool = False, meta_only: bool = False,
                        updates_only: bool = False, resume_from_revision: int | None = None) -> KeyWatcher:
        """``watch(">", ...)``: every key of the bucket."""
        return await self.watch(">", include_history, ignore_deletes, meta_only, updates_only, resume_from_revision)

    async def _initial(self, keys: Any, **options: Any) -> list[KeyValueEntry]:
        """The initial values of a watch (everything up to the ``None`` marker)."""
        out: list[KeyValueEntry] = []
        async for e in initial_values(await self.watch(keys, **options)):
            out.append(e)
        return out

    async def keys(self, *filters: str | Sequence[str]) -> list[str]:
        """Every key that has a value (deleted and purged keys are left out), sorted,
        optionally only those matching ``filters`` (keys or patterns). An empty bucket
        gives an empty list (nats.go raises ``ErrNoKeysFound`` there).
        ``ConnectionClosedError`` when the connection closes before the list is complete."""
        entries = await self._initial(_flatten(filters), ignore_deletes=True, meta_only=True)
        return sorted({e.key for e in entries})

    async def list_keys(self, *filters: str | Sequence[str]) -> AsyncIterator[str]:
        """Like :meth:`keys` but streamed (iterate with ``async for``), in stream order,
        without loading every key first; with a bucket written to while it runs a key
        may come twice."""
        w = await self.watch(_flatten(filters), ignore_deletes=True, meta_only=True)
        try:
            async for e in initial_values(w):
                yield e.key
        finally:
            w.stop()  # (now, when the caller leaves the listing early)

    async def history(self, key: str) -> list[KeyValueEntry]:
        """Every stored revision of ``key`` (markers included), oldest first;
        ``KeyNotFoundError`` when there is none."""
        validate_key(key)
        entries = await self._initial(key, include_history=True)
        if not entries:
            raise key_not_found(key)
        return entries

    async def purge_deletes(self, older_than: float | None = 30 * 60) -> None:
        """Remove the history of deleted and purged keys. A marker younger than
        ``older_than`` seconds is kept (its older revisions go); older markers go
        too. A negative ``older_than`` removes every marker; 0/None means 30 minutes."""
        entries = await self._initial(">")
        markers = [e for e in entries if e.operation is not _PUT]
        for subject, keep in purge_deletes_plan(markers, self._pre, datetime.now(UTC), older_than):
            await self._stream.purge(subject=subject, keep=keep if keep else None)

    async def status(self) -> KeyValueStatus:
        """Status and configuration of the bucket (a fresh stream info)."""
        try:
            info = await self._stream.info()
        except StreamNotFoundError:
            raise BucketNotFoundError(f"bucket {self._name!r} not found") from None
        return KeyValueStatus(info, self._name)


def _flatten(filters: Sequence[Any]) -> list[str] | None:
    out: list[str] = []
    for f in filters:
        if f is None:
            continue
        if isinstance(f, str):
            out.append(f)
        else:
            out.extend(f)
    return out or None


# ---------------------------------------------------------------------------------
# bucket management (KV_BUCKETS, called by the JetStream context)


async def _stream_config(js: JetStream, cfg: KeyValueConfig) -> StreamConfig:
    scfg = kv_stream_config(cfg)  # validates the bucket name and history before sending
    if scfg.allow_msg_ttl:
        level = (await js.account_info()).api.level
        if level < 1:
            raise JetStreamError("limit_marker_ttl needs a server with JetStream API level 1 (2.11+)")
    return scfg


def _check_kv(info: StreamInfo, bucket: str) -> None:
    if (info.config.max_msgs_per_subject or 0) < 1:
        raise JetStreamError(f"stream {kv_stream_name(bucket)!r} is not a key-value bucket")


def _kv_handle(js: JetStream, stream: Stream, bucket: str) -> KeyValue:
    return KeyValue(js, stream)  # the bucket's name is the stream's (or its mirror's origin)


# the bucket management of key-value stores (js.create_key_value(), ...)
KV_BUCKETS: BucketKind[KeyValue, KeyValueConfig, KeyValueStatus] = BucketKind(KV_STREAM_PREFIX, f"{KV_SUBJECT_PREFIX}*.>", KeyValueConfig,
                                              _stream_config, _kv_handle, KeyValueStatus, _check_kv,
                                              frozenset({"discard", "allow_direct"}))
