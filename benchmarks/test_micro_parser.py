"""Micro benchmarks of the protocol hot path: compiled vs pure, with nats-py's parser as a peer.

Run: ``pytest benchmarks/test_micro_parser.py --benchmark-group-by=group``
(add ``--benchmark-columns=median,ops,rounds`` for a compact table). A missing compiled
extension fails the compiled cases unless ``JETWIRE_PURE=1``. The whole-buffer parse
cases free their events outside the timer; the 64 KiB-read case includes freeing, as a
client would.
"""
from __future__ import annotations

import asyncio

import pytest

from jetwire import _impl
from jetwire.protocol.headers import Headers

try:
    from nats.protocol.parser import Parser as NatsPyParser
except ImportError:  # pragma: no cover - nats-py is an optional peer
    NatsPyParser = None

IMPLS = ["pure"] if _impl.force_pure() else ["compiled", "pure"]

MB10 = 10 * 1024 * 1024
MSG16 = b"MSG foo.bar 1 16\r\n" + b"x" * 16 + b"\r\n"
HDR2 = b"NATS/1.0\r\nNats-Msg-Id: 7d3a9f1e-0001\r\nTrace: abc123\r\n\r\n"
HMSG16 = b"HMSG foo.bar 1 _INBOX.r %d %d\r\n%s%s\r\n" % (len(HDR2), len(HDR2) + 16, HDR2, b"y" * 16)
STREAM_MSG = MSG16 * (MB10 // len(MSG16))
STREAM_HMSG = HMSG16 * ((MB10 // 4) // len(HMSG16))
ACK = "$JS.ACK.hub.ACCHASH.ORDERS.worker.1.123456.7890.1700000000123456789.42.tok"


def get(name):
    mods = _impl.implementations()
    if name not in mods:
        pytest.fail("jetwire._c is not built (set JETWIRE_PURE=1 for a pure-only run)")
    return mods[name]


def msg_cls(mod):
    class Msg(mod.MsgBase):
        __slots__ = ()

    return Msg


def _rounds(name):
    return 3 if name == "pure" else 10


def bench_parse(benchmark, name, mod, cls, stream):
    """Time turning ``stream`` into events; freeing them happens outside the timer."""
    kept = []

    def setup():
        kept.clear()

    def run():
        events = mod.Parser(cls).feed(stream)
        kept.append(events)
        return len(events)

    return benchmark.pedantic(run, setup=setup, rounds=_rounds(name), iterations=1)


@pytest.mark.parametrize("name", IMPLS)
def test_parse_msg_16b_10mb(benchmark, name):
    mod = get(name)
    cls = msg_cls(mod)
    frames = len(STREAM_MSG) // len(MSG16)
    benchmark.group = "parse 10 MB of 16-byte MSG frames"
    benchmark.extra_info["frames"] = frames
    assert bench_parse(benchmark, name, mod, cls, STREAM_MSG) == frames


@pytest.mark.parametrize("name", IMPLS)
def test_parse_msg_16b_64k_chunks(benchmark, name):
    mod = get(name)
    cls = msg_cls(mod)
    chunks = [STREAM_MSG[i : i + 65536] for i in range(0, len(STREAM_MSG), 65536)]
    benchmark.group = "parse 10 MB of 16-byte MSG frames in 64 KiB reads"

    def run():
        p = mod.Parser(cls)
        n = 0
        for c in chunks:
            n += len(p.feed(c))
        return n

    assert benchmark.pedantic(run, rounds=_rounds(name), iterations=1) == len(STREAM_MSG) // len(MSG16)


@pytest.mark.parametrize("name", IMPLS)
def test_parse_hmsg_2_headers(benchmark, name):
    mod = get(name)
    cls = msg_cls(mod)
    frames = len(STREAM_HMSG) // len(HMSG16)
    benchmark.group = "parse 2.5 MB of HMSG frames with 2 headers"
    benchmark.extra_info["frames"] = frames
    assert bench_parse(benchmark, name, mod, cls, STREAM_HMSG) == frames


class _NatsPyClient:
    """Just enough of nats-py's client for its parser to run."""

    def __init__(self):
        self.msgs = []

    async def _process_msg(self, sid, subject, reply, payload, hdr):
        self.msgs.append((sid, subject, reply, payload, hdr))

    async def _process_ping(self):
        pass

    async def _process_pong(self):
        pass

    async def _process_info(self, info):
        pass

    async def _process_err(self, err):
        pass


@pytest.mark.skipif(NatsPyParser is None, reason="nats-py is not installed")
@pytest.mark.parametrize("stream, group", [(STREAM_MSG, "parse 10 MB of 16-byte MSG frames"),
                                           (STREAM_HMSG, "parse 2.5 MB of HMSG frames with 2 headers")])
def test_parse_nats_py_peer(benchmark, stream, group):
    benchmark.group = group
    loop = asyncio.new_event_loop()
    # nats-py hands raw bytes to its client; it neither builds messages nor decodes headers here
    frame = MSG16 if stream is STREAM_MSG else HMSG16

    kept = []

    def setup():
        kept.clear()

    def run():
        nc = _NatsPyClient()
        p = NatsPyParser(nc)
        loop.run_until_complete(p.parse(stream))
        kept.append(nc)
        return len(nc.msgs)

    try:
        assert benchmark.pedantic(run, setup=setup, rounds=2, iterations=1) == len(stream) // len(frame)
    finally:
        loop.close()


@pytest.mark.parametrize("name", IMPLS)
def test_decode_headers(benchmark, name):
    mod = get(name)
    benchmark.group = "decode a 2-header block"
    h = benchmark(mod.decode_headers, HDR2)
    assert h["Trace"] == "abc123"


@pytest.mark.parametrize("name", IMPLS)
def test_encode_headers(benchmark, name):
    mod = get(name)
    benchmark.group = "encode a 2-header block"
    h = Headers({"Nats-Msg-Id": "7d3a9f1e-0001", "Trace": "abc123"})
    assert benchmark(mod.encode_headers, h) == HDR2


@pytest.mark.parametrize("name", IMPLS)
def test_parse_metadata_fields(benchmark, name):
    mod = get(name)
    benchmark.group = "parse a v2 ack subject"
    assert benchmark(mod.parse_metadata_fields, ACK)[4] == 1


@pytest.mark.parametrize("name", IMPLS)
def test_append_pub_100k(benchmark, name):
    mod = get(name)
    benchmark.group = "append_pub x 100k (16-byte payload)"
    data = b"x" * 16
    append_pub = mod.append_pub

    def run():
        buf = bytearray()
        for _ in range(100_000):
            append_pub(buf, "foo.bar", None, data)
        return len(buf)

    assert benchmark.pedantic(run, rounds=5, iterations=1) == 100_000 * len(b"PUB foo.bar 16\r\n" + data + b"\r\n")


@pytest.mark.parametrize("name", IMPLS)
def test_append_hpub_100k(benchmark, name):
    mod = get(name)
    benchmark.group = "append_hpub x 100k (2 headers, 16-byte payload)"
    data = b"x" * 16

    def run():
        buf = bytearray()
        for _ in range(100_000):
            mod.append_hpub(buf, "foo.bar", "_INBOX.r", HDR2, data)
        return len(buf)

    assert benchmark.pedantic(run, rounds=5, iterations=1) > 0
