"""Micro benchmarks of JetStream ack-subject metadata through the public API: compiled vs
the pure twin, with nats-py as a peer (BENCHMARKS.md row m).

Run: ``pytest benchmarks/test_micro_metadata.py --benchmark-group-by=group
--benchmark-columns=median,ops,rounds``. Targets: compiled >= 8x the pure twin and
>= 10x nats-py in each group. ``parse_metadata`` is timed per call; ``msg.metadata`` on
10k fresh messages per round (it is cached on the message, so every round gets new
ones, made outside the timer). nats-py builds its datetime eagerly; jetwire builds it on
first use of ``timestamp``, so the last group reads ``timestamp`` too.
"""
from __future__ import annotations

import pytest

from jetwire import _impl

try:
    from nats.aio.msg import Msg as NatsPyMsg
except ImportError:  # pragma: no cover - nats-py is an optional peer
    NatsPyMsg = None

IMPLS = ["pure"] if _impl.force_pure() else ["compiled", "pure"]
PEERS = [*IMPLS, "nats-py"]
ACK = "$JS.ACK.hub.ACCHASH.ORDERS.worker.1.123456.7890.1700000000123456789.42.tok"
N = 10_000
ACKS = [f"$JS.ACK.hub.ACCHASH.ORDERS.worker.1.{100000 + i}.{i + 1}.1700000000123456789.{N - i}.tok"
        for i in range(N)]


def get(name):
    if name == "nats-py":
        if NatsPyMsg is None:
            pytest.skip("nats-py is not installed")
        return None
    mods = _impl.implementations()
    if name not in mods:
        pytest.fail("jetwire._c is not built (set JETWIRE_PURE=1 for a pure-only run)")
    return mods[name]


def parser(name):
    """The public ``parse_metadata`` of an implementation, or nats-py's equivalent."""
    mod = get(name)
    if mod is None:
        return NatsPyMsg.Metadata._from_reply
    return mod.parse_metadata


def fresh_msgs(name):
    """``N`` messages carrying the ack subjects, with no metadata parsed yet."""
    mod = get(name)
    if mod is None:
        return [NatsPyMsg(None, "x", s, b"", None) for s in ACKS]

    class Msg(mod.MsgBase):
        __slots__ = ()

    return [Msg("x", b"", reply=s) for s in ACKS]


@pytest.mark.parametrize("name", PEERS)
def test_parse_metadata(benchmark, name):
    parse = parser(name)
    benchmark.group = "parse_metadata of a v2 ack subject (one call)"
    m = benchmark(parse, ACK)
    assert m.sequence.stream == 123456 and m.num_pending == 42


@pytest.mark.parametrize("name", PEERS)
def test_parse_metadata_10k(benchmark, name):
    parse = parser(name)
    benchmark.group = "parse_metadata of 10k ack subjects (results kept)"

    def run():
        return [parse(s) for s in ACKS]

    out = benchmark.pedantic(run, rounds=10 if name == "compiled" else 3, iterations=1)
    assert out[-1].sequence.consumer == N


def _msg_metadata(benchmark, name, timestamp):
    kept = []

    def setup():
        kept.clear()
        return (fresh_msgs(name),), {}

    def run(msgs):
        last = None
        for m in msgs:
            last = m.metadata
            if timestamp:
                last.timestamp
        kept.append(msgs)
        return last

    benchmark.extra_info["messages_per_round"] = N
    last = benchmark.pedantic(run, setup=setup, rounds=5 if name == "compiled" else 3, iterations=1)
    assert last.sequence.consumer == N and last.num_pending == 1


@pytest.mark.parametrize("name", PEERS)
def test_msg_metadata_10k(benchmark, name):
    benchmark.group = "msg.metadata of 10k fresh messages"
    _msg_metadata(benchmark, name, timestamp=False)


@pytest.mark.parametrize("name", PEERS)
def test_msg_metadata_timestamp_10k(benchmark, name):
    benchmark.group = "msg.metadata.timestamp of 10k fresh messages"
    _msg_metadata(benchmark, name, timestamp=True)
