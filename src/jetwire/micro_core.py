"""The NATS service API (ADR-32, nats.go ``micro``), written once and free of I/O.

Both flavours (:mod:`jetwire.aio.micro`, and :mod:`jetwire.micro` generated from it) use
this module for everything that does not move bytes: name, version and subject checks,
endpoint subjects and queue groups (service -> group -> endpoint inheritance), the
per-endpoint counters, the ``io.nats.micro.v1.*`` documents the service answers with,
the typed results of the discovery client, and the service-error headers.
"""
from __future__ import annotations

import inspect
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar

import orjson

from . import _impl
from ._typing import JSONObject
from ._units import format_rfc3339, ns_to_seconds, parse_rfc3339, seconds_to_ns
from .errors import (
    BadSubjectError,
    InvalidServiceConfigError,
    InvalidServiceNameError,
    InvalidServiceVersionError,
    ServiceError,
)
from .jetstream._json import Model, duration
from .protocol.headers import Headers

if TYPE_CHECKING:
    from .msg import Msg
    from .protocol.headers import HeadersInit

__all__ = ["EndpointInfo", "EndpointStats", "ServiceInfo", "ServicePing", "ServiceStats"]

DEFAULT_QUEUE_GROUP = "q"
API_PREFIX = "$SRV"
ERROR_HEADER = "Nats-Service-Error"
ERROR_CODE_HEADER = "Nats-Service-Error-Code"
PING_RESPONSE_TYPE = "io.nats.micro.v1.ping_response"
INFO_RESPONSE_TYPE = "io.nats.micro.v1.info_response"
STATS_RESPONSE_TYPE = "io.nats.micro.v1.stats_response"
VERBS = ("PING", "INFO", "STATS")

# the longest error description (and code) a service sends or keeps as ``last_error``, in
# characters: an exception quoting a megabyte request must not make the 500 answer (or
# the $SRV.STATS document holding it) exceed max_payload
MAX_ERROR_TEXT = 1024

# the regular expressions of ADR-32 / nats.go micro (semver: the one semver.org suggests),
# used with fullmatch (a "$" would let a trailing newline through); ASCII: Go's (RE2) and
# the JSON schema's (ECMA-262) \d is [0-9], Python's would take any Unicode digit
_NAME_RE = re.compile(r"^[A-Za-z0-9_-]+$")
_SEMVER_RE = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$", re.ASCII)
_BAD_SUBJECT_CHARS = re.compile(r"[\s\x00-\x1f\x7f]")


# ------------------------------------------------------------------------ validation


def check_name(name: object) -> str:
    """A service name: ``[A-Za-z0-9_-]+``, else ``InvalidServiceNameError``."""
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise InvalidServiceNameError(f"invalid service name {name!r}: use A-Z, a-z, 0-9, '-' and '_'")
    return name


def check_version(version: object) -> str:
    """A semantic version (2.0.0), else ``InvalidServiceVersionError``."""
    if not isinstance(version, str) or not _SEMVER_RE.fullmatch(version):
        raise InvalidServiceVersionError(f"invalid service version {version!r}: not a semantic version (x.y.z)")
    return version


def check_endpoint_name(name: object) -> str:
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise InvalidServiceConfigError(f"invalid endpoint name {name!r}: use A-Z, a-z, 0-9, '-' and '_'")
    return name


def check_subject(subject: str, what: str = "endpoint subject") -> str:
    """A subject an endpoint can listen on: tokens joined by '.', wildcards allowed as
    whole tokens, '>' only as the last token, no whitespace or control characters (the
    subscription rules, ``validate_filter``)."""
    try:
        _impl.validate_filter(subject)
    except BadSubjectError as exc:
        raise InvalidServiceConfigError(f"invalid {what}: {exc}") from None
    return subject


def check_group_name(name: str) -> str:
    """A group prefix: a subject without '>' (ADR-32), or '' (no prefix)."""
    if name == "":
        return name
    check_subject(name, "group name")
    if ">" in name:
        raise InvalidServiceConfigError(f"invalid group name {name!r}: a group cannot hold '>'")
    return name


def check_queue_group(qg: str | None) -> str | None:
    """None (inherit), '' (no queue group), or a queue group name (one token-ish: no
    whitespace, no '>' or '*')."""
    if qg is None or qg == "":
        return qg
    if not isinstance(qg, str) or _BAD_SUBJECT_CHARS.search(qg) or ">" in qg or "*" in qg:
        raise InvalidServiceConfigError(f"invalid queue group {qg!r}")
    return qg


def check_metadata(metadata: object, what: str = "metadata") -> dict[str, str]:
    """A copy of ``metadata`` (str -> str; None gives {}): it is immutable once set."""
    if metadata is None:
        return {}
    if not isinstance(metadata, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                  for k, v in metadata.items()):
        raise InvalidServiceConfigError(f"{what} must be a dict of str to str")
    return dict(metadata)


def resolve_queue_group(own: str | None, parent: str | None) -> str:
    """ADR-32 queue-group inheritance (service -> group -> endpoint): ``own`` None inherits
    ``parent``; '' means no queue group (a plain subscription, every instance gets every
    request); a parent of None falls back to the default ``"q"``."""
    if own is not None:
        return own
    if parent is not None:
        return parent
    return DEFAULT_QUEUE_GROUP


def join_subject(prefix: str, subject: str) -> str:
    """``prefix.subject``; an empty part is left out (a group named ``""`` adds no
    token, as in nats.go's micro)."""
    if not prefix:
        return subject
    if not subject:
        return prefix
    return f"{prefix}.{subject}"


def control_subject(verb: str, name: str | None = None, id: str | None = None,
                    prefix: str = API_PREFIX) -> str:
    """``$SRV.<verb>``, ``$SRV.<verb>.<name>`` or ``$SRV.<verb>.<name>.<id>``."""
    verb = verb.upper()
    if verb not in VERBS:
        raise InvalidServiceConfigError(f"unknown verb {verb!r}; one of {', '.join(VERBS)}")
    if id is not None and name is None:
        raise InvalidServiceConfigError("a service id needs the service name")
    if name is None:
        return f"{prefix}.{verb}"
    if id is None:
        return f"{prefix}.{verb}.{name}"
    return f"{prefix}.{verb}.{name}.{id}"


def control_subjects(verb: str, name: str, id: str) -> list[str]:
    """The three subjects a service answers ``verb`` on: all services, its name, its id."""
    return [control_subject(verb), control_subject(verb, name), control_subject(verb, name, id)]


# ------------------------------------------------------------------------ time


def format_time(t: datetime) -> str:
    """RFC 3339 in UTC with microseconds, e.g. ``2026-11-25T12:30:49.123456Z`` (what nats.go
    and nats-py both read)."""
    return format_rfc3339(t.astimezone(UTC), digits=6)


def parse_time(text: object) -> datetime | None:
    """An RFC 3339 time as an aware datetime (``_units.parse_rfc3339``); None when
    absent or unreadable (a discovery answer is read, never refused, for its time)."""
    if not isinstance(text, str):
        return None
    try:
        return parse_rfc3339(text)
    except ValueError:
        return None


def now_utc() -> datetime:
    return datetime.now(UTC)


# ------------------------------------------------------------------------ typed documents


# The five documents are ``Model`` dataclasses too: :mod:`jetwire.schemas` builds the
# ``io.nats.micro.v1.*`` JSON Schemas from these very classes (wire names, durations in
# nanoseconds, ``started`` RFC 3339); ``to_dict``/``from_dict`` are what the service
# answers with and what the discovery client reads.
@dataclass
class EndpointInfo(Model):
    """One endpoint of a ``ServiceInfo`` (``queue_group`` '' when it has none)."""

    name: str
    subject: str
    queue_group: str = DEFAULT_QUEUE_GROUP
    metadata: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: JSONObject) -> EndpointInfo:
        return cls(name=d.get("name", ""), subject=d.get("subject", ""), queue_group=d.get("queue_group") or "",
                   metadata=d.get("metadata") or {})

    def to_dict(self) -> JSONObject:
        return {"name": self.name, "subject": self.subject, "queue_group": self.queue_group,
                "metadata": self.metadata}


@dataclass
class EndpointStats(Model):
    """One endpoint of a ``ServiceStats``; ``processing_time`` and
    ``average_processing_time`` in float seconds (nanoseconds in the JSON)."""

    name: str
    subject: str
    queue_group: str = DEFAULT_QUEUE_GROUP
    num_requests: int = 0
    num_errors: int = 0
    last_error: str = ""
    processing_time: float = duration(0.0)
    average_processing_time: float = duration(0.0)
    data: object = None

    @classmethod
    def from_dict(cls, d: JSONObject) -> EndpointStats:
        return cls(name=d.get("name", ""), subject=d.get("subject", ""), queue_group=d.get("queue_group") or "",
                   num_requests=int(d.get("num_requests") or 0), num_errors=int(d.get("num_errors") or 0),
                   last_error=d.get("last_error") or "",
                   processing_time=_seconds(d.get("processing_time")),
                   average_processing_time=_seconds(d.get("average_processing_time")), data=d.get("data"))

    def to_dict(self) -> JSONObject:
        return {"name": self.name, "subject": self.subject, "queue_group": self.queue_group,
                "num_requests": self.num_requests, "num_errors": self.num_errors, "last_error": self.last_error,
                "processing_time": _nanos(self.processing_time),
                "average_processing_time": _nanos(self.average_processing_time), "data": self.data}


@dataclass
class ServicePing(Model):
    """A ``io.nats.micro.v1.ping_response``."""

    TYPE: ClassVar[str] = PING_RESPONSE_TYPE

    name: str
    id: str
    version: str
    metadata: dict[str, str] = field(default_factory=dict)
    type: str = PING_RESPONSE_TYPE

    @classmethod
    def from_dict(cls, d: JSONObject) -> ServicePing:
        return cls(name=d.get("name", ""), id=d.get("id", ""), version=d.get("version", ""),
                   metadata=d.get("metadata") or {}, type=d.get("type", PING_RESPONSE_TYPE))

    def to_dict(self) -> JSONObject:
        return {"type": self.type, "name": self.name, "id": self.id, "version": self.version,
                "metadata": self.metadata}


@dataclass
class ServiceInfo(Model):
    """A ``io.nats.micro.v1.info_response``: the service and every endpoint."""

    TYPE: ClassVar[str] = INFO_RESPONSE_TYPE

    name: str
    id: str
    version: str
    description: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    endpoints: list[EndpointInfo] = field(default_factory=list)
    type: str = INFO_RESPONSE_TYPE

    @classmethod
    def from_dict(cls, d: JSONObject) -> ServiceInfo:
        return cls(name=d.get("name", ""), id=d.get("id", ""), version=d.get("version", ""),
                   description=d.get("description") or "", metadata=d.get("metadata") or {},
                   endpoints=[EndpointInfo.from_dict(e) for e in d.get("endpoints") or ()],
                   type=d.get("type", INFO_RESPONSE_TYPE))

    def to_dict(self) -> JSONObject:
        return {"type": self.type, "name": self.name, "id": self.id, "version": self.version,
                "metadata": self.metadata, "description": self.description,
                "endpoints": [e.to_dict() for e in self.endpoints]}


@dataclass
class ServiceStats(Model):
    """A ``io.nats.micro.v1.stats_response``: ``started`` is an aware datetime (UTC)."""

    TYPE: ClassVar[str] = STATS_RESPONSE_TYPE

    name: str
    id: str
    version: str
    started: datetime | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    endpoints: list[EndpointStats] = field(default_factory=list)
    type: str = STATS_RESPONSE_TYPE

    @classmethod
    def from_dict(cls, d: JSONObject) -> ServiceStats:
        return cls(name=d.get("name", ""), id=d.get("id", ""), version=d.get("version", ""),
                   started=parse_time(d.get("started")), metadata=d.get("metadata") or {},
                   endpoints=[EndpointStats.from_dict(e) for e in d.get("endpoints") or ()],
                   type=d.get("type", STATS_RESPONSE_TYPE))

    def to_dict(self) -> JSONObject:
        return {"type": self.type, "name": self.name, "id": self.id, "version": self.version,
                "metadata": self.metadata, "started": format_time(self.started or now_utc()),
                "endpoints": [e.to_dict() for e in self.endpoints]}


_nanos = seconds_to_ns


def _seconds(nanos: Any) -> float:
    """A document's nanoseconds as seconds; 0.0 when absent or unreadable."""
    try:
        return ns_to_seconds(int(nanos or 0))
    except (TypeError, ValueError):
        return 0.0


DOC_TYPES: dict[str, type[ServicePing] | type[ServiceInfo] | type[ServiceStats]] = {"PING": ServicePing, "INFO": ServiceInfo, "STATS": ServiceStats}


def parse_doc(verb: str, data: bytes) -> ServicePing | ServiceInfo | ServiceStats:
    """The typed document of a ``$SRV.<verb>`` answer (``ValueError`` when it is not JSON)."""
    d = orjson.loads(data)
    if not isinstance(d, dict):
        raise ValueError("a service answered with something that is not a JSON object")
    return DOC_TYPES[verb].from_dict(d)


# ------------------------------------------------------------------------ endpoint state


class EndpointCore:
    """One endpoint: where it listens and its counters (``processing_ns``: total time in
    the handler). Counters are changed by the one thread or task finishing a request
    (the blocking flavour holds ``lock`` while it does)."""

    __slots__ = (
        "last_error",
        "metadata",
        "name",
        "num_errors",
        "num_requests",
        "processing_ns",
        "queue_group",
        "subject",
    )

    def __init__(self, name: str, subject: str, queue_group: str, metadata: dict[str, str]) -> None:
        self.name = name
        self.subject = subject
        self.queue_group = queue_group
        self.metadata = metadata
        self.reset()

    def reset(self) -> None:
        self.num_requests = 0
        self.num_errors = 0
        self.last_error = ""
        self.processing_ns = 0

    def info(self) -> EndpointInfo:
        return EndpointInfo(self.name, self.subject, self.queue_group, dict(self.metadata))

    def stats(self, data: object = None) -> EndpointStats:
        n = self.num_requests
        total = self.processing_ns
        return EndpointStats(self.name, self.subject, self.queue_group, n, self.num_errors, self.last_error,
                             total / 1e9, (total // n if n else 0) / 1e9, data)


class ServiceCore:
    """A service's identity, endpoints and documents (no I/O)."""

    def __init__(self, name: str, version: str, id: str, description: str | None,
                 metadata: dict[str, str] | None, queue_group: str | None,
                 stats_handler: Callable[[Any], object] | None) -> None:
        self.name = check_name(name)
        self.version = check_version(version)
        if description is not None and not isinstance(description, str):
            raise InvalidServiceConfigError("description must be a str")
        self.description = description or ""
        self.metadata = check_metadata(metadata)
        self.queue_group = check_queue_group(queue_group)
        if stats_handler is not None and not callable(stats_handler):
            raise InvalidServiceConfigError("stats_handler must be callable")
        if inspect.iscoroutinefunction(stats_handler):  # svc.stats() is not awaited: it cannot await one
            raise InvalidServiceConfigError("stats_handler must be a plain function, not a coroutine function")
        self.stats_handler = stats_handler
        self.id = id
        self.started = now_utc()
        self.endpoints: list[tuple[EndpointCore, Any]] = []  # (core, the flavour's Endpoint)

    def new_endpoint(self, prefix: str, name: str, subject: str | None, queue_group: str | None,
                     parent_queue_group: str | None, metadata: dict[str, str] | None) -> EndpointCore:
        """Check an endpoint's settings; its core with the subject and queue group it uses."""
        check_endpoint_name(name)
        if subject is not None:
            check_subject(subject)
        full = join_subject(prefix, subject if subject is not None else name)
        check_subject(full)
        qg = resolve_queue_group(check_queue_group(queue_group), parent_queue_group)
        return EndpointCore(name, full, qg, check_metadata(metadata, "endpoint metadata"))

    def reset(self) -> None:
        for ep, _ in self.endpoints:
            ep.reset()
        self.started = now_utc()

    def ping(self) -> ServicePing:
        return ServicePing(self.name, self.id, self.version, dict(self.metadata))

    def info(self) -> ServiceInfo:
        return ServiceInfo(self.name, self.id, self.version, self.description, dict(self.metadata),
                           [ep.info() for ep, _ in self.endpoints])

    def counters(self) -> ServiceStats:
        """The stats document without ``data``: every endpoint's counters (read while the
        blocking flavour holds the endpoints' locks)."""
        return ServiceStats(self.name, self.id, self.version, self.started, dict(self.metadata),
                            [ep.stats() for ep, _ in self.endpoints])

    def add_data(self, doc: ServiceStats, on_error: Callable[[BaseException], object]) -> ServiceStats:
        """Fill each endpoint's ``data`` from ``stats_handler(endpoint)`` (called without the
        endpoints' locks). A handler that raises, or returns something that is not JSON
        (or an awaitable), gives that endpoint None, as nats.go ignores the marshal
        error; ``on_error`` hears why."""
        handler = self.stats_handler
        if handler is None:
            return doc
        for st, (_, handle) in zip(doc.endpoints, self.endpoints, strict=False):
            st.data = _stats_data(handler, handle, on_error)
        return doc

    def stats(self, on_error: Callable[[BaseException], object] | None = None) -> ServiceStats:
        """Counters and ``data`` at once (no flavour's locks: tests and tools)."""
        return self.add_data(self.counters(), on_error or _ignore)

    def answer(self, verb: str, stats: ServiceStats | None = None) -> bytes:
        """The JSON a ``$SRV.<verb>`` request is answered with (STATS: ``stats``, made by
        the flavour with its locks)."""
        if verb == "PING":
            doc: ServicePing | ServiceInfo | ServiceStats = self.ping()
        elif verb == "INFO":
            doc = self.info()
        else:
            doc = stats if stats is not None else self.stats()
        return encode(doc)


def encode(doc: ServicePing | ServiceInfo | ServiceStats) -> bytes:
    """A document's JSON."""
    return orjson.dumps(doc.to_dict(), default=_json_default)


def _ignore(exc: BaseException) -> None:
    return None


def _stats_data(handler: Callable[[Any], object], handle: object,
                on_error: Callable[[BaseException], object]) -> object:
    """``handler(handle)`` when it is JSON, else None (``on_error`` hears why)."""
    try:
        data = handler(handle)
        if inspect.isawaitable(data):
            close = getattr(data, "close", None)
            if close is not None:
                close()  # a coroutine never awaited would warn
            raise InvalidServiceConfigError("stats_handler returned an awaitable; it must return the data")
        orjson.dumps(data, default=_json_default)
    except Exception as exc:
        on_error(exc)
        return None
    return data


def _json_default(obj: object) -> object:
    if isinstance(obj, datetime):
        return format_time(obj)
    if isinstance(obj, (bytes, bytearray)):
        return bytes(obj).decode("utf-8", "replace")
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    raise TypeError(f"stats data of type {type(obj).__name__} is not JSON serialisable")


# ------------------------------------------------------------------------ errors on the wire


def clip(text: str, limit: int = MAX_ERROR_TEXT) -> str:
    """``text`` of at most ``limit`` characters: a longer one is cut (on a character,
    never inside one) and ends with ``...``."""
    if len(text) <= limit:
        return text
    return text[:limit - 3] + "..."


def clean_text(text: object) -> str:
    """A header value's text: CR and LF become spaces, trimmed, at most
    ``MAX_ERROR_TEXT`` characters."""
    return clip(str(text).replace("\r", " ").replace("\n", " ").strip())


def service_error(code: object, description: object) -> tuple[str, str]:
    """The (code, description) a service error is sent with: cleaned and bounded
    (``clean_text``); ``InvalidServiceConfigError`` when either is empty then."""
    c = clean_text(code)
    d = clean_text(description)
    if not c:
        raise InvalidServiceConfigError("a service error needs a code")
    if not d:
        raise InvalidServiceConfigError("a service error needs a description")
    return c, d


def error_headers(code: object, description: object, headers: HeadersInit | None = None) -> Headers:
    """The headers of a service error answer: ``headers`` (every value of a repeated
    one) plus ``Nats-Service-Error`` and ``Nats-Service-Error-Code`` (``service_error``:
    cleaned, bounded, never empty), which replace any of the caller's."""
    code, description = service_error(code, description)
    # a Headers' items (not its status line), a mapping's lists or a list of pairs: every value
    out = Headers(headers.items() if isinstance(headers, Headers) else headers or None)
    out[ERROR_HEADER] = description
    out[ERROR_CODE_HEADER] = code
    return out


def error_of(msg: Msg) -> ServiceError | None:
    """The ``ServiceError`` a reply carries in its headers, or None."""
    h = msg.headers
    if h is None:
        return None
    code = h.get(ERROR_CODE_HEADER)
    desc = h.get(ERROR_HEADER)
    if code is None and desc is None:
        return None
    return ServiceError(code or "", desc or "", data=msg.data, headers=h)


def exception_answer(exc: BaseException) -> tuple[str, str]:
    """(code, description) a handler's exception is answered with: a ``ServiceError``'s
    own, else 500 and the exception's text; cleaned and bounded (``clean_text``), never
    empty."""
    if isinstance(exc, ServiceError):
        return clean_text(exc.code or "") or "500", clean_text(exc.description or "") or "service error"
    text = clean_text(exc)
    return "500", clip(f"{type(exc).__name__}: {text}" if text else type(exc).__name__)


def error_text(code: str, description: str) -> str:
    """An endpoint's ``last_error``: ``code:description``, at most ``MAX_ERROR_TEXT``
    characters."""
    return clip(f"{code}:{description}")


monotonic_ns = time.perf_counter_ns
