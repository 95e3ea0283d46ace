"""The benchmark rows of BENCHMARKS.md, for each client. One row runs in a fresh process:

    python -m jetwire.cli.rows <row> <jetwire|jetwire.aio> <url> <monitor-url> [scale]
    python benchmarks/natspy_rows.py <row> nats-py <url> <monitor-url> [scale]   (a peer)
    python benchmarks/natsgo_rows.py <row> nats.go <url> <monitor-url> [scale]   (the reference)

and prints one JSON line with the measurement (or exits non-zero with a one-line
reason). :mod:`jetwire.cli.compare` runs these processes in turns and prints medians.

Every row accounts for its messages or fails: row a checks the server's ``in_msgs``
counter, row b counts deliveries, JetStream rows check stream state (d, e) and the
consumer's pending / ack-pending counts (f, f2, g) after the timed part.

The JetStream set-up around the timed part (stream, stored messages, accounting) uses
the blocking jetwire API in the same process, before and after the client under test
runs, so every client is timed on exactly the same work. The library never imports
nats-py: the peers' rows are in the checkout's ``benchmarks/`` (``natspy_rows.py``;
``natsgo_rows.py`` with the Go program ``natsgo/main.go`` for nats.go).
"""
from __future__ import annotations

import functools
import json
import os
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

now = time.perf_counter
cpu_now = time.process_time


def varz(monitor: str) -> dict[str, Any]:
    with urllib.request.urlopen(monitor.rstrip("/") + "/varz", timeout=5) as r:
        return json.loads(r.read())


class RowFailed(Exception):
    """A row whose messages were not all accounted for (or that could not run)."""


IDLE = 5.0  # seconds without a new delivery after which missing messages count as lost


@dataclass
class Row:
    title: str
    kind: str  # "rate" (msgs/s, higher is better) or "latency" (p50/p99 us, lower is better)
    count: int
    target: str = ""
    js: bool = False  # needs a JetStream stream set up around it
    short: str = ""  # for narrow tables
    ratio_key: str = "rate"  # what rate ratios compare (row m: CPU-time rate, steadier on a busy box)
    key: str = ""  # what the ratio compares: "rate", or a latency percentile ("p50_us", "p99_us")

    def __post_init__(self) -> None:
        if not self.key:
            self.key = "rate" if self.kind == "rate" else "p50_us"

    def show(self, res: dict[str, Any]) -> str:
        if self.kind == "rate":
            text = f"{res['rate']:>12,.0f} msg/s"
            if "cpu_rate" in res:
                text += f"  ({res['cpu_rate']:,.0f}/s of CPU time)"
            if "vs_pure" in res:
                text += f"  ({res['vs_pure']:.1f}x the pure twin)"
        elif self.kind == "service":
            text = f"{res['rate']:>10,.0f} req/s   p50 {res['p50_us']:7.1f} us   p99 {res['p99_us']:7.1f} us"
        else:
            text = f"p50 {res['p50_us']:8.1f} us   p99 {res['p99_us']:8.1f} us"
            if "p999_us" in res:
                text += f"   p99.9 {res['p999_us']:8.1f} us"
        if "cpu_us" in res:
            text += f"   cpu {res['cpu_us']:.2f} us/msg"
        return text

    def value(self, res: dict[str, Any]) -> float:
        return res["rate"] if self.kind in ("rate", "service") else res[self.key]

    def ratio(self, res: dict[str, Any], base: dict[str, Any]) -> float:
        """How many times better ``res`` is than ``base`` (>1 is better; a service row by
        its request rate, its p50 reported beside as :meth:`p50_ratio`)."""
        if self.kind == "rate":
            k = self.ratio_key if self.ratio_key in res and self.ratio_key in base else "rate"
            return res[k] / base[k]
        if self.kind == "service":
            return res["rate"] / base["rate"]
        return base[self.key] / res[self.key]

    def p50_ratio(self, res: dict[str, Any], base: dict[str, Any]) -> float | None:
        """A service row's p50 as a fraction of ``base``'s (<1 is better); None otherwise."""
        if self.kind != "service":
            return None
        return res["p50_us"] / base["p50_us"]


ROWS: dict[str, Row] = {
    "a": Row("500k publish of 16 B, then a round trip (server counts them)", "rate", 500_000,
             ">= 1.0x nats.go", short="publish 16 B + round trip"),
    "b": Row("200k 16 B messages, publisher -> subscriber callback on two connections", "rate", 200_000,
             ">= 1.0x nats.go", short="pub -> sub callback"),
    "c": Row("5k sequential requests to a responder on another connection", "latency", 5_000,
             "p50, p99 <= 1.0x nats.go", short="sequential requests"),
    "d": Row("5k JetStream publishes, each waiting for its ack", "rate", 5_000,
             ">= 1.0x nats.go", js=True, short="JS publish, await each ack"),
    "e": Row("50k JetStream async publishes, <= 1000 acks in flight, until all acked", "rate", 50_000,
             ">= 1.2x nats.go, >= 0.7x raw", js=True, short="JS publish_async, 1000 in flight"),
    "f": Row("100k stored messages pulled with fetch(1000), AckNone", "rate", 100_000,
             ">= 1.0x nats.go", js=True, short="fetch(1000), AckNone"),
    "f2": Row("100k stored messages, fetch(1000), AckExplicit, one ack per message", "rate", 100_000,
              ">= 1.0x nats.go", js=True, short="fetch(1000), ack each"),
    "g": Row("consume() continuous pull of 100k stored messages, 1000 at a time (as row f)", "rate", 100_000,
             ">= f", js=True, short="consume(), continuous pull"),
    "h": Row("60k 16 B messages at a steady 20k msg/s, one-way latency publish -> subscriber callback",
             "latency", 60_000, "p50, p99 <= 1.0x nats.go", short="one-way latency at 20k/s", key="p99_us"),
    "m": Row("msg.metadata of 200k fresh JetStream messages in batches of 1000 (no server)", "rate", 200_000,
             ">= 10x nats-py, >= 8x pure twin", short="metadata parses", ratio_key="cpu_rate"),
    "s": Row("20k requests to an echo service (ADR-32 micro), 16 concurrent requesters", "service", 20_000,
             ">= 3x nats-py, p50 <= 0.7x", short="service echo, 16 requesters"),
}
ROW_ORDER = ["a", "b", "c", "d", "e", "f", "f2", "g", "h", "m", "s"]
COUNTS = {k: r.count for k, r in ROWS.items()}

PAYLOAD = b"x" * 16
REQUESTERS = 16  # row s: concurrent requesters (one connection)
WINDOW = 1000  # row e: acks in flight
FETCH = 1000  # rows f, f2: fetch batch; row g: consume's max_messages
WAIT = 10.0  # seconds a pull may come back empty before the row fails
RATE = 20_000  # row h: messages per second


def ack_subjects(n: int) -> list:
    """Row m: ``n`` distinct ack subjects as the server sends them (stream and consumer
    sequences, delivery count, nanosecond time, pending count)."""
    ts = 1_700_000_000_000_000_000
    return [f"$JS.ACK.BENCH_M.worker.1.{i + 1}.{i + 1}.{ts + i * 1000}.{n - i - 1}" for i in range(n)]


def _pure_metadata_rate(n: int) -> tuple[float, float]:
    """Row m through jetwire's pure twin in this process (the compiled one's yardstick):
    ``(rate by wall time, rate by CPU time)``."""
    from .. import _impl

    base: Any = _impl.implementations()["pure"].MsgBase

    class PureMsg(base):
        __slots__ = ()

    subjects = ack_subjects(n)
    dt = cpu = 0.0
    for i in range(0, n, FETCH):
        msgs = [PureMsg("bench.m", b"", reply=s) for s in subjects[i : i + FETCH]]
        c0, t0 = cpu_now(), now()
        for msg in msgs:
            msg.metadata
        dt += now() - t0
        cpu += cpu_now() - c0
    return n / dt, n / cpu


# The rows are written once (rows_aio.py; the blocking rows_sync.py is generated), as
# functions of a client object. jetwire's is rows_aio.Client (rows_sync.Client); the
# peer's (nats-py) lives in the checkout's benchmarks/ folder, not in the package, and
# runs the same functions through this module's harness (benchmarks/natspy_rows.py).
CLIENT_ROWS: dict[str, list] = {
    "jetwire": ROW_ORDER,
    "jetwire.aio": ROW_ORDER,
    "nats-py": [r for r in ROW_ORDER if r != "g"],  # nats-py has no continuous-pull API: no row g
    # nats.go 1.22's legacy JetStream API has no continuous pull either; no metadata row
    "nats.go": [r for r in ROW_ORDER if r not in ("g", "m")],
    "raw": ["a", "c", "d", "e", "f", "f2", "h", "s"],  # the raw-socket limit (benchmarks/raw_rows.py)
}


def implementations(client: str) -> tuple[dict[str, Callable[..., Any]], Any]:
    """The row functions of a jetwire flavour and the client object they run with."""
    if client == "jetwire":
        from . import rows_sync

        return rows_sync.ROWS, rows_sync.CLIENT
    if client == "jetwire.aio":
        from . import rows_aio

        return rows_aio.ROWS, rows_aio.CLIENT
    raise KeyError(f"{client} rows are not part of jetwire (see benchmarks/)")


def peer_implementations(peer: Any) -> tuple[dict[str, Callable[..., Any]], Any]:
    """The row functions for a peer client object: its own ``rows`` (a program in another
    language, run for the timed part) or the same asyncio functions jetwire.aio runs,
    with the rows the peer supports."""
    from . import rows_aio

    own = getattr(peer, "rows", None)
    return {r: (own or rows_aio.ROWS)[r] for r in CLIENT_ROWS[peer.name]}, peer


def supported(row: str, client: str) -> bool:
    return row in CLIENT_ROWS.get(client, ())


# ================================================================== JetStream set-up and accounting
# (blocking jetwire API, outside the timed part)


def _js_setup(url: str, row: str, n: int) -> dict[str, Any]:
    import jetwire

    tag = f"{row.upper()}_{os.getpid()}"
    ctx: dict[str, Any] = {"stream": f"BENCH_{tag}", "subject": f"bench.{row}.{os.getpid()}", "n": n}
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


def _fill(nc: Any, js: Any, ctx: dict[str, Any], n: int) -> None:
    """Store ``n`` messages: acknowledged async publishes (nothing is silently dropped)."""
    js2 = nc.jetstream(timeout=30, publish_async_max_pending=4000)
    subj = ctx["subject"]
    for _ in range(n):
        js2.publish_async(subj, PAYLOAD, stall_wait=30)
    js2.publish_async_complete(timeout=120)
    st = js.stream(ctx["stream"]).info().state
    if st.messages != n:
        raise RowFailed(f"could not store the row's messages: {st.messages} of {n}")


def _js_check(url: str, row: str, ctx: dict[str, Any]) -> None:
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


def run_row(row: str, client: str, url: str, monitor: str = "", scale: float = 1.0,
            peer: Any = None) -> dict[str, Any]:
    """Run one row for one client in this process; the measurement as a dict
    (``peer``: the client object when it is not a jetwire flavour, see rows_aio.Client)."""
    spec = ROWS[row]
    n = max(1, int(spec.count * scale))
    impls, cl = peer_implementations(peer) if peer is not None else implementations(client)
    fn = functools.partial(impls[row], cl)
    ctx: dict[str, Any] = {}
    if spec.js:
        ctx = _js_setup(url, row, n)
    if row == "a":
        before = varz(monitor)["in_msgs"] if monitor else None
        cpu0 = time.process_time()
        dt = _run(fn, url, n, ctx)
        cpu = time.process_time() - cpu0
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
        return _with_cpu({"rate": n / dt, "n": n, "seconds": dt}, cpu, n, ctx)
    cpu0 = time.process_time()
    if spec.kind == "latency":
        lat = sorted(_run(fn, url, n, ctx))
        cpu = time.process_time() - cpu0
        if len(lat) != n:
            raise RowFailed(f"{len(lat)} of {n} {'requests answered' if row == 'c' else 'messages received'}")
        res = {"p50_us": lat[len(lat) // 2] * 1e6, "p99_us": lat[int(len(lat) * 0.99)] * 1e6, "n": n}
        if row == "h":
            res["p999_us"] = lat[min(n - 1, int(len(lat) * 0.999))] * 1e6
        return _with_cpu(res, cpu, n, ctx)
    if row == "s":
        n = n - n % REQUESTERS or REQUESTERS
        cpu0 = time.process_time()
        dt, lat = _run(fn, url, n, ctx)
        cpu = time.process_time() - cpu0  # this process's CPU (set-up included): steadier than rates on a busy box
        lat = sorted(lat)
        if len(lat) != n:
            raise RowFailed(f"{len(lat)} of {n} requests answered")
        res = _with_cpu({"rate": n / dt, "p50_us": lat[len(lat) // 2] * 1e6,
                         "p99_us": lat[int(len(lat) * 0.99)] * 1e6, "n": n, "seconds": dt}, cpu, n, ctx)
        res["cpu_us_per_req"] = res["cpu_us"]
        return res
    dt = _run(fn, url, n, ctx)
    cpu = time.process_time() - cpu0
    if spec.js:
        _js_check(url, row, ctx)
    out = {"rate": n / dt, "n": n, "seconds": dt}
    if row == "m":
        out["parse_rate"] = n / ctx["parse_seconds"]
        out["cpu_rate"] = n / ctx["cpu_seconds"]
        if peer is None:
            from .. import speedups_enabled

            out["pure_rate"], out["pure_cpu_rate"] = _pure_metadata_rate(n)
            out["vs_pure"] = out["cpu_rate"] / out["pure_cpu_rate"]  # CPU time: steadier on a busy box
            out["compiled"] = 1 if speedups_enabled() else 0
    return _with_cpu(out, cpu, n, ctx)


def _with_cpu(res: dict[str, Any], cpu: float, n: int, ctx: dict[str, Any]) -> dict[str, Any]:
    """Add the client's CPU time per message (``time.process_time`` of this process over
    the row, set-up of the client included; a peer that runs another process reports its
    own in ``ctx["cpu"]``)."""
    cpu = ctx.get("cpu", cpu)
    res["cpu_us"] = cpu / n * 1e6
    return res


def main(argv: list | None = None, peer: Any = None) -> int:
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
    if peer is not None and client != peer.name:
        print(f"these are the {peer.name} rows, not {client}'s", file=sys.stderr)
        return 2
    if not supported(row, client):
        print(f"row {row} has no {client} implementation", file=sys.stderr)
        return 2
    try:
        res = run_row(row, client, url, monitor, scale, peer)
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
