"""``jetwire demo``: a few-seconds tour for the README's first command.

Starts one embedded nats-server and runs short ``jetwire bench`` modes on it (pub,
pubsub, request, js-pub-async, js-fetch), then a ``bench compare`` smoke run
(``--scale 0.05 --rounds 1``) against nats-py when it is installed, printing every
table. Any lost message or failed row makes the demo exit non-zero.
"""
from __future__ import annotations

import sys
import time
from typing import Any

import click

from ._click import CliError, console

TOUR = [
    ("pub", {"msgs": 200_000, "size": 16}),
    ("pubsub", {"msgs": 100_000, "size": 16}),
    ("request", {"msgs": 2_000, "size": 16}),
    ("js-pub-async", {"msgs": 20_000, "size": 128}),
    ("js-fetch", {"msgs": 20_000, "size": 128, "batch": 500}),
]


def _bench_kwargs(server_url: str, msgs: int, size: int, batch: int = 500, aio: bool = False) -> dict[str, Any]:
    return {
        "conn": {"server": server_url}, "msgs": msgs, "size": size, "npub": 1, "nsub": 1, "subject": "demo.bench",
        "stream": "DEMO", "consumer": "demo", "bucket": "demo", "storage": "file", "replicas": 1, "purge": False,
        "batch": batch, "window": 1000, "acks": "explicit", "aio": aio, "timeout": 10.0, "grace": 10.0,
        "as_json": False, "csv_path": None, "histogram": None, "no_progress": True,
    }


@click.command("demo")
@click.option("--scale", default=1.0, type=click.FloatRange(min=0.001), show_default=True,
              help="Multiply the tour's message counts.")
@click.option("--no-compare", is_flag=True, help="Skip the bench compare smoke run.")
@click.option("--rows", default="a,b,c,d,e,f,f2,g,h", show_default=True, help="Rows for the compare smoke run.")
def demo(scale: float, no_compare: bool, rows: str) -> None:
    """Start an embedded nats-server, run a short benchmark tour and a compare smoke run."""
    from ..testing import NatsServer
    from .bench import run_bench

    con = console()
    t0 = time.monotonic()
    failures: list[str] = []
    with NatsServer() as srv:
        con.rule(f"[bold]jetwire demo[/bold]: embedded nats-server at {srv.url}")
        for mode, p in TOUR:
            kw = _bench_kwargs(srv.url, max(10, int(p["msgs"] * scale)), p["size"], p.get("batch", 500))
            con.print()
            con.print(f"[dim]$ jetwire bench {mode} --msgs {kw['msgs']} --size {kw['size']}[/dim]")
            try:
                run_bench(mode, kw)
            except click.ClickException as exc:
                failures.append(f"bench {mode}: {exc.format_message()}")
                con.print(f"[bold red]FAILED[/bold red] {exc.format_message()}")
    if not no_compare:
        con.print()
        con.rule("[bold]jetwire bench compare --scale 0.05 --rounds 1[/bold]")
        from .bench import run_compare_view

        report = None
        try:  # on a fresh embedded server of its own, whatever $NATS_URL says
            report = run_compare_view({}, rows, rounds=1, scale=0.05 * scale)
        except click.ClickException as exc:
            failures.append(f"bench compare: {exc.format_message()}")
        if report is not None:
            failed = report.failed_clients()
            ours = [f for f in failed if f.split("/")[-1].startswith("jetwire")]
            if ours:
                failures.append(f"bench compare: jetwire rows failed: {', '.join(ours)}")
            elif failed:  # a peer's trouble is reported, not the demo's failure
                con.print(f"[yellow]note:[/yellow] peer rows failed: {', '.join(failed)} (see above)")
        con.print("[dim]A smoke run (a small fraction of the counts, one round), so expect noise: "
                  "`jetwire bench compare` runs the full rows, 3 rounds.[/dim]")
    con.print()
    took = time.monotonic() - t0
    if failures:
        con.print(f"demo finished in {took:.1f}s with failures (below)")
        raise CliError("; ".join(failures))
    modes = ", ".join(mode for mode, _ in TOUR)
    con.print(f"demo finished in {took:.1f}s: jetwire ran {modes} against an embedded nats-server"
              + ("" if no_compare else ", then compared itself with the other clients row by row")
              + "; every message was accounted for.")
    con.print("Next: `bash .ci/run` runs the test suite; `jetwire --help` lists the commands.")
    sys.stdout.flush()
