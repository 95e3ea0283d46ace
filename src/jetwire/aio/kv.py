"""Key-value store (ADR-8) (asyncio source; ``jetwire/_sync/kv.py`` is generated from it).

A bucket is the stream ``KV_<bucket>``; a key is the subject ``$KV.<bucket>.<key>``.
Reads use direct get (``$JS.API.DIRECT.GET.KV_<bucket>.$KV.<bucket>.<key>``) when the
stream allows it; writes are JetStream publishes (with the API prefix in front when
the context has a domain or API prefix, as nats.go does).

Watchers (and ``keys()``, ``history()``, ``purge_deletes()``, object-store watchers and
object reads) run on :class:`_OrderedPush`: an ordered, ephemeral push consumer (ack
none, flow control, idle heartbeats) delivered to a fresh inbox whose *direct* handler
runs in the connection's reader and only appends to a deque. The sans-IO
:class:`~jetwire.jetstream.kv_core.OrderedPushState` decides everything: order and
gaps (the consumer is recreated after the last stream sequence seen), when flow
control is answered (once the reader caught up) and when the initial values are done.
"""
from __future__ import annotations

from collections import deque
from datetime import datetime, timezone
from typing import Any, AsyncIterator, Deque, List, Optional, Sequence, Union

from ..errors import (
    APIError,
    BucketNotFoundError,
    JetStreamError,
    KeyDeletedError,
    KeyExistsError,
    MsgNotFoundError,
    StreamNotFoundError,
    TimeoutError,
    WrongLastSequenceError,
)
from ..jetstream._json import config_from_kwargs
from ..jetstream.kv_core import (
    PUSH_DATA,
    PUSH_FLOW_CONTROL,
    PUSH_GAP,
    PUSH_HEARTBEAT,
    ROLLUP_HDR,
    OrderedPushState,
    entry_from_delivery,
    entry_from_raw,
    key_not_found,
    kv_filter_subjects,
    purge_deletes_plan,
    push_consumer_config,
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
from ..jetstream.manage import generate_consumer_name
from ..jetstream.pull import HeartbeatMonitor
from ..jetstream.validate import validate_bucket_name, validate_key
from . import _prims as prims

__all__ = ["KeyValue", "KeyWatcher"]

_MARKER = object()  # end of the initial values, in a push consumer's queue
_END = object()  # the push consumer was stopped
_PUT = KeyValueOp.PUT
_DEL_HDRS = {KV_OPERATION_HDR: "DEL"}
_PURGE_HDRS = {KV_OPERATION_HDR: "PURGE", ROLLUP_HDR: "sub"}
_DEFAULT_API_PREFIX = "$JS.API"
_WRONG_LAST_SEQ = (10071, 10164)  # 10164: the same on replicated streams
_HB_MISSED_FACTOR = 3.0  # ADR-15: a push consumer is stalled after 3 missed heartbeats
_PUSH_HEARTBEAT = 5.0
_RESET_WAIT = 0.25
_RESET_WAIT_MAX = 2.0


def _wrong_last_seq(exc: BaseException) -> bool:
    return isinstance(exc, WrongLastSequenceError) or (isinstance(exc, APIError) and exc.err_code in _WRONG_LAST_SEQ)


def _as_value(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    raise TypeError(f"a value must be bytes (or str), not {type(value).__name__}")


# ---------------------------------------------------------------------------------
# the ordered push consumer shared by watchers and object reads


class _OrderedPush:
    """An ordered ephemeral push consumer on ``stream`` filtered to ``filters``.

    ``_next_raw()`` returns the next delivered ``Msg``, ``_MARKER`` (once, when the
    initial values are done; see :class:`OrderedPushState`) or ``_END`` once stopped.
    ``stop()`` is not a coroutine: it unsubscribes at once and asks the server to
    delete the consumer without waiting.
    """

    def __init__(self, js: Any, stream: str, filters: Sequence[str], deliver_policy: str = "all",
                 opt_start_seq: Optional[int] = None, headers_only: bool = False, initial: bool = True,
                 heartbeat: float = _PUSH_HEARTBEAT) -> None:
        self._js = js
        self._nc = js._nc
        self._stream = stream
        self._filters = list(filters)
        self._deliver_policy = deliver_policy
        self._opt_start_seq = opt_start_seq
        self._headers_only = headers_only
        self._heartbeat = heartbeat
        self._state = OrderedPushState(initial)
        self._queue: Deque[Any] = deque()
        self._signal = prims.Signal()
        self._lock = prims.write_lock()
        self._closed = False
        self._error: Optional[BaseException] = None
        self._sub: Any = None
        self._serial = 0
        self._consumer: Optional[str] = None
        self._resetting = False
        self._activity = 0
        self._timer: Any = None
        self._monitor: Optional[HeartbeatMonitor] = None
        if self._state.take_marker():  # no initial values: the marker comes first
            self._queue.append(_MARKER)

    # -- life ------------------------------------------------------------------------
    async def _start(self) -> None:
        try:
            await self._create(True)
        except BaseException:
            self.stop()
            raise
        if self._heartbeat > 0:
            self._monitor = HeartbeatMonitor(self._heartbeat, prims.monotonic(), _HB_MISSED_FACTOR)
            self._timer = prims.Timer(self._heartbeat, self._check)
        self._nc._reconnect_listeners.append(self._on_reconnect)

    async def _create(self, first: bool) -> None:
        nc = self._nc
        js = self._js
        state = self._state
        with self._lock:
            serial = state.new_consumer()
            self._serial = serial
        inbox = nc.new_inbox()

        def on_msg(msg: Any, _serial: int = serial) -> None:
            if _serial == self._serial:
                self._on_msg(msg)

        sub = nc._subscribe(inbox, None, None, 0, -1, -1, direct=on_msg)
        sub._signal = self._signal  # closing the subscription (or the connection) wakes the reader
        self._sub = sub
        name = generate_consumer_name(js._nuid)
        cfg = push_consumer_config(inbox, state.cursor, self._filters, self._deliver_policy, self._opt_start_seq,
                                   self._headers_only, self._heartbeat, name)
        subject = f"CONSUMER.CREATE.{self._stream}.{name}"
        if len(self._filters) == 1:
            subject += "." + self._filters[0]
        resp = await js._api(subject, {"stream_name": self._stream, "config": cfg})
        self._consumer = name
        if self._closed:  # stopped while the consumer was being made
            self._drop_consumer()
            return
        if first:
            delivered = (resp.get("delivered") or {}).get("consumer_seq") or 0
            with self._lock:
                state.on_created(resp.get("num_pending") or 0, delivered)
                due = state.take_marker()
                if due:
                    self._queue.append(_MARKER)
            if due:
                self._signal.set()

    def stop(self) -> None:
        """Stop: iteration ends once what was already received is taken."""
        if self._closed:
            return
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        try:
            self._nc._reconnect_listeners.remove(self._on_reconnect)
        except ValueError:
            pass
        self._drop_consumer()
        self._signal.set()

    def _drop_consumer(self) -> None:
        """Unsubscribe and ask the server to delete the consumer (without waiting)."""
        nc = self._nc
        sub = self._sub
        if sub is not None:
            nc._unsubscribe_nowait(sub)
        name = self._consumer
        self._consumer = None
        core = nc._core
        if name and core is not None and core.resp_prefix:
            # the answer goes to a token nobody waits for
            nc._publish_nowait(f"{self._js._prefix}.CONSUMER.DELETE.{self._stream}.{name}", b"",
                               core.resp_prefix + "_")

    # -- from the reader (never blocks) ------------------------------------------------
    def _on_msg(self, msg: Any) -> None:
        if self._closed:
            return
        self._activity += 1
        state = self._state
        h = msg.headers
        if h is not None and h.status is not None:
            reply = None
            with self._lock:
                kind = state.on_status(h, msg.reply)
                if kind == PUSH_FLOW_CONTROL:
                    reply = state.fc_ready()
            if kind == PUSH_FLOW_CONTROL:
                if reply:
                    self._nc._publish_nowait(reply, b"")
            elif kind == PUSH_HEARTBEAT:
                stalled = state.stalled_reply(h)
                if stalled:
                    self._nc._publish_nowait(stalled, b"")
            else:  # a gap seen by a heartbeat, consumer deleted, ...
                self._request_reset()
            return
        with self._lock:
            kind = state.on_data(msg.reply)[0]
            if kind == PUSH_DATA:
                self._queue.append(msg)
                if state.marker_due and state.take_marker():
                    self._queue.append(_MARKER)
        if kind == PUSH_DATA:
            self._signal.set()
        elif kind == PUSH_GAP:
            self._request_reset()

    # -- recreation (ADR-17) -----------------------------------------------------------
    def _check(self) -> None:  # timer
        mon = self._monitor
        if self._closed or mon is None or self._resetting:
            return
        if mon.poll(prims.monotonic(), self._activity):
            self._request_reset()

    def _on_reconnect(self) -> None:
        self._request_reset()

    def _request_reset(self) -> None:
        with self._lock:  # the reader, the timer and a reconnect may all ask at once
            if self._closed or self._resetting:
                return
            self._resetting = True
        prims.spawn_soon(self._reset)

    async def _reset(self) -> None:
        wait = _RESET_WAIT
        try:
            while not self._closed:
                if self._nc.is_closed:
                    self.stop()
                    return
                self._drop_consumer()
                try:
                    await self._create(False)
                    if self._monitor is not None:
                        self._monitor.reset(prims.monotonic(), self._activity)
                    return
                except StreamNotFoundError as exc:  # the bucket is gone: nothing to wait for
                    self._fail(exc)
                    return
                except Exception:
                    pass
                await prims.sleep(wait)
                wait = min(wait * 2, _RESET_WAIT_MAX)
        finally:
            self._resetting = False

    def _fail(self, exc: BaseException) -> None:
        self._error = exc
        self.stop()

    # -- for the reader ----------------------------------------------------------------
    async def _next_raw(self, timeout: Optional[float] = None) -> Any:
        """The next message, ``_MARKER`` or ``_END``; ``TimeoutError`` after ``timeout``
        seconds without one (None waits as long as it takes)."""
        queue = self._queue
        signal = self._signal
        deadline = None
        while True:
            if queue:
                item = queue.popleft()
                if item is not _MARKER:
                    with self._lock:
                        reply = self._state.consumed()
                    if reply:
                        self._nc._publish_nowait(reply, b"")
                return item
            if self._closed or self._sub is None or (self._sub._closed and not self._resetting):
                if self._error is not None:
                    err, self._error = self._error, None
                    raise err
                if not self._closed and self._nc.is_closed:
                    self.stop()
                return _END
            if timeout is not None:
                now = prims.monotonic()
                if deadline is None:
                    deadline = now + timeout
                elif now >= deadline:
                    raise TimeoutError(f"nothing received in {timeout}s")
            signal.clear()
            if queue or self._closed:
                continue
            await signal.wait(None if deadline is None else max(0.0, deadline - prims.monotonic()))

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.stop()


# ---------------------------------------------------------------------------------
# watcher


class KeyWatcher(_OrderedPush):
    """Iterate (``async for`` in aio) for the entries of the watched keys: first the
    initial values, then ``None`` exactly once, then live updates until :meth:`stop`.

    The ``None`` comes also when there are no initial values (an empty bucket, or
    ``updates_only=True``, where it is the first thing yielded). :meth:`next` takes one
    item with a timeout.
    """

    def __init__(self, kv: "KeyValue", filters: Sequence[str], include_history: bool = False,
                 ignore_deletes: bool = False, meta_only: bool = False, updates_only: bool = False,
                 resume_from_revision: Optional[int] = None) -> None:
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
        self._marker_sent = False

    def __repr__(self) -> str:
        return f"<KeyWatcher bucket={self._bucket!r} filters={self._filters!r}>"

    async def next(self, timeout: Optional[float] = None) -> Optional[KeyValueEntry]:
        """The next entry (or the ``None`` marker); ``TimeoutError`` after ``timeout``
        seconds; ``StopAsyncIteration`` (``StopIteration`` blocking) once stopped."""
        while True:
            item = await self._next_raw(timeout)
            if item is _END:
                raise StopAsyncIteration
            if item is _MARKER:
                if self._marker_sent:
                    continue
                self._marker_sent = True
                return None
            entry = entry_from_delivery(self._bucket, self._prefix_len, item)
            if self._ignore_deletes and entry.operation is not _PUT:
                continue
            return entry

    updates = next

    def __aiter__(self) -> "KeyWatcher":
        return self

    async def __anext__(self) -> Optional[KeyValueEntry]:
        return await self.next(None)


# ---------------------------------------------------------------------------------
# the bucket handle


class KeyValue:
    """A key-value bucket: ``js.key_value(bucket)`` or ``js.create_key_value(...)``."""

    # idle heartbeat of the watchers' consumers (seconds); 3 missed ones recreate it
    _push_heartbeat = _PUSH_HEARTBEAT

    def __init__(self, js: Any, stream: Any) -> None:
        info = stream.cached_info()
        cfg = info.config
        self._js = js
        self._stream = stream
        self._stream_name: str = cfg.name
        bucket = cfg.name[len(KV_STREAM_PREFIX):] if cfg.name.startswith(KV_STREAM_PREFIX) else cfg.name
        self._name = bucket
        self._pre = f"{KV_SUBJECT_PREFIX}{bucket}."
        put_pre = self._pre
        use_js_prefix = js._prefix != _DEFAULT_API_PREFIX
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
        self._put_pre = f"{js._prefix}.{put_pre}" if use_js_prefix else put_pre

    def __repr__(self) -> str:
        return f"<KeyValue bucket={self._name!r}>"

    @property
    def bucket(self) -> str:
        return self._name

    # -- reading ---------------------------------------------------------------------
    async def get(self, key: str, revision: Optional[int] = None) -> KeyValueEntry:
        """The latest entry of ``key`` (or the one at ``revision``).

        ``KeyNotFoundError`` when there is none (also when ``revision`` belongs to
        another key); ``KeyDeletedError`` (a ``KeyNotFoundError``; its ``entry`` is the
        marker) when the key was deleted or purged."""
        validate_key(key)
        subject = self._pre + key
        try:
            if revision is None:
                raw = await self._stream.get_last_msg_for_subject(subject)
            else:
                raw = await self._stream.get_msg(revision)
        except MsgNotFoundError:
            raise key_not_found(key, revision) from None
        if revision is not None and raw.subject != subject:
            raise key_not_found(key, revision)
        return raise_if_deleted(entry_from_raw(self._name, key, raw))

    # -- writing ---------------------------------------------------------------------
    async def put(self, key: str, value: bytes) -> int:
        """Store ``value`` under ``key``; returns the new revision."""
        validate_key(key)
        ack = await self._js.publish(self._put_pre + key, _as_value(value))
        return ack.seq

    async def create(self, key: str, value: bytes) -> int:
        """Store ``value`` only if ``key`` has no value (never written, deleted or
        purged); ``KeyExistsError`` otherwise. Returns the new revision."""
        validate_key(key)
        data = _as_value(value)
        try:
            return await self._update(key, data, 0)
        except APIError as exc:
            if not _wrong_last_seq(exc):
                raise
            err = exc
        try:
            await self.get(key)
        except KeyDeletedError as deleted:  # a delete/purge marker: create over it
            try:
                return await self._update(key, data, deleted.entry.revision)  # type: ignore[attr-defined]
            except APIError as exc:
                if not _wrong_last_seq(exc):
                    raise
                err = exc
        except JetStreamError:
            pass
        raise KeyExistsError(code=err.code, err_code=err.err_code,
                             description=f"key {key!r} exists ({err.description})") from None

    async def update(self, key: str, value: bytes, last_revision: int) -> int:
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

    async def _update(self, key: str, data: bytes, revision: int) -> int:
        ack = await self._js.publish(self._put_pre + key, data, expected_last_subject_seq=revision)
        return ack.seq

    async def delete(self, key: str, last_revision: Optional[int] = None) -> bool:
        """Add a delete marker (history stays); with ``last_revision``, only if that is
        still the latest revision (``WrongLastSequenceError`` otherwise). Returns True."""
        return await self._marker(key, _DEL_HDRS, last_revision)

    async def purge(self, key: str, last_revision: Optional[int] = None) -> bool:
        """Add a purge marker and remove every earlier revision of ``key`` (conditional
        on ``last_revision`` like :meth:`delete`). Returns True."""
        return await self._marker(key, _PURGE_HDRS, last_revision)

    async def _marker(self, key: str, headers: dict, last_revision: Optional[int]) -> bool:
        validate_key(key)
        try:
            await self._js.publish(self._put_pre + key, b"", headers=headers,
                                   expected_last_subject_seq=last_revision or None)
            return True
        except APIError as exc:
            if isinstance(exc, WrongLastSequenceError) or not _wrong_last_seq(exc):
                raise
            raise WrongLastSequenceError(code=exc.code, err_code=exc.err_code, description=exc.description) from None

    # -- watching --------------------------------------------------------------------
    async def watch(self, keys: Union[str, Sequence[str], None], include_history: bool = False,
                    ignore_deletes: bool = False, meta_only: bool = False, updates_only: bool = False,
                    resume_from_revision: Optional[int] = None) -> KeyWatcher:
        """Watch ``keys`` (a key, a pattern with ``*``/``>`` or a list of them).

        Without options the watcher yields the latest entry of each matching key, then
        ``None``, then every update. ``include_history``: every stored revision first;
        ``ignore_deletes``: skip delete/purge markers; ``meta_only``: entries without
        values (``value`` is ``b""``); ``updates_only``: no initial values (``None``
        comes first); ``resume_from_revision``: start at that revision (the entries up
        to now are the initial values)."""
        filters = kv_filter_subjects(self._pre, keys)
        w = KeyWatcher(self, filters, include_history, ignore_deletes, meta_only, updates_only, resume_from_revision)
        await w._start()
        return w

    async def watch_all(self, include_history: bool = False, ignore_deletes: bool = False, meta_only: bool = False,
                        updates_only: bool = False, resume_from_revision: Optional[int] = None) -> KeyWatcher:
        """``watch(">", ...)``: every key of the bucket."""
        return await self.watch(">", include_history, ignore_deletes, meta_only, updates_only, resume_from_revision)

    async def _initial(self, keys: Any, **options: Any) -> List[KeyValueEntry]:
        """The initial values of a watch (everything up to the ``None`` marker)."""
        w = await self.watch(keys, **options)
        out: List[KeyValueEntry] = []
        try:
            while True:
                e = await w.next(None)
                if e is None:
                    return out
                out.append(e)
        except StopAsyncIteration:
            return out
        finally:
            w.stop()

    async def keys(self, *filters: Union[str, Sequence[str]]) -> List[str]:
        """Every key that has a value (deleted and purged keys are left out), sorted,
        optionally only those matching ``filters`` (keys or patterns). An empty bucket
        gives an empty list (nats.go raises ``ErrNoKeysFound`` there)."""
        entries = await self._initial(_flatten(filters), ignore_deletes=True, meta_only=True)
        return sorted({e.key for e in entries})

    async def list_keys(self, *filters: Union[str, Sequence[str]]) -> AsyncIterator[str]:
        """Like :meth:`keys` but streamed (``async for`` in aio), in stream order,
        without loading every key first; with a bucket written to while it runs a key
        may come twice."""
        w = await self.watch(_flatten(filters), ignore_deletes=True, meta_only=True)
        try:
            while True:
                e = await w.next(None)
                if e is None:
                    return
                yield e.key
        except StopAsyncIteration:
            return
        finally:
            w.stop()

    async def history(self, key: str) -> List[KeyValueEntry]:
        """Every stored revision of ``key`` (markers included), oldest first;
        ``KeyNotFoundError`` when there is none."""
        validate_key(key)
        entries = await self._initial(key, include_history=True)
        if not entries:
            raise key_not_found(key)
        return entries

    async def purge_deletes(self, older_than: Optional[float] = 30 * 60) -> None:
        """Remove the history of deleted and purged keys. A marker younger than
        ``older_than`` seconds is kept (its older revisions go); older markers go
        too. A negative ``older_than`` removes every marker; 0/None means 30 minutes."""
        entries = await self._initial(">")
        markers = [e for e in entries if e.operation is not _PUT]
        for subject, keep in purge_deletes_plan(markers, self._pre, datetime.now(timezone.utc), older_than):
            await self._stream.purge(subject=subject, keep=keep if keep else None)

    async def status(self) -> KeyValueStatus:
        """Status and configuration of the bucket (a fresh stream info)."""
        try:
            info = await self._stream.info()
        except StreamNotFoundError:
            raise BucketNotFoundError(f"bucket {self._name!r} not found") from None
        return KeyValueStatus(info, self._name)


def _flatten(filters: Sequence[Any]) -> Optional[List[str]]:
    out: List[str] = []
    for f in filters:
        if f is None:
            continue
        if isinstance(f, str):
            out.append(f)
        else:
            out.extend(f)
    return out or None


# ---------------------------------------------------------------------------------
# bucket management (called by the JetStream context)


def _kv_config(config: Any, fields: Any) -> KeyValueConfig:
    return config_from_kwargs(KeyValueConfig, config, **fields)


async def _stream_config(js: Any, cfg: KeyValueConfig) -> Any:
    scfg = kv_stream_config(cfg)  # validates the bucket name and history before sending
    if scfg.allow_msg_ttl:
        level = (await js.account_info()).api.level
        if level < 1:
            raise JetStreamError("limit_marker_ttl needs a server with JetStream API level 1 (2.11+)")
    return scfg


async def create_key_value(js: Any, config: Any = None, **fields: Any) -> KeyValue:
    cfg = _kv_config(config, fields)
    scfg = await _stream_config(js, cfg)
    return KeyValue(js, await js.create_stream(scfg))


async def update_key_value(js: Any, config: Any = None, **fields: Any) -> KeyValue:
    cfg = _kv_config(config, fields)
    scfg = await _stream_config(js, cfg)
    try:
        stream = await js.update_stream(scfg)
    except StreamNotFoundError:
        raise BucketNotFoundError(f"bucket {cfg.bucket!r} not found") from None
    return KeyValue(js, stream)


async def create_or_update_key_value(js: Any, config: Any = None, **fields: Any) -> KeyValue:
    cfg = _kv_config(config, fields)
    scfg = await _stream_config(js, cfg)
    return KeyValue(js, await js.create_or_update_stream(scfg))


async def key_value(js: Any, bucket: str) -> KeyValue:
    validate_bucket_name(bucket)
    try:
        stream = await js.stream(kv_stream_name(bucket))
    except StreamNotFoundError:
        raise BucketNotFoundError(f"bucket {bucket!r} not found") from None
    if (stream.cached_info().config.max_msgs_per_subject or 0) < 1:
        raise JetStreamError(f"stream {kv_stream_name(bucket)!r} is not a key-value bucket")
    return KeyValue(js, stream)


async def delete_key_value(js: Any, bucket: str) -> bool:
    validate_bucket_name(bucket)
    try:
        return await js.delete_stream(kv_stream_name(bucket))
    except StreamNotFoundError:
        raise BucketNotFoundError(f"bucket {bucket!r} not found") from None


async def key_value_store_names(js: Any) -> AsyncIterator[str]:
    async for name in js.stream_names(subject=f"{KV_SUBJECT_PREFIX}*.>"):
        if name.startswith(KV_STREAM_PREFIX):
            yield name[len(KV_STREAM_PREFIX):]


async def key_value_stores(js: Any) -> AsyncIterator[KeyValueStatus]:
    async for info in js.list_streams(subject=f"{KV_SUBJECT_PREFIX}*.>"):
        name = info.config.name or ""
        if name.startswith(KV_STREAM_PREFIX):
            yield KeyValueStatus(info, name[len(KV_STREAM_PREFIX):])
