"""Differential / property tests: the pure twin and the compiled module must agree.

Valid frame streams (random subjects, sids, replies, header sets with repeated keys and
non-ASCII values, payloads with CRLF, interleaved PING/PONG/+OK/-ERR/INFO) are split at
random points and fed to both parsers; both must produce exactly the expected events.
Mutated and random garbage must make both raise ``ProtocolError`` at the same feed, or
produce identical events.

Example counts come from the hypothesis profile (``HYPOTHESIS_PROFILE``: dev, ci, fuzz;
see ``conftest.py``).
"""
from __future__ import annotations

import os

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from jetwire.errors import BadSubjectError, NotJSMessageError, ProtocolError

PROFILE = settings.get_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def scaled(factor: float) -> settings:
    return settings(PROFILE, max_examples=max(10, int(PROFILE.max_examples * factor)))


# --------------------------------------------------------------------------- strategies
ASCII_WS = " \t\r\n\x0b\x0c"
SEPS = st.sampled_from([b" ", b"  ", b"\t", b" \t ", b"\t\t", b" \x0b"])
TRAIL = st.sampled_from([b"", b"", b" ", b"\t", b" \t"])

subject_chars = st.characters(blacklist_characters=ASCII_WS, blacklist_categories=("Cs",))
simple_token = st.text(alphabet="abcxyzABCXYZ0123456789-_$*>", min_size=1, max_size=8)
subjects = st.one_of(
    st.lists(simple_token, min_size=1, max_size=4).map(".".join),
    st.text(alphabet=subject_chars, min_size=1, max_size=12),
    st.sampled_from(["foo.bar", "_INBOX.abc.1", "$JS.ACK.S.C.1.2.3.1700000000000000000.0", "日本.語", "é"]),
)
sids = st.one_of(st.integers(0, 1000), st.integers(0, 10**18 - 1))
payloads = st.one_of(
    st.binary(max_size=48),
    st.sampled_from([b"", b"\r\n", b"\r\n\r\n", b"MSG a 1 0\r\n\r\n", b"PING\r\n", b"\r", b"\n"]),
)
key_chars = "".join(chr(c) for c in range(33, 127) if c != ord(":"))
header_keys = st.one_of(
    st.text(alphabet=key_chars, min_size=1, max_size=12),
    st.sampled_from(["Nats-Msg-Id", "Nats-Last-Stream", "KV-Operation", "k", "K"]),
)
header_values = st.text(alphabet=st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=16)
statuses = st.one_of(
    st.none(),
    st.tuples(
        st.text(alphabet="0123456789", min_size=3, max_size=3),
        st.one_of(st.none(), st.text(alphabet=st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=16)),
    ),
)
op_case = st.sampled_from([str.upper, str.lower, str.capitalize, lambda s: s[:-1].lower() + s[-1].upper()])


def _strip(s: str) -> str:
    return s.strip(" \t")


@st.composite
def header_blocks(draw):
    """(raw header block, expected (dict, items, status, description))."""
    status = draw(statuses)
    pairs = draw(st.lists(st.tuples(header_keys, header_values), max_size=5))
    if draw(st.booleans()) and pairs:  # force a repeated key
        pairs.append((pairs[0][0], draw(header_values)))
    line = "NATS/1.0"
    exp_status = exp_desc = None
    if status is not None:
        code, desc = status
        line += " " + code + ("" if desc is None else " " + desc)
        text = _strip(line[8:])
        if text:
            exp_status = text[:3]
            exp_desc = _strip(text[3:]) or None
    raw = line + "\r\n" + "".join(f"{k}:{draw(st.sampled_from(['', ' ', '  ', chr(9)]))}{v}\r\n" for k, v in pairs) + "\r\n"
    d: dict = {}
    items = []
    for k, v in pairs:
        d.setdefault(k, []).append(_strip(v))
    for k, vs in d.items():
        items += [(k, v) for v in vs]
    return raw.encode(), (d, items, exp_status, exp_desc)


@st.composite
def frames(draw):
    """One protocol frame: (bytes, expected event key)."""
    kind = draw(st.sampled_from(["MSG", "MSG", "MSG", "HMSG", "HMSG", "PING", "PONG", "+OK", "-ERR", "INFO"]))
    sep = lambda: draw(SEPS)  # noqa: E731
    op = draw(op_case)(kind).encode()
    if kind in ("PING", "PONG", "+OK"):
        code = {"PING": 2, "PONG": 3, "+OK": 4}[kind]
        return op + draw(TRAIL) + b"\r\n", (code, None)
    if kind == "-ERR":
        text = draw(st.text(alphabet=st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=20))
        return op + sep() + b"'" + text.encode() + b"'" + draw(TRAIL) + b"\r\n", (5, text)
    if kind == "INFO":
        info = draw(
            st.dictionaries(
                st.text(max_size=6),
                st.one_of(st.integers(-(2**40), 2**40), st.text(max_size=6), st.booleans(), st.none(), st.lists(st.text(max_size=4), max_size=3)),
                max_size=4,
            )
        )
        return op + sep() + orjson.dumps(info) + draw(TRAIL) + b"\r\n", (1, info)
    subject = draw(subjects)
    sid = draw(sids)
    reply = draw(st.one_of(st.none(), subjects))
    payload = draw(payloads)
    sid_text = (b"0" * draw(st.integers(0, 2)) + str(sid).encode())[-18:] if sid < 10**17 else str(sid).encode()
    args = [_wire(subject), sid_text] + ([] if reply is None else [_wire(reply)])
    if kind == "MSG":
        args.append(str(len(payload)).encode())
        head = op + sep() + b"".join(a + sep() for a in args[:-1]) + args[-1] + draw(TRAIL) + b"\r\n"
        return head + payload + b"\r\n", ("MSG", subject, reply, payload, sid, None)
    raw, hexp = draw(header_blocks())
    args += [str(len(raw)).encode(), str(len(raw) + len(payload)).encode()]
    head = op + sep() + b"".join(a + sep() for a in args[:-1]) + args[-1] + draw(TRAIL) + b"\r\n"
    return head + raw + payload + b"\r\n", ("MSG", subject, reply, payload, sid, hexp)


# Seeded generator: the same frame grammar as ``frames()`` but drawn from one
# ``random.Random`` so that thousands of examples stay cheap. A failure reports the seed.
_POOL = (
    [chr(c) for c in range(33, 127)]
    + list("éüßñøÅΩжπ日本語한글€😀\u0301\x1c\x1f\x85\xa0\u2028\u3000\x7f\x00\x01")
)
# bytes that are not UTF-8 (another client may send them): kept as surrogate escapes. Only
# bytes that can never join a neighbour into a valid sequence, so the text round-trips.
_ESCAPES = ["\udc80", "\udca9", "\udcbf", "\udcc0", "\udcfe", "\udcff"]
_SUBJ_POOL = [c for c in _POOL if c not in ASCII_WS] + _ESCAPES
_VALUE_POOL = [c for c in [*_POOL, " ", "\t", ":", "\x0b"] if c not in "\r\n"] + _ESCAPES
_KEY_POOL = list(key_chars) + _ESCAPES


# text as received from another client: bytes that were not UTF-8 kept as surrogate
# escapes (also ones that spell whitespace once sent, or stand for no byte at all)
escaped_text = st.lists(st.sampled_from(
    [*_ESCAPES, "�", "�", "�", "�", "�", "�", "a", ".", " ", "\x85", "é", "\t"]),
    min_size=1, max_size=8).map("".join)


def _wire(text: str) -> bytes:
    """What another client puts on the wire for ``text`` (escapes back to their bytes)."""
    return text.encode("utf-8", "surrogateescape")


def _rtext(rnd, pool, lo, hi):
    return "".join(rnd.choice(pool) for _ in range(rnd.randint(lo, hi)))


def _rsubject(rnd):
    r = rnd.random()
    if r < 0.5:
        return ".".join(_rtext(rnd, "abcxyz0123-_*>$", 1, 6) for _ in range(rnd.randint(1, 4)))
    if r < 0.9:
        return _rtext(rnd, _SUBJ_POOL, 1, 12)
    return rnd.choice(["foo.bar", "_INBOX.abc.1", "日本.語", "é", "caf\udce9", "\udcff\udcfe.x"])


def _rpayload(rnd):
    r = rnd.random()
    if r < 0.2:
        return rnd.choice([b"", b"\r\n", b"\r\n\r\n", b"MSG a 1 0\r\n\r\n", b"\r", b"\n"])
    return bytes(rnd.getrandbits(8) for _ in range(rnd.randint(0, 48)))


def _rcase(rnd, op):
    return "".join(c.upper() if rnd.random() < 0.5 else c.lower() for c in op).encode()


def _rsep(rnd):
    return rnd.choice([b" ", b"  ", b"\t", b" \t ", b"\t\t", b" \x0b"])


def _rtrail(rnd):
    return rnd.choice([b"", b"", b" ", b"\t", b" \t"])


def _rheaders(rnd):
    line = "NATS/1.0"
    status = desc = None
    if rnd.random() < 0.3:
        line += " " + _rtext(rnd, "0123456789", 3, 3)
        if rnd.random() < 0.6:
            line += " " + _rtext(rnd, _VALUE_POOL, 0, 16)
        text = _strip(line[8:])
        if text:
            status, desc = text[:3], (_strip(text[3:]) or None)
    pairs = []
    for _ in range(rnd.randint(0, 5)):
        k = rnd.choice(["Nats-Msg-Id", "K", "k"]) if (rnd.random() < 0.3 or not pairs) else (
            pairs[rnd.randrange(len(pairs))][0] if rnd.random() < 0.3 else _rtext(rnd, _KEY_POOL, 1, 12))
        pairs.append((k, _rtext(rnd, _VALUE_POOL, 0, 16)))
    raw = line + "\r\n" + "".join(f"{k}:{rnd.choice(['', ' ', '  ', chr(9)])}{v}\r\n" for k, v in pairs) + "\r\n"
    d: dict = {}
    for k, v in pairs:
        d.setdefault(k, []).append(_strip(v))
    items = [(k, v) for k, vs in d.items() for v in vs]
    return _wire(raw), (d, items, status, desc)


# header blocks that are malformed inside a well-framed HMSG: that one message is skipped
# and reported as (OP_FRAME_ERROR, ProtocolError naming its subject); the stream goes on
_BAD_BLOCKS = [
    b"NATS/1.0\r\nno colon\r\n\r\n", b"NATS/1.0\r\n: v\r\n\r\n", b"NATS/1.0\r\nA B: v\r\n\r\n",
    b"NATS/1.0\r\nK\x7f: v\r\n\r\n", b"NATS/1.1\r\n\r\n", b"NATS/1.0x\r\n\r\n", b"", b"NATS/1.0\r\n",
    b"NATS/1.0\r\nK: v\r\n\r\nX", b"NATS/1.0\r\nK: \xff\r\nbad \xfe\r\n\r\n",
]


def _rbad_headers(rnd):
    raw, _ = _rheaders(rnd)
    r = rnd.random()
    if r < 0.5:
        return rnd.choice(_BAD_BLOCKS)
    if r < 0.8:  # a line without a colon among good ones
        head, _, rest = raw.partition(b"\r\n")
        return head + b"\r\n" + _wire(_rtext(rnd, [c for c in _KEY_POOL if c != ":"], 1, 8)) + b"\r\n" + rest
    return raw[:-2] + _wire(_rtext(rnd, _VALUE_POOL, 1, 4))  # not ending in an empty line


def random_frame(rnd):
    kind = rnd.choice(["MSG", "MSG", "MSG", "HMSG", "HMSG", "PING", "PONG", "+OK", "-ERR", "INFO"])
    op = _rcase(rnd, kind)
    if kind in ("PING", "PONG", "+OK"):
        return op + _rtrail(rnd) + b"\r\n", ({"PING": 2, "PONG": 3, "+OK": 4}[kind], None)
    if kind == "-ERR":  # (an error text is shown, not kept: no escapes here)
        text = _rtext(rnd, [c for c in _VALUE_POOL if c not in _ESCAPES], 0, 20)
        return op + _rsep(rnd) + b"'" + text.encode() + b"'" + _rtrail(rnd) + b"\r\n", (5, text)
    if kind == "INFO":
        info = {_rtext(rnd, _POOL, 0, 5): rnd.choice([rnd.randint(-(2**40), 2**40), _rtext(rnd, _POOL, 0, 5), True, None, [1, "x"]])
                for _ in range(rnd.randint(0, 4))}
        return op + _rsep(rnd) + orjson.dumps(info) + _rtrail(rnd) + b"\r\n", (1, info)
    subject = _rsubject(rnd)
    sid = rnd.choice([rnd.randint(0, 1000), rnd.randint(0, 10**18 - 1)])
    reply = _rsubject(rnd) if rnd.random() < 0.5 else None
    payload = _rpayload(rnd)
    sid_text = str(sid).encode()
    if sid < 10**16:
        sid_text = b"0" * rnd.randint(0, 2) + sid_text
    args = [_wire(subject), sid_text] + ([] if reply is None else [_wire(reply)])
    hexp = None
    if kind == "HMSG" and rnd.random() < 0.1:
        raw = _rbad_headers(rnd)
        args += [str(len(raw)).encode(), str(len(raw) + len(payload)).encode()]
        head = op + _rsep(rnd) + b"".join(a + _rsep(rnd) for a in args[:-1]) + args[-1] + _rtrail(rnd) + b"\r\n"
        return head + raw + payload + b"\r\n", (6, subject)
    if kind == "HMSG":
        raw, hexp = _rheaders(rnd)
        args += [str(len(raw)).encode(), str(len(raw) + len(payload)).encode()]
        payload_wire = raw + payload
    else:
        args.append(str(len(payload)).encode())
        payload_wire = payload
    head = op + _rsep(rnd) + b"".join(a + _rsep(rnd) for a in args[:-1]) + args[-1] + _rtrail(rnd) + b"\r\n"
    return head + payload_wire + b"\r\n", ("MSG", subject, reply, payload, sid, hexp)


def random_stream(seed, max_frames=12):
    import random

    rnd = random.Random(seed)
    frame_list = [random_frame(rnd) for _ in range(rnd.randint(1, max_frames))]
    stream = b"".join(f for f, _ in frame_list)
    cuts = [rnd.randint(0, len(stream)) for _ in range(rnd.randint(0, 10))]
    if rnd.random() < 0.1:
        cuts = list(range(0, len(stream), rnd.randint(1, 5)))
    return stream, [e for _, e in frame_list], cuts, rnd


def key(ev):
    if isinstance(ev, tuple):
        if ev[0] == 6:  # OP_FRAME_ERROR: the error's class, subject and text
            exc = ev[1]
            assert type(exc) is ProtocolError and exc.subject is not None
            return (6, exc.subject, str(exc))
        return ev
    assert type(ev.data) is bytes and type(ev.subject) is str and type(ev.sid) is int
    assert ev._client is None and ev._ackd is False and ev._meta is None
    h = ev.headers
    hk = None if h is None else (h.to_dict(), h.items(), h.status, h.description)
    return ("MSG", ev.subject, ev.reply, ev.data, ev.sid, hk)


def split(data: bytes, cuts):
    points = sorted({min(max(c, 0), len(data)) for c in cuts})
    out, last = [], 0
    for p in points:
        out.append(data[last:p])
        last = p
    out.append(data[last:])
    return out


def run(mod, msg_cls, chunks, **kw):
    """Per-feed outcomes: a list of event keys, or the string "ProtocolError" (then stop)."""
    p = mod.Parser(msg_cls, **kw)
    outcomes = []
    for chunk in chunks:
        try:
            outcomes.append([key(e) for e in p.feed(chunk)])
        except ProtocolError:
            outcomes.append("ProtocolError")
            break
    return outcomes


# -------------------------------------------------------------------------------- tests
def check_valid(all_impls, make_msg_cls, stream, expected, chunks):
    results = {}
    for name, mod in all_impls.items():
        outcomes = run(mod, make_msg_cls(mod), chunks)
        assert "ProtocolError" not in outcomes, (name, stream)
        # a skipped message is expected as (OP_FRAME_ERROR, subject); its text must agree
        assert [e[:2] if e[0] == 6 else e for o in outcomes for e in o] == expected, (name, stream)
        results[name] = outcomes
    assert len({repr(v) for v in results.values()}) == 1, results


@PROFILE
@given(st.integers(0, 2**64))
def test_valid_streams_identical(all_impls, make_msg_cls, seed):
    """The main differential test (2000 examples in the ``ci`` profile)."""
    stream, expected, cuts, _ = random_stream(seed)
    check_valid(all_impls, make_msg_cls, stream, expected, split(stream, cuts))


@scaled(0.1)
@given(st.lists(frames(), min_size=1, max_size=8), st.lists(st.integers(0, 4000), max_size=10))
def test_valid_streams_identical_shrinkable(all_impls, make_msg_cls, frame_list, cuts):
    """The same property over hypothesis strategies, which shrink failures to a minimal stream."""
    stream = b"".join(f for f, _ in frame_list)
    check_valid(all_impls, make_msg_cls, stream, [e for _, e in frame_list], split(stream, cuts))


@scaled(0.25)
@given(st.integers(0, 2**64), st.integers(1, 60))
def test_valid_streams_small_control_line_limit(all_impls, make_msg_cls, seed, limit):
    # with a tight max_control_line both must fail (or succeed) identically
    stream, _, cuts, _ = random_stream(seed, 6)
    chunks = split(stream, cuts)
    outcomes = [run(mod, make_msg_cls(mod), chunks, max_control_line=limit) for mod in all_impls.values()]
    assert all(o == outcomes[0] for o in outcomes)


MUTATION = st.tuples(
    st.sampled_from(["flip", "insert", "delete", "dup", "digit", "crlf"]),
    st.integers(0, 10**6),
    st.integers(0, 10**6),
    st.binary(min_size=1, max_size=4),
)


def mutate(data: bytes, mutations) -> bytes:
    b = bytearray(data)
    for kind, i, j, blob in mutations:
        if not b:
            b += blob
            continue
        i %= len(b)
        j = i + (j % 8)
        if kind == "flip":
            b[i] = blob[0]
        elif kind == "insert":
            b[i:i] = blob
        elif kind == "delete":
            del b[i:j]
        elif kind == "dup":
            b[i:i] = b[i:j]
        elif kind == "digit":
            b[i] = ord("0") + blob[0] % 10
        else:
            b[i:i] = b"\r\n"
    return bytes(b)


def random_mutations(rnd):
    kinds = ["flip", "insert", "delete", "dup", "digit", "crlf"]
    return [
        (rnd.choice(kinds), rnd.randint(0, 10**6), rnd.randint(0, 10**6), bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 4))))
        for _ in range(rnd.randint(1, 4))
    ]


@scaled(0.5)
@given(st.integers(0, 2**64))
def test_mutated_streams_agree(all_impls, make_msg_cls, seed):
    stream, _, cuts, rnd = random_stream(seed, 8)
    stream = mutate(stream, random_mutations(rnd))
    chunks = split(stream, cuts)
    outcomes = {name: run(mod, make_msg_cls(mod), chunks, max_control_line=256) for name, mod in all_impls.items()}
    assert len({repr(v) for v in outcomes.values()}) == 1, (stream, outcomes)


@scaled(0.05)
@given(st.lists(frames(), min_size=1, max_size=6), st.lists(MUTATION, min_size=1, max_size=4), st.lists(st.integers(0, 3000), max_size=6))
def test_mutated_streams_agree_shrinkable(all_impls, make_msg_cls, frame_list, mutations, cuts):
    stream = mutate(b"".join(f for f, _ in frame_list), mutations)
    chunks = split(stream, cuts)
    outcomes = {name: run(mod, make_msg_cls(mod), chunks, max_control_line=256) for name, mod in all_impls.items()}
    assert len({repr(v) for v in outcomes.values()}) == 1, outcomes


GARBAGE_PARTS = st.sampled_from(
    [b"MSG ", b"HMSG ", b"msg\t", b"PING", b"PONG", b"+OK", b"-ERR ", b"INFO ", b"\r\n", b"\r", b"\n", b" ", b"\t",
     b"0", b"1", b"12", b"99", b"a", b"foo.bar", b"NATS/1.0", b"NATS/1.0 503", b": ", b"K: v", b"{}", b"'", b"\xff", b"\xc3\xa9"]
)


@scaled(0.25)
@given(st.lists(st.one_of(GARBAGE_PARTS, st.binary(max_size=6)), max_size=30), st.lists(st.integers(0, 200), max_size=6))
def test_random_garbage_agrees(all_impls, make_msg_cls, parts, cuts):
    stream = b"".join(parts)
    chunks = split(stream, cuts)
    outcomes = {name: run(mod, make_msg_cls(mod), chunks, max_control_line=64) for name, mod in all_impls.items()}
    assert len({repr(v) for v in outcomes.values()}) == 1, outcomes


def _outcome(fn, *args, errors=(ProtocolError,)):
    try:
        r = fn(*args)
    except errors as e:
        return type(e).__name__, str(e)
    if hasattr(r, "to_dict"):
        return (r.to_dict(), r.items(), r.status, r.description)
    return r


@scaled(0.25)
@given(st.one_of(header_blocks().map(lambda t: t[0]), st.binary(max_size=40), st.lists(GARBAGE_PARTS, max_size=12).map(b"".join)), st.lists(MUTATION, max_size=2))
def test_decode_headers_agree(all_impls, raw, mutations):
    if mutations:
        raw = mutate(raw, mutations)
    outcomes = [_outcome(mod.decode_headers, raw) for mod in all_impls.values()]
    assert all(o == outcomes[0] for o in outcomes), outcomes


@scaled(0.25)
@given(header_blocks())
def test_header_block_round_trip(all_impls, block):
    raw, (d, items, status, desc) = block
    for mod in all_impls.values():
        h = mod.decode_headers(raw)
        assert (h.to_dict(), h.items(), h.status, h.description) == (d, items, status, desc)
        again = mod.decode_headers(mod.encode_headers(h))
        assert again == h


ack_tokens = st.one_of(
    st.integers(0, 2**64).map(str),
    st.sampled_from(["", "_", "x", "-1", "+1", "1_0", "٣", "１", " 1", "S", "C", "0" * 25, "9" * 20]),
    st.text(max_size=4),
)


@scaled(0.25)
@given(st.one_of(
    st.lists(st.one_of(ack_tokens, escaped_text), min_size=0, max_size=13).map(lambda t: ".".join(["$JS", "ACK", *t])),
    st.text(max_size=30),
))
def test_metadata_agree(all_impls, subject):
    outcomes = [_outcome(mod.parse_metadata_fields, subject, errors=(NotJSMessageError,)) for mod in all_impls.values()]
    assert all(o == outcomes[0] for o in outcomes), outcomes


@scaled(0.25)
@given(st.one_of(st.text(max_size=12), subjects, st.lists(simple_token, max_size=4).map(".".join), escaped_text),
       st.one_of(st.none(), st.text(max_size=6), escaped_text), st.binary(max_size=16))
def test_encoder_agree(all_impls, subject, reply, data):
    outcomes = []
    for mod in all_impls.values():
        buf = bytearray(b"x")
        try:
            mod.append_pub(buf, subject, reply, data)
            mod.append_hpub(buf, subject, reply, b"NATS/1.0\r\n\r\n", data)
            mod.append_sub(buf, subject, reply, 5)
            outcomes.append(bytes(buf))
        except BadSubjectError as exc:
            outcomes.append(("BadSubjectError", str(exc), bytes(buf)))
    assert all(o == outcomes[0] for o in outcomes), outcomes


# Longer subjects, mostly plain with hazards anywhere: the compiled encoder checks eight
# bytes at a time and must refuse and accept exactly what the byte-wise checks do.
HAZARDS = ["", "*", ">", " ", "\t", "\x7f", "\x00", "é", "\u00a0", "\u2028", "~", "!", "\udc80", ".."]
hazard_subjects = st.builds(
    lambda plain, at, hazard: plain[:at] + hazard + plain[at:],
    st.text(alphabet="aaaaaab.", min_size=1, max_size=48), st.integers(0, 48),
    st.one_of(st.just(""), st.sampled_from(HAZARDS)),
)


def _subject_outcomes(all_impls, subject, other):
    outcomes = []
    for mod in all_impls.values():
        buf = bytearray()
        result = []
        for call in (lambda: mod.append_pub(buf, subject, other, b"d"), lambda: mod.append_sub(buf, subject, other, 7)):
            try:
                call()
                result.append(bytes(buf))
            except BadSubjectError as exc:
                result.append(("BadSubjectError", str(exc)))
        outcomes.append(result)
    return outcomes


@scaled(0.5)
@given(hazard_subjects, st.one_of(st.none(), hazard_subjects))
def test_encoder_agree_long_subjects(all_impls, subject, other):
    outcomes = _subject_outcomes(all_impls, subject, other)
    assert all(o == outcomes[0] for o in outcomes), outcomes


def test_encoder_agree_every_hazard_at_every_place(all_impls):
    # each hazard at each offset of plain subjects across several 8-byte words, as a
    # subject, a reply and a queue, also next to a dot (an empty token across two words)
    for n in range(1, 34):
        for at in range(n + 1):
            for hazard in HAZARDS:
                for plain in ("a" * n, ("abcdefg." * 5)[:n]):
                    subject = plain[:at] + hazard + plain[at:]
                    outcomes = _subject_outcomes(all_impls, subject, subject)
                    assert all(o == outcomes[0] for o in outcomes), (subject, outcomes)
                    expected_ok = hazard in ("", "~", "!", "é", "\udc80") and ".." not in subject and not subject.startswith(".") \
                        and not subject.endswith(".")
                    if hazard not in ("*", ">"):  # a wildcard may be a whole token
                        assert expected_ok == isinstance(outcomes[0][0], bytes), (subject, outcomes[0])


# ------------------------------------------------------------------------------ outbox
outbox_data = st.one_of(
    st.binary(max_size=24),
    st.binary(max_size=24).map(bytearray),
    st.binary(max_size=24).map(memoryview),
    st.sampled_from(["text", None, 5]),
)
outbox_ops = st.one_of(
    st.tuples(st.just("publish"), st.one_of(subjects, st.text(max_size=6)), outbox_data,
              st.one_of(st.none(), st.just(""), subjects, st.text(max_size=4)),
              st.one_of(st.none(), st.just({}), st.just({"K": "v"}))),
    st.tuples(st.just("take")),
    st.tuples(st.just("connected"), st.booleans()),
    st.tuples(st.just("congested"), st.booleans()),
    st.tuples(st.just("max_payload"), st.integers(0, 30)),
    st.tuples(st.just("append_pub"), subjects, st.none(), st.binary(max_size=8)),
)


def _run_outbox(mod, ops, threshold):
    log = []
    ob = mod.Outbox(slow=lambda *a: log.append(("slow", *a)) or "slow", threshold=threshold,
                    on_first=lambda: log.append(("first", bytes(ob.buf))),
                    on_full=lambda: log.append(("full", bytes(ob.buf))), ret="fast")
    ob.connected = True
    for op in ops:
        kind = op[0]
        if kind == "publish":
            data = op[2]
            try:
                log.append(ob.publish(op[1], data, op[3], op[4]))
            except (BadSubjectError, TypeError, BufferError) as exc:
                log.append(type(exc).__name__)
        elif kind == "take":
            log.append(bytes(ob.take()))
        elif kind == "append_pub":
            try:
                ob.append_pub(op[1], op[2], op[3])
            except BadSubjectError:
                log.append("BadSubjectError")
        else:
            setattr(ob, kind, op[1])
    log.append((bytes(ob.buf), ob.out_msgs, ob.out_bytes))
    # memoryviews differ by identity only: compare their bytes
    return [tuple(bytes(x) if isinstance(x, (memoryview, bytearray)) else x for x in e) if isinstance(e, tuple) else e
            for e in log]


@scaled(0.25)
@given(st.lists(outbox_ops, max_size=25), st.integers(0, 120))
def test_outbox_agree(all_impls, ops, threshold):
    outcomes = [_run_outbox(mod, ops, threshold) for mod in all_impls.values()]
    assert all(o == outcomes[0] for o in outcomes), outcomes
