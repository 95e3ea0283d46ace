"""Side-by-side comparison of jetwire (blocking and asyncio) with nats-py on one server.

    python benchmarks/compare.py                  # rows a b c, 3 rounds, embedded server
    python benchmarks/compare.py --rows a,c --rounds 5 --server nats://127.0.0.1:4222

Each (row, client) runs in its own process, in turns, for several rounds; the parent
prints the median of each and the ratio jetwire/nats-py. Rows are those of
shared BENCHMARKS.md. A row whose messages are not all accounted for fails instead of
reporting a number.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from typing import Any, Callable, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from rows import ROWS  # noqa: E402

CLIENTS = ["jetwire", "jetwire.aio", "nats-py"]


def have_nats_py() -> bool:
    try:
        import nats  # noqa: F401
    except ImportError:
        return False
    return True


def run_worker(row: str, client: str, url: str, monitor: str, scale: float) -> Dict[str, Any]:
    cmd = [sys.executable, os.path.join(HERE, "rows.py"), row, client, url, monitor, str(scale)]
    env = dict(os.environ)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    if out.returncode != 0:
        return {"error": (out.stderr or out.stdout).strip().splitlines()[-1] if (out.stderr or out.stdout) else "failed"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: List[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="a,b,c")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--clients", default=",".join(CLIENTS))
    ap.add_argument("--server", default=None, help="URL of a running server (default: embedded)")
    ap.add_argument("--monitor", default=None, help="monitoring URL of --server (for row a accounting)")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply message counts (e.g. 0.1 for a smoke run)")
    ap.add_argument("--json", action="store_true", help="print results as JSON")
    args = ap.parse_args(argv)

    rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    clients = [c.strip() for c in args.clients.split(",") if c.strip()]
    if "nats-py" in clients and not have_nats_py():
        print("nats-py is not installed: comparing jetwire flavours only", file=sys.stderr)
        clients.remove("nats-py")
    for r in rows:
        if r not in ROWS:
            ap.error(f"unknown row {r!r}; known: {', '.join(sorted(ROWS))}")

    server = None
    if args.server:
        url, monitor = args.server, args.monitor or ""
    else:
        from jetwire.testing import NatsServer

        server = NatsServer()
        server.start()
        url, monitor = server.url, server.monitor_url
    results: Dict[str, Dict[str, List[Dict[str, Any]]]] = {r: {c: [] for c in clients} for r in rows}
    try:
        for rnd in range(args.rounds):
            for r in rows:
                for c in clients:
                    res = run_worker(r, c, url, monitor, args.scale)
                    results[r][c].append(res)
                    if "error" in res:
                        print(f"round {rnd + 1} row {r} {c}: FAILED {res['error']}", file=sys.stderr)
                    else:
                        print(f"round {rnd + 1} row {r} {c}: {ROWS[r].show(res)}", file=sys.stderr)
    finally:
        if server is not None:
            server.stop()

    summary: Dict[str, Any] = {}
    failed = False
    for r in rows:
        spec = ROWS[r]
        summary[r] = {}
        for c in clients:
            runs = [x for x in results[r][c] if "error" not in x]
            if len(runs) != len(results[r][c]):
                failed = True
            if not runs:
                summary[r][c] = None
                continue
            summary[r][c] = {k: statistics.median(x[k] for x in runs) for k in runs[0] if isinstance(runs[0][k], (int, float))}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"\nmedians over {args.rounds} round(s); ratio = jetwire / nats-py (for latency: nats-py / jetwire... shown as x faster)")
        for r in rows:
            spec = ROWS[r]
            base = summary[r].get("nats-py")
            print(f"\n[{r}] {spec.title}")
            for c in clients:
                s = summary[r][c]
                if s is None:
                    print(f"  {c:12s} FAILED")
                    continue
                line = f"  {c:12s} {spec.show(s)}"
                if base and c != "nats-py":
                    line += f"   ratio {spec.ratio(s, base):.2f}x"
                print(line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
