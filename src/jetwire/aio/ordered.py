"""Ordered consumers (ADR-17), pull based (asyncio source; ``jetwire/_sync/ordered.py`` is
generated from it).

An :class:`OrderedConsumer` reads a stream in order without gaps or duplicates through a
series of ephemeral pull consumers (ack none, max_deliver 1, memory storage, one
replica). It hands out only the message whose consumer sequence follows the last one
delivered; on a gap, missed heartbeats, deletion of the consumer (409) or a reconnect it
drops the consumer and creates a new one starting at the last delivered stream sequence
+ 1. It reuses the pull machinery of :mod:`.consumer` (one implementation): this file
only adds the sequence check and the recreation.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .._nuid import NUID
from .._typing import JSONObject
from .._units import format_rfc3339
from ..errors import (
    APIError,
    ConnectionClosedError,
    ConsumerNotFoundError,
    JetStreamError,
    OrderedConsumerResetError,
    StreamNotFoundError,
    TimeoutError,
)
from ..jetstream.manage import validate_filter_subjects
from ..jetstream.models import ConsumerInfo, DeliverPolicy, ReplayPolicy
from ..jetstream.pull import DEFAULT_MAX_MESSAGES, RESET_DELAY, RESET_DELAY_MAX, OrderedCursor, ordered_config
from ..msg import Msg
from . import _prims as prims
from .consumer import ConsumeContext, Consumer, MessageBatch, MessagesContext, abandon, parse_fields
from .push_core import made_or_undone  # aio-only

if TYPE_CHECKING:
    from .jetstream import JetStream

_DELETE_TIMEOUT = 2.0

_nuid = NUID()


async def start_ordered_consumer(js: JetStream, stream: str, **options: Any) -> OrderedConsumer:
    """An ordered consumer on ``stream`` with its first consumer made (checks the
    stream exists): ``js.ordered_consumer(stream, **options)``."""
    oc = OrderedConsumer(js, stream, **options)
    await oc._start()
    return oc


class OrderedConsumer(Consumer):
    """In-order, gap-free reading of a stream (``js.ordered_consumer(stream, ...)``).

    Same methods as :class:`Consumer` (``fetch``, ``fetch_bytes``, ``fetch_no_wait``,
    ``next``, ``consume``, ``messages``, ``info``, ``cached_info``); only one fetch,
    consume or messages may run at a time: a new one stops a batch still running, and
    continues right after the last message read (what a batch held unread is dropped).
    ``max_reset_attempts`` (None = unlimited) bounds the attempts to recreate the
    consumer in a row, after which ``OrderedConsumerResetError`` is raised (or reported
    to ``error_cb``).
    """

    def __init__(self, js: JetStream, stream: str, filter_subjects: str | Sequence[str] | None = None,
                 deliver_policy: DeliverPolicy | str = DeliverPolicy.ALL, opt_start_seq: int | None = None,
                 opt_start_time: datetime | None = None, replay_policy: ReplayPolicy | str = ReplayPolicy.INSTANT,
                 inactive_threshold: float | None = 300.0, headers_only: bool = False,
                 max_reset_attempts: int | None = None, metadata: dict[str, str] | None = None) -> None:
        self._js = js
        self._link = js.api.link
        self._stream = stream
        self._cursor = OrderedCursor()
        self._prefix = _nuid.next()
        if isinstance(filter_subjects, str):
            filter_subjects = [filter_subjects]
        self._filters: list[str] = list(filter_subjects or [])
        validate_filter_subjects(self._filters)
        self._deliver_policy = deliver_policy
        self._opt_start_seq = opt_start_seq
        self._opt_start_time = format_rfc3339(opt_start_time) if isinstance(opt_start_time, datetime) else opt_start_time
        self._replay_policy = replay_policy
        self._inactive_threshold = inactive_threshold
        self._headers_only = headers_only
        self._metadata = metadata
        self._max_resets = max_reset_attempts if max_reset_attempts and max_reset_attempts > 0 else None
        self._current: Consumer | None = None
        self._current_gone = False  # its deletion was sent (_drop_current): not asked again
        self._name = ""
        self._info: Any = None
        self._next_subject = ""
        self._active: Any = None  # the running consume()/messages() context
        self._batch: MessageBatch | None = None  # the last fetch
        self._need_reset = False
        self._pulling = threading.Lock()  # held by the fetch or next() under way (one at a time)

    def __repr__(self) -> str:
        return f"<OrderedConsumer stream={self._stream!r} name={self._name!r}>"

    async def _start(self) -> OrderedConsumer:
        """Create the first consumer (checks the stream exists)."""
        await self._create()
        return self

    def _ordered_flag(self) -> bool:
        return True

    def _target(self) -> Consumer:
        assert self._current is not None
        return self._current

    @property
    def stream_seq(self) -> int:
        """Stream sequence of the last message handed out (0 before any)."""
        return self._cursor.stream_seq

    # -- consumer lifecycle ----------------------------------------------------------
    async def _create(self, timeout: float | None = None) -> None:
        serial = self._cursor.new_consumer()
        name = f"{self._prefix}_{serial}"
        cfg = ordered_config(name, self._cursor, self._filters, self._deliver_policy, self._opt_start_seq,
                             self._opt_start_time, self._replay_policy, self._inactive_threshold,
                             self._headers_only, metadata=self._metadata)
        subject = f"CONSUMER.CREATE.{self._stream}.{name}"
        body: JSONObject = {"stream_name": self._stream, "config": cfg, "action": "create"}
        try:
            resp = await made_or_undone(self._js.api_request(subject, body, timeout),  # aio-only
                                        lambda: self._drop(name))  # aio-only
            # sync-only: resp = self._js.api_request(subject, body, timeout)
        except APIError:
            raise  # refused: nothing was made
        except BaseException:
            # perhaps made all the same (an answer lost to a timeout, a cancelled caller): it
            # must not stay behind, unread, until its inactive threshold
            self._drop(name)
            raise
        resp.pop("type", None)
        info = ConsumerInfo.from_json(resp)
        cons = Consumer(self._js, self._stream, info)
        self._current = cons
        self._current_gone = False
        self._name = cons._name
        self._info = info
        self._next_subject = cons._next_subject
        self._need_reset = False

    def _drop(self, name: str) -> None:
        """Ask the server to delete consumer ``name`` without waiting (best effort; one that
        was never made is no harm)."""
        try:
            self._js.api.request_nowait(f"CONSUMER.DELETE.{self._stream}.{name}")
        except Exception:
            pass

    def _drop_current(self) -> None:
        """Delete the current consumer without waiting (best effort), nothing using it any
        more; the next use starts from a fresh one."""
        cur = self._current
        self._need_reset = True
        if cur is None or self._current_gone:
            return
        self._current_gone = True
        self._drop(cur._name)

    async def _delete_current(self, deadline: float | None = None) -> None:
        cur = self._current
        if cur is None or self._current_gone:
            return
        timeout = min(self._js.api.timeout, _DELETE_TIMEOUT)
        if deadline is not None:
            timeout = min(timeout, deadline - prims.monotonic())
            if timeout <= 0:  # no time for it: it goes away when inactive
                self._drop_current()
                return
        try:
            await self._js.api_request(f"CONSUMER.DELETE.{self._stream}.{cur._name}", timeout=timeout)
        except Exception:
            pass  # best effort: it is ephemeral and goes away when inactive

    async def _recreate(self, sleep: Callable[[float], Any] | None = None, deadline: float | None = None) -> None:
        """Delete the current consumer (best effort) and create the next one, retrying with
        backoff; ``OrderedConsumerResetError`` after ``max_reset_attempts`` failures,
        ``StreamNotFoundError`` at once when the stream is gone, ``ConnectionClosedError``
        at once when the connection closed, and ``TimeoutError`` (naming the last failure)
        at ``deadline`` (``prims.monotonic()`` time; None: no bound but the attempts')."""
        await self._delete_current(deadline)
        attempts = 0
        delay = RESET_DELAY
        last: BaseException | None = None
        while True:
            left = None if deadline is None else deadline - prims.monotonic()
            if left is not None and left <= 0:
                why = f": {last}" if last is not None else ""
                raise TimeoutError(f"the ordered consumer could not be recreated in time{why}") from last
            if self._js.api.link.is_closed:
                raise ConnectionClosedError("connection closed")
            try:
                await self._create(None if left is None else min(left, self._js.api.timeout))
                return
            except StreamNotFoundError as exc:  # recreating cannot help: say what is gone
                raise StreamNotFoundError(code=exc.code, err_code=exc.err_code,
                                          description=f"{exc.description} (ordered consumer on stream "
                                                      f"{self._stream!r})") from exc
            except ConnectionClosedError:
                raise
            except Exception as exc:
                last = exc
                attempts += 1
                if self._max_resets is not None and attempts >= self._max_resets:
                    raise OrderedConsumerResetError(
                        f"could not recreate the ordered consumer after {attempts} attempts: {exc}") from exc
            pause = delay if deadline is None else max(0.0, min(delay, deadline - prims.monotonic()))
            if sleep is None:
                await prims.sleep(pause)
            elif not await sleep(pause):
                raise OrderedConsumerResetError("ordered consumer stopped while resetting")
            delay = min(delay * 2, RESET_DELAY_MAX)

    def _accept(self, msg: Msg) -> bool | None:
        """True: next in order (the cursor moves). False: a gap. None: from an older consumer."""
        f = parse_fields(msg.reply)
        if f[3] != self._name:
            return None
        return self._cursor.take(f[5], f[6]) is True  # a stale one is a gap here too

    def _fetch_accept(self, msg: Msg) -> bool:
        ok = self._accept(msg)
        if not ok:
            self._need_reset = True
            return False
        return True

    def _ctx_done(self, ctx: Any) -> None:
        """A consume()/messages() context ended (stopped, drained, done, failed): its
        server consumer is deleted now (best effort, not waited for) rather than left to
        its ``inactive_threshold``; a later use starts from a fresh consumer. (One-off
        ``next()``/fetch keep theirs: the next call goes on with it, as in nats.go.)"""
        if self._active is ctx:
            self._active = None
            self._need_reset = True
        elif self._active is not None:
            return  # another context runs on the current consumer
        if self._pulling.locked() or (self._batch is not None and not self._batch.done):
            return  # a fetch or next() under way uses (or makes) the current one
        self._drop_current()

    def _check_idle(self) -> None:
        if self._active is not None and not self._active.is_closed:
            raise JetStreamError("ordered consumer is already consuming: stop it first")

    # -- one-off pulls ---------------------------------------------------------------
    async def _prepare(self, fetch: bool, deadline: float | None = None) -> None:
        """Before a pull: nothing else may be consuming; the next pull starts from a fresh
        consumer, right after the last message the user read, when the last batch is still
        running (it is stopped), ended with messages left unread (they are dropped: the
        server's consumer delivered past them), or (a fetch) failed; the consumer is
        (re)created when needed."""
        self._check_idle()
        b = self._batch
        if b is not None:
            if abandon(b, unread=True) or (fetch and b.error is not None):
                self._need_reset = True
            self._batch = None
        if self._current is None or self._need_reset:
            # (by default within the API timeout: a consumer that cannot be made now says so)
            await self._recreate(deadline=prims.monotonic() + self._js.api.timeout if deadline is None else deadline)

    def _enter(self) -> None:
        """One fetch or ``next()`` at a time: another one under way (another thread or
        task) would restart the consumer under it and both would get the same messages
        (nats.go: ErrOrderedConsumerConcurrentRequests)."""
        if not self._pulling.acquire(False):
            raise JetStreamError("ordered consumer: concurrent requests (one fetch or next() at a time)")

    async def _fetch(self, batch: int, max_bytes: int, max_wait: float | None, heartbeat: float | None,
                     no_wait: bool, accept: Callable[[Msg], bool] | None,
                     prio: JSONObject | None = None, confirm: bool = False, what: str = "max_wait") -> MessageBatch:
        self._enter()
        try:
            return await self._fetch_one(batch, max_bytes, max_wait, heartbeat, no_wait, confirm, what)
        finally:
            self._pulling.release()

    async def _fetch_one(self, batch: int, max_bytes: int, max_wait: float | None, heartbeat: float | None,
                         no_wait: bool, confirm: bool, what: str, deadline: float | None = None) -> MessageBatch:
        # a lost consumer is recreated, not reported: the fetch is confirmed (a 503 before
        # the PONG), then pulled again from a new consumer; a lost stream raises
        await self._prepare(True, deadline)
        try:
            mb = await Consumer._fetch(self._target(), batch, max_bytes, max_wait, heartbeat, no_wait,
                                       self._fetch_accept, confirm=confirm, what=what)
        except ConsumerNotFoundError:  # its consumer is gone, the stream is there
            self._need_reset = True
            await self._prepare(True, deadline)
            mb = await Consumer._fetch(self._target(), batch, max_bytes, max_wait, heartbeat, no_wait,
                                       self._fetch_accept, what=what)
        self._batch = mb
        return mb

    async def next(self, timeout: float = 30.0, heartbeat: float | None = None) -> Msg:  # type: ignore[override]
        """The next message in order; ``TimeoutError`` when none arrives within ``timeout``.
        A gap or a lost consumer is repaired (recreated) within the same ``timeout``.
        ``JetStreamError`` when another fetch or ``next()`` is under way (one at a time)."""
        deadline = prims.monotonic() + timeout
        last: BaseException | None = None
        self._enter()
        try:
            while True:
                remaining = deadline - prims.monotonic()
                if remaining <= 0:
                    if last is not None:
                        raise last
                    raise TimeoutError(f"no message from ordered consumer within {timeout}s")
                hb = heartbeat if heartbeat is not None and remaining >= 2 * heartbeat else None
                mb = await self._fetch_one(1, 0, remaining, hb, False, False, "max_wait", deadline)
                async for msg in mb:
                    return msg
                if mb.error is not None:
                    last = mb.error
                elif not self._need_reset:
                    raise TimeoutError(f"no message from ordered consumer within {timeout}s")
        finally:
            self._pulling.release()

    # -- continuous pulls ------------------------------------------------------------
    async def consume(self, cb: Callable[[Msg], object], max_messages: int | None = DEFAULT_MAX_MESSAGES,
                      max_bytes: int | None = None, expires: float = 30.0,
                      threshold_messages: int | None = None, threshold_bytes: int | None = None,
                      heartbeat: float | None = None, error_cb: Callable[..., object] | None = None,
                      stop_after: int | None = None, group: str | None = None,
                      min_pending: int | None = None, min_ack_pending: int | None = None,
                      priority: int | None = None) -> ConsumeContext:
        """Like :meth:`Consumer.consume`; consumer deletion and missed heartbeats are reported
        to ``error_cb`` and repaired by recreating the consumer."""
        await self._prepare(fetch=False)
        ctx = await Consumer.consume(
            self, cb, max_messages=max_messages, max_bytes=max_bytes, expires=expires,
            threshold_messages=threshold_messages, threshold_bytes=threshold_bytes, heartbeat=heartbeat,
            error_cb=error_cb, stop_after=stop_after, group=group, min_pending=min_pending,
            min_ack_pending=min_ack_pending, priority=priority)
        self._active = ctx
        return ctx

    async def messages(self, max_messages: int | None = DEFAULT_MAX_MESSAGES, max_bytes: int | None = None,
                       expires: float = 30.0, heartbeat: float | None = None,
                       threshold_messages: int | None = None,
                       threshold_bytes: int | None = None, err_on_missing_heartbeat: bool = True,
                       group: str | None = None, min_pending: int | None = None,
                       min_ack_pending: int | None = None, priority: int | None = None) -> MessagesContext:
        """Like :meth:`Consumer.messages`; gaps, deletion and missed heartbeats are repaired
        quietly by recreating the consumer."""
        await self._prepare(fetch=False)
        ctx = await Consumer.messages(
            self, max_messages=max_messages, max_bytes=max_bytes, expires=expires, heartbeat=heartbeat,
            threshold_messages=threshold_messages, threshold_bytes=threshold_bytes,
            err_on_missing_heartbeat=err_on_missing_heartbeat, group=group, min_pending=min_pending,
            min_ack_pending=min_ack_pending, priority=priority)
        self._active = ctx
        return ctx

    async def info(self) -> ConsumerInfo:
        """Info of the current underlying consumer."""
        info = await self._target().info()
        self._info = info
        return info

    def cached_info(self) -> ConsumerInfo:
        info: ConsumerInfo = self._info
        return info


__all__ = ["OrderedConsumer"]
