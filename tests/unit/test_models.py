"""JetStream models: JSON round trips, durations, times, enums, unknown fields."""
from __future__ import annotations

import base64
import copy
import pickle
from datetime import UTC, datetime, timedelta, timezone

import orjson
import pytest

from jetwire._units import NanoDatetime, datetime_to_ns, ns_to_seconds, seconds_to_ns
from jetwire._units import format_rfc3339 as format_time
from jetwire._units import parse_rfc3339 as parse_time
from jetwire.errors import APIError, InvalidOptionError, StreamNotFoundError, WrongLastSequenceError
from jetwire.jetstream._json import config_from_kwargs
from jetwire.jetstream.models import (
    AccountInfo,
    AckPolicy,
    ClusterInfo,
    ConsumerConfig,
    ConsumerInfo,
    ConsumerLimits,
    DeliverPolicy,
    DiscardPolicy,
    ExternalStream,
    PeerInfo,
    Placement,
    PriorityPolicy,
    PubAck,
    RawStreamMsg,
    ReplayPolicy,
    RePublish,
    RetentionPolicy,
    StorageType,
    StoreCompression,
    StreamConfig,
    StreamConsumerLimits,
    StreamInfo,
    StreamSource,
    StreamSourceInfo,
    StreamState,
    SubjectTransformConfig,
    Tier,
    check_api_error,
    loads_api,
)

UTC = UTC

# ---------------------------------------------------------------------------------
# fixtures: server JSON written after the shapes of the JetStream schemas


def stream_info_json() -> dict:
    return {
        "type": "io.nats.jetstream.api.v1.stream_info_response",
        "total": 0, "offset": 0, "limit": 0,
        "config": {
            "name": "ORDERS",
            "description": "orders of the shop",
            "subjects": ["orders.>"],
            "retention": "workqueue",
            "max_consumers": -1,
            "max_msgs": 1000000,
            "max_bytes": -1,
            "max_age": 86400000000000,
            "max_msgs_per_subject": -1,
            "max_msg_size": -1,
            "discard": "new",
            "discard_new_per_subject": True,
            "storage": "memory",
            "num_replicas": 3,
            "duplicate_window": 120000000000,
            "placement": {"cluster": "east", "tags": ["ssd"]},
            "sources": [
                {"name": "ORDERS_EU", "opt_start_seq": 10, "filter_subject": "eu.>",
                 "subject_transforms": [{"src": "eu.>", "dest": "orders.eu.>"}]},
                {"name": "ORDERS_US", "opt_start_time": "2024-01-02T03:04:05.123456789Z",
                 "external": {"api": "$JS.us.API", "deliver": "deliver.us"}},
            ],
            "compression": "s2",
            "allow_direct": True,
            "mirror_direct": False,
            "sealed": False,
            "deny_delete": True,
            "deny_purge": False,
            "allow_rollup_hdrs": True,
            "republish": {"src": "orders.>", "dest": "repub.orders.>", "headers_only": True},
            "subject_transform": {"src": "orders.>", "dest": "o.>"},
            "consumer_limits": {"inactive_threshold": 300000000000, "max_ack_pending": 5000},
            "allow_msg_ttl": True,
            "subject_delete_marker_ttl": 900000000000,
            "metadata": {"_nats.ver": "2.11.0", "team": "shop"},
        },
        "created": "2024-01-02T03:04:05.123456789Z",
        "state": {
            "messages": 42,
            "bytes": 4242,
            "first_seq": 3,
            "first_ts": "2024-01-02T03:04:06.5Z",
            "last_seq": 47,
            "last_ts": "2024-01-02T04:00:00.000000001Z",
            "num_subjects": 2,
            "subjects": {"orders.eu.1": 40, "orders.us.2": 2},
            "num_deleted": 3,
            "deleted": [5, 6, 9],
            "lost": {"msgs": [7], "bytes": 100},
            "consumer_count": 2,
        },
        "cluster": {
            "name": "east",
            "raft_group": "S-R3F-abc",
            "leader": "n1",
            "leader_since": "2024-01-02T03:04:05.5+01:00",
            "replicas": [
                {"name": "n2", "current": True, "active": 1500000, "lag": 0, "peer": "xyz"},
                {"name": "n3", "current": False, "offline": True, "active": 12000000000, "lag": 17},
            ],
        },
        "sources": [
            {"name": "ORDERS_EU", "lag": 0, "active": 250000000, "filter_subject": "eu.>",
             "subject_transforms": [{"src": "eu.>", "dest": "orders.eu.>"}]},
            {"name": "ORDERS_US", "lag": 5, "active": -1,
             "external": {"api": "$JS.us.API", "deliver": ""},
             "error": {"code": 503, "err_code": 10077, "description": "insufficient resources"}},
        ],
        "alternates": [{"name": "ORDERS", "cluster": "east"}, {"name": "ORDERS_M", "cluster": "west", "domain": "hub"}],
        "ts": "2024-01-02T04:00:01.987654321Z",
    }


def mirror_info_json() -> dict:
    return {
        "config": {
            "name": "MIR", "retention": "limits", "max_consumers": -1, "max_msgs": -1, "max_bytes": -1,
            "max_age": 0, "max_msgs_per_subject": -1, "max_msg_size": -1, "discard": "old",
            "storage": "file", "num_replicas": 1, "duplicate_window": 120000000000,
            "mirror": {"name": "ORDERS", "opt_start_seq": 1}, "compression": "none",
            "allow_direct": False, "mirror_direct": True, "sealed": False, "deny_delete": False,
            "deny_purge": False, "allow_rollup_hdrs": False, "consumer_limits": {},
        },
        "created": "2024-05-06T07:08:09.1Z",
        "state": {"messages": 0, "bytes": 0, "first_seq": 0, "first_ts": "0001-01-01T00:00:00Z",
                  "last_seq": 0, "last_ts": "0001-01-01T00:00:00Z", "consumer_count": 0},
        "mirror": {"name": "ORDERS", "lag": 3, "active": 400707509},
        "ts": "2024-05-06T07:08:10Z",
    }


def consumer_info_json() -> dict:
    return {
        "type": "io.nats.jetstream.api.v1.consumer_info_response",
        "stream_name": "ORDERS",
        "name": "worker",
        "created": "2024-01-02T03:04:05.000000123Z",
        "config": {
            "durable_name": "worker",
            "name": "worker",
            "description": "does the work",
            "deliver_policy": "by_start_time",
            "opt_start_time": "2024-01-01T00:00:00.999999999Z",
            "ack_policy": "explicit",
            "ack_wait": 30000000000,
            "max_deliver": 5,
            "backoff": [1000000000, 5000000000, 500000000],
            "filter_subjects": ["orders.eu.>", "orders.us.>"],
            "replay_policy": "instant",
            "max_waiting": 512,
            "max_ack_pending": 1000,
            "max_batch": 100,
            "max_expires": 60000000000,
            "max_bytes": 1048576,
            "inactive_threshold": 5000000000,
            "num_replicas": 0,
            "headers_only": True,
            "metadata": {"owner": "me"},
            "pause_until": "2030-01-01T00:00:00Z",
            "priority_policy": "pinned_client",
            "priority_groups": ["jobs"],
            "priority_timeout": 120000000000,
        },
        "delivered": {"consumer_seq": 10, "stream_seq": 12, "last_active": "2024-01-02T03:05:00.000000001Z"},
        "ack_floor": {"consumer_seq": 9, "stream_seq": 11},
        "num_ack_pending": 1,
        "num_redelivered": 2,
        "num_waiting": 3,
        "num_pending": 18446744073709551615,
        "cluster": {"leader": "n1"},
        "paused": True,
        "pause_remaining": 3600000000000,
        "priority_groups": [{"group": "jobs", "pinned_client_id": "abc", "pinned_ts": "2024-01-02T03:04:05Z"}],
        "ts": "2024-01-02T03:06:00.123Z",
    }


def account_info_json() -> dict:
    return {
        "type": "io.nats.jetstream.api.v1.account_info_response",
        "memory": 1024, "storage": 172, "reserved_memory": 0, "reserved_storage": 10,
        "streams": 3, "consumers": 2, "domain": "hub",
        "limits": {"max_memory": -1, "max_storage": -1, "max_streams": -1, "max_consumers": -1,
                   "max_ack_pending": -1, "memory_max_stream_bytes": -1, "storage_max_stream_bytes": -1,
                   "max_bytes_required": False},
        "api": {"level": 1, "total": 7, "errors": 1, "inflight": 0},
        "tiers": {"R1": {"memory": 1024, "storage": 172, "streams": 3, "consumers": 2,
                         "limits": {"max_memory": 5, "max_storage": 6, "max_streams": 7, "max_consumers": 8}}},
    }


# ---------------------------------------------------------------------------------
# stream info


def test_stream_info_reads_every_part():
    si = StreamInfo.from_json(stream_info_json())
    c = si.config
    assert c.name == "ORDERS" and c.subjects == ["orders.>"]
    assert c.retention is RetentionPolicy.WORK_QUEUE and c.retention == "workqueue"
    assert c.storage is StorageType.MEMORY and c.discard is DiscardPolicy.NEW
    assert c.compression is StoreCompression.S2
    assert c.max_age == 86400.0 and c.duplicate_window == 120.0
    assert c.subject_delete_marker_ttl == 900.0
    assert c.placement == Placement(cluster="east", tags=["ssd"])
    assert c.sources[0] == StreamSource(name="ORDERS_EU", opt_start_seq=10, filter_subject="eu.>",
                                        subject_transforms=[SubjectTransformConfig("eu.>", "orders.eu.>")])
    assert c.sources[1].external == ExternalStream(api="$JS.us.API", deliver="deliver.us")
    assert c.sources[1].opt_start_time == datetime(2024, 1, 2, 3, 4, 5, 123456, UTC)
    assert c.republish == RePublish("orders.>", "repub.orders.>", True)
    assert c.consumer_limits == StreamConsumerLimits(inactive_threshold=300.0, max_ack_pending=5000)
    assert ConsumerLimits is StreamConsumerLimits
    assert c.metadata == {"_nats.ver": "2.11.0", "team": "shop"}

    st = si.state
    assert isinstance(st, StreamState)
    assert (st.messages, st.bytes, st.first_seq, st.last_seq, st.consumer_count) == (42, 4242, 3, 47, 2)
    assert st.first_ts == datetime(2024, 1, 2, 3, 4, 6, 500000, UTC)
    assert st.last_ts == datetime(2024, 1, 2, 4, 0, 0, 0, UTC) and st.last_ts.nanosecond == 1
    assert st.subjects == {"orders.eu.1": 40, "orders.us.2": 2}
    assert st.deleted == [5, 6, 9] and st.num_deleted == 3 and st.num_subjects == 2
    assert st.lost.msgs == [7] and st.lost.bytes == 100

    cl = si.cluster
    assert isinstance(cl, ClusterInfo) and cl.leader == "n1" and cl.raft_group == "S-R3F-abc"
    assert cl.leader_since == datetime(2024, 1, 2, 2, 4, 5, 500000, UTC)
    assert cl.replicas[0] == PeerInfo(name="n2", current=True, active=0.0015, lag=0, peer="xyz")
    assert cl.replicas[1].offline is True and cl.replicas[1].active == 12.0 and cl.replicas[1].lag == 17

    assert isinstance(si.sources[0], StreamSourceInfo)
    assert si.sources[0].active == 0.25 and si.sources[0].subject_transforms[0].dest == "orders.eu.>"
    assert si.sources[1].active is None  # -1: no activity yet
    assert si.sources[1].error.err_code == 10077
    assert si.alternates[1].domain == "hub" and si.alternates[0].domain is None
    assert si.created.nanosecond == 789
    assert si.ts == datetime(2024, 1, 2, 4, 0, 1, 987654, UTC)


def test_stream_info_round_trip():
    si = StreamInfo.from_json(stream_info_json())
    again = StreamInfo.from_json(orjson.loads(orjson.dumps(si.to_json_dict())))
    assert again == si
    # nanoseconds and unknown top-level fields survive
    d = si.to_json_dict()
    assert d["created"] == "2024-01-02T03:04:05.123456789Z"
    assert d["state"]["last_ts"] == "2024-01-02T04:00:00.000000001Z"
    assert d["type"] == "io.nats.jetstream.api.v1.stream_info_response"
    assert d["config"]["max_age"] == 86400000000000
    assert d["config"]["sources"][1]["opt_start_time"] == "2024-01-02T03:04:05.123456789Z"
    assert d["config"] == StreamConfig.from_json(d["config"]).to_json_dict()


def test_stream_config_from_server_resends_same_meaning():
    raw = stream_info_json()["config"]
    cfg = StreamConfig.from_json(raw)
    out = cfg.to_json_dict()
    # everything the server said is kept, except values equal to the server's defaults
    for k, v in raw.items():
        if k in out:
            assert out[k] == v, k
        else:
            assert StreamConfig.from_json({k: v}) == StreamConfig(), k


def test_mirror_info_and_zero_times():
    si = StreamInfo.from_json(mirror_info_json())
    assert si.config.mirror == StreamSource(name="ORDERS", opt_start_seq=1)
    assert si.config.mirror_direct is True
    assert si.config.consumer_limits == StreamConsumerLimits()
    assert si.state.first_ts is None and si.state.last_ts is None
    assert si.mirror.lag == 3 and si.mirror.active == 0.400707509
    assert si.created == datetime(2024, 5, 6, 7, 8, 9, 100000, UTC)
    assert type(si.created) is datetime  # no sub-microsecond digits: a plain datetime
    assert si.sources is None and si.cluster is None
    assert "first_ts" not in si.to_json_dict()["state"]


def test_from_json_accepts_bytes_and_none():
    raw = orjson.dumps(mirror_info_json())
    assert StreamInfo.from_json(raw) == StreamInfo.from_json(mirror_info_json())
    assert StreamInfo.from_json(raw.decode()) == StreamInfo.from_json(raw)
    assert StreamInfo.from_json(None) is None
    with pytest.raises(TypeError):
        StreamInfo.from_json([1, 2])


# ---------------------------------------------------------------------------------
# stream config: what is sent


def test_stream_config_sends_only_what_was_set():
    assert StreamConfig(name="ORDERS", subjects=["orders.>"]).to_json_dict() == {
        "name": "ORDERS", "subjects": ["orders.>"]}
    cfg = StreamConfig("S", subjects=["a"], storage="memory", retention="interest", max_age=1.5,
                       num_replicas=3, discard=DiscardPolicy.NEW, duplicate_window=timedelta(seconds=30),
                       max_msgs=10, allow_direct=True, metadata={"a": "b"})
    assert cfg.storage is StorageType.MEMORY and cfg.retention is RetentionPolicy.INTEREST
    assert cfg.duplicate_window == 30.0
    assert cfg.to_json_dict() == {
        "name": "S", "subjects": ["a"], "retention": "interest", "max_msgs": 10, "discard": "new",
        "max_age": 1500000000, "storage": "memory", "num_replicas": 3, "duplicate_window": 30000000000,
        "allow_direct": True, "metadata": {"a": "b"}}


def test_stream_config_defaults_match_server_defaults():
    c = StreamConfig(name="X")
    assert c.retention is RetentionPolicy.LIMITS and c.storage is StorageType.FILE
    assert (c.max_msgs, c.max_bytes, c.max_consumers, c.max_msgs_per_subject, c.max_msg_size) == (-1,) * 5
    assert c.num_replicas == 1 and c.max_age == 0.0 and c.discard is DiscardPolicy.OLD
    assert c.compression is StoreCompression.NONE
    assert c.duplicate_window is None  # the server picks it
    fields = StreamConfig.__dataclass_fields__
    for prop in ("name", "description", "subjects", "subject_transform", "retention", "max_consumers", "max_msgs",
                 "max_msgs_per_subject", "max_bytes", "max_age", "max_msg_size", "storage", "compression",
                 "first_seq", "num_replicas", "no_ack", "discard", "duplicate_window", "placement", "mirror",
                 "sources", "sealed", "deny_delete", "deny_purge", "allow_rollup_hdrs", "allow_direct",
                 "allow_atomic", "allow_msg_counter", "allow_msg_schedules", "mirror_direct", "republish",
                 "discard_new_per_subject", "metadata", "consumer_limits", "allow_msg_ttl",
                 "subject_delete_marker_ttl", "persist_mode", "allow_batched", "template_owner"):
        assert prop in fields, prop


def test_nested_dicts_are_converted_on_construction():
    c = StreamConfig(name="X", placement={"cluster": "c"}, sources=[{"name": "A", "opt_start_seq": 3}],
                     republish={"src": ">", "dest": "r.>"})
    assert c.placement == Placement(cluster="c")
    assert c.sources == [StreamSource(name="A", opt_start_seq=3)]
    assert c.to_json_dict()["republish"] == {"src": ">", "dest": "r.>"}


def test_stream_source_domain_becomes_external():
    s = StreamSource(name="ORDERS", domain="hub")
    assert s.to_json_dict() == {"name": "ORDERS", "external": {"api": "$JS.hub.API"}}
    s = StreamSource(name="ORDERS", domain="hub", external=ExternalStream(api="$JS.other.API"))
    with pytest.raises(InvalidOptionError, match="domain and external"):  # nats.go refuses both too
        s.to_json_dict()
    s = StreamSource(name="ORDERS", external=ExternalStream(api="$JS.other.API"))
    assert s.to_json_dict()["external"] == {"api": "$JS.other.API"}


def test_unknown_fields_survive_round_trip():
    raw = {"name": "S", "subjects": ["a"], "retention": "limits", "max_age": 0,
           "future_flag": True, "future_obj": {"x": [1, 2]},
           "placement": {"cluster": "c", "affinity": "near"}}
    cfg = StreamConfig.from_json(raw)
    assert cfg._extra == {"future_flag": True, "future_obj": {"x": [1, 2]}}
    assert cfg.placement._extra == {"affinity": "near"}
    out = cfg.to_json_dict()
    assert out["future_flag"] is True and out["future_obj"] == {"x": [1, 2]}
    assert out["placement"] == {"cluster": "c", "affinity": "near"}
    # extras are not part of equality or repr
    assert cfg == StreamConfig(name="S", subjects=["a"], placement=Placement(cluster="c"))
    assert "future_flag" not in repr(cfg)
    # and they survive copies and config_from_kwargs
    assert config_from_kwargs(StreamConfig, cfg, description="d").to_json_dict()["future_flag"] is True
    assert copy.deepcopy(cfg)._extra == cfg._extra


def test_unknown_enum_strings_are_kept():
    cfg = StreamConfig.from_json({"name": "S", "retention": "someday", "storage": "tape"})
    assert cfg.retention == "someday" and type(cfg.retention) is str
    assert cfg.to_json_dict()["storage"] == "tape"
    cc = ConsumerConfig(ack_policy="later")
    assert cc.ack_policy == "later"


# ---------------------------------------------------------------------------------
# enums


def test_enums_are_str_enums_with_wire_values():
    assert AckPolicy.EXPLICIT == "explicit" and AckPolicy("none") is AckPolicy.NONE
    assert DeliverPolicy.BY_START_SEQUENCE == "by_start_sequence"
    assert DeliverPolicy.LAST_PER_SUBJECT.value == "last_per_subject"
    assert RetentionPolicy.WORK_QUEUE == "workqueue"
    assert ReplayPolicy.ORIGINAL == "original"
    assert StorageType.MEMORY == "memory" and StoreCompression.S2 == "s2"
    assert DiscardPolicy("NEW") is DiscardPolicy.NEW
    assert DeliverPolicy("undefined") is DeliverPolicy.ALL
    assert PriorityPolicy("none") is PriorityPolicy.NONE and PriorityPolicy.PINNED == "pinned_client"
    assert str(AckPolicy.ALL) == "all" and f"{StorageType.FILE}" == "file"
    assert isinstance(AckPolicy.ALL, str)


def test_enum_fields_accept_plain_strings():
    cc = ConsumerConfig(deliver_policy="last_per_subject", ack_policy="all", replay_policy="original",
                        priority_policy="overflow")
    assert cc.deliver_policy is DeliverPolicy.LAST_PER_SUBJECT
    assert cc.ack_policy is AckPolicy.ALL and cc.replay_policy is ReplayPolicy.ORIGINAL
    assert cc.priority_policy is PriorityPolicy.OVERFLOW


# ---------------------------------------------------------------------------------
# consumers


def test_consumer_info_reads_and_round_trips():
    ci = ConsumerInfo.from_json(consumer_info_json())
    c = ci.config
    assert ci.stream_name == "ORDERS" and ci.name == "worker"
    assert c.durable_name == "worker" and c.deliver_policy is DeliverPolicy.BY_START_TIME
    assert c.opt_start_time == datetime(2024, 1, 1, 0, 0, 0, 999999, UTC) and c.opt_start_time.nanosecond == 999
    assert c.ack_wait == 30.0 and c.backoff == [1.0, 5.0, 0.5] and c.max_expires == 60.0
    assert c.inactive_threshold == 5.0 and c.priority_timeout == 120.0
    assert c.priority_policy is PriorityPolicy.PINNED and c.priority_groups == ["jobs"]
    assert c.pause_until == datetime(2030, 1, 1, tzinfo=UTC)
    assert ci.delivered.consumer_seq == 10 and ci.delivered.stream_seq == 12
    assert ci.delivered.last_active.nanosecond == 1
    assert ci.ack_floor.last_active is None
    assert ci.num_pending == 2**64 - 1
    assert ci.paused is True and ci.pause_remaining == 3600.0
    assert ci.priority_groups[0].pinned_client_id == "abc"
    assert ci.created.nanosecond == 123 and ci.created.microsecond == 0

    again = ConsumerInfo.from_json(orjson.loads(orjson.dumps(ci.to_json_dict())))
    assert again == ci
    # the exact start time goes back to the server (updates compare it)
    assert c.to_json_dict()["opt_start_time"] == "2024-01-01T00:00:00.999999999Z"
    assert c.to_json_dict()["backoff"] == [1000000000, 5000000000, 500000000]


def test_consumer_config_defaults_and_minimal_json():
    cc = ConsumerConfig()
    assert cc.ack_policy is AckPolicy.EXPLICIT and cc.deliver_policy is DeliverPolicy.ALL
    assert cc.to_json_dict() == {"ack_policy": "explicit"}
    assert ConsumerConfig(durable_name="d", ack_policy=AckPolicy.NONE).to_json_dict() == {
        "durable_name": "d", "ack_policy": "none"}
    d = ConsumerConfig(name="n", filter_subject="a.b", deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
                       opt_start_seq=5, ack_wait=2.5, max_deliver=3, idle_heartbeat=timedelta(milliseconds=500),
                       max_waiting=10, inactive_threshold=60, priority_policy=PriorityPolicy.NONE).to_json_dict()
    assert d == {"name": "n", "deliver_policy": "by_start_sequence", "opt_start_seq": 5, "ack_policy": "explicit",
                 "ack_wait": 2500000000, "max_deliver": 3, "filter_subject": "a.b", "max_waiting": 10,
                 "idle_heartbeat": 500000000, "inactive_threshold": 60000000000}


def test_consumer_config_fields():
    names = ConsumerConfig.__dataclass_fields__
    for prop in ("name", "durable_name", "description", "deliver_policy", "opt_start_seq", "opt_start_time",
                 "ack_policy", "ack_wait", "max_deliver", "backoff", "filter_subject", "filter_subjects",
                 "replay_policy", "rate_limit_bps", "sample_freq", "max_waiting", "max_ack_pending",
                 "flow_control", "idle_heartbeat", "headers_only", "max_batch", "max_expires", "max_bytes",
                 "inactive_threshold", "num_replicas", "mem_storage", "metadata", "deliver_subject",
                 "deliver_group", "pause_until", "priority_policy", "priority_groups", "priority_timeout"):
        assert prop in names, prop


# ---------------------------------------------------------------------------------
# account info


def test_account_info():
    ai = AccountInfo.from_json(account_info_json())
    assert ai.memory == 1024 and ai.storage == 172 and ai.reserved_storage == 10
    assert ai.streams == 3 and ai.consumers == 2 and ai.domain == "hub"
    assert ai.limits.max_memory == -1 and ai.limits.max_bytes_required is False
    assert ai.api.level == 1 and ai.api.total == 7 and ai.api.errors == 1
    assert isinstance(ai.tiers["R1"], Tier) and ai.tiers["R1"].limits.max_consumers == 8
    assert ai.tiers["R1"].limits.max_ack_pending == -1  # absent: the default
    assert ai._extra == {"type": "io.nats.jetstream.api.v1.account_info_response"}
    assert AccountInfo.from_json(ai.to_json_dict()) == ai


# ---------------------------------------------------------------------------------
# pub acks


@pytest.mark.parametrize("raw, expected", [
    (b'{"stream":"ORDERS","seq":1}', PubAck("ORDERS", 1)),
    (b'{"stream":"ORDERS","seq":1,"duplicate":true}', PubAck("ORDERS", 1, duplicate=True)),
    (b'{"stream":"ORDERS","seq":7,"domain":"hub"}', PubAck("ORDERS", 7, domain="hub")),
    (b'{"stream":"ORDERS","seq":7,"domain":""}', PubAck("ORDERS", 7)),
    (b'{"stream":"B","seq":9,"batch":"b1","count":3}', PubAck("B", 9, batch="b1", count=3)),
    (b'{"stream":"C","seq":2,"val":"12"}', PubAck("C", 2, val="12")),
])
def test_pub_ack_fast_and_generic_paths_agree(raw, expected):
    fast = PubAck.from_json_bytes(raw)
    slow = PubAck.from_json(raw)
    assert fast == expected == slow
    assert fast.domain is None or fast.domain == "hub"
    assert type(fast.duplicate) is bool


def test_pub_ack_defaults_and_extras():
    ack = PubAck.from_json_bytes(b'{"stream":"S","seq":3,"new_thing":1}')
    assert ack.duplicate is False and ack.domain is None and ack._extra == {"new_thing": 1}
    assert ack.to_json_dict() == {"stream": "S", "seq": 3, "duplicate": False, "new_thing": 1}


def test_pub_ack_error_raises_typed():
    with pytest.raises(WrongLastSequenceError) as ei:
        PubAck.from_json_bytes(b'{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 3"}}')
    assert ei.value.err_code == 10071
    with pytest.raises(APIError):
        PubAck.from_json_bytes(b'{"error":{"code":500,"description":"boom"}}')


def test_api_error_helpers():
    with pytest.raises(StreamNotFoundError):
        loads_api(b'{"type":"x","error":{"code":404,"err_code":10059,"description":"stream not found"}}')
    assert loads_api(b'{"a":1}') == {"a": 1}
    assert check_api_error({"a": 1}) == {"a": 1}


# ---------------------------------------------------------------------------------
# raw stream messages


def test_raw_stream_msg_without_headers():
    m = RawStreamMsg.from_json({"message": {"subject": "orders.1", "seq": 5, "data": "aGVsbG8=",
                                            "time": "2024-01-02T03:04:05.000000500Z"}})
    assert m.subject == "orders.1" and m.seq == 5 and m.sequence == 5 and m.data == b"hello"
    assert m.headers is None
    assert m.time == datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC) and m.time.nanosecond == 500
    assert m.to_json_dict() == {"subject": "orders.1", "seq": 5, "data": "aGVsbG8=",
                                "time": "2024-01-02T03:04:05.000000500Z"}
    empty = RawStreamMsg.from_json({"subject": "a", "seq": 1, "time": "2024-01-02T03:04:05Z"})
    assert empty.data == b""


def test_raw_stream_msg_with_headers():
    hdr = b"NATS/1.0\r\nNats-Msg-Id: x1\r\nFoo: bar\r\nFoo: baz\r\n\r\n"
    raw = {"subject": "orders.1", "seq": 1, "hdrs": base64.b64encode(hdr).decode(),
           "data": base64.b64encode(b"\x00\xff binary").decode(), "time": "2024-01-02T03:04:05.201874963Z"}
    m = RawStreamMsg.from_json({"type": "io.nats.jetstream.api.v1.stream_msg_get_response", "message": raw})
    assert m.data == b"\x00\xff binary"
    assert m.headers["Nats-Msg-Id"] == "x1"
    assert m.headers.get_all("Foo") == ["bar", "baz"]
    assert RawStreamMsg.from_json(m.to_json_dict()) == m


# ---------------------------------------------------------------------------------
# durations and times


@pytest.mark.parametrize("seconds, ns", [
    (0, 0), (0.0, 0), (1, 1_000_000_000), (0.5, 500_000_000), (0.1, 100_000_000), (0.001, 1_000_000),
    (1.1, 1_100_000_000), (2.5, 2_500_000_000), (30.0, 30_000_000_000), (120, 120_000_000_000),
    (0.000000001, 1), (0.25, 250_000_000), (86400 * 365, 86400 * 365 * 1_000_000_000),
    (1e-6, 1000), (5.123456789, 5_123_456_789), (-1e-9, -1),
])
def test_durations_exact(seconds, ns):
    assert seconds_to_ns(seconds) == ns
    assert ns_to_seconds(ns) == pytest.approx(seconds, abs=0) or ns_to_seconds(ns) == float(seconds)
    assert seconds_to_ns(ns_to_seconds(ns)) == ns


def test_duration_from_timedelta_and_bad_types():
    assert seconds_to_ns(timedelta(minutes=2)) == 120_000_000_000
    assert seconds_to_ns(timedelta(microseconds=7)) == 7000
    with pytest.raises(TypeError):
        seconds_to_ns("5")
    with pytest.raises(TypeError):
        seconds_to_ns(True)


@pytest.mark.parametrize("text, expected, ns", [
    ("2024-01-02T03:04:05.123456789Z", datetime(2024, 1, 2, 3, 4, 5, 123456, UTC), 789),
    ("2024-01-02T03:04:05.12345678Z", datetime(2024, 1, 2, 3, 4, 5, 123456, UTC), 780),
    ("2024-01-02T03:04:05.1Z", datetime(2024, 1, 2, 3, 4, 5, 100000, UTC), 0),
    ("2024-01-02T03:04:05Z", datetime(2024, 1, 2, 3, 4, 5, 0, UTC), 0),
    ("2024-01-02T03:04:05.123456Z", datetime(2024, 1, 2, 3, 4, 5, 123456, UTC), 0),
    ("2024-01-02T03:04:05.000000001+02:00", datetime(2024, 1, 2, 1, 4, 5, 0, UTC), 1),
    ("2024-01-02T03:04:05-05:30", datetime(2024, 1, 2, 8, 34, 5, 0, UTC), 0),
    ("2024-01-02T03:04:05.5+00:00", datetime(2024, 1, 2, 3, 4, 5, 500000, UTC), 0),
    ("2024-01-02 03:04:05.25Z", datetime(2024, 1, 2, 3, 4, 5, 250000, UTC), 0),
])
def test_parse_time(text, expected, ns):
    t = parse_time(text)
    assert t == expected and t.tzinfo is not None
    assert getattr(t, "nanosecond", 0) == ns


def test_parse_time_offsets_are_kept_and_zero_time_is_none():
    t = parse_time("2024-01-02T03:04:05+02:00")
    assert t.utcoffset() == timedelta(hours=2)
    assert parse_time("0001-01-01T00:00:00Z") is None
    assert parse_time("") is None and parse_time(None) is None
    with pytest.raises(ValueError):
        parse_time("yesterday")


def test_format_time():
    assert format_time(datetime(2024, 1, 2, 3, 4, 5, 123456, UTC)) == "2024-01-02T03:04:05.123456000Z"
    assert format_time(parse_time("2024-01-02T03:04:05.123456789Z")) == "2024-01-02T03:04:05.123456789Z"
    assert format_time(datetime(2024, 1, 2, 5, 4, 5, tzinfo=timezone(timedelta(hours=2)))) == \
        "2024-01-02T03:04:05.000000000Z"
    assert format_time(datetime(2024, 1, 2, 3, 4, 5)) == "2024-01-02T03:04:05.000000000Z"  # naive: UTC
    nano = parse_time("2024-01-02T05:04:05.000000007+02:00")
    assert format_time(nano) == "2024-01-02T03:04:05.000000007Z"


def test_nano_datetime_behaves_like_datetime():
    t = parse_time("2024-01-02T03:04:05.123456789Z")
    assert isinstance(t, datetime) and isinstance(t, NanoDatetime)
    assert t == datetime(2024, 1, 2, 3, 4, 5, 123456, UTC)
    assert repr(t) == repr(datetime(2024, 1, 2, 3, 4, 5, 123456, UTC))
    assert t.isoformat() == "2024-01-02T03:04:05.123456789+00:00"
    assert pickle.loads(pickle.dumps(t)).nanosecond == 789
    assert copy.deepcopy(t).nanosecond == 789
    assert datetime_to_ns(t) == 1704164645123456789
    assert datetime_to_ns(datetime(1970, 1, 1, tzinfo=UTC)) == 0
    assert (t + timedelta(seconds=1)) == datetime(2024, 1, 2, 3, 4, 6, 123456, UTC)


# ---------------------------------------------------------------------------------
# config_from_kwargs


def test_config_from_kwargs():
    c = config_from_kwargs(StreamConfig, name="S", subjects=["a"])
    assert c == StreamConfig(name="S", subjects=["a"])
    base = StreamConfig(name="S", subjects=["a"], max_msgs=5)
    c2 = config_from_kwargs(StreamConfig, base, max_msgs=10, storage="memory")
    assert c2.max_msgs == 10 and c2.storage is StorageType.MEMORY and c2.subjects == ["a"]
    assert base.max_msgs == 5 and base.storage is StorageType.FILE  # caller's copy untouched
    c2.subjects.append("b")
    assert base.subjects == ["a"]
    assert config_from_kwargs(StreamConfig, base) == base and config_from_kwargs(StreamConfig, base) is not base
    assert config_from_kwargs(StreamConfig, {"name": "D"}, max_age=3) == StreamConfig(name="D", max_age=3)
    with pytest.raises(TypeError, match="'max_msg'"):
        config_from_kwargs(StreamConfig, name="S", max_msg=3)
    with pytest.raises(TypeError, match="valid fields"):
        config_from_kwargs(ConsumerConfig, None, durable="x")
    with pytest.raises(TypeError):
        config_from_kwargs(StreamConfig, ConsumerConfig())


def test_as_dict_and_to_json():
    c = ConsumerConfig(durable_name="d")
    assert c.as_dict() == c.to_json_dict()
    assert orjson.loads(c.to_json()) == c.to_json_dict()


# ---------------------------------------------------------------------------------
# properties

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=-10**15, max_value=10**15))
def test_duration_ns_round_trip_property(ns):
    assert seconds_to_ns(ns_to_seconds(ns)) == ns


@settings(max_examples=100, deadline=None)
@given(st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)),
       st.integers(min_value=0, max_value=999))
def test_time_round_trip_property(dt, ns):
    t = NanoDatetime.from_datetime(dt, ns)
    text = format_time(t)
    back = parse_time(text)
    assert back == dt and getattr(back, "nanosecond", 0) == ns
    assert format_time(back) == text


@settings(max_examples=30, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=8).filter(
    lambda k: k not in StreamConfig.__dataclass_fields__), st.integers() | st.text() | st.booleans(), max_size=4))
def test_unknown_fields_round_trip_property(extra):
    raw = {"name": "S", "subjects": ["a.>"], "max_msgs": 5, **extra}
    cfg = StreamConfig.from_json(raw)
    assert cfg.to_json_dict() == raw


# ---------------------------------------------------------------------------------
# JSON that does not fit: a typed error naming the field


@pytest.mark.parametrize(("doc", "path"), [
    ({"config": {"name": "S", "subjects": "a.>"}}, "config.subjects"),
    ({"config": {"name": "S", "max_age": "1h"}}, "config.max_age"),
    ({"config": {"name": "S", "duplicate_window": [1]}}, "config.duplicate_window"),
    ({"config": "S"}, "config"),
    ({"created": 12}, "created"),
    ({"created": "yesterday"}, "created"),
    ({"state": {"messages": "many"}}, "state.messages"),
    ({"state": {"messages": 1.5}}, "state.messages"),
    ({"state": []}, "state"),
    ({"cluster": {"replicas": [{"name": "n", "current": "yes"}]}}, "cluster.replicas.current"),
])
def test_json_of_the_wrong_shape_names_the_field(doc, path):
    from jetwire.errors import InvalidJSONError, JetStreamError

    with pytest.raises(InvalidJSONError) as ei:
        StreamInfo.from_json({"config": {"name": "S"}, "created": "2026-01-01T00:00:00Z", **doc})
    err = ei.value
    assert isinstance(err, JetStreamError) and isinstance(err, ValueError)
    assert (err.model, err.path) == ("StreamInfo", path)
    assert f"StreamInfo.{path}:" in str(err)


def test_documents_that_are_not_objects_are_typed_errors():
    from jetwire.errors import InvalidJSONError

    for raw in (b"not json", b"[1]", "3", b""):
        with pytest.raises(InvalidJSONError):
            StreamInfo.from_json(raw)
    with pytest.raises(TypeError):  # a Python value of the wrong type is the caller's mistake
        StreamInfo.from_json([1])  # type: ignore[call-overload]
    # what fits is read as before: unknown keys kept, None for null, ints where floats go
    info = ConsumerInfo.from_json({"stream_name": "S", "name": "c", "created": "2026-01-01T00:00:00Z",
                                   "config": {"ack_wait": 30_000_000_000, "durable_name": None},
                                   "num_pending": 3, "newer": {"x": 1}})
    assert info.config.ack_wait == 30.0 and info.num_pending == 3 and info._extra == {"newer": {"x": 1}}


@pytest.mark.parametrize("raw", [b"ok", b"", b"[]", b'{"stream": "S"}', b'{"seq": 1}', b'{"stream": "", "seq": 1}',
                                 b'{"stream": 5, "seq": 1}', b'{"stream": "S", "seq": "1"}',
                                 b'{"stream": "S", "seq": 1.0}', b'{"stream": "S", "seq": true}'])
def test_a_publish_answer_that_is_no_ack_is_a_typed_error(raw):
    from jetwire.errors import InvalidJSONError

    with pytest.raises(InvalidJSONError, match="invalid JetStream publish ack"):
        PubAck.from_json_bytes(raw)


@pytest.mark.parametrize("error", ["boom", ["x"], {"code": "500", "err_code": [1], "description": 7},
                                   {"code": 404, "err_code": "10059", "description": "stream not found"}])
def test_an_error_value_of_any_shape_is_an_api_error(error):
    from jetwire.errors import api_error

    err = api_error(error, "STREAM.INFO.S")
    assert type(err) is APIError  # no err_code it can trust: the plain class
    assert err.code in (None, 404) and err.err_code is None and isinstance(err.description, str)
    with pytest.raises(APIError):
        PubAck.from_json_bytes(orjson.dumps({"error": error}))
