"""Ack-subject metadata: parse_metadata_fields, parse_metadata and the MsgMetadata /
SequencePair types, each run against both implementations (compiled and pure twin)."""
from __future__ import annotations

import copy
import gc
import pickle
from dataclasses import FrozenInstanceError
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jetwire
from jetwire.errors import NotJSMessageError
from jetwire.protocol import metadata as md

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


def test_parse_metadata(impl):
    m = impl.parse_metadata(f"$JS.ACK.hub.ACC.ORDERS.worker.2.100.7.{TS}.41.tok")
    assert type(m) is impl.MsgMetadata
    assert m.sequence == impl.SequencePair(stream=100, consumer=7)
    assert type(m.sequence) is impl.SequencePair
    assert m.sequence.stream == 100 and m.sequence.consumer == 7
    assert (m.num_delivered, m.num_pending, m.stream, m.consumer, m.domain) == (2, 41, "ORDERS", "worker", "hub")
    assert m.timestamp_ns == TS
    assert m.timestamp == datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=UTC)
    assert m.timestamp.tzinfo is UTC


def test_parse_metadata_agrees_with_fields(impl):
    for subject in (f"$JS.ACK.S.C.1.2.3.{TS}.0", f"$JS.ACK.S.C.1.2.3.{TS}", f"$JS.ACK._.h.S.C.4.5.6.{TS}.9.r",
                    f"$JS.ACK.d.h.S.C.{2**64 + 1}.{10**20}.0.{TS}.1"):
        domain, _acc, stream, consumer, delivered, sseq, cseq, ts, pending = impl.parse_metadata_fields(subject)
        m = impl.parse_metadata(subject)
        assert m == impl.MsgMetadata(impl.SequencePair(sseq, cseq), delivered, pending, None, ts, stream, consumer,
                                     domain)


def test_parse_metadata_v1_domain_none(impl):
    m = impl.parse_metadata(f"$JS.ACK.S.C.1.2.3.{TS}.0")
    assert m.domain is None and m.num_pending == 0


def test_timestamp_exact_no_float_rounding(impl):
    # 999 ns below the next microsecond must floor, not round
    ts = 1_700_000_000_999_999_999
    m = impl.parse_metadata(f"$JS.ACK.S.C.1.2.3.{ts}.0")
    assert m.timestamp.microsecond == 999_999 and m.timestamp.second == 20
    assert m.timestamp_ns == ts
    # far future values where float64 would lose precision
    ts = 4_102_444_800_000_001_999  # 2100-01-01 plus 1.999 us
    m = impl.parse_metadata(f"$JS.ACK.S.C.1.2.3.{ts}.0")
    assert m.timestamp == datetime(2100, 1, 1, 0, 0, 0, 1, tzinfo=UTC)
    m = impl.parse_metadata("$JS.ACK.S.C.1.2.3.0.0")
    assert m.timestamp == datetime(1970, 1, 1, tzinfo=UTC)


def test_parse_metadata_errors(impl):
    with pytest.raises(NotJSMessageError):
        impl.parse_metadata("_INBOX.abc")
    with pytest.raises(NotJSMessageError):
        impl.parse_metadata(None)
    with pytest.raises(NotJSMessageError, match="invalid number"):
        impl.parse_metadata("$JS.ACK.S.C.1.x.3.4.5")


def test_timestamp_built_lazily_once(impl):
    m = impl.parse_metadata(f"$JS.ACK.S.C.1.2.3.{TS}.0")
    ts = m.timestamp
    assert m.timestamp is ts
    # a timestamp given to the constructor is kept as given
    given = datetime(2000, 1, 1, tzinfo=UTC)
    m2 = impl.MsgMetadata(impl.SequencePair(2, 3), 1, 0, given, TS, "S", "C")
    assert m2.timestamp is given and m2.timestamp_ns == TS


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MAX_NS = 253_402_300_800 * 10**9  # 10000-01-01


def _expected(ns):
    try:
        return _EPOCH + timedelta(microseconds=ns // 1000)
    except OverflowError:
        return OverflowError


def _timestamp_of(impl, ns):
    m = impl.MsgMetadata(impl.SequencePair(1, 2), 1, 0, None, ns, "S", "C")
    try:
        ts = m.timestamp
    except OverflowError:
        return OverflowError
    assert ts.tzinfo is UTC
    return ts


@pytest.mark.parametrize("ns", [0, 1, 999, 1000, 86_400 * 10**9 - 1, 86_400 * 10**9, 951_782_400 * 10**9,
                                951_868_800 * 10**9 - 1, 4_107_542_400 * 10**9, _MAX_NS - 1, _MAX_NS, 2**63 - 1,
                                2**63, 2**64, -1, -(10**9), -(10**30), 10**40])
def test_timestamp_edges(impl, ns):
    assert _timestamp_of(impl, ns) == _expected(ns)


@settings(max_examples=500, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(min_value=-(10**18), max_value=_MAX_NS + 10**12))
def test_timestamp_matches_the_datetime_arithmetic(impl, ns):
    assert _timestamp_of(impl, ns) == _expected(ns)


def test_timestamp_out_of_range_fails_on_use_only(impl):
    m = impl.parse_metadata(f"$JS.ACK.S.C.1.2.3.{10**25}.0")
    assert m.timestamp_ns == 10**25
    with pytest.raises(OverflowError):
        m.timestamp


def test_types_frozen(impl):
    m = impl.MsgMetadata(impl.SequencePair(1, 2), 1, 0, datetime.now(UTC), 0, "S", "C")
    assert m.domain is None
    for obj, name in ((m, "stream"), (m, "timestamp"), (m, "domain"), (m, "other"), (m.sequence, "stream"),
                      (m.sequence, "x")):
        with pytest.raises(FrozenInstanceError):
            setattr(obj, name, "x")
        with pytest.raises(FrozenInstanceError):
            delattr(obj, name)
    assert isinstance(FrozenInstanceError(), AttributeError)
    assert m.stream == "S" and m.sequence.stream == 1
    parsed = impl.parse_metadata(f"$JS.ACK.S.C.1.2.3.{TS}.0")
    with pytest.raises(FrozenInstanceError):
        parsed.num_pending = 5
    assert not hasattr(parsed, "__dict__")


def test_constructor_keywords_and_positions(impl):
    sp = impl.SequencePair(consumer=7, stream=100)
    assert (sp.stream, sp.consumer) == (100, 7)
    now = datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)
    by_kw = impl.MsgMetadata(sequence=sp, num_delivered=2, num_pending=41, timestamp=now, timestamp_ns=5,
                             stream="ORDERS", consumer="worker", domain="hub")
    by_pos = impl.MsgMetadata(sp, 2, 41, now, 5, "ORDERS", "worker", "hub")
    assert by_kw == by_pos
    with pytest.raises(TypeError):
        impl.MsgMetadata(sp, 2, 41, now, 5, "ORDERS")  # consumer missing
    with pytest.raises(TypeError):
        impl.SequencePair(1)


def test_equality(impl):
    a = impl.parse_metadata(f"$JS.ACK.hub.ACC.S.C.1.2.3.{TS}.4.r")
    b = impl.parse_metadata(f"$JS.ACK.hub.OTHERACC.S.C.1.2.3.{TS}.4.x")  # account hash is not a field
    assert a == b and a == b
    assert a != impl.parse_metadata(f"$JS.ACK.hub.ACC.S.C.1.2.3.{TS + 1}.4.r")
    assert a != impl.parse_metadata(f"$JS.ACK.hub.ACC.S.C.1.2.9.{TS}.4.r")
    assert a != impl.parse_metadata(f"$JS.ACK.S.C.1.2.3.{TS}.4")  # domain None
    # the same as built by hand, with or without the timestamp given
    ts = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=TS // 1000)
    by_hand = impl.MsgMetadata(impl.SequencePair(2, 3), 1, 4, ts, TS, "S", "C", "hub")
    assert a == by_hand and by_hand == a
    assert a == impl.MsgMetadata(impl.SequencePair(2, 3), 1, 4, None, TS, "S", "C", "hub")
    # a timestamp that disagrees with timestamp_ns makes them differ (both are fields)
    assert a != impl.MsgMetadata(impl.SequencePair(2, 3), 1, 4, ts + timedelta(seconds=1), TS, "S", "C", "hub")
    # other types are never equal
    assert a != (a.sequence, 1, 4) and a.sequence != (2, 3) and a != "x"
    assert impl.SequencePair(1, 2) == impl.SequencePair(1, 2) != impl.SequencePair(2, 1)


def test_hash(impl):
    a = impl.parse_metadata(f"$JS.ACK.S.C.1.2.3.{TS}.4")
    b = impl.parse_metadata(f"$JS.ACK.S.C.1.2.3.{TS}.4")
    assert hash(a) == hash(b) and len({a, b}) == 1
    assert {a: 1}[b] == 1
    assert hash(impl.SequencePair(2, 3)) == hash((2, 3))  # as a frozen dataclass hashes
    assert hash(a) == hash((a.sequence, 1, 4, a.timestamp, TS, "S", "C", None))
    assert len({impl.SequencePair(1, 2), impl.SequencePair(1, 2), impl.SequencePair(2, 1)}) == 2


def test_repr(impl):
    m = impl.parse_metadata(f"$JS.ACK.hub.ACC.ORDERS.worker.2.100.7.{TS}.41.tok")
    assert repr(m.sequence) == "SequencePair(stream=100, consumer=7)"
    assert repr(m) == (
        "MsgMetadata(sequence=SequencePair(stream=100, consumer=7), num_delivered=2, num_pending=41, "
        "timestamp=datetime.datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=datetime.timezone.utc), "
        f"timestamp_ns={TS}, stream='ORDERS', consumer='worker', domain='hub')"
    )


def test_pickle_and_copy(impl):
    m = impl.parse_metadata(f"$JS.ACK.hub.ACC.ORDERS.worker.2.100.7.{TS}.41.tok")
    for again in (pickle.loads(pickle.dumps(m)), copy.copy(m), copy.deepcopy(m)):
        assert again == m and type(again) is type(m) and again.timestamp == m.timestamp
    given = impl.MsgMetadata(impl.SequencePair(1, 2), 1, 0, datetime(2000, 1, 1, tzinfo=UTC), 0, "S", "C")
    assert pickle.loads(pickle.dumps(given)).timestamp == datetime(2000, 1, 1, tzinfo=UTC)


def test_match_args(impl):
    m = impl.parse_metadata(f"$JS.ACK.S.C.1.2.3.{TS}.4")
    match m:
        case impl.MsgMetadata(impl.SequencePair(sseq, cseq), delivered, pending, ts, ts_ns, stream, consumer, domain):
            got = (sseq, cseq, delivered, pending, ts.year, ts_ns, stream, consumer, domain)
        case _:
            got = None
    assert got == (2, 3, 1, 4, 2023, TS, "S", "C", None)


def test_subclass(impl):
    class Mine(impl.SequencePair):
        __slots__ = ()

    s = Mine(1, 2)
    assert s.stream == 1 and repr(s).endswith("Mine(stream=1, consumer=2)")
    assert s != impl.SequencePair(1, 2)  # like dataclasses: the exact class takes part in ==


@pytest.mark.compiled_only
def test_compiled_types_stay_out_of_the_cycle_collector(all_impls):
    assert "compiled" in all_impls, "the compiled extension is not importable"
    impl = all_impls["compiled"]

    class Msg(impl.MsgBase):
        __slots__ = ()

    m = impl.Parser(Msg).feed(b"MSG a 1 $JS.ACK.S.C.1.2.3.4.5 0\r\n\r\n")[0]
    assert not gc.is_tracked(m)
    md = m.metadata
    assert not gc.is_tracked(md) and not gc.is_tracked(md.sequence)
    assert not gc.is_tracked(m)  # holding its metadata does not put the message back in


def test_msg_metadata_parsed_once(impl, msg_cls):
    m = msg_cls("x", b"", reply=f"$JS.ACK.S.C.1.2.3.{TS}.4")
    md1 = m.metadata
    assert type(md1) is impl.MsgMetadata and md1.sequence == impl.SequencePair(2, 3)
    assert m.metadata is md1 and m._meta is md1
    with pytest.raises(NotJSMessageError):
        msg_cls("x", b"").metadata
    with pytest.raises(NotJSMessageError):
        msg_cls("x", b"", reply="_INBOX.abc").metadata


def test_msg_metadata_from_the_parser(impl, msg_cls):
    reply = f"$JS.ACK.S.C.1.2.3.{TS}.4"
    m = impl.Parser(msg_cls).feed(b"MSG a 1 %s 2\r\nhi\r\n" % reply.encode())[0]
    assert m.metadata == impl.parse_metadata(reply) and m.metadata.timestamp_ns == TS


def test_public_names_are_the_selected_implementation():
    from jetwire import _impl

    mod = _impl.implementations()[_impl.IMPLEMENTATION]
    assert jetwire.MsgMetadata is md.MsgMetadata is mod.MsgMetadata
    assert jetwire.SequencePair is md.SequencePair is mod.SequencePair
    assert jetwire.parse_metadata is md.parse_metadata is mod.parse_metadata
    m = jetwire.Msg("x", b"", reply="$JS.ACK.S.C.1.2.3.4.5").metadata
    assert type(m) is jetwire.MsgMetadata and m.sequence == jetwire.SequencePair(2, 3)
