"""Side-by-side comparison of jetwire (blocking and asyncio) with nats-py on one server.

One implementation behind both ``jetwire bench compare`` and ``benchmarks/compare.py``:

    python benchmarks/compare.py                  # all rows, 3 rounds, embedded server
    python benchmarks/compare.py --rows a,c --rounds 5 --server nats://127.0.0.1:4222

Each (row, client) runs in its own process (``python -m jetwire.cli.rows``), in turns,
for several rounds, against one fresh embedded server (or ``--server``); the median of
each is reported with the ratio jetwire / nats-py. Rows are those of BENCHMARKS.md. A
row whose messages are not all accounted for fails instead of reporting a number, and
the run exits non-zero.

jetwire's rows come from this package. The peer's (nats-py) are not part of it: they are
``natspy_rows.py`` in a ``benchmarks/`` folder (``--peers DIR``; by default
``$JETWIRE_BENCH_PEERS``, else the ``benchmarks/`` of the source checkout jetwire runs
from) and need nats-py installed. Without them one line says why, and jetwire's rows
run alone.

No click or rich here.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
from typing import Any, Callable, Dict, List, Optional, Tuple

from ._stats import median
from .rows import ROW_ORDER, ROWS, supported

CLIENTS = ["jetwire", "jetwire.aio", "nats-py"]


PEER_FILE = "natspy_rows.py"


def default_peers() -> Optional[str]:
    """``$JETWIRE_BENCH_PEERS``, else the ``benchmarks/`` folder of the source checkout
    this package runs from (an editable install), else None (an installed wheel)."""
    env = os.environ.get("JETWIRE_BENCH_PEERS")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))  # <checkout>/src/jetwire/cli
    cand = os.path.normpath(os.path.join(here, "..", "..", "..", "benchmarks"))
    return cand if os.path.isfile(os.path.join(cand, PEER_FILE)) else None


def find_peers(peers: Optional[str] = None) -> Tuple[Optional[str], str]:
    """``(folder, "")`` when the nats-py rows can run: ``peers`` (or :func:`default_peers`)
    holds ``natspy_rows.py`` and nats-py is installed; else ``(None, why not)``."""
    folder = peers or default_peers()
    if folder is None:
        return None, (f"no benchmarks/{PEER_FILE} (they are not in the jetwire package: run from a "
                      "source checkout, or pass --peers DIR)")
    if not os.path.isfile(os.path.join(folder, PEER_FILE)):
        return None, f"no {PEER_FILE} in {folder}"
    try:
        found = importlib.util.find_spec("nats") is not None and importlib.util.find_spec("nats.js") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        return None, "nats-py is not installed (pip install nats-py)"
    return os.path.abspath(folder), ""


def unavailable_line(why: str) -> str:
    """The one line printed when the nats-py rows cannot run."""
    return f"nats-py rows unavailable: {why}; running jetwire's rows only"


def parse_rows(text: str) -> List[str]:
    rows = [r.strip().lower() for r in text.split(",") if r.strip()]
    if not rows or rows == ["all"]:
        return list(ROW_ORDER)
    unknown = [r for r in rows if r not in ROWS]
    if unknown:
        raise ValueError(f"unknown row {unknown[0]!r}; known: {', '.join(ROW_ORDER)}")
    return rows


def parse_clients(text: Optional[str]) -> List[str]:
    clients = [c.strip() for c in (text or ",".join(CLIENTS)).split(",") if c.strip()]
    unknown = [c for c in clients if c not in CLIENTS]
    if unknown:
        raise ValueError(f"unknown client {unknown[0]!r}; known: {', '.join(CLIENTS)}")
    return clients


def run_worker(row: str, client: str, url: str, monitor: str, scale: float, timeout: float = 600,
               peers: Optional[str] = None) -> Dict[str, Any]:
    """One row for one client in a fresh process; ``{"error": ...}`` when it failed
    (``peers``: the folder of the nats-py rows, see :func:`find_peers`)."""
    if client == "nats-py":
        folder, why = find_peers(peers)
        if folder is None:
            return {"error": why}
        cmd = [sys.executable, os.path.join(folder, PEER_FILE)]
    else:
        cmd = [sys.executable, "-m", "jetwire.cli.rows"]
    cmd += [row, client, url, monitor or "", repr(scale)]
    try:
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


Results = Dict[str, Dict[str, List[Dict[str, Any]]]]


def run(rows: List[str], clients: List[str], rounds: int = 3, scale: float = 1.0, server: Optional[str] = None,
        monitor: Optional[str] = None,
        on_result: Optional[Callable[[int, str, str, Dict[str, Any]], None]] = None,
        on_start: Optional[Callable[[int, str, str], None]] = None, peers: Optional[str] = None) -> Results:
    """Run every (row, client) ``rounds`` times, in turns, on one server.

    Without ``server`` one fresh embedded nats-server (JetStream, file storage) is
    started for the whole run and stopped afterwards. (row, client) pairs with no
    implementation (nats-py has no row g) are left out. ``peers``: the folder of the
    nats-py rows (see :func:`find_peers`).
    """
    srv = None
    if server:
        url, mon = server, monitor or ""
    else:
        from ..testing import NatsServer

        srv = NatsServer()
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
                    res = run_worker(r, c, url, mon, scale, peers=peers)
                    results[r][c].append(res)
                    if on_result:
                        on_result(rnd, r, c, res)
    finally:
        if srv is not None:
            srv.stop()
    return results


def summarize(results: Results, scale: float = 1.0) -> Dict[str, Any]:
    """Medians per (row, client), ratios against nats-py (and g against f), failures.

    ``{"rows": {row: {"title", "kind", "target", "clients": {client: {"median": {...},
    "runs", "failed", "errors"}}, "ratios": {client: x}}}, "failed": bool}``
    """
    out: Dict[str, Any] = {"rows": {}, "failed": False}
    for r, per_client in results.items():
        spec = ROWS[r]
        row_out: Dict[str, Any] = {"title": spec.title, "short": spec.short, "kind": spec.kind,
                                   "target": spec.target, "clients": {}, "ratios": {}}
        for c, runs in per_client.items():
            ok = [x for x in runs if "error" not in x]
            errors = [x["error"] for x in runs if "error" in x]
            if errors:
                out["failed"] = True
            med = None
            if ok:
                med = {k: median([x[k] for x in ok]) for k in ok[0] if isinstance(ok[0][k], (int, float))}
            row_out["clients"][c] = {"median": med, "runs": len(runs), "failed": len(errors), "errors": errors}
        base = (row_out["clients"].get("nats-py") or {}).get("median")
        for c, v in row_out["clients"].items():
            if c != "nats-py" and base and v["median"]:
                row_out["ratios"][c] = spec.ratio(v["median"], base)
                p50 = spec.p50_ratio(v["median"], base)
                if p50 is not None:
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


def format_summary(summary: Dict[str, Any], rounds: int) -> str:
    """Plain-text report (``benchmarks/compare.py``; the CLI draws a rich table instead)."""
    lines = [f"medians over {rounds} round(s); ratio = how many times better than nats-py "
             "(rates: jetwire/nats-py, latency: nats-py p50 / jetwire p50; service rows: the request "
             "rate's ratio, and p50 as a fraction of nats-py's)"]
    for r, row in summary["rows"].items():
        spec = ROWS[r]
        lines.append("")
        lines.append(f"[{r}] {row['title']}   (target {row['target']})")
        for c, v in row["clients"].items():
            if v["median"] is None:
                lines.append(f"  {c:12s} FAILED: {v['errors'][-1] if v['errors'] else 'no result'}")
                continue
            line = f"  {c:12s} {spec.show(v['median'])}"
            if c in row["ratios"]:
                line += f"   ratio {row['ratios'][c]:.2f}x"
            if c in row.get("p50_ratios", {}):
                line += f"   p50 {row['p50_ratios'][c]:.2f}x of nats-py"
            if c in row.get("vs_f", {}):
                line += f"   g/f {row['vs_f'][c]:.2f}x"
            if v["failed"]:
                line += f"   ({v['failed']} of {v['runs']} runs FAILED)"
            lines.append(line)
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None, peers: Optional[str] = None) -> int:
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
                    help=f"folder holding {PEER_FILE} (default: the checkout's benchmarks/)")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = ap.parse_args(argv)
    try:
        rows = parse_rows(args.rows)
        clients = parse_clients(args.clients)
    except ValueError as exc:
        ap.error(str(exc))
    if args.rounds < 1 or args.scale <= 0:
        ap.error("--rounds must be >= 1 and --scale > 0")
    if args.peers and not os.path.isdir(args.peers):
        ap.error(f"--peers {args.peers}: no such folder")
    folder = None
    if "nats-py" in clients:
        folder, why = find_peers(args.peers)
        if folder is None:
            if args.clients:  # asked for by name: not a run without it
                ap.error(f"nats-py rows unavailable: {why}")
            print(unavailable_line(why), file=sys.stderr)
            clients.remove("nats-py")

    def on_result(rnd: int, r: str, c: str, res: Dict[str, Any]) -> None:
        if "error" in res:
            print(f"round {rnd + 1} row {r} {c}: FAILED {res['error']}", file=sys.stderr)
        else:
            print(f"round {rnd + 1} row {r} {c}: {ROWS[r].show(res)}", file=sys.stderr)

    results = run(rows, clients, args.rounds, args.scale, args.server, args.monitor, on_result=on_result,
                  peers=folder)
    summary = summarize(results, args.scale)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print()
        print(format_summary(summary, args.rounds))
    return 1 if summary["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
