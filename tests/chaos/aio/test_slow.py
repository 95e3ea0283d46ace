"""Slow consumers: a subscription over its pending limits drops what does not fit, counts
it, and tells error_cb once per episode; received + dropped == published, exactly; a
1 GiB burst into a limited subscription keeps memory bounded (asyncio source; the
blocking twin is generated)."""
from __future__ import annotations

import threading
import time
from typing import Any

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims
from tests.aio._helpers import uniq, wait_until

from ..report import record
from ._chaos import FLAVOUR


class SlowErrors:
    def __init__(self) -> None:
        self.slow: list = []
        self.other: list = []

    def __call__(self, err: Any) -> None:
        (self.slow if isinstance(err, jetwire.SlowConsumerError) else self.other).append(err)


async def _burst(pub: Any, sub_nc: Any, subj: str, n: int, data: bytes) -> None:
    """Publish ``n`` messages on ``subj`` and return once the subscriber's connection has
    routed every one of them (an end marker on the same connection came after them)."""
    end = await sub_nc.subscribe(subj + ".end")
    await sub_nc.flush(5)
    for _ in range(n):
        await pub.publish(subj, data)
    await pub.publish(subj + ".end", b"")
    await pub.flush(10)
    await end.next_msg(30)
    await end.unsubscribe()


async def _take_all(sub: Any) -> int:
    got = 0
    while sub.pending_msgs:
        await sub.next_msg(1)
        got += 1
    return got


async def test_messages_limit_received_plus_dropped_is_published(nats_url):
    errs = SlowErrors()
    nc = await jetwire.connect(nats_url, error_cb=errs)
    pub = await jetwire.connect(nats_url)
    n, limit = 3000, 100
    try:
        subj = uniq("slow")
        sub = await nc.subscribe(subj, pending_msgs_limit=limit)
        await _burst(pub, nc, subj, n, b"x" * 16)
        received = await _take_all(sub)
        assert await wait_until(lambda: len(errs.slow) >= 1, 5)
        assert received == limit and sub.dropped == n - limit
        assert len(errs.slow) == 1  # one episode, one report
        # a second episode once the backlog was worked off: reported once more
        await _burst(pub, nc, subj, n, b"y" * 16)
        received += await _take_all(sub)
        assert await wait_until(lambda: len(errs.slow) >= 2, 5)
        record("slow consumer: msgs limit, 2 bursts", FLAVOUR, published=2 * n, acked=received,
               stored=received, lost=0, duplicated=0, retried=sub.dropped)
        assert received + sub.dropped == 2 * n
        assert len(errs.slow) == 2 and errs.other == []
        assert errs.slow[0].subject == subj
    finally:
        await pub.close()
        await nc.close()


async def test_bytes_limit_episode_lasts_until_the_backlog_is_worked_off(nats_url):
    """Taking one message from a subscription still over half its byte limit does not end
    the episode: the next drop is not reported again."""
    errs = SlowErrors()
    nc = await jetwire.connect(nats_url, error_cb=errs)
    pub = await jetwire.connect(nats_url)
    n, size, limit = 500, 1024, 64 * 1024
    try:
        subj = uniq("slowb")
        sub = await nc.subscribe(subj, pending_bytes_limit=limit)
        await _burst(pub, nc, subj, n, b"b" * size)
        assert await wait_until(lambda: len(errs.slow) >= 1, 5)
        received = 1
        await sub.next_msg(1)
        await _burst(pub, nc, subj, n, b"b" * size)
        await nc.flush(5)
        received += await _take_all(sub)
        assert len(errs.slow) == 1, f"{len(errs.slow)} reports for one episode"
        await _burst(pub, nc, subj, n, b"c" * size)  # the backlog was worked off: a new episode
        received += await _take_all(sub)
        assert await wait_until(lambda: len(errs.slow) >= 2, 5)
        record("slow consumer: bytes limit, 3 bursts", FLAVOUR, published=3 * n, acked=received,
               stored=received, lost=0, duplicated=0, retried=sub.dropped)
        assert received + sub.dropped == 3 * n
        assert len(errs.slow) == 2 and errs.other == []
    finally:
        await pub.close()
        await nc.close()


async def test_callback_blocked_then_released_accounts_for_everything(nats_url):
    errs = SlowErrors()
    nc = await jetwire.connect(nats_url, error_cb=errs)
    pub = await jetwire.connect(nats_url)
    n, limit = 2000, 50
    release = prims.Signal()
    got: list = []

    async def handle(msg: Any) -> None:
        if not got:
            assert await release.wait(30)
        got.append(msg.data)

    try:
        subj = uniq("slowcb")
        sub = await nc.subscribe(subj, cb=handle, pending_msgs_limit=limit)
        await _burst(pub, nc, subj, n, b"z")
        release.set()
        assert await wait_until(lambda: len(got) + sub.dropped == n, 10), (len(got), sub.dropped)
        record("slow consumer: blocked callback", FLAVOUR, published=n, acked=len(got), stored=len(got),
               lost=0, duplicated=0, retried=sub.dropped)
        assert 0 < sub.dropped < n and len(got) <= limit + 1
        assert len(errs.slow) == 1
    finally:
        await pub.close()
        await nc.close()


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


async def test_one_gib_burst_keeps_memory_bounded(nats_url):
    """1 GiB (1024 messages of 1 MiB) into a subscription nobody reads, limited to 16 MiB
    pending: what is kept is what fits, the rest is counted as dropped, and the
    process grows by far less than the burst."""
    errs = SlowErrors()
    nc = await jetwire.connect(nats_url, error_cb=errs)
    pub = await jetwire.connect(nats_url, flush_timeout=30)
    n, size, limit = 1024, 1024 * 1024, 16 * 1024 * 1024
    peak = [0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], _rss())
            time.sleep(0.005)

    try:
        subj = uniq("big")
        sub = await nc.subscribe(subj, pending_bytes_limit=limit)
        await nc.flush(5)
        base = _rss()
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        data = b"m" * size
        await _burst(pub, nc, subj, n, data)
        stop.set()
        sampler.join(5)
        growth = peak[0] - base
        kept = sub.pending_msgs
        received = await _take_all(sub)
        record(f"slow consumer: 1 GiB burst (peak +{growth // 2**20} MiB)", FLAVOUR, published=n,
               acked=received, stored=kept, lost=0, duplicated=0, retried=sub.dropped)
        assert received == kept and received + sub.dropped == n
        assert 0 < kept <= limit // size
        assert growth < 256 * 1024 * 1024, f"grew by {growth // 2**20} MiB"
        assert len(errs.slow) == 1
    finally:
        stop.set()
        await pub.close()
        await nc.close()
