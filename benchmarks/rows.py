"""Benchmark rows (shared BENCHMARKS.md) for each client; run one in a fresh process:

    python benchmarks/rows.py <row> <jetwire|jetwire.aio|nats-py> <url> <monitor-url> [scale]

prints one JSON line with the measurement.
"""
from __future__ import annotations

import json
import os
import sys
import time
import urllib.request
from dataclasses import dataclass
from typing import Any, Callable, Dict


def varz(monitor: str) -> Dict[str, Any]:
    with urllib.request.urlopen(monitor.rstrip("/") + "/varz", timeout=5) as r:
        return json.loads(r.read())


@dataclass
class Row:
    title: str
    kind: str  # "rate" (msgs/s, higher is better) or "latency" (p50/p99 us, lower is better)

    def show(self, res: Dict[str, Any]) -> str:
        if self.kind == "rate":
            return f"{res['rate']:>12,.0f} msg/s"
        return f"p50 {res['p50_us']:8.1f} us   p99 {res['p99_us']:8.1f} us"

    def ratio(self, res: Dict[str, Any], base: Dict[str, Any]) -> float:
        if self.kind == "rate":
            return res["rate"] / base["rate"]
        return base["p50_us"] / res["p50_us"]


ROWS: Dict[str, Row] = {
    "a": Row("500k publish of 16 B, then a round trip (server counts them)", "rate"),
    "b": Row("200k 16 B messages, publisher -> subscriber callback on two connections", "rate"),
    "c": Row("5k sequential requests to a responder on another connection", "latency"),
}

PAYLOAD = b"x" * 16


# ---------------------------------------------------------------- jetwire (blocking)
def a_sync(url: str, n: int) -> float:
    import jetwire

    nc = jetwire.connect(url)
    pub = nc.publish
    t0 = time.perf_counter()
    for _ in range(n):
        pub("bench.a", PAYLOAD)
    nc.flush(timeout=60)
    dt = time.perf_counter() - t0
    nc.close()
    return dt


def b_sync(url: str, n: int) -> float:
    import threading

    import jetwire

    sub_nc = jetwire.connect(url, pending_msgs_limit=n + 1, pending_bytes_limit=-1)
    pub_nc = jetwire.connect(url)
    done = threading.Event()
    count = [0]

    def cb(msg: Any) -> None:
        count[0] += 1
        if count[0] == n:
            done.set()

    sub_nc.subscribe("bench.b", cb=cb)
    sub_nc.flush()
    pub = pub_nc.publish
    t0 = time.perf_counter()
    for _ in range(n):
        pub("bench.b", PAYLOAD)
    pub_nc.flush(timeout=60)
    if not done.wait(60):
        raise SystemExit(f"lost messages: {count[0]} of {n}")
    dt = time.perf_counter() - t0
    pub_nc.close()
    sub_nc.close()
    return dt


def c_sync(url: str, n: int) -> list:
    import jetwire

    srv = jetwire.connect(url)
    srv.subscribe("bench.c", cb=lambda m: m.respond(m.data))
    srv.flush()
    nc = jetwire.connect(url)
    lat = []
    for _ in range(n):
        t0 = time.perf_counter()
        nc.request("bench.c", PAYLOAD, timeout=5)
        lat.append(time.perf_counter() - t0)
    nc.close()
    srv.close()
    return lat


# ---------------------------------------------------------------- jetwire.aio
async def a_aio(url: str, n: int) -> float:
    import jetwire.aio

    nc = await jetwire.aio.connect(url)
    pub = nc.publish
    t0 = time.perf_counter()
    for _ in range(n):
        await pub("bench.a", PAYLOAD)
    await nc.flush(timeout=60)
    dt = time.perf_counter() - t0
    await nc.close()
    return dt


async def b_aio(url: str, n: int) -> float:
    import asyncio

    import jetwire.aio

    sub_nc = await jetwire.aio.connect(url, pending_msgs_limit=n + 1, pending_bytes_limit=-1)
    pub_nc = await jetwire.aio.connect(url)
    done = asyncio.Event()
    count = [0]

    def cb(msg: Any) -> None:
        count[0] += 1
        if count[0] == n:
            done.set()

    await sub_nc.subscribe("bench.b", cb=cb)
    await sub_nc.flush()
    pub = pub_nc.publish
    t0 = time.perf_counter()
    for i in range(n):
        await pub("bench.b", PAYLOAD)
        if i & 1023 == 0:
            await asyncio.sleep(0)
    await pub_nc.flush(timeout=60)
    try:
        await asyncio.wait_for(done.wait(), 60)
    except asyncio.TimeoutError:
        raise SystemExit(f"lost messages: {count[0]} of {n}")
    dt = time.perf_counter() - t0
    await pub_nc.close()
    await sub_nc.close()
    return dt


async def c_aio(url: str, n: int) -> list:
    import jetwire.aio

    srv = await jetwire.aio.connect(url)

    async def handler(m: Any) -> None:
        await m.respond(m.data)

    await srv.subscribe("bench.c", cb=handler)
    await srv.flush()
    nc = await jetwire.aio.connect(url)
    lat = []
    for _ in range(n):
        t0 = time.perf_counter()
        await nc.request("bench.c", PAYLOAD, timeout=5)
        lat.append(time.perf_counter() - t0)
    await nc.close()
    await srv.close()
    return lat


# ---------------------------------------------------------------- nats-py (peer)
async def a_natspy(url: str, n: int) -> float:
    import nats

    nc = await nats.connect(url, pending_size=64 * 1024 * 1024)
    pub = nc.publish
    t0 = time.perf_counter()
    for _ in range(n):
        await pub("bench.a", PAYLOAD)
    await nc.flush(timeout=60)
    dt = time.perf_counter() - t0
    await nc.close()
    return dt


async def b_natspy(url: str, n: int) -> float:
    import asyncio

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
    t0 = time.perf_counter()
    for i in range(n):
        await pub_nc.publish("bench.b", PAYLOAD)
        if i & 1023 == 0:
            await asyncio.sleep(0)
    await pub_nc.flush(timeout=60)
    try:
        await asyncio.wait_for(done.wait(), 60)
    except asyncio.TimeoutError:
        raise SystemExit(f"lost messages: {count[0]} of {n}")
    dt = time.perf_counter() - t0
    await pub_nc.close()
    await sub_nc.close()
    return dt


async def c_natspy(url: str, n: int) -> list:
    import nats

    srv = await nats.connect(url)

    async def handler(m: Any) -> None:
        await m.respond(m.data)

    await srv.subscribe("bench.c", cb=handler)
    await srv.flush()
    nc = await nats.connect(url)
    lat = []
    for _ in range(n):
        t0 = time.perf_counter()
        await nc.request("bench.c", PAYLOAD, timeout=5)
        lat.append(time.perf_counter() - t0)
    await nc.close()
    await srv.close()
    return lat


IMPLS: Dict[str, Dict[str, Callable[..., Any]]] = {
    "jetwire": {"a": a_sync, "b": b_sync, "c": c_sync},
    "jetwire.aio": {"a": a_aio, "b": b_aio, "c": c_aio},
    "nats-py": {"a": a_natspy, "b": b_natspy, "c": c_natspy},
}
COUNTS = {"a": 500_000, "b": 200_000, "c": 5_000}


def _run(fn: Callable[..., Any], *args: Any) -> Any:
    import inspect

    if inspect.iscoroutinefunction(fn):
        try:
            import uvloop

            return uvloop.run(fn(*args))
        except ImportError:
            import asyncio

            return asyncio.run(fn(*args))
    return fn(*args)


def main() -> int:
    row, client, url, monitor = sys.argv[1:5]
    scale = float(sys.argv[5]) if len(sys.argv) > 5 else 1.0
    n = max(1, int(COUNTS[row] * scale))
    fn = IMPLS[client][row]
    if row == "a":
        before = varz(monitor)["in_msgs"] if monitor else None
        dt = _run(fn, url, n)
        if before is not None:
            after = varz(monitor)["in_msgs"]
            got = after - before
            if got < n:
                raise SystemExit(f"server counted {got} of {n} messages")
        print(json.dumps({"rate": n / dt, "n": n, "seconds": dt}))
    elif row == "b":
        dt = _run(fn, url, n)
        print(json.dumps({"rate": n / dt, "n": n, "seconds": dt}))
    elif row == "c":
        lat = sorted(_run(fn, url, n))
        print(json.dumps({"p50_us": lat[len(lat) // 2] * 1e6, "p99_us": lat[int(len(lat) * 0.99)] * 1e6, "n": n}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
