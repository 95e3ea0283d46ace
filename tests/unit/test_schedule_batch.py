"""Message schedule specs (ADR-51), the publish headers they and the other new options
make, atomic batch headers and commit answers (ADR-50): the sans-IO parts."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from jetwire import AtomicBatchError, BatchAck, Headers, InvalidOptionError, JetStreamError, WrongLastSequenceError
from jetwire._units import go_duration_seconds
from jetwire.jetstream.batch import batch_ack, batch_failed, batch_headers
from jetwire.jetstream.manage import publish_headers
from jetwire.jetstream.schedule import schedule_headers, validate_schedule

GOOD = [
    "@at 2030-01-01T00:00:00Z",
    "@at 2030-01-01T00:00:00.5Z",
    "@at 2020-02-29T23:59:59+02:00",
    "@at 2030-06-01T12:00:00-07:30",
    "@every 1s",
    "@every 1m30s",
    "@every 1.5h",
    "@every 1500ms",
    "@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly",
    "0 0 * * * *",
    "*/5 * * * * *",
    "0 30 4 1,15 * 5",
    "0 0 8-11 * * *",
    "0 0 0-23/2 * * *",
    "0 0 0 * jan-mar mon,wed,FRI",
    "? ? ? ? ? ?",
    "5/10 * * * * *",
    "0 0 12 * * 0",
]

BAD = [
    "",
    " @hourly",
    "@hourly ",
    "@sometimes",
    "@at",
    "@at tomorrow",
    "@at 2030-01-01 00:00:00Z",  # no T
    "@at 2030-01-01T00:00:00",  # no zone
    "@at 2030-13-01T00:00:00Z",
    "@at 2030-02-30T00:00:00Z",
    "@at 2030-01-01T24:00:00Z",
    "@every",
    "@every 500ms",  # under a second
    "@every 5",  # no unit
    "@every -5s",
    "@every 1d",
    "0 0 * * *",  # five fields
    "0 0 * * * * *",
    "60 * * * * *",
    "* 60 * * * *",
    "* * 24 * * *",
    "* * * 0 * *",
    "* * * 32 * *",
    "* * * * 13 *",
    "* * * * * 7",
    "* * * * foo *",
    "*/0 * * * * *",
    "5-1 * * * * *",
    "1-2-3 * * * * *",
    "1/2/3 * * * * *",
    "*-5 * * * * *",
    "a * * * * *",
    ", * * * * *",
]


@pytest.mark.parametrize("spec", GOOD)
def test_good_specs_pass_unchanged(spec):
    assert validate_schedule(spec) == spec


@pytest.mark.parametrize("spec", BAD)
def test_bad_specs_raise_a_value_error(spec):
    with pytest.raises(InvalidOptionError) as ei:
        validate_schedule(spec)
    assert isinstance(ei.value, ValueError)
    assert repr(spec) in str(ei.value)


def test_datetime_and_timedelta():
    assert validate_schedule(datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)) == "@at 2030-01-02T03:04:05Z"
    assert validate_schedule(datetime(2030, 1, 2, 3, 4, 5)) == "@at 2030-01-02T03:04:05Z"  # naive: UTC
    plus2 = timezone(timedelta(hours=2))
    assert validate_schedule(datetime(2030, 1, 2, 3, 4, 5, 250000, tzinfo=plus2)) == "@at 2030-01-02T01:04:05.25Z"
    assert validate_schedule(timedelta(minutes=5)) == "@every 300s"
    assert validate_schedule(timedelta(seconds=1.5)) == "@every 1500000000ns"
    assert go_duration_seconds(validate_schedule(timedelta(seconds=1.5))[7:]) == 1.5
    with pytest.raises(InvalidOptionError):
        validate_schedule(timedelta(milliseconds=999))
    with pytest.raises(TypeError):
        validate_schedule(60)


def test_go_durations():
    assert go_duration_seconds("1h2m3s") == 3723
    assert go_duration_seconds("1.5m") == 90
    assert go_duration_seconds("250ms") == 0.25
    assert go_duration_seconds(".5s") == 0.5
    assert go_duration_seconds("") is None
    assert go_duration_seconds("1") is None
    assert go_duration_seconds("1s ") is None


def test_schedule_headers():
    assert schedule_headers("@hourly", "orders") == {"Nats-Schedule": "@hourly", "Nats-Schedule-Target": "orders"}
    h = schedule_headers("@every 1s", "orders.x", 5)
    assert h["Nats-Schedule-TTL"] == "5s"
    assert schedule_headers("@hourly", "o", "never")["Nats-Schedule-TTL"] == "never"
    with pytest.raises(InvalidOptionError):
        schedule_headers("@hourly", None)
    with pytest.raises(ValueError):
        schedule_headers("@hourly", "bad subject")
    with pytest.raises(ValueError, match="schedule_ttl"):
        schedule_headers("@hourly", "o", 0.5)


def test_publish_headers_new_options():
    h = publish_headers({"A": "1"}, None, None, None, 4, None, expected_last_subject_seq_subject="orders.*",
                        schedule="@daily", schedule_target="t", schedule_ttl=60)
    assert h["A"] == "1"
    assert h["Nats-Expected-Last-Subject-Sequence"] == "4"
    assert h["Nats-Expected-Last-Subject-Sequence-Subject"] == "orders.*"
    assert (h["Nats-Schedule"], h["Nats-Schedule-Target"], h["Nats-Schedule-TTL"]) == ("@daily", "t", "60s")
    with pytest.raises(ValueError):  # needs the sequence
        publish_headers(None, None, None, None, None, None, expected_last_subject_seq_subject="x")
    with pytest.raises(ValueError):
        publish_headers(None, None, None, None, 1, None, expected_last_subject_seq_subject="a..b")
    with pytest.raises(ValueError):  # target without a schedule
        publish_headers(None, None, None, None, None, None, schedule_target="t")
    original = {"K": "v"}
    assert publish_headers(original, None, None, None, None, None) is original


def test_batch_headers():
    user = Headers({"K": "v", "Nats-Batch-Commit": "1"})
    h = batch_headers(user, "B1", 3, False, "m3", None, None, 7, "other", None)
    assert (h["Nats-Batch-Id"], h["Nats-Batch-Sequence"]) == ("B1", "3")
    assert "Nats-Batch-Commit" not in h  # only the commit carries it
    assert h["Nats-Msg-Id"] == "m3" and h["K"] == "v"
    assert h["Nats-Expected-Last-Subject-Sequence-Subject"] == "other"
    assert user["Nats-Batch-Commit"] == "1" and "Nats-Batch-Id" not in user  # never modified
    c = batch_headers(None, "B1", 4, True, None, None, None, None, None, 10)
    assert (c["Nats-Batch-Commit"], c["Nats-TTL"]) == ("1", "10s")


def test_batch_ack_and_failures():
    ack = batch_ack(b'{"stream":"S","seq":9,"batch":"B1","count":5}', "B1")
    assert isinstance(ack, BatchAck)
    assert (ack.stream, ack.seq, ack.batch_id, ack.count, ack.first_seq) == ("S", 9, "B1", 5, 5)
    with pytest.raises(AtomicBatchError) as ei:
        batch_ack(b'{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 2"},'
                  b'"stream":"S","seq":0}', "B1")
    err = ei.value
    assert isinstance(err.error, WrongLastSequenceError) and err.__cause__ is err.error
    assert (err.code, err.err_code, err.batch_id, err.reason) == (400, 10071, "B1", "wrong last sequence: 2")
    assert str(err) == "atomic batch 'B1' failed, nothing stored: wrong last sequence: 2 (code=400, err_code=10071)"
    with pytest.raises(AtomicBatchError) as ei:
        batch_ack(b'{"error":{"code":400,"err_code":10174,"description":"atomic publish is disabled"}}', "B2")
    assert ei.value.batch_id == "B2" and ei.value.err_code == 10174
    with pytest.raises(JetStreamError):  # another batch's ack
        batch_ack(b'{"stream":"S","seq":9,"batch":"OTHER","count":5}', "B1")
    with pytest.raises(JetStreamError):
        batch_ack(b"nonsense", "B1")
    plain = batch_failed("B3", TimeoutError("x"))
    assert plain.batch_id == "B3" and plain.err_code is None and isinstance(plain.error, TimeoutError)
