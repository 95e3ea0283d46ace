"""Core NATS from the command line: ``jetwire pub``, ``sub``, ``req`` and ``reply``.
"""
from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import click

from ._click import DURATION, CliError, connected, connection_options, echo_json, parse_headers, read_body, text_or_repr
from ._conn import ConnSettings, human_duration
from ._shared import interrupted, json_option, msg_json, show_headers

if TYPE_CHECKING:
    from jetwire import Client
    from jetwire.msg import Msg

# ============================================================================== pub / sub / req

header_option = click.option("-H", "--header", "headers", multiple=True, metavar="KEY:VALUE",
                             help="A header (repeatable).")


@click.command("pub")
@click.argument("subject")
@click.argument("body", required=False)
@header_option
@click.option("--count", default=1, show_default=True, type=click.IntRange(min=1), help="Publish this many times.")
@click.option("--reply", default=None, help="Reply subject.")
@click.option("--sleep", type=DURATION, default=None, help="Pause between messages.")
@click.option("-q", "--quiet", is_flag=True)
@connection_options
def pub(subject: str, body: str | None, headers: tuple[str, ...], count: int, reply: str | None, sleep: float | None,
        quiet: bool, conn: ConnSettings) -> None:
    """Publish BODY ('-': standard input) to SUBJECT. '{count}' in BODY is replaced by the message number."""
    hdrs = parse_headers(headers)
    raw = read_body(body)
    with connected(conn) as nc:
        for i in range(1, count + 1):
            data = raw.replace(b"{count}", str(i).encode()) if b"{count}" in raw else raw
            nc.publish(subject, data, reply=reply, headers=hdrs)
            if sleep and i < count:
                time.sleep(sleep)
        nc.flush(timeout=10)
    if not quiet:
        n = f"{count} messages" if count > 1 else f"{len(raw)} bytes"
        click.echo(f"Published {n} to {subject!r}", err=True)


@click.command("sub")
@click.argument("subject")
@click.option("--queue", default=None, help="Queue group.")
@click.option("--count", type=click.IntRange(min=1), default=None, help="Exit after this many messages.")
@click.option("--timeout", type=DURATION, default=None, help="Give up (exit 1) when nothing arrives for this long.")
@click.option("--raw", is_flag=True, help="Only the message data, one a line.")
@json_option
@connection_options
def sub(subject: str, queue: str | None, count: int | None, timeout: float | None, raw: bool, as_json: bool,
        conn: ConnSettings) -> None:
    """Print messages arriving on SUBJECT."""
    n = 0
    try:
        with connected(conn) as nc:
            for m in _incoming(nc, subject, queue, timeout, "Subscribing on", "message", lambda: f"{n} received"):  # noqa: B023 - reads the live count
                n += 1
                if as_json:
                    echo_json(msg_json(m), compact=True)
                elif raw:
                    click.echo(text_or_repr(m.data))
                else:
                    click.echo(f"[#{n}] Received on {m.subject!r}" + (f" with reply {m.reply!r}" if m.reply else ""))
                    show_headers(m)
                    click.echo(text_or_repr(m.data))
                    click.echo("")
                sys.stdout.flush()
                if count is not None and n >= count:
                    break
    except KeyboardInterrupt:
        interrupted(f"{n} received")


def _incoming(nc: Client, subject: str, queue: str | None, timeout: float | None, banner: str, noun: str,
              done: Callable[[], str]) -> Iterator[Msg]:
    """The messages arriving on ``subject`` (queue group ``queue``), once ``banner`` has
    told the user the subscription is live; ``CliError`` when none comes for ``timeout``
    (``done()`` says what was done by then)."""
    import jetwire

    s = nc.subscribe(subject, queue=queue)
    nc.flush(timeout=10)
    click.echo(f"{banner} {subject}" + (f" (queue {queue})" if queue else ""), err=True)
    sys.stderr.flush()
    while True:
        try:
            yield s.next_msg(timeout=timeout)
        except jetwire.TimeoutError:
            raise CliError(f"timeout: no {noun} within {human_duration(timeout)} ({done()})") from None


@click.command("req")
@click.argument("subject")
@click.argument("body", required=False)
@header_option
@click.option("--timeout", default="2s", show_default=True, type=DURATION)
@click.option("--raw", is_flag=True, help="Only the reply data.")
@json_option
@connection_options
def req(subject: str, body: str | None, headers: tuple[str, ...], timeout: float, raw: bool, as_json: bool,
        conn: ConnSettings) -> None:
    """Send a request and print the reply."""
    hdrs = parse_headers(headers)
    data = read_body(body)
    with connected(conn) as nc:
        t0 = time.perf_counter()
        m = nc.request(subject, data, timeout=timeout, headers=hdrs)
        dt = time.perf_counter() - t0
    if as_json:
        d = msg_json(m)
        d["rtt_us"] = round(dt * 1e6, 1)
        echo_json(d)
    elif raw:
        click.echo(text_or_repr(m.data))
    else:
        click.echo(f"Received with rtt {dt * 1e3:.3f}ms")
        show_headers(m)
        click.echo(text_or_repr(m.data))


_FIELD = re.compile(rb"\{(count|request|subject)\}")


@click.command("reply")
@click.argument("subject")
@click.argument("template", required=False)
@click.option("--queue", default=None, help="Queue group (several responders share the requests).")
@click.option("--echo", is_flag=True, help="Answer each request with its own data and headers.")
@click.option("--count", type=click.IntRange(min=1), default=None, help="Exit after answering this many.")
@click.option("--timeout", type=DURATION, default=None, help="Give up (exit 1) when no request comes for this long.")
@header_option
@click.option("-q", "--quiet", is_flag=True, help="Do not print each request.")
@connection_options
def reply(subject: str, template: str | None, queue: str | None, echo: bool, count: int | None,
          timeout: float | None, headers: tuple[str, ...], quiet: bool, conn: ConnSettings) -> None:
    """Answer requests on SUBJECT with TEMPLATE ('-': standard input; '{count}': the
    request's number, '{request}': its data, '{subject}': its subject), or with --echo."""
    if echo == (template is not None):
        raise click.UsageError("give a TEMPLATE or --echo (not both)")
    raw = b"" if template is None else read_body(template)
    hdrs = parse_headers(headers)
    n = 0
    try:
        with connected(conn) as nc:
            for m in _incoming(nc, subject, queue, timeout, "Answering requests on", "request",
                               lambda: f"{n} answered"):  # noqa: B023 - reads the live count
                if not m.reply:
                    continue  # a plain publish: nothing to answer
                n += 1
                if echo:
                    m.respond(m.data, headers=m.headers)
                else:
                    fields = {b"count": str(n).encode(), b"request": m.data,
                              b"subject": m.subject.encode("utf-8", "surrogateescape")}
                    m.respond(_FIELD.sub(lambda f: fields[f.group(1)], raw), headers=hdrs)  # noqa: B023 - used at once
                if not quiet:
                    click.echo(f"[#{n}] Answered a request on {m.subject!r}")
                    sys.stdout.flush()
                if count is not None and n >= count:
                    break
            nc.flush(timeout=10)
    except KeyboardInterrupt:
        interrupted(f"{n} answered")
