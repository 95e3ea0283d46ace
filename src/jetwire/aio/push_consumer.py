"""Push consumers on the new API (nats.go's ``jetstream.PushConsumer``; asyncio source,
``jetwire/_sync/push_consumer.py`` is generated from it).

``js.create_push_consumer(stream, deliver_subject=..., **config)`` and
``js.push_consumer(stream, name)`` give a :class:`PushConsumer` handle;
``consume(cb)`` subscribes its deliver subject (in its deliver group, if any) and hands
every message to ``cb`` on one task (aio) or thread (blocking), as the pull
``consume()`` does: the callback acknowledges (nothing is acknowledged for it). The
machinery is the one of every push consumer (:class:`~jetwire.aio.push_core.PushCore`):
flow-control requests answered once the callback took what came before them, idle
heartbeats watched on the connection's timer (``NoHeartbeatError`` to ``error_cb``
after 3 missed intervals), stalled-consumer heartbeats answered at once. A
``409 Consumer Deleted`` ends consuming (``ConsumerDeletedError`` to ``error_cb``).
"""
from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .. import _impl
from ..errors import BadSubjectError, ConsumerDeletedError, InvalidOptionError, JetStreamError
from ..jetstream._json import config_from_kwargs
from ..jetstream.models import ConsumerConfig, ConsumerInfo
from ..msg import Msg
from . import _prims as prims
from .push_core import END, PushCore

if TYPE_CHECKING:
    from ..protocol.headers import Headers
    from .jetstream import JetStream

log = logging.getLogger("jetwire")

_isawaitable = inspect.isawaitable


def push_config(config: Any, fields: Mapping[str, Any]) -> ConsumerConfig:
    """The checked config of a push consumer to create: a deliver subject is required
    and must be a subject one can publish to (no wildcards)."""
    cfg: ConsumerConfig = config_from_kwargs(ConsumerConfig, config, **fields)
    if not cfg.deliver_subject:
        raise InvalidOptionError("a push consumer needs a deliver_subject")
    _impl.validate_subject(cfg.deliver_subject)
    if any(t in ("*", ">") for t in cfg.deliver_subject.split(".")):
        raise BadSubjectError(f"deliver_subject {cfg.deliver_subject!r} must not have wildcards")
    return cfg


def check_push(info: ConsumerInfo) -> None:
    """``JetStreamError`` for a pull consumer (as nats.go's ``ErrNotPushConsumer``)."""
    if not info.config.deliver_subject:
        raise JetStreamError(f"consumer {info.name!r} is not a push consumer")


def _two_arg(cb: Callable[..., object]) -> bool:
    try:
        params = inspect.signature(cb).parameters.values()
    except (TypeError, ValueError):
        return False
    n = sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
    return n >= 2 or any(p.kind is p.VAR_POSITIONAL for p in params)


class PushConsumer:
    """A push consumer of a stream: ``consume(cb, error_cb=None)``, ``info()``,
    ``cached_info()``, ``name``, ``stream``. One ``consume()`` at a time per handle."""

    def __init__(self, js: JetStream, stream: str, info: ConsumerInfo) -> None:
        self._js = js
        self._stream = stream
        self._name = info.name
        self._info = info
        self._ctx: PushConsumeContext | None = None

    @property
    def name(self) -> str:
        return self._name

    @property
    def stream(self) -> str:
        return self._stream

    def cached_info(self) -> ConsumerInfo:
        """The info from the last lookup (no request)."""
        return self._info

    async def info(self) -> ConsumerInfo:
        """Fresh info from the server (``ConsumerNotFoundError`` when it is gone)."""
        self._info = await self._js.consumer_info(self._stream, self._name)
        return self._info

    def __repr__(self) -> str:
        return f"<PushConsumer stream={self._stream!r} name={self._name!r}>"

    async def consume(self, cb: Callable[[Msg], object], error_cb: Callable[..., object] | None = None) -> PushConsumeContext:
        """Call ``cb(msg)`` (plain or, in aio, a coroutine function) for every message
        delivered, one at a time and in order; ``cb`` acknowledges. ``error_cb(err)`` or
        ``error_cb(ctx, err)`` hears about missed heartbeats (``NoHeartbeatError``),
        server statuses, exceptions raised by ``cb`` and the end of the consumer
        (``ConsumerDeletedError``, after which consuming stops). Returns the running
        :class:`PushConsumeContext` (``stop()``, ``drain()``, ``closed()``).
        ``JetStreamError`` while another ``consume()`` of this handle runs."""
        if cb is None or not callable(cb):
            raise InvalidOptionError("consume() needs a callback")
        if error_cb is not None and not callable(error_cb):
            raise TypeError("error_cb must be callable")
        if self._ctx is not None and not self._ctx._stopped:
            raise JetStreamError(f"push consumer {self._name!r} is already consuming")
        ctx = PushConsumeContext(self, cb, error_cb)
        self._ctx = ctx
        ctx._start_consume()
        return ctx


class PushConsumeContext(PushCore):
    """A running push ``consume()``: ``stop()``, ``drain()``, ``closed()``,
    ``is_closed``, ``delivered``."""

    def __init__(self, owner: PushConsumer, cb: Callable[[Msg], object], error_cb: Callable[..., object] | None) -> None:
        info = owner.cached_info()
        super().__init__(owner._js, owner.stream, info.config.idle_heartbeat or 0.0, None, marker=False)
        self._owner = owner
        self._consumer = info.name
        self._cfg = info.config
        self._cb = cb
        self._error_cb = error_cb
        self._error_cb2 = error_cb is not None and _two_arg(error_cb)
        self._task: Any = None
        self._finished = False
        self._undrain: Callable[[], None] | None = None

    def __repr__(self) -> str:
        return f"<PushConsumeContext consumer={self._consumer!r} delivered={self._state.taken}>"

    def _start_consume(self) -> None:
        cfg = self._cfg
        assert cfg.deliver_subject
        self._listen(cfg.deliver_subject, cfg.deliver_group or None, self._on_msg)
        self._begin()
        self._task = prims.spawn(self._run, name="jetwire-push-consume")
        # the connection's drain lets the callback finish what was delivered
        self._undrain = self._link.on_drain(self._drain)

    # -- errors (from the reader, the timer or the callback task: never blocks) -----------
    def _report(self, exc: BaseException) -> None:
        cb = self._error_cb
        if cb is None:
            log.warning("jetwire: consume of push consumer %r: %s", self._consumer, exc)
        elif self._error_cb2:
            self._link.dispatch(cb, self, exc)
        else:
            self._link.dispatch(cb, exc)

    def _other_status(self, h: Headers) -> None:
        if h.status == "409" and "consumer deleted" in (h.description or "").lower():
            self._report(ConsumerDeletedError(f"push consumer {self._consumer!r} was deleted"))
            self._halt()  # wakes the callback task, which ends
            return
        self._report(JetStreamError(f"push consumer {self._consumer!r}: {h.status} {h.description or ''}".rstrip()))

    # -- the callback task ------------------------------------------------------------------
    async def _run(self) -> None:
        cb = self._cb
        try:
            while True:
                msg = await self._next_raw(None)
                if msg is END or self._closed:
                    return
                try:
                    r = cb(msg)
                    if r is not None and _isawaitable(r):  # aio-only
                        await r  # aio-only
                except Exception as exc:  # a failing callback must not stop consuming
                    self._report(exc)
        finally:
            self._halt()
            self._queue.clear()
            self._finished = True
            undrain, self._undrain = self._undrain, None
            if undrain is not None:
                undrain()

    # -- controls ---------------------------------------------------------------------------
    def stop(self) -> None:
        """Stop at once: no more messages are handed to the callback (not a coroutine;
        the consumer itself stays)."""
        if self._closed:
            return
        self._halt()
        self._queue.clear()

    async def drain(self, timeout: float | None = None) -> None:
        """Stop receiving, hand what is buffered to the callback, then close (waits for
        that, at most ``timeout`` seconds)."""
        await self._drain(timeout)

    async def _drain(self, timeout: float | None) -> bool:
        """``drain()``; whether consuming ended within ``timeout``."""
        if not self._closed and not self._draining:
            self._draining = True
            sub = self._sub
            if sub is not None:
                self._link.unsubscribe(sub)
            self._signal.set()
        return await prims.join(self._task, timeout)

    async def closed(self, timeout: float | None = None) -> bool:
        """Wait until consuming ended (stopped, drained, the consumer deleted); False if
        still running after ``timeout`` seconds."""
        return await prims.join(self._task, timeout)

    @property
    def is_closed(self) -> bool:
        return self._finished

    @property
    def _stopped(self) -> bool:
        """Stopped or ended (the task may still be finishing)."""
        return self._closed

    @property
    def delivered(self) -> int:
        """Messages handed to the callback so far."""
        return self._state.taken


__all__ = ["PushConsumeContext", "PushConsumer", "check_push", "push_config"]
