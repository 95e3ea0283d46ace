"""The benchmark orchestrator: one engine behind ``jetwire bench <mode>`` and ``jetwire
bench compare`` (and ``benchmarks/compare.py``).

* :func:`serve` - the server under test: a running one (``--server``) or a fresh embedded
  nats-server (JetStream, temporary store), optionally pinned to ``--server-cpus``.
* :func:`run_groups` - ``bench <mode>``: one worker process per client
  (:mod:`._benchwork`), all ready before all start together, each pinned to
  ``--client-cpus``; progress from shared counters; each worker's result or error.
* :func:`run_rows` - ``bench compare``: every (row, client) in its own process
  (``python -m jetwire.cli.rows`` or a peer's row script), in turns, for several rounds,
  pinned to ``--client-cpus``; each run's result or ``{"error": ...}``.

The result model is :mod:`._results`, the workloads :mod:`._workloads`, the renderers
:mod:`._render`. No click or rich here.
"""
from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import queue as queue_mod
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from multiprocessing.context import BaseContext
from multiprocessing.process import BaseProcess
from typing import Any

from .._redact import redact_text
from ._conn import connect_kwargs, redact_url
from ._results import CompareReport, Runs, WorkerResult
from ._rowkit import ROW_CONN_ENV
from ._workloads import PEER_FILES, supported

READY_TIMEOUT = 60.0  # seconds for every bench worker to connect and get ready
ROW_TIMEOUT = 600.0  # seconds for one compare row process


class BenchError(Exception):
    """A benchmark that could not run, or whose workers failed (the message says why)."""


# ================================================================== the server, CPUs


def varz(monitor: str) -> dict[str, object]:
    """The server's ``/varz`` (``monitor``: its monitoring URL)."""
    with urllib.request.urlopen(monitor.rstrip("/") + "/varz", timeout=5) as r:
        out: dict[str, object] = json.loads(r.read())
    return out


def in_msgs(monitor: str) -> int:
    """How many messages the server has counted in (``/varz`` ``in_msgs``)."""
    n = varz(monitor)["in_msgs"]
    assert isinstance(n, int)
    return n


def parse_cpus(text: str | None) -> set[int] | None:
    """``"0,1"``, ``"2-15"`` or ``"0,4-7"`` (taskset's list form) to a set of CPU numbers;
    None or ``""`` gives None (no pinning). Raises ``ValueError`` for anything else, and
    for CPUs this process may not run on."""
    if not text:
        return None
    cpus: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError(f"bad CPU list {text!r}: use numbers and ranges, e.g. 0,1 or 2-15")
        first, last = int(lo), int(hi) if sep else int(lo)
        if last < first:
            raise ValueError(f"bad CPU list {text!r}: range {part} runs backwards")
        cpus.update(range(first, last + 1))
    allowed = os.sched_getaffinity(0)
    if not cpus <= allowed:
        raise ValueError(f"CPU list {text!r} names CPUs this machine does not offer "
                         f"(allowed: {','.join(map(str, sorted(allowed)))})")
    return cpus


@contextlib.contextmanager
def pinned(cpus: set[int] | None) -> Iterator[None]:
    """Run the block (and every process it starts, with all their threads) on ``cpus``
    only; the previous affinity comes back afterwards. None: no change."""
    if not cpus:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def pinning(server_cpus: set[int] | None, client_cpus: set[int] | None) -> dict[str, list[int] | None]:
    """What a report records of the CPUs used: ``server_cpus``/``client_cpus`` (sorted
    lists, None when not pinned)."""
    return {"server_cpus": sorted(server_cpus) if server_cpus else None,
            "client_cpus": sorted(client_cpus) if client_cpus else None}


@dataclass(frozen=True)
class Target:
    """The server a benchmark runs against."""

    url: str
    monitor: str  # its monitoring URL ("": unknown)
    embedded: bool


@contextlib.contextmanager
def serve(server: str | None = None, monitor: str | None = None,
          server_cpus: set[int] | None = None) -> Iterator[Target]:
    """``server`` (with its ``monitor`` URL, if known), or a fresh embedded nats-server
    on ``server_cpus`` for the block, stopped afterwards."""
    if server:
        if server_cpus:
            raise BenchError("--server-cpus pins the embedded server; with --server, pin that server yourself")
        yield Target(server, monitor or "", False)
        return
    from ..testing import NatsServer

    srv = NatsServer()
    with pinned(server_cpus):
        srv.start()
    try:
        yield Target(srv.url, srv.monitor_url, True)
    finally:
        srv.stop()


# ================================================================== bench <mode>: worker processes


@dataclass
class Group:
    """Clients doing one role (publishers, subscribers, requesters, fetchers, ...)."""

    name: str  # shown: "pub", "sub", "req", "rep", "fetch", ...
    role: str  # the worker role (workers_aio.ROLES)
    counts: list[int]  # per worker: messages it sends / requests it makes
    measured: bool = True
    producer: bool = False  # when every producer is done, consumers may give up after --grace
    fanout: bool = True  # each worker expects `expected` messages (else the group shares `expected`)
    expected: int = 0
    extra: dict[str, object] = field(default_factory=dict)  # for the role (stream, batch, ...)
    offsets: list[int] | None = None  # per worker: its first key (kv-get)

    @property
    def workers(self) -> int:
        return len(self.counts)

    def total(self) -> int:
        if self.producer:
            return sum(self.counts)
        return self.expected * self.workers if self.fanout else self.expected


class Counters:
    """The workers' progress counters (one slot per worker, shared memory)."""

    def __init__(self, slots: Any, groups: Sequence[Group]) -> None:
        self.slots = slots
        self.spans: list[tuple[Group, int, int]] = []
        lo = 0
        for g in groups:
            self.spans.append((g, lo, lo + g.workers))
            lo += g.workers

    def done(self, group: Group) -> int:
        return sum(self.slots[i] for g, lo, hi in self.spans if g is group for i in range(lo, hi))


_CTX: BaseContext | None = None


def _mp_context() -> BaseContext:
    """Worker processes come from a fork server that has jetwire imported already (fast
    to start, and never a fork of this multi-threaded process); spawn where there is none."""
    global _CTX
    if _CTX is None:
        import multiprocessing as mp

        ctx: BaseContext
        try:
            fs = mp.get_context("forkserver")
            fs.set_forkserver_preload(["jetwire.cli._benchwork", "jetwire", "jetwire.aio"])
            ctx = fs
        except ValueError:
            ctx = mp.get_context("spawn")
        _CTX = ctx
    return _CTX


@dataclass
class _Run:
    """The processes of one :func:`run_groups` call and what they reported."""

    procs: list[BaseProcess]
    owner: list[tuple[Group, int]]
    q: Any
    results: dict[str, list[WorkerResult]]
    errors: list[str] = field(default_factory=list)
    reported: set[int] = field(default_factory=set)

    def label(self, i: int) -> str:
        g, k = self.owner[i]
        return f"{g.name} #{k + 1}"

    def await_ready(self, timeout: float) -> None:
        ready: set[int] = set()
        deadline = time.monotonic() + timeout
        while len(ready) < len(self.procs):
            try:
                kind, i, payload = self.q.get(timeout=0.1)
            except queue_mod.Empty:
                for j, p in enumerate(self.procs):
                    if j not in ready and not p.is_alive():
                        raise BenchError(f"{self.label(j)}: worker exited with status {p.exitcode} before it "
                                         "was ready") from None
                if time.monotonic() > deadline:
                    raise BenchError(f"only {len(ready)} of {len(self.procs)} clients were ready within "
                                     f"{timeout:.0f}s") from None
                continue
            if kind == "error":
                raise BenchError(f"{self.label(i)}: {payload}")
            ready.add(i)

    def reap(self) -> None:
        """Note the workers that died without a word."""
        for j, p in enumerate(self.procs):
            if j not in self.reported and not p.is_alive() and p.exitcode not in (None, 0):
                self.reported.add(j)
                self.errors.append(f"{self.label(j)}: worker exited with status {p.exitcode}")

    def step(self) -> bool:
        """Wait up to 0.1 s for a worker's report and note it; True when a worker failed."""
        try:
            kind, i, payload = self.q.get(timeout=0.1)
        except queue_mod.Empty:
            self.reap()
            return False
        self.reported.add(i)
        if kind == "done":
            self.results[self.owner[i][0].name].append(payload)
            return False
        self.errors.append(f"{self.label(i)}: {payload}")
        return True

    def join(self, interrupted: bool = False) -> None:
        """Wait for the workers (5 s each), then terminate those still running; when
        ``interrupted`` (Ctrl-C, SIGTERM, a failure in this process), terminate them at once."""
        started = [p for p in self.procs if p.pid is not None]
        if not interrupted:
            for p in started:
                p.join(timeout=5)
        for p in started:
            if p.is_alive():
                p.terminate()
        deadline = time.monotonic() + 5
        for p in started:
            p.join(timeout=max(0.0, deadline - time.monotonic()))
        for p in started:
            if p.is_alive():  # (SIGTERM not heard within 5 s)
                p.kill()
                p.join(timeout=5)

    def raise_errors(self) -> None:
        if self.errors:
            more = f" (and {len(self.errors) - 3} more)" if len(self.errors) > 3 else ""
            raise BenchError("; ".join(self.errors[:3]) + more)


def _spawn(ctx: BaseContext, run: _Run, counters: Counters, base: dict[str, object], flavour: str,
           events: tuple[object, object], cpus: list[int] | None, wait_external: bool) -> None:
    """One (not yet started) process per worker, its spec from ``base`` and its group."""
    from ._worker_main import worker_main

    for g, lo, _ in counters.spans:
        for i, n in enumerate(g.counts):
            spec = {**base, **g.extra, "role": g.role, "flavour": flavour, "idx": lo + i, "gidx": i, "n": n,
                    "external": wait_external, "expected": g.expected, "fanout": g.fanout,
                    "group_slice": (lo, lo + g.workers), "group_total": 0 if g.fanout else g.expected,
                    "cpus": cpus}
            if g.offsets:
                spec["offset"] = g.offsets[i]
            run.procs.append(ctx.Process(target=worker_main,  # type: ignore[attr-defined]
                                         args=(spec, counters.slots, run.q, *events),
                                         name=f"jetwire-bench-{g.name}-{i + 1}", daemon=True))
            run.owner.append((g, i))


def run_groups(groups: Sequence[Group], flavour: str, base: dict[str, object],
               client_cpus: set[int] | None = None, wait_external: bool = False,
               on_started: Callable[[], None] | None = None,
               on_tick: Callable[[Counters], None] | None = None,
               ready_timeout: float = READY_TIMEOUT) -> dict[str, list[WorkerResult]]:
    """Start one process per worker (on ``client_cpus``), wait until all are ready, start
    them together and return each group's worker results (:class:`BenchError` when a
    worker failed). ``on_tick`` sees the progress counters about every 0.1 s."""
    ctx = _mp_context()
    counters = Counters(ctx.Array("q", sum(g.workers for g in groups), lock=False), groups)
    start_ev, stop_ev = ctx.Event(), ctx.Event()
    run = _Run([], [], ctx.Queue(), {g.name: [] for g in groups})
    _spawn(ctx, run, counters, base, flavour, (start_ev, stop_ev), sorted(client_cpus) if client_cpus else None,
           wait_external)
    producers = {i for i, (g, _) in enumerate(run.owner) if g.producer}
    finished = False
    try:
        for p in run.procs:
            p.start()
        run.await_ready(ready_timeout)
        if not producers and not wait_external:
            stop_ev.set()
        start_ev.set()
        if on_started is not None:
            on_started()
        while len(run.reported) < len(run.procs):
            if run.step() or (producers and producers <= run.reported):
                stop_ev.set()  # a worker failed, or the producers are done: the receivers may finish
            if on_tick is not None:
                on_tick(counters)
        finished = True
    finally:
        start_ev.set()
        stop_ev.set()
        run.join(interrupted=not finished)  # (Ctrl-C, SIGTERM, an error here: the workers stop now)
    run.raise_errors()
    return run.results


# ================================================================== bench compare: row processes


def default_peers() -> str | None:
    """``$JETWIRE_BENCH_PEERS``, else the ``benchmarks/`` folder of the source checkout
    this package runs from (an editable install), else None (an installed wheel)."""
    env = os.environ.get("JETWIRE_BENCH_PEERS")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))  # <checkout>/src/jetwire/cli
    cand = os.path.normpath(os.path.join(here, "..", "..", "..", "benchmarks"))
    return cand if os.path.isfile(os.path.join(cand, PEER_FILES["nats-py"])) else None


def _natsgo_ready(folder: str, name: str) -> str:
    """Build the nats.go program (once); why it cannot run, or ""."""
    try:
        out = subprocess.run([sys.executable, os.path.join(folder, name), "--prepare"], capture_output=True,
                             text=True, timeout=900)
    except subprocess.TimeoutExpired:
        return "building the nats.go program timed out"
    if out.returncode != 0:
        text = (out.stdout or out.stderr or "").strip()
        return text.splitlines()[-1] if text else f"{name} --prepare: exit status {out.returncode}"
    return ""


def _natspy_ready() -> str:
    try:
        found = importlib.util.find_spec("nats") is not None and importlib.util.find_spec("nats.js") is not None
    except (ImportError, ValueError):
        found = False
    return "" if found else "nats-py is not installed (pip install nats-py)"


def find_peers(peers: str | None = None, client: str = "nats-py") -> tuple[str | None, str]:
    """``(folder, "")`` when the rows of peer ``client`` can run: ``peers`` (or
    :func:`default_peers`) holds its row file and what it needs is installed (nats-py;
    ``go`` and nats.go, whose program is built here once); else ``(None, why not)``."""
    name = PEER_FILES[client]
    folder = peers or default_peers()
    if folder is None:
        return None, (f"no benchmarks/{name} (they are not in the jetwire package: run from a "
                      "source checkout, or pass --peers DIR)")
    if not os.path.isfile(os.path.join(folder, name)):
        return None, f"no {name} in {folder}"
    why = {"raw": "", "nats.go": None, "nats-py": None}[client]  # raw: stdlib sockets, nothing to install
    if why is None:
        why = _natsgo_ready(folder, name) if client == "nats.go" else _natspy_ready()
    return (None, why) if why else (os.path.abspath(folder), "")


def unavailable_line(why: str, client: str = "nats-py") -> str:
    """The one line printed when a peer's rows cannot run."""
    return f"{client} rows unavailable: {why}; running the other clients' rows"


def resolve_peers(clients: list[str], peers: str | None, named: bool,
                  on_skip: Callable[[str], None]) -> str | None:
    """Check every peer in ``clients``; a peer that cannot run is removed from ``clients``
    (``on_skip`` gets the one line that says why) or, when the clients were ``named``
    (asked for by name), raises :class:`BenchError`. Returns the peers' folder."""
    folder = None
    for peer in PEER_FILES:
        if peer not in clients:
            continue
        found, why = find_peers(peers, peer)
        if found is None:
            if named:
                raise BenchError(f"{peer} rows unavailable: {why}")
            clients.remove(peer)
            on_skip(unavailable_line(why, peer))
        else:
            folder = found
    return folder


def check_server(url: str, conn: Mapping[str, str | None] | None = None, timeout: float = 5.0) -> None:
    """:class:`BenchError` (one line) unless a client can connect to ``url`` with the
    settings ``conn`` (auth, TLS): a compare against a server that is down fails at once
    rather than row by row."""
    import jetwire

    kw = connect_kwargs(dict(conn or {}))
    kw.update(name="jetwire-bench-check", connect_timeout=timeout, allow_reconnect=False)
    try:
        nc = jetwire.connect(url, **kw)
    except Exception as exc:
        shown = redact_url(url)
        msg = " ".join(redact_text(str(exc) or type(exc).__name__).split())
        raise BenchError(msg if shown in msg else f"cannot connect to {shown}: {msg}") from None
    try:
        nc.close()
    except Exception:  # pragma: no cover - reachable was the point
        pass


def run_worker(row: str, client: str, url: str, monitor: str, scale: float, timeout: float = ROW_TIMEOUT,
               peers: str | None = None, cpus: set[int] | None = None,
               conn: Mapping[str, str | None] | None = None) -> dict[str, object]:
    """One row for one client in a fresh process; ``{"error": ...}`` when it failed
    (``peers``: the folder of the peers' rows, see :func:`find_peers`; ``cpus``: the
    CPUs the process, and whatever it starts, runs on; ``conn``: auth and TLS settings
    for jetwire's rows, in ``$JETWIRE_BENCH_CONN``)."""
    if client in PEER_FILES:
        folder = peers
        if folder is None:
            folder, why = find_peers(peers, client)
            if folder is None:
                return {"error": why}
        cmd = [sys.executable, os.path.join(folder, PEER_FILES[client])]
    else:
        cmd = [sys.executable, "-m", "jetwire.cli.rows"]
    cmd += [row, client, url, monitor or "", repr(scale)]
    env = dict(os.environ)
    env.pop(ROW_CONN_ENV, None)
    if conn:
        env[ROW_CONN_ENV] = json.dumps(dict(conn))
    try:
        with pinned(cpus):
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f}s"}
    if out.returncode != 0:
        text = (out.stderr or out.stdout or "").strip()
        last = text.splitlines()[-1] if text else f"exit status {out.returncode}"
        return {"error": last[len("FAILED: "):] if last.startswith("FAILED: ") else last}
    try:
        res: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": f"unreadable output: {out.stdout.strip()[-200:]!r}"}
    return res


def run_rows(target: Target, rows: Sequence[str], clients: Sequence[str], rounds: int = 3, scale: float = 1.0,
             on_result: Callable[[int, str, str, dict[str, object]], None] | None = None,
             on_start: Callable[[int, str, str], None] | None = None, peers: str | None = None,
             client_cpus: set[int] | None = None, conn: Mapping[str, str | None] | None = None) -> Runs:
    """Run every (row, client) ``rounds`` times, in turns, against ``target`` (``conn``:
    its auth and TLS settings); (row, client) pairs with no implementation (the peers
    have no row g) are left out."""
    results: Runs = {r: {c: [] for c in clients if supported(r, c)} for r in rows}
    for rnd in range(rounds):
        for r in rows:
            for c in results[r]:
                if on_start:
                    on_start(rnd, r, c)
                res = run_worker(r, c, target.url, target.monitor, scale, peers=peers, cpus=client_cpus, conn=conn)
                results[r][c].append(res)
                if on_result:
                    on_result(rnd, r, c, res)
    return results


def run_compare(rows: Sequence[str], clients: list[str], rounds: int = 3, scale: float = 1.0,
                server: str | None = None, monitor: str | None = None,
                on_result: Callable[[int, str, str, dict[str, object]], None] | None = None,
                on_start: Callable[[int, str, str], None] | None = None, peers: str | None = None,
                server_cpus: set[int] | None = None, client_cpus: set[int] | None = None,
                conn: Mapping[str, str | None] | None = None) -> CompareReport:
    """``bench compare``: the rows on ``server`` (with ``conn``, its auth and TLS
    settings; :class:`BenchError` at once when it cannot be reached) or on one fresh
    embedded server (on ``server_cpus``), each client process on ``client_cpus``; the
    report of the medians."""
    with serve(server, monitor, server_cpus) as target:
        if not target.embedded:
            check_server(target.url, conn)
        runs = run_rows(target, rows, clients, rounds, scale, on_result=on_result, on_start=on_start, peers=peers,
                        client_cpus=client_cpus, conn=conn)
    rep = CompareReport.of(runs, scale, list(clients), **pinning(server_cpus, client_cpus))
    rep.rounds = rounds
    return rep
