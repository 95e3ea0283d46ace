"""Encoder: exact bytes and subject validation, for both implementations."""
from __future__ import annotations

import sys

import pytest

from jetwire.errors import BadSubjectError


def test_pub(impl):
    buf = bytearray()
    impl.append_pub(buf, "foo.bar", None, b"hello")
    assert buf == b"PUB foo.bar 5\r\nhello\r\n"
    impl.append_pub(buf, "foo", "_INBOX.x.1", b"")
    assert buf == b"PUB foo.bar 5\r\nhello\r\nPUB foo _INBOX.x.1 0\r\n\r\n"


def test_pub_empty_reply_means_none(impl):
    buf = bytearray()
    impl.append_pub(buf, "a", "", b"x")
    assert buf == b"PUB a 1\r\nx\r\n"


def test_pub_data_types(impl):
    for data in (b"ab\r\ncd", bytearray(b"ab\r\ncd"), memoryview(b"ab\r\ncd"), memoryview(b"xxab\r\ncdxx")[2:-2]):
        buf = bytearray()
        impl.append_pub(buf, "s", None, data)
        assert buf == b"PUB s 6\r\nab\r\ncd\r\n"
    big = b"z" * 1_000_000
    buf = bytearray()
    impl.append_pub(buf, "s", None, big)
    assert buf == b"PUB s 1000000\r\n" + big + b"\r\n"


def test_pub_data_type_errors(impl):
    buf = bytearray()
    with pytest.raises(TypeError):
        impl.append_pub(buf, "s", None, "text")
    with pytest.raises(TypeError):
        impl.append_pub(buf, "s", None, None)
    with pytest.raises(BufferError):
        impl.append_pub(buf, "s", None, memoryview(b"abcdef")[::2])
    assert buf == b""


def test_non_ascii_subject(impl):
    buf = bytearray()
    impl.append_pub(buf, "café.ü", "ré", b"x")
    assert buf == "PUB café.ü ré 1\r\nx\r\n".encode()


def test_hpub(impl):
    hdr = b"NATS/1.0\r\nA: b\r\n\r\n"
    buf = bytearray()
    impl.append_hpub(buf, "foo", None, hdr, b"data")
    assert buf == b"HPUB foo %d %d\r\n%sdata\r\n" % (len(hdr), len(hdr) + 4, hdr)
    buf = bytearray()
    impl.append_hpub(buf, "foo", "rep", hdr, memoryview(b""))
    assert buf == b"HPUB foo rep %d %d\r\n%s\r\n" % (len(hdr), len(hdr), hdr)


def test_hpub_with_encoded_headers_round_trip(impl, msg_cls):
    hdr = impl.encode_headers({"K": ["1", "2"], "Nats-Msg-Id": "é"})
    buf = bytearray()
    impl.append_hpub(buf, "s.t", "r", hdr, b"\r\npayload")
    wire = bytes(buf).replace(b"HPUB", b"HMSG", 1).replace(b"s.t r", b"s.t 7 r", 1)
    m = impl.Parser(msg_cls).feed(wire)[0]
    assert m.subject == "s.t" and m.sid == 7 and m.reply == "r" and m.data == b"\r\npayload"
    assert m.headers == {"K": ["1", "2"], "Nats-Msg-Id": "é"}


def test_sub_unsub(impl):
    buf = bytearray()
    impl.append_sub(buf, "foo.*", None, 1)
    impl.append_sub(buf, "foo.>", "workers", 22)
    impl.append_sub(buf, "x", "", 3)
    impl.append_unsub(buf, 1)
    impl.append_unsub(buf, 22, 10)
    impl.append_unsub(buf, 3, 0)
    impl.append_unsub(buf, 4, None)
    impl.append_sub(buf, "y", None, 2**64 - 1)
    assert buf == (
        b"SUB foo.* 1\r\nSUB foo.> workers 22\r\nSUB x 3\r\n"
        b"UNSUB 1\r\nUNSUB 22 10\r\nUNSUB 3\r\nUNSUB 4\r\nSUB y 18446744073709551615\r\n"
    )


@pytest.mark.parametrize("sid", [-1, 2**64, 1.5, "1", None])
def test_sub_bad_sid(impl, sid):
    buf = bytearray()
    with pytest.raises((TypeError, ValueError)):
        impl.append_sub(buf, "a", None, sid)
    with pytest.raises((TypeError, ValueError)):
        impl.append_unsub(buf, sid)
    with pytest.raises((TypeError, ValueError)):
        impl.append_unsub(buf, 1, sid if sid is not None else -5)
    assert buf == b""


@pytest.mark.parametrize("queue", ["a b", "q\t", "\x00", "q\u3000", 5, b"q"])
def test_sub_bad_queue(impl, queue):
    buf = bytearray()
    with pytest.raises(BadSubjectError):
        impl.append_sub(buf, "a", queue, 1)
    assert buf == b""


def test_ping_pong(impl):
    assert impl.PING == b"PING\r\n" and impl.PONG == b"PONG\r\n"


BAD_SUBJECTS = [
    "",
    " ",
    "foo bar",
    "foo\tbar",
    "foo\r\n",
    "foo\nbar",
    "a\x00b",
    "a\x01",
    "a\x1f",
    "a\x7f",
    "a\x0b",
    "a\x0c",
    "a\x1c",
    "foo\u00a0bar",
    "foo\u0085",
    "foo\u1680",
    "foo\u2000",
    "foo\u200a",
    "foo\u2028",
    "foo\u2029",
    "foo\u202f",
    "foo\u205f",
    "foo\u3000",
    ".foo",
    "foo.",
    "foo..bar",
    ".",
    "..",
    "a\ud800",
    None,
    5,
    b"foo",
    ["foo"],
]


@pytest.mark.parametrize("subject", BAD_SUBJECTS)
def test_bad_subjects_raise_and_append_nothing(impl, subject):
    with pytest.raises(BadSubjectError):
        impl.validate_subject(subject)
    buf = bytearray(b"keep")
    bad_reply = "a b" if subject is None or subject == "" else subject  # None/"" mean "no reply"
    with pytest.raises(BadSubjectError):
        impl.append_pub(buf, subject, None, b"x")
    with pytest.raises(BadSubjectError):
        impl.append_pub(buf, "ok", bad_reply, b"x")
    with pytest.raises(BadSubjectError):
        impl.append_hpub(buf, subject, None, b"NATS/1.0\r\n\r\n", b"x")
    with pytest.raises(BadSubjectError):
        impl.append_hpub(buf, "ok", bad_reply, b"NATS/1.0\r\n\r\n", b"x")
    with pytest.raises(BadSubjectError):
        impl.append_sub(buf, subject, None, 1)
    assert buf == b"keep"


def test_bad_subject_is_value_error(impl):
    with pytest.raises(ValueError):
        impl.validate_subject("a b")


@pytest.mark.parametrize(
    "subject", ["foo", "foo.bar.baz", "foo.*", "foo.>", "$JS.API.INFO", "_INBOX.a1b2", "a-b_c/d=e", "日本.語", "x\u200b", "a\x80b", "é"]
)
def test_good_subjects(impl, subject):
    assert impl.validate_subject(subject) is None
    buf = bytearray()
    impl.append_pub(buf, subject, subject, b"")
    assert buf == b"PUB %s %s 0\r\n\r\n" % (subject.encode(), subject.encode())


def test_every_unicode_whitespace_is_rejected(impl):
    spaces = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]
    assert len(spaces) > 20
    for ch in spaces:
        with pytest.raises(BadSubjectError):
            impl.validate_subject("a" + ch + "b")
    for c in [*list(range(32)), 127]:
        with pytest.raises(BadSubjectError):
            impl.validate_subject("a" + chr(c))


def test_only_whitespace_and_controls_rejected(impl):
    # every BMP character that is neither whitespace nor a C0 control/DEL nor a surrogate is
    # fine (the wildcards, fine as whole tokens, are test_bad_input's)
    bad = {chr(c) for c in range(0x20)} | {"\x7f", ".", "*", ">"}
    chunk = []
    for c in range(0x10000):
        ch = chr(c)
        if ch in bad or ch.isspace() or 0xD800 <= c <= 0xDFFF:
            continue
        chunk.append(ch)
    text = "".join(chunk)
    for i in range(0, len(text), 512):
        impl.validate_subject(text[i : i + 512])


def test_validation_cache_does_not_leak_results(impl):
    buf = bytearray()
    impl.append_pub(buf, "good", None, b"")
    with pytest.raises(BadSubjectError):
        impl.append_pub(buf, "go od", None, b"")
    impl.append_pub(buf, "good", None, b"")
    for i in range(5000):
        impl.validate_subject("s.%d" % i)
    with pytest.raises(BadSubjectError):
        impl.validate_subject("s..1")
    assert buf == b"PUB good 0\r\n\r\nPUB good 0\r\n\r\n"


def test_str_subclass_subject(impl):
    class S(str):
        pass

    buf = bytearray()
    impl.append_pub(buf, S("sub.x"), None, b"")
    assert buf == b"PUB sub.x 0\r\n\r\n"
    with pytest.raises(BadSubjectError):
        impl.validate_subject(S("a b"))


def test_buf_must_be_bytearray(impl):
    with pytest.raises(TypeError):
        impl.append_pub(b"", "a", None, b"x")
    with pytest.raises(TypeError):
        impl.append_sub([], "a", None, 1)
    with pytest.raises(TypeError):
        impl.append_unsub(None, 1)


def test_exported_buffer_appends_nothing(impl):
    buf = bytearray(b"x")
    view = memoryview(buf)
    with pytest.raises(BufferError):
        impl.append_pub(buf, "a", None, b"data")
    view.release()
    assert buf == b"x"


def test_many_publishes_one_buffer(impl):
    buf = bytearray()
    for i in range(10000):
        impl.append_pub(buf, "bench.%d" % (i % 7), None, b"%d" % i)
    expected = b"".join(b"PUB bench.%d %d\r\n%d\r\n" % (i % 7, len(b"%d" % i), i) for i in range(10000))
    assert buf == expected
