"""Side-by-side comparison of jetwire (blocking and asyncio) with nats.go and nats-py on one server.

One implementation behind both ``jetwire bench compare`` and ``benchmarks/compare.py``:

    python benchmarks/compare.py                  # all rows, 3 rounds, embedded server
    python benchmarks/compare.py --rows a,c --rounds 5 --server nats://127.0.0.1:4222

Each (row, client) runs in its own process (``python -m jetwire.cli.rows``), in turns,
for several rounds, against one fresh embedded server (or ``--server``); the median of
each is reported with the ratios jetwire / nats.go and jetwire / nats-py. Rows are those
of BENCHMARKS.md. A row whose messages are not all accounted for fails instead of
reporting a number, and the run exits non-zero.

jetwire's rows come from this package. The peers' are not part of it: they are
``natspy_rows.py`` (needs nats-py installed), ``natsgo_rows.py`` (a Go program over
nats.go; needs ``go`` and Debian's nats.go package) and ``raw_rows.py`` (the raw-socket
limit: stdlib sockets, no client logic) in a ``benchmarks/`` folder
(``--peers DIR``; by default ``$JETWIRE_BENCH_PEERS``, else the ``benchmarks/`` of the
source checkout jetwire runs from). Without them one line per peer says why, and the
other clients' rows run.

No click or rich here.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

from ._stats import median
from .rows import ROW_ORDER, ROWS, supported

CLIENTS = ["jetwire", "jetwire.aio", "nats.go", "nats-py", "raw"]

PEER_FILE = "natspy_rows.py"
# the peers' row files (in the benchmarks/ folder, not in the package)
PEER_FILES = {"nats.go": "natsgo_rows.py", "nats-py": PEER_FILE, "raw": "raw_rows.py"}
REFERENCE = "nats.go"  # the peer the targets of BENCHMARKS.md are ratios against


def default_peers() -> str | None:
    """``$JETWIRE_BENCH_PEERS``, else the ``benchmarks/`` folder of the source checkout
    this package runs from (an editable install), else None (an installed wheel)."""
    env = os.environ.get("JETWIRE_BENCH_PEERS")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))  # <checkout>/src/jetwire/cli
    cand = os.path.normpath(os.path.join(here, "..", "..", "..", "benchmarks"))
    return cand if os.path.isfile(os.path.join(cand, PEER_FILE)) else None


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
    if client == "raw":  # stdlib sockets: nothing to install
        return os.path.abspath(folder), ""
    if client == "nats.go":
        try:
            out = subprocess.run([sys.executable, os.path.join(folder, name), "--prepare"], capture_output=True,
                                 text=True, timeout=900)
        except subprocess.TimeoutExpired:
            return None, "building the nats.go program timed out"
        if out.returncode != 0:
            text = (out.stdout or out.stderr or "").strip()
            return None, text.splitlines()[-1] if text else f"{name} --prepare: exit status {out.returncode}"
        return os.path.abspath(folder), ""
    try:
        found = importlib.util.find_spec("nats") is not None and importlib.util.find_spec("nats.js") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        return None, "nats-py is not installed (pip install nats-py)"
    return os.path.abspath(folder), ""


def unavailable_line(why: str, client: str = "nats-py") -> str:
    """The one line printed when a peer's rows cannot run."""
    return f"{client} rows unavailable: {why}; running the other clients' rows"


def parse_rows(text: str) -> list[str]:
    rows = [r.strip().lower() for r in text.split(",") if r.strip()]
    if not rows or rows == ["all"]:
        return list(ROW_ORDER)
    unknown = [r for r in rows if r not in ROWS]
    if unknown:
        raise ValueError(f"unknown row {unknown[0]!r}; known: {', '.join(ROW_ORDER)}")
    return rows


def parse_clients(text: str | None) -> list[str]:
    clients = [c.strip() for c in (text or ",".join(CLIENTS)).split(",") if c.strip()]
    unknown = [c for c in clients if c not in CLIENTS]
    if unknown:
        raise ValueError(f"unknown client {unknown[0]!r}; known: {', '.join(CLIENTS)}")
    return clients


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


def run_worker(row: str, client: str, url: str, monitor: str, scale: float, timeout: float = 600,
               peers: str | None = None, cpus: set[int] | None = None) -> dict[str, Any]:
    """One row for one client in a fresh process; ``{"error": ...}`` when it failed
    (``peers``: the folder of the peers' rows, see :func:`find_peers`; ``cpus``: the
    CPUs the process, and whatever it starts, runs on)."""
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
    try:
        with pinned(cpus):
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=dict(os.environ))
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f}s"}
    if out.returncode != 0:
        text = (out.stderr or out.stdout or "").strip()
        last = text.splitlines()[-1] if text else f"exit status {out.returncode}"
        return {"error": last[len("FAILED: "):] if last.startswith("FAILED: ") else last}
    try:
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": f"unreadable output: {out.stdout.strip()[-200:]!r}"}


Results = dict[str, dict[str, list[dict[str, Any]]]]


def run(rows: list[str], clients: list[str], rounds: int = 3, scale: float = 1.0, server: str | None = None,
        monitor: str | None = None,
        on_result: Callable[[int, str, str, dict[str, Any]], None] | None = None,
        on_start: Callable[[int, str, str], None] | None = None, peers: str | None = None,
        server_cpus: set[int] | None = None, client_cpus: set[int] | None = None) -> Results:
    """Run every (row, client) ``rounds`` times, in turns, on one server.

    Without ``server`` one fresh embedded nats-server (JetStream, file storage) is
    started for the whole run and stopped afterwards. (row, client) pairs with no
    implementation (the peers have no row g) are left out. ``peers``: the folder of the
    peers' rows (see :func:`find_peers`). ``server_cpus`` pins the embedded server,
    ``client_cpus`` each client process (the cross-core proxy: ``{1}`` and ``{0}``).
    """
    srv = None
    if server:
        url, mon = server, monitor or ""
    else:
        from ..testing import NatsServer

        srv = NatsServer()
        with pinned(server_cpus):
            srv.start()
        url, mon = srv.url, srv.monitor_url
    results: Results = {r: {c: [] for c in clients if supported(r, c)} for r in rows}
    try:
        for rnd in range(rounds):
            for r in rows:
                for c in clients:
                    if not supported(r, c):
                        continue
                    if on_start:
                        on_start(rnd, r, c)
                    res = run_worker(r, c, url, mon, scale, peers=peers, cpus=client_cpus)
                    results[r][c].append(res)
                    if on_result:
                        on_result(rnd, r, c, res)
    finally:
        if srv is not None:
            srv.stop()
    return results


def summarize(results: Results, scale: float = 1.0) -> dict[str, Any]:
    """Medians per (row, client), ratios against nats-py and nats.go (and g against f),
    failures.

    ``{"rows": {row: {"title", "kind", "target", "clients": {client: {"median": {...},
    "runs", "failed", "errors"}}, "ratios": {client: x}, "ratios_go": {client: x}}},
    "failed": bool}`` (``ratios``: against nats-py; ``ratios_go``: against nats.go;
    ``ratios_raw``: against the raw-socket limit)
    """
    out: dict[str, Any] = {"rows": {}, "failed": False}
    for r, per_client in results.items():
        spec = ROWS[r]
        row_out: dict[str, Any] = {"title": spec.title, "short": spec.short, "kind": spec.kind,
                                   "target": spec.target, "clients": {}, "ratios": {}, "ratios_go": {},
                                   "ratios_raw": {}}
        for c, runs in per_client.items():
            ok = [x for x in runs if "error" not in x]
            errors = [x["error"] for x in runs if "error" in x]
            if errors:
                out["failed"] = True
            med = None
            if ok:
                med = {k: median([x[k] for x in ok]) for k in ok[0] if isinstance(ok[0][k], (int, float))}
            row_out["clients"][c] = {"median": med, "runs": len(runs), "failed": len(errors), "errors": errors}
        for peer, key in (("nats-py", "ratios"), (REFERENCE, "ratios_go"), ("raw", "ratios_raw")):
            base = (row_out["clients"].get(peer) or {}).get("median")
            for c, v in row_out["clients"].items():
                if c.startswith("jetwire") and base and v["median"]:
                    row_out[key][c] = spec.ratio(v["median"], base)
                    p50 = spec.p50_ratio(v["median"], base)
                    if p50 is not None and peer == "nats-py":
                        row_out.setdefault("p50_ratios", {})[c] = p50
        row_out["n"] = max(1, int(spec.count * scale))
        out["rows"][r] = row_out
    g, f = out["rows"].get("g"), out["rows"].get("f")
    if g and f:
        for c, v in g["clients"].items():
            fm = (f["clients"].get(c) or {}).get("median")
            if v["median"] and fm:
                g.setdefault("vs_f", {})[c] = v["median"]["rate"] / fm["rate"]
    return out


def pinning(server_cpus: set[int] | None, client_cpus: set[int] | None) -> dict[str, Any]:
    """What a summary records of the CPUs used: ``server_cpus``/``client_cpus`` (sorted
    lists, None when not pinned)."""
    return {"server_cpus": sorted(server_cpus) if server_cpus else None,
            "client_cpus": sorted(client_cpus) if client_cpus else None}


def pinning_line(summary: dict[str, Any]) -> str | None:
    """One line saying where the server and the clients ran, or None when nothing was pinned."""
    srv, cli = summary.get("server_cpus"), summary.get("client_cpus")
    if not srv and not cli:
        return None
    def on(cpus: list[int] | None) -> str:
        return f"on CPU {','.join(map(str, cpus))}" if cpus else "on any CPU"

    return f"pinned: server {on(srv)}, each client {on(cli)}"


def format_summary(summary: dict[str, Any], rounds: int) -> str:
    """Plain-text report (``benchmarks/compare.py``; the CLI draws a rich table instead)."""
    lines = [f"medians over {rounds} round(s); ratio = how many times better than nats.go (go), "
             "nats-py (py) and the raw-socket limit (raw) (rates: jetwire/peer; latency: peer / jetwire, "
             "p50 for c, p99 for h; service rows: the request rate's ratio, and p50 as a fraction of "
             "nats-py's); cpu: the client process's CPU per message"]
    pin = pinning_line(summary)
    if pin:
        lines.append(pin)
    for r, row in summary["rows"].items():
        spec = ROWS[r]
        lines.append("")
        lines.append(f"[{r}] {row['title']}   (target {row['target']})")
        for c, v in row["clients"].items():
            if v["median"] is None:
                lines.append(f"  {c:12s} FAILED: {v['errors'][-1] if v['errors'] else 'no result'}")
                continue
            line = f"  {c:12s} {spec.show(v['median'])}"
            if c in row.get("ratios_go", {}):
                line += f"   go {row['ratios_go'][c]:.2f}x"
            if c in row["ratios"]:
                line += f"   py {row['ratios'][c]:.2f}x"
            if c in row.get("ratios_raw", {}):
                line += f"   raw {row['ratios_raw'][c]:.2f}x"
            if c in row.get("p50_ratios", {}):
                line += f"   p50 {row['p50_ratios'][c]:.2f}x of nats-py"
            if c in row.get("vs_f", {}):
                line += f"   g/f {row['vs_f'][c]:.2f}x"
            if v["failed"]:
                line += f"   ({v['failed']} of {v['runs']} runs FAILED)"
            lines.append(line)
    return "\n".join(lines)


def main(argv: list[str] | None = None, peers: str | None = None) -> int:
    """``benchmarks/compare.py`` command line (argparse, plain text); ``peers``: the
    default of ``--peers`` (the script passes its own folder)."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--rows", default=",".join(ROW_ORDER), help="comma-separated rows (default: all)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--clients", default=None, help=f"comma-separated (default: {','.join(CLIENTS)})")
    ap.add_argument("--server", default=None, help="URL of a running server (default: embedded)")
    ap.add_argument("--monitor", default=None, help="monitoring URL of --server (for row a accounting)")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply message counts (e.g. 0.1 for a smoke run)")
    ap.add_argument("--peers", default=peers, metavar="DIR",
                    help="folder holding natspy_rows.py, natsgo_rows.py and raw_rows.py (default: the checkout's "
                         "benchmarks/)")
    ap.add_argument("--server-cpus", default=None, metavar="LIST",
                    help="run the embedded server on these CPUs only (taskset's list: 1, 2-15)")
    ap.add_argument("--client-cpus", default=None, metavar="LIST",
                    help="run each client process on these CPUs only (taskset's list: 0, 0,1)")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = ap.parse_args(argv)
    try:
        rows = parse_rows(args.rows)
        clients = parse_clients(args.clients)
        server_cpus = parse_cpus(args.server_cpus)
        client_cpus = parse_cpus(args.client_cpus)
    except ValueError as exc:
        ap.error(str(exc))
    if server_cpus and args.server:
        ap.error("--server-cpus pins the embedded server; with --server, pin that server yourself")
    if args.rounds < 1 or args.scale <= 0:
        ap.error("--rounds must be >= 1 and --scale > 0")
    if args.peers and not os.path.isdir(args.peers):
        ap.error(f"--peers {args.peers}: no such folder")
    folder = None
    for peer in PEER_FILES:
        if peer not in clients:
            continue
        found, why = find_peers(args.peers, peer)
        if found is None:
            if args.clients:  # asked for by name: not a run without it
                ap.error(f"{peer} rows unavailable: {why}")
            print(unavailable_line(why, peer), file=sys.stderr)
            clients.remove(peer)
        else:
            folder = found

    def on_result(rnd: int, r: str, c: str, res: dict[str, Any]) -> None:
        if "error" in res:
            print(f"round {rnd + 1} row {r} {c}: FAILED {res['error']}", file=sys.stderr)
        else:
            print(f"round {rnd + 1} row {r} {c}: {ROWS[r].show(res)}", file=sys.stderr)

    results = run(rows, clients, args.rounds, args.scale, args.server, args.monitor, on_result=on_result,
                  peers=folder, server_cpus=server_cpus, client_cpus=client_cpus)
    summary = summarize(results, args.scale)
    summary.update(pinning(server_cpus, client_cpus))
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print()
        print(format_summary(summary, args.rounds))
    return 1 if summary["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
