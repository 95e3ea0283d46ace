"""``jetwire micro ls|info|stats``: the services (ADR-32) on a NATS system, like ``nats micro``.

Each command asks ``$SRV.INFO`` or ``$SRV.STATS`` (of every service, one name, or one
instance) through the blocking :mod:`jetwire.micro` discovery client and gathers every
answer within ``--timeout``. Tables for humans, ``--json`` for the documents as the
services sent them (durations in nanoseconds).
"""
from __future__ import annotations

from typing import Any

import click

from ._click import DURATION, CliError, JetwireGroup, connected, connection_options, console, echo_json, table
from ._conn import ConnSettings, comma, human_duration, human_time

json_option = click.option("--json", "as_json", is_flag=True, help="Output the documents as JSON.")
timeout_option = click.option("--timeout", type=DURATION, default=1.0, show_default=True,
                              help="How long to gather answers (e.g. 500ms, 2s).")


@click.group("micro", cls=JetwireGroup)
def micro() -> None:
    """Services (the NATS service API, ADR-32): ls, info, stats."""


def _gather(verb: str, conn: ConnSettings, name: str | None, id: str | None,
            timeout: float) -> list[Any]:
    import jetwire.micro as m

    with connected(conn) as nc:
        fn: Any = {"INFO": m.info, "STATS": m.stats}[verb]
        found = fn(nc, name, id, timeout=timeout, max_results=1 if id else None)
    return sorted(found, key=lambda d: (d.name, d.id))


def _none_found(name: str | None, id: str | None) -> str:
    if id:
        return f"no instance {id} of service {name!r} answered"
    return f"no service {name!r} answered" if name else "No services found"


def _meta(md: dict[str, str] | None) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted((md or {}).items())) or "-"


@micro.command("ls")
@click.argument("name", required=False)
@timeout_option
@json_option
@connection_options
def micro_ls(name: str | None, timeout: float, as_json: bool, conn: ConnSettings) -> None:
    """List the services that answer (all of them, or those called NAME)."""
    infos = _gather("INFO", conn, name, None, timeout)
    if as_json:
        echo_json([i.to_dict() for i in infos])
        return
    if not infos:
        click.echo(_none_found(name, None))
        return
    t = table("Name", "Version", "ID", "Description", "Endpoints", title=f"Services ({len(infos)})")
    for i in infos:
        t.add_row(i.name, i.version, i.id, i.description or "-", str(len(i.endpoints)))
    console().print(t)


@micro.command("info")
@click.argument("name")
@click.argument("id", required=False)
@timeout_option
@json_option
@connection_options
def micro_info(name: str, id: str | None, timeout: float, as_json: bool,
               conn: ConnSettings) -> None:
    """Show every instance of service NAME (or instance ID) and its endpoints."""
    infos = _gather("INFO", conn, name, id, timeout)
    if as_json:
        echo_json([i.to_dict() for i in infos])
        return
    if not infos:
        raise CliError(_none_found(name, id))
    con = console()
    for i in infos:
        t = table("Endpoint", "Subject", "Queue Group", "Metadata",
                  title=f"{i.name} {i.version} id {i.id}: {i.description or 'no description'}"
                        f" (metadata: {_meta(i.metadata)})")
        for e in i.endpoints:
            t.add_row(e.name, e.subject, e.queue_group or "(none)", _meta(e.metadata))
        con.print(t)


@micro.command("stats")
@click.argument("name")
@click.argument("id", required=False)
@timeout_option
@json_option
@connection_options
def micro_stats(name: str, id: str | None, timeout: float, as_json: bool,
                conn: ConnSettings) -> None:
    """Show the request statistics of every endpoint of service NAME (or instance ID)."""
    stats = _gather("STATS", conn, name, id, timeout)
    if as_json:
        echo_json([s.to_dict() for s in stats])
        return
    if not stats:
        raise CliError(_none_found(name, id))
    t = table("ID", "Endpoint", "Requests", "Errors", "Processing Time", "Average Time", "Last Error",
              title=f"{name} statistics ({len(stats)} instance{'s' if len(stats) != 1 else ''})")
    total_req = total_err = 0
    for s in stats:
        for e in s.endpoints:
            total_req += e.num_requests
            total_err += e.num_errors
            t.add_row(s.id, e.name, comma(e.num_requests), comma(e.num_errors), _dur(e.processing_time),
                      _dur(e.average_processing_time), e.last_error or "-")
    from rich.text import Text

    t.add_row("", Text("total", style="bold"), comma(total_req), comma(total_err), "", "", "")
    con = console()
    con.print(t)
    for s in stats:
        con.print(f"{s.id} started {human_time(s.started)}")


def _dur(seconds: float) -> str:
    if not seconds:
        return "0s"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f}us"
    if seconds < 1:
        return f"{seconds * 1e3:.2f}ms"
    return human_duration(seconds)
