"""Push consumers (asyncio source; ``jetwire/_sync/push.py`` is generated from it).

One machinery, :class:`_PushConsumer`, runs every push consumer of the client: the
plain and ordered subscriptions of nats.go's legacy ``js.subscribe`` (below), and the
ordered consumers behind KV watchers, ``keys()``, ``history()``, ``purge_deletes()``,
object-store watchers and object reads (``kv.py``, ``objects.py``).

The deliver subject's *direct* handler runs in the connection's reader and only hands
each message to the sans-IO :class:`~jetwire.jetstream.push.PushState`, which decides:
data goes to a deque (ordered: only the next in order; a gap recreates the consumer),
a flow-control request is answered once the reader took everything that arrived
before it (memory stays bounded by the server's window), a heartbeat carrying
``Nats-Consumer-Stalled`` is answered at once (ADR-9, ADR-15), and watchers get their
end-of-initial-values marker. Missed idle heartbeats (3 intervals) are noticed by a
timer. An ordered consumer (ADR-17) is recreated in the background, from the stream
sequence after the last one delivered, on gaps, missed heartbeats, other status
messages (409 consumer deleted) and reconnects.

``js.subscribe(subject, ...)`` finds the stream that stores ``subject``, creates (or
binds to) a push consumer delivering to an inbox (or a deliver group for queue
subscribers) and returns a :class:`PushSubscription`: ``next_msg()``, iteration,
``unsubscribe()``, ``drain()``, ``consumer_info()``. Status messages never reach the
user; missed heartbeats of a plain consumer are reported as ``NoHeartbeatError``.
"""
from __future__ import annotations

import inspect
import logging
from collections import deque
from typing import Any, Callable, Deque, Dict, Optional, TypeVar

from ..errors import (
    ConnectionClosedError,
    ConsumerNotFoundError,
    JetStreamError,
    NatsError,
    NoHeartbeatError,
    StreamNotFoundError,
    SubscriptionClosedError,
    TimeoutError,
)
from ..jetstream._json import config_from_kwargs
from ..jetstream.manage import consumer_create_subject, validate_filter_subjects
from ..jetstream.models import AckPolicy, ConsumerConfig, ConsumerInfo
from ..jetstream.pull import RESET_DELAY, RESET_DELAY_MAX, HeartbeatMonitor
from ..jetstream.push import (
    DEFAULT_PUSH_HEARTBEAT,
    MISSED_HEARTBEATS,
    PUSH_DATA,
    PUSH_FLOW_CONTROL,
    PUSH_GAP,
    PUSH_STATUS,
    PushState,
    push_consumer_config,
)
from ..msg import Msg
from . import _prims as prims
from .client import Subscription

log = logging.getLogger("jetwire")

_isawaitable = inspect.isawaitable

_MARKER = object()  # end of the initial values, in a push consumer's queue
_END = object()  # the push consumer was stopped (or its subscription ended)

P = TypeVar("P", bound="_PushConsumer")


# ---------------------------------------------------------------------------------
# the machinery


async def started(pc: "P") -> "P":
    """``pc`` (a :class:`_PushConsumer` made with a ``spec``) with its first consumer
    made: how kv.py and objects.py start their watchers and readers."""
    await pc._start()
    return pc


async def next_raw(pc: "_PushConsumer", timeout: Optional[float] = None) -> Any:
    """The next delivery of ``pc``: a ``Msg``, ``_MARKER`` or ``_END`` (see
    :meth:`_PushConsumer._next_raw`)."""
    return await pc._next_raw(timeout)


class _PushConsumer:
    """One push consumer as the client sees it.

    ``spec`` None: a plain consumer made (or bound) by someone else; :meth:`_listen`
    subscribes its deliver subject. Otherwise an ordered, ephemeral consumer on
    ``stream`` made here from ``spec`` (the keyword arguments of
    :func:`~jetwire.jetstream.push.push_consumer_config`: ``filter_subjects``,
    ``deliver_policy``, ...) by :meth:`_start`, delivered to a fresh inbox, and
    recreated whenever it breaks. ``marker``: queue ``_MARKER`` once the initial
    values (what was pending when the consumer was made) have arrived; ``initial``
    False: there are none, the marker comes first.

    ``_next_raw()`` returns the next delivered ``Msg``, ``_MARKER`` or ``_END`` once
    stopped. :meth:`stop` is not a coroutine: it unsubscribes at once and asks the
    server to delete a consumer made here without waiting.
    """

    _report_status = False  # report status messages other than 100 to the error callback

    def __init__(self, js: Any, stream: str, heartbeat: float = DEFAULT_PUSH_HEARTBEAT,
                 spec: Optional[Dict[str, Any]] = None, initial: bool = True, marker: bool = True) -> None:
        self._js = js
        self._link = js.api.link
        self._stream = stream
        self._heartbeat = heartbeat
        self._spec = spec
        self._state = PushState(initial, ordered=spec is not None, marker=marker)
        self._queue: Deque[Any] = deque()
        self._signal = prims.Signal()
        self._lock = prims.write_lock()
        self._closed = False
        self._draining = False
        self._error: Optional[BaseException] = None
        self._sub: Any = None
        self._serial = 0
        self._consumer = ""
        self._owned = spec is not None  # the consumer was made here: delete it when done
        self._resetting = False
        self._seen = 0  # everything received (heartbeats included): the activity count
        self._timer: Any = None
        self._unlisten: Optional[Callable[[], None]] = None
        self._monitor: Optional[HeartbeatMonitor] = None
        if self._state.take_marker():  # no initial values: the marker comes first
            self._queue.append(_MARKER)

    # -- life ------------------------------------------------------------------------
    def _listen(self, deliver_subject: str, queue: Optional[str], handler: Callable[[Msg], None]) -> None:
        """Subscribe the deliver subject (before the consumer exists, so nothing is missed)."""
        # closing the subscription (or the connection) wakes the reader
        self._sub = self._link.subscribe_direct(deliver_subject, handler, queue, wake=self._signal)

    def _begin(self) -> None:
        """The consumer exists: watch its heartbeats and the connection's reconnects."""
        if self._heartbeat > 0:
            now = prims.monotonic()
            mon = HeartbeatMonitor(self._heartbeat, now, MISSED_HEARTBEATS)
            mon.reset(now, self._seen)
            self._monitor = mon
            self._timer = self._link.call_every(self._heartbeat, self._check)
        self._unlisten = self._link.on_reconnect(self._on_reconnect)

    async def _start(self) -> None:
        """An ordered consumer: make the first one, then watch it."""
        try:
            await self._create(True)
        except BaseException:
            self.stop()
            raise
        if not self._closed:
            self._begin()

    async def _create(self, first: bool) -> None:
        js = self._js
        state = self._state
        with self._lock:
            serial = state.new_consumer()
            self._serial = serial

        def on_msg(msg: Msg, _serial: int = serial) -> None:
            if _serial == self._serial:  # not a straggler of a consumer already replaced
                self._on_msg(msg)

        self._listen(self._link.new_inbox(), None, on_msg)
        name = js.api.new_name()
        assert self._spec is not None
        cfg = push_consumer_config(self._sub.subject, state.cursor, name=name, heartbeat=self._heartbeat,
                                   **self._spec)
        resp = await js.api_request(consumer_create_subject(self._stream, name, cfg),
                             {"stream_name": self._stream, "config": cfg})
        self._consumer = name
        if self._closed or self._draining:  # stopped while the consumer was being made
            self._drop_consumer()
            return
        if first:  # what was pending at creation: when the initial values are complete
            delivered = (resp.get("delivered") or {}).get("consumer_seq") or 0
            with self._lock:
                state.on_created(resp.get("num_pending") or 0, delivered)
                due = state.take_marker()
                if due:
                    self._queue.append(_MARKER)
            if due:
                self._signal.set()

    def stop(self) -> None:
        """Stop: iteration ends once what was already received is taken; a consumer
        made here is deleted (without waiting)."""
        if self._closed:
            return
        self._halt()
        self._drop_consumer()

    def _halt(self) -> None:
        """Closed: no more messages, timers or reconnect handling (safe to repeat)."""
        self._closed = True
        timer = self._timer
        if timer is not None:
            timer.cancel()
            self._timer = None
        unlisten = self._unlisten
        if unlisten is not None:
            unlisten()
            self._unlisten = None
        sub = self._sub
        if sub is not None:
            self._link.unsubscribe(sub)
        self._signal.set()

    def _drop_consumer(self) -> None:
        """Unsubscribe and ask the server to delete a consumer made here (without waiting)."""
        link = self._link
        sub = self._sub
        if sub is not None:
            link.unsubscribe(sub)
        name = self._consumer
        if not name or not self._owned:
            return
        self._consumer = ""
        self._js.api.request_nowait(f"CONSUMER.DELETE.{self._stream}.{name}")

    # -- from the reader (never blocks) ------------------------------------------------
    def _on_msg(self, msg: Msg) -> None:
        if self._closed:
            return
        self._seen += 1
        state = self._state
        h = msg.headers
        if h is not None and h.status is not None:
            self._on_status(h, msg.reply)
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

    def _on_status(self, h: Any, reply: Optional[str]) -> None:
        link = self._link
        state = self._state
        answer = None
        with self._lock:
            kind = state.on_status(h, reply)
            if kind == PUSH_FLOW_CONTROL:
                answer = state.fc_ready()
        if kind == PUSH_FLOW_CONTROL:
            if answer:
                link.try_publish(answer, None, b"")
            return
        if kind == PUSH_STATUS:  # consumer deleted, ...
            self._other_status(h)
        else:  # an idle heartbeat (that may show a gap)
            stalled = state.stalled_reply(h)
            if stalled:
                link.try_publish(stalled, None, b"")
            if kind != PUSH_GAP:
                return
        if self._spec is not None:
            self._request_reset()

    def _other_status(self, h: Any) -> None:
        """A status other than heartbeats and flow control (from the reader)."""
        if self._report_status:
            self._report(JetStreamError(f"push consumer {self._consumer!r}: {h.status} {h.description or ''}".rstrip()))

    def _report(self, exc: BaseException) -> None:
        """Tell the user about a problem (the connection's ``error_cb``; never blocks)."""
        self._link.report_error(exc)

    # -- heartbeats, reconnects and recreation (ADR-15, ADR-17) --------------------------
    def _check(self) -> None:  # timer
        mon = self._monitor
        if mon is None or self._closed or self._resetting:
            return
        link = self._link
        if link.is_closed:
            return
        if mon.check(prims.monotonic(), self._seen, link.is_connected):
            if self._spec is not None:
                self._request_reset()
            else:
                self._report(NoHeartbeatError(f"no heartbeat from push consumer {self._consumer!r}"))

    def _on_reconnect(self) -> None:  # from the client's reconnect path: never blocks
        mon = self._monitor
        if mon is not None:
            now = prims.monotonic()
            mon.resume(now)
            mon.reset(now, self._seen)
        if self._spec is not None:
            self._request_reset()

    def _request_reset(self) -> None:
        with self._lock:  # the reader, the timer and a reconnect may all ask at once
            if self._closed or self._draining or self._resetting:
                return
            self._resetting = True
        self._link.spawn(self._reset)

    async def _reset(self) -> None:
        wait = RESET_DELAY
        try:
            while not self._closed and not self._draining:
                if self._link.is_closed:
                    self.stop()
                    return
                self._drop_consumer()
                try:
                    await self._create(False)
                    if self._monitor is not None:
                        self._monitor.reset(prims.monotonic(), self._seen)
                    return
                except StreamNotFoundError as exc:  # the stream is gone: nothing to wait for
                    self._fail(exc)
                    return
                except Exception as exc:
                    log.debug("jetwire: recreating the ordered push consumer failed: %s", exc)
                await prims.sleep(wait)
                wait = min(wait * 2, RESET_DELAY_MAX)
        finally:
            self._resetting = False
            self._signal.set()

    def _fail(self, exc: BaseException) -> None:
        self._error = exc
        self.stop()

    # -- for the reader ----------------------------------------------------------------
    async def _next_raw(self, timeout: Optional[float] = None) -> Any:
        """The next message, ``_MARKER`` or ``_END``; ``TimeoutError`` after ``timeout``
        seconds without one (None waits as long as it takes). Taking a message may
        answer a flow-control request that waited for it."""
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
                        self._link.try_publish(reply, None, b"")
                return item
            if self._closed or self._sub is None or (self._sub._closed and not self._resetting):
                if self._error is not None:
                    err, self._error = self._error, None
                    raise err
                if not self._closed and self._link.is_closed:
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


# ---------------------------------------------------------------------------------
# js.subscribe / js.subscribe_bind


async def _lookup(js: Any, stream: str, name: str) -> Optional[ConsumerInfo]:
    try:
        return await js.consumer_info(stream, name)
    except ConsumerNotFoundError:
        return None


async def subscribe(js: Any, subject: str, queue: Optional[str] = None, cb: Optional[Callable[[Msg], Any]] = None,
                    durable: Optional[str] = None, stream: Optional[str] = None, config: Any = None,
                    manual_ack: bool = False, ordered_consumer: bool = False,
                    idle_heartbeat: Optional[float] = None, flow_control: bool = False,
                    deliver_subject: Optional[str] = None, skip_consumer_lookup: bool = False) -> "PushSubscription":
    """Subscribe to ``subject`` through a push consumer (see :meth:`JetStream.subscribe`)."""
    link = js.api.link
    cfg = config_from_kwargs(ConsumerConfig, config)
    validate_filter_subjects([subject, cfg.filter_subject, *(cfg.filter_subjects or ())])
    queue = queue or None
    if ordered_consumer:
        if queue or durable or cfg.durable_name:
            raise ValueError("an ordered consumer cannot be durable or a queue subscriber")
        if manual_ack:
            raise ValueError("an ordered consumer acknowledges nothing: manual_ack is not allowed")
    if queue:
        if idle_heartbeat or flow_control or cfg.idle_heartbeat or cfg.flow_control:
            raise ValueError("queue subscriptions cannot use idle heartbeats or flow control")
        if not durable and not cfg.durable_name:
            durable = queue  # as nats.go: the queue group names a durable consumer
    durable = durable or cfg.durable_name
    if stream is None:
        stream = await js.stream_name_by_subject(subject)

    if ordered_consumer:
        hb = idle_heartbeat or cfg.idle_heartbeat or DEFAULT_PUSH_HEARTBEAT
        spec = {
            "filter_subjects": list(cfg.filter_subjects or [cfg.filter_subject or subject]),
            "deliver_policy": cfg.deliver_policy,
            "opt_start_seq": cfg.opt_start_seq,
            "opt_start_time": cfg.to_json_dict().get("opt_start_time"),
            "replay_policy": cfg.replay_policy,
            "inactive_threshold": cfg.inactive_threshold or 300.0,
            "headers_only": cfg.headers_only,
            "metadata": cfg.metadata,
        }
        ps = PushSubscription(js, stream, subject, None, cb, False, True, hb, spec)
        await ps._start()
        return ps

    info: Optional[ConsumerInfo] = None
    if durable and not skip_consumer_lookup:
        info = await _lookup(js, stream, durable)
    if info is None:
        if idle_heartbeat:
            cfg.idle_heartbeat = idle_heartbeat
        if flow_control:
            cfg.flow_control = True
        if durable:
            cfg.durable_name = durable
        if queue:
            cfg.deliver_group = queue
        if not cfg.filter_subject and not cfg.filter_subjects:
            cfg.filter_subject = subject
        dsubj = deliver_subject or cfg.deliver_subject or link.new_inbox()
        cfg.deliver_subject = dsubj
        ack_none = cfg.ack_policy == AckPolicy.NONE
        ps = PushSubscription(js, stream, subject, queue, cb, manual_ack, ack_none, cfg.idle_heartbeat or 0.0)
        ps._listen(dsubj, queue, ps._on_msg)
        try:
            if skip_consumer_lookup and durable:  # as nats.go: may update an existing consumer
                created = (await js.create_or_update_consumer(stream, cfg)).cached_info()
            else:
                created = (await js.create_consumer(stream, cfg)).cached_info()
        except JetStreamError:
            ps._halt()
            if not durable or skip_consumer_lookup:
                raise
            info = await _lookup(js, stream, durable)  # created meanwhile by another member
            if info is None:
                raise
        else:
            ps._consumer = created.name
            ps._owned = not durable
            ps._begin()
            return ps
    return await _bind(js, stream, info, subject, queue, cb, manual_ack)


async def subscribe_bind(js: Any, stream: str, consumer: str, cb: Optional[Callable[[Msg], Any]] = None,
                         queue: Optional[str] = None, manual_ack: bool = False) -> "PushSubscription":
    """Bind to the existing push consumer ``consumer`` of ``stream``."""
    info = await _lookup(js, stream, consumer)
    if info is None:
        raise ConsumerNotFoundError(code=404, err_code=10014, description="consumer not found")
    subject = info.config.filter_subject or ""
    return await _bind(js, stream, info, subject, queue or info.config.deliver_group, cb, manual_ack)


async def _bind(js: Any, stream: str, info: ConsumerInfo, subject: str, queue: Optional[str],
                cb: Optional[Callable[[Msg], Any]], manual_ack: bool) -> "PushSubscription":
    ccfg = info.config
    if not ccfg.deliver_subject:
        raise JetStreamError(f"consumer {info.name!r} is pull based: use consumer.fetch()/consume()")
    group = ccfg.deliver_group or None
    if queue:
        if group != queue:
            raise JetStreamError(f"consumer {info.name!r} delivers to group {group!r}, not to queue {queue!r}")
    else:
        if group:
            raise JetStreamError(f"consumer {info.name!r} delivers to group {group!r}: subscribe with that queue")
        if info.push_bound:
            raise JetStreamError(f"consumer {info.name!r} is already bound to a subscription")
    ack_none = ccfg.ack_policy == AckPolicy.NONE
    ps = PushSubscription(js, stream, subject, group, cb, manual_ack, ack_none, ccfg.idle_heartbeat or 0.0)
    ps._consumer = info.name
    ps._listen(ccfg.deliver_subject, group, ps._on_msg)
    ps._begin()
    return ps


class PushSubscription(_PushConsumer):
    """A subscription fed by a push consumer: ``next_msg()``, iteration, ``unsubscribe()``,
    ``drain()``, ``consumer_info()``, ``pending_msgs``, ``delivered``, ``subject``, ``queue``.

    With a callback, messages are handed to it one at a time on one task (aio) or
    thread (blocking) and acknowledged after it returns unless ``manual_ack`` (or the
    consumer acknowledges nothing).
    """

    _report_status = True

    def __init__(self, js: Any, stream: str, subject: str, queue: Optional[str], cb: Optional[Callable[[Msg], Any]],
                 manual_ack: bool, ack_none: bool, heartbeat: float, spec: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(js, stream, heartbeat, spec, marker=False)
        self.subject = subject
        self.queue = queue
        self._cb = cb
        self._auto_ack = cb is not None and not manual_ack and not ack_none
        self._task: Any = None

    def __repr__(self) -> str:
        return f"<PushSubscription stream={self._stream!r} consumer={self._consumer!r} subject={self.subject!r}>"

    def _begin(self) -> None:
        super()._begin()
        if self._cb is not None and self._task is None:
            self._task = prims.spawn(self._run, name="jetwire-push")

    # -- user side -------------------------------------------------------------------
    async def next_msg(self, timeout: Optional[float] = 1.0) -> Msg:
        """The next message; ``TimeoutError`` after ``timeout`` seconds (None waits forever)."""
        if self._cb is not None:
            raise NatsError("next_msg() is not available on a subscription with a callback")
        msg = await self._next_raw(timeout)
        if msg is _END:
            if self._link.is_closed:
                raise ConnectionClosedError("connection closed")
            raise SubscriptionClosedError("subscription closed")
        return msg

    # iteration as on a core subscription: ``next_msg(None)`` until the subscription ends
    __aiter__ = Subscription.__aiter__
    __anext__ = Subscription.__anext__

    async def _run(self) -> None:
        cb = self._cb
        try:
            while True:
                try:
                    msg = await self._next_raw(None)
                except Exception as exc:  # the consumer could not be recreated
                    self._link.report_error(exc)
                    return
                if msg is _END or self._closed:
                    return
                try:
                    r = cb(msg)  # type: ignore[misc]
                    if r is not None and _isawaitable(r):  # aio-only
                        await r  # aio-only
                    if self._auto_ack and not msg._ackd:
                        await msg.ack()
                except Exception as exc:  # a failing callback must not stop delivery
                    self._link.report_error(exc)
        finally:
            self._halt()

    async def _delete_if_created(self) -> None:
        if self._owned and self._consumer and not self._link.is_closed:
            try:
                await self._js.api_request(f"CONSUMER.DELETE.{self._stream}.{self._consumer}")
            except Exception:
                pass

    async def unsubscribe(self) -> None:
        """Stop at once; an ephemeral consumer this subscription created is deleted."""
        if self._closed:
            return
        self._halt()
        self._queue.clear()
        await self._delete_if_created()

    async def drain(self, timeout: Optional[float] = None) -> None:
        """Stop receiving, let buffered messages be handled, then unsubscribe."""
        if self._closed:
            return
        self._draining = True
        sub = self._sub
        if sub is not None:
            self._link.unsubscribe(sub)
        self._signal.set()
        if self._task is not None:
            await prims.join(self._task, timeout)
        self._halt()
        await self._delete_if_created()

    async def consumer_info(self) -> ConsumerInfo:
        """Fresh info of the consumer behind this subscription."""
        return await self._js.consumer_info(self._stream, self._consumer)

    @property
    def consumer_name(self) -> str:
        return self._consumer

    @property
    def stream(self) -> str:
        return self._stream

    @property
    def delivered(self) -> int:
        """Messages handed out so far."""
        return self._state.taken

    @property
    def pending_msgs(self) -> int:
        return len(self._queue)

    @property
    def is_valid(self) -> bool:
        return not self._closed


__all__ = ["subscribe", "subscribe_bind", "PushSubscription"]
