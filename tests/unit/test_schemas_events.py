"""jetwire.schemas and jetwire.events without a server: the schemas follow the models,
every advisory, metric and micro type is known, validation names path and rule, and
parse() never raises for valid JSON."""
from __future__ import annotations

import dataclasses

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jetwire import schemas
from jetwire.errors import SchemaValidationError
from jetwire.events import FORMATS, NakAdvisory, UnknownEvent, parse, render
from jetwire.jetstream.event_models import EVENT_TYPES
from jetwire.jetstream.models import ConsumerConfig, StreamConfig

API = "io.nats.jetstream.api.v1."
# every advisory, metric and micro type of the published JetStream schemas (jsm.go)
PUBLISHED_EVENTS_AND_MICRO = [
    *(f"io.nats.jetstream.advisory.v1.{n}" for n in (
        "api_audit", "api_limit_reached", "consumer_action", "consumer_group_pinned", "consumer_group_unpinned",
        "consumer_leader_elected", "consumer_pause", "consumer_quorum_lost", "domain_leader_elected",
        "max_deliver", "nak", "restore_complete", "restore_create", "server_out_of_space", "server_removed",
        "snapshot_complete", "snapshot_create", "stream_action", "stream_batch_abandoned",
        "stream_leader_elected", "stream_quorum_lost", "terminated")),
    "io.nats.jetstream.metric.v1.consumer_ack",
    "io.nats.server.advisory.v1.account_connections", "io.nats.server.advisory.v1.client_connect",
    "io.nats.server.advisory.v1.client_disconnect", "io.nats.server.metric.v1.service_latency",
    "io.nats.micro.v1.info_response", "io.nats.micro.v1.ping_response", "io.nats.micro.v1.stats_response",
]

NAK = {"type": "io.nats.jetstream.advisory.v1.nak", "id": "i1", "timestamp": "2026-01-02T03:04:05.123456789Z",
       "stream": "S", "consumer": "C", "consumer_seq": 4, "stream_seq": 9, "deliveries": 2}


def test_every_event_and_micro_type_has_a_schema():
    names = schemas.names()
    assert names == sorted(names)
    for t in PUBLISHED_EVENTS_AND_MICRO:
        assert t in names, t
        s = schemas.schema(t)
        assert s["title"] == t and s["type"] == "object"
        assert s["properties"]["type"]["const"] == t
    for t in EVENT_TYPES:
        assert t in names
    with pytest.raises(ValueError):
        schemas.schema("io.nats.nothing")


def test_schemas_are_built_from_the_models():
    s = schemas.schema(API + "stream_configuration")
    wire = {f.name for f in dataclasses.fields(StreamConfig) if f.name != "_extra"}
    assert set(s["properties"]) == wire
    assert s["properties"]["max_age"]["type"] == "integer"  # durations: nanoseconds
    assert s["properties"]["storage"]["enum"] == ["file", "memory"]
    assert s["properties"]["max_msgs"] == {"type": "integer", "minimum": -1, "default": -1}
    assert set(s["required"]) >= {"retention", "max_msgs", "storage", "num_replicas"}
    c = schemas.schema(API + "consumer_create_request")
    assert set(c["properties"]["config"]["properties"]) == {
        f.name for f in dataclasses.fields(ConsumerConfig) if f.name != "_extra"}
    assert c["properties"]["config"]["properties"]["opt_start_time"]["format"] == "date-time"
    # the schema handed out is a copy
    s["properties"].clear()
    assert schemas.schema(API + "stream_configuration")["properties"]


def test_type_of():
    assert schemas.type_of(NAK) == NAK["type"]
    assert schemas.type_of(orjson.dumps(NAK)) == NAK["type"]
    for doc in ({}, {"type": 5}, {"type": "other"}, [1], b"not json", b"3"):
        assert schemas.type_of(doc) == "io.nats.unknown_message"


def test_validate_names_path_and_rule():
    t = API + "stream_create_request"
    ok = schemas.complete({"name": "S", "subjects": ["a.>"]}, t)
    assert schemas.validate(ok, t) == []
    assert schemas.validate(orjson.dumps(ok), t) == []
    assert schemas.validate({**ok, "max_msgs": -5}, t) == ["$.max_msgs: must be bigger than or equal to -1 (rule minimum)"]
    assert schemas.validate({**ok, "storage": "disk"}, t)[0].startswith("$.storage:")
    assert schemas.validate({**ok, "max_msgs": True}, t)[0].endswith("(rule type)")
    assert schemas.validate({**ok, "name": "a b"}, t)[0].startswith("$.name:")
    assert schemas.validate({**ok, "colour": "red"}, t)[0].endswith("(rule additionalProperties)")
    assert "(rule required)" in schemas.validate({"name": "S"}, t)[0]
    assert schemas.validate(b"{", t)[0].startswith("$: not JSON")
    cc = API + "consumer_create_request"
    start = {"stream_name": "S", "config": {"ack_policy": "explicit", "deliver_policy": "by_start_sequence"}}
    assert "opt_start_seq" in schemas.validate(start, cc)[0]
    start["config"]["opt_start_seq"] = 5  # type: ignore[index]
    assert schemas.validate(start, cc) == []
    assert schemas.validate(NAK, NAK["type"]) == []
    assert schemas.validate({**NAK, "extra": 1}, NAK["type"])  # events: unknown fields are errors
    info = API + "stream_info_response"
    assert schemas.validate({"type": info, "config": {**ok, "new_server_field": 1}, "created": NAK["timestamp"],
                             "state": {"messages": 0}, "future": True}, info) == []  # responses: open


def test_check_request_maps_subjects_and_completes():
    assert schemas.request_type("STREAM.CREATE.X") == API + "stream_create_request"
    assert schemas.request_type("CONSUMER.CREATE.S.C.filter.>") == API + "consumer_create_request"
    assert schemas.request_type("CONSUMER.DURABLE.CREATE.S.C") == API + "consumer_create_request"
    assert schemas.request_type("STREAM.NAMES") == API + "stream_names_request"
    assert schemas.request_type("INFO") is None and schemas.request_type("STREAM.DELETE.X") is None
    payload = {"name": "X"}
    out = schemas.check_request("STREAM.CREATE.X", payload)
    assert payload == {"name": "X"} and isinstance(out, dict)
    assert out["retention"] == "limits" and out["max_age"] == 0 and out["num_replicas"] == 1
    assert schemas.check_request("STREAM.DELETE.X", None) is None
    with pytest.raises(SchemaValidationError) as ei:
        schemas.check_request("STREAM.CREATE.X", b'{"name": "X", "num_replicas": 9}')
    assert ei.value.errors == ["$.num_replicas: must be smaller than or equal to 5 (rule maximum)"]


def test_parse_and_render():
    ev = parse(orjson.dumps(NAK))
    assert isinstance(ev, NakAdvisory) and ev.consumer_seq == 4 and ev.timestamp.tzinfo is not None
    assert render(ev) == "03:04:05 [JS Delivery NAKed] S (9) > C: 2 deliveries"
    for fmt in FORMATS:
        assert render(ev, fmt)
    with pytest.raises(ValueError):
        render(ev, "xml")
    unknown = parse(b'{"type": "io.nats.other.v1.thing", "id": "x", "timestamp": "2026-01-02T03:04:05Z", "a": 1}')
    assert isinstance(unknown, UnknownEvent) and unknown.type == "io.nats.other.v1.thing"
    assert unknown.data["a"] == 1 and unknown.timestamp is not None
    assert orjson.loads(render(unknown, "json")) == unknown.data
    assert orjson.loads(render(unknown, "cloudevents"))["type"] == "io.nats.other.v1.thing"
    with pytest.raises(ValueError):
        parse(b"{not json")


_json = st.recursive(st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False) | st.text(),
                     lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
                     max_leaves=10)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(EVENT_TYPES)), st.dictionaries(
    st.sampled_from(["id", "timestamp", "stream", "consumer", "stream_seq", "client", "replicas", "start",
                     "ack_time", "server", "sent", "header", "paused", "action", "dropped", "state"]),
    _json, max_size=6))
def test_parse_never_raises_for_valid_json(typ, fields):
    doc = {**fields, "type": typ}
    ev = parse(orjson.dumps(doc))
    assert ev.type == typ
    for fmt in FORMATS:
        assert isinstance(render(ev, fmt), str)


def test_validate_lists_every_problem_and_takes_models_and_short_names():
    errors = schemas.validate({"name": "a b", "max_msgs": -5, "storage": "disk", "colour": 1, "retention": "limits",
                               "max_consumers": -1, "max_bytes": -1, "max_age": 0, "num_replicas": 1},
                              "stream_configuration")
    assert [e.split(":")[0] for e in errors] == ["$.colour", "$.name", "$.max_msgs", "$.storage"]
    assert schemas.validate(StreamConfig(name="S", subjects=["s"]), "stream_configuration") == []
    assert schemas.validate(StreamConfig(name="S", max_msgs=-2), "stream_configuration") == [
        "$.max_msgs: must be bigger than or equal to -1 (rule minimum)"]
    assert schemas.schema("nak") == schemas.schema("io.nats.jetstream.advisory.v1.nak")
    doc = {**NAK, "timestamp": "yesterday", "stream": None}
    assert [e.split(":")[0] for e in schemas.validate(doc, "nak")] == ["$.timestamp", "$.stream"]


def test_a_duration_beyond_64_bits_of_nanoseconds_still_renders():
    """Any JSON number parses; a duration of 2**64 ns is 2**64 ns again on the way out,
    which orjson cannot write (found by the property test above)."""
    ev = parse(orjson.dumps({"type": "io.nats.jetstream.metric.v1.consumer_ack", "ack_time": 2.0 ** 64}))
    assert ev.ack_time == pytest.approx(2.0 ** 64 / 1e9)
    for fmt in FORMATS:
        assert isinstance(render(ev, fmt), str)
    assert orjson.loads(render(ev, "json"))["ack_time"] >= 2 ** 64
    assert orjson.loads(render(ev, "cloudevents"))["data"]["ack_time"] >= 2 ** 64


def test_advisories_as_the_server_sends_them_to_the_system_account_parse_and_validate():
    adv = "io.nats.jetstream.advisory.v1."
    peer = [{"name": "n1", "current": True, "active": 0}]
    elected = {"type": adv + "stream_leader_elected", "id": "e1", "timestamp": NAK["timestamp"],
               "stream": "S", "leader": "n1", "replicas": peer, "account": "APP"}  # the system account's copy
    ev = parse(orjson.dumps(elected))
    assert ev.account == "APP" and schemas.validate(elected, elected["type"]) == []
    audit = {"type": adv + "api_audit", "id": "a1", "timestamp": NAK["timestamp"], "server": "n1",
             "client": {}, "subject": "$JS.API.META.LEADER.STEPDOWN", "request": "", "response": "{}"}
    assert schemas.validate(audit, audit["type"]) == []  # a system account's own request: no "acc"
    rescue = {"type": adv + "meta_rescue", "id": "r1", "timestamp": NAK["timestamp"], "server": "n1",
              "server_id": "NABC", "prev_quorum": 2, "new_quorum": 1, "cluster": "c1", "domain": "hub"}
    ev = parse(orjson.dumps(rescue))
    assert type(ev).__name__ == "MetaRescueAdvisory" and ev.new_quorum == 1 and ev.domain == "hub"
    assert "quorum 2 -> 1" in ev.summary()
    assert schemas.validate(rescue, rescue["type"]) == []
