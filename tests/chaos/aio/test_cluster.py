"""A 3-node cluster losing leaders while the client publishes and consumes an R3 stream:
the stream leader killed (-9), a stepdown request, a consumer leader stepdown, the
consumer leader killed, then the
killed node back, caught up and made the stream leader. No acked message lost, no gap or
duplicate seen by an ordered consumer, every message processed by a durable consumer;
the time until publishing resumes after each fault is recorded (asyncio source; the
blocking twin is generated)."""
from __future__ import annotations

import time
from typing import Any

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims
from tests.aio._helpers import uniq, wait_until

from ..report import record
from ._chaos import FLAVOUR, Conn, off_loop, read_stream, retry


def _node(cluster: Any, name: str) -> Any:
    for s in cluster:
        if s.name == name:
            return s
    raise AssertionError(f"no server named {name!r}")


async def _leader(js: Any, stream: str, consumer: Any = None) -> str:
    async def ask() -> Any:
        if consumer is None:
            info = await (await js.stream(stream)).info()
        else:
            info = await (await js.consumer(stream, consumer)).info()
        assert info.cluster is not None and info.cluster.leader, "no leader yet"
        return info.cluster.leader

    deadline = time.monotonic() + 30
    while True:
        try:
            return await ask()
        except (jetwire.NatsError, AssertionError):
            assert time.monotonic() < deadline, "no leader elected"
            await prims.sleep(0.1)


async def test_leader_loss_and_stepdown_during_publish_and_consume(nats_cluster_factory):
    cluster = nats_cluster_factory(3)
    conn = Conn()
    nc = await conn.connect(cluster.urls)
    total = 8000
    name = uniq("R3")
    subj = f"{name}.x"
    try:
        js = nc.jetstream(timeout=10)
        await retry(lambda: js.create_stream(name=name, subjects=[f"{name}.>"], storage="file", num_replicas=3))
        await retry(lambda: js.create_consumer(name, durable_name="d", ack_wait=3.0))
        durable = await js.consumer(name, "d")
        ordered: list = []
        processed: dict = {}

        def on_ordered(m: Any) -> None:
            ordered.append(m.metadata.sequence.stream)

        def on_durable(m: Any) -> None:
            s = m.metadata.sequence.stream
            processed[s] = processed.get(s, 0) + 1
            m.ack()

        oc = await js.ordered_consumer(name, filter_subjects=[subj])
        occ = await oc.consume(on_ordered, max_messages=200)
        dcc = await durable.consume(on_durable, max_messages=200, expires=2)

        futs: dict = {}
        resumes: dict = {}
        killed: list = []

        async def send(i: int) -> Any:
            while True:
                try:
                    # a leader lost with acks in flight never answers them: bound the wait
                    return await js.publish_async(subj, b"%d" % i, msg_id=f"{name}-{i}", timeout=5)
                except jetwire.NatsError:
                    await prims.sleep(0.01)

        async def resumed(label: str) -> None:
            """Time from the fault to the next message stored (a probe on another subject)."""
            t0 = time.monotonic()
            await retry(lambda: js.publish(f"{name}.probe", label.encode(), msg_id=f"probe-{label}", timeout=2),
                        timeout=60)
            resumes[label] = time.monotonic() - t0

        async def kill_stream_leader() -> None:
            node = _node(cluster, await _leader(js, name))
            await off_loop(node.kill)
            killed.append(node)
            await resumed("stream leader killed")

        async def stepdown() -> None:
            await retry(lambda: js.api_request(f"STREAM.LEADER.STEPDOWN.{name}"))
            await resumed("stream leader stepdown")

        async def kill_consumer_leader() -> None:
            node = _node(cluster, await _leader(js, name, "d"))
            if killed:  # bring the first victim back first: quorum needs two of three
                await off_loop(killed.pop().start)
            await off_loop(node.kill)
            killed.append(node)
            await resumed("consumer leader killed")

        async def consumer_stepdown() -> None:
            await retry(lambda: js.api_request(f"CONSUMER.LEADER.STEPDOWN.{name}.d"))
            await resumed("consumer leader stepdown")

        faults = {total // 5: kill_stream_leader, 2 * total // 5: stepdown, 3 * total // 5: consumer_stepdown,
                  4 * total // 5: kill_consumer_leader}
        for i in range(total):
            if i in faults:
                await faults[i]()
            futs[i] = await send(i)
        assert await wait_until(lambda: all(f.done() for f in futs.values()), 60)
        first = {i for i, f in futs.items() if f.exception() is None}
        acked = set(first)
        for _ in range(10):
            if len(acked) == total:
                break
            again = {i: await send(i) for i in sorted(set(range(total)) - acked)}
            await wait_until(lambda: all(f.done() for f in again.values()), 60)
            acked |= {i for i, f in again.items() if f.exception() is None}
        assert len(acked) == total
        rejoined = {node.name for node in killed}
        for node in killed:
            await off_loop(node.start)
        # the node that was killed last comes back, catches up and is made the leader:
        # everything is read back through it below
        t0 = time.monotonic()
        for _ in range(12):
            leader = await _leader(js, name)
            if leader in rejoined:
                break
            await retry(lambda: js.api_request(f"STREAM.LEADER.STEPDOWN.{name}"))
            deadline = time.monotonic() + 20
            while await _leader(js, name) == leader and time.monotonic() < deadline:
                await prims.sleep(0.1)
        assert await _leader(js, name) in rejoined, "the rejoined node never became the leader"
        resumes["killed node back, made leader"] = time.monotonic() - t0

        msgs = await read_stream(js, name, total + 4)
        ids = [int(m.data) for m in msgs if m.subject == subj]
        seqs = [m.metadata.sequence.stream for m in msgs if m.subject == subj]
        stored = len(ids)
        acked_lost = len(first - set(ids))
        dups = stored - len(set(ids))
        assert await wait_until(lambda: len(ordered) >= stored, 60), f"ordered consumer at {len(ordered)} of {stored}"
        assert await wait_until(lambda: set(seqs) <= set(processed), 60), f"durable at {len(processed)}"
        occ.stop()
        dcc.stop()
        gaps_or_dups = sum(1 for a, b in zip(ordered, seqs) if a != b) + abs(len(ordered) - len(seqs))
        redelivered = sum(processed[s] - 1 for s in set(seqs))
        for label, secs in resumes.items():
            record(f"R3 cluster: {label}", FLAVOUR, published=total, acked=len(first), stored=stored,
                   lost=acked_lost, duplicated=dups, retried=total - len(first), recovery=secs)
        record("R3 cluster: ordered consumer across the 4 faults", FLAVOUR, published=total, acked=len(ordered),
               stored=stored, lost=len(set(seqs) - set(ordered)), duplicated=len(ordered) - len(set(ordered)),
               recovery=max(resumes.values()))
        record("R3 cluster: durable consume across the 4 faults", FLAVOUR, published=total, acked=len(set(seqs) & set(processed)),
               stored=stored, lost=len(set(seqs) - set(processed)), duplicated=0, retried=redelivered,
               recovery=max(resumes.values()))
        assert acked_lost == 0 and dups == 0 and stored == total
        assert gaps_or_dups == 0, "the ordered consumer saw a gap or a duplicate"
        assert len(resumes) == 5
    finally:
        await nc.close()
