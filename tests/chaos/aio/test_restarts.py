"""A single server killed (-9) and restarted, three times, while the client publishes,
fetches, consumes, reads in order, watches a bucket and reads an object. Every message is
accounted for: none acked and lost, none duplicated (asyncio source; the blocking twin
is generated)."""
from __future__ import annotations

import hashlib
import time
from typing import Any

import pytest

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims
from tests.aio._helpers import fill, uniq, wait_until

from ..proxy import FaultProxy
from ..report import record
from ._chaos import FLAVOUR, Conn, bounce, kinds, read_stream, retry

ROUNDS = 3


async def _outcome(fut: Any) -> Any:
    """A settled future's PubAck, or its exception."""
    exc = fut.exception()
    return exc if exc is not None else fut.result()


@pytest.mark.parametrize("via", ["direct", "proxy"])
async def test_publish_async_with_msg_ids_is_exactly_once(fresh_nats_server, via):
    """The retry-by-msg-id pattern (README): publish_async with a msg id; a future that
    fails (the connection was lost before its ack) is published again with the same id;
    the stream's deduplication window drops the copies that had been stored. ``proxy``:
    through the fault proxy, which stays up while the server behind it restarts."""
    srv = fresh_nats_server
    conn = Conn()
    proxy = FaultProxy(srv.host, srv.port).start() if via == "proxy" else None
    nc = await conn.connect(proxy.url if proxy is not None else srv.url)
    per_round = 4000
    total = per_round * (ROUNDS + 1)
    try:
        js = nc.jetstream()
        name = uniq("PA")
        subj = f"{name}.x"
        await js.create_stream(name=name, subjects=[f"{name}.>"], storage="file")
        futs: dict = {}
        bounces = kinds(ROUNDS)
        bouncer = None
        stalls = 0

        async def send(i: int) -> Any:
            nonlocal stalls
            while True:
                try:
                    return await js.publish_async(subj, b"%d" % i, msg_id=f"{name}-{i}")
                except jetwire.NatsError:  # the window is full while the server is away
                    stalls += 1
                    await prims.sleep(0.01)

        for i in range(total):
            if i % per_round == 0 and 0 < i // per_round <= ROUNDS:
                if bouncer is not None:
                    assert await prims.join(bouncer, 30)
                bouncer = prims.spawn(bounce, srv, conn, bounces[i // per_round - 1])
            futs[i] = await send(i)
        assert await prims.join(bouncer, 30)
        assert await wait_until(lambda: all(f.done() for f in futs.values()), 30)

        first = {i: await _outcome(f) for i, f in futs.items()}
        acked_first = {i for i, r in first.items() if not isinstance(r, BaseException)}
        failed = sorted(set(first) - acked_first)
        for r in first.values():
            if isinstance(r, BaseException):
                assert isinstance(r, jetwire.NatsError), repr(r)
        # the pattern: publish what failed again, with the same msg id, until all are acked
        acked = set(acked_first)
        for _ in range(10):
            if len(acked) == total:
                break
            again = {i: await send(i) for i in sorted(set(range(total)) - acked)}
            await wait_until(lambda: all(f.done() for f in again.values()), 30)
            for i, f in again.items():
                if not isinstance(await _outcome(f), BaseException):
                    acked.add(i)
        assert len(acked) == total

        msgs = await read_stream(js, name, total)
        ids = [int(m.data) for m in msgs]
        stored = len(ids)
        dups = stored - len(set(ids))
        acked_lost = len(acked_first - set(ids))
        lost = total - len(set(ids))
        record(f"kill/restart x{ROUNDS}: publish_async + msg-id retry" + (" (via proxy)" if proxy else ""),
               FLAVOUR, published=total,
               acked=len(acked_first), stored=stored, lost=acked_lost, duplicated=dups,
               retried=len(failed), recovery=max(conn.recoveries, default=None))
        assert acked_lost == 0 and lost == 0 and dups == 0
        assert (await (await js.stream(name)).info()).state.messages == total
        assert len(conn.recoveries) >= ROUNDS
    finally:
        await nc.close()
        if proxy is not None:
            proxy.stop()


class Tally:
    """Deliveries seen by a consumer: stream sequence -> the delivery counts seen.

    The same delivery count twice for one sequence is a duplicate, unless the server was
    killed with -9 in between: it writes its consumer state asynchronously, so it may come
    back with delivery counts rewound and deliver a message again with the same count
    (``kill=True`` scenarios report those as redeliveries: at-least-once, nothing lost)."""

    def __init__(self, n: int, kill: bool) -> None:
        self.kill = kill
        self.n = n
        self.seen: dict = {}
        self.order: list = []
        self.done = prims.Signal()
        self.marks = [n * k // (ROUNDS + 1) for k in range(1, ROUNDS + 1)]

    def add(self, msg: Any) -> bool:
        """Count ``msg``; True when it is time for the next bounce."""
        md = msg.metadata
        self.seen.setdefault(md.sequence.stream, []).append(md.num_delivered)
        self.order.append(md.sequence.stream)
        if len(self.seen) >= self.n:
            self.done.set()
        if self.marks and len(self.seen) >= self.marks[0]:
            self.marks.pop(0)
            return True
        return False

    @property
    def duplicated(self) -> int:
        """The same delivery handed over twice (a redelivery by the server is not one)."""
        return 0 if self.kill else sum(len(v) - len(set(v)) for v in self.seen.values())

    @property
    def redelivered(self) -> int:
        return sum(len(v) - 1 for v in self.seen.values()) - self.duplicated


def _kind(kill: bool) -> str:
    return "kill -9" if kill else "restart"


async def _durable(srv, conn, n):
    nc = await conn.connect(srv.url)
    js = nc.jetstream()
    name = uniq("C")
    await js.create_stream(name=name, subjects=[f"{name}.>"], storage="file")
    await fill(js, f"{name}.a", n)
    await js.create_consumer(name, durable_name="d", ack_wait=2.0)
    return nc, js, name, await js.consumer(name, "d")


async def _finish(scenario, js, name, n, tally, conn):
    stored = (await (await js.stream(name)).info()).state.messages
    lost = n - len(tally.seen)
    record(scenario, FLAVOUR, published=n, acked=n, stored=stored, lost=lost,
           duplicated=tally.duplicated, retried=tally.redelivered,
           recovery=max(conn.recoveries, default=None))
    assert lost == 0 and tally.duplicated == 0 and stored == n
    assert sorted(tally.seen) == list(range(1, n + 1))
    assert len(conn.recoveries) >= ROUNDS


@pytest.mark.parametrize("kill", [False, True], ids=["restart", "kill9"])
async def test_fetch_loop_survives_restarts(fresh_nats_server, kill):
    srv, conn, n = fresh_nats_server, Conn(), 2000
    nc, js, name, c = await _durable(srv, conn, n)
    try:
        tally = Tally(n, kill)
        bounces = [kill] * ROUNDS
        bouncer = None
        deadline = time.monotonic() + 60
        while not tally.done.is_set():
            assert time.monotonic() < deadline, f"{len(tally.seen)} of {n}"
            try:
                batch = await c.fetch(50, max_wait=1)
                async for m in batch:
                    if tally.add(m):
                        assert await prims.join(bouncer, 30)
                        bouncer = prims.spawn(bounce, srv, conn, bounces.pop(0))
                    m.ack()
            except jetwire.NatsError:  # the server is away: fetch again
                await prims.sleep(0.05)
        assert await prims.join(bouncer, 30)
        await _finish(f"{_kind(kill)} x{ROUNDS}: fetch loop", js, name, n, tally, conn)
    finally:
        await nc.close()


@pytest.mark.parametrize("kill", [False, True], ids=["restart", "kill9"])
async def test_consume_survives_restarts(fresh_nats_server, kill):
    srv, conn, n = fresh_nats_server, Conn(), 2000
    nc, js, name, c = await _durable(srv, conn, n)
    tally = Tally(n, kill)
    bounces = [kill] * ROUNDS
    errors: list = []

    async def handle(m):
        bounce_now = tally.add(m)
        m.ack()
        if bounce_now:  # the restart happens while this pull has more on the way
            await bounce(srv, conn, bounces.pop(0))

    try:
        cc = await c.consume(handle, max_messages=100, expires=2, error_cb=errors.append)
        assert await tally.done.wait(60), f"{len(tally.seen)} of {n}"
        cc.stop()
        await _finish(f"{_kind(kill)} x{ROUNDS}: consume", js, name, n, tally, conn)
    finally:
        await nc.close()


@pytest.mark.parametrize("kill", [False, True], ids=["restart", "kill9"])
async def test_messages_survives_restarts(fresh_nats_server, kill):
    srv, conn, n = fresh_nats_server, Conn(), 2000
    nc, js, name, c = await _durable(srv, conn, n)
    tally = Tally(n, kill)
    bounces = [kill] * ROUNDS
    try:
        it = await c.messages(max_messages=100, expires=2)
        deadline = time.monotonic() + 60
        while not tally.done.is_set():
            assert time.monotonic() < deadline, f"{len(tally.seen)} of {n}"
            try:
                m = await it.next(timeout=1)
            except jetwire.NatsError:
                continue
            bounce_now = tally.add(m)
            m.ack()
            if bounce_now:
                await bounce(srv, conn, bounces.pop(0))
        it.stop()
        await _finish(f"{_kind(kill)} x{ROUNDS}: messages", js, name, n, tally, conn)
    finally:
        await nc.close()


@pytest.mark.parametrize("via", ["direct", "proxy"])
async def test_ordered_consumer_survives_restarts(fresh_nats_server, via):
    srv, conn, n = fresh_nats_server, Conn(), 2000
    proxy = FaultProxy(srv.host, srv.port).start() if via == "proxy" else None
    nc = await conn.connect(proxy.url if proxy is not None else srv.url)
    tally = Tally(n, False)
    bounces = kinds(ROUNDS)

    async def handle(m):
        if tally.add(m):
            await bounce(srv, conn, bounces.pop(0))

    try:
        js = nc.jetstream()
        name = uniq("O")
        await js.create_stream(name=name, subjects=[f"{name}.>"], storage="file")
        await fill(js, f"{name}.a", n)
        oc = await js.ordered_consumer(name)
        cc = await oc.consume(handle, max_messages=100)
        assert await tally.done.wait(60), f"{len(tally.seen)} of {n}"
        cc.stop()
        gaps = sum(1 for a, b in zip(tally.order, tally.order[1:], strict=False) if b != a + 1)
        record(f"kill/restart x{ROUNDS}: ordered consumer" + (" (via proxy)" if proxy else ""), FLAVOUR,
               published=n, acked=n, stored=n,
               lost=n - len(tally.seen), duplicated=len(tally.order) - len(set(tally.order)),
               recovery=max(conn.recoveries, default=None))
        assert tally.order == list(range(1, n + 1)), f"gaps {gaps}"
        assert len(conn.recoveries) >= ROUNDS
    finally:
        await nc.close()
        if proxy is not None:
            proxy.stop()


async def test_kv_watcher_survives_restarts(fresh_nats_server):
    """The None marker once, then every update exactly once and in order."""
    srv, conn = fresh_nats_server, Conn()
    nc = await conn.connect(srv.url)
    updates = 400
    try:
        js = nc.jetstream()
        # history 64 keeps every revision of the 40 per key: with history=1 a revision
        # overwritten while the watcher recreates its consumer is gone from the stream,
        # and skipping it would be right (a watcher promises the latest values)
        kv = await js.create_key_value(bucket=uniq("KV"), history=64, storage="file")
        for k in range(10):
            await kv.put(f"k{k}", b"init")
        w = await kv.watch_all()
        seen: list = []
        markers = 0
        got_all = prims.Signal()
        target = [0]

        async def read() -> None:
            nonlocal markers
            try:
                async for e in w:
                    if e is None:
                        markers += 1
                        continue
                    seen.append(e.revision)
                    if target[0] and e.revision >= target[0]:
                        got_all.set()
            except jetwire.NatsError as exc:  # pragma: no cover - reported by the assert below
                seen.append(exc)

        reader = prims.spawn(read)
        assert await wait_until(lambda: markers == 1, 10)
        initial = list(seen)
        assert initial == list(range(1, 11))
        bounces = kinds(ROUNDS)
        revs = []
        for i in range(updates):
            if i and i % (updates // (ROUNDS + 1)) == 0 and bounces:
                await bounce(srv, conn, bounces.pop(0))
            revs.append(await retry(lambda: kv.put(f"k{i % 10}", b"%d" % i)))
        values = (await kv.status()).values
        info = await (await js.stream(f"KV_{kv.bucket}")).info()
        last_rev = info.state.last_seq
        assert values == last_rev  # every revision kept
        target[0] = last_rev
        if seen and seen[-1] == last_rev:
            got_all.set()
        assert await got_all.wait(20), f"watcher at {seen[-1:]} of {last_rev}"
        w.stop()
        await prims.join(reader, 5)
        after = seen[len(initial):]
        expected = list(range(11, last_rev + 1))
        dups = len(after) - len(set(after))
        record(f"kill/restart x{ROUNDS}: KV watcher", FLAVOUR, published=updates, acked=len(revs),
               stored=last_rev - 10, lost=len(set(expected) - set(after)), duplicated=dups,
               retried=last_rev - 10 - updates, recovery=max(conn.recoveries, default=None))
        assert markers == 1
        assert after == expected
        assert set(revs) <= set(expected)
    finally:
        await nc.close()


async def test_object_get_fails_clearly_or_completes(fresh_nats_server):
    """A get in progress when the server dies raises a NatsError, or completes with the
    right bytes (digest checked); never corrupt bytes, never a hang."""
    srv, conn = fresh_nats_server, Conn()
    nc = await conn.connect(srv.url)
    data = hashlib.sha256(b"seed").digest() * (1024 * 1024 // 32 * 2)  # 2 MiB, 16 chunks
    completed = failed = 0
    try:
        js = nc.jetstream()
        obs = await js.create_object_store(bucket=uniq("OB"), storage="file")
        await obs.put_bytes("blob", data)
        for kill in kinds(ROUNDS):
            r = await retry(lambda: obs.get("blob", timeout=3))
            head = await r.read(128 * 1024)
            await bounce(srv, conn, kill)
            try:
                rest = await r.read()
            except jetwire.NatsError:
                failed += 1
            else:
                assert head + rest == data
                completed += 1
            r.close()
            assert await retry(lambda: obs.get_bytes("blob")) == data
        record(f"kill/restart x{ROUNDS}: object get", FLAVOUR, published=ROUNDS, acked=completed,
               stored=ROUNDS, lost=0, duplicated=0, retried=failed,
               recovery=max(conn.recoveries, default=None))
        assert completed + failed == ROUNDS
    finally:
        await nc.close()



async def test_publish_with_msg_ids_is_exactly_once(fresh_nats_server):
    """js.publish (waiting for each ack) while the server restarts: a publish that fails
    is made again with the same msg id until it is acked."""
    srv, conn = fresh_nats_server, Conn()
    nc = await conn.connect(srv.url)
    total = 1600
    try:
        js = nc.jetstream()
        name = uniq("P")
        subj = f"{name}.x"
        await js.create_stream(name=name, subjects=[f"{name}.>"], storage="file")
        bounces = kinds(ROUNDS)
        bouncer = None
        retried = 0
        duplicate_acks = 0
        for i in range(total):
            if i % (total // (ROUNDS + 1)) == 0 and 0 < i // (total // (ROUNDS + 1)) <= ROUNDS:
                assert await prims.join(bouncer, 30)
                bouncer = prims.spawn(bounce, srv, conn, bounces.pop(0))
            while True:
                try:
                    ack = await js.publish(subj, b"%d" % i, msg_id=f"{name}-{i}", timeout=1)
                    break
                except jetwire.NatsError:
                    retried += 1
                    await prims.sleep(0.02)
            duplicate_acks += ack.duplicate
        assert await prims.join(bouncer, 30)
        ids = [int(m.data) for m in await read_stream(js, name, total)]
        dups = len(ids) - len(set(ids))
        record(f"kill/restart x{ROUNDS}: publish + msg-id retry", FLAVOUR, published=total, acked=total,
               stored=len(ids), lost=total - len(set(ids)), duplicated=dups, retried=retried,
               recovery=max(conn.recoveries, default=None))
        assert sorted(ids) == list(range(total)) and dups == 0
        assert len(conn.recoveries) == ROUNDS
    finally:
        await nc.close()


async def test_push_subscription_with_flow_control_survives_restarts(fresh_nats_server):
    srv, conn, n = fresh_nats_server, Conn(), 2000
    nc = await conn.connect(srv.url)
    tally = Tally(n, True)  # kill -9 among the bounces: counts may rewind (see Tally)
    bounces = kinds(ROUNDS)

    async def handle(m):
        if tally.add(m):
            await bounce(srv, conn, bounces.pop(0))

    try:
        js = nc.jetstream()
        name = uniq("PU")
        await js.create_stream(name=name, subjects=[f"{name}.>"], storage="file")
        await fill(js, f"{name}.a", n)
        sub = await js.subscribe(f"{name}.a", cb=handle, durable="pd", flow_control=True, idle_heartbeat=0.5,
                                 config={"ack_wait": 2.0, "max_ack_pending": 200})
        assert await tally.done.wait(60), f"{len(tally.seen)} of {n}"
        await sub.unsubscribe()
        await _finish(f"kill/restart x{ROUNDS}: push + flow control", js, name, n, tally, conn)
    finally:
        await nc.close()
