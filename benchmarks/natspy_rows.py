"""The nats-py rows of BENCHMARKS.md: the peer jetwire is compared with (not part of the
jetwire package, which never imports nats-py).

    python benchmarks/natspy_rows.py <row> nats-py <url> <monitor-url> [scale]

runs one row in this process through jetwire's row harness (``jetwire.cli.rows``: the
same set-up and accounting as jetwire's rows) and prints one JSON line.
``jetwire bench compare`` and ``benchmarks/compare.py`` run it for the nats-py column.
"""
from __future__ import annotations

import asyncio
import sys
import time
from typing import Any, Dict

from jetwire.cli.rows import FETCH, IDLE, PAYLOAD, WAIT, WINDOW, RowFailed, main, now


async def await_count(done: asyncio.Event, count: list) -> bool:
    """Wait for ``done`` while deliveries keep coming; False once they stall for IDLE s."""
    last, since = count[0], time.monotonic()
    while not done.is_set():
        try:
            await asyncio.wait_for(done.wait(), 0.05)
        except asyncio.TimeoutError:
            pass
        if count[0] != last:
            last, since = count[0], time.monotonic()
        elif not done.is_set() and time.monotonic() - since > IDLE:
            return False
    return True


async def a(url: str, n: int, ctx: Dict[str, Any]) -> float:
    import nats

    nc = await nats.connect(url, pending_size=64 * 1024 * 1024)
    pub = nc.publish
    t0 = now()
    for _ in range(n):
        await pub("bench.a", PAYLOAD)
    await nc.flush(timeout=60)
    dt = now() - t0
    await nc.close()
    return dt


async def b(url: str, n: int, ctx: Dict[str, Any]) -> float:
    import nats

    sub_nc = await nats.connect(url)
    pub_nc = await nats.connect(url, pending_size=64 * 1024 * 1024)
    done = asyncio.Event()
    count = [0]

    async def cb(msg: Any) -> None:
        count[0] += 1
        if count[0] == n:
            done.set()

    await sub_nc.subscribe("bench.b", cb=cb, pending_msgs_limit=n + 1, pending_bytes_limit=-1)
    await sub_nc.flush()
    t0 = now()
    for i in range(n):
        await pub_nc.publish("bench.b", PAYLOAD)
        if i & 1023 == 0:
            await asyncio.sleep(0)
    await pub_nc.flush(timeout=60)
    if not await await_count(done, count):
        raise RowFailed(f"lost messages: {count[0]} of {n}")
    dt = now() - t0
    await pub_nc.close()
    await sub_nc.close()
    return dt


async def c(url: str, n: int, ctx: Dict[str, Any]) -> list:
    import nats

    srv = await nats.connect(url)

    async def handler(m: Any) -> None:
        await m.respond(m.data)

    await srv.subscribe("bench.c", cb=handler)
    await srv.flush()
    nc = await nats.connect(url)
    lat = []
    for _ in range(n):
        t0 = now()
        await nc.request("bench.c", PAYLOAD, timeout=5)
        lat.append(now() - t0)
    await nc.close()
    await srv.close()
    return lat


async def d(url: str, n: int, ctx: Dict[str, Any]) -> float:
    import nats

    nc = await nats.connect(url)
    js = nc.jetstream()
    pub, subj = js.publish, ctx["subject"]
    t0 = now()
    for _ in range(n):
        await pub(subj, PAYLOAD)
    dt = now() - t0
    await nc.close()
    return dt


async def e(url: str, n: int, ctx: Dict[str, Any]) -> float:
    import nats

    nc = await nats.connect(url, pending_size=64 * 1024 * 1024)
    js = nc.jetstream(publish_async_max_pending=WINDOW)
    pub, subj = js.publish_async, ctx["subject"]
    t0 = now()
    for _ in range(n):
        await pub(subj, PAYLOAD)
    await asyncio.wait_for(js.publish_async_completed(), 60)
    dt = now() - t0
    await nc.close()
    return dt


async def _fetch(url: str, n: int, ctx: Dict[str, Any], ack: bool) -> float:
    import nats
    from nats.errors import TimeoutError as NatsTimeout

    nc = await nats.connect(url)
    js = nc.jetstream()
    psub = await js.pull_subscribe_bind(ctx["consumer"], stream=ctx["stream"])
    got = 0
    t0 = now()
    while got < n:
        try:
            msgs = await psub.fetch(FETCH, timeout=WAIT)
        except NatsTimeout:
            raise RowFailed(f"lost messages: fetched {got} of {n}") from None
        if ack:
            for m in msgs:
                await m.ack()
        got += len(msgs)
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



ROWS: Dict[str, Any] = {"a": a, "b": b, "c": c, "d": d, "e": e, "f": f, "f2": f2}

if __name__ == "__main__":
    sys.exit(main(impls=ROWS))
