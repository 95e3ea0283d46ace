"""Headers: the shared class, and both implementations' decode_headers/encode_headers."""
from __future__ import annotations

import copy

import pytest

from jetwire.errors import BadHeaderError, ProtocolError
from jetwire.protocol.headers import Headers


# ----------------------------------------------------------------------------- decode
def test_decode_plain(impl):
    h = impl.decode_headers(b"NATS/1.0\r\nNats-Msg-Id: abc\r\nFoo: bar\r\n\r\n")
    assert isinstance(h, Headers)
    assert h.to_dict() == {"Nats-Msg-Id": ["abc"], "Foo": ["bar"]}
    assert h.status is None and h.description is None
    assert list(h) == ["Nats-Msg-Id", "Foo"]


def test_decode_accepts_buffers(impl):
    raw = b"NATS/1.0\r\nA: b\r\n\r\n"
    for r in (raw, bytearray(raw), memoryview(raw)):
        assert impl.decode_headers(r) == {"A": "b"}


def test_decode_empty(impl):
    h = impl.decode_headers(b"NATS/1.0\r\n\r\n")
    assert len(h) == 0 and h.status is None and not h


@pytest.mark.parametrize(
    "raw, status, description, items",
    [
        (b"NATS/1.0 503\r\n\r\n", "503", None, []),
        (b"NATS/1.0 404 No Messages\r\n\r\n", "404", "No Messages", []),
        (b"NATS/1.0  408   Request Timeout  \r\n\r\n", "408", "Request Timeout", []),
        (b"NATS/1.0\t409 Consumer Deleted\r\n\r\n", "409", "Consumer Deleted", []),
        (
            b"NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 0\r\nNats-Last-Stream: 0\r\n\r\n",
            "100",
            "Idle Heartbeat",
            [("Nats-Last-Consumer", "0"), ("Nats-Last-Stream", "0")],
        ),
        (b"NATS/1.0 100 FlowControl Request\r\n\r\n", "100", "FlowControl Request", []),
        (b"NATS/1.0 \r\n\r\n", None, None, []),
    ],
)
def test_decode_status(impl, raw, status, description, items):
    h = impl.decode_headers(raw)
    assert h.status == status
    assert h.description == description
    assert h.items() == items
    assert bool(h) == (status is not None or bool(items))


def test_decode_repeated_keys_keep_order(impl):
    h = impl.decode_headers(b"NATS/1.0\r\nA: 1\r\nB: x\r\nA: 2\r\nA: 3\r\n\r\n")
    assert h.get_all("A") == ["1", "2", "3"]
    assert h["A"] == "1"
    assert h.items() == [("A", "1"), ("A", "2"), ("A", "3"), ("B", "x")]
    assert len(h) == 2


def test_decode_case_preserving_and_sensitive(impl):
    h = impl.decode_headers(b"NATS/1.0\r\nfoo: 1\r\nFoo: 2\r\nFOO: 3\r\n\r\n")
    assert h.to_dict() == {"foo": ["1"], "Foo": ["2"], "FOO": ["3"]}
    assert "fOo" not in h


def test_decode_non_ascii_and_colons(impl):
    raw = "NATS/1.0\r\nName: Zoë ☃ 日本\r\nUrl: http://x:80/a:b\r\nEmpty:\r\nSp:   \r\n\r\n".encode()
    h = impl.decode_headers(raw)
    assert h["Name"] == "Zoë ☃ 日本"
    assert h["Url"] == "http://x:80/a:b"
    assert h["Empty"] == "" and h["Sp"] == ""


def test_decode_whitespace_trimming(impl):
    h = impl.decode_headers(b"NATS/1.0\r\nA:   lead\r\nB:trail  \t\r\nC: \t both \t \r\nD: in  side\r\n\r\n")
    assert h.to_dict() == {"A": ["lead"], "B": ["trail"], "C": ["both"], "D": ["in  side"]}


def test_decode_status_with_non_ascii_description(impl):
    h = impl.decode_headers("NATS/1.0 409 Über limit\r\n\r\n".encode())
    assert (h.status, h.description) == ("409", "Über limit")


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"NATS/1.0",
        b"NATS/1.0\r\n",
        b"HTTP/1.0\r\n\r\n",
        b"nats/1.0\r\n\r\n",
        b"NATS/1.1\r\n\r\n",
        b"NATS/1.0503\r\n\r\n",
        b"A: b\r\n\r\n",
        b"NATS/1.0\r\nA: b\r\n",
        b"NATS/1.0\r\nA: b\r\n\r\nextra",
        b"NATS/1.0\r\nno colon\r\n\r\n",
        b"NATS/1.0\r\n: empty key\r\n\r\n",
        b"NATS/1.0\r\nBad Key: v\r\n\r\n",
        b"NATS/1.0\r\n Lead: v\r\n\r\n",
        b"NATS/1.0\r\nK\x01: v\r\n\r\n",
        b"NATS/1.0\r\nK\x7f: v\r\n\r\n",
        b"NATS/1.0\r\nA: b\r\n\r\nC: d\r\n\r\n",
        b"NATS/1.0\r\nA: b\rc\r\n\r\n",
        b"NATS/1.0\r\nA: b\nc\r\n\r\n",
        b"NATS/1.0 5\r03\r\n\r\n",
    ],
)
def test_decode_errors(impl, raw):
    with pytest.raises(ProtocolError):
        impl.decode_headers(raw)


# ----------------------------------------------------------------------------- encode
def test_encode_exact(impl):
    h = Headers()
    h.add("B", "1")
    h.add("A", "x: y")
    h.add("B", "2")
    h["C"] = "é"
    assert impl.encode_headers(h) == "NATS/1.0\r\nB: 1\r\nB: 2\r\nA: x: y\r\nC: é\r\n\r\n".encode()


def test_encode_dict_and_none(impl):
    assert impl.encode_headers(None) == b""
    assert impl.encode_headers({}) == b"NATS/1.0\r\n\r\n"
    assert impl.encode_headers(Headers()) == b"NATS/1.0\r\n\r\n"
    assert impl.encode_headers({"K": "v", "L": ["1", "2"], "M": ("a",)}) == (
        b"NATS/1.0\r\nK: v\r\nL: 1\r\nL: 2\r\nM: a\r\n\r\n"
    )


def test_encode_status(impl):
    h = Headers()
    h.status = "503"
    assert impl.encode_headers(h) == b"NATS/1.0 503\r\n\r\n"
    h.description = "No Responders"
    h.add("A", "b")
    assert impl.encode_headers(h) == b"NATS/1.0 503 No Responders\r\nA: b\r\n\r\n"


@pytest.mark.parametrize(
    "bad",
    [
        {"Bad Key": "v"},
        {"K:": "v"},
        {"": "v"},
        {"K": "a\r\nb"},
        {"K": ["ok", "b\n"]},
        {"K": 1},
        {"K": [1]},
        {1: "v"},
        {"K": "\ud800"},
    ],
)
def test_encode_rejects(impl, bad):
    with pytest.raises(BadHeaderError):
        impl.encode_headers(bad)


def test_encode_rejects_other_types(impl):
    with pytest.raises(TypeError):
        impl.encode_headers([("A", "b")])


def test_encode_rejects_bad_status(impl):
    h = Headers()
    h.status = "503\r\nX"
    with pytest.raises(BadHeaderError):
        impl.encode_headers(h)


@pytest.mark.parametrize(
    "raw",
    [
        b"NATS/1.0\r\n\r\n",
        b"NATS/1.0\r\nA: 1\r\nA: 2\r\nB: x:y:z\r\n\r\n",
        b"NATS/1.0 503\r\n\r\n",
        b"NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 0\r\nNats-Last-Stream: 0\r\n\r\n",
        "NATS/1.0\r\nName: Zoë ☃\r\n\r\n".encode(),
    ],
)
def test_round_trip_exact(impl, raw):
    h = impl.decode_headers(raw)
    assert impl.encode_headers(h) == raw
    assert impl.decode_headers(impl.encode_headers(h)) == h


# ------------------------------------------------------------------------ the class
def test_construct_forms(impl):
    a = Headers({"K": "v", "L": ["1", "2"]})
    b = Headers([("K", "v"), ("L", "1"), ("L", "2")])
    c = impl.decode_headers(b"NATS/1.0\r\nK: v\r\nL: 1\r\nL: 2\r\n\r\n")
    assert a == b == c
    assert a == {"K": "v", "L": ["1", "2"]}
    assert a == {"K": ["v"], "L": ("1", "2")}
    assert a != {"K": "v"}
    assert a != {"K": "v", "L": "1"}
    assert a != {"K": "v", "X": ["1", "2"]}
    assert a != "K"
    assert Headers(a) == a and Headers(a) is not a
    assert Headers() == {} and Headers(None) == Headers()
    assert Headers({"K": []}) == {}


def test_getters(impl):
    h = impl.decode_headers(b"NATS/1.0\r\nA: 1\r\nA: 2\r\n\r\n")
    assert h["A"] == "1"
    with pytest.raises(KeyError):
        h["a"]
    assert h.get("A") == "1" and h.get("Z") is None and h.get("Z", "d") == "d"
    assert h.get_all("A") == ["1", "2"] and h.get_all("Z") == []
    h.get_all("A").append("mutating the copy")
    assert h.get_all("A") == ["1", "2"]
    assert "A" in h and "Z" not in h
    assert h.keys() == ["A"] and h.values() == ["1", "2"] and h.items() == [("A", "1"), ("A", "2")]


def test_setters(impl):
    h = impl.decode_headers(b"NATS/1.0\r\nA: 1\r\nA: 2\r\nB: b\r\n\r\n")
    h["A"] = "x"
    assert h.get_all("A") == ["x"]
    h.add("A", "y")
    h.add("C", "c")
    assert h.items() == [("A", "x"), ("A", "y"), ("B", "b"), ("C", "c")]
    h["B"] = ["p", "q"]
    assert h.get_all("B") == ["p", "q"]
    h["B"] = []
    assert "B" not in h
    del h["A"]
    assert list(h) == ["C"] and len(h) == 1
    with pytest.raises(KeyError):
        del h["A"]
    assert h.pop("C") == "c" and h.pop("C", None) is None
    with pytest.raises(KeyError):
        h.pop("C")


@pytest.mark.parametrize("key", ["", "a b", "a:b", "a\u2028b", "a\tb", "a\x00", "a\x7f", 5, None, b"K:", ("K",)])
def test_invalid_keys(impl, key):
    h = impl.decode_headers(b"NATS/1.0\r\n\r\n")
    with pytest.raises(BadHeaderError):
        h[key] = "v"
    with pytest.raises(BadHeaderError):
        h.add(key, "v")
    with pytest.raises(BadHeaderError):
        Headers({key: "v"})


@pytest.mark.parametrize("value", ["a\rb", "a\nb", "\r\n", 5, None, b"v\r\n"])
def test_invalid_values(impl, value):
    h = impl.decode_headers(b"NATS/1.0\r\n\r\n")
    with pytest.raises(BadHeaderError):
        h["K"] = value
    with pytest.raises(BadHeaderError):
        h.add("K", value)
    with pytest.raises(BadHeaderError):
        Headers([("K", value)])
    assert len(h) == 0


def test_valid_key_edges(impl):
    k = "".join(chr(c) for c in range(33, 127) if c != ord(":"))
    h = Headers({k: "v"})
    raw = impl.encode_headers(h)
    assert impl.decode_headers(raw) == h


def test_bad_pairs(impl):
    with pytest.raises(BadHeaderError):
        Headers([("a", "b", "c")])
    with pytest.raises(BadHeaderError):
        Headers(["ab"])
    with pytest.raises(BadHeaderError):
        Headers("ab")
    with pytest.raises(BadHeaderError):
        Headers([5])
    assert impl.encode_headers(Headers([("a", "b")])) == b"NATS/1.0\r\na: b\r\n\r\n"


def test_copy_and_to_dict(impl):
    h = impl.decode_headers(b"NATS/1.0 503 No Responders\r\nA: 1\r\n\r\n")
    c = h.copy()
    assert c == h and c.status == "503" and c.description == "No Responders"
    c.add("A", "2")
    assert h.get_all("A") == ["1"]
    d = h.to_dict()
    d["A"].append("x")
    assert h.get_all("A") == ["1"]
    assert copy.copy(h) == h


def test_equality_includes_status(impl):
    a = impl.decode_headers(b"NATS/1.0 503\r\n\r\n")
    b = impl.decode_headers(b"NATS/1.0\r\n\r\n")
    assert a != b
    assert a == {} and b == {}  # comparing with a dict looks at keys and values only


def test_repr(impl):
    h = impl.decode_headers(b"NATS/1.0 404 No Messages\r\nK: v\r\n\r\n")
    r = repr(h)
    assert "K" in r and "404" in r and "No Messages" in r
    assert repr(Headers({"A": "b"})) == "Headers({'A': ['b']})"


def test_unhashable(impl):
    with pytest.raises(TypeError):
        hash(impl.decode_headers(b"NATS/1.0\r\n\r\n"))


@pytest.mark.parametrize(
    "raw, key, value",
    [
        (b"NATS/1.0\r\nK\xc3\xa9: v\r\n\r\n", "K\u00e9", "v"),  # UTF-8 in a name
        (b"NATS/1.0\r\nA: \xff\r\n\r\n", "A", "\udcff"),  # not UTF-8: a surrogate escape
        (b"NATS/1.0\r\nX-Latin1: caf\xe9\r\n\r\n", "X-Latin1", "caf\udce9"),
        (b"NATS/1.0\r\nK\xe9: v\r\n\r\n", "K\udce9", "v"),
    ],
)
def test_content_that_is_not_utf8_is_kept_exactly(impl, raw, key, value):
    h = impl.decode_headers(raw)
    assert h.get_all(key) == [value]
    assert impl.encode_headers(h) == raw  # the original bytes, re-encoded
    assert value.encode("utf-8", "surrogateescape") == raw.split(b": ")[1].split(b"\r\n")[0]


def test_status_that_is_not_utf8_is_kept(impl):
    h = impl.decode_headers(b"NATS/1.0 503 \xff\xfe\r\n\r\n")
    assert h.status == "503" and h.description.encode("utf-8", "surrogateescape") == b"\xff\xfe"


def test_header_values_given_as_bytes_are_sent_unchanged(impl):
    raw = impl.encode_headers({"K": b"caf\xe9", "L": [b"\xff", "ok"]})
    assert raw == b"NATS/1.0\r\nK: caf\xe9\r\nL: \xff\r\nL: ok\r\n\r\n"
    with pytest.raises(BadHeaderError):
        impl.encode_headers({"K": b"a\r\nInjected: yes"})


def test_names_and_values_may_be_bytes_or_hold_escapes(impl):
    h = impl.decode_headers(b"NATS/1.0\r\n\r\n")
    h[b"K\xe9"] = b"caf\xe9"
    h.add("L", "\u00e9t\u00e9")
    assert h["K\udce9"] == "caf\udce9"
    assert impl.encode_headers(h) == "NATS/1.0\r\nK\udce9: caf\udce9\r\nL: \u00e9t\u00e9\r\n\r\n".encode(
        "utf-8", "surrogateescape")
