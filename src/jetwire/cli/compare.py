"""Side-by-side comparison of jetwire (blocking and asyncio) with nats.go, nats-py and the
raw-socket limit on one server: ``benchmarks/compare.py``'s command line (argparse, plain
text or JSON), a third view of the benchmark engine beside ``jetwire bench compare``.

    python benchmarks/compare.py                  # all rows, 3 rounds, embedded server
    python benchmarks/compare.py --rows a,c --rounds 5 --server nats://127.0.0.1:4222

Each (row, client) runs in its own process (``python -m jetwire.cli.rows``), in turns,
for several rounds, against one fresh embedded server (or ``--server``); the median of
each is reported with the ratios jetwire / nats.go and jetwire / nats-py. A row whose
messages are not all accounted for fails instead of reporting a number, and the run
exits non-zero. The engine is :mod:`._engine` (with the rows of :mod:`._workloads`, the
model of :mod:`._results`, the renderers of :mod:`._render`); the names below stay
importable from here for the scripts in ``benchmarks/``.

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
import json
import os
import sys
from collections.abc import Callable, Mapping

from ._engine import (
    BenchError,
    default_peers,
    find_peers,
    parse_cpus,
    pinned,
    pinning,
    resolve_peers,
    run_compare,
    run_rows,
    run_worker,
    serve,
    unavailable_line,
)
from ._render import render_plain
from ._results import CompareReport, Runs
from ._results import pinning_line as _pin_line
from ._workloads import CLIENTS, PEER_FILES, REFERENCE, ROW_ORDER, ROWS, parse_clients, parse_rows

__all__ = ["CLIENTS", "PEER_FILE", "PEER_FILES", "REFERENCE", "Results", "default_peers", "find_peers", "main",
           "parse_clients", "parse_cpus", "parse_rows", "pinned", "pinning", "pinning_line", "run", "run_worker",
           "summarize", "unavailable_line"]

PEER_FILE = PEER_FILES["nats-py"]
Results = Runs


def run(rows: list[str], clients: list[str], rounds: int = 3, scale: float = 1.0, server: str | None = None,
        monitor: str | None = None,
        on_result: Callable[[int, str, str, dict[str, object]], None] | None = None,
        on_start: Callable[[int, str, str], None] | None = None, peers: str | None = None,
        server_cpus: set[int] | None = None, client_cpus: set[int] | None = None) -> Results:
    """Every (row, client) ``rounds`` times, in turns, on one server (``server``, or a
    fresh embedded one on ``server_cpus``): each run's result (see :func:`summarize`)."""
    with serve(server, monitor, server_cpus) as target:
        return run_rows(target, rows, clients, rounds, scale, on_result=on_result, on_start=on_start, peers=peers,
                        client_cpus=client_cpus)


def summarize(results: Results, scale: float = 1.0) -> dict[str, object]:
    """Medians per (row, client), ratios against nats-py and nats.go (and g against f),
    failures: the JSON form of :class:`._results.CompareReport`.

    ``{"rows": {row: {"title", "kind", "target", "clients": {client: {"median": {...},
    "runs", "failed", "errors"}}, "ratios": {client: x}, "ratios_go": {client: x}}},
    "failed": bool}`` (``ratios``: against nats-py; ``ratios_go``: against nats.go;
    ``ratios_raw``: against the raw-socket limit)
    """
    return CompareReport.of(results, scale).to_json()


def pinning_line(summary: Mapping[str, object]) -> str | None:
    """One line saying where the server and the clients ran (from a summary's
    ``server_cpus``/``client_cpus``), or None when nothing was pinned."""
    srv, cli = summary.get("server_cpus"), summary.get("client_cpus")
    return _pin_line(srv if isinstance(srv, list) else None, cli if isinstance(cli, list) else None)


def _parser(peers: str | None) -> argparse.ArgumentParser:
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
    return ap


def main(argv: list[str] | None = None, peers: str | None = None) -> int:
    """``benchmarks/compare.py`` command line (argparse, plain text); ``peers``: the
    default of ``--peers`` (the script passes its own folder)."""
    ap = _parser(peers)
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
    try:
        folder = resolve_peers(clients, args.peers, bool(args.clients), lambda line: print(line, file=sys.stderr))
    except BenchError as exc:
        ap.error(str(exc))

    def on_result(rnd: int, r: str, c: str, res: dict[str, object]) -> None:
        if "error" in res:
            print(f"round {rnd + 1} row {r} {c}: FAILED {res['error']}", file=sys.stderr)
        else:
            print(f"round {rnd + 1} row {r} {c}: {ROWS[r].show(res)}", file=sys.stderr)

    try:
        rep = run_compare(rows, clients, args.rounds, args.scale, args.server, args.monitor, on_result=on_result,
                          peers=folder, server_cpus=server_cpus, client_cpus=client_cpus)
    except BenchError as exc:  # --server cannot be reached
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(rep.to_json(), indent=2))
    else:
        print()
        print(render_plain(rep))
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main())
