"""A network path that stalls (packets stop, the socket stays open) under a busy
publisher: the stale connection is found by the pings that are due even while a write
is stuck, no publish() blocks longer than ``flush_timeout``, and close() and drain() are
bounded by ``flush_timeout`` and ``drain_timeout`` and leave nothing running (asyncio
source; the blocking twin is generated)."""
from __future__ import annotations

import asyncio  # aio-only
import time
from typing import Any

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims
from jetwire.aio import micro
from tests.aio._helpers import uniq, wait_until

from ..proxy import FaultProxy
from ._chaos import Conn

PING = 0.5
MAX_OUT = 2
NOTICED = PING * (MAX_OUT + 1) + 1.0  # three ping intervals plus a second: 2.5 s
SLACK = 0.5  # scheduling on a busy 2-core box
HEAL = 15.0  # the proxy resumes on its own after this long (a hung client ends the test)
PAYLOAD = b"x" * 1024


def _running() -> set:
    """What runs besides the caller: tasks (asyncio) or threads (blocking)."""
    # sync-only: import threading
    return set(asyncio.all_tasks()) - {asyncio.current_task()}  # aio-only
    # sync-only: return set(threading.enumerate()) - {threading.current_thread()}


class Publisher:
    """Publishes 1 KiB messages in a loop (a task, or a thread in the blocking flavour)
    and times every publish() call."""

    def __init__(self, nc: Any) -> None:
        self.nc = nc
        self.subject = uniq("stall")
        self.sent = 0
        self.longest = 0.0
        self.since: Any = None  # when the publish() under way began
        self.errors: list = []
        self.stop = False
        self.task: Any = None

    def start(self) -> Publisher:
        self.task = prims.spawn(self._run)
        return self

    async def _run(self) -> None:
        nc = self.nc
        while not self.stop:
            t0 = self.since = time.monotonic()
            try:
                await nc.publish(self.subject, PAYLOAD)
            except jetwire.ConnectionClosedError:
                return
            except jetwire.NatsError as exc:  # the reconnect buffer is full
                self.errors.append(exc)
                await prims.sleep(0.01)
            finally:
                self.longest = max(self.longest, time.monotonic() - t0)
                self.since = None
            self.sent += 1
            if self.sent % 64 == 0:
                await prims.sleep(0)  # let the event loop run (a publish awaited is not a yield)

    def blocked(self) -> bool:
        since = self.since
        return since is not None and time.monotonic() - since > 0.2

    async def finish(self, timeout: float) -> None:
        self.stop = True
        assert await prims.join(self.task, timeout), "the publisher is still blocked"


async def _stall_under_publisher(proxy: FaultProxy, nc: Any) -> Publisher:
    pub = Publisher(nc).start()
    assert await wait_until(lambda: pub.sent > 2000, 10), "publishing did not start"
    proxy.stall(HEAL)
    assert await wait_until(pub.blocked, 10), "the stalled path never blocked the publisher"
    return pub


async def test_stale_connection_noticed_while_a_publish_is_stuck(proxy):
    """A busy publisher through a stalled path: the pings that fall due find the connection
    stale within three ping intervals plus a second, although a write is stuck, and no
    publish() blocks longer than flush_timeout."""
    flush_timeout = 3.0
    before = _running()
    conn = Conn()
    nc = await conn.connect(proxy.url, ping_interval=PING, max_pings_outstanding=MAX_OUT,
                            flush_timeout=flush_timeout)
    try:
        pub = Publisher(nc).start()
        assert await wait_until(lambda: pub.sent > 2000, 10), "publishing did not start"
        t0 = time.monotonic()
        proxy.stall(HEAL)
        assert await conn.disconnected.wait(HEAL), "the stale connection was not noticed"
        detected = (conn.lost_at or time.monotonic()) - t0
        assert await wait_until(lambda: conn.errors, 5)
        await pub.finish(flush_timeout + SLACK)
        proxy.heal()
        await conn.wait_reconnected()
        assert detected <= NOTICED, f"stale after {detected:.2f}s, limit {NOTICED:.2f}s"
        assert any(isinstance(e, (jetwire.StaleConnectionError, jetwire.TimeoutError)) for e in conn.errors), \
            conn.errors
        assert pub.longest <= flush_timeout + SLACK, f"a publish() blocked {pub.longest:.2f}s"
    finally:
        await nc.close()
    assert await wait_until(lambda: not (_running() - before), 2.0), _running() - before


async def test_publish_bounded_by_flush_timeout_without_pings(proxy):
    """With pings far apart, the write deadline alone fails the stuck connection: no
    publish() blocks longer than flush_timeout."""
    flush_timeout = 1.0
    conn = Conn()
    nc = await conn.connect(proxy.url, flush_timeout=flush_timeout)
    try:
        pub = await _stall_under_publisher(proxy, nc)
        t0 = time.monotonic()
        assert await conn.disconnected.wait(flush_timeout + 5), "the stuck connection was not dropped"
        dropped = time.monotonic() - t0
        await pub.finish(flush_timeout + SLACK)
        assert dropped <= flush_timeout + SLACK, f"dropped after {dropped:.2f}s"
        assert pub.longest <= flush_timeout + SLACK, f"a publish() blocked {pub.longest:.2f}s"
        # error_cb is called on the dispatcher, disconnected_cb by the reconnect loop:
        # the first may come a little after the second
        assert await wait_until(lambda: any(isinstance(e, jetwire.TimeoutError) for e in conn.errors), 5), \
            conn.errors
    finally:
        proxy.heal()
        await nc.close()


async def test_calls_with_a_shorter_timeout_keep_it_while_a_write_is_stuck(proxy):
    """A publish stuck on a stalled path holds the socket for up to flush_timeout; a call
    with a shorter timeout of its own (flush, service discovery) ends at it, and a
    subscribe does not wait for the stuck writer (they waited for it, up to
    flush_timeout, and the blocking flush then reported the connection lost)."""
    flush_timeout = 4.0
    conn = Conn()
    nc = await conn.connect(proxy.url, flush_timeout=flush_timeout)
    pub = None
    try:
        pub = await _stall_under_publisher(proxy, nc)
        took = {}
        t0 = time.monotonic()
        try:
            await nc.flush(timeout=1)
        except jetwire.TimeoutError:
            took["flush"] = time.monotonic() - t0
        t0 = time.monotonic()
        assert await micro.ping(nc, timeout=1) == []
        took["ping"] = time.monotonic() - t0
        t0 = time.monotonic()
        sub = await nc.subscribe(uniq("later"))
        took["subscribe"] = time.monotonic() - t0
        assert set(took) == {"flush", "ping", "subscribe"}, took  # flush with its TimeoutError
        assert max(took.values()) <= 1.0 + SLACK, took
        assert not conn.disconnected.is_set()  # within the write deadline: still connected
        await sub.unsubscribe()
    finally:
        await nc.close()  # (before the path heals: no reconnect through the proxy)
        proxy.heal()
        if pub is not None:
            await pub.finish(flush_timeout + SLACK)


async def test_close_on_a_stalled_path_is_bounded(proxy):
    """close() while the path is stalled and a publish is stuck returns within
    flush_timeout + 1 s, releases the publisher and leaves nothing running."""
    flush_timeout = 1.0
    before = _running()
    conn = Conn()
    nc = await conn.connect(proxy.url, flush_timeout=flush_timeout)
    pub = await _stall_under_publisher(proxy, nc)
    t0 = time.monotonic()
    await nc.close()
    took = time.monotonic() - t0
    await pub.finish(flush_timeout + 1.0)
    assert took <= flush_timeout + 1.0, f"close() took {took:.2f}s"
    assert nc.is_closed
    assert await wait_until(lambda: not (_running() - before), flush_timeout + 1.0), _running() - before


async def test_drain_on_a_stalled_path_is_bounded(proxy):
    """drain() on a stalled path returns or raises DrainTimeoutError within
    drain_timeout + 1 s (flush_timeout is longer), and leaves nothing running."""
    drain_timeout = 1.0
    before = _running()
    conn = Conn()
    nc = await conn.connect(proxy.url, flush_timeout=5.0, drain_timeout=drain_timeout)
    got: list = []
    await nc.subscribe(uniq("drain"), cb=got.append)
    pub = await _stall_under_publisher(proxy, nc)
    t0 = time.monotonic()
    try:
        await nc.drain()
    except jetwire.DrainTimeoutError:
        pass
    took = time.monotonic() - t0
    await pub.finish(drain_timeout + 1.0)
    assert took <= drain_timeout + 1.0, f"drain() took {took:.2f}s"
    assert nc.is_closed
    assert await wait_until(lambda: not (_running() - before), drain_timeout + 1.0), _running() - before
