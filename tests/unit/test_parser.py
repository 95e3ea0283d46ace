"""Protocol parser: every test runs against the pure twin and the compiled module."""
from __future__ import annotations

import gc

import pytest

from jetwire.errors import ProtocolError
from jetwire.protocol.headers import Headers


def parse_all(impl, msg_cls, data, **kw):
    return impl.Parser(msg_cls, **kw).feed(data)


def one(impl, msg_cls, data, **kw):
    events = parse_all(impl, msg_cls, data, **kw)
    assert len(events) == 1, events
    return events[0]


def feed_bytewise(impl, msg_cls, data, **kw):
    p = impl.Parser(msg_cls, **kw)
    out = []
    for i in range(len(data)):
        out += p.feed(data[i : i + 1])
    return out


def key(ev):
    if isinstance(ev, tuple):
        return ev
    h = ev.headers
    hk = None if h is None else (h.to_dict(), h.status, h.description)
    return (type(ev).__name__, ev.subject, ev.reply, ev.data, ev.sid, hk)


# ------------------------------------------------------------------------------- MSG
def test_msg_without_reply(impl, msg_cls):
    m = one(impl, msg_cls, b"MSG foo.bar 9 5\r\nhello\r\n")
    assert type(m) is msg_cls
    assert isinstance(m, impl.MsgBase)
    assert (m.subject, m.sid, m.reply, m.data, m.headers) == ("foo.bar", 9, None, b"hello", None)
    assert type(m.data) is bytes and type(m.subject) is str and type(m.sid) is int
    assert m._client is None and m._ackd is False and m._meta is None


def test_msg_with_reply(impl, msg_cls):
    m = one(impl, msg_cls, b"MSG foo 1 _INBOX.abc.1 3\r\nabc\r\n")
    assert (m.subject, m.sid, m.reply, m.data) == ("foo", 1, "_INBOX.abc.1", b"abc")


def test_default_msg_cls_is_msgbase(impl):
    m = impl.Parser().feed(b"MSG a 1 0\r\n\r\n")[0]
    assert type(m) is impl.MsgBase


def test_rejects_non_msgbase_class(impl):
    class Other:
        pass

    with pytest.raises(TypeError):
        impl.Parser(Other)
    with pytest.raises(TypeError):
        impl.Parser("not a class")


def test_empty_payload(impl, msg_cls):
    m = one(impl, msg_cls, b"MSG foo 1 0\r\n\r\n")
    assert m.data == b"" and type(m.data) is bytes


def test_payload_with_crlf(impl, msg_cls):
    payload = b"a\r\nMSG x 1 2\r\n\r\n\r\n"
    m = one(impl, msg_cls, b"MSG foo 1 %d\r\n%s\r\n" % (len(payload), payload))
    assert m.data == payload


def test_large_payload(impl, msg_cls):
    payload = bytes(range(256)) * 4096  # 1 MiB
    frame = b"MSG big 7 %d\r\n%s\r\n" % (len(payload), payload)
    m = one(impl, msg_cls, frame)
    assert m.data == payload
    # delivered in 64 KiB chunks
    p = impl.Parser(msg_cls)
    events = []
    for i in range(0, len(frame), 65536):
        events += p.feed(frame[i : i + 65536])
    assert len(events) == 1 and events[0].data == payload
    assert p.buffered == 0


def test_non_ascii_subject_and_reply(impl, msg_cls):
    m = one(impl, msg_cls, "MSG café.ü 1 rép.ñ 1\r\nx\r\n".encode())
    assert m.subject == "café.ü" and m.reply == "rép.ñ"


def test_subject_and_reply_that_are_not_utf8_are_kept_exactly(impl, msg_cls):
    m = one(impl, msg_cls, b"MSG \xff\xfe.caf\xe9 1 r.\xe9 1\r\nx\r\n")
    assert m.subject.encode("utf-8", "surrogateescape") == b"\xff\xfe.caf\xe9"
    assert m.reply.encode("utf-8", "surrogateescape") == b"r.\xe9"
    buf = bytearray()
    impl.append_pub(buf, m.reply, m.subject, b"y")  # answering sends the exact bytes back
    assert bytes(buf) == b"PUB r.\xe9 \xff\xfe.caf\xe9 1\r\ny\r\n"
    impl.validate_subject(m.subject)


def test_many_subjects_cached_correctly(impl, msg_cls):
    data = b"".join(b"MSG s.%d %d 1\r\n%d\r\n" % (i % 300, i, i % 10) for i in range(3000))
    events = parse_all(impl, msg_cls, data)
    assert [m.subject for m in events] == ["s.%d" % (i % 300) for i in range(3000)]
    assert [m.sid for m in events] == list(range(3000))
    assert [m.data for m in events] == [b"%d" % (i % 10) for i in range(3000)]


def test_sid_large_and_leading_zeros(impl, msg_cls):
    m = one(impl, msg_cls, b"MSG a 999999999999999999 0\r\n\r\n")
    assert m.sid == 999999999999999999
    m = one(impl, msg_cls, b"MSG a 007 0\r\n\r\n")
    assert m.sid == 7


# ------------------------------------------------------------------------------ HMSG
HDR = b"NATS/1.0\r\nA: 1\r\nB: two\r\nA: 3\r\n\r\n"


def test_hmsg(impl, msg_cls):
    frame = b"HMSG foo.bar 4 _INBOX.r %d %d\r\n%spayload\r\n" % (len(HDR), len(HDR) + 7, HDR)
    m = one(impl, msg_cls, frame)
    assert (m.subject, m.sid, m.reply, m.data) == ("foo.bar", 4, "_INBOX.r", b"payload")
    assert isinstance(m.headers, Headers)
    assert m.headers.to_dict() == {"A": ["1", "3"], "B": ["two"]}
    assert m.headers["A"] == "1" and m.headers.status is None


def test_hmsg_without_reply_and_empty_payload(impl, msg_cls):
    frame = b"HMSG foo 4 %d %d\r\n%s\r\n" % (len(HDR), len(HDR), HDR)
    m = one(impl, msg_cls, frame)
    assert m.reply is None and m.data == b""
    assert m.headers.get_all("A") == ["1", "3"]


def test_hmsg_status_only(impl, msg_cls):
    h = b"NATS/1.0 503\r\n\r\n"
    m = one(impl, msg_cls, b"HMSG _INBOX.x 2 %d %d\r\n%s\r\n" % (len(h), len(h), h))
    assert m.headers.status == "503" and m.headers.description is None and len(m.headers) == 0
    assert m.data == b""
    assert bool(m.headers)


def test_hmsg_heartbeat(impl, msg_cls):
    h = b"NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 0\r\nNats-Last-Stream: 42\r\n\r\n"
    m = one(impl, msg_cls, b"HMSG hb 2 %d %d\r\n%s\r\n" % (len(h), len(h), h))
    assert m.headers.status == "100"
    assert m.headers.description == "Idle Heartbeat"
    assert m.headers["Nats-Last-Stream"] == "42"


def test_hmsg_header_len_exceeds_total(impl, msg_cls):
    with pytest.raises(ProtocolError):
        parse_all(impl, msg_cls, b"HMSG a 1 20 10\r\n")


def test_hmsg_bad_header_block_skips_that_message_only(impl, msg_cls):
    for h in (b"HTTP/1.1\r\nA: b\r\n\r\n", b"NATS/1.0\r\nno colon here\r\n\r\n"):
        data = (b"MSG before 1 1\r\na\r\n" + b"HMSG bad.%s 1 %d %d\r\n%s\r\n" % (b"x", len(h), len(h), h)
                + b"MSG after 1 1\r\nb\r\n")
        events = parse_all(impl, msg_cls, data)
        msgs = [e for e in events if type(e) is not tuple]
        assert [m.subject for m in msgs] == ["before", "after"]
        errs = [e for e in events if type(e) is tuple]
        assert [e[0] for e in errs] == [impl.OP_FRAME_ERROR]
        assert isinstance(errs[0][1], ProtocolError) and errs[0][1].subject == "bad.x"


def test_hmsg_zero_header_len_skips_that_message(impl, msg_cls):
    events = parse_all(impl, msg_cls, b"HMSG a 1 0 2\r\nhi\r\nMSG b 1 1\r\nx\r\n")
    assert events[0][0] == impl.OP_FRAME_ERROR and events[1].subject == "b"


def test_framing_error_keeps_what_was_parsed_before_it(impl, msg_cls):
    p = impl.Parser(msg_cls, 4096)
    with pytest.raises(ProtocolError) as ei:
        p.feed(b"MSG a 1 1\r\nx\r\nPING\r\nMSG b 1 5\r\nxy\r\nGARBAGE\r\n")
    got = ei.value.events
    assert got[0].subject == "a" and got[1] == (impl.OP_PING, None) and len(got) == 2


def test_hmsg_headers_stay_usable_and_collectable(impl, msg_cls):
    import weakref

    frame = b"HMSG foo 4 %d %d\r\n%s\r\n" % (len(HDR), len(HDR), HDR)
    msgs = parse_all(impl, msg_cls, frame * 50)
    gc.collect()
    m = msgs[0]
    m.headers.add("A", "4")
    m.headers.add("New", "x")
    m.headers["B"] = ["p", "q"]
    gc.collect()
    assert m.headers.to_dict() == {"A": ["1", "3", "4"], "B": ["p", "q"], "New": ["x"]}
    assert msgs[1].headers.get_all("A") == ["1", "3"]

    class Client:
        pass

    c = Client()
    m._client = c
    c.pending = msgs
    ref = weakref.ref(c)
    del c, m, msgs
    gc.collect()
    assert ref() is None


def test_plain_msg_becomes_tracked_when_holding_containers(impl, msg_cls):
    m = one(impl, msg_cls, b"MSG a 1 0\r\n\r\n")
    m._client = [m]  # a cycle through a container must be visible to the collector
    assert gc.is_tracked(m)
    m2 = one(impl, msg_cls, b"MSG a 1 0\r\n\r\n")
    m2._meta = {"x": 1}
    assert gc.is_tracked(m2)
    m3 = one(impl, msg_cls, b"MSG a 1 0\r\n\r\n")
    m3.data = bytearray(b"x")
    assert gc.is_tracked(m3)
    m4 = one(impl, msg_cls, b"MSG a 1 0\r\n\r\n")
    m4.headers = Headers({"a": "b"})  # Headers hold only str: no cycle can pass through them
    m4.reply = "r"
    assert m4.headers["a"] == "b" and m4.reply == "r"


def test_cycle_through_client_is_collected(impl, msg_cls):
    import weakref

    class Client:
        pass

    c = Client()
    m = one(impl, msg_cls, b"MSG a 1 0\r\n\r\n")
    m._client = c
    c.pending = [m]
    ref = weakref.ref(c)
    del c, m
    gc.collect()
    assert ref() is None


# ------------------------------------------------------------------------- other ops
def test_ping_pong_ok_err(impl, msg_cls):
    events = parse_all(impl, msg_cls, b"PING\r\nPONG\r\n+OK\r\n-ERR 'Unknown Protocol Operation'\r\n")
    assert events == [
        (impl.OP_PING, None),
        (impl.OP_PONG, None),
        (impl.OP_OK, None),
        (impl.OP_ERR, "Unknown Protocol Operation"),
    ]


def test_err_variants(impl, msg_cls):
    evs = parse_all(impl, msg_cls, b"-ERR\r\n-ERR  plain text \r\n-ERR ''\r\n-ERR 'a\r\n-ERR '\xff'\r\n")
    assert evs == [
        (impl.OP_ERR, ""),
        (impl.OP_ERR, "plain text"),
        (impl.OP_ERR, ""),
        (impl.OP_ERR, "'a"),
        (impl.OP_ERR, "\ufffd"),
    ]


def test_info(impl, msg_cls):
    ev = one(impl, msg_cls, b'INFO {"server_id":"X","max_payload":1048576,"headers":true,"connect_urls":["a:1"]}\r\n')
    assert ev == (impl.OP_INFO, {"server_id": "X", "max_payload": 1048576, "headers": True, "connect_urls": ["a:1"]})


def test_info_bad_json(impl, msg_cls):
    for bad in (b"INFO {nope}\r\n", b"INFO\r\n", b"INFO [1,2]\r\n", b'INFO "x"\r\n'):
        with pytest.raises(ProtocolError):
            parse_all(impl, msg_cls, bad)


def test_constants(impl):
    assert {impl.OP_INFO, impl.OP_PING, impl.OP_PONG, impl.OP_OK, impl.OP_ERR} == {1, 2, 3, 4, 5}


def test_case_insensitive_ops(impl, msg_cls):
    h = b"NATS/1.0\r\n\r\n"
    data = (
        b"msg a 1 1\r\nx\r\nMsG b 2 1\r\ny\r\nping\r\nPing\r\npOnG\r\n+ok\r\n-err 'e'\r\ninfo {}\r\n"
        + b"hmsg c 3 %d %d\r\n%s\r\n" % (len(h), len(h), h)
    )
    evs = parse_all(impl, msg_cls, data)
    assert [key(e) for e in evs] == [
        ("TMsg", "a", None, b"x", 1, None),
        ("TMsg", "b", None, b"y", 2, None),
        (impl.OP_PING, None),
        (impl.OP_PING, None),
        (impl.OP_PONG, None),
        (impl.OP_OK, None),
        (impl.OP_ERR, "e"),
        (impl.OP_INFO, {}),
        ("TMsg", "c", None, b"", 3, ({}, None, None)),
    ]


def test_spaces_and_tabs(impl, msg_cls):
    evs = parse_all(impl, msg_cls, b"MSG\t foo  \t 1 \t\trep   3  \r\nabc\r\nPING \t\r\nINFO \t {\"a\": 1} \t\r\n")
    assert key(evs[0]) == ("TMsg", "foo", "rep", b"abc", 1, None)
    assert evs[1] == (impl.OP_PING, None)
    assert evs[2] == (impl.OP_INFO, {"a": 1})


def test_split_every_position(impl, msg_cls):
    h = "NATS/1.0 100 Idle Heartbeat\r\nK: v\r\nK: é:x\r\n\r\n".encode()
    stream = (
        b"INFO {\"a\":1}\r\nMSG a.b 1 3\r\nxyz\r\nPING\r\n"
        + b"HMSG c 2 r %d %d\r\n%s12\r\n" % (len(h), len(h) + 2, h)
        + b"MSG a.b 1 rep 4\r\n\r\n\r\n\r\n+OK\r\n-ERR 'boom'\r\nPONG\r\nMSG z 3 0\r\n\r\n"
    )
    expected = [key(e) for e in parse_all(impl, msg_cls, stream)]
    assert len(expected) == 9
    for i in range(len(stream) + 1):
        p = impl.Parser(msg_cls)
        got = p.feed(stream[:i]) + p.feed(stream[i:])
        assert [key(e) for e in got] == expected, i
        assert p.buffered == 0
    for i in range(0, len(stream), 7):
        for j in range(i, len(stream) + 1, 5):
            p = impl.Parser(msg_cls)
            got = p.feed(stream[:i]) + p.feed(stream[i:j]) + p.feed(stream[j:])
            assert [key(e) for e in got] == expected, (i, j)
    assert [key(e) for e in feed_bytewise(impl, msg_cls, stream)] == expected


def test_feed_types(impl, msg_cls):
    data = b"MSG a 1 2\r\nhi\r\n"
    for chunk in (data, bytearray(data), memoryview(data), memoryview(bytearray(data))):
        assert one(impl, msg_cls, chunk).data == b"hi"
    p = impl.Parser(msg_cls)
    assert p.feed(b"") == []
    with pytest.raises(TypeError):
        p.feed("MSG a 1 0\r\n\r\n")


def test_reused_input_buffer(impl, msg_cls):
    # The parser must copy what it keeps: the caller may reuse its receive buffer.
    p = impl.Parser(msg_cls)
    buf = bytearray(b"MSG a 1 4\r\nab")
    assert p.feed(memoryview(buf)) == []
    buf[:] = b"XXXXXXXXXXXXXXX"
    m = p.feed(b"cd\r\n")[0]
    assert m.data == b"abcd" and m.subject == "a"


def test_reset(impl, msg_cls):
    p = impl.Parser(msg_cls)
    assert p.feed(b"MSG a 1 10\r\nabc") == []
    assert p.buffered > 0
    p.reset()
    assert p.buffered == 0
    assert [key(e) for e in p.feed(b"PING\r\n")] == [(impl.OP_PING, None)]


def test_reset_after_error(impl, msg_cls):
    p = impl.Parser(msg_cls)
    with pytest.raises(ProtocolError):
        p.feed(b"BOGUS\r\n")
    p.reset()
    assert p.feed(b"PONG\r\n") == [(impl.OP_PONG, None)]


def test_buffer_shrinks_after_big_frame(impl, msg_cls):
    p = impl.Parser(msg_cls)
    payload = b"x" * (3 << 20)
    frame = b"MSG a 1 %d\r\n%s\r\n" % (len(payload), payload)
    events = []
    for i in range(0, len(frame), 100000):
        events += p.feed(frame[i : i + 100000])
    assert events[0].data == payload and p.buffered == 0
    assert p.feed(b"PING\r\n") == [(impl.OP_PING, None)]


# ---------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "data",
    [
        b"BOGUS\r\n",
        b"\r\n",
        b" MSG a 1 0\r\n\r\n",
        b"MSGX a 1 0\r\n\r\n",
        b"PINGX\r\n",
        b"PING extra\r\n",
        b"+OKAY\r\n",
        b"+OK x\r\n",
        b"-ERRx\r\n",
        b"INFO{}\r\n",
        b"MSG a\r\n",
        b"MSG a 1\r\n",
        b"MSG a 1 b c 4\r\n",
        b"MSG a x 0\r\n\r\n",
        b"MSG a 1 -1\r\n",
        b"MSG a -1 0\r\n\r\n",
        b"MSG a 1 +1\r\nx\r\n",
        b"MSG a 1 1x\r\nx\r\n",
        b"MSG a 1 0x1\r\nx\r\n",
        b"MSG a 1 1234567890123456789\r\n",
        b"MSG a 1234567890123456789 0\r\n\r\n",
        b"MSG a 1 \xd9\xa1\r\nx\r\n",
        b"HMSG a 1 12\r\n",
        b"HMSG a 1 r x 12\r\n",
        b"HMSG a 1 r 12 13 14\r\n",
        b"HMSG a 1 13 12\r\n",
        b"\x00\x01\x02\r\n",
    ],
)
def test_malformed_lines(impl, msg_cls, data):
    with pytest.raises(ProtocolError):
        parse_all(impl, msg_cls, data)


def test_missing_crlf_after_payload(impl, msg_cls):
    with pytest.raises(ProtocolError):
        parse_all(impl, msg_cls, b"MSG a 1 2\r\nabcd\r\n")
    with pytest.raises(ProtocolError):
        parse_all(impl, msg_cls, b"MSG a 1 2\r\nab\n\r")
    # incomplete trailer: wait, no error yet
    p = impl.Parser(msg_cls)
    assert p.feed(b"MSG a 1 2\r\nab\r") == []
    assert [key(e) for e in p.feed(b"\n")] == [("TMsg", "a", None, b"ab", 1, None)]


def test_oversized_payload(impl, msg_cls):
    with pytest.raises(ProtocolError):
        parse_all(impl, msg_cls, b"MSG a 1 101\r\n", max_payload=100)
    with pytest.raises(ProtocolError):
        parse_all(impl, msg_cls, b"MSG a 1 999999999999999999\r\n")
    with pytest.raises(ProtocolError):
        parse_all(impl, msg_cls, b"HMSG a 1 12 101\r\n", max_payload=100)
    ok = parse_all(impl, msg_cls, b"MSG a 1 100\r\n" + b"x" * 100 + b"\r\n", max_payload=100)
    assert ok[0].data == b"x" * 100


def test_control_line_too_long(impl, msg_cls):
    p = impl.Parser(msg_cls, max_control_line=64)
    assert p.feed(b"MSG " + b"a" * 50) == []  # may still end in time
    with pytest.raises(ProtocolError) as ei:
        p.feed(b"b" * 20)
    assert "too long" in str(ei.value)
    # a complete line that is too long
    with pytest.raises(ProtocolError):
        impl.Parser(msg_cls, max_control_line=16).feed(b"MSG aaaaaaaaaaaaaa 1 0\r\n\r\n")
    # exactly at the limit is fine, including a CR that arrives alone
    line = b"MSG " + b"s" * 8 + b" 1 0"
    p = impl.Parser(msg_cls, max_control_line=len(line))
    assert p.feed(line + b"\r") == []
    assert [key(e) for e in p.feed(b"\n\r\n")] == [("TMsg", "s" * 8, None, b"", 1, None)]
    # garbage without any CRLF does not wait forever: the default bound is 1 MiB
    p = impl.Parser(msg_cls)
    assert p.feed(b"x" * 5000) == []
    with pytest.raises(ProtocolError):
        p.feed(b"x" * (1 << 20))


def test_default_limit_takes_the_servers_long_lines(impl, msg_cls):
    """The server's own max_control_line (4096) bounds what clients send; its MSG lines add
    the sid and reply, its INFO lists the cluster: longer lines are read by default."""
    subject = b"s" * 4090
    info = b'INFO {"connect_urls": [' + b",".join(b'"10.0.%d.%d:4222"' % (i // 250, i % 250) for i in range(400)) + b"]}"
    err = b"-ERR 'Permissions Violation for Publish to \"" + subject + b"\"'"
    assert len(info) > 6000
    events = parse_all(impl, msg_cls, b"MSG " + subject + b" 1 $JS.ACK." + b"a" * 200 + b" 2\r\nhi\r\n"
                       + info + b"\r\n" + err + b"\r\n")
    assert events[0].subject == subject.decode() and events[0].data == b"hi"
    assert events[1][0] == impl.OP_INFO and events[2][0] == impl.OP_ERR


def test_control_line_limit_does_not_apply_to_payload(impl, msg_cls):
    p = impl.Parser(msg_cls, max_control_line=32)
    payload = b"y" * 1000
    assert one(impl, msg_cls, b"MSG a 1 1000\r\n" + payload + b"\r\n", max_control_line=32).data == payload
    assert p.feed(b"MSG a 1 1000\r\n" + payload[:500]) == []
    assert p.feed(payload[500:] + b"\r\n")[0].data == payload


def test_error_message_shows_bytes(impl, msg_cls):
    with pytest.raises(ProtocolError) as ei:
        parse_all(impl, msg_cls, b"WHAT is this " + b"z" * 200 + b"\r\n")
    text = str(ei.value)
    assert "WHAT is this" in text and len(text) < 200


def test_events_before_error_in_earlier_feed_are_kept(impl, msg_cls):
    p = impl.Parser(msg_cls)
    assert p.feed(b"PING\r\n") == [(impl.OP_PING, None)]
    with pytest.raises(ProtocolError):
        p.feed(b"GARBAGE\r\n")


# --------------------------------------------------------------------------- MsgBase
def test_msgbase_init_and_repr(impl, msg_cls):
    m = msg_cls("sub", b"data", "rep", {"K": "v"}, 3)
    assert (m.subject, m.data, m.reply, m.sid) == ("sub", b"data", "rep", 3)
    assert isinstance(m.headers, Headers) and m.headers["K"] == "v"
    assert m._client is None and m._ackd is False and m._meta is None
    assert "sub" in repr(m)
    m2 = impl.MsgBase(subject="x", data=bytearray(b"ab"))
    assert m2.data == b"ab" and type(m2.data) is bytes and m2.reply is None and m2.headers is None and m2.sid == 0
    m2._ackd = True
    assert m2._ackd is True
    m2._meta = "cached"
    assert m2._meta == "cached"


def test_subclass_has_no_dict(impl, msg_cls):
    m = msg_cls()
    with pytest.raises(AttributeError):
        m.other = 1


# -------------------------------------------------------------------- module selection
def test_selected_implementation(impl):
    from jetwire import _impl, protocol

    mods = _impl.implementations()
    assert mods["pure"].__name__ == "jetwire.protocol._pure"
    if _impl.force_pure():
        assert _impl.IMPLEMENTATION == "pure" and not _impl.speedups_enabled()
        assert _impl.Parser is mods["pure"].Parser
    else:
        # without JETWIRE_PURE=1 the compiled module must be built and selected
        assert "compiled" in mods, "jetwire._c is not built"
        assert _impl.IMPLEMENTATION == "compiled" and _impl.speedups_enabled()
        assert _impl.Parser is mods["compiled"].Parser
    for name in ("Parser", "MsgBase", "decode_headers", "encode_headers", "parse_metadata_fields", "append_pub",
                 "append_hpub", "append_sub", "append_unsub", "validate_subject", "PING", "PONG",
                 "OP_INFO", "OP_PING", "OP_PONG", "OP_OK", "OP_ERR"):
        assert getattr(protocol, name) is getattr(_impl, name)
        assert hasattr(impl, name)
    assert protocol.Headers is not None and "Parser" in dir(protocol)


def test_subclass_new_override_is_bypassed(impl):
    class Weird(impl.MsgBase):
        __slots__ = ()

        def __new__(cls, *args):
            return 5

    m = impl.Parser(Weird).feed(b"MSG a 1 0\r\n\r\n")[0]
    assert type(m) is Weird and m.subject == "a"


def test_uninitialised_parser_does_not_crash(impl):
    p = impl.Parser.__new__(impl.Parser)
    try:
        events = p.feed(b"MSG a 1 0\r\n\r\n")
    except AttributeError:  # the pure twin has no state before __init__
        return
    assert events[0].subject == "a"


def test_a_framing_error_discards_what_was_buffered(impl, msg_cls):
    """After a ProtocolError the parser holds nothing (as after ``reset()``), however the
    bytes came: in one piece, or after a partial frame was buffered."""
    for chunks in ([b"PING\r\nBOGUS\r\n"], [b"MSG a 1 2\r\nh", b"i\r\nBOGUS\r\n"]):
        p = impl.Parser(msg_cls)
        for chunk in chunks[:-1]:
            p.feed(chunk)
        with pytest.raises(ProtocolError):
            p.feed(chunks[-1])
        assert p.buffered == 0
        assert [key(e) if not isinstance(e, tuple) else e for e in p.feed(b"PONG\r\n")] == [(impl.OP_PONG, None)]


def test_feed_refuses_what_is_not_a_contiguous_buffer(impl, msg_cls):
    p = impl.Parser(msg_cls)
    for bad in ("PING\r\n", None, 5):
        with pytest.raises(TypeError, match="a bytes-like object is required"):
            p.feed(bad)
    with pytest.raises(BufferError):
        p.feed(memoryview(b"PING\r\nPING\r\n")[::2])
    assert p.feed(memoryview(b"PING\r\n")) == [(impl.OP_PING, None)]
