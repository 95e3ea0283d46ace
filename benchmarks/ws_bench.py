"""Rows a and b (BENCHMARKS.md) over WebSocket next to TCP, both jetwire flavours, on one
embedded nats-server with a websocket listener:

    python benchmarks/ws_bench.py                 # rows a,b, 3 rounds
    python benchmarks/ws_bench.py --rows a --rounds 5 --scale 0.2

Each (row, client, transport) runs in its own process through the comparison harness
(``jetwire.cli.compare``), in turns; the medians are printed with ws / tcp.
"""
from __future__ import annotations

import argparse
import sys

from jetwire.cli.compare import parse_rows, run, summarize
from jetwire.cli.rows import ROWS
from jetwire.testing import NatsServer

CLIENTS = ["jetwire", "jetwire.aio"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--rows", default="a,b")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--scale", type=float, default=1.0, help="multiply message counts")
    args = ap.parse_args(argv)
    rows = parse_rows(args.rows)
    srv = NatsServer(websocket=True)
    srv.start()
    results: dict[str, dict] = {"tcp": {}, "ws": {}}
    try:
        for rnd in range(args.rounds):  # tcp and ws in turns, so that drift hits both
            for transport, url in (("tcp", srv.url), ("ws", srv.ws_url)):
                def on_result(_: int, r: str, c: str, res: dict, transport: str = transport) -> None:
                    shown = f"FAILED {res['error']}" if "error" in res else ROWS[r].show(res)
                    print(f"round {rnd + 1} row {r} {c:12s} {transport}: {shown}", file=sys.stderr)

                got = run(rows, CLIENTS, 1, args.scale, url, srv.monitor_url, on_result=on_result)
                for r, per_client in got.items():
                    for c, runs in per_client.items():
                        results[transport].setdefault(r, {}).setdefault(c, []).extend(runs)
    finally:
        srv.stop()
    medians = {t: summarize(res, args.scale) for t, res in results.items()}
    failed = any(m["failed"] for m in medians.values())
    medians = {t: m["rows"] for t, m in medians.items()}
    print(f"\nmedians over {args.rounds} round(s), scale {args.scale}")
    print(f"{'row':4s} {'client':12s} {'tcp':>24s} {'ws':>24s} {'ws/tcp':>7s}")
    for r in rows:
        spec = ROWS[r]
        for c in CLIENTS:
            tcp = medians["tcp"][r]["clients"][c]["median"]
            ws = medians["ws"][r]["clients"][c]["median"]
            if tcp is None or ws is None:
                print(f"{r:4s} {c:12s} FAILED")
                continue
            print(f"{r:4s} {c:12s} {spec.show(tcp):>24s} {spec.show(ws):>24s} {spec.ratio(ws, tcp):7.2f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
