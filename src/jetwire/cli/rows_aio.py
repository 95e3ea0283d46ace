"""The jetwire side of the BENCHMARKS.md rows: the asyncio source of both flavours.

``rows_sync.py`` (``jetwire``, blocking) is generated from this file by
``tools/gen_sync.py``; never edit it. :mod:`jetwire.cli.rows` holds the row table, the
set-up around the timed part and the accounting, and picks the flavour's functions.
"""
from __future__ import annotations

import time
from typing import Any, Dict

import jetwire.aio
from jetwire.aio import _prims as prims

from .rows import FETCH, IDLE, PAYLOAD, WAIT, WINDOW, RowFailed, now


async def wait_count(done: Any, count: list) -> bool:
    """Wait for ``done`` while deliveries keep coming; False once they stall for IDLE s."""
    last, since = count[0], time.monotonic()
    while not await done.wait(0.05):
        if count[0] != last:
            last, since = count[0], time.monotonic()
        elif time.monotonic() - since > IDLE:
            return False
    return True


async def a(url: str, n: int, ctx: Dict[str, Any]) -> float:
    nc = await jetwire.aio.connect(url)
    pub = nc.publish
    t0 = now()
    for _ in range(n):
        await pub("bench.a", PAYLOAD)
    await nc.flush(timeout=60)
    dt = now() - t0
    await nc.close()
    return dt


async def b(url: str, n: int, ctx: Dict[str, Any]) -> float:
    sub_nc = await jetwire.aio.connect(url, pending_msgs_limit=n + 1, pending_bytes_limit=-1)
    pub_nc = await jetwire.aio.connect(url)
    done = prims.Signal()
    count = [0]

    def cb(msg: Any) -> None:
        count[0] += 1
        if count[0] == n:
            done.set()

    await sub_nc.subscribe("bench.b", cb=cb)
    await sub_nc.flush()
    pub = pub_nc.publish
    t0 = now()
    for i in range(n):
        await pub("bench.b", PAYLOAD)
        if i & 1023 == 0:  # aio-only
            await prims.sleep(0)  # aio-only
    await pub_nc.flush(timeout=60)
    if not await wait_count(done, count):
        raise RowFailed(f"lost messages: {count[0]} of {n}")
    dt = now() - t0
    await pub_nc.close()
    await sub_nc.close()
    return dt


async def c(url: str, n: int, ctx: Dict[str, Any]) -> list:
    srv = await jetwire.aio.connect(url)

    async def handler(m: Any) -> None:
        await m.respond(m.data)

    await srv.subscribe("bench.c", cb=handler)
    await srv.flush()
    nc = await jetwire.aio.connect(url)
    lat = []
    for _ in range(n):
        t0 = now()
        await nc.request("bench.c", PAYLOAD, timeout=5)
        lat.append(now() - t0)
    await nc.close()
    await srv.close()
    return lat


async def d(url: str, n: int, ctx: Dict[str, Any]) -> float:
    nc = await jetwire.aio.connect(url)
    js = nc.jetstream()
    pub, subj = js.publish, ctx["subject"]
    t0 = now()
    for _ in range(n):
        await pub(subj, PAYLOAD)
    dt = now() - t0
    await nc.close()
    return dt


async def e(url: str, n: int, ctx: Dict[str, Any]) -> float:
    nc = await jetwire.aio.connect(url)
    js = nc.jetstream(publish_async_max_pending=WINDOW)
    pub, subj = js.publish_async, ctx["subject"]
    t0 = now()
    for _ in range(n):
        await pub(subj, PAYLOAD)
    await js.publish_async_complete(timeout=60)
    dt = now() - t0
    await nc.close()
    return dt


async def _fetch(url: str, n: int, ctx: Dict[str, Any], ack: bool) -> float:
    nc = await jetwire.aio.connect(url)
    js = nc.jetstream()
    cons = await js.consumer(ctx["stream"], ctx["consumer"])
    got = 0
    t0 = now()
    while got < n:
        k = 0
        async for m in await cons.fetch(FETCH, max_wait=WAIT):
            k += 1
            if ack:
                await m.ack()
        if not k:
            raise RowFailed(f"lost messages: fetched {got} of {n}")
        got += k
    if ack:
        await nc.flush(timeout=60)
    dt = now() - t0
    ctx["received"] = got
    await nc.close()
    return dt


async def f(url: str, n: int, ctx: Dict[str, Any]) -> float:
    return await _fetch(url, n, ctx, ack=False)


async def f2(url: str, n: int, ctx: Dict[str, Any]) -> float:
    return await _fetch(url, n, ctx, ack=True)


async def g(url: str, n: int, ctx: Dict[str, Any]) -> float:
    nc = await jetwire.aio.connect(url)
    js = nc.jetstream()
    cons = await js.consumer(ctx["stream"], ctx["consumer"])
    done = prims.Signal()
    count = [0]

    def cb(msg: Any) -> None:
        count[0] += 1
        if count[0] == n:
            done.set()

    t0 = now()
    cc = await cons.consume(cb)
    ok = await wait_count(done, count)
    dt = now() - t0
    cc.stop()
    ctx["received"] = count[0]
    await nc.close()
    if not ok:
        raise RowFailed(f"lost messages: consumed {count[0]} of {n}")
    return dt


ROWS = {"a": a, "b": b, "c": c, "d": d, "e": e, "f": f, "f2": f2, "g": g}
