"""A 3-node cluster losing leaders while the client publishes and consumes an R3 stream:
the stream leader killed (-9), a stepdown request, a consumer leader stepdown, the
consumer leader killed, then the
killed node back, caught up and made the stream leader. No acked message lost, no gap or
duplicate seen by an ordered consumer, every message processed by a durable consumer;
the time until publishing resumes after each fault is recorded. And the stream leader
killed during 20,000 ``publish_async`` on a loaded machine: every future resolves within
its ack deadline (asyncio source; the blocking twin is generated)."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
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
        deadline = time.monotonic() + 90  # the cluster may take a while to take publishes again
        while len(acked) < total and time.monotonic() < deadline:
            again = {i: await send(i) for i in sorted(set(range(total)) - acked)}
            await wait_until(lambda: all(f.done() for f in again.values()), 60)
            acked |= {i for i, f in again.items() if f.exception() is None}
            if len(acked) < total:
                await prims.sleep(0.5)
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
        gaps_or_dups = sum(1 for a, b in zip(ordered, seqs, strict=False) if a != b) + abs(len(ordered) - len(seqs))
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


_BURN = "import time\nt = time.monotonic() + {secs}\nwhile time.monotonic() < t:\n    pass\n"


def _burners(secs: float) -> list:
    """A busy process per core for ``secs`` seconds at most (kill them when done)."""
    return [subprocess.Popen([sys.executable, "-c", _BURN.format(secs=secs)]) for _ in range(os.cpu_count() or 2)]


async def test_leader_killed_during_publish_async_every_future_resolves_by_its_deadline(nats_cluster_factory):
    """The stream leader stops (SIGSTOP: what a loaded machine does to it), is killed
    (SIGKILL) 0.5 s later and restarted 3.5 s after that, a CPU burner per core running,
    while the client publishes 20,000 messages with msg ids. The client stays connected
    to a surviving node, so nothing fails the publishes in flight to the killed leader:
    their default ack deadline (the context's timeout) does.
    Every future resolves within the deadline plus 1 s; publishing the failed ones again
    with their msg ids stores each message exactly once."""
    cluster = nats_cluster_factory(3)
    total = 20_000
    deadline = 5.0
    name = uniq("DL")
    subj = f"{name}.x"
    admin = await jetwire.connect(cluster.urls)
    nc = None
    burners: list = []
    restarted = threading.Event()
    killer = None
    try:
        ajs = admin.jetstream(timeout=10)
        await retry(lambda: ajs.create_stream(name=name, subjects=[f"{name}.>"], storage="file", num_replicas=3))
        leader = _node(cluster, await _leader(ajs, name))
        survivor = next(s for s in cluster if s is not leader)
        conn = Conn()
        nc = await conn.connect(survivor.url)
        js = nc.jetstream(timeout=deadline)  # publish_async's default ack deadline
        sent_at: dict = {}
        done_at: dict = {}
        futs: dict = {}

        async def send(i: int) -> Any:
            stalled_since = time.monotonic()
            while True:
                try:
                    fut = await js.publish_async(subj, b"%d" % i, msg_id=f"{name}-{i}")
                except jetwire.TooManyStalledMsgsError:
                    # the window is full of publishes to the dead leader: until they expire
                    assert time.monotonic() - stalled_since < deadline + 5, "the window never freed"
                    continue
                sent_at[i] = time.monotonic()
                fut.add_done_callback(lambda f, i=i: done_at.__setitem__(i, time.monotonic()))
                return fut

        def kill_and_restart() -> None:
            """On a thread of its own: the publisher goes on while the leader dies. It
            stops first (what the load does to it: publishes routed to it and never
            read), then SIGKILL loses those: no ack ever comes for them."""
            leader.freeze()
            time.sleep(0.5)
            leader.kill()
            time.sleep(3.5)
            leader.start()
            restarted.set()

        burners = _burners(40)
        for i in range(total):
            if i == total // 4:
                killer = threading.Thread(target=kill_and_restart, daemon=True)
                killer.start()
            futs[i] = await send(i)
        last = time.monotonic()
        assert await wait_until(lambda: len(done_at) == total, deadline + 1.5), \
            f"{total - len(done_at)} futures still pending {time.monotonic() - last:.1f}s after the last publish"
        slow = {i: done_at[i] - sent_at[i] for i in futs if done_at[i] - sent_at[i] > deadline + 1.0}
        assert not slow, f"{len(slow)} futures took longer than the deadline + 1 s: max {max(slow.values()):.2f}s"
        first = {i for i, f in futs.items() if f.exception() is None}
        timed_out = sum(1 for f in futs.values() if isinstance(f.exception(), jetwire.TimeoutError))
        for p in burners:
            p.kill()
        assert await wait_until(restarted.is_set, 30), "the killed leader did not come back"
        acked = set(first)
        for _ in range(10):
            if len(acked) == total:
                break
            again = {i: await send(i) for i in sorted(set(range(total)) - acked)}
            await js.publish_async_complete()  # returns: every future has a deadline
            acked |= {i for i, f in again.items() if f.exception() is None}
        assert len(acked) == total
        msgs = await read_stream(ajs, name, total)
        ids = [int(m.data) for m in msgs]
        record("R3 cluster: leader killed during 20k publish_async, loaded", FLAVOUR, published=total,
               acked=len(first), stored=len(ids), lost=len(first - set(ids)), duplicated=len(ids) - len(set(ids)),
               retried=total - len(first))
        assert sorted(ids) == list(range(total)), "a gap or a duplicate in the stream"
        assert (await (await ajs.stream(name)).info()).state.messages == total
        assert timed_out > 0, "no publish was lost with the leader: the scenario did not happen"
    finally:
        for p in burners:
            p.kill()
            p.wait()
        if killer is not None:
            killer.join(30)  # the node is back before the cluster is stopped
        if nc is not None:
            await nc.close()
        await admin.close()
