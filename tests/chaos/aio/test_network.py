"""Broken networks, through the fault proxy (tests/chaos/proxy.py): stalled and one-way
connections found stale by pings, bytes one at a time, garbage, frames cut in the
middle, latency on every write (asyncio source; the blocking twin is generated)."""
from __future__ import annotations

import time
from typing import Any

import pytest

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims
from tests.aio._helpers import uniq, wait_until

from ..proxy import DOWN, UP
from ..report import record
from ._chaos import FLAVOUR, Conn, read_stream

PING = 0.5
MAX_OUT = 2
BOUND = PING + 1.5  # a ping tick of slack, plus scheduling on a busy 2-core box


async def _roundtrip(nc: Any, subj: str) -> bytes:
    sub = await nc.subscribe(subj)
    await nc.publish(subj, b"ok")
    msg = await sub.next_msg(5)
    await sub.unsubscribe()
    return msg.data


@pytest.mark.parametrize("fault", ["stall", "drop-up", "drop-down"])
async def test_stale_connection_found_by_pings_and_reconnected(proxy, fault):
    conn = Conn()
    nc = await conn.connect(proxy.url, ping_interval=PING, max_pings_outstanding=MAX_OUT)
    try:
        subj = uniq("stale")
        assert await _roundtrip(nc, subj) == b"ok"
        t0 = time.monotonic()
        if fault == "stall":
            proxy.stall()
        else:
            proxy.drop(UP if fault == "drop-up" else DOWN)
        limit = PING * MAX_OUT + BOUND
        assert await conn.disconnected.wait(limit + 5), "the stale connection was not noticed"
        detected = time.monotonic() - t0
        assert any(isinstance(e, jetwire.StaleConnectionError) for e in conn.errors) or nc.last_error, conn.errors
        proxy.heal()
        healed = time.monotonic()
        await conn.wait_reconnected()
        back = time.monotonic() - healed
        assert await _roundtrip(nc, subj) == b"ok"
        record(f"proxy {fault}: stale detection ({detected:.2f}s)", FLAVOUR, published=2, acked=2, stored=2,
               lost=0, duplicated=0, recovery=back)
        assert detected <= limit, f"stale after {detected:.2f}s, limit {limit:.2f}s"
        # the first connection and the one that came back; a reconnect attempt may reach
        # the proxy before it is healed (reconnect_time_wait is 50 ms), one more: no storm
        assert 2 <= proxy.accepted <= 3, proxy.accepted
    finally:
        await nc.close()


async def _publish_exactly_once(js: Any, subj: str, name: str, total: int, faults: dict) -> tuple:
    """publish_async ``total`` messages with msg ids, running ``faults[i]()`` before message
    ``i``; then the retry-by-msg-id pattern until every one is acked. ``(acked the first
    time, ids retried)``."""
    futs: dict = {}

    async def send(i: int) -> Any:
        while True:
            try:
                return await js.publish_async(subj, b"%d" % i, msg_id=f"{name}-{i}")
            except jetwire.NatsError:
                await prims.sleep(0.01)

    for i in range(total):
        if i in faults:
            await prims.call(faults[i])
        futs[i] = await send(i)
    assert await wait_until(lambda: all(f.done() for f in futs.values()), 30)
    first = {i for i, f in futs.items() if f.exception() is None}
    acked = set(first)
    retried = total - len(first)
    for _ in range(10):
        if len(acked) == total:
            break
        again = {i: await send(i) for i in sorted(set(range(total)) - acked)}
        await wait_until(lambda: all(f.done() for f in again.values()), 30)
        acked |= {i for i, f in again.items() if f.exception() is None}
    assert len(acked) == total
    return first, retried


async def _check_stream(js: Any, name: str, total: int, first: set, retried: int, scenario: str,
                        conn: Conn) -> None:
    msgs = await read_stream(js, name, total)
    ids = [int(m.data) for m in msgs]
    lost = len(first - set(ids)) + total - len(set(ids))
    dups = len(ids) - len(set(ids))
    record(scenario, FLAVOUR, published=total, acked=len(first), stored=len(ids), lost=lost,
           duplicated=dups, retried=retried, recovery=max(conn.recoveries, default=None))
    assert lost == 0 and dups == 0 and len(ids) == total


@pytest.mark.parametrize("fault", ["garbage", "cut-mid-frame-down", "cut-mid-frame-up"])
async def test_publish_async_exactly_once_through_broken_connections(proxy, fault):
    """Three faults during publish_async with msg ids: the client reconnects each time and
    the retry-by-msg-id pattern stores every message once."""
    conn = Conn()
    nc = await conn.connect(proxy.url)
    total = 6000
    try:
        js = nc.jetstream()
        name = uniq("NP")
        await js.create_stream(name=name, subjects=[f"{name}.>"], storage="memory")

        async def hit() -> None:
            conn.reconnected.clear()
            if fault == "garbage":
                proxy.inject(b"\x00\xffNOT A NATS FRAME\r\n")
            else:
                proxy.cut_mid_frame(DOWN if fault.endswith("down") else UP)
            t0 = time.monotonic()
            await conn.wait_reconnected()
            conn.recoveries.append(time.monotonic() - t0)

        faults = {total * k // 4: hit for k in (1, 2, 3)}
        first, retried = await _publish_exactly_once(js, f"{name}.x", name, total, faults)
        assert proxy.accepted >= 4
        await _check_stream(js, name, total, first, retried, f"proxy {fault} x3: publish_async + msg-id retry", conn)
    finally:
        await nc.close()


async def test_jetstream_through_a_byte_at_a_time_connection(proxy):
    """Every frame split into single bytes, both ways: publishes, acks and fetches intact."""
    conn = Conn()
    nc = await conn.connect(proxy.url)
    total = 150
    try:
        js = nc.jetstream()
        name = uniq("TR")
        await js.create_stream(name=name, subjects=[f"{name}.>"], storage="memory")
        w0, b0 = proxy.writes[DOWN], proxy.bytes_out[DOWN]
        proxy.trickle(True)
        first, retried = await _publish_exactly_once(js, f"{name}.x", name, total, {})
        await js.create_consumer(name, durable_name="d")
        c = await js.consumer(name, "d")
        got: list = []
        while len(got) < total:
            batch = await c.fetch(50, max_wait=5)
            async for m in batch:
                got.append(int(m.data))
                await m.ack_sync(5)
        proxy.trickle(False)
        assert sorted(got) == list(range(total))
        assert proxy.writes[DOWN] - w0 == proxy.bytes_out[DOWN] - b0 > 0  # one byte per write
        await _check_stream(js, name, total, first, retried, "proxy trickle: publish, fetch, ack_sync", conn)
    finally:
        await nc.close()


async def test_publish_and_consume_with_latency_on_every_write(proxy):
    conn = Conn()
    nc = await conn.connect(proxy.url)
    total = 3000
    try:
        js = nc.jetstream()
        name = uniq("LAT")
        await js.create_stream(name=name, subjects=[f"{name}.>"], storage="memory")
        proxy.latency(0.02)
        first, retried = await _publish_exactly_once(js, f"{name}.x", name, total, {})
        await _check_stream(js, name, total, first, retried, "proxy latency 20ms: publish_async", conn)
    finally:
        await nc.close()


async def test_consumers_go_on_through_stalls_and_cuts(proxy):
    """A durable consume() and an ordered consumer read one stream through the proxy while
    it stalls (the connection found stale by pings), cuts a frame in the middle and sends
    garbage: every message is processed, the ordered one exactly once and in order."""
    conn = Conn()
    nc = await conn.connect(proxy.url, ping_interval=PING, max_pings_outstanding=MAX_OUT)
    n = 3000
    try:
        js = nc.jetstream()
        name = uniq("NC")
        await js.create_stream(name=name, subjects=[f"{name}.>"], storage="memory")
        _first, _retried = await _publish_exactly_once(js, f"{name}.a", name, n, {})
        await js.create_consumer(name, durable_name="d", ack_wait=2.0)
        durable = await js.consumer(name, "d")
        ordered: list = []
        processed: dict = {}
        faults = ["stall", "cut", "garbage"]
        marks = [n // 4, n // 2, 3 * n // 4]
        all_in = prims.Signal()

        async def hit(kind: str) -> None:
            conn.reconnected.clear()
            t0 = time.monotonic()
            if kind == "stall":
                proxy.stall()
                assert await conn.disconnected.wait(PING * MAX_OUT + BOUND + 5)
                proxy.heal()
            elif kind == "cut":
                proxy.cut_mid_frame(DOWN)
            else:
                proxy.inject(b"MSG garbage\r\n\x00\x01")
            await conn.wait_reconnected()
            conn.recoveries.append(time.monotonic() - t0)

        async def on_ordered(m: Any) -> None:
            ordered.append(m.metadata.sequence.stream)
            if marks and len(ordered) >= marks[0]:
                marks.pop(0)
                await hit(faults.pop(0))
            if len(ordered) >= n and len(processed) >= n:
                all_in.set()

        def on_durable(m: Any) -> None:
            s = m.metadata.sequence.stream
            processed[s] = processed.get(s, 0) + 1
            m.ack()
            if len(ordered) >= n and len(processed) >= n:
                all_in.set()

        oc = await js.ordered_consumer(name)
        occ = await oc.consume(on_ordered, max_messages=100)
        dcc = await durable.consume(on_durable, max_messages=100, expires=2)
        assert await all_in.wait(90), (len(ordered), len(processed))
        occ.stop()
        dcc.stop()
        record("proxy stall+cut+garbage: ordered consumer", FLAVOUR, published=n, acked=len(ordered), stored=n,
               lost=n - len(set(ordered)), duplicated=len(ordered) - len(set(ordered)),
               recovery=max(conn.recoveries, default=None))
        record("proxy stall+cut+garbage: durable consume", FLAVOUR, published=n, acked=len(processed), stored=n,
               lost=n - len(processed), duplicated=0, retried=sum(v - 1 for v in processed.values()),
               recovery=max(conn.recoveries, default=None))
        assert ordered == list(range(1, n + 1))
        assert sorted(processed) == list(range(1, n + 1))
        assert faults == [] and len(conn.recoveries) == 3
    finally:
        await nc.close()


async def test_a_server_that_closes_right_after_its_pong_is_not_taken_for_a_connection(proxy):
    """Each reconnect's handshake gets its PONG, then the connection closes (the proxy
    resets it right after forwarding the PONG): the client must not sit on that dead
    socket as if connected (until the pings noticed: minutes with the defaults), but
    keep trying; once the fault is gone it is back and carries messages."""
    conn = Conn()
    nc = await conn.connect(proxy.url, ping_interval=600)
    try:
        subj = uniq("pongclose")
        assert await _roundtrip(nc, subj) == b"ok"
        proxy.close_after(b"PONG")
        proxy.cut()
        assert await conn.disconnected.wait(5)
        before = proxy.accepted
        # every handshake got its PONG and lost its connection: the client tried again
        assert await wait_until(lambda: proxy.accepted >= before + 3, 10), proxy.accepted
        proxy.heal()
        assert await wait_until(lambda: nc.status == "CONNECTED", 20)
        assert await _roundtrip(nc, subj) == b"ok"
    finally:
        await nc.close()


async def test_a_flush_made_while_reconnecting_waits_through_failed_handshakes(proxy):
    """Reconnect attempts whose handshake fails (the proxy resets each connection right
    after the server's INFO) fail their own PING only: a flush() made meanwhile waits
    for the connection that comes back, and succeeds then."""
    conn = Conn()
    nc = await conn.connect(proxy.url, ping_interval=600)
    try:
        proxy.close_after(b"INFO")
        proxy.cut()
        assert await conn.disconnected.wait(5)
        outcome: list = []

        async def flush() -> None:
            try:
                await nc.flush(20)
                outcome.append("ok")
            except Exception as exc:
                outcome.append(exc)

        flusher = prims.spawn(flush)
        before = proxy.accepted
        assert await wait_until(lambda: proxy.accepted >= before + 3, 10), proxy.accepted
        assert outcome == []  # still waiting, through the failed handshakes
        proxy.heal()
        await conn.wait_reconnected()
        assert await prims.join(flusher, 20)
        assert outcome == ["ok"]
        assert await _roundtrip(nc, uniq("flushed")) == b"ok"
    finally:
        await nc.close()
