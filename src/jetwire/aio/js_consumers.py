"""The consumer manager of a JetStream context (asyncio source; ``jetwire/_sync/js_consumers.py``
is generated from it): pull consumers (create, update, look up, list, delete, pause,
unpin, reset, templates and ``ensure_consumer``), ordered consumers, and push consumers
of the legacy ``subscribe`` and of the new API (nats.go's ``jetstream.ConsumerManager``
and ``PushConsumer``). :class:`~jetwire.aio.jetstream.JetStream` is made of this and the
other managers."""
from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Unpack, cast

from .._typing import JSONObject
from ..errors import (
    ConsumerExistsError,
    ConsumerIsPushBasedError,
    ConsumerNotFoundError,
    InvalidOptionError,
    JetStreamError,
    TimeoutError,
)
from ..jetstream._json import config_from_kwargs
from ..jetstream.config_kwargs import ConsumerConfigFields
from ..jetstream.ensure_core import (
    DEFAULT_CONSUMER,
    check_drift,
    consumer_config,
    consumer_drift,
    named_consumer_config,
    update_config,
)
from ..jetstream.manage import (
    ConsumerPauseResponse,
    consumer_create_request,
    consumer_create_subject,
    pause_request,
)
from ..jetstream.models import ConsumerConfig, ConsumerInfo
from ..jetstream.ops import (
    check_supported,
    legacy_consumer_create_subject,
    reset_info,
    reset_request,
    server_at_least,
)
from ..jetstream.validate import validate_consumer_name, validate_stream_name
from .consumer import Consumer
from .jsapi import ContextBase
from .ordered import OrderedConsumer, start_ordered_consumer
from .push import PushSubscription, subscribe, subscribe_bind
from .push_consumer import PushConsumer, check_push, push_config

if TYPE_CHECKING:
    from .jetstream import JetStream


def _clean(resp: JSONObject) -> JSONObject:
    resp.pop("type", None)
    return resp


class ConsumerManager(ContextBase):
    """Consumers (a part of ``JetStream``)."""

    async def create_consumer(self, stream: str, config: ConsumerConfig | JSONObject | None = None,
                              **fields: Unpack[ConsumerConfigFields]) -> Consumer:
        """Create a consumer on ``stream`` from a ``ConsumerConfig`` (or a dict) and/or its
        fields. Without ``name``/``durable_name`` it is ephemeral. Creating it again with
        the same config returns it; with another config raises ``ConsumerExistsError``.
        ``ack_policy`` defaults to ``AckPolicy.EXPLICIT``."""
        return await self._upsert_consumer(stream, config, fields, "create")

    async def update_consumer(self, stream: str, config: ConsumerConfig | JSONObject | None = None,
                              **fields: Unpack[ConsumerConfigFields]) -> Consumer:
        """Update a consumer (``ConsumerDoesNotExistError`` when it does not exist)."""
        return await self._upsert_consumer(stream, config, fields, "update")

    async def create_or_update_consumer(self, stream: str, config: ConsumerConfig | JSONObject | None = None,
                                        **fields: Unpack[ConsumerConfigFields]) -> Consumer:
        """Create the consumer, or update it when it exists."""
        return await self._upsert_consumer(stream, config, fields, "")

    async def _upsert_consumer(self, stream: str, config: Any, fields: Mapping[str, Any], action: str) -> Consumer:
        validate_stream_name(stream)
        cfg = config_from_kwargs(ConsumerConfig, config, **fields)
        if cfg.durable_name is not None:
            validate_consumer_name(cfg.durable_name)
        if cfg.name is not None:
            validate_consumer_name(cfg.name)
        name = cfg.name or cfg.durable_name
        if not name:
            name = self.api.new_name()
        if server_at_least(self.api.nc.server_info, 2, 9):
            subject = consumer_create_subject(stream, name, cfg)  # checks the filters
        else:  # before 2.9 (as nats.go): CONSUMER.DURABLE.CREATE, or CONSUMER.CREATE.<stream>
            subject = legacy_consumer_create_subject(stream, cfg)
        resp = await self.api_request(subject, consumer_create_request(stream, cfg, action))
        info = ConsumerInfo.from_json(_clean(resp))
        if cfg.filter_subjects and not info.config.filter_subjects:
            raise JetStreamError("the server does not support multiple filter subjects")
        check_supported(cfg.priority_groups, info.config.priority_groups, "priority groups (2.11+)")
        return Consumer(cast("JetStream", self), stream, info)

    async def consumer(self, stream: str, name: str) -> Consumer:
        """Look a pull consumer up now (``ConsumerNotFoundError`` when it does not exist;
        ``ConsumerIsPushBasedError`` for a push consumer, as nats.go's
        ``ErrNotPullConsumer``: ``js.push_consumer()`` binds to one)."""
        c = await self._handle(stream, name)
        if c.cached_info().config.deliver_subject:
            raise ConsumerIsPushBasedError(
                "409", f"consumer {name!r} of stream {stream!r} is a push consumer (js.push_consumer() binds to it)")
        return c

    async def _handle(self, stream: str, name: str) -> Consumer:
        """A handle of consumer ``name`` as it is now, pull or push (what ``create_consumer``
        and the ensure helpers give back)."""
        return Consumer(cast("JetStream", self), stream, await self.consumer_info(stream, name))

    async def consumer_info(self, stream: str, name: str) -> ConsumerInfo:
        """A consumer's info, pull or push (``ConsumerNotFoundError`` when it does not exist)."""
        validate_stream_name(stream)
        validate_consumer_name(name)
        resp = await self.api_request(f"CONSUMER.INFO.{stream}.{name}")
        return ConsumerInfo.from_json(_clean(resp))

    async def delete_consumer(self, stream: str, name: str) -> bool:
        """Delete a consumer (``ConsumerNotFoundError`` when it does not exist)."""
        validate_stream_name(stream)
        validate_consumer_name(name)
        await self.api_request(f"CONSUMER.DELETE.{stream}.{name}")
        return True

    async def list_consumers(self, stream: str) -> AsyncIterator[ConsumerInfo]:
        """Info of every consumer of ``stream``, requested page by page."""
        validate_stream_name(stream)
        async for d in self.api_pages(f"CONSUMER.LIST.{stream}", "consumers"):
            yield ConsumerInfo.from_json(d)

    async def consumer_names(self, stream: str) -> AsyncIterator[str]:
        """Name of every consumer of ``stream``, requested page by page."""
        validate_stream_name(stream)
        async for d in self.api_pages(f"CONSUMER.NAMES.{stream}", "consumers"):
            yield d

    async def pause_consumer(self, stream: str, name: str, until: datetime) -> ConsumerPauseResponse:
        """Pause delivery of a consumer until ``until`` (an aware datetime; naive is UTC)."""
        if until is None:
            raise TypeError("until must be a datetime")
        return await self._pause(stream, name, until)

    async def resume_consumer(self, stream: str, name: str) -> ConsumerPauseResponse:
        """Resume a paused consumer."""
        return await self._pause(stream, name, None)

    async def _pause(self, stream: str, name: str, until: datetime | None) -> ConsumerPauseResponse:
        validate_stream_name(stream)
        validate_consumer_name(name)
        resp = await self.api_request(f"CONSUMER.PAUSE.{stream}.{name}", pause_request(until))
        paused: ConsumerPauseResponse = ConsumerPauseResponse.from_json(_clean(resp))
        return paused

    async def unpin_consumer(self, stream: str, consumer: str, group: str) -> None:
        """Unpin the pinned client of priority group ``group`` of a ``pinned_client``
        consumer (``$JS.API.CONSUMER.UNPIN``): the server picks another waiting pull
        (the old pinned client's next pull gets a 423 and goes on without its pin id).
        ``APIError`` (err_code 10160) for a group the consumer does not have."""
        validate_stream_name(stream)
        validate_consumer_name(consumer)
        if not isinstance(group, str) or not group:
            raise InvalidOptionError("group is required")
        await self.api_request(f"CONSUMER.UNPIN.{stream}.{consumer}", {"group": group})

    async def reset_consumer(self, stream: str, consumer: str, seq: int | None = None) -> ConsumerInfo:
        """Reset a consumer's delivery state (nats.go's ``ResetConsumer`` /
        ``ResetConsumerToSequence``, server 2.14+): without ``seq`` it delivers again from
        its ack floor + 1 (what was delivered but not acknowledged comes again); with
        ``seq`` from that stream sequence (allowed by deliver policies ``all``,
        ``by_start_sequence`` and ``by_start_time`` when not before their start;
        otherwise ``APIError`` err_code 10204). Returns the consumer's info after the
        reset. ``ConsumerNotFoundError`` / ``StreamNotFoundError`` when it does not
        exist (looked up first: the reset subject is served by the consumer itself, so
        nothing would answer), ``JetStreamError`` from a server before 2.14."""
        validate_stream_name(stream)
        validate_consumer_name(consumer)
        body = reset_request(seq)
        info = self.api.nc.server_info
        if not server_at_least(info, 2, 14):
            raise JetStreamError(f"consumer reset needs nats-server 2.14+ (the server is {info.get('version')})")
        await self.consumer_info(stream, consumer)
        try:
            resp = await self.api_request(f"CONSUMER.RESET.{stream}.{consumer}", body)
        except TimeoutError:
            await self.consumer_info(stream, consumer)  # deleted meanwhile: its typed error
            raise
        return reset_info(resp)

    # -- templates and declarative management (jsm.go style) ----------------------------
    async def create_consumer_from_default(self, stream: str, template: ConsumerConfig | JSONObject, **overrides: object) -> Consumer:
        """Create a consumer on ``stream`` from ``template`` (any ``ConsumerConfig``, e.g.
        ``DEFAULT_CONSUMER``, or a dict of its fields) with ``overrides`` (unknown names:
        ``TypeError`` before any request). Without ``name``/``durable_name`` it is ephemeral."""
        validate_stream_name(stream)
        return await self.create_consumer(stream, consumer_config(template, overrides))

    async def load_or_create_consumer(self, stream: str, name: str, template: ConsumerConfig | JSONObject = DEFAULT_CONSUMER,
                                      **overrides: object) -> Consumer:
        """Consumer ``name`` of ``stream`` as it is, or, when it does not exist, created
        from ``template`` and ``overrides`` (durable, ``durable_name=name``, unless the
        config names it); an existing consumer is never compared nor changed."""
        validate_stream_name(stream)
        cfg = named_consumer_config(name, template, overrides)
        try:
            return await self._handle(stream, name)
        except ConsumerNotFoundError:
            pass
        try:
            return await self.create_consumer(stream, cfg)
        except ConsumerExistsError:  # created by someone else meanwhile
            return await self._handle(stream, name)

    async def ensure_consumer(self, stream: str, name: str, template: ConsumerConfig | JSONObject = DEFAULT_CONSUMER,
                              **overrides: object) -> Consumer:
        """``ensure_stream`` for consumer ``name`` of ``stream`` (durable unless the config
        names it): create, update when only updatable fields differ, or raise
        ``ConfigDriftError`` listing the fields that cannot be updated (deliver policy,
        ack policy, pull/push, ...)."""
        validate_stream_name(stream)
        cfg = named_consumer_config(name, template, overrides)
        try:
            c = await self._handle(stream, name)
        except ConsumerNotFoundError:
            try:
                return await self.create_consumer(stream, cfg)
            except ConsumerExistsError:  # created by someone else meanwhile: compare
                c = await self._handle(stream, name)
        stored = c.cached_info().config
        if not check_drift("consumer", name, consumer_drift(cfg, stored)):
            return c
        return await self.update_consumer(stream, update_config(cfg, stored))

    async def ordered_consumer(self, stream: str, filter_subjects: str | Sequence[str] | None = None,
                               **options: Any) -> OrderedConsumer:
        """An ordered consumer on ``stream`` reading ``filter_subjects`` (None: all of
        it); the other options as ``OrderedConsumer`` takes them (``deliver_policy``,
        ``opt_start_seq``, ``opt_start_time``, ``replay_policy``, ``inactive_threshold``,
        ``headers_only``, ``max_reset_attempts``, ``metadata``)."""
        validate_stream_name(stream)
        return await start_ordered_consumer(cast("JetStream", self), stream, filter_subjects=filter_subjects,
                                            **options)

    # -- push consumers (nats.go legacy style; implemented in push.py) ---------------
    async def subscribe(self, subject: str, queue: str | None = None, cb: Callable[..., object] | None = None,
                        **options: Any) -> PushSubscription:
        """Subscribe to ``subject`` through a push consumer: ``durable=``, ``stream=``,
        ``config=``, ``manual_ack=``, ``ordered_consumer=``, ``idle_heartbeat=``,
        ``flow_control=``, ``deliver_subject=``, ``skip_consumer_lookup=`` (nats.go's
        ``SkipConsumerLookup``: no ``CONSUMER.INFO`` for a durable; the consumer is
        created, or updated to the config given, from the options alone). Returns a
        ``PushSubscription``."""
        return await subscribe(cast("JetStream", self), subject, queue, cb, **options)

    async def subscribe_bind(self, stream: str, consumer: str, cb: Callable[..., object] | None = None,
                             **options: Any) -> PushSubscription:
        """Bind to an existing push consumer (``queue=``, ``manual_ack=``)."""
        return await subscribe_bind(cast("JetStream", self), stream, consumer, cb, **options)

    # -- push consumers on the new API (nats.go jetstream.PushConsumer) ---------------
    async def create_push_consumer(self, stream: str, config: ConsumerConfig | JSONObject | None = None,
                                   **fields: Unpack[ConsumerConfigFields]) -> PushConsumer:
        """Create a push consumer on ``stream`` (nats.go's ``CreatePushConsumer``): a
        ``ConsumerConfig`` (or a dict) and/or its fields, ``deliver_subject`` required
        (``InvalidOptionError`` without one, nothing sent); ``deliver_group``,
        ``idle_heartbeat``, ``flow_control`` as the server knows them. Creating it
        again with the same config returns it; another config raises
        ``ConsumerExistsError``. Returns a :class:`~jetwire.aio.push_consumer.PushConsumer`
        (``consume(cb)``)."""
        cfg = push_config(config, fields)
        c = await self._upsert_consumer(stream, cfg, {}, "create")
        return PushConsumer(cast("JetStream", self), stream, c.cached_info())

    async def push_consumer(self, stream: str, name: str) -> PushConsumer:
        """Look up the existing push consumer ``name`` of ``stream`` (nats.go's
        ``PushConsumer``): ``ConsumerNotFoundError`` when it does not exist,
        ``JetStreamError`` when it is a pull consumer (no deliver subject)."""
        info = await self.consumer_info(stream, name)
        check_push(info)
        return PushConsumer(cast("JetStream", self), stream, info)
