"""Sans-IO consumer state (jetwire.jetstream.pull): options, pull requests, status
classification, pending accounting, heartbeat monitoring, ordered-consumer bookkeeping."""
from __future__ import annotations

import orjson
import pytest

from jetwire import Headers, Msg
from jetwire.errors import (
    BadRequestError,
    ConsumerDeletedError,
    ConsumerGoneError,
    ConsumerIsPushBasedError,
    ConsumerNotFoundError,
    InvalidOptionError,
    JetStreamNotEnabledError,
    NoRespondersError,
    PinIdMismatchError,
    PullStatusError,
    StreamNotFoundError,
)
from jetwire.jetstream import pull
from jetwire.jetstream.pull import (
    S_END,
    S_FLOW_CONTROL,
    S_HEARTBEAT,
    S_NO_RESPONDERS,
    S_PENDING,
    S_PIN_RESET,
    S_RESET,
    S_TERMINAL,
    S_USER,
    S_WARN,
    HeartbeatMonitor,
    OrderedCursor,
    PullState,
    classify_status,
    consume_options,
    fetch_heartbeat,
    gone_error,
    msg_size,
    ordered_config,
    parse_pending,
    priority_fields,
    pull_request,
    status_error,
)


# -- options ------------------------------------------------------------------------
def test_consume_defaults():
    o = consume_options()
    assert (o.max_messages, o.max_bytes, o.expires, o.heartbeat) == (500, 0, 30.0, 15.0)
    assert (o.threshold_messages, o.threshold_bytes, o.stop_after) == (250, 0, 0)


def test_consume_heartbeat_is_half_expires_capped_at_30s():
    assert consume_options(expires=2).heartbeat == 1.0
    assert consume_options(expires=1).heartbeat == 0.5
    assert consume_options(expires=120).heartbeat == 30.0
    assert consume_options(expires=120, heartbeat=10).heartbeat == 10.0


def test_consume_ordered_heartbeat_default():
    assert consume_options(ordered=True).heartbeat == 5.0
    assert consume_options(expires=4, ordered=True).heartbeat == 2.0


@pytest.mark.parametrize("kw", [
    {"expires": 0.5},
    {"heartbeat": 0.1},
    {"heartbeat": 31},
    {"expires": 2, "heartbeat": 1.5},
    {"max_messages": 10, "max_bytes": 100},
    {"max_messages": 0},
    {"max_bytes": -1},
    {"stop_after": -1},
])
def test_consume_bad_options(kw):
    with pytest.raises(ValueError):
        consume_options(**kw)


def test_consume_bytes_only_uses_big_batch():
    o = consume_options(max_bytes=1000)
    assert o.max_messages == pull.BATCH_BYTES_ONLY
    assert o.max_bytes == 1000
    assert o.threshold_bytes == 500


def test_consume_thresholds_rounded_up_and_clamped():
    assert consume_options(max_messages=5).threshold_messages == 3
    assert consume_options(max_messages=100, threshold_messages=90).threshold_messages == 90
    assert consume_options(max_messages=100, threshold_messages=500).threshold_messages == 50
    assert consume_options(max_bytes=101, threshold_bytes=1000).threshold_bytes == 51


def test_fetch_heartbeat_rule():
    assert fetch_heartbeat(30, None) == 5.0
    assert fetch_heartbeat(10, None) == 5.0
    assert fetch_heartbeat(9.9, None) == 0.0
    assert fetch_heartbeat(2, 1) == 1.0
    with pytest.raises(ValueError):
        fetch_heartbeat(1, 1)


# -- requests and sizes -------------------------------------------------------------
def test_pull_request_json():
    assert orjson.loads(pull_request(10)) == {"batch": 10}
    assert orjson.loads(pull_request(5, expires=1.5, no_wait=True, max_bytes=100, heartbeat=0.5)) == {
        "batch": 5, "expires": 1_500_000_000, "no_wait": True, "max_bytes": 100, "idle_heartbeat": 500_000_000}
    with pytest.raises(ValueError):
        pull_request(0)


def test_msg_size_counts_subject_reply_headers_data():
    m = Msg("a.b", b"12345", "r.1")
    assert msg_size(m) == 3 + 5 + 3
    h = Headers({"K": "v"})
    mh = Msg("a.b", b"12345", "r.1", h)
    assert msg_size(mh) == 11 + len(b"NATS/1.0\r\nK: v\r\n\r\n")


def test_parse_pending():
    h = Headers({"Nats-Pending-Messages": "7", "Nats-Pending-Bytes": "1024"})
    assert parse_pending(h) == (7, 1024)
    assert parse_pending(Headers({"Nats-Pending-Messages": "x"})) == (0, 0)
    assert parse_pending(None) == (0, 0)


# -- statuses -----------------------------------------------------------------------
@pytest.mark.parametrize("status,desc,kind", [
    (None, None, S_USER),
    ("100", "Idle Heartbeat", S_HEARTBEAT),
    ("100", "FlowControl Request", S_FLOW_CONTROL),
    ("404", "No Messages", S_END),
    ("408", "Request Timeout", S_END),
    ("408", "Interest Expired", S_END),
    ("409", "Message Size Exceeds MaxBytes", S_PENDING),
    ("409", "Batch Completed", S_END),
    ("409", "Consumer Deleted", S_TERMINAL),
    ("409", "Consumer is push based", S_TERMINAL),
    ("409", "Leadership Change", S_RESET),
    ("409", "Exceeded MaxRequestBatch of 10", S_WARN),
    ("409", "Exceeded MaxRequestExpires of 1s", S_WARN),
    ("409", "Exceeded MaxRequestMaxBytes of 10", S_WARN),
    ("409", "Exceeded MaxWaiting", S_WARN),
    ("409", "Server Shutdown", S_WARN),
    ("400", "Bad Request", S_TERMINAL),
    ("503", None, S_NO_RESPONDERS),
    ("423", "Nats-Wrong-Pin-Id", S_PIN_RESET),
    ("423", "Nats-Pin-Id mismatch", S_PIN_RESET),
])
def test_classify_status(status, desc, kind):
    assert classify_status(status, desc) == kind


def test_status_errors():
    assert status_error("408", "Request Timeout") is None
    assert status_error("404", "No Messages") is None
    assert status_error("100", "Idle Heartbeat") is None
    assert status_error("409", "Message Size Exceeds MaxBytes") is None
    assert isinstance(status_error("409", "Consumer Deleted"), ConsumerDeletedError)
    assert isinstance(status_error("409", "Consumer is push based"), ConsumerIsPushBasedError)
    assert isinstance(status_error("400", "Bad Request"), BadRequestError)
    assert isinstance(status_error("503", None), NoRespondersError)
    e = status_error("409", "Exceeded MaxWaiting")
    assert isinstance(e, PullStatusError) and e.status == "409" and "MaxWaiting" in str(e)
    e = status_error("423", "Nats-Pin-Id mismatch")
    assert isinstance(e, PinIdMismatchError) and e.status == "423"


def test_status_errors_name_the_consumer():
    where = "consumer 'C' of stream 'S'"
    e = status_error("409", "Consumer Deleted", where)
    assert isinstance(e, ConsumerDeletedError) and where in str(e) and "409" in str(e)
    assert where in str(status_error("503", None, where))


def test_gone_error_says_what_is_gone_after_a_503():
    e = gone_error(ConsumerNotFoundError(404, 10014, "consumer not found"), "S", "C")
    # both: code catching either keeps working
    assert isinstance(e, ConsumerGoneError)
    assert isinstance(e, ConsumerNotFoundError) and isinstance(e, ConsumerDeletedError)
    assert (e.code, e.err_code) == (404, 10014)
    assert "'C'" in str(e) and "'S'" in str(e)
    e = gone_error(StreamNotFoundError(404, 10059, "stream not found"), "S", "C")
    assert type(e) is StreamNotFoundError and e.err_code == 10059
    assert "'C'" in str(e) and "'S'" in str(e)
    # both exist, or the lookup failed otherwise: nothing is known to be gone
    assert gone_error(JetStreamNotEnabledError(503, 10039, "not enabled"), "S", "C") is None
    assert gone_error(NoRespondersError("no responders"), "S", "C") is None
    for cls in (ConsumerGoneError, ConsumerDeletedError, ConsumerNotFoundError, StreamNotFoundError):
        assert issubclass(cls, pull.GONE_ERRORS)


# -- priority groups (ADR-42) ---------------------------------------------------------
def test_priority_fields_checked_against_the_consumer_groups():
    assert priority_fields(None) is None
    assert priority_fields([], None) is None
    assert priority_fields(["g"], "g") == {"group": "g"}
    assert priority_fields(["a", "g"], "g", min_pending=5, min_ack_pending=2, priority=3) == {
        "group": "g", "min_pending": 5, "min_ack_pending": 2, "priority": 3}
    assert priority_fields(["g"], "g", priority=0) == {"group": "g"}  # 0 is the default priority
    for bad in [dict(), dict(group="x"), dict(group="g", min_pending=0), dict(group="g", min_ack_pending=-1),
                dict(group="g", priority=10), dict(group="g", priority=True), dict(group="g", min_pending="5")]:
        with pytest.raises(InvalidOptionError):
            priority_fields(["g"], **bad)
    for bad in [dict(group="g"), dict(min_pending=1), dict(priority=1)]:
        with pytest.raises(InvalidOptionError):
            priority_fields(None, **bad)
    assert issubclass(InvalidOptionError, ValueError)


def test_pull_request_carries_group_fields_and_pin_id():
    prio = {"group": "g", "min_pending": 3}
    assert orjson.loads(pull_request(2, expires=1, priority=prio, pin_id="P1")) == {
        "batch": 2, "expires": 1_000_000_000, "group": "g", "min_pending": 3, "id": "P1"}
    assert orjson.loads(pull_request(2, priority=prio)) == {"batch": 2, "group": "g", "min_pending": 3}
    st = PullState(consume_options(max_messages=10, expires=2))
    st.priority = {"group": "g"}
    assert orjson.loads(st.request(10, 0, "P2")) == {
        "batch": 10, "expires": 2_000_000_000, "idle_heartbeat": 1_000_000_000, "group": "g", "id": "P2"}
    assert "id" not in orjson.loads(st.request(10, 0, None))


# -- pending accounting ---------------------------------------------------------------
def delivered(st, size: int = 0) -> None:
    """What the consumer's delivery loop does for each message it hands out."""
    st.pending_msgs -= 1
    if st.max_bytes:
        st.pending_bytes -= size
    st.delivered += 1


def test_pull_state_refills_below_threshold():
    st = PullState(consume_options(max_messages=100))
    assert st.next_pull() == (100, 0)
    assert st.pending_msgs == 100
    assert st.next_pull() is None
    for _ in range(50):
        delivered(st)
    assert st.next_pull() is None  # 50 is not below 50
    delivered(st)
    assert st.next_pull() == (51, 0)
    assert st.pending_msgs == 100
    assert st.delivered == 51


def test_pull_state_status_gives_back_pending():
    st = PullState(consume_options(max_messages=10))
    st.next_pull()
    st.on_status_pending(8, 0)
    assert st.pending_msgs == 2
    assert st.next_pull() == (8, 0)
    st.on_status_pending(100, 0)
    assert st.pending_msgs == 0


def test_pull_state_bytes_mode():
    st = PullState(consume_options(max_bytes=1000))
    assert st.next_pull() == (pull.BATCH_BYTES_ONLY, 1000)
    delivered(st, 400)
    assert st.next_pull() is None
    delivered(st, 200)
    assert st.pending_bytes == 400
    assert st.next_pull() == (pull.BATCH_BYTES_ONLY, 600)
    assert st.pending_bytes == 1000
    st.on_status_pending(3, 700)
    assert st.pending_bytes == 300


def test_pull_state_oversized_only_when_a_whole_pull_got_nothing():
    st = PullState(consume_options(max_bytes=100, expires=30))
    assert st.oversized(100)  # a pull for all of max_bytes refused: the next message is bigger
    assert not st.oversized(40)  # a refill for less, or a pull that delivered some: not stuck
    assert not st.oversized(0)  # no Nats-Pending-Bytes header: cannot tell
    assert not PullState(consume_options(max_messages=10)).oversized(100)
    assert st.oversize_retry() == pull.OVERSIZE_RETRY  # heartbeat 15 s
    assert PullState(consume_options(max_bytes=100, expires=1)).oversize_retry() == 0.5  # the heartbeat
    err = pull.oversize_error("409", "Message Size Exceeds MaxBytes", "consumer 'c' of stream 'S'", 100)
    assert isinstance(err, PullStatusError) and err.status == "409"
    assert err.description.startswith("Message Size Exceeds MaxBytes")
    assert "consumer 'c' of stream 'S'" in str(err) and "max_bytes=100" in str(err)


def test_pull_state_stop_after_limits_batches():
    st = PullState(consume_options(max_messages=100, stop_after=30))
    assert st.next_pull() == (30, 0)
    for _ in range(29):
        delivered(st)
    assert st.next_pull() is None
    delivered(st)
    assert st.delivered == st.stop_after


def test_pull_state_clear_pending_repulls_full():
    st = PullState(consume_options(max_messages=20))
    st.next_pull()
    st.clear_pending()
    assert st.next_pull() == (20, 0)


def test_pull_state_request_body():
    st = PullState(consume_options(max_messages=20, expires=2, heartbeat=0.5))
    assert orjson.loads(st.request(20, 0)) == {"batch": 20, "expires": 2_000_000_000, "idle_heartbeat": 500_000_000}


# -- heartbeats ---------------------------------------------------------------------
def test_heartbeat_monitor_counts_activity():
    hb = HeartbeatMonitor(1.0, now=0.0)
    assert not hb.poll(0.0, 0)
    assert hb.wait_time(0.5) == pytest.approx(1.5)
    assert not hb.poll(1.9, 0)
    assert not hb.poll(1.95, 3)  # activity restarts the window
    assert not hb.poll(3.9, 3)
    assert hb.poll(3.95, 3)  # 2 x interval of silence
    assert not hb.poll(4.0, 3)  # once per window
    assert hb.poll(5.95, 3)


def test_heartbeat_monitor_pause_and_disabled():
    hb = HeartbeatMonitor(1.0, now=0.0)
    hb.poll(0.0, 0)
    hb.pause()
    assert hb.wait_time(1.0) is None
    assert not hb.poll(10.0, 0)
    hb.resume(10.0)
    assert not hb.poll(11.0, 0)
    assert hb.poll(12.0, 0)
    off = HeartbeatMonitor(0.0, now=0.0)
    assert not off.poll(100.0, 0)
    assert off.wait_time(0.0) is None
    three = HeartbeatMonitor(1.0, now=0.0, factor=3.0)
    three.poll(0.0, 0)
    assert not three.poll(2.5, 0)
    assert three.poll(3.0, 0)


def test_heartbeat_monitor_check_follows_the_connection():
    hb = HeartbeatMonitor(1.0, now=0.0)
    hb.reset(0.0, 0)
    assert not hb.check(1.0, 0, True)
    assert not hb.check(5.0, 0, False)  # disconnected: nothing is missed
    assert hb.paused and hb.wait_time(5.0) is None
    assert not hb.check(6.0, 0, True)  # connected again: a fresh window
    assert not hb.paused
    assert not hb.check(7.9, 0, True)
    assert hb.check(8.0, 0, True)


# -- ordered consumers --------------------------------------------------------------
def test_ordered_cursor_take():
    c = OrderedCursor()
    assert c.take(5, 1) is True
    assert c.take(6, 3) is False  # consumer seq 2 went missing: the cursor stays
    assert (c.stream_seq, c.consumer_seq) == (5, 1)
    assert c.take(5, 1) is None  # stale
    assert c.take(7, 2) is True and c.stream_seq == 7


def test_ordered_cursor():
    c = OrderedCursor()
    assert c.in_order(1)
    assert not c.in_order(2)
    c.advance(10, 1)
    assert (c.stream_seq, c.consumer_seq) == (10, 1)
    assert c.in_order(2)
    assert c.new_consumer() == 1
    assert c.consumer_seq == 0 and c.stream_seq == 10
    assert c.new_consumer() == 2
    assert not c.hb_gap(Headers({"Nats-Last-Consumer": "0"}))
    assert c.hb_gap(Headers({"Nats-Last-Consumer": "3"}))
    assert not c.hb_gap(None)


def test_ordered_config_first_and_reset():
    c = OrderedCursor()
    cfg = ordered_config("n_1", c, "a.>", "all")
    assert cfg["ack_policy"] == "none" and cfg["max_deliver"] == 1 and cfg["mem_storage"] is True
    assert cfg["num_replicas"] == 1 and cfg["deliver_policy"] == "all" and cfg["filter_subject"] == "a.>"
    assert cfg["inactive_threshold"] == 300_000_000_000
    assert "opt_start_seq" not in cfg and "durable_name" not in cfg
    cfg = ordered_config("n_1", c, ["a", "b"], "by_start_sequence", opt_start_seq=5)
    assert cfg["filter_subjects"] == ["a", "b"] and cfg["opt_start_seq"] == 5
    cfg = ordered_config("n_1", c, None, "last_per_subject")
    assert cfg["filter_subjects"] == [">"]
    c.advance(41, 7)
    cfg = ordered_config("n_2", c, None, "last", headers_only=True)
    assert cfg["deliver_policy"] == "by_start_sequence" and cfg["opt_start_seq"] == 42
    assert cfg["headers_only"] is True
    push = ordered_config("n_3", c, None, deliver_subject="_INBOX.x", idle_heartbeat=5, flow_control=True)
    assert push["deliver_subject"] == "_INBOX.x" and push["flow_control"] is True
    assert push["idle_heartbeat"] == 5_000_000_000
    with pytest.raises(ValueError):
        ordered_config("n", OrderedCursor(), None, "by_start_time")
