"""Every error jetwire raises. ``NatsError`` is the base of all of them."""
from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .protocol.headers import HeadersInit


class NatsError(Exception):
    """Base class of every jetwire error."""


# --- core -------------------------------------------------------------------------
class ConnectionClosedError(NatsError):
    """The connection is closed."""


class ConnectionLostError(NatsError):
    """The connection was lost before an answer came (a JetStream publish may or may not
    have been stored); the client reconnects."""


class NoServersError(NatsError):
    """No server in the pool could be reached."""


class TimeoutError(NatsError, builtins.TimeoutError):
    """An operation did not finish in time (also a builtin ``TimeoutError``)."""


class NoRespondersError(NatsError):
    """A request reached no responder (status 503)."""


class ProtocolError(NatsError):
    """The peer sent bytes that are not valid NATS protocol.

    ``subject`` names the message a malformed frame carried (that one frame was skipped;
    the connection goes on); ``events`` holds what was parsed before a framing error
    that ends the connection (those messages are still delivered)."""

    def __init__(self, message: str = "", subject: str | None = None) -> None:
        super().__init__(message)
        self.subject = subject
        self.events: list[Any] = []


class AuthorizationError(NatsError):
    """The server refused our credentials (``from_server``), or the client could not
    make them (a credentials file it cannot read, a callback's bad answer)."""

    from_server = False
    """Whether the server said it (an ``-ERR``): only such a refusal, the same one twice
    in a row, stops reconnecting."""


class PermissionsError(NatsError):
    """The server refused a publish or subscribe (``Permissions Violation``)."""


class PermissionViolationError(PermissionsError):
    """The server refused this subscription (``Permissions Violation for Subscription
    to ...``): raised by its ``next_msg()`` and iteration when the connection was made
    with ``permission_err_on_subscribe=True`` (nats.go's ``PermissionErrOnSubscribe``);
    ``error_cb`` gets it too. ``subject`` and ``queue`` are those the server named."""

    def __init__(self, message: str = "permissions violation for subscription", subject: str = "",
                 queue: str | None = None):
        super().__init__(message)
        self.subject = subject
        self.queue = queue


class MaxSubscriptionsError(NatsError):
    """The server refused a subscription: the connection holds its ``max_subscriptions``
    (``-ERR 'maximum subscriptions exceeded'``; the connection stays)."""


class MaxPayloadError(NatsError):
    """Headers plus data exceed the server's ``max_payload``."""


class SlowConsumerError(NatsError):
    """A subscription's pending limits were exceeded and messages were dropped."""

    def __init__(self, message: str = "slow consumer, messages dropped", subject: str = "", sid: int = 0,
                 dropped: int = 0):
        super().__init__(message)
        self.subject = subject
        self.sid = sid
        self.dropped = dropped


class BadSubjectError(NatsError, ValueError):
    """A subject is empty, has an empty token, whitespace or control characters, or (to
    subscribe to) a wildcard that is not a whole token; also what ``error_cb`` gets for
    the server's ``-ERR 'Invalid Subject'``."""


class DrainTimeoutError(NatsError, builtins.TimeoutError):
    """Draining did not finish in time."""


class StaleConnectionError(NatsError):
    """The server stopped answering pings."""


class BadHeaderError(NatsError, ValueError):
    """A header key or value cannot be put on the wire."""


class SubscriptionClosedError(NatsError):
    """The subscription was unsubscribed, drained or reached its message limit."""


class ReconnectBufferFullError(NatsError):
    """The reconnect buffer is full; the publish was not queued."""


# --- JetStream ----------------------------------------------------------------------
class JetStreamError(NatsError):
    """Base class of JetStream, key-value and object-store errors."""


class APIError(JetStreamError):
    """An error answer of the JetStream API, with the server's ``code`` and ``err_code``."""

    def __init__(self, code: int | None = None, err_code: int | None = None, description: str = "", **extra: str | None):
        self.code = code
        self.err_code = err_code
        self.description = description
        #: the API request answered so (``STREAM.INFO.ORDERS``: it names the stream, the
        #: consumer, the bucket), when known
        self.request: str | None = extra.get("request")
        super().__init__(self._text())

    def _text(self) -> str:
        on = f", request {self.request}" if self.request else ""
        return f"{self.description or type(self).__name__} (code={self.code}, err_code={self.err_code}{on})"

    def __str__(self) -> str:
        return self._text()


class StreamNotFoundError(APIError):
    """The stream does not exist (err_code 10059)."""


class StreamNameInUseError(APIError):
    """A stream with that name and another config exists (err_code 10058), or a restore
    found the stream already there (err_code 10130)."""


class ConsumerNotFoundError(APIError):
    """The consumer does not exist (err_code 10014)."""


class ConsumerExistsError(APIError):
    """A consumer with that name and another config exists (err_code 10148/10013)."""


class ConsumerDoesNotExistError(APIError):
    """Update of a consumer that does not exist (err_code 10149)."""


class MsgNotFoundError(APIError):
    """No message at that sequence or subject (err_code 10037)."""


class BadRequestError(APIError):
    """The server found the request malformed (err_code 10003)."""


class JetStreamNotEnabledError(APIError):
    """JetStream is not enabled for the server or account (err_code 10076/10039)."""


class WrongLastSequenceError(APIError):
    """An expected-last-sequence check failed (err_code 10071)."""


class WrongLastMsgIdError(APIError):
    """An expected-last-msg-id check failed (err_code 10070)."""


class StreamWrongExpectedError(APIError):
    """An expected-stream check failed (err_code 10060)."""


class MsgTTLInvalidError(APIError):
    """A per-message TTL the stream refused: below one second or malformed (err_code 10165)."""


class MsgTTLDisabledError(APIError):
    """A per-message TTL was sent to a stream without ``allow_msg_ttl`` (err_code 10166)."""


class MsgCounterDisabledError(APIError):
    """A counter increment was sent to a stream without ``allow_msg_counter`` (err_code 10168)."""


class MsgSchedulesDisabledError(APIError):
    """A message schedule was sent to a stream without ``allow_msg_schedules`` (err_code 10188)."""


class MsgScheduleInvalidError(APIError):
    """The stream refused a message schedule: its pattern (err_code 10189), its target
    (10190, not a subject of the stream other than the schedule's own) or its
    ``schedule_ttl`` (10191)."""


class AtomicBatchError(APIError):
    """An atomic batch publish (ADR-50) failed and NOTHING of it was stored.

    ``batch_id``: the batch's ``Nats-Batch-Id``; ``description`` (also ``reason``): why,
    as the server said it (a broken expectation, atomic publish disabled on the stream,
    a duplicate ``msg_id``, too many messages, ...); ``code``/``err_code``: the server's;
    ``error``: the typed error of that answer (for instance a
    ``WrongLastSequenceError``) or the client-side one (``NoStreamResponseError``),
    also chained as ``__cause__``. The err_codes of batch failures (10174-10177,
    10179, 10199, 10201) are this class too."""

    def __init__(self, code: int | None = None, err_code: int | None = None, description: str = "",
                 batch_id: str | None = None, error: BaseException | None = None, **extra: str | None):
        self.batch_id = batch_id
        self.error = error
        super().__init__(code, err_code, description, **extra)

    @property
    def reason(self) -> str:
        return self.description

    def _text(self) -> str:
        where = f"atomic batch {self.batch_id!r}" if self.batch_id else "atomic batch"
        return f"{where} failed, nothing stored: {super()._text()}"


class NoStreamResponseError(JetStreamError):
    """A JetStream publish got no answer from any stream."""


class NotJSMessageError(JetStreamError, ValueError):
    """The message or subject is not a JetStream message."""


class MsgAlreadyAckedError(JetStreamError):
    """The message was already acknowledged."""


class InvalidStreamNameError(JetStreamError, ValueError):
    """A stream name is empty or has forbidden characters."""


class InvalidConsumerNameError(JetStreamError, ValueError):
    """A consumer name is empty or has forbidden characters."""


class NoHeartbeatError(JetStreamError):
    """Idle heartbeats stopped arriving."""


class ConsumerDeletedError(JetStreamError):
    """The consumer was deleted while in use."""


class ConsumerGoneError(ConsumerNotFoundError, ConsumerDeletedError):
    """A pull found its consumer gone (nobody answered it and a lookup says the consumer
    no longer exists): both a ``ConsumerNotFoundError`` and a ``ConsumerDeletedError``."""


class PullStatusError(JetStreamError):
    """A status message a pull request ended with (the server's code and description)."""

    def __init__(self, status: str, description: str) -> None:
        self.status = status
        self.description = description
        super().__init__(f"nats: {status} {description}".rstrip())


class ConsumerIsPushBasedError(PullStatusError):
    """The consumer has a deliver subject: it cannot be pulled from (409)."""


class PinIdMismatchError(PullStatusError):
    """A pull on a ``pinned_client`` priority group carried a pin id that is no longer
    the pinned one (423); the consumer handle forgets its pin id."""


class InvalidOptionError(JetStreamError, ValueError):
    """An option that cannot be sent: a pull option that does not fit the consumer
    (priority group options), or an API request value beyond the server's 64-bit
    integers (such as a duration of more than about 292 years)."""


class MsgIteratorClosedError(JetStreamError, SubscriptionClosedError):
    """``next()`` on a ``messages()`` context that was stopped, drained or ended."""


class DataLossError(JetStreamError):
    """Messages a reader still had to read were removed from the stream (retention,
    purge or deletion): the Spark reader raises it when ``failOnDataLoss`` is true."""


class CommitLogError(JetStreamError):
    """The Spark streaming writer's commit log (option ``commitBucket``: the last
    committed micro-batch per query, in a KV bucket) could not be read or written:
    permissions, no JetStream, a timeout or an unreadable entry. The task or the batch's
    commit fails with it instead of guessing: nothing is skipped on a log it cannot read.
    ``bucket``, ``key``: where the log was looked for."""

    def __init__(self, message: str, bucket: str = "", key: str = "") -> None:
        super().__init__(message)
        self.bucket = bucket
        self.key = key


class SchemaValidationError(JetStreamError, ValueError):
    """A JetStream API request that does not validate against its JSON Schema
    (``nc.jetstream(validate=True)``); nothing was sent. ``errors``: one string per
    problem, naming the JSON path and the rule."""

    def __init__(self, message: str, errors: list[str]) -> None:
        super().__init__(message)
        self.errors = list(errors)


class InvalidJSONError(JetStreamError, ValueError):
    """A JetStream document from the wire (an API response, a publish ack, a stored
    meta) that does not fit what it should be: not JSON, not an object, or a field of
    the wrong type. ``model``: what it was read as (e.g. ``"StreamInfo"``); ``path``: the
    dotted path of the field at fault (``""`` for the whole document)."""

    def __init__(self, message: str, model: str = "", path: str = "") -> None:
        super().__init__(message)
        self.model = model
        self.path = path


class OrderedConsumerResetError(JetStreamError):
    """The ordered consumer could not be recreated."""


class TooManyStalledMsgsError(JetStreamError):
    """``publish_async`` found no room in its window in time."""


def _show(v: object) -> str:
    """A config value in an error message (an enum as its wire string)."""
    return repr(getattr(v, "value", v))


class ConfigDriftError(JetStreamError):
    """``ensure_stream``/``ensure_consumer``: the stored config differs from the wanted one
    in fields the server cannot update. ``fields``: those field names (in the config's
    order); ``changes``: every differing field (updatable ones too) -> ``(stored, wanted)``
    as wire values; ``kind``: ``"stream"`` or ``"consumer"``; ``name``: what was checked."""

    def __init__(self, kind: str, name: str, fields: list[str],
                 changes: dict[str, tuple[object, object]] | None = None) -> None:
        self.kind = kind
        self.name = name
        self.fields = list(fields)
        self.changes = dict(changes or {})
        detail = ", ".join(f"{f} ({_show(self.changes[f][0])} -> {_show(self.changes[f][1])})"
                           if f in self.changes else f for f in self.fields)
        super().__init__(f"{kind} {name!r}: the stored config differs in fields that cannot be updated: {detail}")


# --- key-value ----------------------------------------------------------------------
class KeyNotFoundError(JetStreamError, KeyError):
    """The key does not exist."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep a plain message
        return Exception.__str__(self)


class KeyDeletedError(KeyNotFoundError):
    """The key was deleted or purged."""


class KeyExistsError(WrongLastSequenceError):
    """``create`` found the key already present."""


class InvalidKeyError(JetStreamError, ValueError):
    """A key is empty or has forbidden characters."""


class BucketNotFoundError(JetStreamError):
    """The bucket does not exist."""


class InvalidBucketNameError(JetStreamError, ValueError):
    """A bucket name has forbidden characters."""


class HistoryTooLargeError(JetStreamError, ValueError):
    """KV history must be 1..64."""


# --- object store -------------------------------------------------------------------
class ObjectNotFoundError(JetStreamError):
    """The object does not exist."""


class DigestMismatchError(JetStreamError):
    """The object's data does not match its SHA-256 digest."""


class BadObjectMetaError(JetStreamError, ValueError):
    """Object metadata is invalid."""


class ObjectAlreadyExistsError(JetStreamError):
    """An object with that name exists."""


class LinkNotAllowedError(JetStreamError):
    """A link may not point at a link or a deleted object."""


# --- services (ADR-32) -------------------------------------------------------------
class ServiceError(NatsError):
    """A service answered with an error (headers ``Nats-Service-Error-Code`` and
    ``Nats-Service-Error``): ``code`` and ``description`` (both str), the answer's ``data``
    and ``headers``. A handler may raise it to answer with that code and description."""

    def __init__(self, code: object = "500", description: str = "", data: bytes = b"",
                 headers: HeadersInit | None = None) -> None:
        self.code = str(code)
        self.description = description
        self.data = data
        self.headers = headers
        super().__init__(f"{self.code}: {description}" if description else self.code)

    def __reduce__(self) -> tuple[type[ServiceError], tuple[str, str, bytes]]:
        return (type(self), (self.code, self.description, self.data))


class InvalidServiceConfigError(NatsError, ValueError):
    """A service, group or endpoint setting is invalid (raised before anything is subscribed)."""


class InvalidServiceNameError(InvalidServiceConfigError):
    """A service name is empty or holds characters other than A-Z, a-z, 0-9, '-' and '_'."""


class InvalidServiceVersionError(InvalidServiceConfigError):
    """A service version is not a semantic version (`x.y.z[-pre][+build]`)."""


# err_code -> class; the server's numbers (ADR-7)
ERR_CODES: dict[int, type[APIError]] = {
    10059: StreamNotFoundError,
    10058: StreamNameInUseError,
    10130: StreamNameInUseError,  # the restore API: "stream name already in use, cannot restore"
    10014: ConsumerNotFoundError,
    10013: ConsumerExistsError,
    10148: ConsumerExistsError,
    10105: ConsumerExistsError,
    10149: ConsumerDoesNotExistError,
    10037: MsgNotFoundError,
    10003: BadRequestError,
    10025: BadRequestError,  # invalid JSON
    10076: JetStreamNotEnabledError,
    10039: JetStreamNotEnabledError,
    10071: WrongLastSequenceError,
    10070: WrongLastMsgIdError,
    10060: StreamWrongExpectedError,
    10165: MsgTTLInvalidError,
    10166: MsgTTLDisabledError,
    10168: MsgCounterDisabledError,
    10188: MsgSchedulesDisabledError,
    10189: MsgScheduleInvalidError,
    10190: MsgScheduleInvalidError,
    10191: MsgScheduleInvalidError,
    10174: AtomicBatchError,  # atomic publish is disabled
    10175: AtomicBatchError,  # batch sequence missing
    10176: AtomicBatchError,  # incomplete, abandoned
    10177: AtomicBatchError,  # unsupported header (Nats-Expected-Last-Msg-Id)
    10179: AtomicBatchError,  # batch id invalid
    10199: AtomicBatchError,  # too many messages
    10201: AtomicBatchError,  # duplicate message id
}


def payload_type_error(value: object, name: str = "data", *also: str) -> builtins.TypeError:
    """The ``TypeError`` for a payload that is not bytes-like (one text everywhere):
    ``name`` is the argument as the public signature names it, ``also`` what else that
    argument takes (e.g. ``"str"``)."""
    kinds = ("bytes", "bytearray", "memoryview", *also)
    return builtins.TypeError(f"{name} must be {', '.join(kinds[:-1])} or {kinds[-1]}, not {type(value).__name__}")


def payload_size(data: object, hdr: bytes | None = None) -> int:
    """The bytes ``data`` (and the encoded headers ``hdr``) put on the wire: a buffer's
    ``nbytes``, not its length in items (an ``array('d')`` of n items is 8n bytes);
    ``TypeError`` for what is no bytes-like object (a str, a list, ...)."""
    if data.__class__ is bytes:
        n = len(data)
    else:
        try:
            n = memoryview(data).nbytes  # type: ignore[arg-type]
        except TypeError:
            raise payload_type_error(data) from None
    return n if hdr is None else n + len(hdr)


def api_error(error: object, request: str | None = None) -> APIError:
    """Build the typed error for a JetStream API ``error`` object (``request``: the API
    subject it answered, relative to the prefix, named in the message). Anything else
    in place of that object gives a plain ``APIError`` describing it."""
    if not isinstance(error, dict):
        error = {"description": str(error)}
    code, err_code, desc = error.get("code"), error.get("err_code"), error.get("description", "")
    code = code if type(code) is int else None
    err_code = err_code if type(err_code) is int else None
    desc = desc if isinstance(desc, str) else str(desc)
    cls = ERR_CODES.get(err_code, APIError) if err_code is not None else APIError
    if cls is APIError and code == 503:
        cls = JetStreamNotEnabledError if "not enabled" in desc else APIError
    return cls(code=code, err_code=err_code, description=desc, request=request)


# every exception class above, then the helpers (tools/gen_exports.py writes the list)
# BEGIN generated by tools/gen_exports.py. Do not edit.
__all__ = [
    'NatsError',
    'ConnectionClosedError',
    'ConnectionLostError',
    'NoServersError',
    'TimeoutError',
    'NoRespondersError',
    'ProtocolError',
    'AuthorizationError',
    'PermissionsError',
    'PermissionViolationError',
    'MaxSubscriptionsError',
    'MaxPayloadError',
    'SlowConsumerError',
    'BadSubjectError',
    'DrainTimeoutError',
    'StaleConnectionError',
    'BadHeaderError',
    'SubscriptionClosedError',
    'ReconnectBufferFullError',
    'JetStreamError',
    'APIError',
    'StreamNotFoundError',
    'StreamNameInUseError',
    'ConsumerNotFoundError',
    'ConsumerExistsError',
    'ConsumerDoesNotExistError',
    'MsgNotFoundError',
    'BadRequestError',
    'JetStreamNotEnabledError',
    'WrongLastSequenceError',
    'WrongLastMsgIdError',
    'StreamWrongExpectedError',
    'MsgTTLInvalidError',
    'MsgTTLDisabledError',
    'MsgCounterDisabledError',
    'MsgSchedulesDisabledError',
    'MsgScheduleInvalidError',
    'AtomicBatchError',
    'NoStreamResponseError',
    'NotJSMessageError',
    'MsgAlreadyAckedError',
    'InvalidStreamNameError',
    'InvalidConsumerNameError',
    'NoHeartbeatError',
    'ConsumerDeletedError',
    'ConsumerGoneError',
    'PullStatusError',
    'ConsumerIsPushBasedError',
    'PinIdMismatchError',
    'InvalidOptionError',
    'MsgIteratorClosedError',
    'DataLossError',
    'CommitLogError',
    'SchemaValidationError',
    'InvalidJSONError',
    'OrderedConsumerResetError',
    'TooManyStalledMsgsError',
    'ConfigDriftError',
    'KeyNotFoundError',
    'KeyDeletedError',
    'KeyExistsError',
    'InvalidKeyError',
    'BucketNotFoundError',
    'InvalidBucketNameError',
    'HistoryTooLargeError',
    'ObjectNotFoundError',
    'DigestMismatchError',
    'BadObjectMetaError',
    'ObjectAlreadyExistsError',
    'LinkNotAllowedError',
    'ServiceError',
    'InvalidServiceConfigError',
    'InvalidServiceNameError',
    'InvalidServiceVersionError',
    'api_error',
    'ERR_CODES',
]
# END generated
