"""``jetwire bench <mode>`` (a multi-process load generator modelled on ``nats bench``) and
``jetwire bench compare`` (the BENCHMARKS.md rows against nats.go, nats-py and the
raw-socket limit): two click views of one benchmark engine.

The workloads are described in :mod:`._workloads`, run by :mod:`._engine` (the server,
the client processes, CPU pinning, timeouts; ``bench <mode>``'s set-up and accounting in
:mod:`._modes`), reported as :mod:`._results` and drawn by :mod:`._render` (rich by
default, ``--plain`` text, ``--json``). A lost message (``bench <mode>``) or a failed row
(``bench compare``) makes the command exit with status 1.
"""
from __future__ import annotations

import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING

import click

from . import _engine, _modes
from ._click import BODY_SIZE, COUNT, DURATION, CliError, JetwireGroup, connection_options, console, echo_json
from ._conn import ConnSettings, comma, connect_kwargs, server_url
from ._render import render_plain, render_rich, write_csv, write_histogram
from ._results import CompareReport, ModeReport
from ._workloads import MODES, PEER_FILES, ROWS, latency_modes, parse_clients, parse_rows

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from ._engine import Counters


class BenchFailed(CliError):
    pass


# =========================================================================== progress (stderr)


class _LiveProgress:
    """rich progress bars on stderr: storing messages first, then one bar per measured
    group fed from the workers' counters. Transient: nothing stays on the terminal."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.prog: Progress | None = None
        self.tasks: dict[str, TaskID] = {}
        self.t0 = time.monotonic()

    def _open(self, *rate: bool) -> Progress:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        cols = [TextColumn("[bold]{task.description:>8}"), BarColumn(), MofNCompleteColumn()]
        if rate:
            cols += [TextColumn("{task.fields[rate]}"), TimeElapsedColumn()]
        prog = Progress(*cols, console=console(stderr=True), transient=True)
        prog.__enter__()
        return prog

    def storing(self, done: int, of: int) -> None:
        if not self.enabled:
            return
        if self.prog is None:
            self.prog = self._open()
            self.tasks["storing"] = self.prog.add_task("storing", total=of)
        self.prog.update(self.tasks["storing"], completed=done)
        if done >= of:
            self.close()

    def tick(self, counters: Counters) -> None:
        if not self.enabled:
            return
        if self.prog is None:
            self.prog = self._open(True)
            for g, _, _ in counters.spans:
                if g.measured:
                    self.tasks[g.name] = self.prog.add_task(g.name, total=max(1, g.total()), rate="")
        dt = max(time.monotonic() - self.t0, 1e-6)
        for g, _, _ in counters.spans:
            if g.name in self.tasks:
                done = counters.done(g)
                self.prog.update(self.tasks[g.name], completed=done, rate=f"{done / dt:,.0f} msgs/s")

    def close(self) -> None:
        if self.prog is not None:
            self.prog.__exit__(None, None, None)
        self.prog = None
        self.tasks = {}

    def __enter__(self) -> _LiveProgress:
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


# =========================================================================== bench <mode>


_PIN_HELP = ("Run the embedded server on these CPUs only (taskset's list form: 1, 2-15).",
             "Run each client process on these CPUs only (taskset's list form: 0, 0,1).")


def bench_options(f: Callable[..., None]) -> Callable[..., None]:
    opts = [
        click.option("--msgs", default=100_000, show_default=True, type=COUNT,
                     help="Messages (or requests, puts, gets) in total."),
        click.option("--size", default="128", show_default=True, type=BODY_SIZE,
                     help="Message size (128, 1KB, 1MiB)."),
        click.option("--pub", "npub", default=1, show_default=True, type=click.IntRange(min=0),
                     help="Publishing clients (processes): publishers, requesters, putters."),
        click.option("--sub", "nsub", default=1, show_default=True, type=click.IntRange(min=0),
                     help="Receiving clients (processes): subscribers, repliers, consumers, getters."),
        click.option("--subject", default="bench", show_default=True, help="Subject (JetStream: the stream's subject)."),
        click.option("--stream", default="benchstream", show_default=True, help="Stream for js-* modes."),
        click.option("--consumer", default="jetwire-bench", show_default=True, help="Durable consumer for js-fetch/js-consume."),
        click.option("--bucket", default="benchbucket", show_default=True, help="Bucket for kv-* modes."),
        click.option("--storage", type=click.Choice(["file", "memory"]), default="file", show_default=True,
                     help="Storage of a stream or bucket created here."),
        click.option("--replicas", default=1, show_default=True, type=click.IntRange(min=1, max=5),
                     help="Replicas of a stream or bucket created here."),
        click.option("--purge", is_flag=True, help="Purge an existing stream first."),
        click.option("--batch", default=500, show_default=True, type=click.IntRange(min=1),
                     help="Fetch batch (js-fetch) / messages buffered (js-consume, js-ordered)."),
        click.option("--window", default=1000, show_default=True, type=click.IntRange(min=1),
                     help="js-pub-async: acks in flight at most, per publisher."),
        click.option("--acks", type=click.Choice(["none", "explicit", "all"]), default="explicit", show_default=True,
                     help="Ack policy of the consumer (js-fetch, js-consume)."),
        click.option("--aio/--sync", "aio", default=False, help="Client flavour: jetwire.aio or blocking jetwire (default)."),
        click.option("--timeout", default="10s", type=DURATION, show_default=True,
                     help="Timeout of each request / JetStream call."),
        click.option("--grace", default="10s", type=DURATION, show_default=True,
                     help="How long receivers wait for missing messages once senders are done."),
        click.option("--server-cpus", default=None, metavar="LIST", help=_PIN_HELP[0]),
        click.option("--client-cpus", default=None, metavar="LIST", help=_PIN_HELP[1]),
        click.option("--json", "as_json", is_flag=True, help="Print the result as JSON (stdout) and nothing else."),
        click.option("--plain", is_flag=True, help="Print the result as plain text (no colours or tables)."),
        click.option("--csv", "csv_path", metavar="FILE", help="Write per-client results as CSV ('-': stdout)."),
        click.option("--histogram", metavar="PNG", help="Plot the latency histogram (needs matplotlib)."),
        click.option("--no-progress", is_flag=True, help="No live progress bar."),
    ]
    for o in reversed(opts):
        f = o(f)
    return connection_options(f)


@click.group("bench", cls=JetwireGroup)
def bench() -> None:
    """Benchmark NATS and JetStream with jetwire clients (like `nats bench`).

    Without --server (or $NATS_URL) an embedded nats-server (JetStream, temporary
    store) is started and stopped. Each client is its own process. A lost message fails
    the run (exit status 1).
    """


def _cpus(kw: dict[str, object], name: str) -> set[int] | None:
    try:
        return _engine.parse_cpus(str(kw.get(name) or ""))
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint=f"--{name.replace('_', '-')}") from None


def mode_settings(mode: str, kw: dict[str, object]) -> _modes.ModeSettings:
    """The engine's settings from ``bench <mode>``'s options (``kw``)."""
    conn = kw["conn"]
    assert isinstance(conn, dict)
    server = server_url(conn["server"]) if conn.get("server") else None
    server_cpus, client_cpus = _cpus(kw, "server_cpus"), _cpus(kw, "client_cpus")
    if server_cpus and server:
        raise click.BadParameter("--server-cpus pins the embedded server; with --server, pin that server yourself")
    opts = {k: kw[k] for k in ("msgs", "size", "subject", "stream", "consumer", "bucket", "storage", "replicas",
                               "purge", "batch", "window", "acks", "timeout", "grace")}
    return _modes.ModeSettings(mode=mode, pub=int(str(kw["npub"])), sub=int(str(kw["nsub"])),
                               flavour="aio" if kw["aio"] else "sync",
                               conn={k: v for k, v in conn.items() if k != "server"}, server=server,
                               server_cpus=server_cpus, client_cpus=client_cpus, **opts)  # type: ignore[arg-type]


def run_bench(mode: str, kw: dict[str, object]) -> dict[str, object]:
    """Run one bench mode (``kw``: the command's options); returns the report's JSON form."""
    if kw.get("histogram"):
        if not MODES[mode].latency:
            raise click.UsageError(f"--histogram needs a mode with latencies ({', '.join(latency_modes())})")
        _need_matplotlib()
    settings = mode_settings(mode, kw)
    quiet = bool(kw["as_json"])

    show = not kw.get("no_progress") and not quiet and sys.stderr.isatty()
    live = _LiveProgress(show)

    def started(waiting: bool) -> None:
        live.t0 = time.monotonic()  # the clients start now
        if waiting and not quiet:
            peer = "publishers" if mode == "sub" else "requesters"
            click.echo(f"ready: waiting for {comma(settings.msgs)} messages on {settings.subject!r} from "
                       f"{peer} elsewhere", err=True)
            sys.stderr.flush()

    try:
        with live:
            rep = _modes.run_mode(settings, _modes.Hooks(on_started=started, on_tick=live.tick, storing=live.storing))
    except _modes.UsageError as exc:
        raise click.UsageError(str(exc)) from None
    except _engine.BenchError as exc:
        raise BenchFailed(str(exc)) from None
    _show_mode(rep, kw)
    if not rep.accounted:
        raise BenchFailed("messages not accounted for: " + "; ".join(c.text for c in rep.checks if not c.ok))
    return rep.to_json()


def _show_mode(rep: ModeReport, kw: dict[str, object]) -> None:
    csv_path, histogram = kw.get("csv_path"), kw.get("histogram")
    if csv_path:
        text = write_csv(rep)
        if csv_path == "-":
            click.echo(text, nl=False)
        else:
            with open(str(csv_path), "w", newline="", encoding="utf-8") as f:
                f.write(text)
    if histogram:
        write_histogram(rep, str(histogram))
    if kw["as_json"]:
        echo_json(rep.to_json())
    elif csv_path != "-":
        if kw.get("plain"):
            click.echo(render_plain(rep))
        else:
            render_rich(rep, console())
        if histogram:
            click.echo(f"latency histogram written to {histogram}")


def _need_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise CliError("--histogram needs matplotlib: pip install 'jetwire[plot]'") from None


def _make_mode_command(mode: str, group: click.Group = bench, name: str | None = None) -> None:
    @group.command(name or mode, help=MODES[mode].help)
    @bench_options
    def _cmd(**kw: object) -> None:
        run_bench(mode, kw)


for _mode in MODES:
    _make_mode_command(_mode)


@bench.group("kv")
def bench_kv() -> None:
    """Key-value benchmarks as the nats CLI names them: 'bench kv put' and 'bench kv get'
    (the same as 'kv-put' and 'kv-get')."""


_make_mode_command("kv-put", bench_kv, "put")
_make_mode_command("kv-get", bench_kv, "get")


# =========================================================================== bench compare


@bench.command("compare")
@click.option("--rows", default="a,b,c,d,e,f,f2,g,h", show_default=True,
              help="Benchmark rows (comma separated, or 'all'; docs/performance.md describes them).")
@click.option("--rounds", default=3, show_default=True, type=click.IntRange(min=1), help="Rounds (medians are reported).")
@click.option("--scale", default=1.0, show_default=True, type=click.FloatRange(min=0.0001),
              help="Multiply the rows' message counts (0.05 for a smoke run).")
@click.option("--clients", default=None,
              help="Clients to run (default: jetwire,jetwire.aio,nats.go,nats-py,raw when available).")
@click.option("--peers", default=None, metavar="DIR", envvar="JETWIRE_BENCH_PEERS",
              type=click.Path(exists=True, file_okay=False),
              help="Folder holding the peers' rows, natspy_rows.py, natsgo_rows.py and raw_rows.py (default: the "
                   "benchmarks/ folder of the source checkout; they are not in the package).")
@click.option("--monitor", default=None, metavar="URL", help="Monitoring URL of --server (row a accounting).")
@click.option("--server-cpus", default=None, metavar="LIST", help=_PIN_HELP[0])
@click.option("--client-cpus", default=None, metavar="LIST", help=_PIN_HELP[1])
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--plain", is_flag=True, help="Print the summary as plain text (no colours or tables).")
@connection_options
def compare_cmd(conn: ConnSettings, rows: str, rounds: int, scale: float, clients: str | None, peers: str | None,
                monitor: str | None, server_cpus: str | None, client_cpus: str | None, as_json: bool,
                plain: bool = False) -> None:
    """Run the benchmark rows for jetwire (both flavours), nats.go and nats-py, each in
    its own process, in turns, on one server; print medians and ratios.

    The server is --server (or $NATS_URL), else a fresh embedded one, as for the other
    bench commands; a server given that cannot be reached fails the run at once. Its auth
    and TLS settings reach jetwire's rows; the peers' rows take only the URL, so they are
    left out when such settings are given.

    jetwire's rows come with the package; the peers' are benchmarks/natspy_rows.py (needs
    nats-py) and benchmarks/natsgo_rows.py (needs go and Debian's nats.go: apt-get install
    golang-go golang-github-nats-io-go-nats-dev) in a source checkout (--peers). A peer
    that cannot run is left out with one line saying why. --server-cpus 1 --client-cpus 0
    measures across cores on a small machine (the many-core proxy)."""
    rep = run_compare_view(conn, rows, rounds, scale, clients, peers, monitor, server_cpus, client_cpus, as_json,
                           plain)
    if rep.failed:
        raise CliError("some rows failed (see above)")


#: why the peers' rows cannot run with auth or TLS settings
PEERS_NO_AUTH = "the peers' rows take only the server's URL, not its auth or TLS settings"


def run_compare_view(conn: ConnSettings, rows: str, rounds: int, scale: float, clients: str | None = None,
                     peers: str | None = None, monitor: str | None = None, server_cpus: str | None = None,
                     client_cpus: str | None = None, as_json: bool = False, plain: bool = False) -> CompareReport:
    """``bench compare`` with ``conn`` (the connection settings; no server: a fresh
    embedded one): progress on stderr, the report on stdout; returns the report."""
    server = server_url(conn["server"]) if conn.get("server") else None
    settings: ConnSettings = {k: v for k, v in conn.items() if k != "server" and v} if server else {}
    try:
        row_list, client_list = parse_rows(rows), parse_clients(clients)
        srv_cpus, cli_cpus = _engine.parse_cpus(server_cpus), _engine.parse_cpus(client_cpus)
        if settings:
            connect_kwargs(settings)  # (--tls-cert without --tls-key)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    if srv_cpus and server:
        raise click.BadParameter("--server-cpus pins the embedded server; with --server, pin that server yourself")
    err = console(stderr=True)
    for peer in [c for c in client_list if c in PEER_FILES] if settings else []:
        if clients:
            raise CliError(f"{peer} rows unavailable: {PEERS_NO_AUTH}")
        client_list.remove(peer)
        click.echo(_engine.unavailable_line(PEERS_NO_AUTH, peer), err=True)
    try:
        folder = _engine.resolve_peers(client_list, peers, bool(clients), lambda line: click.echo(line, err=True))
    except _engine.BenchError as exc:
        raise CliError(str(exc)) from None
    status = err.status("starting") if not as_json and sys.stderr.isatty() else None

    def on_start(rnd: int, r: str, c: str) -> None:
        if status is not None:
            status.update(f"round {rnd + 1}/{rounds}  row {r}  {c}")

    def on_result(rnd: int, r: str, c: str, res: dict[str, object]) -> None:
        if as_json:
            return
        if "error" in res:
            err.print(f"round {rnd + 1} row {r:2s} {c:12s} [bold red]FAILED[/bold red] {res['error']}")
        else:
            err.print(f"round {rnd + 1} row {r:2s} {c:12s} {ROWS[r].show(res)}")

    if status is not None:
        status.__enter__()
    try:
        rep = _engine.run_compare(row_list, client_list, rounds, scale, server, monitor, on_result=on_result,
                                  on_start=on_start, peers=folder, server_cpus=srv_cpus, client_cpus=cli_cpus,
                                  conn=settings)
    except _engine.BenchError as exc:  # the server cannot be reached
        raise CliError(str(exc)) from None
    finally:
        if status is not None:
            status.__exit__(None, None, None)
    if as_json:
        echo_json(rep.to_json())
    elif plain:
        click.echo(render_plain(rep))
    else:
        render_rich(rep, console())
    return rep


def failed_clients(summary: dict[str, object] | CompareReport) -> list[str]:
    """``row/client`` of every failed run in a compare summary (its JSON form or the report)."""
    if isinstance(summary, CompareReport):
        return summary.failed_clients()
    rows = summary["rows"]
    assert isinstance(rows, dict)
    return [f"{r}/{c}" for r, row in rows.items() for c, v in row["clients"].items() if v["failed"]]
