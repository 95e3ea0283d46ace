"""Typed NATS advisories and metrics: ``parse(bytes) -> Event`` and ``render(event, format)``.

``parse`` returns the dataclass of the document's ``type`` (see
:mod:`jetwire.jetstream.event_models`: field names as on the wire, times aware
datetimes, durations float seconds) or :class:`UnknownEvent` (with the raw dict) for
any other type; valid JSON never raises. ``render`` formats an event as:

* ``"text"``: one line, ``HH:MM:SS [KIND] summary`` (times in UTC), as ``nats events`` does;
* ``"text-extended"``: a heading line then every field, one per line;
* ``"cloudevents"``: a CloudEvents v1.0 JSON document (``specversion``, ``id``,
  ``source`` ``urn:nats:<area>``, ``type``, ``subject``, ``time``, ``datacontenttype``,
  ``dataschema``, ``data``);
* ``"json"``: the event's JSON, which ``parse`` reads back to an equal event.

Subscribing is ``js.events(kinds=None)`` and ``js.consumer_ack_metrics(stream, consumer)``.
"""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import Enum
from typing import Any, TypeAlias

import orjson

from jetwire._typing import JSONObject
from jetwire._units import format_rfc3339, parse_rfc3339
from jetwire.jetstream._json import Model, unknown_fields
from jetwire.jetstream.event_models import *  # noqa: F403
from jetwire.jetstream.event_models import EVENT_TYPES, Event, _hms
from jetwire.jetstream.event_models import __all__ as _models_all

__all__ = ["parse", "render", "UnknownEvent", "FORMATS", "ADVISORY_SUBJECT", "METRIC_SUBJECT", "kinds_filter",
           *_models_all]

ADVISORY_SUBJECT = "$JS.EVENT.ADVISORY.>"
METRIC_SUBJECT = "$JS.EVENT.METRIC.>"
FORMATS = ("text", "text-extended", "cloudevents", "json")
UNKNOWN = "io.nats.unknown_message"

#: a decoded JSON document: an object (the usual case), or any other JSON value
JSONValue: TypeAlias = JSONObject | list[Any] | str | int | float | bool | None


@dataclass
class UnknownEvent:
    """A document of a type jetwire has no class for: ``type`` (``"io.nats.unknown_message"``
    when it has none), ``id``, ``timestamp`` (``None`` when absent or not a time) and
    ``data``, the raw decoded JSON."""

    type: str = UNKNOWN
    id: str = ""
    timestamp: datetime | None = None
    data: JSONValue = field(default_factory=dict)

    def kind(self) -> str:
        return self.type.rsplit(".", 1)[-1] if self.type != UNKNOWN else "Unknown"

    def summary(self) -> str:
        return _dumps(self.data)

    def to_json_dict(self) -> Any:
        return self.data


AnyEvent = Event | UnknownEvent


def _unknown(d: JSONValue, typ: str | None = None) -> UnknownEvent:
    if not isinstance(d, dict):
        return UnknownEvent(data=d)
    t = d.get("type")
    ts: datetime | None = None
    raw_ts = d.get("timestamp")
    if isinstance(raw_ts, str):
        try:
            ts = parse_rfc3339(raw_ts)
        except ValueError:
            ts = None
    ident = d.get("id")
    return UnknownEvent(type=typ or (t if isinstance(t, str) and t else UNKNOWN),
                        id=ident if isinstance(ident, str) else "", timestamp=ts, data=d)


def parse(data: bytes | bytearray | memoryview | str | JSONObject) -> AnyEvent:
    """The typed event of an advisory or metric (JSON bytes/str, or a decoded dict);
    :class:`UnknownEvent` for an unknown type or a document its class cannot read.
    Only bytes that are not JSON raise (``ValueError``)."""
    if isinstance(data, (bytes, bytearray, memoryview, str)):
        d = orjson.loads(bytes(data) if isinstance(data, memoryview) else data)
    else:
        d = data
    if not isinstance(d, dict):
        return _unknown(d)
    cls = EVENT_TYPES.get(d.get("type"))  # type: ignore[arg-type]
    if cls is None:
        return _unknown(d)
    try:
        event: Event = cls.from_json(d)
        return event
    except Exception:  # a field of a shape the class cannot read (a nested object that is not one)
        return _unknown(d, d.get("type"))


def kinds_filter(kinds: Iterable[str] | None) -> frozenset[str] | None:
    """The set of accepted types for ``js.events(kinds=...)``: full type strings or their
    last token (``"api_audit"``); ``None`` accepts everything."""
    if kinds is None:
        return None
    if isinstance(kinds, str):
        kinds = [kinds]
    return frozenset(kinds)


def accepts(kinds: frozenset[str] | None, typ: str) -> bool:
    return kinds is None or typ in kinds or typ.rsplit(".", 1)[-1] in kinds


# ---------------------------------------------------------------------------------
# rendering


def _wire(event: AnyEvent) -> object:
    return event.to_json_dict()


def _dumps(doc: object, indent: bool = False) -> str:
    """``doc`` as JSON text. orjson refuses integers beyond 64 bits, which a document can
    hold once its durations are nanoseconds again (any JSON number is accepted on the
    way in); the standard library writes those exactly."""
    try:
        return orjson.dumps(doc, option=orjson.OPT_INDENT_2 if indent else 0).decode()
    except TypeError:
        return json.dumps(doc, indent=2 if indent else None, ensure_ascii=False)


def _text_value(v: object) -> str:
    if isinstance(v, datetime):
        return v.astimezone(UTC).isoformat()
    if isinstance(v, Enum):
        return str(v.value)
    if isinstance(v, float):
        return f"{v:g}"
    if v is None:
        return "-"
    return str(v)


def _extended_lines(obj: object, indent: int, out: list[str]) -> None:
    pad = " " * indent
    if isinstance(obj, Model):
        items = [(f.name, getattr(obj, f.name)) for f in dataclasses.fields(obj) if f.name != "_extra"]
        items += list(unknown_fields(obj).items())
    elif isinstance(obj, dict):
        items = list(obj.items())
    else:
        out.append(pad + _text_value(obj))
        return
    width = max((len(k) for k, _ in items), default=0)
    for k, v in items:
        if isinstance(v, (Model, dict)) and v:
            out.append(f"{pad}{k}:")
            _extended_lines(v, indent + 4, out)
        elif isinstance(v, list) and v and isinstance(v[0], (Model, dict)):
            out.append(f"{pad}{k}:")
            for i, item in enumerate(v):
                out.append(f"{pad}  [{i}]")
                _extended_lines(item, indent + 4, out)
        else:
            out.append(f"{pad}{k.rjust(width)}: {_text_value(v)}")


def _schema_url(typ: str) -> str | None:
    if not typ.startswith("io.nats.") or typ == UNKNOWN:
        return None
    return "https://nats.io/schemas/" + typ[len("io.nats."):].replace(".", "/") + ".json"


def _cloudevent(event: AnyEvent) -> JSONObject:
    parts = event.type.split(".")
    ts = event.timestamp
    doc: JSONObject = {
        "specversion": "1.0",
        "id": event.id or "",
        "source": f"urn:nats:{parts[2]}" if len(parts) > 3 else "urn:nats",
        "type": event.type,
        "time": format_rfc3339(ts) if ts is not None else None,
        "datacontenttype": "application/json",
        "data": _wire(event),
    }
    if len(parts) > 3:
        doc["subject"] = parts[3]
    url = _schema_url(event.type)
    if url and not isinstance(event, UnknownEvent):
        doc["dataschema"] = url
    if doc["time"] is None:
        del doc["time"]
    return doc


def render(event: AnyEvent, format: str = "text") -> str:
    """``event`` as text (see the module doc for the formats); ``ValueError`` for another format."""
    if format == "text":
        try:
            kind, summary = event.kind(), event.summary()
        except Exception:  # a field of an unexpected type from the server: show the raw JSON
            kind, summary = event.type.rsplit(".", 1)[-1], _dumps(_wire(event))
        return f"{_hms(event.timestamp)} [{kind}] {summary}".rstrip()
    if format == "text-extended":
        try:
            kind = event.kind()
        except Exception:
            kind = event.type.rsplit(".", 1)[-1]
        lines = [f"[{_hms(event.timestamp)}] [{event.id}] {kind}", ""]
        if isinstance(event, UnknownEvent):
            lines.append(f"    type: {event.type}")
            _extended_lines(event.data if isinstance(event.data, dict) else {"data": event.data}, 4, lines)
        else:
            _extended_lines(event, 4, lines)
        return "\n".join(lines)
    if format == "json":
        return _dumps(_wire(event), indent=True)
    if format == "cloudevents":
        return _dumps(_cloudevent(event), indent=True)
    raise ValueError(f"unknown event format {format!r}: use one of {', '.join(FORMATS)}")
