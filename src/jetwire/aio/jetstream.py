"""JetStream context (asyncio source; ``jetwire/_sync/jetstream.py`` is generated from it).

:class:`JetStream` is composed, the way nats.go's ``jetstream`` package composes its
interfaces, of managers in their own modules, over one internal API-request object
(:class:`~jetwire.aio.jsapi.JSApi`, ``js.api``) that the handles it makes (streams,
consumers, KV and object stores, backups) use too:

- :mod:`.js_streams` ``StreamManager``: streams;
- :mod:`.js_consumers` ``ConsumerManager``: pull, ordered and push consumers;
- :mod:`.js_publish` ``Publisher``: ``publish``, ``publish_async``, batches, counters;
- :mod:`.js_stores` ``KeyValueManager``, ``ObjectStoreManager``, ``BackupManager``;
- :mod:`.js_ops` ``Operations``: account info, cluster operations, advisories.

Management goes through :meth:`JetStream.api_request`, one ``$JS.API`` request per call.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..jetstream.pubmux import CONTEXT_TIMEOUT
from ..jetstream.validate import validate_seconds
from .js_consumers import ConsumerManager
from .js_ops import Operations
from .js_publish import Publisher
from .js_stores import BackupManager, KeyValueManager, ObjectStoreManager
from .js_streams import StreamManager
from .jsapi import JSApi

if TYPE_CHECKING:
    from .client import Client

__all__ = ["JetStream"]


class JetStream(StreamManager, ConsumerManager, Publisher, KeyValueManager, ObjectStoreManager, BackupManager,
                Operations):
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

    def __init__(self, nc: Client, domain: str | None = None, api_prefix: str | None = None,
                 timeout: float = 5.0, publish_async_max_pending: int = 4000,
                 trace_cb: Callable[[str, bytes], object] | None = None,
                 publish_async_err_cb: Callable[..., object] | None = None, validate: bool = False,
                 publish_async_timeout: float | None = CONTEXT_TIMEOUT,
                 publish_async_ack_cb: Callable[..., object] | None = None) -> None:
        self._nc = nc
        # internal (no compatibility promise): the API requests of this context, which
        # the handles it makes use openly
        validate_seconds(timeout, "timeout")
        self.api = JSApi(nc, domain, api_prefix, timeout, trace_cb, validate)
        self._init_publishing(publish_async_max_pending, publish_async_timeout, publish_async_err_cb,
                              publish_async_ack_cb)

    def __repr__(self) -> str:
        return f"<JetStream prefix={self.api.prefix!r}>"
