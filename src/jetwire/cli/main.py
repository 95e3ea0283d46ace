"""The ``jetwire`` command (console script and ``python -m jetwire``)."""
from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType

import click

from ._click import JetwireGroup, connection_options
from ._conn import ConnSettings


def _version() -> str:
    import jetwire

    try:
        from jetwire._impl import speedups_enabled

        impl = "compiled" if speedups_enabled() else "pure Python"
    except Exception:  # pragma: no cover
        impl = "unknown"
    return f"jetwire {jetwire.__version__} (protocol core: {impl}, Python {sys.version.split()[0]})"


def _print_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    click.echo(_version())
    ctx.exit()


@click.group(cls=JetwireGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the version and exit.")
@connection_options
def cli(conn: ConnSettings) -> None:
    """jetwire: a fast NATS and JetStream client for Python, from the command line.

    Connection options (--server, auth, TLS) may be given here or after any command;
    --server defaults to $NATS_URL, then nats://127.0.0.1:4222; the other settings
    also come from the `nats` CLI's variables (NATS_USER, NATS_PASSWORD, NATS_TOKEN,
    NATS_CREDS, NATS_NKEY, NATS_CA, NATS_CERT, NATS_KEY).

    \b
    jetwire demo                       a few-seconds tour on an embedded server
    jetwire server                     run nats-server (JetStream) from the wheel
    jetwire bench pubsub --msgs 1e5    load generator, like `nats bench`
    jetwire bench compare              jetwire vs nats.go and nats-py, row by row
    jetwire stream ls                  streams, consumers, kv, object stores
    jetwire pub|sub|req|reply|events   core NATS and JetStream advisories
    jetwire micro ls|info|stats        services (the NATS service API)
    """
    click.get_current_context().meta["jetwire.conn"] = {k: v for k, v in conn.items() if v is not None}


def _register() -> None:
    from .backup import register as register_backup
    from .bench import bench
    from .cluster import server_cluster
    from .consumer import consumer
    from .core import pub, reply, req, sub
    from .demo import demo
    from .events import events
    from .kv import kv
    from .micro import micro
    from .objects import object_
    from .server import server
    from .stream import stream

    server.add_command(server_cluster)  # jetwire server cluster step-down
    cli.add_command(server)
    cli.add_command(bench)
    for c in (stream, consumer, kv, object_, pub, sub, req, reply, events):
        cli.add_command(c)
    cli.add_command(demo)
    cli.add_command(micro)  # jetwire micro ls|info|stats
    register_backup(cli)  # jetwire stream backup / restore


_register()


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread: the command unwinds as from Ctrl-C
    (its ``finally`` blocks stop the servers and processes it started) and exits with
    128 + the signal's number."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


#: the signals that stop a command the way Ctrl-C does
TERMINATING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


@contextlib.contextmanager
def terminating_unwinds() -> Iterator[list[int]]:
    """For the block (in the main thread only): SIGTERM and SIGHUP raise
    :class:`Terminated`, once; a second one while the command unwinds is ignored, so
    the clean-up is not cut short (SIGKILL still ends it). A signal whose disposition
    is not the default (``nohup``'s ignored SIGHUP, an embedding program's handler) is
    left alone. Yields the list the signal received is appended to."""
    got: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield got
        return

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if got:
            return
        got.append(signum)
        raise Terminated(signum)

    old: dict[int, object] = {}
    for sig in TERMINATING:
        try:
            if signal.getsignal(sig) is signal.SIG_DFL:
                old[sig] = signal.signal(sig, on_signal)
        except (OSError, ValueError):  # pragma: no cover - not settable here
            pass
    if old and hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, set(old))  # a mask is inherited: hear them
    try:
        yield got
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point; returns the exit status (128 + the signal's number
    when SIGTERM or SIGHUP stopped the command)."""
    with terminating_unwinds() as got:
        code = _run(argv)
    return 128 + got[0] if got else code


def _run(argv: list[str] | None) -> int:
    try:
        cli.main(args=argv, prog_name="jetwire", standalone_mode=True)
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        click.echo(str(code), err=True)
        return 1
    except KeyboardInterrupt:  # (one outside the commands, which turn theirs into status 130)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
