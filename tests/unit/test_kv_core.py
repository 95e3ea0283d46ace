"""The sans-IO KV / object-store pieces: the push consumer state watchers run on (order,
flow control, the initial-values marker), entry decoding, purge plans, digests."""
from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

import pytest

from jetwire import DigestMismatchError, Headers, KeyDeletedError, KeyValueEntry, KeyValueOp, ObjectInfo
from jetwire.jetstream.kv_core import (
    entry_from_delivery,
    kv_filter_subjects,
    kv_operation,
    purge_deletes_plan,
    raise_if_deleted,
)
from jetwire.jetstream.obj_core import DigestCheck, as_object_meta, chunk_size_of, decode_digest, meta_payload
from jetwire.jetstream.push import (
    PUSH_DATA,
    PUSH_FLOW_CONTROL,
    PUSH_GAP,
    PUSH_HEARTBEAT,
    PUSH_IGNORE,
    PUSH_STATUS,
    PushState,
    push_consumer_config,
)
from jetwire.msg import Msg


def ack(sseq: int, cseq: int, pending: int, ts: int = 1_700_000_000_000_000_000) -> str:
    return f"$JS.ACK.KV_b.cons.1.{sseq}.{cseq}.{ts}.{pending}"


def feed(st: PushState, sseqs, pending_left) -> list:
    """Deliver messages in order; returns where the marker became due (indexes)."""
    marks = []
    for i, (s, p) in enumerate(zip(sseqs, pending_left, strict=False)):
        kind, _ = st.on_data(ack(s, st.cursor.consumer_seq + 1, p))
        assert kind == PUSH_DATA
        if st.take_marker():
            marks.append(i)
    return marks


def test_marker_empty_consumer():
    st = PushState()
    st.new_consumer()
    assert st.on_created(0, 0) is True
    assert st.take_marker() is True
    assert st.take_marker() is False
    assert feed(st, [5, 6], [0, 0]) == []  # live updates never bring a second marker


def test_marker_on_last_pending_zero():
    st = PushState()
    st.new_consumer()
    assert st.on_created(3, 0) is False
    assert feed(st, [1, 2, 3], [2, 1, 0]) == [2]
    assert feed(st, [4], [0]) == []


def test_marker_when_messages_arrive_before_the_create_answer():
    st = PushState()
    st.new_consumer()
    # 2 of 3 arrived before the answer, which counts them as delivered
    assert feed(st, [1, 2], [1, 0]) == [1]  # pending 0 already says done
    st2 = PushState()
    st2.new_consumer()
    assert feed(st2, [1, 2], [5, 5]) == []  # writes during delivery keep pending up
    assert st2.on_created(1, 2) is False  # 1 pending + 2 delivered = 3 initial
    assert feed(st2, [3], [4]) == [0]  # the 3rd is the last initial one
    # all arrived before the answer
    st3 = PushState()
    st3.new_consumer()
    assert feed(st3, [1, 2], [7, 7]) == []
    assert st3.on_created(0, 2) is True


def test_marker_counts_total_even_if_pending_never_reaches_zero():
    st = PushState()
    st.new_consumer()
    st.on_created(4, 0)
    assert feed(st, [1, 2, 3, 4, 5, 6], [9, 9, 9, 9, 9, 9]) == [3]


def test_updates_only_marker_first():
    st = PushState(initial=False)
    assert st.take_marker() is True
    st.new_consumer()
    assert st.on_created(0, 0) is False
    assert feed(st, [10], [0]) == []


def test_order_gaps_and_duplicates():
    st = PushState()
    st.new_consumer()
    assert st.on_data(ack(1, 1, 5))[0] == PUSH_DATA
    assert st.on_data(ack(2, 3, 5))[0] == PUSH_GAP  # consumer seq 2 went missing
    assert st.on_data(ack(1, 1, 5))[0] == PUSH_IGNORE  # a duplicate
    assert st.on_data(None)[0] == PUSH_IGNORE
    assert st.cursor.stream_seq == 1
    st.new_consumer()  # recreated at stream seq 2: consumer sequences restart
    assert st.cursor.consumer_seq == 0
    assert st.on_data(ack(2, 1, 0))[0] == PUSH_DATA
    cfg = push_consumer_config("_INBOX.x", st.cursor, ["$KV.b.>"], "last_per_subject")
    assert cfg["deliver_policy"] == "by_start_sequence" and cfg["opt_start_seq"] == 3
    assert cfg["ack_policy"] == "none" and cfg["flow_control"] and cfg["idle_heartbeat"] == 5_000_000_000
    assert cfg["deliver_subject"] == "_INBOX.x" and cfg["filter_subject"] == "$KV.b.>"


def test_first_consumer_config():
    st = PushState()
    cfg = push_consumer_config("_INBOX.y", st.cursor, ["$KV.b.a", "$KV.b.c"], "last_per_subject",
                               headers_only=True, name="n1")
    assert cfg["deliver_policy"] == "last_per_subject" and cfg["headers_only"] is True
    assert cfg["filter_subjects"] == ["$KV.b.a", "$KV.b.c"] and cfg["name"] == "n1"
    cfg = push_consumer_config("_INBOX.y", st.cursor, ["$KV.b.>"], "by_start_sequence", opt_start_seq=7)
    assert cfg["opt_start_seq"] == 7


def test_flow_control_waits_for_the_reader():
    st = PushState()
    st.new_consumer()
    for i in range(1, 4):
        st.on_data(ack(i, i, 10))
    fc = Headers()
    fc.status, fc.description = "100", "FlowControl Request"
    assert st.on_status(fc, "$JS.FC.x") == PUSH_FLOW_CONTROL
    assert st.fc_ready() is None  # 3 messages not taken yet
    assert st.consumed() is None
    assert st.consumed() is None
    assert st.consumed() == "$JS.FC.x"
    assert st.consumed() is None
    # a request that arrives when the reader is already caught up is answered at once
    assert st.on_status(fc, "$JS.FC.y") == PUSH_FLOW_CONTROL
    assert st.fc_ready() == "$JS.FC.y"
    assert st.fc_answered == 2


def test_heartbeats_and_other_statuses():
    st = PushState()
    st.new_consumer()
    st.on_data(ack(1, 1, 0))
    hb = Headers({"Nats-Last-Consumer": "1", "Nats-Last-Stream": "1"})
    hb.status, hb.description = "100", "Idle Heartbeat"
    assert st.on_status(hb, None) == PUSH_HEARTBEAT
    hb["Nats-Last-Consumer"] = "3"
    assert st.on_status(hb, None) == PUSH_GAP
    stalled = Headers({"Nats-Consumer-Stalled": "$JS.FC.z"})
    assert st.stalled_reply(stalled) == "$JS.FC.z"
    gone = Headers()
    gone.status, gone.description = "409", "Consumer Deleted"
    assert st.on_status(gone, None) == PUSH_STATUS


def _idle(consumer_seq: int, stream_seq: int, **extra: str) -> Headers:
    hb = Headers({"Nats-Last-Consumer": str(consumer_seq), "Nats-Last-Stream": str(stream_seq), **extra})
    hb.status, hb.description = "100", "Idle Heartbeat"
    return hb


def test_an_idle_heartbeat_completes_initial_values_that_went_before_delivery():
    """3 were pending at creation, 1 came, 2 expired (a TTL, a purge) before delivery:
    the consumer idles, so the initial values are complete (a watcher would wait for ever)."""
    st = PushState()
    st.new_consumer()
    assert st.on_created(3, 0) is False
    assert feed(st, [1], [2]) == []
    assert st.on_status(_idle(1, 1, **{"Nats-Consumer-Stalled": "$JS.FC.z"}), None) == PUSH_HEARTBEAT
    assert st.take_marker() is False  # stalled by flow control: more is coming
    assert st.on_status(_idle(1, 1), None) == PUSH_HEARTBEAT
    assert st.take_marker() is True and st.take_marker() is False
    assert feed(st, [7], [0]) == []  # live updates never bring a second marker


def test_an_idle_heartbeat_before_the_create_answer_decides_nothing():
    st = PushState()
    st.new_consumer()
    assert st.on_status(_idle(0, 0), None) == PUSH_HEARTBEAT
    assert st.take_marker() is False
    assert st.on_created(2, 0) is False


def test_operations_and_entries():
    assert kv_operation(None) == KeyValueOp.PUT
    assert kv_operation(Headers({"KV-Operation": "DEL"})) == KeyValueOp.DEL
    assert kv_operation(Headers({"KV-Operation": "PURGE", "Nats-Rollup": "sub"})) == KeyValueOp.PURGE
    assert kv_operation(Headers({"Nats-Marker-Reason": "MaxAge"})) == KeyValueOp.PURGE
    assert kv_operation(Headers({"Nats-Marker-Reason": "Purge"})) == KeyValueOp.PURGE
    assert kv_operation(Headers({"Nats-Marker-Reason": "Remove"})) == KeyValueOp.DEL
    assert kv_operation(Headers({"Other": "x"})) == KeyValueOp.PUT
    msg = Msg("$KV.b.a.b", b"val", ack(12, 3, 4, ts=1_700_000_000_123_456_789), headers=None)
    e = entry_from_delivery("b", len("$KV.b."), msg)
    assert (e.bucket, e.key, e.value, e.revision, e.delta, e.operation) == ("b", "a.b", b"val", 12, 4, KeyValueOp.PUT)
    assert e.created == datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=UTC)
    assert raise_if_deleted(e) is e
    d = KeyValueEntry("b", "k", b"", 5, None, 0, KeyValueOp.DEL)
    with pytest.raises(KeyDeletedError) as ei:
        raise_if_deleted(d)
    assert ei.value.entry is d
    assert kv_filter_subjects("$KV.b.", None) == ["$KV.b.>"]
    assert kv_filter_subjects("$KV.b.", ["a", "c.*"]) == ["$KV.b.a", "$KV.b.c.*"]


def test_purge_deletes_plan():
    now = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)
    young = KeyValueEntry("b", "y", b"", 1, now - timedelta(minutes=5), 0, KeyValueOp.DEL)
    old = KeyValueEntry("b", "o", b"", 2, now - timedelta(hours=2), 0, KeyValueOp.PURGE)
    assert purge_deletes_plan([young, old], "$KV.b.", now, None) == [("$KV.b.y", 1), ("$KV.b.o", 0)]
    assert purge_deletes_plan([young, old], "$KV.b.", now, 60.0) == [("$KV.b.y", 0), ("$KV.b.o", 0)]
    assert purge_deletes_plan([young, old], "$KV.b.", now, -1) == [("$KV.b.y", 0), ("$KV.b.o", 0)]


def test_object_helpers():
    meta = as_object_meta("name")
    assert chunk_size_of(meta) == 128 * 1024 and meta.max_chunk_size == 128 * 1024
    data = b"hello object"
    check = DigestCheck()
    check.update(data[:5])
    check.update(data[5:])
    info = ObjectInfo(name="n", bucket="b", nuid="x", size=len(data), chunks=1, digest=check.digest())
    check.verify(info)
    assert decode_digest(info.digest) == hashlib.sha256(data).digest()
    info.size += 1
    with pytest.raises(DigestMismatchError):
        check.verify(info)
    info.size -= 1
    info.digest = DigestCheck().digest()
    with pytest.raises(DigestMismatchError):
        check.verify(info)
    with pytest.raises(DigestMismatchError):
        decode_digest("MD5=abc")
    payload = meta_payload(ObjectInfo(name="n", bucket="b", nuid="x", size=1, chunks=1, digest="SHA-256=x"))
    assert b'"mtime":"0001-01-01T00:00:00Z"' in payload and b'"name":"n"' in payload


def test_plain_push_state_takes_everything_in_arrival_order():
    """A plain (not ordered) push subscription: no sequence checks, no marker, but the
    same flow control and heartbeats."""
    st = PushState(ordered=False, marker=False)
    assert st.take_marker() is False
    assert st.on_data(ack(9, 5, 0))[0] == PUSH_DATA
    assert st.on_data(ack(3, 2, 0))[0] == PUSH_DATA  # redeliveries are data too
    assert st.on_data(None)[0] == PUSH_DATA
    hb = Headers({"Nats-Last-Consumer": "40"})
    hb.status, hb.description = "100", "Idle Heartbeat"
    assert st.on_status(hb, None) == PUSH_HEARTBEAT  # no gaps without order
    fc = Headers()
    fc.status, fc.description = "100", "FlowControl Request"
    assert st.on_status(fc, "$JS.FC.p") == PUSH_FLOW_CONTROL
    assert st.consumed(2) is None
    assert st.consumed() == "$JS.FC.p"
    assert st.on_created(10, 0) is False and st.take_marker() is False


def test_ordered_push_state_without_marker():
    st = PushState(marker=False)
    st.new_consumer()
    assert st.on_created(0, 0) is False
    assert feed(st, [1, 2], [1, 0]) == []
    assert st.on_data(ack(4, 4, 0))[0] == PUSH_GAP
