"""What the management commands (``stream``, ``consumer``, ``kv``, ``object``, ``pub``/``sub``/``req``/``reply``,
``events``) share: the ``--json`` and ``--force`` options, listings, confirmations, value
texts, config files and message output. Everything goes through the blocking jetwire API.
"""
from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, TypeVar

import click

from ._click import CliError, console, echo_json, headers_dict, table
from ._conn import comma

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.table import Table

    from jetwire import Client
    from jetwire._sync.jetstream import JetStream
    from jetwire.jetstream._json import Model
    from jetwire.msg import Msg

    _M = TypeVar("_M", bound=Model)
_T = TypeVar("_T")

json_option = click.option("--json", "as_json", is_flag=True, help="Output JSON.")
force_option = click.option("-f", "--force", is_flag=True, help="Do not ask for confirmation.")


def echo_names(names: Iterable[str], as_json: bool) -> None:
    """``ls --names``: the names sorted, as JSON or one a line."""
    ns = sorted(names)
    if as_json:
        echo_json(ns)
        return
    for n in ns:
        click.echo(n)


def echo_list(items: Sequence[_T], as_json: bool, to_json: Callable[[_T], object], empty: str,
               cols: Sequence[str], title: str, row: Callable[[_T], Sequence[RenderableType | None]]) -> None:
    """An ``ls`` listing: JSON (``to_json`` of each item), ``empty`` when there is none,
    else a table of ``cols`` titled ``<title> (<count>)`` with ``row(item)`` for each."""
    if as_json:
        echo_json([to_json(i) for i in items])
        return
    if not items:
        click.echo(empty)
        return
    t = table(*cols, title=f"{title} ({len(items)})")
    for i in items:
        t.add_row(*row(i))
    console().print(t)


def kv_table(rows: list[tuple[str, object]], title: str | None = None) -> Table:
    t = table(title=title, show_header=False, box=None, pad_edge=False)
    t.add_column(justify="right", style="bold")
    t.add_column()
    for k, v in rows:
        if v is None or v == "":
            continue
        t.add_row(str(k), str(v))
    return t


def interrupted(done: str) -> None:
    """Ctrl-C in a command that runs until stopped: say what was done, exit 130 (as
    everywhere else)."""
    click.echo(f"\ninterrupted: {done}", err=True)
    raise SystemExit(130)


def confirm(force: bool, what: str) -> None:
    if not force:
        click.confirm(f"Really {what}?", abort=True, err=True)


def limit_text(v: int | None, fmt: Callable[[int], str] = comma) -> str:
    if v is None or v < 0:
        return "unlimited"
    return fmt(v)


def enum_text(v: object) -> str:
    return str(getattr(v, "value", v)) if v is not None else "-"


def js_of(nc: Client) -> JetStream:
    return nc.jetstream(timeout=10)




def load_config(path: str | None, cls: type[_M]) -> _M | None:
    if not path:
        return None
    with open(path, "rb") as f:
        try:
            return cls.from_json(f.read())
        except ValueError as exc:
            raise CliError(f"{path}: not a JSON configuration ({exc})") from None


def msg_json(m: Msg) -> dict[str, object]:
    d: dict[str, object] = {"subject": m.subject}
    if m.reply:
        d["reply"] = m.reply
    h = headers_dict(m.headers)
    if h:
        d["headers"] = h
    try:
        d["data"] = m.data.decode()
    except UnicodeDecodeError:
        d["data_b64"] = base64.b64encode(m.data).decode()
    return d


def show_headers(m: Msg) -> None:
    h = headers_dict(m.headers)
    for k, vs in h.items():
        for v in vs:
            click.echo(f"{k}: {v}")
    if h:
        click.echo("")
