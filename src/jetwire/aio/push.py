"""Push subscriptions of nats.go's legacy API (asyncio source; ``jetwire/_sync/push.py``
is generated from it), over the one push-consumer machinery
(:class:`~jetwire.aio.push_core.PushCore`, ``push_core.py``: the deliver subject's
direct handler, flow control, heartbeats, ordered recreation).

``js.subscribe(subject, ...)`` finds the stream that stores ``subject``, creates (or
binds to) a push consumer delivering to an inbox (or a deliver group for queue
subscribers) and returns a :class:`PushSubscription`: ``next_msg()``, iteration,
``unsubscribe()``, ``drain()``, ``consumer_info()``. Status messages never reach the
user; missed heartbeats of a plain consumer are reported as ``NoHeartbeatError``.
"""
from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._typing import JSONObject
from ..errors import (
    ConnectionClosedError,
    ConsumerNotFoundError,
    InvalidOptionError,
    JetStreamError,
    MsgAlreadyAckedError,
    NatsError,
    SubscriptionClosedError,
)
from ..jetstream._json import config_from_kwargs
from ..jetstream.manage import validate_filter_subjects
from ..jetstream.models import AckPolicy, ConsumerConfig, ConsumerInfo
from ..jetstream.push import (
    DEFAULT_PUSH_HEARTBEAT,
)
from ..jetstream.validate import validate_stream_name
from ..msg import Msg
from . import _prims as prims
from .iteration import MsgIteration
from .push_core import END, PushCore, halt, listen, started

if TYPE_CHECKING:
    from .jetstream import JetStream

log = logging.getLogger("jetwire")

_isawaitable = inspect.isawaitable

# ---------------------------------------------------------------------------------
# js.subscribe / js.subscribe_bind


async def _lookup(js: JetStream, stream: str, name: str) -> ConsumerInfo | None:
    try:
        return await js.consumer_info(stream, name)
    except ConsumerNotFoundError:
        return None


async def subscribe(js: JetStream, subject: str, queue: str | None = None, cb: Callable[[Msg], object] | None = None,
                    durable: str | None = None, stream: str | None = None, config: Any = None,
                    manual_ack: bool = False, ordered_consumer: bool = False,
                    idle_heartbeat: float | None = None, flow_control: bool = False,
                    deliver_subject: str | None = None, skip_consumer_lookup: bool = False) -> PushSubscription:
    """Subscribe to ``subject`` through a push consumer (see :meth:`JetStream.subscribe`)."""
    link = js.api.link
    cfg = config_from_kwargs(ConsumerConfig, config)
    validate_filter_subjects([subject, cfg.filter_subject, *(cfg.filter_subjects or ())])
    queue = queue or None
    if ordered_consumer:
        if queue or durable or cfg.durable_name:
            raise InvalidOptionError("an ordered consumer cannot be durable or a queue subscriber")
        if manual_ack:
            raise InvalidOptionError("an ordered consumer acknowledges nothing: manual_ack is not allowed")
    if queue:
        if idle_heartbeat or flow_control or cfg.idle_heartbeat or cfg.flow_control:
            raise InvalidOptionError("queue subscriptions cannot use idle heartbeats or flow control")
        if not durable and not cfg.durable_name:
            durable = queue  # as nats.go: the queue group names a durable consumer
    durable = durable or cfg.durable_name
    if stream is None:
        stream = await js.stream_name_by_subject(subject)
    else:
        validate_stream_name(stream)  # it goes into the API subjects

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
        await started(ps)
        return ps

    info: ConsumerInfo | None = None
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
        listen(ps, dsubj, queue)
        try:
            if skip_consumer_lookup and durable:  # as nats.go: may update an existing consumer
                created = (await js.create_or_update_consumer(stream, cfg)).cached_info()
            else:
                created = (await js.create_consumer(stream, cfg)).cached_info()
        except JetStreamError:
            halt(ps)
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


async def subscribe_bind(js: JetStream, stream: str, consumer: str, cb: Callable[[Msg], object] | None = None,
                         queue: str | None = None, manual_ack: bool = False) -> PushSubscription:
    """Bind to the existing push consumer ``consumer`` of ``stream``."""
    info = await _lookup(js, stream, consumer)
    if info is None:
        raise ConsumerNotFoundError(code=404, err_code=10014, description="consumer not found")
    subject = info.config.filter_subject or ""
    return await _bind(js, stream, info, subject, queue or info.config.deliver_group, cb, manual_ack)


async def _bind(js: JetStream, stream: str, info: ConsumerInfo, subject: str, queue: str | None,
                cb: Callable[[Msg], object] | None, manual_ack: bool) -> PushSubscription:
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
    listen(ps, ccfg.deliver_subject, group)
    ps._begin()
    return ps


class PushSubscription(PushCore, MsgIteration):
    """A subscription fed by a push consumer: ``next_msg()``, iteration, ``unsubscribe()``,
    ``drain()``, ``consumer_info()``, ``pending_msgs``, ``delivered``, ``subject``, ``queue``.

    With a callback, messages are handed to it one at a time on one task (aio) or
    thread (blocking) and acknowledged after it returns unless ``manual_ack`` (or the
    consumer acknowledges nothing).
    """

    _report_status = True

    def __init__(self, js: JetStream, stream: str, subject: str, queue: str | None, cb: Callable[[Msg], object] | None,
                 manual_ack: bool, ack_none: bool, heartbeat: float, spec: JSONObject | None = None) -> None:
        super().__init__(js, stream, heartbeat, spec, marker=False)
        self.subject = subject
        self.queue = queue
        self._cb = cb
        self._auto_ack = cb is not None and not manual_ack and not ack_none
        self._task: Any = None
        self._undrain: Callable[[], None] | None = None

    def __repr__(self) -> str:
        return f"<PushSubscription stream={self._stream!r} consumer={self._consumer!r} subject={self.subject!r}>"

    def _begin(self) -> None:
        super()._begin()
        if self._cb is not None and self._task is None:
            self._task = prims.spawn(self._run, name="jetwire-push")
            # the connection's drain lets the callback finish (and ack) what was delivered
            self._undrain = self._link.on_drain(self._drain)

    # -- user side -------------------------------------------------------------------
    async def next_msg(self, timeout: float | None = 1.0) -> Msg:
        """The next message; ``TimeoutError`` after ``timeout`` seconds (None waits forever)."""
        if self._cb is not None:
            raise NatsError("next_msg() is not available on a subscription with a callback")
        msg = await self._next_raw(timeout)
        if msg is END:
            if self._link.is_closed:
                raise ConnectionClosedError("connection closed")
            raise SubscriptionClosedError("subscription closed")
        return msg  # type: ignore[no-any-return]  # END is the only non-Msg item

    async def _run(self) -> None:
        cb = self._cb
        try:
            while True:
                try:
                    msg = await self._next_raw(None)
                except Exception as exc:  # the consumer could not be recreated
                    self._link.report_error(exc)
                    return
                if msg is END or self._closed:
                    return
                try:
                    r = cb(msg)  # type: ignore[misc]
                    if r is not None and _isawaitable(r):  # aio-only
                        await r  # aio-only
                    if self._auto_ack:
                        try:
                            await msg.ack()
                        except MsgAlreadyAckedError:
                            pass  # the callback acknowledged it itself
                except Exception as exc:  # a failing callback must not stop delivery
                    self._link.report_error(exc)
        finally:
            self._halt()
            undrain, self._undrain = self._undrain, None
            if undrain is not None:
                undrain()

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

    async def drain(self, timeout: float | None = None) -> None:
        """Stop receiving, let buffered messages be handled, then unsubscribe."""
        await self._drain(timeout)

    async def _drain(self, timeout: float | None) -> bool:
        """``drain()``; whether the callback finished what was buffered within ``timeout``."""
        if self._closed:
            return True
        self._draining = True
        sub = self._sub
        if sub is not None:
            self._link.unsubscribe(sub)
        self._signal.set()
        done = True
        if self._task is not None:
            done = await prims.join(self._task, timeout)
        self._halt()
        await self._delete_if_created()
        return done

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


__all__ = ["PushSubscription", "subscribe", "subscribe_bind"]
