"""One object, many users (threads in ``jetwire``, tasks in ``jetwire.aio``), against a
real server: readers sharing a subscription all get their messages and all hear its end,
and ``close()`` stops a callback's delivery. (asyncio source; the blocking twin is
generated.)"""
from __future__ import annotations

import pytest

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims
from tests.aio._helpers import uniq, wait_until

READERS = 4


async def _readers(sub, timeout):
    """READERS concurrent ``next_msg(timeout)`` calls: (their workers, what each got)."""
    got: list[object] = []
    started = prims.Signal()

    async def read() -> None:
        started.set()
        try:
            got.append((await sub.next_msg(timeout=timeout)).data)
        except Exception as exc:
            got.append(exc)

    workers = [prims.spawn(read) for _ in range(READERS)]
    await started.wait(5)
    return workers, got


async def _joined(workers, timeout: float) -> bool:
    for w in workers:
        if not await prims.join(w, timeout):
            return False
    return True


@pytest.mark.parametrize("timeout", [30.0, None])
async def test_readers_sharing_a_subscription_all_get_a_message(nats_url, timeout):
    nc = await jetwire.connect(nats_url)
    try:
        subject = uniq("shared")
        sub = await nc.subscribe(subject)
        await nc.flush()
        workers, got = await _readers(sub, timeout)
        # every reader waits (a message arriving earlier is taken at once, also fine)
        for i in range(READERS):
            await nc.publish(subject, b"%d" % i)  # one flush: one read delivers them all
        await nc.flush()
        # each woken reader wakes the next: none waits for its own timeout (or forever)
        assert await _joined(workers, 10), got
        assert sorted(got) == [b"%d" % i for i in range(READERS)], got
    finally:
        await nc.close()


async def test_readers_sharing_a_subscription_all_hear_the_close(nats_url):
    nc = await jetwire.connect(nats_url)
    sub = await nc.subscribe(uniq("shared"))
    await nc.flush()
    workers, got = await _readers(sub, 30.0)
    await nc.close()
    assert await _joined(workers, 10), got
    assert len(got) == READERS and all(isinstance(e, jetwire.ConnectionClosedError) for e in got), got


async def test_close_stops_a_callbacks_delivery(nats_url):
    nc = await jetwire.connect(nats_url)
    subject = uniq("closecb")
    gate, entered = prims.Signal(), prims.Signal()
    calls: list[bytes] = []

    async def slow(msg) -> None:
        calls.append(msg.data)
        entered.set()
        await gate.wait(10)

    sub = await nc.subscribe(subject, cb=slow)
    await nc.flush()
    for i in range(50):
        await nc.publish(subject, b"%d" % i)
    await nc.flush()
    assert await entered.wait(10)
    assert await wait_until(lambda: sub.pending_msgs > 0)  # the rest wait behind the first
    await nc.close()
    gate.set()  # the callback running finishes ...
    assert await wait_until(lambda: sub.pending_msgs == 0)
    # ... and is the last: what was queued behind it was dropped with the connection
    assert calls == [b"0"]
