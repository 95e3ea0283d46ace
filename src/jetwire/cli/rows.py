"""The benchmark rows of BENCHMARKS.md, for each client. One row runs in a fresh process:

    python -m jetwire.cli.rows <row> <jetwire|jetwire.aio|nats-py> <url> <monitor-url> [scale]

and prints one JSON line with the measurement (or exits non-zero with a one-line
reason). :mod:`jetwire.cli.compare` runs these processes in turns and prints medians.

Every row accounts for its messages or fails: row a checks the server's ``in_msgs``
counter, row b counts deliveries, JetStream rows check stream state (d, e) and the
consumer's pending / ack-pending counts (f, f2, g) after the timed part.

The JetStream set-up around the timed part (stream, stored messages, accounting) uses
the blocking jetwire API in the same process, before and after the client under test
runs, so every client is timed on exactly the same work. nats-py code paths live only
here and import ``nats`` lazily: nothing imports it unless nats-py rows are asked for.
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional

now = time.perf_counter


def varz(monitor: str) -> Dict[str, Any]:
    with urllib.request.urlopen(monitor.rstrip("/") + "/varz", timeout=5) as r:
        return json.loads(r.read())


class RowFailed(Exception):
    """A row whose messages were not all accounted for (or that could not run)."""


IDLE = 5.0  # seconds without a new delivery after which missing messages count as lost


def wait_count(done: threading.Event, count: list) -> bool:
    """Wait for ``done`` while deliveries keep coming; False once they stall for IDLE s."""
    last, since = count[0], time.monotonic()
    while not done.wait(0.05):
        if count[0] != last:
            last, since = count[0], time.monotonic()
        elif time.monotonic() - since > IDLE:
            return False
    return True


async def await_count(done: Any, count: list) -> bool:
    """asyncio twin of :func:`wait_count`."""
    import asyncio

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


@dataclass
class Row:
    title: str
    kind: str  # "rate" (msgs/s, higher is better) or "latency" (p50/p99 us, lower is better)
    count: int
    target: str = ""
    js: bool = False  # needs a JetStream stream set up around it
    short: str = ""  # for narrow tables

    def show(self, res: Dict[str, Any]) -> str:
        if self.kind == "rate":
            return f"{res['rate']:>12,.0f} msg/s"
        return f"p50 {res['p50_us']:8.1f} us   p99 {res['p99_us']:8.1f} us"

    def value(self, res: Dict[str, Any]) -> float:
        return res["rate"] if self.kind == "rate" else res["p50_us"]

    def ratio(self, res: Dict[str, Any], base: Dict[str, Any]) -> float:
        """How many times better ``res`` is than ``base`` (>1 is better)."""
        if self.kind == "rate":
            return res["rate"] / base["rate"]
        return base["p50_us"] / res["p50_us"]


ROWS: Dict[str, Row] = {
    "a": Row("500k publish of 16 B, then a round trip (server counts them)", "rate", 500_000,
             ">= 5x nats-py", short="publish 16 B + round trip"),
    "b": Row("200k 16 B messages, publisher -> subscriber callback on two connections", "rate", 200_000,
             ">= 4x nats-py", short="pub -> sub callback"),
    "c": Row("5k sequential requests to a responder on another connection", "latency", 5_000,
             "p50 <= 0.7x nats-py", short="sequential requests"),
    "d": Row("5k JetStream publishes, each waiting for its ack", "rate", 5_000,
             ">= 1.3x nats-py", js=True, short="JS publish, await each ack"),
    "e": Row("50k JetStream async publishes, <= 1000 acks in flight, until all acked", "rate", 50_000,
             ">= 3.5x nats-py", js=True, short="JS publish_async, 1000 in flight"),
    "f": Row("100k stored messages pulled with fetch(1000), AckNone", "rate", 100_000,
             ">= 7x nats-py", js=True, short="fetch(1000), AckNone"),
    "f2": Row("100k stored messages, fetch(1000), AckExplicit, one ack per message", "rate", 100_000,
              ">= 5x nats-py", js=True, short="fetch(1000), ack each"),
    "g": Row("consume()/messages() continuous pull of 100k stored messages", "rate", 100_000,
             ">= f", js=True, short="consume(), continuous pull"),
}
ROW_ORDER = ["a", "b", "c", "d", "e", "f", "f2", "g"]
COUNTS = {k: r.count for k, r in ROWS.items()}

PAYLOAD = b"x" * 16
WINDOW = 1000  # row e: acks in flight
FETCH = 1000  # rows f, f2: fetch batch
WAIT = 10.0  # seconds a pull may come back empty before the row fails


# ================================================================== jetwire (blocking)
def a_sync(url: str, n: int, ctx: Dict[str, Any]) -> float:
    import jetwire

    nc = jetwire.connect(url)
    pub = nc.publish
    t0 = now()
    for _ in range(n):
        pub("bench.a", PAYLOAD)
    nc.flush(timeout=60)
    dt = now() - t0
    nc.close()
    return dt


def b_sync(url: str, n: int, ctx: Dict[str, Any]) -> float:
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
    t0 = now()
    for _ in range(n):
        pub("bench.b", PAYLOAD)
    pub_nc.flush(timeout=60)
    if not wait_count(done, count):
        raise RowFailed(f"lost messages: {count[0]} of {n}")
    dt = now() - t0
    pub_nc.close()
    sub_nc.close()
    return dt


def c_sync(url: str, n: int, ctx: Dict[str, Any]) -> list:
    import jetwire

    srv = jetwire.connect(url)
    srv.subscribe("bench.c", cb=lambda m: m.respond(m.data))
    srv.flush()
    nc = jetwire.connect(url)
    lat = []
    for _ in range(n):
        t0 = now()
        nc.request("bench.c", PAYLOAD, timeout=5)
        lat.append(now() - t0)
    nc.close()
    srv.close()
    return lat


def d_sync(url: str, n: int, ctx: Dict[str, Any]) -> float:
    import jetwire

    nc = jetwire.connect(url)
    js = nc.jetstream()
    pub, subj = js.publish, ctx["subject"]
    t0 = now()
    for _ in range(n):
        pub(subj, PAYLOAD)
    dt = now() - t0
    nc.close()
    return dt


def e_sync(url: str, n: int, ctx: Dict[str, Any]) -> float:
    import jetwire

    nc = jetwire.connect(url)
    js = nc.jetstream(publish_async_max_pending=WINDOW)
    pub, subj = js.publish_async, ctx["subject"]
    t0 = now()
    for _ in range(n):
        pub(subj, PAYLOAD)
    js.publish_async_complete(timeout=60)
    dt = now() - t0
    nc.close()
    return dt


def _fetch_sync(url: str, n: int, ctx: Dict[str, Any], ack: bool) -> float:
    import jetwire

    nc = jetwire.connect(url)
    js = nc.jetstream()
    c = js.consumer(ctx["stream"], ctx["consumer"])
    got = 0
    t0 = now()
    while got < n:
        k = 0
        for m in c.fetch(FETCH, max_wait=WAIT):
            k += 1
            if ack:
                m.ack()
        if not k:
            raise RowFailed(f"lost messages: fetched {got} of {n}")
        got += k
    if ack:
        nc.flush(timeout=60)
    dt = now() - t0
    ctx["received"] = got
    nc.close()
    return dt


def f_sync(url: str, n: int, ctx: Dict[str, Any]) -> float:
    return _fetch_sync(url, n, ctx, ack=False)


def f2_sync(url: str, n: int, ctx: Dict[str, Any]) -> float:
    return _fetch_sync(url, n, ctx, ack=True)


def g_sync(url: str, n: int, ctx: Dict[str, Any]) -> float:
    import jetwire

    nc = jetwire.connect(url)
    js = nc.jetstream()
    c = js.consumer(ctx["stream"], ctx["consumer"])
    done = threading.Event()
    count = [0]

    def cb(msg: Any) -> None:
        count[0] += 1
        if count[0] == n:
            done.set()

    t0 = now()
    cc = c.consume(cb)
    ok = wait_count(done, count)
    dt = now() - t0
    cc.stop()
    ctx["received"] = count[0]
    nc.close()
    if not ok:
        raise RowFailed(f"lost messages: consumed {count[0]} of {n}")
    return dt


# ================================================================== jetwire.aio
async def a_aio(url: str, n: int, ctx: Dict[str, Any]) -> float:
    import jetwire.aio

    nc = await jetwire.aio.connect(url)
    pub = nc.publish
    t0 = now()
    for _ in range(n):
        await pub("bench.a", PAYLOAD)
    await nc.flush(timeout=60)
    dt = now() - t0
    await nc.close()
    return dt


async def b_aio(url: str, n: int, ctx: Dict[str, Any]) -> float:
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
    t0 = now()
    for i in range(n):
        await pub("bench.b", PAYLOAD)
        if i & 1023 == 0:
            await asyncio.sleep(0)
    await pub_nc.flush(timeout=60)
    if not await await_count(done, count):
        raise RowFailed(f"lost messages: {count[0]} of {n}")
    dt = now() - t0
    await pub_nc.close()
    await sub_nc.close()
    return dt


async def c_aio(url: str, n: int, ctx: Dict[str, Any]) -> list:
    import jetwire.aio

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


async def d_aio(url: str, n: int, ctx: Dict[str, Any]) -> float:
    import jetwire.aio

    nc = await jetwire.aio.connect(url)
    js = nc.jetstream()
    pub, subj = js.publish, ctx["subject"]
    t0 = now()
    for _ in range(n):
        await pub(subj, PAYLOAD)
    dt = now() - t0
    await nc.close()
    return dt


async def e_aio(url: str, n: int, ctx: Dict[str, Any]) -> float:
    import jetwire.aio

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


async def _fetch_aio(url: str, n: int, ctx: Dict[str, Any], ack: bool) -> float:
    import jetwire.aio

    nc = await jetwire.aio.connect(url)
    js = nc.jetstream()
    c = await js.consumer(ctx["stream"], ctx["consumer"])
    got = 0
    t0 = now()
    while got < n:
        k = 0
        async for m in await c.fetch(FETCH, max_wait=WAIT):
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


async def f_aio(url: str, n: int, ctx: Dict[str, Any]) -> float:
    return await _fetch_aio(url, n, ctx, ack=False)


async def f2_aio(url: str, n: int, ctx: Dict[str, Any]) -> float:
    return await _fetch_aio(url, n, ctx, ack=True)


async def g_aio(url: str, n: int, ctx: Dict[str, Any]) -> float:
    import asyncio

    import jetwire.aio

    nc = await jetwire.aio.connect(url)
    js = nc.jetstream()
    c = await js.consumer(ctx["stream"], ctx["consumer"])
    done = asyncio.Event()
    count = [0]

    def cb(msg: Any) -> None:
        count[0] += 1
        if count[0] == n:
            done.set()

    t0 = now()
    cc = await c.consume(cb)
    await await_count(done, count)
    dt = now() - t0
    cc.stop()
    ctx["received"] = count[0]
    await nc.close()
    if count[0] < n:
        raise RowFailed(f"lost messages: consumed {count[0]} of {n}")
    return dt


# ================================================================== nats-py (peer)
async def a_natspy(url: str, n: int, ctx: Dict[str, Any]) -> float:
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


async def b_natspy(url: str, n: int, ctx: Dict[str, Any]) -> float:
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


async def c_natspy(url: str, n: int, ctx: Dict[str, Any]) -> list:
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


async def d_natspy(url: str, n: int, ctx: Dict[str, Any]) -> float:
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


async def e_natspy(url: str, n: int, ctx: Dict[str, Any]) -> float:
    import asyncio

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


async def _fetch_natspy(url: str, n: int, ctx: Dict[str, Any], ack: bool) -> float:
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


async def f_natspy(url: str, n: int, ctx: Dict[str, Any]) -> float:
    return await _fetch_natspy(url, n, ctx, ack=False)


async def f2_natspy(url: str, n: int, ctx: Dict[str, Any]) -> float:
    return await _fetch_natspy(url, n, ctx, ack=True)


IMPLS: Dict[str, Dict[str, Callable[..., Any]]] = {
    "jetwire": {"a": a_sync, "b": b_sync, "c": c_sync, "d": d_sync, "e": e_sync,
                "f": f_sync, "f2": f2_sync, "g": g_sync},
    "jetwire.aio": {"a": a_aio, "b": b_aio, "c": c_aio, "d": d_aio, "e": e_aio,
                    "f": f_aio, "f2": f2_aio, "g": g_aio},
    # nats-py has no continuous-pull API: no row g
    "nats-py": {"a": a_natspy, "b": b_natspy, "c": c_natspy, "d": d_natspy, "e": e_natspy,
                "f": f_natspy, "f2": f2_natspy},
}


def supported(row: str, client: str) -> bool:
    return row in IMPLS.get(client, {})


# ================================================================== JetStream set-up and accounting
# (blocking jetwire API, outside the timed part)


def _js_setup(url: str, row: str, n: int) -> Dict[str, Any]:
    import jetwire

    tag = f"{row.upper()}_{os.getpid()}"
    ctx: Dict[str, Any] = {"stream": f"BENCH_{tag}", "subject": f"bench.{row}.{os.getpid()}", "n": n}
    nc = jetwire.connect(url)
    try:
        js = nc.jetstream(timeout=10)
        try:
            js.delete_stream(ctx["stream"])
        except jetwire.StreamNotFoundError:
            pass
        js.create_stream(name=ctx["stream"], subjects=[ctx["subject"]], storage="file")
        if row in ("f", "f2", "g"):
            _fill(nc, js, ctx, n)
            ctx["consumer"] = f"C{row.upper()}"
            js.create_consumer(ctx["stream"], durable_name=ctx["consumer"],
                               ack_policy="explicit" if row == "f2" else "none",
                               max_ack_pending=-1 if row == "f2" else None)
    finally:
        nc.close()
    return ctx


def _fill(nc: Any, js: Any, ctx: Dict[str, Any], n: int) -> None:
    """Store ``n`` messages: acknowledged async publishes (nothing is silently dropped)."""
    js2 = nc.jetstream(timeout=30, publish_async_max_pending=4000)
    subj = ctx["subject"]
    for _ in range(n):
        js2.publish_async(subj, PAYLOAD, stall_wait=30)
    js2.publish_async_complete(timeout=120)
    st = js.stream(ctx["stream"]).info().state
    if st.messages != n:
        raise RowFailed(f"could not store the row's messages: {st.messages} of {n}")


def _js_check(url: str, row: str, ctx: Dict[str, Any]) -> None:
    """Every message accounted for, or :class:`RowFailed`; then remove the stream."""
    import jetwire

    n = ctx["n"]
    nc = jetwire.connect(url)
    try:
        js = nc.jetstream(timeout=10)
        if row in ("d", "e"):
            st = js.stream(ctx["stream"]).info().state
            if st.messages != n or st.last_seq != n:
                raise RowFailed(f"stream holds {st.messages} messages (last seq {st.last_seq}), expected {n}")
        else:
            if ctx.get("received") != n:
                raise RowFailed(f"received {ctx.get('received')} of {n} messages")
            deadline = time.monotonic() + 10
            while True:
                ci = js.consumer(ctx["stream"], ctx["consumer"]).info()
                ok = ci.num_pending == 0 and ci.delivered.stream_seq == n
                if row == "f2":
                    ok = ok and ci.num_ack_pending == 0 and ci.ack_floor.stream_seq == n
                if ok:
                    break
                if time.monotonic() > deadline:
                    raise RowFailed(f"consumer not done: pending {ci.num_pending}, ack pending "
                                    f"{ci.num_ack_pending}, delivered {ci.delivered.stream_seq}, "
                                    f"ack floor {ci.ack_floor.stream_seq} of {n}")
                time.sleep(0.05)
        js.delete_stream(ctx["stream"])
    finally:
        nc.close()


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


def run_row(row: str, client: str, url: str, monitor: str = "", scale: float = 1.0) -> Dict[str, Any]:
    """Run one row for one client in this process; the measurement as a dict."""
    spec = ROWS[row]
    n = max(1, int(spec.count * scale))
    fn = IMPLS[client][row]
    ctx: Dict[str, Any] = {}
    if spec.js:
        ctx = _js_setup(url, row, n)
    if row == "a":
        before = varz(monitor)["in_msgs"] if monitor else None
        dt = _run(fn, url, n, ctx)
        if before is not None:
            # the server folds its per-connection counters into /varz lazily: poll a little
            deadline = time.monotonic() + 10
            while True:
                got = varz(monitor)["in_msgs"] - before
                if got >= n:
                    break
                if time.monotonic() > deadline:
                    raise RowFailed(f"server counted {got} of {n} messages")
                time.sleep(0.05)
        return {"rate": n / dt, "n": n, "seconds": dt}
    if row == "c":
        lat = sorted(_run(fn, url, n, ctx))
        if len(lat) != n:
            raise RowFailed(f"{len(lat)} of {n} requests answered")
        return {"p50_us": lat[len(lat) // 2] * 1e6, "p99_us": lat[int(len(lat) * 0.99)] * 1e6, "n": n}
    dt = _run(fn, url, n, ctx)
    if spec.js:
        _js_check(url, row, ctx)
    return {"rate": n / dt, "n": n, "seconds": dt}


def main(argv: Optional[list] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    row, client, url = args[:3]
    monitor = args[3] if len(args) > 3 else ""
    scale = float(args[4]) if len(args) > 4 else 1.0
    if row not in ROWS:
        print(f"unknown row {row!r}; known: {', '.join(ROW_ORDER)}", file=sys.stderr)
        return 2
    if not supported(row, client):
        print(f"row {row} has no {client} implementation", file=sys.stderr)
        return 2
    try:
        res = run_row(row, client, url, monitor, scale)
    except RowFailed as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        print(f"FAILED: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
