"""JetStream context (asyncio source; ``jetwire/_sync/jetstream.py`` is generated from it).

Management (streams, consumers, account) goes through :meth:`JetStream.api_request`, one
``$JS.API`` request per call. ``publish()`` is a request that waits for the ack.
``publish_async()`` resolves its acks through ONE wildcard reply subscription per
connection, handled straight from the reader by the sans-IO
:class:`~jetwire.jetstream.pubmux.PubAckMux` (token -> future): no subscription, task or
thread per message.
"""
from __future__ import annotations

import inspect
from datetime import datetime
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Dict, Iterable, Mapping, Optional, Tuple, Union, Unpack

import orjson

from .. import _impl
from .._nuid import NUID
from ..errors import (
    APIError,
    ConnectionClosedError,
    ConsumerExistsError,
    ConsumerNotFoundError,
    InvalidOptionError,
    JetStreamError,
    JetStreamNotEnabledError,
    MaxPayloadError,
    NoRespondersError,
    NoStreamResponseError,
    StreamNameInUseError,
    StreamNotFoundError,
    TimeoutError,
    TooManyStalledMsgsError,
    api_error,
    payload_type_error,
)
from ..events import ADVISORY_SUBJECT, METRIC_SUBJECT
from ..jetstream._json import config_from_kwargs
from ..jetstream.config_kwargs import (
    ConsumerConfigFields,
    KeyValueConfigFields,
    ObjectStoreConfigFields,
    StreamConfigFields,
)
from ..jetstream.ensure_core import (
    DEFAULT_CONSUMER,
    DEFAULT_STREAM,
    check_drift,
    consumer_config,
    consumer_drift,
    named_consumer_config,
    stream_config,
    stream_drift,
    update_config,
)
from ..jetstream.kv_models import KeyValueConfig
from ..jetstream.manage import (
    ConsumerPauseResponse,
    consumer_create_request,
    consumer_create_subject,
    generate_consumer_name,
    incr_headers,
    pause_request,
    publish_headers,
    validate_filter_subjects,
)
from ..jetstream.models import AccountInfo, ConsumerConfig, ConsumerInfo, PubAck, StreamConfig, StreamInfo
from ..jetstream.obj_models import ObjectStoreConfig
from ..jetstream.ops import (
    acknowledged,
    clustered_js,
    legacy_consumer_create_subject,
    peer_remove_request,
    reset_info,
    reset_request,
    server_at_least,
    stepdown_request,
)
from ..jetstream.pubmux import (  # noqa: F401 - one future per flavour
    CONTEXT_TIMEOUT,
    AckFuture,
    AioAckFuture,
    PubAckMux,
    acked_future_class,
)
from ..jetstream.validate import validate_consumer_name, validate_stream_name
from ..msg import Msg
from ..schemas import check_request
from . import _prims as prims
from .stream import Stream, _stream_info

if TYPE_CHECKING:
    import os

    from ..jetstream.backup_core import SnapshotResult
    from .batch import AtomicBatch
    from .consumer import Consumer
    from .events import EventStream
    from .kv import KeyValue
    from .objects import ObjectStore
    from .ordered import OrderedConsumer
    from .push import PushSubscription
    from .push_consumer import PushConsumer

_encode_headers = _impl.encode_headers
_from_ack = PubAck.from_json_bytes
_new_future = AioAckFuture  # aio-only
# sync-only: _new_future = AckFuture  # a concurrent.futures.Future that is cheap to make and resolve


def _ack_timeout(value: Any, name: str) -> Optional[float]:
    """An async-publish ack timeout: None (no deadline; also for infinity) or seconds > 0."""
    if value is None:
        return None
    if type(value) is bool or not isinstance(value, (int, float)) or not value > 0:
        raise InvalidOptionError(f"{name} must be None or a number of seconds > 0, not {value!r}")
    value = float(value)
    return None if value == float("inf") else value


def _none() -> None:
    return None


def _clean(resp: Dict[str, Any]) -> Dict[str, Any]:
    resp.pop("type", None)
    return resp


def _consumer(js: "JetStream", stream: str, info: ConsumerInfo) -> "Consumer":
    from .consumer import Consumer  # imported late: consumer.py builds on this module

    return Consumer(js, stream, info)


def _checked_stream(js: "JetStream", cfg: StreamConfig, resp: Dict[str, Any]) -> Stream:
    info = _stream_info(resp)
    got = info.config
    _check_supported(cfg.allow_msg_ttl, got.allow_msg_ttl, "per-message TTLs (allow_msg_ttl: 2.11+)")
    _check_supported(cfg.allow_msg_counter, got.allow_msg_counter, "counters (allow_msg_counter: 2.12+)")
    return Stream(js, info)


def _api_answer(data: bytes, request: Optional[str] = None) -> Dict[str, Any]:
    """The decoded answer of an API request, or the typed error it carries (naming
    ``request``, the API subject)."""
    try:
        resp = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise JetStreamError(f"bad JetStream API response: {bytes(data[:100])!r}") from exc
    if type(resp) is not dict:
        raise JetStreamError(f"bad JetStream API response: {bytes(data[:100])!r}")
    err = resp.get("error")
    if err:
        raise api_error(err if isinstance(err, dict) else {"description": str(err)}, request)
    return resp


def _parse_ack(data: bytes) -> PubAck:
    try:
        ack = _from_ack(data)
    except JetStreamError:
        raise
    except Exception:
        raise JetStreamError(f"invalid JetStream publish ack: {bytes(data[:100])!r}") from None
    if not ack.stream:
        raise JetStreamError(f"invalid JetStream publish ack: {bytes(data[:100])!r}")
    return ack


def _check_supported(asked: Any, got: Any, what: str) -> None:
    """A feature the server dropped from the config it stored (an older server)."""
    if asked and not got:
        raise JetStreamError(f"the server does not support {what}")


def _positional(cb: Callable[..., Any]) -> int:
    """How many positional arguments ``cb`` takes (-1: any number, or unknown)."""
    try:
        params = inspect.signature(cb).parameters.values()
    except (TypeError, ValueError):
        return -1
    n = 0
    for p in params:
        if p.kind is p.VAR_POSITIONAL:
            return -1
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            n += 1
    return n


def _takes_three(cb: Callable[..., Any]) -> bool:
    """Whether ``cb`` takes nats.go's ``(js, msg, err)`` (else ``(msg, err)``)."""
    try:
        params = inspect.signature(cb).parameters.values()
    except (TypeError, ValueError):
        return True
    n = 0
    for p in params:
        if p.kind is p.VAR_POSITIONAL:
            return True
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            n += 1
    return n >= 3


class JetStream:
    """JetStream over one connection: ``nc.jetstream(domain=, api_prefix=, timeout=,
    publish_async_max_pending=, publish_async_timeout=, trace_cb=, validate=)``.

    ``validate=True`` checks every API request against its JSON Schema
    (:mod:`jetwire.schemas`) before it is sent, completed with the fields the published
    schemas require, and raises ``SchemaValidationError`` with nothing sent.

    Async publishes share one reply subscription (and one count of acks in flight) per
    connection; ``publish_async_max_pending`` bounds that count for publishes made
    through this context.

    ``publish_async_timeout`` (nats.go's ``WithPublishAsyncTimeout``): how long a
    ``publish_async`` of this context waits for its ack by default, ``timeout`` unless
    given (the same bound as ``publish``); None: no deadline. A publish whose ack does
    not come in time fails with ``TimeoutError`` (and reaches ``publish_async_err_cb``),
    and its slot in the window is freed; the server may still have stored it, so
    publish it again with the same ``msg_id``.

    ``trace_cb(subject, payload)`` (nats.go's ``ClientTrace``; plain or, in aio, a
    coroutine function) is called twice for every JetStream API request this context
    makes (``api_request`` and everything built on it, direct gets included): with the
    full request subject (``"$JS.API.STREAM.INFO.ORDERS"``) and the payload sent
    (``bytes``, ``b""`` when none) right before it is sent, then with the subject the
    response arrived on (the reply inbox) and the response payload (``bytes``). No
    response (a timeout, no responders): no second call. An exception raised by
    ``trace_cb`` goes to the connection's ``error_cb``; the request goes on.
    Publishes are not API requests and are not traced.

    ``publish_async_ack_cb(ack)`` (nats.go's ``PublishAsyncAckHandler``; a callable of
    two parameters gets ``(msg, ack)``, of three ``(js, msg, ack)``; plain or, in aio, a
    coroutine function) is called on the callback dispatcher once for every
    ``publish_async`` of this context that the stream acknowledged, with its ``PubAck``
    (never for a failure: that goes to ``publish_async_err_cb``).

    ``publish_async_err_cb(js, msg, err)`` (nats.go's ``PublishAsyncErrHandler``; a
    callable of two parameters gets ``(msg, err)``; plain or, in aio, a coroutine
    function) is called on the callback dispatcher for every ``publish_async`` of this
    context whose future fails (an error ack, no responders after the retries, its
    ``timeout``, the connection lost or closed), with the ``Msg`` that was sent (also
    ``fut.msg``) so it can be published again.
    """

    def __init__(self, nc: Any, domain: Optional[str] = None, api_prefix: Optional[str] = None,
                 timeout: float = 5.0, publish_async_max_pending: int = 4000,
                 trace_cb: Optional[Callable[[str, bytes], Any]] = None,
                 publish_async_err_cb: Optional[Callable[..., Any]] = None, validate: bool = False,
                 publish_async_timeout: Any = CONTEXT_TIMEOUT,
                 publish_async_ack_cb: Optional[Callable[..., Any]] = None) -> None:
        if domain is not None and api_prefix is not None:
            raise ValueError("give domain or api_prefix, not both")
        if domain:
            prefix = f"$JS.{domain}.API"
        elif api_prefix:
            prefix = api_prefix.rstrip(".")
        else:
            prefix = "$JS.API"
        if publish_async_max_pending < 1:
            raise ValueError("publish_async_max_pending must be at least 1")
        self._nc = nc
        self._link = nc.link
        self._prefix = prefix
        self._domain = domain
        self._timeout = timeout
        self._max_pending = publish_async_max_pending
        if publish_async_timeout is CONTEXT_TIMEOUT:
            publish_async_timeout = timeout
        self._ack_timeout = _ack_timeout(publish_async_timeout, "publish_async_timeout")
        self._mux: Optional[PubAckMux] = None
        self._publish = nc.publish  # the outbox's compiled fast path once connected
        # what publish_async returns: a future of the connection's loop (made without
        # looking the loop up per message; set on first use) / an AckFuture, cheap to
        # make and resolve
        if publish_async_ack_cb is not None and not callable(publish_async_ack_cb):
            raise TypeError("publish_async_ack_cb must be callable")
        self._ack_cb = publish_async_ack_cb
        self._ack_cb_args = 0 if publish_async_ack_cb is None else _positional(publish_async_ack_cb)
        # with publish_async_ack_cb: futures whose set_result reports the ack (the
        # others keep the plain class: nothing more per publish)
        self._future_cls = _new_future if publish_async_ack_cb is None else \
            acked_future_class(_new_future, self._async_acked)
        self._make_future: Any = None  # aio-only
        # sync-only: self._make_future = self._future_cls
        self._nuid = NUID()
        self._trace_cb = trace_cb
        if publish_async_err_cb is not None and not callable(publish_async_err_cb):
            raise TypeError("publish_async_err_cb must be callable")
        self._err_cb = publish_async_err_cb
        self._err_cb_js = publish_async_err_cb is not None and _takes_three(publish_async_err_cb)
        self._on_fail = None if publish_async_err_cb is None else self._async_failed
        self._validate = validate

    def __repr__(self) -> str:
        return f"<JetStream prefix={self._prefix!r}>"

    def _async_acked(self, fut: Any, ack: Any) -> None:
        """An async publish of this context was acknowledged: tell ``publish_async_ack_cb``
        (from the reader; through the callback dispatcher)."""
        n = self._ack_cb_args
        if n == 3:
            self._link.dispatch(self._ack_cb, self, fut.msg, ack)
        elif n == 2:
            self._link.dispatch(self._ack_cb, fut.msg, ack)
        else:
            self._link.dispatch(self._ack_cb, ack)

    def _async_failed(self, fut: Any, exc: BaseException) -> None:
        """An async publish of this context failed: tell ``publish_async_err_cb``."""
        if self._err_cb_js:
            self._link.dispatch(self._err_cb, self, fut.msg, exc)
        else:
            self._link.dispatch(self._err_cb, fut.msg, exc)

    @property
    def api_prefix(self) -> str:
        return self._prefix

    @property
    def domain(self) -> Optional[str]:
        return self._domain

    async def api_request(self, subject: str, payload: Union[dict, bytes, None] = None,
                          timeout: Optional[float] = None) -> Dict[str, Any]:
        """One JetStream API request: ``subject`` is relative to the API prefix (``"STREAM.INFO.ORDERS"``;
        the domain or ``api_prefix`` is applied), ``payload`` a dict (sent as JSON), bytes or None.
        Returns the JSON answer as a dict or raises its typed error (``APIError``
        subclasses with the server's ``err_code``; ``JetStreamNotEnabledError`` when nothing answers).

        Every management request of this context (streams, consumers, account, KV and
        object-store buckets, backups) goes through here. With ``validate=True`` the
        payload is completed and checked against its schema first
        (``SchemaValidationError``, nothing sent)."""
        full, data = self._api_prepare(subject, payload)
        try:
            msg = await self._request(full, data, timeout or self._timeout)
        except NoRespondersError as exc:
            raise JetStreamNotEnabledError(code=503, err_code=None, description="JetStream not enabled (no responders)",
                                           request=subject) from exc
        return _api_answer(msg.data, subject)

    def _api_request_nowait(self, subject: str, payload: Union[dict, bytes, None] = None) -> None:
        """Send an API request whose answer nobody waits for (a best-effort cleanup)."""
        full, data = self._api_prepare(subject, payload)
        self._link.request_nowait(full, data)

    def _api_prepare(self, subject: str, payload: Union[dict, bytes, None]) -> Tuple[str, bytes]:
        """The full subject and the body of an API request: every API request is made here
        (and checked against its schema here with ``validate=True``)."""
        if not isinstance(subject, str) or not subject:
            raise ValueError("subject is required (relative to the API prefix, e.g. 'STREAM.INFO.ORDERS')")
        if subject.startswith(("$JS.", self._prefix + ".")):
            raise ValueError(f"subject {subject!r} must be relative to the API prefix (e.g. 'STREAM.INFO.ORDERS')")
        if payload is not None and not isinstance(payload, (bytes, bytearray, memoryview, dict)):
            raise TypeError(f"payload must be a dict, bytes or None, not {type(payload).__name__}")
        if self._validate:
            payload = check_request(subject, bytes(payload) if isinstance(payload, memoryview) else payload)
        if payload is None:
            data = b""
        elif isinstance(payload, dict):
            try:
                data = orjson.dumps(payload)
            except TypeError as exc:
                if "64-bit" not in str(exc):
                    raise
                # the server reads integers (durations in nanoseconds too) as 64-bit
                raise InvalidOptionError(
                    f"a value of the {subject} request does not fit in 64 bits (a duration is at most "
                    f"{(2 ** 63 - 1) // 10 ** 9:,} seconds, about 292 years)") from None
        else:
            data = bytes(payload)
        full = f"{self._prefix}.{subject}"
        _impl.validate_subject(full)
        return full, data

    async def _request(self, subject: str, data: bytes, timeout: float) -> Msg:
        """One request over the connection's shared inbox (``subject`` in full), traced
        through ``trace_cb``: the reply ``Msg``."""
        trace = self._trace_cb
        if trace is None:
            return await self._link.request_raw(subject, data, None, timeout)
        await self._trace(trace, subject, data)
        msg = await self._link.request_raw(subject, data, None, timeout)
        await self._trace(trace, msg.subject, bytes(msg.data))
        return msg

    async def _trace(self, trace: Callable[[str, bytes], Any], subject: str, payload: bytes) -> None:
        try:
            await prims.call(trace, subject, payload)
        except Exception as exc:
            self._link.report_error(exc)

    async def account_info(self) -> AccountInfo:
        """Usage and limits of the account (``JetStreamNotEnabledError`` without JetStream)."""
        return AccountInfo.from_json(_clean(await self.api_request("INFO")))

    # -- streams ---------------------------------------------------------------------
    async def create_stream(self, config: Union[StreamConfig, Dict[str, Any], None] = None,
                            **fields: Unpack[StreamConfigFields]) -> Stream:
        """Create a stream from a ``StreamConfig`` (or a dict) and/or its fields.
        Creating a stream that exists with the same config returns it; with another
        config it raises ``StreamNameInUseError``."""
        cfg = config_from_kwargs(StreamConfig, config, **fields)
        name = validate_stream_name(cfg.name)
        validate_filter_subjects(cfg.subjects or ())
        resp = await self.api_request(f"STREAM.CREATE.{name}", cfg.to_json_dict())
        return _checked_stream(self, cfg, resp)

    async def update_stream(self, config: Union[StreamConfig, Dict[str, Any], None] = None,
                            **fields: Unpack[StreamConfigFields]) -> Stream:
        """Update a stream's config (``StreamNotFoundError`` when it does not exist)."""
        cfg = config_from_kwargs(StreamConfig, config, **fields)
        name = validate_stream_name(cfg.name)
        validate_filter_subjects(cfg.subjects or ())
        resp = await self.api_request(f"STREAM.UPDATE.{name}", cfg.to_json_dict())
        return _checked_stream(self, cfg, resp)

    async def create_or_update_stream(self, config: Union[StreamConfig, Dict[str, Any], None] = None,
                                      **fields: Unpack[StreamConfigFields]) -> Stream:
        """Update the stream, or create it when it does not exist."""
        cfg = config_from_kwargs(StreamConfig, config, **fields)
        try:
            return await self.update_stream(cfg)
        except StreamNotFoundError:
            return await self.create_stream(cfg)

    async def stream(self, name: str) -> Stream:
        """Look a stream up now (``StreamNotFoundError`` when it does not exist)."""
        validate_stream_name(name)
        resp = await self.api_request(f"STREAM.INFO.{name}")
        return Stream(self, _stream_info(resp))

    async def stream_info(self, name: str, subjects_filter: Optional[str] = None,
                          deleted_details: bool = False) -> StreamInfo:
        """Shortcut for ``(await js.stream(name)).info(...)``."""
        validate_stream_name(name)
        s = Stream(self, StreamInfo(config=StreamConfig(name=name)))
        return await s.info(subjects_filter, deleted_details)

    async def delete_stream(self, name: str) -> bool:
        """Delete a stream and its consumers (``StreamNotFoundError`` when missing)."""
        validate_stream_name(name)
        await self.api_request(f"STREAM.DELETE.{name}")
        return True

    async def list_streams(self, subject: Optional[str] = None) -> AsyncIterator[StreamInfo]:
        """Info of every stream (only those with subjects matching ``subject`` when
        given); requested page by page while iterating."""
        offset = 0
        while True:
            req: Dict[str, Any] = {"offset": offset}
            if subject:
                req["subject"] = subject
            resp = await self.api_request("STREAM.LIST", req)
            page = resp.get("streams") or []
            for d in page:
                yield StreamInfo.from_json(d)
            offset += len(page)
            if not page or offset >= (resp.get("total") or 0):
                return

    async def stream_names(self, subject: Optional[str] = None) -> AsyncIterator[str]:
        """Name of every stream (only those with subjects matching ``subject`` when
        given); requested page by page while iterating."""
        offset = 0
        while True:
            req: Dict[str, Any] = {"offset": offset}
            if subject:
                req["subject"] = subject
            resp = await self.api_request("STREAM.NAMES", req)
            page = resp.get("streams") or []
            for name in page:
                yield name
            offset += len(page)
            if not page or offset >= (resp.get("total") or 0):
                return

    async def stream_name_by_subject(self, subject: str) -> str:
        """The name of the stream that stores ``subject`` (``StreamNotFoundError`` when none)."""
        _impl.validate_filter(subject)
        resp = await self.api_request("STREAM.NAMES", {"subject": subject})
        names = resp.get("streams") or []
        if not names:
            raise StreamNotFoundError(code=404, err_code=10059, description=f"no stream matches subject {subject!r}")
        return names[0]

    # -- consumers -------------------------------------------------------------------
    async def create_consumer(self, stream: str, config: Union[ConsumerConfig, Dict[str, Any], None] = None,
                              **fields: Unpack[ConsumerConfigFields]) -> "Consumer":
        """Create a consumer on ``stream`` from a ``ConsumerConfig`` (or a dict) and/or its
        fields. Without ``name``/``durable_name`` it is ephemeral. Creating it again with
        the same config returns it; with another config raises ``ConsumerExistsError``.
        ``ack_policy`` defaults to ``AckPolicy.EXPLICIT``."""
        return await self._upsert_consumer(stream, config, fields, "create")

    async def update_consumer(self, stream: str, config: Union[ConsumerConfig, Dict[str, Any], None] = None,
                              **fields: Unpack[ConsumerConfigFields]) -> "Consumer":
        """Update a consumer (``ConsumerDoesNotExistError`` when it does not exist)."""
        return await self._upsert_consumer(stream, config, fields, "update")

    async def create_or_update_consumer(self, stream: str, config: Union[ConsumerConfig, Dict[str, Any], None] = None,
                                        **fields: Unpack[ConsumerConfigFields]) -> "Consumer":
        """Create the consumer, or update it when it exists."""
        return await self._upsert_consumer(stream, config, fields, "")

    async def _upsert_consumer(self, stream: str, config: Any, fields: Mapping[str, Any], action: str) -> Any:
        validate_stream_name(stream)
        cfg = config_from_kwargs(ConsumerConfig, config, **fields)
        if cfg.durable_name is not None:
            validate_consumer_name(cfg.durable_name)
        if cfg.name is not None:
            validate_consumer_name(cfg.name)
        name = cfg.name or cfg.durable_name
        if not name:
            name = generate_consumer_name(self._nuid)
        if server_at_least(self._nc.server_info, 2, 9):
            subject = consumer_create_subject(stream, name, cfg)  # checks the filters
        else:  # before 2.9 (as nats.go): CONSUMER.DURABLE.CREATE, or CONSUMER.CREATE.<stream>
            subject = legacy_consumer_create_subject(stream, cfg)
        resp = await self.api_request(subject, consumer_create_request(stream, cfg, action))
        info = ConsumerInfo.from_json(_clean(resp))
        if cfg.filter_subjects and not info.config.filter_subjects:
            raise JetStreamError("the server does not support multiple filter subjects")
        _check_supported(cfg.priority_groups, info.config.priority_groups, "priority groups (2.11+)")
        return _consumer(self, stream, info)

    async def consumer(self, stream: str, name: str) -> "Consumer":
        """Look a consumer up now (``ConsumerNotFoundError`` when it does not exist)."""
        validate_stream_name(stream)
        validate_consumer_name(name)
        resp = await self.api_request(f"CONSUMER.INFO.{stream}.{name}")
        return _consumer(self, stream, ConsumerInfo.from_json(_clean(resp)))

    async def consumer_info(self, stream: str, name: str) -> ConsumerInfo:
        """Shortcut for ``(await js.consumer(stream, name)).cached_info()``."""
        return (await self.consumer(stream, name)).cached_info()

    async def delete_consumer(self, stream: str, name: str) -> bool:
        """Delete a consumer (``ConsumerNotFoundError`` when it does not exist)."""
        validate_stream_name(stream)
        validate_consumer_name(name)
        await self.api_request(f"CONSUMER.DELETE.{stream}.{name}")
        return True

    async def list_consumers(self, stream: str) -> AsyncIterator[ConsumerInfo]:
        """Info of every consumer of ``stream``, requested page by page."""
        validate_stream_name(stream)
        offset = 0
        while True:
            resp = await self.api_request(f"CONSUMER.LIST.{stream}", {"offset": offset})
            page = resp.get("consumers") or []
            for d in page:
                yield ConsumerInfo.from_json(d)
            offset += len(page)
            if not page or offset >= (resp.get("total") or 0):
                return

    async def consumer_names(self, stream: str) -> AsyncIterator[str]:
        """Name of every consumer of ``stream``, requested page by page."""
        validate_stream_name(stream)
        offset = 0
        while True:
            resp = await self.api_request(f"CONSUMER.NAMES.{stream}", {"offset": offset})
            page = resp.get("consumers") or []
            for name in page:
                yield name
            offset += len(page)
            if not page or offset >= (resp.get("total") or 0):
                return

    async def pause_consumer(self, stream: str, name: str, until: datetime) -> ConsumerPauseResponse:
        """Pause delivery of a consumer until ``until`` (an aware datetime; naive is UTC)."""
        if until is None:
            raise TypeError("until must be a datetime")
        return await self._pause(stream, name, until)

    async def resume_consumer(self, stream: str, name: str) -> ConsumerPauseResponse:
        """Resume a paused consumer."""
        return await self._pause(stream, name, None)

    async def unpin_consumer(self, stream: str, consumer: str, group: str) -> None:
        """Unpin the pinned client of priority group ``group`` of a ``pinned_client``
        consumer (``$JS.API.CONSUMER.UNPIN``): the server picks another waiting pull
        (the old pinned client's next pull gets a 423 and goes on without its pin id).
        ``APIError`` (err_code 10160) for a group the consumer does not have."""
        validate_stream_name(stream)
        validate_consumer_name(consumer)
        if not isinstance(group, str) or not group:
            raise ValueError("group is required")
        await self.api_request(f"CONSUMER.UNPIN.{stream}.{consumer}", {"group": group})

    async def reset_consumer(self, stream: str, consumer: str, seq: Optional[int] = None) -> ConsumerInfo:
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
        if not server_at_least(self._nc.server_info, 2, 14):
            raise JetStreamError(f"consumer reset needs nats-server 2.14+ (the server is "
                                 f"{self._nc.server_info.get('version')})")
        await self.consumer_info(stream, consumer)
        try:
            resp = await self.api_request(f"CONSUMER.RESET.{stream}.{consumer}", body)
        except TimeoutError:
            await self.consumer_info(stream, consumer)  # deleted meanwhile: its typed error
            raise
        return reset_info(resp)

    async def _pause(self, stream: str, name: str, until: Optional[datetime]) -> ConsumerPauseResponse:
        validate_stream_name(stream)
        validate_consumer_name(name)
        resp = await self.api_request(f"CONSUMER.PAUSE.{stream}.{name}", pause_request(until))
        return ConsumerPauseResponse.from_json(_clean(resp))

    # -- cluster operations (jsm.go) ---------------------------------------------------
    async def stream_leader_stepdown(self, name: str, preferred: Optional[str] = None) -> None:
        """Ask the leader of stream ``name``'s RAFT group to step down (jsm.go's
        ``Stream.LeaderStepDown``); ``preferred``: the server name that should lead next
        (else the server picks a current peer). Returns once the server acknowledged
        (the election follows); ``APIError`` otherwise (``StreamNotFoundError``; err_code
        10010 on a server that is not clustered; 10005 for a preferred server that is
        not a peer or already leads)."""
        validate_stream_name(name)
        resp = await self.api_request(f"STREAM.LEADER.STEPDOWN.{name}", stepdown_request(preferred))
        acknowledged(resp, f"stream {name!r} leader step-down")

    async def consumer_leader_stepdown(self, stream: str, consumer: str, preferred: Optional[str] = None) -> None:
        """Ask the leader of consumer ``consumer`` of ``stream`` to step down (jsm.go's
        ``Consumer.LeaderStepDown``); as :meth:`stream_leader_stepdown`
        (``ConsumerNotFoundError`` for a missing consumer)."""
        validate_stream_name(stream)
        validate_consumer_name(consumer)
        resp = await self.api_request(f"CONSUMER.LEADER.STEPDOWN.{stream}.{consumer}", stepdown_request(preferred))
        acknowledged(resp, f"consumer {consumer!r} leader step-down")

    async def remove_stream_peer(self, stream: str, peer: str) -> None:
        """Remove server ``peer`` (its name, or its peer id) from the replicas of
        ``stream`` (jsm.go's ``Stream.RemoveRAFTPeer``): the meta leader places a new
        replica elsewhere when it can. ``APIError`` when it is not a peer of the stream
        (err_code 10040), ``StreamNotFoundError``, 10010 unclustered."""
        validate_stream_name(stream)
        resp = await self.api_request(f"STREAM.PEER.REMOVE.{stream}", peer_remove_request(peer))
        acknowledged(resp, f"removal of peer {peer!r} from stream {stream!r}")

    async def meta_leader_stepdown(self, preferred: Optional[str] = None) -> None:
        """Ask the JetStream meta leader to step down (jsm.go's ``MetaLeaderStandDown``);
        ``preferred``: the server that should lead next. Only users of the system
        account may: the server does not answer anyone else, which raises ``APIError``
        (code 408) after the context's timeout; on a server that runs JetStream
        unclustered ``APIError`` err_code 10010 at once, nothing sent."""
        body = stepdown_request(preferred)
        if self._prefix == "$JS.API" and clustered_js(self._nc.server_info) is False:
            raise APIError(code=503, err_code=10010, description="JetStream clustering support required")
        try:
            resp = await self.api_request("META.LEADER.STEPDOWN", body)
        except TimeoutError as exc:
            raise APIError(code=408, err_code=None,
                           description="no answer to the meta leader step-down (the server answers only users of "
                                       "the system account, and only while there is a meta leader)") from exc
        acknowledged(resp, "meta leader step-down")

    # -- templates and declarative management (jsm.go style) ----------------------------
    async def create_stream_from_default(self, name: str, template: Any, **overrides: Any) -> Stream:
        """Create stream ``name`` from ``template`` (any ``StreamConfig``, e.g.
        ``DEFAULT_STREAM``, or a dict of its fields) with ``overrides`` (config field
        names; an unknown one raises ``TypeError`` before any request)."""
        return await self.create_stream(stream_config(name, template, overrides))

    async def load_or_create_stream(self, name: str, template: Any = DEFAULT_STREAM, **overrides: Any) -> Stream:
        """The stream ``name`` as it is, or, when it does not exist, created from
        ``template`` and ``overrides`` (jsm.go's ``LoadOrNewStreamFromDefault``: an
        existing stream is never compared nor changed)."""
        cfg = stream_config(name, template, overrides)
        try:
            return await self.stream(name)
        except StreamNotFoundError:
            pass
        try:
            return await self.create_stream(cfg)
        except StreamNameInUseError:  # created by someone else meanwhile
            return await self.stream(name)

    async def ensure_stream(self, name: str, template: Any = DEFAULT_STREAM, **overrides: Any) -> Stream:
        """Make stream ``name`` have the config of ``template`` and ``overrides``: create
        it when missing, update it when it differs only in fields the server can update,
        return it unchanged when equal (values the server fills in for unset fields do
        not count). Raises ``ConfigDriftError`` (``.fields``) when it differs in fields
        that cannot be updated (storage, retention to/from work queue, ...)."""
        cfg = stream_config(name, template, overrides)
        try:
            s = await self.stream(name)
        except StreamNotFoundError:
            try:
                return await self.create_stream(cfg)
            except StreamNameInUseError:  # created by someone else meanwhile: compare
                s = await self.stream(name)
        stored = s.cached_info().config
        if not check_drift("stream", name, stream_drift(cfg, stored)):
            return s
        return await self.update_stream(update_config(cfg, stored))

    async def create_consumer_from_default(self, stream: str, template: Any, **overrides: Any) -> "Consumer":
        """Create a consumer on ``stream`` from ``template`` (any ``ConsumerConfig``, e.g.
        ``DEFAULT_CONSUMER``, or a dict of its fields) with ``overrides`` (unknown names:
        ``TypeError`` before any request). Without ``name``/``durable_name`` it is ephemeral."""
        validate_stream_name(stream)
        return await self.create_consumer(stream, consumer_config(template, overrides))

    async def load_or_create_consumer(self, stream: str, name: str, template: Any = DEFAULT_CONSUMER,
                                      **overrides: Any) -> "Consumer":
        """Consumer ``name`` of ``stream`` as it is, or, when it does not exist, created
        from ``template`` and ``overrides`` (durable, ``durable_name=name``, unless the
        config names it); an existing consumer is never compared nor changed."""
        validate_stream_name(stream)
        cfg = named_consumer_config(name, template, overrides)
        try:
            return await self.consumer(stream, name)
        except ConsumerNotFoundError:
            pass
        try:
            return await self.create_consumer(stream, cfg)
        except ConsumerExistsError:  # created by someone else meanwhile
            return await self.consumer(stream, name)

    async def ensure_consumer(self, stream: str, name: str, template: Any = DEFAULT_CONSUMER,
                              **overrides: Any) -> "Consumer":
        """``ensure_stream`` for consumer ``name`` of ``stream`` (durable unless the config
        names it): create, update when only updatable fields differ, or raise
        ``ConfigDriftError`` listing the fields that cannot be updated (deliver policy,
        ack policy, pull/push, ...)."""
        validate_stream_name(stream)
        cfg = named_consumer_config(name, template, overrides)
        try:
            c = await self.consumer(stream, name)
        except ConsumerNotFoundError:
            try:
                return await self.create_consumer(stream, cfg)
            except ConsumerExistsError:  # created by someone else meanwhile: compare
                c = await self.consumer(stream, name)
        stored = c.cached_info().config
        if not check_drift("consumer", name, consumer_drift(cfg, stored)):
            return c
        return await self.update_consumer(stream, update_config(cfg, stored))

    async def ordered_consumer(self, stream: str, **options: Any) -> "OrderedConsumer":
        """An ordered consumer on ``stream`` (options as ``OrderedConsumer`` takes them)."""
        from .ordered import OrderedConsumer

        validate_stream_name(stream)
        oc = OrderedConsumer(self, stream, **options)
        await oc._start()
        return oc

    # -- advisories and metrics ------------------------------------------------------
    async def events(self, kinds: Optional[Iterable[str]] = None) -> "EventStream":
        """Parsed advisories and metrics (``$JS.EVENT.ADVISORY.>`` and ``$JS.EVENT.METRIC.>``)
        as an :class:`~jetwire.aio.events.EventStream`; ``kinds``: full type strings or
        their last token (``"api_audit"``). With a ``domain``, events of other domains are
        skipped. Subscribed (and flushed) when this returns."""
        from .events import EventStream

        es = EventStream(self._link, [ADVISORY_SUBJECT, METRIC_SUBJECT], kinds, self._domain)
        await self._nc.flush()
        return es

    async def consumer_ack_metrics(self, stream: str, consumer: str) -> "EventStream":
        """The ack metrics (``ConsumerAckMetric``) of one consumer, which the server sends
        for the share of acks its ``sample_freq`` asks for."""
        from .events import EventStream

        validate_stream_name(stream)
        validate_consumer_name(consumer)
        es = EventStream(self._link, [f"$JS.EVENT.METRIC.CONSUMER.ACK.{stream}.{consumer}"], None, self._domain)
        await self._nc.flush()
        return es

    # -- push consumers (nats.go legacy style; implemented in push.py) ---------------
    async def subscribe(self, subject: str, queue: Optional[str] = None, cb: Optional[Callable[..., Any]] = None,
                        **options: Any) -> "PushSubscription":
        """Subscribe to ``subject`` through a push consumer: ``durable=``, ``stream=``,
        ``config=``, ``manual_ack=``, ``ordered_consumer=``, ``idle_heartbeat=``,
        ``flow_control=``, ``deliver_subject=``, ``skip_consumer_lookup=`` (nats.go's
        ``SkipConsumerLookup``: no ``CONSUMER.INFO`` for a durable; the consumer is
        created, or updated to the config given, from the options alone). Returns a
        ``PushSubscription``."""
        from .push import subscribe

        return await subscribe(self, subject, queue, cb, **options)

    async def subscribe_bind(self, stream: str, consumer: str, cb: Optional[Callable[..., Any]] = None,
                             **options: Any) -> "PushSubscription":
        """Bind to an existing push consumer (``queue=``, ``manual_ack=``)."""
        from .push import subscribe_bind

        return await subscribe_bind(self, stream, consumer, cb, **options)

    # -- push consumers on the new API (nats.go jetstream.PushConsumer) ---------------
    async def create_push_consumer(self, stream: str, config: Union[ConsumerConfig, Dict[str, Any], None] = None,
                                   **fields: Unpack[ConsumerConfigFields]) -> "PushConsumer":
        """Create a push consumer on ``stream`` (nats.go's ``CreatePushConsumer``): a
        ``ConsumerConfig`` (or a dict) and/or its fields, ``deliver_subject`` required
        (``InvalidOptionError`` without one, nothing sent); ``deliver_group``,
        ``idle_heartbeat``, ``flow_control`` as the server knows them. Creating it
        again with the same config returns it; another config raises
        ``ConsumerExistsError``. Returns a :class:`~jetwire.aio.push_consumer.PushConsumer`
        (``consume(cb)``)."""
        from .push_consumer import PushConsumer, push_config

        cfg = push_config(config, fields)
        c = await self._upsert_consumer(stream, cfg, {}, "create")
        return PushConsumer(self, stream, c.cached_info())

    async def push_consumer(self, stream: str, name: str) -> "PushConsumer":
        """Look up the existing push consumer ``name`` of ``stream`` (nats.go's
        ``PushConsumer``): ``ConsumerNotFoundError`` when it does not exist,
        ``JetStreamError`` when it is a pull consumer (no deliver subject)."""
        from .push_consumer import PushConsumer, check_push

        info = await self.consumer_info(stream, name)
        check_push(info)
        return PushConsumer(self, stream, info)

    # -- publishing ------------------------------------------------------------------
    async def publish(self, subject: str, data: bytes = b"", headers: Any = None, msg_id: Optional[str] = None,
                      expected_stream: Optional[str] = None, expected_last_seq: Optional[int] = None,
                      expected_last_subject_seq: Optional[int] = None, expected_last_msg_id: Optional[str] = None,
                      timeout: Optional[float] = None, retry_attempts: int = 2, retry_wait: float = 0.25,
                      ttl: Optional[float] = None, expected_last_subject_seq_subject: Optional[str] = None,
                      schedule: Any = None, schedule_target: Optional[str] = None,
                      schedule_ttl: Any = None) -> PubAck:
        """Publish to a stream and wait for its ack.

        The ``expected_*`` arguments make the stream refuse the message unless they hold
        (``WrongLastSequenceError``, ``WrongLastMsgIdError``, ``StreamWrongExpectedError``);
        ``msg_id`` de-duplicates (``PubAck.duplicate``). When no stream answers, the
        publish is retried ``retry_attempts`` times ``retry_wait`` seconds apart
        (ADR-22; a negative count retries without limit), then
        ``NoStreamResponseError`` is raised. ``timeout`` (default: the context's)
        bounds each attempt's wait for the ack. ``ttl`` (seconds, at least 1, or
        ``"never"``; sent as ``Nats-TTL``) removes the message that long after it was
        stored: the stream needs ``allow_msg_ttl`` (else ``MsgTTLDisabledError``).

        ``expected_last_subject_seq_subject`` (nats.go's ``ExpectLastSequenceForSubject``):
        ``expected_last_subject_seq`` is then checked against the last message of that
        subject (or filter) instead of the published one's.

        ``schedule`` makes the message a schedule (ADR-51; the stream needs
        ``allow_msg_schedules``, else ``MsgSchedulesDisabledError``): ``"@at <RFC 3339
        time>"`` (or a ``datetime``), ``"@every <duration>"`` (at least ``1s``; or a
        ``timedelta``), ``@hourly``/``@daily``/... or a 6-field cron spec (seconds
        first); the stream stores a copy of it under ``schedule_target`` (required; a
        subject of the same stream, not the schedule's own) at those times, with the
        per-message TTL ``schedule_ttl`` when given (the stream needs ``allow_msg_ttl``).
        The last message on a subject is its schedule, so give each schedule its own
        subject. A malformed spec raises ``InvalidOptionError`` (a ``ValueError``)
        before anything is sent; one the server refuses, ``MsgScheduleInvalidError``."""
        hdrs = publish_headers(headers, msg_id, expected_stream, expected_last_seq, expected_last_subject_seq,
                               expected_last_msg_id, ttl,
                               expected_last_subject_seq_subject=expected_last_subject_seq_subject,
                               schedule=schedule, schedule_target=schedule_target, schedule_ttl=schedule_ttl)
        hdr = None if hdrs is None else _encode_headers(hdrs)
        if timeout is None:
            timeout = self._timeout
        request = self._link.request_raw
        attempt = 0
        while True:
            try:
                msg = await request(subject, data, hdr, timeout)
                break
            except NoRespondersError:
                if 0 <= retry_attempts <= attempt:
                    raise NoStreamResponseError(f"no stream answered the publish to {subject!r}") from None
                attempt += 1
                await prims.sleep(retry_wait)
        return _parse_ack(msg.data)

    async def publish_msg(self, msg: Msg, **options: Any) -> PubAck:
        """``publish(msg.subject, msg.data, msg.headers, **options)``."""
        return await self.publish(msg.subject, msg.data, msg.headers, **options)

    def atomic_batch(self, timeout: Optional[float] = None) -> "AtomicBatch":
        """A new atomic batch (ADR-50; server 2.12+, streams with ``allow_atomic=True``):
        ``b.add(subject, data, headers=None, **options)`` for each message but the last,
        then ``b.commit(subject, data, headers=None, **options) -> BatchAck`` (awaited in
        aio): all of it is stored, or nothing and ``AtomicBatchError`` is raised (see
        :class:`~jetwire.aio.batch.AtomicBatch`). ``timeout``: the commit's wait for its
        answer (default: the context's). Nothing is sent until the first ``add``."""
        from .batch import AtomicBatch

        if timeout is not None and (type(timeout) is bool or not isinstance(timeout, (int, float))
                                    or not timeout > 0):
            raise InvalidOptionError(f"timeout must be a number of seconds > 0, not {timeout!r}")
        return AtomicBatch(self._nc, self._link, timeout or self._timeout, self._nuid.next())

    async def incr(self, subject: str, delta: int = 1, timeout: Optional[float] = None) -> int:
        """Add ``delta`` (any int, negative or 0 too) to the counter stored on ``subject``
        of a stream with ``allow_msg_counter`` (server 2.12+; ``Nats-Incr`` header, no
        payload) and return its new value, from the ack. A stream without counters
        raises ``MsgCounterDisabledError``."""
        ack = await self.publish(subject, b"", headers=incr_headers(delta), timeout=timeout)
        if ack.val is None:
            raise JetStreamError(f"stream {ack.stream!r} sent no counter value: does it allow counters?")
        try:
            return int(ack.val)
        except ValueError:
            raise JetStreamError(f"stream {ack.stream!r} sent a bad counter value {ack.val!r}") from None

    def _pub_mux(self) -> PubAckMux:
        """The connection's async-publish mux (one per connection, shared by every
        context), made with its reply subscription on first use."""
        link = self._link
        if link.is_closed:
            raise ConnectionClosedError("connection closed")
        mux = link.shared("jetstream.pubmux", self._new_mux)
        if mux.closed:
            raise ConnectionClosedError("connection closed")
        self._mux = mux
        return mux

    def _new_mux(self) -> PubAckMux:
        link = self._link
        mux = PubAckMux(link.new_inbox() + ".", lock=None)  # aio-only: one thread
        # sync-only: mux = PubAckMux(link.new_inbox() + ".")

        def resend(token: str) -> None:
            """Publish a pending message again (after no responders; on the timer)."""
            entry = mux.pending.get(token)
            if entry is None or mux.closed:
                return
            try:
                link.publish_raw(entry[1], mux.reply_of(token), entry[2], entry[3])
            except Exception as exc:
                mux.fail(token, exc)

        def on_retry(token: str, wait: float) -> None:  # from the reader: never blocks
            link.call_later(wait, resend, token)

        mux.on_retry = on_retry
        mux.call_later = link.call_later  # the ack deadlines' one timer
        mux.sub = link.subscribe_direct(mux.prefix + "*", mux.on_msg)
        link.on_lost(mux.fail_sent)  # the acks of what went out are lost with the connection
        link.on_close(mux.fail_all)
        return mux

    async def _stall(self, mux: PubAckMux, stall_wait: float) -> None:
        """Wait up to ``stall_wait`` seconds for room in the window."""
        max_pending = self._max_pending
        # woken once a sixteenth of the window is free: publishes go out in small
        # batches while the window stays nearly full
        wake_at = max_pending - max(1, max_pending // 16)
        deadline = prims.monotonic() + stall_wait
        while len(mux.pending) >= max_pending:
            if mux.closed:
                raise ConnectionClosedError("connection closed")
            remaining = deadline - prims.monotonic()
            if remaining <= 0:
                raise TooManyStalledMsgsError(
                    f"{len(mux.pending)} async publishes awaiting acks; no room after {stall_wait}s")
            fut = prims.new_future()
            mux.add_stall_waiter(fut, wake_at)
            if len(mux.pending) < max_pending:
                break
            try:
                await prims.wait_future(fut, remaining)
            except Exception:  # timed out (checked above) or resolved concurrently
                pass

    async def publish_async(self, subject: str, data: bytes = b"", headers: Any = None,
                            msg_id: Optional[str] = None, expected_stream: Optional[str] = None,
                            expected_last_seq: Optional[int] = None,
                            expected_last_subject_seq: Optional[int] = None,
                            expected_last_msg_id: Optional[str] = None, timeout: Any = CONTEXT_TIMEOUT,
                            retry_attempts: int = 2, retry_wait: float = 0.25, stall_wait: float = 0.2,
                            ttl: Optional[float] = None) -> Any:
        """Publish without waiting for the ack; returns a future resolving to the
        ``PubAck`` (or failing with the typed error, ``NoStreamResponseError`` after the
        no-responders retries, ``ConnectionClosedError`` when the connection closes,
        ``ConnectionLostError`` when it is lost before the ack, or ``TimeoutError`` when
        no ack came within ``timeout``).

        ``timeout``: the ack deadline in seconds; by default the context's
        ``publish_async_timeout`` (its ``timeout``, 5 s, unless set), None for no
        deadline. A future still pending at its deadline fails with ``TimeoutError``
        (also handed to ``publish_async_err_cb``), its slot in the window is freed and a
        late ack for it is ignored, so every future resolves in bounded time (a stream
        leader lost with acks in flight never answers them, and the connection to a
        surviving server does not fail them).

        At most ``publish_async_max_pending`` acks are awaited at once (counted over
        every context of the connection, which share one reply subscription); a
        publish that finds the window full waits up to ``stall_wait`` seconds for room,
        then raises ``TooManyStalledMsgsError``. When the connection is lost, every
        publish still awaiting its ack fails with ``ConnectionLostError``; publishes
        made while reconnecting go out once the connection is back and get their acks.

        A failed publish (a timeout, a lost connection) may or may not have been
        stored: give every message a ``msg_id`` and publish the failed ones again with
        the same id (``fut.msg`` is what was sent); the stream's duplicate window drops a
        copy it has already stored. ``ttl``: a per-message TTL, as in :meth:`publish`."""
        mux = self._mux
        if mux is not None and headers is None and timeout is CONTEXT_TIMEOUT and msg_id is None and ttl is None \
                and expected_stream is None and expected_last_seq is None and expected_last_subject_seq is None \
                and expected_last_msg_id is None and not mux.closed and len(mux.pending) < self._max_pending:
            # the common case: no headers, room in the window; the PUB goes through the
            # client's publish (the outbox's compiled fast path; it checks max_payload)
            make = self._make_future
            if make is None:  # aio-only
                make = self._make_future = prims.future_maker(self._future_cls)  # aio-only
            fut = make()
            fut._pub = (subject, data, None, self._on_fail)
            # registered (with its ack deadline) and published in one compiled call
            # (removed again if publish raises)
            # aio: what publish returns is done, or (congested) done once the socket drains
            r = mux.submit(fut, subject, data, retry_attempts, retry_wait, self._publish, self._ack_timeout)  # aio-only
            await r  # aio-only
            # sync-only: mux.submit(fut, subject, data, retry_attempts, retry_wait, self._publish, self._ack_timeout)
            return fut
        if timeout is CONTEXT_TIMEOUT:
            timeout = self._ack_timeout
        else:
            timeout = _ack_timeout(timeout, "timeout")
        if mux is None or mux.closed:
            mux = self._pub_mux()
        if len(mux.pending) >= self._max_pending:
            await self._stall(mux, stall_wait)
        if msg_id is not None or expected_stream is not None or expected_last_seq is not None \
                or expected_last_subject_seq is not None or expected_last_msg_id is not None or ttl is not None:
            headers = publish_headers(headers, msg_id, expected_stream, expected_last_seq,
                                      expected_last_subject_seq, expected_last_msg_id, ttl)
        hdr = None if headers is None else _encode_headers(headers)
        try:
            size = len(data) if hdr is None else len(hdr) + len(data)
        except TypeError:  # no bytes-like object (the encoder refuses a str, a list, ...)
            raise payload_type_error(data) from None
        link = self._link
        if size > link.max_payload:
            raise MaxPayloadError(f"message of {size} bytes exceeds max_payload {link.max_payload}")
        make = self._make_future
        if make is None:  # aio-only
            make = self._make_future = prims.future_maker(self._future_cls)  # aio-only
        fut = make()
        fut._pub = (subject, data, headers, self._on_fail)
        token = mux.add(fut, subject, hdr, data, retry_attempts, retry_wait, timeout)
        try:
            link.publish_raw(subject, mux.prefix + token, hdr, data)
        except BaseException:
            mux.discard(token)
            raise
        await link.wait_writable()
        return fut

    async def publish_msg_async(self, msg: Msg, **options: Any) -> Any:
        """``publish_async(msg.subject, msg.data, msg.headers, **options)``."""
        return await self.publish_async(msg.subject, msg.data, msg.headers, **options)

    def _current_mux(self) -> Optional[PubAckMux]:
        mux = self._mux
        if mux is None:
            mux = self._link.shared("jetstream.pubmux", _none)
        return mux

    def publish_async_pending(self) -> int:
        """How many async publishes on this connection await their ack."""
        mux = self._current_mux()
        return len(mux.pending) if mux is not None else 0

    async def publish_async_complete(self, timeout: Optional[float] = None) -> None:
        """Wait until every async publish has its ack or failed; ``TimeoutError`` after
        ``timeout`` seconds (None waits as long as it takes: at most until the last
        deadline of the publishes made with one)."""
        mux = self._current_mux()
        if mux is None:
            return
        deadline = None if timeout is None else prims.monotonic() + timeout
        while mux.pending:
            remaining = None
            if deadline is not None:
                remaining = deadline - prims.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"{len(mux.pending)} async publishes still await their ack")
            fut = prims.new_future()
            mux.add_complete_waiter(fut)
            if not mux.pending:
                break
            try:
                await prims.wait_future(fut, remaining)
            except Exception:  # timed out (checked above) or resolved concurrently
                pass

    # -- backup and restore (jetwire/aio/backup.py) ----------------------------------
    async def snapshot_stream(self, name: str, dest: Union[str, "os.PathLike[str]"], chunk_size: int = 128 * 1024,
                              check_msgs: bool = False,
                              progress: Optional[Callable[[int, Optional[int]], Any]] = None) -> "SnapshotResult":
        """Back stream ``name`` up into directory ``dest`` (made if missing): ``backup.json``
        (its config and state) and ``stream.tar.s2`` (the server's snapshot, consumers
        included), the layout of ``nats stream backup``. ``chunk_size`` (1 KiB..1 MiB) is
        the size of the chunks the server sends; ``check_msgs`` has the server check the
        data first. ``progress(done_bytes, total_bytes)`` is called as chunks arrive
        (uncompressed bytes, the total the server announced). Files already in ``dest``
        are replaced only once the snapshot is complete; a failed one leaves nothing new
        behind (``TimeoutError`` when the server stops sending, ``ConnectionLostError``,
        ``JetStreamError`` when the server reports a failure or a chunk is missing)."""
        from .backup import snapshot_stream

        return await snapshot_stream(self, name, dest, chunk_size, check_msgs, progress)

    async def restore_stream(self, src: Union[str, "os.PathLike[str]"], name: Optional[str] = None,
                             progress: Optional[Callable[[int, Optional[int]], Any]] = None) -> StreamInfo:
        """Restore the stream backed up in directory ``src`` (as ``snapshot_stream`` or
        ``nats stream backup`` wrote it), its consumers included, under ``name`` when
        given (where the server allows it), and return its info.
        ``StreamNameInUseError`` before any data is sent when the stream exists; a
        missing, truncated or corrupt backup raises ``JetStreamError`` naming the problem,
        and a partial stream the server made is deleted (also after ``TimeoutError`` or a
        lost connection, in the background once the server answers again).
        ``progress(done_bytes, total_bytes)`` is called as the file is sent."""
        from .backup import restore_stream

        return await restore_stream(self, src, name, progress)

    # -- key-value stores (jetwire/aio/kv.py) ----------------------------------------
    async def create_key_value(self, config: Union[KeyValueConfig, Dict[str, Any], None] = None,
                               **fields: Unpack[KeyValueConfigFields]) -> "KeyValue":
        """Create a key-value bucket from a ``KeyValueConfig`` (or a dict) and/or its
        fields (``bucket``, ``history``, ``ttl``, ...). The same bucket again with the same
        config returns it; with another config raises ``StreamNameInUseError``.
        ``InvalidBucketNameError``/``HistoryTooLargeError`` before anything is sent."""
        from .kv import create_key_value

        return await create_key_value(self, config, **fields)

    async def update_key_value(self, config: Union[KeyValueConfig, Dict[str, Any], None] = None,
                               **fields: Unpack[KeyValueConfigFields]) -> "KeyValue":
        """Update a bucket's config (``BucketNotFoundError`` when it does not exist)."""
        from .kv import update_key_value

        return await update_key_value(self, config, **fields)

    async def create_or_update_key_value(self, config: Union[KeyValueConfig, Dict[str, Any], None] = None,
                                         **fields: Unpack[KeyValueConfigFields]) -> "KeyValue":
        """Create the bucket, or update it when it exists."""
        from .kv import create_or_update_key_value

        return await create_or_update_key_value(self, config, **fields)

    async def key_value(self, bucket: str) -> "KeyValue":
        """Bind to an existing bucket (``BucketNotFoundError`` when it does not exist)."""
        from .kv import key_value

        return await key_value(self, bucket)

    async def delete_key_value(self, bucket: str) -> bool:
        """Delete a bucket and everything in it (``BucketNotFoundError`` when missing)."""
        from .kv import delete_key_value

        return await delete_key_value(self, bucket)

    async def key_value_store_names(self) -> AsyncIterator[str]:
        """Name of every key-value bucket (``async for`` in aio)."""
        from .kv import key_value_store_names

        async for name in key_value_store_names(self):
            yield name

    async def key_value_stores(self) -> AsyncIterator[Any]:
        """``KeyValueStatus`` of every key-value bucket (``async for`` in aio)."""
        from .kv import key_value_stores

        async for status in key_value_stores(self):
            yield status

    # -- object stores (jetwire/aio/objects.py) --------------------------------------
    async def create_object_store(self, config: Union[ObjectStoreConfig, Dict[str, Any], None] = None,
                                  **fields: Unpack[ObjectStoreConfigFields]) -> "ObjectStore":
        """Create an object store bucket from an ``ObjectStoreConfig`` (or a dict) and/or
        its fields (``InvalidBucketNameError`` before anything is sent)."""
        from .objects import create_object_store

        return await create_object_store(self, config, **fields)

    async def update_object_store(self, config: Union[ObjectStoreConfig, Dict[str, Any], None] = None,
                                  **fields: Unpack[ObjectStoreConfigFields]) -> "ObjectStore":
        """Update an object store's config (``BucketNotFoundError`` when missing)."""
        from .objects import update_object_store

        return await update_object_store(self, config, **fields)

    async def create_or_update_object_store(self, config: Union[ObjectStoreConfig, Dict[str, Any], None] = None,
                                            **fields: Unpack[ObjectStoreConfigFields]) -> "ObjectStore":
        """Create the object store, or update it when it exists."""
        from .objects import create_or_update_object_store

        return await create_or_update_object_store(self, config, **fields)

    async def object_store(self, bucket: str) -> "ObjectStore":
        """Bind to an existing object store (``BucketNotFoundError`` when missing)."""
        from .objects import object_store

        return await object_store(self, bucket)

    async def delete_object_store(self, bucket: str) -> bool:
        """Delete an object store and every object in it (``BucketNotFoundError`` when missing)."""
        from .objects import delete_object_store

        return await delete_object_store(self, bucket)

    async def object_store_names(self) -> AsyncIterator[str]:
        """Name of every object store (``async for`` in aio)."""
        from .objects import object_store_names

        async for name in object_store_names(self):
            yield name

    async def object_stores(self) -> AsyncIterator[Any]:
        """``ObjectStoreStatus`` of every object store (``async for`` in aio)."""
        from .objects import object_stores

        async for status in object_stores(self):
            yield status
