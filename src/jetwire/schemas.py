"""JSON Schemas of the NATS documents jetwire knows, built from its own typed models.

``names()`` lists every ``io.nats.*`` type, ``schema(type)`` gives its JSON Schema
(draft-07), ``type_of(data)`` reads a document's ``type`` and ``validate(data, type)``
returns the problems (empty when valid). ``nc.jetstream(validate=True)`` calls
:func:`check_request` on every API request before it is sent.

Each schema is derived from a model class (:mod:`jetwire.jetstream.models`,
``api_models``, ``event_models``, :mod:`jetwire.micro_core`): one property per
dataclass field under its wire name, typed from the type hint and the field's converter
(durations are integer nanoseconds, times RFC 3339 strings, enums their wire values,
nested models nested objects), so a model change is a schema change. What a type hint
cannot say (limits, name patterns, required fields) is in ``RULES`` and ``REQUIRED``
below, keyed by model class and field. Three shapes:

* requests and configs: unknown fields, ``null`` and wrong enum values are errors;
  required fields carry the model's defaults (``complete()`` fills them in);
* events (advisories, metrics): unknown fields are errors, ``null`` is allowed for
  optional fields;
* responses and micro documents: unknown fields are allowed (newer servers).

Validation is compiled with fastjsonschema (each schema once, on first use).
"""
from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from dataclasses import MISSING
from datetime import datetime
from enum import Enum
from typing import Any, Union, get_args, get_origin

import orjson

from jetwire._typing import JSONObject
from jetwire.errors import SchemaValidationError
from jetwire.jetstream import api_models as api
from jetwire.jetstream import event_models as ev
from jetwire.jetstream import models as m
from jetwire.jetstream._json import Model, _plan
from jetwire.micro_core import EndpointInfo, EndpointStats, ServiceInfo, ServicePing, ServiceStats

__all__ = ["UNKNOWN", "check_request", "complete", "names", "request_type", "schema", "type_of", "validate"]

UNKNOWN = "io.nats.unknown_message"
API = "io.nats.jetstream.api.v1."
_U64 = 18446744073709551615

# name of a stream or consumer: what jetstream.validate accepts
_NAME = {"type": "string", "pattern": r"^[^.*>/\\\s]+$", "minLength": 1, "maxLength": 255}
_BASIC_NAME = {"type": "string", "pattern": r"^[a-zA-Z0-9_-]+$", "minLength": 1}
_SEMVER = {"type": "string", "pattern": (
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
    r"(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$")}
_LIMIT = {"minimum": -1}
_NONNEG = {"minimum": 0}
_REPLICAS = {"minimum": 0, "maximum": 5}
_SUBJECT = {"minLength": 1}

# Constraints a type hint cannot express: model class -> field -> extra schema keywords.
RULES: dict[type, dict[str, JSONObject]] = {
    m.StreamConfig: {
        "name": _NAME, "description": {"maxLength": 4096}, "subjects": {"items": _SUBJECT},
        "max_consumers": _LIMIT, "max_msgs": _LIMIT, "max_bytes": _LIMIT, "max_msgs_per_subject": _LIMIT,
        "max_msg_size": _LIMIT, "max_age": _NONNEG, "duplicate_window": _NONNEG, "num_replicas": _REPLICAS,
        "first_seq": {"minimum": 0, "maximum": _U64}, "subject_delete_marker_ttl": _NONNEG,
    },
    m.StreamSource: {"name": _NAME, "opt_start_seq": _NONNEG},
    m.StreamConsumerLimits: {"inactive_threshold": _NONNEG, "max_ack_pending": _LIMIT},
    m.ConsumerConfig: {
        "name": _NAME, "durable_name": _NAME, "description": {"maxLength": 4096}, "opt_start_seq": _NONNEG,
        "ack_wait": {"minimum": 1}, "max_deliver": _LIMIT, "backoff": {"items": _NONNEG},
        "filter_subjects": {"items": _SUBJECT}, "rate_limit_bps": _NONNEG,
        "sample_freq": {"pattern": r"^([0-9]{1,2}|100)%?$"}, "max_waiting": _NONNEG, "max_ack_pending": _LIMIT,
        "idle_heartbeat": _NONNEG, "max_batch": _NONNEG, "max_expires": _NONNEG, "max_bytes": _NONNEG,
        "inactive_threshold": _NONNEG, "num_replicas": _REPLICAS, "deliver_subject": _SUBJECT,
        "deliver_group": _SUBJECT, "priority_groups": {"items": _SUBJECT}, "priority_timeout": _NONNEG,
    },
    api.ConsumerCreateRequest: {"stream_name": _NAME, "action": {"enum": ["create", "update"]}},
    api.IterableRequest: {"offset": _NONNEG},
    api.StreamPurgeRequest: {"seq": _NONNEG, "keep": _NONNEG},
    api.StreamMsgGetRequest: {"seq": _NONNEG, "batch": _NONNEG, "max_bytes": _NONNEG, "up_to_seq": _NONNEG},
    api.StreamMsgDeleteRequest: {"seq": {"minimum": 1}},
    api.ConsumerUnpinRequest: {"group": _SUBJECT},
    api.ConsumerGetNextRequest: {"expires": _NONNEG, "batch": _NONNEG, "max_bytes": _NONNEG,
                                 "idle_heartbeat": _NONNEG},
    api.StreamSnapshotRequest: {"deliver_subject": _SUBJECT, "chunk_size": _NONNEG},
    api.ConsumerResetRequest: {"seq": _NONNEG},
    ServicePing: {"name": _BASIC_NAME, "version": _SEMVER, "id": {"minLength": 1}},
    ServiceInfo: {"name": _BASIC_NAME, "version": _SEMVER, "id": {"minLength": 1}},
    ServiceStats: {"name": _BASIC_NAME, "version": _SEMVER, "id": {"minLength": 1}},
    EndpointInfo: {"name": _BASIC_NAME, "subject": _SUBJECT},
    EndpointStats: {"name": _BASIC_NAME, "subject": _SUBJECT},
    ev.ServerInfo: {"name": {"minLength": 1}},
}

# Fields a document of the class always carries (requests: the server's schema
# requires them; ``complete()`` fills them from the model's defaults).
REQUIRED: dict[type, tuple[str, ...]] = {
    m.StreamConfig: ("name", "retention", "max_consumers", "max_msgs", "max_bytes", "max_age", "storage",
                     "num_replicas"),
    m.ConsumerConfig: ("ack_policy", "deliver_policy"),
    api.ConsumerCreateRequest: ("stream_name", "config"),
    api.StreamMsgDeleteRequest: ("seq",),
    api.ConsumerUnpinRequest: ("group",),
    api.StreamSnapshotRequest: ("deliver_subject",),
    api.StreamRestoreRequest: ("config", "state"),
    api.StreamRemovePeerRequest: ("peer",),
    ServicePing: ("type", "name", "id", "version"),
    ServiceInfo: ("type", "name", "id", "version", "description", "endpoints"),
    ServiceStats: ("type", "name", "id", "version", "started", "endpoints"),
    EndpointInfo: ("name", "subject"),
    EndpointStats: ("name", "subject", "num_requests", "num_errors", "last_error", "processing_time",
                        "average_processing_time"),
    # ClientInfo: nothing (the server leaves "acc" out of a system account's own requests)
    ev.ServerInfo: ("name", "host", "id", "ver", "seq", "jetstream", "time"),
    api.PubAckResponse: ("stream",),
}

# Rules between fields: model class -> extra schema keywords of its object.
_OBJECT_RULES: dict[type, JSONObject] = {
    m.ConsumerConfig: {"allOf": [
        {"if": {"properties": {"deliver_policy": {"const": "by_start_sequence"}}, "required": ["deliver_policy"]},
         "then": {"required": ["opt_start_seq"]}},
        {"if": {"properties": {"deliver_policy": {"const": "by_start_time"}}, "required": ["deliver_policy"]},
         "then": {"required": ["opt_start_time"]}},
    ]},
}

# Values an enum field accepts beyond its members' (what the models read as aliases).
_ENUM_EXTRA: dict[type, tuple[str, ...]] = {m.PersistMode: ("",)}
_ENUM_EXTRA_LENIENT: dict[type, tuple[str, ...]] = {m.DeliverPolicy: ("undefined",), m.PriorityPolicy: ("none",)}

REQUEST, EVENT, RESPONSE = "request", "event", "response"

# type name -> (model class, shape, description)
_TYPES: dict[str, tuple[type, str, str]] = {
    API + "stream_configuration": (m.StreamConfig, REQUEST, "A stream configuration"),
    API + "consumer_configuration": (m.ConsumerConfig, REQUEST, "A consumer configuration"),
    API + "stream_create_request": (api.StreamCreateRequest, REQUEST, "$JS.API.STREAM.CREATE request"),
    API + "stream_update_request": (api.StreamCreateRequest, REQUEST, "$JS.API.STREAM.UPDATE request"),
    API + "consumer_create_request": (api.ConsumerCreateRequest, REQUEST, "$JS.API.CONSUMER.CREATE request"),
    API + "stream_names_request": (api.StreamNamesRequest, REQUEST, "$JS.API.STREAM.NAMES request"),
    API + "stream_list_request": (api.StreamListRequest, REQUEST, "$JS.API.STREAM.LIST request"),
    API + "consumer_names_request": (api.IterableRequest, REQUEST, "$JS.API.CONSUMER.NAMES request"),
    API + "consumer_list_request": (api.IterableRequest, REQUEST, "$JS.API.CONSUMER.LIST request"),
    API + "stream_info_request": (api.StreamInfoRequest, REQUEST, "$JS.API.STREAM.INFO request"),
    API + "stream_purge_request": (api.StreamPurgeRequest, REQUEST, "$JS.API.STREAM.PURGE request"),
    API + "stream_msg_get_request": (api.StreamMsgGetRequest, REQUEST, "$JS.API.STREAM.MSG.GET request"),
    API + "stream_msg_delete_request": (api.StreamMsgDeleteRequest, REQUEST, "$JS.API.STREAM.MSG.DELETE request"),
    API + "consumer_pause_request": (api.ConsumerPauseRequest, REQUEST, "$JS.API.CONSUMER.PAUSE request"),
    API + "consumer_unpin_request": (api.ConsumerUnpinRequest, REQUEST, "$JS.API.CONSUMER.UNPIN request"),
    API + "consumer_getnext_request": (api.ConsumerGetNextRequest, REQUEST, "$JS.API.CONSUMER.MSG.NEXT request"),
    API + "stream_snapshot_request": (api.StreamSnapshotRequest, REQUEST, "$JS.API.STREAM.SNAPSHOT request"),
    API + "stream_restore_request": (api.StreamRestoreRequest, REQUEST, "$JS.API.STREAM.RESTORE request"),
    API + "stream_remove_peer_request": (api.StreamRemovePeerRequest, REQUEST, "$JS.API.STREAM.PEER.REMOVE request"),
    API + "stream_leader_stepdown_request": (api.LeaderStepdownRequest, REQUEST, "stream leader stepdown request"),
    API + "consumer_leader_stepdown_request": (api.LeaderStepdownRequest, REQUEST,
                                               "consumer leader stepdown request"),
    API + "meta_leader_stepdown_request": (api.LeaderStepdownRequest, REQUEST, "meta leader stepdown request"),
    API + "meta_server_remove_request": (api.MetaServerRemoveRequest, REQUEST, "$JS.API.SERVER.REMOVE request"),
    API + "consumer_info_request": (api.EmptyRequest, REQUEST, "$JS.API.CONSUMER.INFO request"),
    API + "consumer_reset_request": (api.ConsumerResetRequest, REQUEST, "$JS.API.CONSUMER.RESET request"),
    API + "stream_leader_stepdown_response": (api.SuccessResponse, RESPONSE, "stream leader stepdown response"),
    API + "consumer_leader_stepdown_response": (api.SuccessResponse, RESPONSE, "consumer leader stepdown response"),
    API + "meta_leader_stepdown_response": (api.SuccessResponse, RESPONSE, "meta leader stepdown response"),
    API + "meta_server_remove_response": (api.SuccessResponse, RESPONSE, "$JS.API.SERVER.REMOVE response"),
    API + "stream_remove_peer_response": (api.SuccessResponse, RESPONSE, "$JS.API.STREAM.PEER.REMOVE response"),
    API + "consumer_reset_response": (api.ConsumerResetResponse, RESPONSE, "$JS.API.CONSUMER.RESET response"),
    API + "account_purge_response": (api.AccountPurgeResponse, RESPONSE, "$JS.API.ACCOUNT.PURGE response"),
    API + "stream_create_response": (api.StreamInfoResponse, RESPONSE, "$JS.API.STREAM.CREATE response"),
    API + "stream_update_response": (api.StreamInfoResponse, RESPONSE, "$JS.API.STREAM.UPDATE response"),
    API + "stream_info_response": (api.StreamInfoResponse, RESPONSE, "$JS.API.STREAM.INFO response"),
    API + "stream_delete_response": (api.SuccessResponse, RESPONSE, "$JS.API.STREAM.DELETE response"),
    API + "stream_purge_response": (api.StreamPurgeResponse, RESPONSE, "$JS.API.STREAM.PURGE response"),
    API + "stream_names_response": (api.StreamNamesResponse, RESPONSE, "$JS.API.STREAM.NAMES response"),
    API + "stream_list_response": (api.StreamListResponse, RESPONSE, "$JS.API.STREAM.LIST response"),
    API + "stream_msg_get_response": (api.StreamMsgGetResponse, RESPONSE, "$JS.API.STREAM.MSG.GET response"),
    API + "stream_msg_delete_response": (api.SuccessResponse, RESPONSE, "$JS.API.STREAM.MSG.DELETE response"),
    API + "stream_snapshot_response": (api.StreamSnapshotResponse, RESPONSE, "$JS.API.STREAM.SNAPSHOT response"),
    API + "stream_restore_response": (api.StreamRestoreResponse, RESPONSE, "$JS.API.STREAM.RESTORE response"),
    API + "consumer_create_response": (api.ConsumerInfoResponse, RESPONSE, "$JS.API.CONSUMER.CREATE response"),
    API + "consumer_info_response": (api.ConsumerInfoResponse, RESPONSE, "$JS.API.CONSUMER.INFO response"),
    API + "consumer_delete_response": (api.SuccessResponse, RESPONSE, "$JS.API.CONSUMER.DELETE response"),
    API + "consumer_names_response": (api.ConsumerNamesResponse, RESPONSE, "$JS.API.CONSUMER.NAMES response"),
    API + "consumer_list_response": (api.ConsumerListResponse, RESPONSE, "$JS.API.CONSUMER.LIST response"),
    API + "consumer_pause_response": (api.ConsumerPauseResponseBody, RESPONSE, "$JS.API.CONSUMER.PAUSE response"),
    API + "consumer_unpin_response": (api.EmptyResponse, RESPONSE, "$JS.API.CONSUMER.UNPIN response"),
    API + "account_info_response": (api.AccountInfoResponse, RESPONSE, "$JS.API.INFO response"),
    API + "pub_ack_response": (api.PubAckResponse, RESPONSE, "A JetStream publish acknowledgement"),
}
for _cls in ev.EVENT_TYPES.values():
    _TYPES[_cls.TYPE] = (_cls, EVENT, (_cls.__doc__ or _cls.TYPE).strip().split("\n")[0])
for _micro in (ServicePing, ServiceInfo, ServiceStats):
    _TYPES[_micro.TYPE] = (_micro, RESPONSE, f"A NATS service {_micro.TYPE.rsplit('.', 1)[-1].replace('_', ' ')}")

# request subject (relative to the API prefix) -> request type
_SUBJECT_TYPES: list[tuple[str, int, str]] = [  # (prefix, tokens after it or -1 for any, type)
    ("STREAM.CREATE.", 1, "stream_create_request"),
    ("STREAM.UPDATE.", 1, "stream_update_request"),
    ("CONSUMER.CREATE.", -1, "consumer_create_request"),
    ("CONSUMER.DURABLE.CREATE.", 2, "consumer_create_request"),
    ("STREAM.NAMES", 0, "stream_names_request"),
    ("STREAM.LIST", 0, "stream_list_request"),
    ("CONSUMER.NAMES.", 1, "consumer_names_request"),
    ("CONSUMER.LIST.", 1, "consumer_list_request"),
    ("STREAM.INFO.", 1, "stream_info_request"),
    ("CONSUMER.INFO.", 2, "consumer_info_request"),
    ("CONSUMER.RESET.", 2, "consumer_reset_request"),
    ("STREAM.PURGE.", 1, "stream_purge_request"),
    ("STREAM.MSG.GET.", 1, "stream_msg_get_request"),
    ("STREAM.MSG.DELETE.", 1, "stream_msg_delete_request"),
    ("CONSUMER.PAUSE.", 2, "consumer_pause_request"),
    ("CONSUMER.UNPIN.", 2, "consumer_unpin_request"),
    ("CONSUMER.MSG.NEXT.", 2, "consumer_getnext_request"),
    ("STREAM.SNAPSHOT.", 1, "stream_snapshot_request"),
    ("STREAM.RESTORE.", 1, "stream_restore_request"),
    ("STREAM.PEER.REMOVE.", 1, "stream_remove_peer_request"),
    ("STREAM.LEADER.STEPDOWN.", 1, "stream_leader_stepdown_request"),
    ("CONSUMER.LEADER.STEPDOWN.", 2, "consumer_leader_stepdown_request"),
    ("META.LEADER.STEPDOWN", 0, "meta_leader_stepdown_request"),
    ("SERVER.REMOVE", 0, "meta_server_remove_request"),
]


# ---------------------------------------------------------------------------------
# building schemas from models


def _strip_optional(tp: object) -> tuple[object, bool]:
    if get_origin(tp) in (Union, types.UnionType):  # Optional[X] and X | None
        args = [a for a in get_args(tp) if a is not type(None)]
        return (args[0] if len(args) == 1 else Any), len(args) != len(get_args(tp))
    return tp, False


def _enum_schema(tp: type, shape: str) -> JSONObject:
    values = [e.value for e in tp]  # type: ignore[attr-defined]
    values += [v for v in _ENUM_EXTRA.get(tp, ()) if v not in values]
    if shape != REQUEST:
        values += [v for v in _ENUM_EXTRA_LENIENT.get(tp, ()) if v not in values]
    return {"type": "string", "enum": values}


def _value_schema(tp: object, kind: str | None, shape: str) -> JSONObject:
    tp, _ = _strip_optional(tp)
    origin = get_origin(tp)
    if kind == "duration":
        if origin is list or tp is list:
            return {"type": "array", "items": {"type": "integer"}}
        return {"type": "integer", "description": "nanoseconds"}
    if kind in ("b64", "hdrs_b64"):
        return {"type": "string", "description": "base64"}
    if kind == "headers":
        return {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}}
    if tp is Any:
        return {}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if tp is str:
        return {"type": "string"}
    if tp is datetime:
        return {"type": "string", "format": "date-time"}
    if isinstance(tp, type) and issubclass(tp, Enum):
        return _enum_schema(tp, shape)
    if isinstance(tp, type) and issubclass(tp, Model):
        return _model_schema(tp, shape)
    if origin in (list, tuple):
        args = get_args(tp)
        return {"type": "array", "items": _value_schema(args[0], None, shape) if args else {}}
    if origin is dict:
        args = get_args(tp)
        return {"type": "object", "additionalProperties": _value_schema(args[1], None, shape) if args else {}}
    return {}


def _rules_for(cls: type) -> dict[str, JSONObject]:
    out: dict[str, JSONObject] = {}
    for base in reversed(cls.__mro__):
        out.update(RULES.get(base, {}))
    return out


def _required_for(cls: type) -> list[str]:
    if issubclass(cls, ev.Event):
        return ["type", "id", "timestamp", *cls.REQUIRED]
    for base in cls.__mro__:
        if base in REQUIRED:
            return list(REQUIRED[base])
    return []


def _merge(base: JSONObject, extra: JSONObject) -> JSONObject:
    out = dict(base)
    for k, v in extra.items():
        if k == "items" and isinstance(out.get("items"), dict):
            out["items"] = {**out["items"], **v}
        else:
            out[k] = v
    return out


def _model_schema(cls: type, shape: str) -> JSONObject:
    plan = _plan(cls)
    hints = typing.get_type_hints(cls)
    rules = _rules_for(cls)
    wire = {name: (jname, fout) for name, jname, fout, _default, _always in plan.fields}
    props: JSONObject = {}
    for f in dataclasses.fields(cls):
        if f.name == "_extra" or f.name not in wire:
            continue
        jname, fout = wire[f.name]
        meta = f.metadata.get("jetwire", {})
        hint = hints.get(f.name, Any)
        s = _value_schema(hint, meta.get("kind"), shape)
        if f.name in rules:
            s = _merge(s, rules[f.name])
        default = f.default
        if default is not MISSING and default is not None:
            wire_default = fout(default) if fout is not None else default
            if isinstance(wire_default, Enum):
                wire_default = wire_default.value
            s = {**s, "default": wire_default}
        _, optional = _strip_optional(hint)
        if optional and shape != REQUEST and s:
            s = {"anyOf": [s, {"type": "null"}]}
        props[jname] = s
    if issubclass(cls, ev.Event) and cls.TYPE:
        props["type"] = {"type": "string", "const": cls.TYPE}
    out: JSONObject = {"type": "object", "properties": props}
    required = [r for r in _required_for(cls) if r in props]
    if required:
        out["required"] = required
    if shape != RESPONSE:
        out["additionalProperties"] = False
    for base in cls.__mro__:
        if base in _OBJECT_RULES:
            out.update(_OBJECT_RULES[base])
            break
    return out


_SCHEMAS: dict[str, JSONObject] = {}
_VALIDATORS: dict[str, Callable[[object], object]] = {}


def names() -> list[str]:
    """Every ``io.nats.*`` type jetwire has a schema for, sorted."""
    return sorted(_TYPES)


def schema(type: str) -> JSONObject:
    """The JSON Schema (draft-07) of ``type``, a full name such as
    ``"io.nats.jetstream.api.v1.stream_configuration"``; ``ValueError`` for an unknown type."""
    type = _resolve(type)
    s = _SCHEMAS.get(type)
    if s is None:
        try:
            cls, shape, description = _TYPES[type]
        except KeyError:
            raise ValueError(f"no schema for {type!r} (see jetwire.schemas.names())") from None
        body = _model_schema(cls, shape)
        if "type" in body["properties"]:
            body["properties"]["type"] = {"type": "string", "const": type}
        s = {"$schema": "http://json-schema.org/draft-07/schema#", "$id": f"jetwire:{type}", "title": type,
             "description": description, **body}
        _SCHEMAS[type] = s
    return _copy(s)


def _resolve(type: str) -> str:
    """A full type name, also from its last token when that names one type
    (``"stream_configuration"``)."""
    if type in _TYPES or not isinstance(type, str) or "." in type:
        return type
    found = [t for t in _TYPES if t.rsplit(".", 1)[-1] == type]
    return found[0] if len(found) == 1 else type


def _copy(s: JSONObject) -> JSONObject:
    return typing.cast("JSONObject", orjson.loads(orjson.dumps(s)))


def type_of(data: object) -> str:
    """The ``type`` of a NATS document (a dict, or JSON bytes/str), or
    ``"io.nats.unknown_message"`` when it has none."""
    if isinstance(data, (bytes, bytearray, memoryview, str)):
        try:
            data = orjson.loads(data)
        except orjson.JSONDecodeError:
            return UNKNOWN
    t = data.get("type") if isinstance(data, dict) else None
    return t if isinstance(t, str) and t.startswith("io.nats.") else UNKNOWN


def _validator(type: str) -> Callable[[object], object]:
    v = _VALIDATORS.get(type)
    if v is None:
        type = _resolve(type)
        import fastjsonschema

        schema(type)
        v = fastjsonschema.compile(_SCHEMAS[type], use_default=False, use_formats=True)
        _VALIDATORS[type] = v
    return v


def validate(data: object, type: str) -> list[str]:
    """Check ``data`` (a dict, JSON bytes/str, or a model instance) against the schema of
    ``type``: an empty list when it is valid, else one string per problem,
    ``"<json path>: <what> (rule <keyword>)"``. ``ValueError`` for an unknown type."""
    import fastjsonschema

    type = _resolve(type)
    check = _validator(type)
    if isinstance(data, Model):  # a model leaves its defaults out: put the required ones back
        data = _complete(data.to_json_dict(), _SCHEMAS[type])
    elif isinstance(data, (bytes, bytearray, memoryview, str)):
        try:
            data = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            return [f"$: not JSON ({exc})"]
    try:
        check(data)  # the fast path: valid
    except fastjsonschema.JsonSchemaValueException as exc:
        return _all_errors(data, _SCHEMAS[type], "$") or [_error_text(exc, "$")]
    return []


def _error_text(exc: Any, base: str) -> str:
    path = base + "".join(f"[{p}]" if isinstance(p, int) or str(p).isdigit() else f".{p}"
                          for p in (exc.path or [])[1:])
    msg = exc.message
    if exc.name and msg.startswith(exc.name):
        msg = msg[len(exc.name):].strip()
    return f"{path}: {msg} (rule {exc.rule})"


_PART_VALIDATORS: dict[str, Callable[[object], object]] = {}


def _check_part(part: JSONObject, value: object, path: str) -> list[str]:
    import fastjsonschema

    key = orjson.dumps(part, option=orjson.OPT_SORT_KEYS).decode()
    v = _PART_VALIDATORS.get(key)
    if v is None:
        v = fastjsonschema.compile(part, use_default=False, use_formats=True)
        _PART_VALIDATORS[key] = v
    try:
        v(value)
    except fastjsonschema.JsonSchemaValueException as exc:
        return [_error_text(exc, path)]
    return []


def _all_errors(data: object, s: JSONObject, path: str) -> list[str]:
    """Every problem of ``data`` (the slow path, once a document failed): objects are
    walked field by field, anything else checked whole."""
    any_of = s.get("anyOf")
    if any_of and len(any_of) == 2 and any_of[1] == {"type": "null"}:  # an optional field
        if data is None:
            return []
        s = any_of[0]
    if s.get("type") != "object" or not isinstance(data, dict) or "properties" not in s:
        return _check_part(s, data, path)
    props = s["properties"]
    out = [f"{path}: missing required property {name!r} (rule required)"
           for name in s.get("required", ()) if name not in data]
    if s.get("additionalProperties") is False:
        out += [f"{path}.{name}: unknown property (rule additionalProperties)" for name in data if name not in props]
    for name, value in data.items():
        p = props.get(name)
        if p is not None:
            out += _all_errors(value, p, f"{path}.{name}")
    if "allOf" in s and not out:
        out += _check_part({"allOf": s["allOf"]}, data, path)
    return out


# ---------------------------------------------------------------------------------
# requests


def request_type(subject: str) -> str | None:
    """The request type of a JetStream API ``subject`` relative to the API prefix
    (``"STREAM.CREATE.ORDERS"`` -> ``"io.nats.jetstream.api.v1.stream_create_request"``),
    ``None`` when jetwire has no schema for it."""
    for prefix, tokens, name in _SUBJECT_TYPES:
        if tokens == 0:
            if subject == prefix:
                return API + name
        elif subject.startswith(prefix):
            rest = subject[len(prefix):]
            if tokens < 0 or rest.count(".") == tokens - 1:
                return API + name
    return None


def complete(data: JSONObject, type: str) -> JSONObject:
    """``data`` with every required field it lacks set to its default (at the top and in
    nested objects the schema requires), so the request validates against the
    published schemas too. The caller's dict is not changed."""
    return typing.cast("JSONObject", _complete(data, _SCHEMAS.get(type) or schema(type)))


def _complete(data: object, s: JSONObject) -> object:
    if not isinstance(data, dict) or s.get("type") != "object":
        return data
    props = s.get("properties", {})
    out = dict(data)
    for name in s.get("required", ()):
        if name not in out:
            p = props.get(name, {})
            if "default" in p:
                out[name] = p["default"]
            elif p.get("type") == "object":
                out[name] = {}
    for name, v in out.items():
        p = props.get(name)
        if isinstance(v, dict) and p is not None and p.get("required"):
            out[name] = _complete(v, p)
    return out


def check_request(subject: str, payload: JSONObject | bytes | None) -> JSONObject | bytes | None:
    """The hook of ``nc.jetstream(validate=True)``: the payload of the API request to
    ``subject`` (relative to the API prefix), completed with the required fields it
    lacks; ``SchemaValidationError`` (with ``.errors``) when it does not validate.
    Requests without a schema or a payload pass unchanged."""
    type_ = request_type(subject)
    if type_ is None or payload is None:
        return payload
    if isinstance(payload, (bytes, bytearray)):
        if not payload:
            return payload
        try:
            data = orjson.loads(payload)
        except orjson.JSONDecodeError:
            raise SchemaValidationError(f"{subject}: the payload is not JSON", ["$: not JSON"]) from None
    else:
        data = payload
    data = complete(data, type_)
    errors = validate(data, type_)
    if errors:
        raise SchemaValidationError(f"{subject}: invalid {type_.rsplit('.', 1)[-1]}: {'; '.join(errors)}", errors)
    return data
