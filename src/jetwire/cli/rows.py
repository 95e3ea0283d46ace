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
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol

from ._engine import in_msgs
from ._results import RowResult
from ._rowkit import (
    FETCH,
    IDLE,
    PAYLOAD,
    RATE,
    REQUESTERS,
    WAIT,
    WINDOW,
    RowCtx,
    RowFailed,
    ack_subjects,
    conn_kwargs,
    cpu_now,
    now,
)
from ._workloads import CLIENT_ROWS, COUNTS, ROW_ORDER, ROWS, Row, supported

if TYPE_CHECKING:
    import jetwire

__all__ = ["CLIENT_ROWS", "COUNTS", "FETCH", "IDLE", "PAYLOAD", "RATE", "REQUESTERS", "ROWS", "ROW_ORDER", "WAIT",
           "WINDOW", "Row", "RowCtx", "RowFailed", "ack_subjects", "cpu_now", "main", "now", "run_row", "supported"]

class Peer(Protocol):
    """A peer's client object (benchmarks/): its name, and its own row functions when it
    runs a program in another language (else it runs rows_aio's with its own methods)."""

    name: str


RowFn = Callable[..., object]  # row(cl, url, n, ctx): seconds, latencies or (seconds, latencies)


def _pure_metadata_rate(n: int) -> tuple[float, float]:
    """Row m through jetwire's pure twin in this process (the compiled one's yardstick):
    ``(rate by wall time, rate by CPU time)``."""
    from .. import _impl

    base: type = _impl.implementations()["pure"].MsgBase
    PureMsg = type("PureMsg", (base,), {"__slots__": ()})

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


def implementations(client: str) -> tuple[Mapping[str, RowFn], object]:
    """The row functions of a jetwire flavour and the client object they run with."""
    if client == "jetwire":
        from . import rows_sync

        return rows_sync.ROWS, rows_sync.CLIENT
    if client == "jetwire.aio":
        from . import rows_aio

        return rows_aio.ROWS, rows_aio.CLIENT
    raise KeyError(f"{client} rows are not part of jetwire (see benchmarks/)")


def peer_implementations(peer: Peer) -> tuple[Mapping[str, RowFn], object]:
    """The row functions for a peer client object: its own ``rows`` (a program in another
    language, run for the timed part) or the same asyncio functions jetwire.aio runs,
    with the rows the peer supports."""
    from . import rows_aio

    own: Mapping[str, RowFn] | None = getattr(peer, "rows", None)
    impls: Mapping[str, RowFn] = own or rows_aio.ROWS
    return {r: impls[r] for r in CLIENT_ROWS[peer.name]}, peer


# ================================================================== JetStream set-up and accounting
# (blocking jetwire API, outside the timed part)


def _js_setup(url: str, row: str, n: int) -> RowCtx:
    import jetwire

    tag = f"{row.upper()}_{os.getpid()}"
    ctx: RowCtx = {"stream": f"BENCH_{tag}", "subject": f"bench.{row}.{os.getpid()}", "n": n}
    nc = jetwire.connect(url, **conn_kwargs())
    try:
        js = nc.jetstream(timeout=10)
        try:
            js.delete_stream(ctx["stream"])
        except jetwire.StreamNotFoundError:
            pass
        js.create_stream(name=ctx["stream"], subjects=[ctx["subject"]], storage="file")
        if row in ("f", "f2", "g"):
            _fill(nc, ctx, n)
            ctx["consumer"] = f"C{row.upper()}"
            js.create_consumer(ctx["stream"], durable_name=ctx["consumer"],
                               ack_policy="explicit" if row == "f2" else "none",
                               max_ack_pending=-1 if row == "f2" else None)
    finally:
        nc.close()
    return ctx


def _fill(nc: jetwire.Client, ctx: RowCtx, n: int) -> None:
    """Store ``n`` messages: acknowledged async publishes (nothing is silently dropped)."""
    js2 = nc.jetstream(timeout=30, publish_async_max_pending=4000)
    subj = ctx["subject"]
    for _ in range(n):
        js2.publish_async(subj, PAYLOAD, stall_wait=30)
    js2.publish_async_complete(timeout=120)
    st = js2.stream(ctx["stream"]).info().state
    if st.messages != n:
        raise RowFailed(f"could not store the row's messages: {st.messages} of {n}")


def _consumer_done(nc: jetwire.Client, row: str, ctx: RowCtx) -> None:
    """The pull rows' consumer delivered (and, f2, saw acked) every message, or :class:`RowFailed`."""
    n = ctx["n"]
    if ctx.get("received") != n:
        raise RowFailed(f"received {ctx.get('received')} of {n} messages")
    js = nc.jetstream(timeout=10)
    deadline = time.monotonic() + 10
    while True:
        ci = js.consumer(ctx["stream"], ctx["consumer"]).info()
        ok = ci.num_pending == 0 and ci.delivered.stream_seq == n
        if row == "f2":
            ok = ok and ci.num_ack_pending == 0 and ci.ack_floor.stream_seq == n
        if ok:
            return
        if time.monotonic() > deadline:
            raise RowFailed(f"consumer not done: pending {ci.num_pending}, ack pending "
                            f"{ci.num_ack_pending}, delivered {ci.delivered.stream_seq}, "
                            f"ack floor {ci.ack_floor.stream_seq} of {n}")
        time.sleep(0.05)


def _js_check(url: str, row: str, ctx: RowCtx) -> None:
    """Every message accounted for, or :class:`RowFailed`; then remove the stream."""
    import jetwire

    n = ctx["n"]
    nc = jetwire.connect(url, **conn_kwargs())
    try:
        js = nc.jetstream(timeout=10)
        if row in ("d", "e"):
            st = js.stream(ctx["stream"]).info().state
            if st.messages != n or st.last_seq != n:
                raise RowFailed(f"stream holds {st.messages} messages (last seq {st.last_seq}), expected {n}")
        else:
            _consumer_done(nc, row, ctx)
        js.delete_stream(ctx["stream"])
    finally:
        nc.close()


def _run(fn: Callable[..., object], *args: object) -> object:
    import inspect

    if inspect.iscoroutinefunction(fn):
        try:
            import uvloop

            return uvloop.run(fn(*args))
        except ImportError:
            import asyncio

            return asyncio.run(fn(*args))
    return fn(*args)


def _await_in_msgs(monitor: str, before: int, n: int) -> None:
    """Row a: the server counted ``n`` messages in since ``before`` (it folds its
    per-connection counters into /varz lazily: poll a little), or :class:`RowFailed`."""
    deadline = time.monotonic() + 10
    while True:
        got = in_msgs(monitor) - before
        if got >= n:
            return
        if time.monotonic() > deadline:
            raise RowFailed(f"server counted {got} of {n} messages")
        time.sleep(0.05)


def _seconds(value: object) -> float:
    assert isinstance(value, float | int)
    return value


def _latencies(value: object) -> list[float]:
    assert isinstance(value, list)
    return sorted(value)


def _timed(fn: Callable[..., object], url: str, n: int, ctx: RowCtx,
           then: Callable[[object], object] | None = None,
           around: Callable[[], AbstractContextManager[object]] | None = None) -> tuple[object, float]:
    """Run the row (the timed part is inside it); its result (``then`` applied) and this
    process's CPU seconds over it, the client's set-up included. ``around``: a context
    entered just for the row (not the stream set-up before it), e.g. a profiler."""
    cpu0 = time.process_time()
    if around is None:
        out = _run(fn, url, n, ctx)
    else:
        with around():
            out = _run(fn, url, n, ctx)
    if then is not None:
        out = then(out)
    return out, time.process_time() - cpu0


def _rate_row(row: str, out: object, n: int, ctx: RowCtx, url: str, native: bool) -> RowResult:
    dt = _seconds(out)
    if ROWS[row].js:
        _js_check(url, row, ctx)
    res: RowResult = {"rate": n / dt, "n": n, "seconds": dt}
    if row == "m":
        res["parse_rate"] = n / ctx["parse_seconds"]
        res["cpu_rate"] = n / ctx["cpu_seconds"]
        if native:
            from .. import speedups_enabled

            res["pure_rate"], res["pure_cpu_rate"] = _pure_metadata_rate(n)
            res["vs_pure"] = res["cpu_rate"] / res["pure_cpu_rate"]  # CPU time: steadier on a busy box
            res["compiled"] = 1 if speedups_enabled() else 0
    return res


def _latency_row(row: str, lat: list[float], n: int) -> RowResult:
    if len(lat) != n:
        raise RowFailed(f"{len(lat)} of {n} {'requests answered' if row == 'c' else 'messages received'}")
    res: RowResult = {"p50_us": lat[len(lat) // 2] * 1e6, "p99_us": lat[int(len(lat) * 0.99)] * 1e6, "n": n}
    if row == "h":
        res["p999_us"] = lat[min(n - 1, int(len(lat) * 0.999))] * 1e6
    return res


def _service_row(out: object, n: int) -> RowResult:
    assert isinstance(out, tuple)
    dt = _seconds(out[0])
    lat = _latencies(out[1])
    if len(lat) != n:
        raise RowFailed(f"{len(lat)} of {n} requests answered")
    return {"rate": n / dt, "p50_us": lat[len(lat) // 2] * 1e6, "p99_us": lat[int(len(lat) * 0.99)] * 1e6, "n": n,
            "seconds": dt}


def run_row(row: str, client: str, url: str, monitor: str = "", scale: float = 1.0,
            peer: Peer | None = None,
            around: Callable[[], AbstractContextManager[object]] | None = None) -> RowResult:
    """Run one row for one client in this process; the measurement as a dict
    (``peer``: the client object when it is not a jetwire flavour, see rows_aio.Client;
    ``around``: a context entered for the row alone, after the stream's set-up)."""
    spec = ROWS[row]
    n = max(1, int(spec.count * scale))
    impls, cl = peer_implementations(peer) if peer is not None else implementations(client)
    fn = functools.partial(impls[row], cl)
    ctx: RowCtx = _js_setup(url, row, n) if spec.js else {}
    if row == "a":
        before = in_msgs(monitor) if monitor else None
        out, cpu = _timed(fn, url, n, ctx, around=around)
        if before is not None:
            _await_in_msgs(monitor, before, n)
        dt = _seconds(out)
        return _with_cpu({"rate": n / dt, "n": n, "seconds": dt}, cpu, n, ctx)
    if spec.kind == "latency":
        out, cpu = _timed(fn, url, n, ctx, then=_latencies, around=around)  # (the sort counted as before)
        return _with_cpu(_latency_row(row, _latencies(out), n), cpu, n, ctx)
    if spec.kind == "service":
        n = n - n % REQUESTERS or REQUESTERS
        out, cpu = _timed(fn, url, n, ctx, around=around)  # this process's CPU (set-up included): steadier than rates on a busy box
        res = _with_cpu(_service_row(out, n), cpu, n, ctx)
        res["cpu_us_per_req"] = res["cpu_us"]
        return res
    out, cpu = _timed(fn, url, n, ctx, around=around)
    return _with_cpu(_rate_row(row, out, n, ctx, url, peer is None), cpu, n, ctx)


def _with_cpu(res: RowResult, cpu: float, n: int, ctx: RowCtx) -> RowResult:
    """Add the client's CPU time per message (``time.process_time`` of this process over
    the row, set-up of the client included; a peer that runs another process reports its
    own in ``ctx["cpu"]``)."""
    cpu = ctx.get("cpu", cpu)
    res["cpu_us"] = cpu / n * 1e6
    return res


def main(argv: list[str] | None = None, peer: Peer | None = None) -> int:
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
