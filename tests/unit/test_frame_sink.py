"""Frame sinks: the parser offers a subscription's frames to its ``FrameSink`` (an
``AckCollector``) before any message is built. Each test runs against both
implementations; the rows a sink fills must equal those the message path fills."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jetwire.errors import NotJSMessageError
from tests.unit.test_columns import cols

TS = 1_700_000_000_123_456_789
HYP = settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)


def ack_reply(seq, pending):
    return f"$JS.ACK.S.C.1.{seq}.{seq}.{TS + seq * 1000}.{pending}".encode()


def msg_frame(subject, sid, reply, data):
    return b"MSG %s %d %s %d\r\n%s\r\n" % (subject, sid, reply, len(data), data)


def hmsg_frame(subject, sid, reply, hdr, data):
    r = b" " + reply if reply else b""
    return b"HMSG %s %d%s %d %d\r\n%s%s\r\n" % (subject, sid, r, len(hdr), len(hdr) + len(data), hdr, data)


HDR = b"NATS/1.0\r\nK: a\r\nK: b\r\nOne: 1\r\n\r\n"
STATUS_408 = b"NATS/1.0 408 Request Timeout\r\n\r\n"


def collector(impl, want=100, hi=1000, reply="_INBOX.pull.1"):
    events = []
    c = impl.AckCollector(events.append)
    c.target = impl.AckRows(reply, hi, want)
    return c, events


def test_sink_takes_its_frames_and_leaves_the_rest(impl):
    p = impl.Parser(impl.MsgBase)
    c, events = collector(impl)
    p.sinks[1] = c
    stream = (msg_frame(b"a.b", 1, ack_reply(1, 9), b"one")
              + msg_frame(b"other", 2, b"_INBOX.x", b"not mine")
              + b"PING\r\n"
              + hmsg_frame(b"a.c", 1, ack_reply(2, 9), HDR, b"two")
              + msg_frame(b"a.\xff", 1, ack_reply(3, 9), b"")  # a subject that is not UTF-8
              + hmsg_frame(b"_INBOX.pull.1", 1, None, STATUS_408, b""))
    out = p.feed(stream)
    # sid 2's message, the PING and the status reply (as a message, for __call__) are events
    assert [type(e).__name__ if not isinstance(e, tuple) else e[0] for e in out] == [
        "MsgBase", impl.OP_PING, "MsgBase"]
    assert out[0].sid == 2 and out[2].sid == 1 and out[2].headers.status == "408"
    assert p.taken_msgs == 3 and p.taken_bytes == len(b"one") + len(b"two")
    subjects, seqs, times, data, headers = cols(c.target.columns())
    assert subjects == ["a.b", "a.c", "a.\udcff"] and list(seqs) == [1, 2, 3]
    assert list(times) == [(TS + s * 1000) // 1000 for s in (1, 2, 3)]
    assert data == [b"one", b"two", b""]
    assert headers == [None, [("K", ["a", "b"]), ("One", ["1"])], None]
    c(out[2])  # the status, routed after the chunk: the pull ends
    assert len(events) == 1 and events[0] is out[2]


def test_router_counts_taken_frames(impl):
    p = impl.Parser(impl.MsgBase)
    c, _ = collector(impl)
    p.sinks[7] = c
    r = impl.Router(p, {}, lambda ev: None)
    r.feed(msg_frame(b"a", 7, ack_reply(1, 5), b"xyz") + msg_frame(b"b", 8, b"r", b"12345"))
    assert (r.in_msgs, r.in_bytes) == (2, 8) and p.taken_msgs == 0 and len(c.target) == 1


def test_base_sink_declines(impl):
    p = impl.Parser(impl.MsgBase)
    base = impl.FrameSink()
    assert base.take_frame(b"a", None, None, b"x") is False
    for args in [("a", None, None, b"x"), (b"a", "r", None, b"x"), (b"a", None, "NATS/1.0\r\n\r\n", b"x"),
                 (b"a", None, None, 5)]:  # (the compiled twin read such objects' memory as bytes)
        with pytest.raises(TypeError):
            base.take_frame(*args)
    p.sinks[1] = base
    out = p.feed(msg_frame(b"a", 1, b"r", b"x"))
    assert len(out) == 1 and out[0].data == b"x" and p.taken_msgs == 0


def test_malformed_headers_are_left_to_the_parser(impl):
    p = impl.Parser(impl.MsgBase)
    c, _ = collector(impl)
    p.sinks[1] = c
    out = p.feed(hmsg_frame(b"a", 1, ack_reply(1, 5), b"NATS/1.0\r\nno colon\r\n\r\n", b"x")
                 + msg_frame(b"a", 1, ack_reply(2, 5), b"y"))
    assert len(out) == 1 and out[0][0] == impl.OP_FRAME_ERROR
    assert list(cols(c.target.columns())[1]) == [2] and c.target.delivered == 1


def test_pull_completion_and_errors(impl):
    p = impl.Parser(impl.MsgBase)
    c, events = collector(impl, want=2)
    p.sinks[1] = c
    assert p.feed(b"".join(msg_frame(b"a", 1, ack_reply(s, 9), b"d") for s in (1, 2, 3))) == []
    assert events == [None] and len(c.target) == 2  # the third is dropped: the pull is complete
    c.target = impl.AckRows("r", 1000, 5)
    p.feed(msg_frame(b"a", 1, b"_INBOX.not.an.ack", b"d") + msg_frame(b"a", 1, ack_reply(4, 9), b"d"))
    assert events == [None, None] and isinstance(c.target.error, NotJSMessageError) and len(c.target) == 0
    c.target = None  # no pull in flight: frames are dropped
    assert p.feed(msg_frame(b"a", 1, ack_reply(5, 9), b"d")) == [] and p.taken_msgs == 6


def test_on_event_error_is_reported_and_parsing_goes_on(impl, monkeypatch):
    import sys

    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u.exc_value))

    def boom(m):
        raise RuntimeError("boom")

    p = impl.Parser(impl.MsgBase)
    c = impl.AckCollector(boom)
    c.target = impl.AckRows("r", 1000, 1)
    p.sinks[1] = c
    out = p.feed(msg_frame(b"a", 1, ack_reply(1, 9), b"d") + msg_frame(b"b", 2, b"r", b"e"))
    assert [str(e) for e in seen] == ["boom"] and len(out) == 1 and out[0].data == b"e"


frames_st = st.lists(st.tuples(
    st.binary(min_size=1, max_size=12).filter(lambda b: all(c > 32 and c != 127 for c in b)),  # subject
    st.binary(max_size=40),  # data
    st.booleans(),  # with headers
), min_size=1, max_size=30)


@HYP
@given(frames=frames_st, cuts=st.lists(st.integers(1, 200), max_size=20))
def test_sink_rows_equal_message_rows(impl, frames, cuts):
    """The same frames, fed in arbitrary pieces, give the same rows through the sink as
    through messages handed to ``__call__``."""
    stream = b"".join(
        hmsg_frame(s, 1, ack_reply(i + 1, 99), HDR, d) if h else msg_frame(s, 1, ack_reply(i + 1, 99), d)
        for i, (s, d, h) in enumerate(frames))
    pieces, pos = [], 0
    for n in cuts:
        pieces.append(stream[pos:pos + n])
        pos += n
    pieces.append(stream[pos:])
    sink_p = impl.Parser(impl.MsgBase)
    sunk, _ = collector(impl)
    sink_p.sinks[1] = sunk
    msg_p = impl.Parser(impl.MsgBase)
    called, _ = collector(impl)
    for piece in pieces:
        assert sink_p.feed(piece) == []
        for m in msg_p.feed(piece):
            called(m)
    assert cols(sunk.target.columns()) == cols(called.target.columns())
    assert sunk.target.delivered == called.target.delivered == len(frames)



@pytest.mark.parametrize("token, expect", [
    ("1", 1), ("9223372036854775807", 2**63 - 1), ("0009223372036854775807", 2**63 - 1),
    ("9223372036854775808", OverflowError), ("18446744073709551617", OverflowError),
    ("99999999999999999999999", OverflowError), ("12a", NotJSMessageError), ("", NotJSMessageError),
])
def test_ack_numbers_at_the_edges(impl, msg_cls, token, expect):
    """The timestamp token of an ack subject, read from a frame and from a message."""
    reply = f"$JS.ACK.S.C.1.7.1.{token}.5"
    c, _ = collector(impl)
    c.take_frame(b"a", reply.encode(), None, b"x")
    rows = impl.AckRows("r", 1000, 10)
    if isinstance(expect, int):
        rows.add(msg_cls("a", b"x", reply=reply))
        assert list(cols(c.target.columns())[2]) == list(cols(rows.columns())[2]) == [expect // 1000]
    else:
        assert isinstance(c.target.error, expect)
        with pytest.raises(expect):
            rows.add(msg_cls("a", b"x", reply=reply))


def test_sinks_dict_cannot_be_replaced(impl):
    p = impl.Parser(impl.MsgBase)
    with pytest.raises(AttributeError):
        p.sinks = None
    p.sinks[3] = impl.FrameSink()
    assert list(p.sinks) == [3]


DIRECT_REPLY = b"_INBOX.direct.7"


def direct_hdr(subject, seq, time, extra=(), drop=(), twice=False, spaces=False):
    lines = [(b"Nats-Stream", b"S"), (b"Nats-Subject", subject), (b"Nats-Sequence", seq),
             (b"Nats-Time-Stamp", time), (b"Nats-Num-Pending", b"3"), (b"Nats-Last-Sequence", b"9"), *extra]
    lines = [kv for kv in lines if kv[0] not in drop]
    if twice:
        lines.append((b"Nats-Subject", b"again"))
    sep = b":  " if spaces else b": "
    return b"NATS/1.0\r\n" + b"".join(k + sep + v + (b" \t" if spaces else b"") + b"\r\n" for k, v in lines) + b"\r\n"


direct_st = st.lists(st.tuples(
    st.sampled_from([b"a.b", b"orders.\xff", b"x"]),  # Nats-Subject
    st.sampled_from([b"7", b"123456789012345678", b"1234567890123456789", b"12x", b""]),  # Nats-Sequence
    st.sampled_from([b"2026-11-28T04:43:36.123456789Z", b"2026-11-28T04:43:36Z", b"yesterday", b"2026-11-28 04:43"]),
    st.sampled_from([(), ((b"X-Mine", b"1"),), ((b"X-Mine", b"1"), (b"X-Mine", b"2"))]),  # published headers
    st.sampled_from([(), (b"Nats-Sequence",), (b"Nats-Last-Sequence",)]),  # headers left out
    st.booleans(), st.booleans(), st.binary(max_size=30),
), min_size=1, max_size=20)


@HYP
@given(replies=direct_st, cuts=st.lists(st.integers(1, 300), max_size=12))
def test_direct_sink_rows_equal_message_rows(impl, replies, cuts):
    """Batched direct-get replies (the usual header block and every odd one), then the
    end-of-batch status, give the same rows and statuses through the sink as through
    messages handed to ``__call__``."""
    frames = [hmsg_frame(DIRECT_REPLY, 1, None, direct_hdr(s, q, t, extra, drop, twice, spaces), d)
              for s, q, t, extra, drop, twice, spaces, d in replies]
    frames.insert(1, hmsg_frame(b"_INBOX.direct.6", 1, None, direct_hdr(b"late", b"1", b"x"), b"old"))
    frames.append(hmsg_frame(DIRECT_REPLY, 1, None, b"NATS/1.0 204 EOB\r\nNats-Last-Sequence: 9\r\n\r\n", b""))
    stream = b"".join(frames)
    pieces, pos = [], 0
    for n in cuts:
        pieces.append(stream[pos:pos + n])
        pos += n
    pieces.append(stream[pos:])
    results = []
    for use_sink in (True, False):
        p = impl.Parser(impl.MsgBase)
        statuses = []
        c = impl.DirectCollector(statuses.append)
        c.target = impl.DirectRows(DIRECT_REPLY.decode())
        if use_sink:
            p.sinks[1] = c
        for piece in pieces:
            for m in p.feed(piece):
                c(m)
        subjects, seqs, times, data, headers, odd = c.target.columns()
        error = c.target.error
        results.append(((subjects, list(seqs), list(times), data, headers, odd),
                        (type(error), str(error)), [m.headers.status for m in statuses]))
    assert results[0] == results[1]
    assert results[0][2] == ["204"]


def test_direct_sink_takes_the_usual_replies(impl):
    p = impl.Parser(impl.MsgBase)
    c = impl.DirectCollector(lambda m: None)
    c.target = impl.DirectRows(DIRECT_REPLY.decode())
    p.sinks[1] = c
    out = p.feed(hmsg_frame(DIRECT_REPLY, 1, None, direct_hdr(b"a.b", b"5", b"1970-01-01T00:00:01.5Z"), b"pay")
                 + hmsg_frame(DIRECT_REPLY, 1, None, b"NATS/1.0\r\nbroken line\r\n\r\n", b"x"))
    assert [e[0] for e in out] == [impl.OP_FRAME_ERROR]  # the malformed block: reported, not taken
    assert p.taken_msgs == 1
    subjects, seqs, times, data, headers, odd = c.target.columns()
    assert (subjects, list(seqs), list(times), data, headers, odd) == (["a.b"], [5], [1_500_000], [b"pay"], None, [])
