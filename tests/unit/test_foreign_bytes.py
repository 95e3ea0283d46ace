"""Bytes another client may send, for both implementations: content that is not UTF-8
arrives exactly and goes back out unchanged, a malformed message inside a well-framed
HMSG is skipped and reported (never fatal), and a framing error still routes what came
before it. Plus the locks that guard state two threads share (blocking flavour)."""
from __future__ import annotations

import threading
from collections import deque

import pytest

from jetwire.errors import BadSubjectError, NotJSMessageError, ProtocolError


def wire(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


class Signal:
    def __init__(self) -> None:
        self.sets = 0

    def set(self) -> None:
        self.sets += 1


def make_sub(impl, direct=None, lock=None):
    sub = impl.SubState()
    sub._client = "client"
    sub._pending = deque()
    sub._signal = Signal()
    sub._pmsgs_limit = sub._pbytes_limit = 1 << 62
    sub._direct = direct
    sub._lock = lock
    return sub


HDR = b"NATS/1.0\r\nX-Latin1: caf\xe9\r\nX-\xe9t\xe9: \xff\xfe\r\nOk: plain\r\nX-\xe9t\xe9: 2\r\n\r\n"


def hmsg(subject: bytes, sid: int, reply: bytes, hdr: bytes, payload: bytes) -> bytes:
    r = reply + b" " if reply else b""
    return b"HMSG %s %d %s%d %d\r\n%s%s\r\n" % (subject, sid, r, len(hdr), len(hdr) + len(payload), hdr, payload)


# --------------------------------------------------------------------- exact round trips
def test_frames_round_trip_exactly(impl, msg_cls):
    """Decode a frame, encode what it gave: the original bytes (as PUB/HPUB)."""
    subject, reply, payload = b"in.\xff\xfe.caf\xe9", b"_INBOX.\xc3(.\x80", b"\x00\xffdata"
    frames = [b"MSG %s 7 %s %d\r\n%s\r\n" % (subject, reply, len(payload), payload),
              hmsg(subject, 7, reply, HDR, payload), hmsg(subject, 7, b"", HDR, payload)]
    p = impl.Parser(msg_cls)
    msgs = p.feed(b"".join(frames))
    assert len(msgs) == 3
    m = msgs[0]
    assert wire(m.subject) == subject and wire(m.reply) == reply and m.data == payload
    buf = bytearray()
    impl.append_pub(buf, m.subject, m.reply, m.data)
    assert bytes(buf) == b"PUB " + frames[0][4:].replace(b" 7 ", b" ", 1)
    for m, frame in zip(msgs[1:], frames[1:], strict=False):
        h = m.headers
        assert wire(h["X-Latin1"]) == b"caf\xe9"
        assert [wire(v) for v in h.get_all("X-\udce9t\udce9")] == [b"\xff\xfe", b"2"]
        assert [(wire(k), wire(v)) for k, v in h.items()] == [
            (b"X-Latin1", b"caf\xe9"), (b"X-\xe9t\xe9", b"\xff\xfe"), (b"X-\xe9t\xe9", b"2"), (b"Ok", b"plain")]
        raw = impl.encode_headers(h)
        # the names keep their order of first appearance, a name's values stay together
        assert raw == b"NATS/1.0\r\nX-Latin1: caf\xe9\r\nX-\xe9t\xe9: \xff\xfe\r\nX-\xe9t\xe9: 2\r\nOk: plain\r\n\r\n"
        assert impl.decode_headers(raw) == h
        buf = bytearray()
        impl.append_hpub(buf, m.subject, m.reply, raw, m.data)
        ob = impl.Outbox()
        ob.append_hpub(m.subject, m.reply, raw, m.data)
        assert bytes(ob.buf) == bytes(buf)
        assert bytes(buf) == b"HPUB " + frame[5:].replace(b" 7 ", b" ", 1).replace(HDR, raw)
    sub = bytearray()
    impl.append_sub(sub, m.subject, "q.\udcff", 3)
    assert bytes(sub) == b"SUB " + subject + b" q.\xff 3\r\n"


def test_the_publish_fast_path_sends_escapes_as_their_bytes(impl):
    ob = impl.Outbox(ret="fast")
    ob.connected = True
    for _ in range(2):  # the second time through the outbox's subject cache
        assert ob.publish("a.\udcff\udcfe", b"x", "r.caf\udce9") == "fast"
    assert bytes(ob.take()) == b"PUB a.\xff\xfe r.caf\xe9 1\r\nx\r\n" * 2


def test_headers_given_as_bytes_or_escapes_go_out_verbatim(impl):
    raw = impl.encode_headers({b"X-\xe9": [b"\xff", "caf\udce9", "ok"], "K": b"\x80\x81"})
    assert raw == b"NATS/1.0\r\nX-\xe9: \xff\r\nX-\xe9: caf\xe9\r\nX-\xe9: ok\r\nK: \x80\x81\r\n\r\n"
    h = impl.decode_headers(raw)
    assert impl.encode_headers(h) == raw


@pytest.mark.parametrize("subject", ["a.\udcff", "\udcc3\udca9", "x.\udce2\udc80", "caf\udce9.\udcff.b"])
def test_subjects_holding_escapes_are_valid(impl, subject):
    impl.validate_subject(subject)
    buf = bytearray()
    impl.append_pub(buf, subject, None, b"")
    assert bytes(buf) == b"PUB %s 0\r\n\r\n" % wire(subject)


@pytest.mark.parametrize("subject, error", [
    ("a.\udcc2\udca0", "whitespace"),  # the bytes of U+00A0 (no-break space)
    ("a.\udce2\udc80\udc80", "whitespace"),  # U+2000
    ("\udcc2\x85", "whitespace"),  # an escape next to a real control character
    (".\udcff", "empty token"),
    ("\udcff..b", "empty token"),
    ("\ud800", "not encodable"),  # a lone surrogate that stands for no byte
    ("a\ud800 b", "whitespace"),
])
def test_escapes_do_not_smuggle_whitespace_or_empty_tokens(all_impls, subject, error):
    messages = set()
    for impl in all_impls.values():
        with pytest.raises(BadSubjectError) as ei:
            impl.validate_subject(subject)
        assert error in str(ei.value)
        messages.add(str(ei.value))
        ob = impl.Outbox()
        ob.connected = True
        with pytest.raises(BadSubjectError):
            ob.publish(subject, b"x")
        if error != "empty token":  # (a queue name has no tokens)
            with pytest.raises(BadSubjectError):
                impl.append_sub(bytearray(), "ok", subject, 1)
        assert ob.buf == b""
    assert len(messages) == 1  # the same message from both


@pytest.mark.parametrize("subject", [
    "$JS.ACK.\udcffS.C.1.2.3.1700000000000000000.0",
    "$JS.ACK.S.C\udce9.1.2.3.1700000000000000000.0",
    "$JS.ACK.S.C.1.2\udcff.3.1700000000000000000.0",
    "$JS.ACK.dom\udcff.acc.S.C.1.2.3.1700000000000000000.0.tok",
    "$JS.ACK.S.C.1.2.3.\ud800.0",
])
def test_ack_subjects_with_odd_bytes_are_one_message_error(impl, subject):
    with pytest.raises(NotJSMessageError):
        impl.parse_metadata_fields(subject)


def test_metadata_of_a_message_with_odd_reply_bytes_fails_for_that_message_only():
    from jetwire import Msg, _impl
    from jetwire.protocol import parse_metadata

    with pytest.raises(NotJSMessageError):
        parse_metadata("$JS.ACK.\udcffS.C.1.2.3.1700000000000000000.0")
    p = _impl.Parser(Msg)  # (Msg is built on the selected implementation)
    reply = b"$JS.ACK.S\xff.C.1.2.3.1700000000000000000.0"
    m1, m2 = p.feed(b"MSG a 1 %s 1\r\nx\r\nMSG a 1 $JS.ACK.S.C.1.2.3.1700000000000000000.0 1\r\ny\r\n" % reply)
    with pytest.raises(ValueError):  # NotJSMessageError is a ValueError
        m1.metadata
    assert m2.metadata.stream == "S" and m2.metadata.sequence.stream == 2


# ------------------------------------------------------------- one malformed message
MALFORMED = [
    b"NATS/1.0\r\nno colon here\r\n\r\n",
    b"NATS/1.0\r\n: no name\r\n\r\n",
    b"NATS/1.0\r\nBad Name: v\r\n\r\n",
    b"NATS/1.0\r\nA\x00: v\r\n\r\n",
    b"HTTP/1.1\r\nA: b\r\n\r\n",
    b"NATS/1.0x\r\n\r\n",
    b"NATS/1.0\r\n\r\nextra",
    b"",
]


@pytest.mark.parametrize("bad", MALFORMED)
def test_a_malformed_message_between_two_good_ones_is_skipped_and_reported(impl, msg_cls, bad):
    log: list = []
    sub = make_sub(impl)
    got: list = []
    direct = make_sub(impl, direct=got.append)
    router = impl.Router(impl.Parser(msg_cls), {1: sub, 2: direct}, log.append, None, None)
    stream = (b"MSG good.1 1 1\r\na\r\n" + hmsg(b"bad.\xff", 1, b"r", bad, b"payload")
              + hmsg(b"good.2", 2, b"", HDR, b"b") + hmsg(b"bad.2", 2, b"", bad, b"") + b"PING\r\n")
    router.feed(stream)  # no exception
    assert [m.subject for m in sub._pending] == ["good.1"] and [m.subject for m in got] == ["good.2"]
    assert [ev[0] for ev in log] == [impl.OP_FRAME_ERROR, impl.OP_FRAME_ERROR, impl.OP_PING]
    errs = [ev[1] for ev in log[:2]]
    assert all(type(e) is ProtocolError for e in errs)
    assert [e.subject for e in errs] == ["bad.\udcff", "bad.2"]
    assert "'bad.\\udcff'" in str(errs[0]) and "message skipped" in str(errs[0])
    assert router.in_msgs == 2  # what was skipped is not counted
    # byte by byte: the same events
    log2: list = []
    sub2 = make_sub(impl)
    got2: list = []
    router2 = impl.Router(impl.Parser(msg_cls), {1: sub2, 2: make_sub(impl, direct=got2.append)}, log2.append,
                          None, None)
    for i in range(len(stream)):
        router2.feed(stream[i:i + 1])
    assert [m.subject for m in sub2._pending] == ["good.1"] and [m.subject for m in got2] == ["good.2"]
    assert [(ev[0], getattr(ev[1], "subject", None), str(ev[1])) for ev in log2] == [
        (ev[0], getattr(ev[1], "subject", None), str(ev[1])) for ev in log]


def test_frame_errors_are_identical_in_both(all_impls, make_msg_cls):
    stream = b"".join(hmsg(b"s.%d" % i, 1, b"", bad, b"p") for i, bad in enumerate(MALFORMED))
    seen = set()
    for impl in all_impls.values():
        events = impl.Parser(make_msg_cls(impl)).feed(stream)
        seen.add(tuple((ev[0], ev[1].subject, str(ev[1])) for ev in events))
    assert len(seen) == 1 and len(next(iter(seen))) == len(MALFORMED)


def test_a_framing_error_routes_what_came_before_it(impl, msg_cls):
    log: list = []
    sub = make_sub(impl)
    got: list = []
    router = impl.Router(impl.Parser(msg_cls), {1: sub, 2: make_sub(impl, direct=got.append)}, log.append,
                         None, None)
    router.feed(b"MSG a 1 1\r\nx")  # a partial frame first: the read completes it
    with pytest.raises(ProtocolError) as ei:
        router.feed(b"\r\nPING\r\nMSG b 2 1\r\ny\r\n" + hmsg(b"c", 1, b"", b"NATS/1.0\r\nnope\r\n\r\n", b"")
                    + b"MSG d 1 1\r\nxyz\r\nMSG e 1 1\r\nz\r\n")
    assert "missing CRLF" in str(ei.value)
    assert [m.subject for m in sub._pending] == ["a"] and [m.subject for m in got] == ["b"]
    assert [ev[0] for ev in log] == [impl.OP_PING, impl.OP_FRAME_ERROR]
    assert router.in_msgs == 2 and sub._signal.sets == 1


def test_an_unframeable_first_frame_raises_with_no_events(impl, msg_cls):
    log: list = []
    router = impl.Router(impl.Parser(msg_cls), {}, log.append, None, None)
    with pytest.raises(ProtocolError) as ei:
        router.feed(b"NONSENSE\r\n")
    assert ei.value.events == [] and log == []


# ---------------------------------------------------------------- two threads, a lock
def test_a_subscription_queue_shared_by_reader_and_consumer(impl, msg_cls):
    """The reader queues while a consumer thread pops: with the subscription's lock the
    byte count ends exact and every message arrives once, in order."""
    sub = make_sub(impl, lock=impl.Lock())
    router = impl.Router(impl.Parser(msg_cls), {1: sub}, None, None, None)
    n = 20000
    frames = [b"MSG s 1 %d\r\n%s\r\n" % (len(b"%d" % i), b"%d" % i) for i in range(n)]
    got: list = []
    done = threading.Event()

    def consumer():
        nxt = sub._next
        while len(got) < n:
            m = nxt()
            if m is None:
                if done.is_set() and not sub._pending:
                    break
                continue
            got.append(m.data)

    t = threading.Thread(target=consumer)
    t.start()
    for i in range(0, n, 7):
        router.feed(b"".join(frames[i:i + 7]))
    done.set()
    t.join()
    assert got == [b"%d" % i for i in range(n)]
    assert sub._pending_bytes == 0 and not sub._pending and not sub._lock.locked()
    router.feed(b"".join(frames[:5]))
    sub.discard_pending()
    assert sub._pending_bytes == 0 and not sub._pending


def test_ack_mux_tokens_from_many_threads(impl):
    from jetwire import Msg
    from jetwire.jetstream.models import PubAck

    class Mux(impl.AckMux):
        __slots__ = ()

        def _other(self, msg, token, entry):
            raise AssertionError(msg)

        def _after_pop(self):
            pass

    mux = Mux("_I.", PubAck.plain, impl.Lock())
    futs: list = []
    tokens: list = []

    def publisher():
        for _ in range(2000):
            f = impl.AckFuture()
            tokens.append(mux.add(f, "s", None, b"", 0, 0.0))
            futs.append(f)

    ts = [threading.Thread(target=publisher) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(set(tokens)) == 8000 and mux._n == 8000 and len(mux.pending) == 8000
    for i, tok in enumerate(tokens):
        mux.on_msg(Msg("_I." + tok, b'{"stream":"S","seq":%d}' % i))
    assert not mux.pending and all(f.result(0).stream == "S" for f in futs)
