"""Push consumers in the style of nats.go's legacy ``js.Subscribe`` (asyncio source;
``jetwire/_sync/push.py`` is generated from it).

``js.subscribe(subject, ...)`` finds the stream that stores ``subject``, creates (or
binds to) a push consumer delivering to an inbox (or a deliver group for queue
subscribers) and returns a :class:`PushSubscription`: ``next_msg()``, iteration,
``unsubscribe()``, ``drain()``, ``consumer_info()``. Status messages never reach the
user: idle heartbeats are counted (missing ones are reported as ``NoHeartbeatError``),
flow-control requests are answered once the messages before them were handed out, and
a heartbeat carrying ``Nats-Consumer-Stalled`` is answered at once (ADR-9, ADR-15).
With ``ordered_consumer=True`` the consumer is an ADR-17 ordered push consumer that is
recreated from the last delivered stream sequence on gaps, missed heartbeats and
reconnects.
"""
from __future__ import annotations

import copy
import inspect
import logging
import time
from collections import deque
from typing import Any, Callable, Deque, Dict, Optional

from .._nuid import NUID
from ..core import CLOSED
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
from ..jetstream.models import AckPolicy, ConsumerConfig, ConsumerInfo
from ..jetstream.pull import HDR_CONSUMER_STALLED, HeartbeatMonitor, OrderedCursor, ordered_config
from ..msg import Msg
from . import _prims as prims
from .consumer import _parse_fields

log = logging.getLogger("jetwire")

_monotonic = time.monotonic
_isawaitable = inspect.isawaitable
_nuid = NUID()

ORDERED_HEARTBEAT = 5.0
_RESET_DELAY = 0.25
_RESET_DELAY_MAX = 2.0


def _to_config(config: Any) -> ConsumerConfig:
    if config is None:
        return ConsumerConfig()
    if isinstance(config, ConsumerConfig):
        return copy.deepcopy(config)
    if isinstance(config, dict):
        return ConsumerConfig(**copy.deepcopy(config))
    raise TypeError(f"config must be a ConsumerConfig or a dict, not {type(config).__name__}")


async def _lookup(js: Any, stream: str, name: str) -> Optional[ConsumerInfo]:
    try:
        resp = await js._api(f"CONSUMER.INFO.{stream}.{name}")
    except ConsumerNotFoundError:
        return None
    resp.pop("type", None)
    return ConsumerInfo.from_json(resp)


async def _stream_by_subject(js: Any, subject: str) -> str:
    resp = await js._api("STREAM.NAMES", {"subject": subject})
    names = resp.get("streams") or []
    if not names:
        raise StreamNotFoundError(code=404, err_code=10059, description=f"no stream matches subject {subject!r}")
    return names[0]


async def _create(js: Any, stream: str, cfg: Dict[str, Any]) -> ConsumerInfo:
    name = cfg.get("name") or cfg.get("durable_name")
    subject = f"CONSUMER.CREATE.{stream}.{name}" if name else f"CONSUMER.CREATE.{stream}"
    resp = await js._api(subject, {"stream_name": stream, "config": cfg, "action": "create"})
    resp.pop("type", None)
    return ConsumerInfo.from_json(resp)


async def subscribe(js: Any, subject: str, queue: Optional[str] = None, cb: Optional[Callable[[Msg], Any]] = None,
                    durable: Optional[str] = None, stream: Optional[str] = None, config: Any = None,
                    manual_ack: bool = False, ordered_consumer: bool = False,
                    idle_heartbeat: Optional[float] = None, flow_control: bool = False,
                    deliver_subject: Optional[str] = None) -> "PushSubscription":
    """Subscribe to ``subject`` through a push consumer (see :meth:`JetStream.subscribe`)."""
    nc = js._nc
    cfg = _to_config(config)
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
        stream = await _stream_by_subject(js, subject)

    if ordered_consumer:
        hb = idle_heartbeat or cfg.idle_heartbeat or ORDERED_HEARTBEAT
        ps = PushSubscription(js, stream, subject, None, cb, False, True, hb, ordered=cfg)
        await ps._ordered_start()
        return ps

    info: Optional[ConsumerInfo] = None
    if durable:
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
        dsubj = deliver_subject or cfg.deliver_subject or nc.new_inbox()
        cfg.deliver_subject = dsubj
        ack_none = cfg.ack_policy == AckPolicy.NONE
        ps = PushSubscription(js, stream, subject, queue, cb, manual_ack, ack_none, cfg.idle_heartbeat or 0.0)
        ps._listen(dsubj)
        try:
            ps._info = await _create(js, stream, cfg.to_json_dict())
        except JetStreamError:
            ps._close_now()
            if not durable:
                raise
            info = await _lookup(js, stream, durable)  # created meanwhile by another member
            if info is None:
                raise
        else:
            ps._consumer = ps._info.name
            ps._created = not durable
            ps._start()
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
    ps._info = info
    ps._consumer = info.name
    ps._listen(ccfg.deliver_subject)
    ps._start()
    return ps


class PushSubscription:
    """A subscription fed by a push consumer: ``next_msg()``, iteration, ``unsubscribe()``,
    ``drain()``, ``consumer_info()``, ``pending_msgs``, ``delivered``, ``subject``, ``queue``.

    With a callback, messages are handed to it one at a time on one task (aio) or
    thread (blocking) and acknowledged after it returns unless ``manual_ack`` (or the
    consumer acknowledges nothing).
    """

    def __init__(self, js: Any, stream: str, subject: str, queue: Optional[str], cb: Optional[Callable[[Msg], Any]],
                 manual_ack: bool, ack_none: bool, heartbeat: float, ordered: Optional[ConsumerConfig] = None) -> None:
        self._js = js
        self._nc = js._nc
        self._stream = stream
        self.subject = subject
        self.queue = queue
        self._cb = cb
        self._auto_ack = cb is not None and not manual_ack and not ack_none
        self._q: Deque[Msg] = deque()
        self._signal = prims.Signal()
        self._sub: Any = None
        self._seen = 0
        self._hb = HeartbeatMonitor(heartbeat, _monotonic(), factor=3.0) if heartbeat else None
        self._closed = False
        self._draining = False
        self._reconnected = False
        self._need_reset = False
        self.delivered = 0
        self._task: Any = None
        self._info: Optional[ConsumerInfo] = None
        self._consumer = ""
        self._created = False
        self._ordered_cfg = ordered
        self._cursor = OrderedCursor() if ordered is not None else None
        self._prefix = _nuid.next() if ordered is not None else ""
        self._listener: Optional[Callable[[], None]] = None

    def __repr__(self) -> str:
        return f"<PushSubscription stream={self._stream!r} consumer={self._consumer!r} subject={self.subject!r}>"

    # -- setup -----------------------------------------------------------------------
    def _listen(self, deliver_subject: str) -> None:
        """Subscribe the deliver subject (before the consumer exists, so nothing is missed)."""
        sub = self._nc._subscribe(deliver_subject, self.queue, None, 0, -1, -1, direct=self._on_msg)
        sub._signal = self._signal
        self._sub = sub

    def _start(self) -> None:
        listeners = getattr(self._nc, "_reconnect_listeners", None)
        if listeners is not None and self._listener is None:
            self._listener = self._on_reconnect
            listeners.append(self._listener)
        if self._hb is not None:
            self._hb.reset(_monotonic(), self._seen)
        if self._cb is not None and self._task is None:
            self._task = prims.spawn(self._run, name="jetwire-push")

    def _close_now(self) -> None:
        sub = self._sub
        if sub is not None:
            self._nc._unsubscribe_nowait(sub)

    def _on_reconnect(self) -> None:  # from the client's reconnect path: never blocks
        self._reconnected = True
        self._signal.set()

    # -- ordered push consumers ------------------------------------------------------
    def _ordered_wire_config(self, deliver_subject: str) -> Dict[str, Any]:
        c = self._ordered_cfg
        assert c is not None and self._cursor is not None and self._hb is not None
        serial = self._cursor.new_consumer()
        filters: Any = c.filter_subjects or c.filter_subject or self.subject
        return ordered_config(
            f"{self._prefix}_{serial}", self._cursor, filters, c.deliver_policy, c.opt_start_seq,
            c.to_json_dict().get("opt_start_time"), c.replay_policy, c.inactive_threshold or 300.0,
            c.headers_only, deliver_subject=deliver_subject, idle_heartbeat=self._hb.interval,
            flow_control=True, metadata=c.metadata)

    async def _ordered_start(self) -> None:
        await self._ordered_create()
        self._start()

    async def _ordered_create(self) -> None:
        dsubj = self._nc.new_inbox()
        self._listen(dsubj)
        try:
            self._info = await _create(self._js, self._stream, self._ordered_wire_config(dsubj))
        except BaseException:
            self._close_now()
            raise
        self._consumer = self._info.name
        self._created = True
        if self._hb is not None:
            self._hb.reset(_monotonic(), self._seen)

    async def _reset(self) -> None:
        self._need_reset = False
        self._close_now()
        self._q.clear()
        old = self._consumer
        if old:
            try:
                await self._js._api(f"CONSUMER.DELETE.{self._stream}.{old}", timeout=2.0)
            except Exception:
                pass
        delay = _RESET_DELAY
        while not self._closed:
            try:
                await self._ordered_create()
                return
            except Exception as exc:
                log.debug("jetwire: ordered push consumer reset failed: %s", exc)
            self._signal.clear()
            await self._signal.wait(delay)
            delay = min(delay * 2, _RESET_DELAY_MAX)

    # -- reader side -----------------------------------------------------------------
    def _on_msg(self, msg: Msg) -> None:
        self._seen += 1
        h = msg.headers
        if h is not None and not msg.data and h.status == "100" and not msg.reply:
            stalled = h.get(HDR_CONSUMER_STALLED)
            if stalled:
                self._nc._publish_nowait(stalled, b"")
            if self._cursor is None:
                return  # idle heartbeat (ordered consumers check it in order below)
        self._q.append(msg)
        self._signal.set()

    # -- taking messages (no waiting) ------------------------------------------------
    def _process(self, msg: Msg) -> Optional[Msg]:
        h = msg.headers
        if h is not None and not msg.data and h.status is not None:
            if h.status == "100":
                if msg.reply:  # flow control: everything before it was handed out
                    self._nc._publish_nowait(msg.reply, b"")
                elif self._cursor is not None and self._cursor.hb_gap(h):
                    self._need_reset = True
            else:
                self._nc._report_error(JetStreamError(f"push consumer {self._consumer!r}: "
                                                      f"{h.status} {h.description or ''}".rstrip()))
            return None
        cur = self._cursor
        if cur is not None:
            f = _parse_fields(msg.reply)
            if f[3] != self._consumer:
                return None
            if f[6] != cur.consumer_seq + 1:
                self._need_reset = True
                return None
            cur.stream_seq = f[5]
            cur.consumer_seq = f[6]
        self.delivered += 1
        return msg

    def _check(self, now: float) -> None:
        nc = self._nc
        hb = self._hb
        if self._reconnected:
            self._reconnected = False
            if hb is not None:
                hb.resume(now)
                hb.reset(now, self._seen)
            if self._cursor is not None:
                self._need_reset = True
        if hb is None or nc.is_closed:
            return
        if not nc.is_connected:
            hb.pause()
            return
        if hb.paused:
            hb.resume(now)
        if hb.poll(now, self._seen):
            if self._cursor is not None:
                self._need_reset = True
            else:
                nc._report_error(NoHeartbeatError(f"no heartbeat from push consumer {self._consumer!r}"))

    async def _idle(self, limit: Optional[float]) -> None:
        signal = self._signal
        signal.clear()
        if self._q or self._closed or self._reconnected or self._need_reset:
            return
        now = _monotonic()
        wait = None
        if self._hb is not None:
            wait = self._hb.wait_time(now)
            if wait is not None:
                wait += 0.001
        if limit is not None and (wait is None or limit < wait):
            wait = limit
        await signal.wait(wait)
        self._check(_monotonic())

    def _gone(self) -> bool:
        """The deliver subscription ended under us (connection closed)."""
        sub = self._sub
        return sub is not None and sub._closed and not self._need_reset and not self._reconnected

    # -- user side -------------------------------------------------------------------
    async def next_msg(self, timeout: Optional[float] = 1.0) -> Msg:
        """The next message; ``TimeoutError`` after ``timeout`` seconds (None waits forever)."""
        if self._cb is not None:
            raise NatsError("next_msg() is not available on a subscription with a callback")
        q = self._q
        deadline = None if timeout is None else _monotonic() + timeout
        while True:
            while q:
                msg = self._process(q.popleft())
                if msg is not None:
                    return msg
                if self._need_reset:
                    break
            if self._need_reset and not self._closed and not self._draining:
                await self._reset()
                continue
            if self._closed or self._draining or self._gone():
                if q:
                    continue
                if self._nc._core is not None and self._nc._core.status == CLOSED:
                    raise ConnectionClosedError("connection closed")
                raise SubscriptionClosedError("subscription closed")
            remaining = None
            if deadline is not None:
                remaining = deadline - _monotonic()
                if remaining <= 0:
                    raise TimeoutError("timed out waiting for a message")
            await self._idle(remaining)

    def __aiter__(self) -> "PushSubscription":
        return self

    async def __anext__(self) -> Msg:
        try:
            return await self.next_msg(None)
        except (SubscriptionClosedError, ConnectionClosedError):
            raise StopAsyncIteration from None

    async def _run(self) -> None:
        q = self._q
        cb = self._cb
        process = self._process
        try:
            while True:
                while q and not self._closed:
                    msg = process(q.popleft())
                    if msg is None:
                        if self._need_reset:
                            break
                        continue
                    try:
                        r = cb(msg)  # type: ignore[misc]
                        if r is not None and _isawaitable(r):  # aio-only
                            await r  # aio-only
                        if self._auto_ack and not msg._ackd:
                            await msg.ack()
                    except Exception as exc:  # a failing callback must not stop delivery
                        self._nc._report_error(exc)
                if self._closed:
                    return
                if self._need_reset and not self._draining:
                    await self._reset()
                    continue
                if q:
                    continue
                if self._draining or self._gone():
                    return
                await self._idle(None)
        finally:
            self._closed = True

    def _teardown(self) -> None:
        self._closed = True
        self._close_now()
        listener = self._listener
        if listener is not None:
            try:
                self._nc._reconnect_listeners.remove(listener)
            except ValueError:
                pass
            self._listener = None
        self._signal.set()

    async def _delete_if_created(self) -> None:
        if self._created and self._consumer and not self._nc.is_closed:
            try:
                await self._js._api(f"CONSUMER.DELETE.{self._stream}.{self._consumer}")
            except Exception:
                pass

    async def unsubscribe(self) -> None:
        """Stop at once; an ephemeral consumer this subscription created is deleted."""
        if self._closed:
            return
        self._teardown()
        self._q.clear()
        await self._delete_if_created()

    async def drain(self, timeout: Optional[float] = None) -> None:
        """Stop receiving, let buffered messages be handled, then unsubscribe."""
        if self._closed:
            return
        self._draining = True
        self._close_now()
        self._signal.set()
        if self._task is not None:
            await prims.join(self._task, timeout)
        self._teardown()
        await self._delete_if_created()

    async def consumer_info(self) -> ConsumerInfo:
        """Fresh info of the consumer behind this subscription."""
        resp = await self._js._api(f"CONSUMER.INFO.{self._stream}.{self._consumer}")
        resp.pop("type", None)
        self._info = ConsumerInfo.from_json(resp)
        return self._info

    @property
    def consumer_name(self) -> str:
        return self._consumer

    @property
    def stream(self) -> str:
        return self._stream

    @property
    def pending_msgs(self) -> int:
        return len(self._q)

    @property
    def is_valid(self) -> bool:
        return not self._closed


__all__ = ["subscribe", "subscribe_bind", "PushSubscription"]
