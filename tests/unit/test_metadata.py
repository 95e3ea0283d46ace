"""Ack-subject metadata: parse_metadata_fields (both implementations) and parse_metadata."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from jetwire.errors import NotJSMessageError
from jetwire.protocol import metadata as md
from jetwire.protocol.metadata import MsgMetadata, SequencePair

TS = 1_700_000_000_123_456_789


def test_v1(impl):
    f = impl.parse_metadata_fields(f"$JS.ACK.ORDERS.worker.2.100.7.{TS}.41")
    assert f == (None, None, "ORDERS", "worker", 2, 100, 7, TS, 41)


def test_v2_twelve_tokens(impl):
    f = impl.parse_metadata_fields(f"$JS.ACK.hub.ACCHASH.ORDERS.worker.2.100.7.{TS}.41.rnd123")
    assert f == ("hub", "ACCHASH", "ORDERS", "worker", 2, 100, 7, TS, 41)


def test_v2_eleven_tokens(impl):
    f = impl.parse_metadata_fields(f"$JS.ACK.hub.ACC.S.C.1.2.3.{TS}.0")
    assert f == ("hub", "ACC", "S", "C", 1, 2, 3, TS, 0)


def test_v2_more_tokens_ignored(impl):
    f = impl.parse_metadata_fields(f"$JS.ACK.hub.ACC.S.C.1.2.3.{TS}.0.tok.future.fields")
    assert f == ("hub", "ACC", "S", "C", 1, 2, 3, TS, 0)


def test_v2_underscore_domain(impl):
    f = impl.parse_metadata_fields(f"$JS.ACK._.ACC.S.C.1.2.3.{TS}.5.x")
    assert f[0] is None and f[1] == "ACC"


def test_v2_empty_domain_and_hash(impl):
    f = impl.parse_metadata_fields(f"$JS.ACK...S.C.1.2.3.{TS}.5.x")
    assert f[0] is None and f[1] is None and f[2:4] == ("S", "C")


def test_legacy_eight_tokens(impl):
    f = impl.parse_metadata_fields(f"$JS.ACK.S.C.1.2.3.{TS}")
    assert f == (None, None, "S", "C", 1, 2, 3, TS, 0)


def test_big_numbers(impl):
    big = 2**64 - 1
    f = impl.parse_metadata_fields(f"$JS.ACK.S.C.{big}.{10**25}.0001.0.{big}")
    assert f[4:] == (big, 10**25, 1, 0, big)


def test_non_ascii_names(impl):
    f = impl.parse_metadata_fields("$JS.ACK.dømain.h.strëam.cønsumer.1.2.3.4.5.x")
    assert f[:4] == ("dømain", "h", "strëam", "cønsumer")


@pytest.mark.parametrize(
    "subject",
    [
        None,
        "",
        5,
        b"$JS.ACK.S.C.1.2.3.4.5",
        "foo.bar",
        "$JS.ACK",
        "$JS.ACK.",
        "$JS.ACK.S.C.1.2.3",
        "$JS.ACK.S.C.1.2",
        "$JS.ACK.a.b.S.C.1.2.3.4",  # 10 tokens
        "$js.ack.S.C.1.2.3.4.5",
        "$JS.API.S.C.1.2.3.4.5",
        "X$JS.ACK.S.C.1.2.3.4.5",
        "$JS.ACK.S.C.x.2.3.4.5",
        "$JS.ACK.S.C.1.2.3.4.x",
        "$JS.ACK.S.C.1.-2.3.4.5",
        "$JS.ACK.S.C.1.+2.3.4.5",
        "$JS.ACK.S.C.1..3.4.5",
        "$JS.ACK.S.C.1.2.3.4.",
        "$JS.ACK.S.C.1.2.3. 4.5",
        "$JS.ACK.S.C.1.2.3.４.5",
        "$JS.ACK.S.C.1.2.3.٤.5",
        "$JS.ACK.S.C.1.2.3.4" + "x" * 30 + ".5",
        "$JS.ACK.S.C.1.2.3.12345678901234567890x.5",
        "$JS.ACK..C.1.2.3.4.5",
        "$JS.ACK.S..1.2.3.4.5",
        "$JS.ACK.d.h.S.C.1.2.3.4.x.t",
        "$JS.ACK.S.C.1.2.3.4.5\ud800",
    ],
)
def test_errors(impl, subject):
    with pytest.raises(NotJSMessageError):
        impl.parse_metadata_fields(subject)


def test_not_js_error_is_value_error(impl):
    with pytest.raises(ValueError):
        impl.parse_metadata_fields("nope")


@pytest.fixture
def use_impl(impl, monkeypatch):
    monkeypatch.setattr(md, "_fields", impl.parse_metadata_fields)
    return impl


def test_parse_metadata(use_impl):
    m = md.parse_metadata(f"$JS.ACK.hub.ACC.ORDERS.worker.2.100.7.{TS}.41.tok")
    assert isinstance(m, MsgMetadata)
    assert m.sequence == SequencePair(stream=100, consumer=7)
    assert m.sequence.stream == 100 and m.sequence.consumer == 7
    assert (m.num_delivered, m.num_pending, m.stream, m.consumer, m.domain) == (2, 41, "ORDERS", "worker", "hub")
    assert m.timestamp_ns == TS
    assert m.timestamp == datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=timezone.utc)
    assert m.timestamp.tzinfo is timezone.utc


def test_parse_metadata_v1_domain_none(use_impl):
    m = md.parse_metadata(f"$JS.ACK.S.C.1.2.3.{TS}.0")
    assert m.domain is None and m.num_pending == 0


def test_timestamp_exact_no_float_rounding(use_impl):
    # 999 ns below the next microsecond must floor, not round
    ts = 1_700_000_000_999_999_999
    m = md.parse_metadata(f"$JS.ACK.S.C.1.2.3.{ts}.0")
    assert m.timestamp.microsecond == 999_999 and m.timestamp.second == 20
    assert m.timestamp_ns == ts
    # far future values where float64 would lose precision
    ts = 4_102_444_800_000_001_999  # 2100-01-01 plus 1.999 us
    m = md.parse_metadata(f"$JS.ACK.S.C.1.2.3.{ts}.0")
    assert m.timestamp == datetime(2100, 1, 1, 0, 0, 0, 1, tzinfo=timezone.utc)
    m = md.parse_metadata("$JS.ACK.S.C.1.2.3.0.0")
    assert m.timestamp == datetime(1970, 1, 1, tzinfo=timezone.utc)


def test_parse_metadata_errors(use_impl):
    with pytest.raises(NotJSMessageError):
        md.parse_metadata("_INBOX.abc")
    with pytest.raises(NotJSMessageError):
        md.parse_metadata(None)


def test_dataclasses_frozen(impl):
    m = MsgMetadata(SequencePair(1, 2), 1, 0, datetime.now(timezone.utc), 0, "S", "C")
    assert m.domain is None
    with pytest.raises(Exception):
        m.stream = "x"


def test_default_parse_metadata_uses_selected_impl(impl):
    from jetwire import _impl

    m = md.parse_metadata("$JS.ACK.S.C.1.2.3.4.5")
    assert m.sequence == SequencePair(2, 3)
    assert _impl.parse_metadata_fields("$JS.ACK.S.C.1.2.3.4.5") == impl.parse_metadata_fields("$JS.ACK.S.C.1.2.3.4.5")
