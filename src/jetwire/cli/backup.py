"""``jetwire stream backup`` and ``jetwire stream restore``: ``js.snapshot_stream()`` and
``js.restore_stream()`` with a progress bar (bytes, rate, ETA) on stderr and a one-line
summary per stream. ``--all`` backs up every stream of the account (one subdirectory
each, named after the stream) and restores every backup found in such a directory."""
from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import click

from ._click import DURATION, SIZE, CliError, connected, connection_options, console, one_line
from ._conn import ConnSettings, comma, human_bytes, human_duration

if TYPE_CHECKING:
    from jetwire import Client
    from jetwire._sync.jetstream import JetStream


def _rate(nbytes: int, seconds: float) -> str:
    return f"{human_bytes(nbytes / seconds)}/s" if seconds > 0 else "-"


def _count(n: int, what: str) -> str:
    return f"{comma(n)} {what}" + ("" if n == 1 else "s")


def _took(seconds: float) -> str:
    return f"{seconds:.2f}s" if seconds < 60 else human_duration(seconds)


class _Bar:
    """A rich progress bar on stderr (bytes, rate, ETA) for one transfer, gone when it
    ends (the summary line follows); a no-op when disabled."""

    def __init__(self, enabled: bool, description: str) -> None:
        self.prog: Any = None
        self.progress: Callable[[int, int | None], None] = _nothing
        if not enabled:
            return
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        prog = self.prog = Progress(TextColumn("[bold]{task.description}"), BarColumn(), DownloadColumn(),
                                    TransferSpeedColumn(), TimeRemainingColumn(), console=console(stderr=True),
                                    transient=True)
        task = prog.add_task(description, total=None)

        def progress(done: int, total: int | None) -> None:
            if total is not None:
                done = min(done, total)  # a snapshot counts uncompressed bytes: close to the total
            prog.update(task, completed=done, total=total)

        self.progress = progress

    def __enter__(self) -> Callable[[int, int | None], None]:
        if self.prog is not None:
            self.prog.__enter__()
        return self.progress

    def __exit__(self, *exc: object) -> None:
        if self.prog is not None:
            self.prog.__exit__(*exc)


def _nothing(done: int, total: int | None) -> None:
    return None


def _show_bar(flag: bool | None) -> bool:
    return sys.stderr.isatty() if flag is None else flag


def _js(nc: Client, timeout: float) -> JetStream:
    return nc.jetstream(timeout=timeout)


def _backup_one(js: JetStream, bar: bool, name: str, dest: str, chunk_size: int, check: bool) -> None:
    t0 = time.monotonic()
    with _Bar(bar, name) as progress:
        res = js.snapshot_stream(name, dest, chunk_size=chunk_size, check_msgs=check, progress=progress)
    took = time.monotonic() - t0
    click.echo(f"Backed up stream {name} to {dest}: {human_bytes(res.bytes)} in {comma(res.chunks)} chunks "
               f"in {_took(took)} ({_rate(res.bytes, took)})")


def _restore_one(js: JetStream, bar: bool, src: str, name: str | None) -> None:
    t0 = time.monotonic()
    sent = [0]

    with _Bar(bar, name or os.path.basename(os.path.normpath(src))) as progress:
        def track(done: int, total: int | None) -> None:
            sent[0] = done
            progress(done, total)

        info = js.restore_stream(src, name=name, progress=track)
    size = sent[0]
    took = time.monotonic() - t0
    st = info.state
    click.echo(f"Restored stream {info.config.name} from {src}: {comma(st.messages)} messages, "
               f"{human_bytes(st.bytes)}, {_count(st.consumer_count, 'consumer')} in {_took(took)} "
               f"({_rate(size, took)})")


def _each(items: list[tuple[str, Callable[[], None]]], what: str) -> None:
    """Run every job; report the failures at the end (exit status 1 when any failed)."""
    failed = []
    for label, job in items:
        try:
            job()
        except Exception as exc:
            failed.append(f"{label} ({one_line(exc)})")
            click.echo(f"error: {label}: {one_line(exc)}", err=True)
    if failed:
        raise CliError(f"{len(failed)} of {len(items)} {what} failed: {', '.join(failed)}")
    click.echo(f"{len(items)} {what} done")


progress_option = click.option("--progress/--no-progress", "show_progress", default=None,
                               help="Show a progress bar (default: when stderr is a terminal).")
timeout_option = click.option("--timeout", type=DURATION, default=10.0, show_default=True,
                              help="How long to wait for each answer of the server (90, 1.5, 500ms, 1m30s).")


@click.command("backup")
@click.argument("args", nargs=-1, metavar="NAME DIR | --all DIR")
@click.option("--all", "all_streams", is_flag=True, help="Every stream, one subdirectory of DIR each.")
@click.option("--chunk-size", type=SIZE, default="128KiB", show_default=True,
              help="Size of the chunks the server sends (1KiB..1MiB).")
@click.option("--check", is_flag=True, help="Have the server check the messages first.")
@progress_option
@timeout_option
@connection_options
def stream_backup(args: tuple[str, ...], all_streams: bool, chunk_size: int, check: bool,
                  show_progress: bool | None, timeout: float, conn: ConnSettings) -> None:
    """Back a stream up into DIR (backup.json and stream.tar.s2, like `nats stream backup`)."""
    if all_streams and len(args) != 1:
        raise click.UsageError("with --all give only DIR")
    if not all_streams and len(args) != 2:
        raise click.UsageError("give NAME and DIR (or --all DIR)")
    bar = _show_bar(show_progress)
    with connected(conn) as nc:
        js = _js(nc, timeout)
        if not all_streams:
            _backup_one(js, bar, args[0], args[1], chunk_size, check)
            return
        directory = args[0]
        names = sorted(js.stream_names())
        _each([(n, partial(_backup_one, js, bar, n, os.path.join(directory, n), chunk_size, check))
               for n in names], "stream backups")


@click.command("restore")
@click.argument("directory", metavar="DIR", type=click.Path(exists=True, file_okay=False))
@click.option("--name", default=None, help="Restore under this name (where the server allows it).")
@click.option("--all", "all_streams", is_flag=True, help="Every backup in the subdirectories of DIR.")
@progress_option
@timeout_option
@connection_options
def stream_restore(directory: str, name: str | None, all_streams: bool, show_progress: bool | None,
                   timeout: float, conn: ConnSettings) -> None:
    """Restore a stream (and its consumers) from a backup in DIR."""
    if all_streams and name:
        raise click.UsageError("--name restores one stream: not with --all")
    bar = _show_bar(show_progress)
    with connected(conn) as nc:
        js = _js(nc, timeout)
        if not all_streams:
            _restore_one(js, bar, directory, name)
            return
        subdirs = sorted(e.path for e in os.scandir(directory)
                         if e.is_dir() and os.path.isfile(os.path.join(e.path, "backup.json")))
        if not subdirs:
            raise CliError(f"no backups (subdirectories with a backup.json) in {directory}")
        _each([(os.path.basename(d), partial(_restore_one, js, bar, d, None)) for d in subdirs],
              "stream restores")


def register(cli: click.Group) -> None:
    """Add ``backup`` and ``restore`` to the ``stream`` command group."""
    group = cli.commands["stream"]
    assert isinstance(group, click.Group)
    group.add_command(stream_backup)
    group.add_command(stream_restore)
