"""Templates and the drift comparison of ensure_stream/ensure_consumer (no server)."""
from __future__ import annotations

from datetime import UTC, datetime

import pytest

import jetwire
from jetwire.jetstream.ensure_core import (
    check_drift,
    consumer_config,
    consumer_drift,
    named_consumer_config,
    stream_config,
    stream_drift,
    update_config,
)

SC = jetwire.StreamConfig
CC = jetwire.ConsumerConfig
_META = {"_nats.level": "1", "_nats.req.level": "0", "_nats.ver": "2.12.0"}


def stored_stream(**wire) -> SC:
    """A stream config as the server hands it back for DEFAULT_STREAM + ``wire``."""
    base = {"name": "S", "subjects": ["s.>"], "retention": "limits", "max_consumers": -1, "max_msgs": -1,
            "max_bytes": -1, "max_age": 365 * 24 * 3600 * 10**9, "max_msgs_per_subject": -1,
            "max_msg_size": -1, "discard": "old", "storage": "file", "num_replicas": 1,
            "duplicate_window": 120 * 10**9, "compression": "none", "allow_direct": False,
            "mirror_direct": False, "sealed": False, "deny_delete": False, "deny_purge": False,
            "allow_rollup_hdrs": False, "consumer_limits": {}, "metadata": dict(_META)}
    base.update(wire)
    return SC.from_json(base)


def stored_consumer(**wire) -> CC:
    """A consumer config as the server hands it back for DEFAULT_CONSUMER + ``wire``."""
    base = {"name": "c", "durable_name": "c", "deliver_policy": "all", "ack_policy": "explicit",
            "ack_wait": 30 * 10**9, "max_deliver": -1, "replay_policy": "instant", "max_waiting": 512,
            "max_ack_pending": 1000, "num_replicas": 0, "metadata": dict(_META)}
    base.update(wire)
    return CC.from_json(base)


# --- templates -------------------------------------------------------------------------
def test_templates_have_jsm_defaults():
    s = jetwire.DEFAULT_STREAM
    assert s.retention == jetwire.RetentionPolicy.LIMITS and s.discard == jetwire.DiscardPolicy.OLD
    assert (s.max_consumers, s.max_msgs, s.max_msgs_per_subject, s.max_bytes, s.max_msg_size) == (-1,) * 5
    assert s.max_age == 365 * 24 * 3600.0
    assert s.num_replicas == 1 and s.no_ack is False and s.storage == jetwire.StorageType.FILE
    assert s.subjects is None and s.name is None
    assert jetwire.DEFAULT_WORK_QUEUE.retention == jetwire.RetentionPolicy.WORK_QUEUE
    assert jetwire.DEFAULT_WORK_QUEUE.max_age == s.max_age
    c = jetwire.DEFAULT_CONSUMER
    assert (c.deliver_policy, c.ack_policy, c.ack_wait, c.replay_policy) == (
        jetwire.DeliverPolicy.ALL, jetwire.AckPolicy.EXPLICIT, 30.0, jetwire.ReplayPolicy.INSTANT)
    assert c.sample_freq is None
    assert jetwire.SAMPLED_DEFAULT_CONSUMER.sample_freq == "100%"
    assert jetwire.SAMPLED_DEFAULT_CONSUMER.ack_wait == 30.0


def test_configs_from_templates_copy_and_check_overrides():
    cfg = stream_config("ORDERS", jetwire.DEFAULT_STREAM, {"subjects": ["o.>"], "max_msgs": 10})
    assert cfg.name == "ORDERS" and cfg.subjects == ["o.>"] and cfg.max_msgs == 10
    assert cfg.max_age == jetwire.DEFAULT_STREAM.max_age
    assert jetwire.DEFAULT_STREAM.name is None and jetwire.DEFAULT_STREAM.max_msgs == -1  # untouched
    assert stream_config("D", {"storage": "memory"}, {}).storage == jetwire.StorageType.MEMORY  # dict templates
    with pytest.raises(TypeError, match="max_msg"):
        stream_config("ORDERS", jetwire.DEFAULT_STREAM, {"max_msg": 1})
    with pytest.raises(TypeError):
        stream_config("ORDERS", None, {})
    with pytest.raises(TypeError):
        stream_config("ORDERS", jetwire.DEFAULT_CONSUMER, {})
    with pytest.raises(jetwire.InvalidStreamNameError):
        stream_config("A.B", jetwire.DEFAULT_STREAM, {})
    with pytest.raises(TypeError, match="ack_wiat"):
        consumer_config(jetwire.DEFAULT_CONSUMER, {"ack_wiat": 1})
    # a named consumer is durable unless the config names it
    assert named_consumer_config("w", jetwire.DEFAULT_CONSUMER, {}).durable_name == "w"
    named = named_consumer_config("w", jetwire.DEFAULT_CONSUMER, {"name": "w", "inactive_threshold": 60})
    assert named.durable_name is None and named.name == "w"
    with pytest.raises(ValueError):
        named_consumer_config("w", jetwire.DEFAULT_CONSUMER, {"durable_name": "other"})
    with pytest.raises(jetwire.InvalidConsumerNameError):
        named_consumer_config("a.b", jetwire.DEFAULT_CONSUMER, {})
    assert jetwire.DEFAULT_CONSUMER.durable_name is None


# --- streams ---------------------------------------------------------------------------
def test_stream_from_template_equals_what_the_server_stored():
    wanted = stream_config("S", jetwire.DEFAULT_STREAM, {"subjects": ["s.>"]})
    d = stream_drift(wanted, stored_stream())
    assert d.equal and d.changes == {} and d.fixed == []
    assert check_drift("stream", "S", d) is False
    # unset subjects are the server's choice (the name), so is the duplicate window
    assert stream_drift(stream_config("S", jetwire.DEFAULT_STREAM, {}), stored_stream(subjects=["S"])).equal
    assert stream_drift(wanted, stored_stream(duplicate_window=60 * 10**9)).equal
    # ... unless asked for
    d = stream_drift(stream_config("S", jetwire.DEFAULT_STREAM, {"subjects": ["s.>"], "duplicate_window": 30.0}),
                     stored_stream())
    assert d.fields == ["duplicate_window"] and d.fixed == []
    # the server's own metadata never counts; the user's does
    assert stream_drift(stream_config("S", jetwire.DEFAULT_STREAM, {"subjects": ["s.>"], "metadata": {"a": "1"}}),
                        stored_stream(metadata={**_META, "a": "1"})).equal
    d = stream_drift(wanted, stored_stream(metadata={**_META, "a": "1"}))
    assert d.fields == ["metadata"] and not d.fixed


def test_stream_updatable_differences():
    wanted = stream_config("S", jetwire.DEFAULT_STREAM, {"subjects": ["s.>", "t.>"], "max_msgs": 100,
                                                          "description": "orders"})
    d = stream_drift(wanted, stored_stream(max_age=0))
    assert d.fields == ["description", "subjects", "max_msgs", "max_age"]
    assert d.fixed == []
    assert d.changes["max_msgs"] == (-1, 100)
    assert d.changes["max_age"] == (0.0, 365 * 24 * 3600.0)
    assert check_drift("stream", "S", d) is True
    # limits <-> interest retention is allowed
    d = stream_drift(stream_config("S", jetwire.DEFAULT_STREAM, {"subjects": ["s.>"], "retention": "interest"}),
                     stored_stream())
    assert d.fields == ["retention"] and d.fixed == []


@pytest.mark.parametrize("stored, overrides, fixed", [
    ({"storage": "memory"}, {}, ["storage"]),
    ({}, {"storage": "memory"}, ["storage"]),
    ({"retention": "workqueue"}, {}, ["retention"]),
    ({}, {"retention": "workqueue"}, ["retention"]),
    ({"retention": "interest"}, {"retention": "workqueue"}, ["retention"]),
    ({"deny_delete": True}, {}, ["deny_delete"]),
    ({"deny_purge": True}, {}, ["deny_purge"]),
    ({"allow_msg_ttl": True}, {}, ["allow_msg_ttl"]),
    ({}, {"allow_msg_counter": True}, ["allow_msg_counter"]),
    ({"allow_msg_counter": True}, {}, ["allow_msg_counter"]),
    ({"allow_msg_schedules": True}, {}, ["allow_msg_schedules"]),
    ({"persist_mode": "async"}, {}, ["persist_mode"]),
    ({"mirror": {"name": "A"}, "subjects": None}, {"mirror": {"name": "B"}, "subjects": None}, ["mirror"]),
    ({"storage": "memory", "retention": "workqueue", "max_msgs": 5}, {"retention": "limits"},
     ["retention", "storage"]),
])
def test_stream_fields_that_cannot_be_updated(stored, overrides, fixed):
    wanted = stream_config("S", jetwire.DEFAULT_STREAM, {"subjects": ["s.>"], **overrides})
    d = stream_drift(wanted, stored_stream(**stored))
    assert d.fixed == fixed
    with pytest.raises(jetwire.ConfigDriftError) as e:
        check_drift("stream", "S", d)
    assert isinstance(e.value, jetwire.JetStreamError)
    assert e.value.fields == fixed and e.value.kind == "stream" and e.value.name == "S"
    assert set(fixed) <= set(e.value.changes)
    for f in fixed:
        assert f in str(e.value)


def test_stream_changes_the_server_allows():
    wanted = stream_config("S", jetwire.DEFAULT_STREAM, {"subjects": ["s.>"], "allow_msg_ttl": True,
                                                         "deny_delete": True, "sealed": False})
    d = stream_drift(wanted, stored_stream())
    assert d.fields == ["deny_delete", "allow_msg_ttl"] and d.fixed == []  # turning them on is allowed
    # promoting a mirror (removing it) is allowed
    d = stream_drift(stream_config("S", jetwire.DEFAULT_STREAM, {"subjects": ["s.>"]}),
                     stored_stream(mirror={"name": "A"}))
    assert d.fields == ["mirror"] and d.fixed == []


def test_stream_update_config_keeps_what_the_server_chose():
    stored = stored_stream(subjects=["S"], duplicate_window=60 * 10**9, future_field={"x": 1})
    wanted = stream_config("S", jetwire.DEFAULT_STREAM, {"max_msgs": 5})
    upd = update_config(wanted, stored)
    assert upd.subjects == ["S"] and upd.duplicate_window == 60.0 and upd.max_msgs == 5
    assert upd.to_json_dict()["future_field"] == {"x": 1}
    assert wanted.subjects is None and wanted.duplicate_window is None  # not changed
    assert stream_drift(wanted, SC.from_json({**stored.to_json_dict(), "max_msgs": 5})).equal


# --- consumers -------------------------------------------------------------------------
def test_consumer_from_template_equals_what_the_server_stored():
    wanted = named_consumer_config("c", jetwire.DEFAULT_CONSUMER, {})
    assert consumer_drift(wanted, stored_consumer()).equal
    sampled = named_consumer_config("c", jetwire.SAMPLED_DEFAULT_CONSUMER, {})
    assert consumer_drift(sampled, stored_consumer(sample_freq="100%")).equal
    d = consumer_drift(sampled, stored_consumer())
    assert d.fields == ["sample_freq"] and d.fixed == []
    # values the server fills in for unset fields are not differences
    plain = named_consumer_config("c", {}, {})
    assert consumer_drift(plain, stored_consumer(ack_wait=5 * 10**9, max_ack_pending=20, inactive_threshold=10**9,
                                                 pause_until="2099-01-01T00:00:00Z")).equal
    # an ack wait follows the first backoff, as on the server
    bo = named_consumer_config("c", jetwire.DEFAULT_CONSUMER, {"backoff": [1.0, 5.0], "max_deliver": 4})
    assert consumer_drift(bo, stored_consumer(ack_wait=10**9, backoff=[10**9, 5 * 10**9], max_deliver=4)).equal


def test_consumer_updatable_differences():
    wanted = named_consumer_config("c", jetwire.DEFAULT_CONSUMER, {"max_deliver": 5, "description": "x",
                                                                   "filter_subject": "s.a", "max_ack_pending": 10})
    d = consumer_drift(wanted, stored_consumer())
    assert d.fields == ["description", "max_deliver", "filter_subject", "max_ack_pending"]
    assert d.fixed == [] and d.changes["max_deliver"] == (-1, 5)
    # push to another push subject is an update
    d = consumer_drift(named_consumer_config("c", jetwire.DEFAULT_CONSUMER, {"deliver_subject": "b"}),
                       stored_consumer(deliver_subject="a", max_waiting=None))
    assert d.fields == ["deliver_subject"] and d.fixed == []


@pytest.mark.parametrize("stored, overrides, fixed", [
    ({}, {"deliver_policy": "new"}, ["deliver_policy"]),
    ({}, {"ack_policy": "none"}, ["ack_policy"]),
    ({}, {"replay_policy": "original"}, ["replay_policy"]),
    ({}, {"deliver_policy": "by_start_sequence", "opt_start_seq": 5}, ["deliver_policy", "opt_start_seq"]),
    ({"deliver_policy": "by_start_time", "opt_start_time": "2024-01-01T00:00:00Z"},
     {"deliver_policy": "by_start_time", "opt_start_time": datetime(2025, 1, 1, tzinfo=UTC)},
     ["opt_start_time"]),
    ({}, {"mem_storage": True}, ["mem_storage"]),
    ({}, {"max_waiting": 10}, ["max_waiting"]),
    ({}, {"deliver_subject": "push.here"}, ["deliver_subject"]),
    ({"deliver_subject": "push.here", "max_waiting": None}, {}, ["deliver_subject"]),
    ({"deliver_subject": "p", "idle_heartbeat": 5 * 10**9, "flow_control": True, "max_waiting": None},
     {"deliver_subject": "p"}, ["flow_control", "idle_heartbeat"]),
    ({"durable_name": None}, {}, ["durable_name"]),
])
def test_consumer_fields_that_cannot_be_updated(stored, overrides, fixed):
    d = consumer_drift(named_consumer_config("c", jetwire.DEFAULT_CONSUMER, overrides), stored_consumer(**stored))
    assert d.fixed == fixed
    with pytest.raises(jetwire.ConfigDriftError) as e:
        check_drift("consumer", "c", d)
    assert e.value.fields == fixed and e.value.kind == "consumer"


def test_consumer_update_config_keeps_what_the_server_chose():
    stored = stored_consumer(max_waiting=100, max_ack_pending=20)
    wanted = named_consumer_config("c", {}, {"max_deliver": 3})
    upd = update_config(wanted, stored)
    assert (upd.name, upd.durable_name, upd.max_waiting, upd.max_ack_pending, upd.max_deliver) == ("c", "c", 100, 20, 3)
    assert upd.ack_wait == 30.0


def test_drift_needs_matching_types():
    with pytest.raises(TypeError):
        stream_drift(jetwire.DEFAULT_CONSUMER, stored_stream())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        update_config(jetwire.DEFAULT_STREAM, stored_consumer())


# --- is_pull, is_push, is_durable, is_sampled --------------------------------------------
def test_consumer_kind_helpers():
    pull = CC(durable_name="d")
    push = CC(deliver_subject="x", sample_freq="50%")
    assert pull.is_pull and not pull.is_push and pull.is_durable and not pull.is_sampled
    assert push.is_push and not push.is_pull and not push.is_durable and push.is_sampled
    # callable too (jsm.go's IsPullMode() style), giving plain bools
    assert pull.is_pull() is True and pull.is_push() is False
    assert pull.is_pull == True and push.is_pull == False  # noqa: E712
    assert repr(push.is_durable) == "False"
    info = jetwire.ConsumerInfo(name="d", config=push)
    assert info.is_push and info.is_sampled() is True and info.is_durable() is False
    assert jetwire.ConsumerInfo.from_json({"name": "x", "config": {"durable_name": "x"}}).is_durable


@pytest.mark.parametrize("asks", [{"allow_msg_ttl": True, "subject_delete_marker_ttl": 5.0},
                                  {"allow_msg_schedules": True}])
def test_rollup_headers_the_server_turns_on_are_no_drift(asks):
    wire = {"allow_msg_ttl": True, "subject_delete_marker_ttl": 5 * 10**9} if "subject_delete_marker_ttl" in asks \
        else {"allow_msg_schedules": True}
    stored = stored_stream(allow_rollup_hdrs=True, **wire)  # what the server made of it
    wanted = stream_config("S", jetwire.DEFAULT_STREAM, {"subjects": ["s.>"], **asks})
    assert stream_drift(wanted, stored).equal
    assert update_config(wanted, stored).allow_rollup_hdrs is True  # an update keeps it on
    # without either ask, rollup headers turned off by hand are a change
    plain = stream_config("S", jetwire.DEFAULT_STREAM, {"subjects": ["s.>"]})
    assert not stream_drift(plain, stored_stream(allow_rollup_hdrs=True)).equal
