"""``jetwire events``: JetStream advisories and metrics as they happen (``js.events()``).
"""
from __future__ import annotations

import sys

import click

from ._click import DURATION, CliError, connected, connection_options
from ._conn import ConnSettings, human_duration
from ._shared import interrupted, json_option

# ============================================================================== events


@click.command("events")
@click.option("--count", type=click.IntRange(min=1), default=None, help="Exit after this many events.")
@click.option("--timeout", type=DURATION, default=None, help="Give up (exit 1) when nothing arrives for this long.")
@click.option("--format", "fmt", type=click.Choice(["text", "text-extended", "cloudevents", "json"]),
              default="text", show_default=True, help="How to print each event.")
@click.option("--kind", "kinds", multiple=True,
              help="Only events of this type (full, or its last token: api_audit, nak, ...); repeatable.")
@click.option("--domain", default=None, help="JetStream domain: skip events of other domains.")
@json_option
@connection_options
def events(count: int | None, timeout: float | None, fmt: str, kinds: tuple[str, ...], domain: str | None,
           as_json: bool, conn: ConnSettings) -> None:
    """Show JetStream advisories and metrics ($JS.EVENT.ADVISORY.> and $JS.EVENT.METRIC.>),
    rendered by jetwire.events; json and cloudevents print one document a line
    (--json is --format json)."""
    import orjson

    import jetwire
    from jetwire.events import render

    if as_json:
        fmt = "json"
    n = 0
    with connected(conn) as nc, nc.jetstream(domain=domain).events(kinds=kinds or None) as stream:
        try:
            click.echo(f"Listening for advisories and metrics on {', '.join(stream.subjects)}", err=True)
            sys.stderr.flush()
            while count is None or n < count:
                try:
                    ev = stream.next(timeout=timeout)
                except jetwire.TimeoutError:
                    raise CliError(f"timeout: no event within {human_duration(timeout)} ({n} received)") from None
                n += 1
                out = render(ev, fmt)
                if fmt in ("json", "cloudevents"):  # one document a line
                    out = orjson.dumps(orjson.loads(out)).decode()
                click.echo(out)
                sys.stdout.flush()
        except KeyboardInterrupt:
            interrupted(f"{n} received")
