"""click plumbing shared by the commands: connection options, one-line errors, output."""
from __future__ import annotations

import json
import math
import os
import sys
import threading
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from enum import Enum
from typing import IO, TYPE_CHECKING, Any, TypeVar, cast

import click

from .._redact import redact_text
from .._units import parse_duration, parse_size
from ._conn import CONN_KEYS, ConnSettings, connect_kwargs, server_url

if TYPE_CHECKING:
    from _typeshed import DataclassInstance
    from rich.console import Console, RenderableType
    from rich.table import Table

    from jetwire import Client
    from jetwire.protocol.headers import Headers

    # click >= 8.2 types its parameter types (value, input); 8.1 (allowed) does not
    _IntParam = click.ParamType[int, str | int]
    _FloatParam = click.ParamType[float, str | float]
else:
    _IntParam = _FloatParam = click.ParamType

_R = TypeVar("_R")

# ------------------------------------------------------------------------- errors


class CliError(click.ClickException):
    """An expected failure: printed as ``error: <message>``, exit status 1."""

    exit_code = 1

    def show(self, file: object = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


def one_line(exc: BaseException) -> str:
    """A single-line description of an exception for ``error: ...``."""
    msg = exc.args[0] if isinstance(exc, KeyError) and exc.args and isinstance(exc.args[0], str) else str(exc)
    msg = " ".join(redact_text(msg).split())  # no password, token, seed or JWT on the terminal
    if not msg:
        msg = type(exc).__name__
    name = type(exc).__name__
    if name in ("TimeoutError",) and "time" not in msg.lower():
        msg = f"timeout: {msg}"
    return msg


class JetwireGroup(click.Group):
    """A click group whose commands fail with one line (``error: ...``, exit 1) instead of
    a traceback. ``JETWIRE_DEBUG=1`` shows the traceback as well."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException, SystemExit):
            raise
        except KeyboardInterrupt:
            click.echo("", err=True)
            raise SystemExit(130) from None
        except BrokenPipeError:
            try:
                sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the final flush
            except OSError:
                pass
            raise SystemExit(0) from None
        except Exception as exc:
            if os.environ.get("JETWIRE_DEBUG"):
                traceback.print_exc()
            raise CliError(one_line(exc)) from None


# ------------------------------------------------------------------------- params


class SizeType(_IntParam):
    """A size in bytes: ``128``, ``1KB``, ``4MiB``; ``-1`` (unlimited) where ``unlimited``."""

    name = "size"

    def __init__(self, unlimited: bool = True) -> None:
        self.unlimited = unlimited

    def convert(self, value: str | int, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            n = value
        else:
            try:
                n = parse_size(value)
            except ValueError as exc:
                self.fail(str(exc), param, ctx)
        if n < 0 and not (self.unlimited and n == -1):
            self.fail(f"{value!r}: a size here is 0 or more", param, ctx)
        return n


class DurationType(_FloatParam):
    name = "duration"

    def convert(self, value: str | float, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, (int, float)):
            return float(value)
        try:
            return parse_duration(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


class CountType(_IntParam):
    """A message count: ``100000``, ``100k``, ``1M``, ``1e5`` (1000-based)."""

    name = "count"

    def convert(self, value: str | int, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            n = value
        else:
            s = str(value).strip().lower().replace("_", "").replace(",", "")
            mul = 1
            if s and s[-1] in "kmg":
                mul = {"k": 1000, "m": 1000**2, "g": 1000**3}[s[-1]]
                s = s[:-1]
            try:
                f = float(s) * mul
            except ValueError:
                self.fail(f"{value!r} is not a count (examples: 1000, 100k, 1M, 1e5)", param, ctx)
            if not math.isfinite(f):
                self.fail(f"{value!r} is not a count (it must be a finite number)", param, ctx)
            if f != int(f):
                self.fail(f"{value!r} is not a whole number", param, ctx)
            n = int(f)
        if n < 1:
            self.fail(f"{value!r} must be at least 1", param, ctx)
        return n


SIZE = SizeType()
BODY_SIZE = SizeType(unlimited=False)  # a message body's size: 0 or more
COUNT = CountType()
DURATION = DurationType()


def split_list(values: Iterable[object] | None) -> list[str]:
    """``--subjects a,b --subjects c`` -> ``["a", "b", "c"]``."""
    out: list[str] = []
    for v in values or ():
        out.extend(p.strip() for p in str(v).split(",") if p.strip())
    return out


# ------------------------------------------------------------------------- connection

#: the environment variables the `nats` CLI reads, one per connection setting; a
#: command-line option wins over the root command's option, which wins over these
CONN_ENV = {"server": "NATS_URL", "user": "NATS_USER", "password": "NATS_PASSWORD", "token": "NATS_TOKEN",
            "creds": "NATS_CREDS", "nkey": "NATS_NKEY", "tls_ca": "NATS_CA", "tls_cert": "NATS_CERT",
            "tls_key": "NATS_KEY"}

_CONN_HELP = {
    "server": "NATS server URL(s), comma separated [env NATS_URL; default nats://127.0.0.1:4222]",
    "user": "user name [env NATS_USER]",
    "password": "password [env NATS_PASSWORD]",
    "token": "authentication token [env NATS_TOKEN]",
    "creds": "user credentials (.creds) file [env NATS_CREDS]",
    "nkey": "nkey seed file (or the seed itself) [env NATS_NKEY]",
    "tls_ca": "CA certificate file to verify the server [env NATS_CA]",
    "tls_cert": "client certificate file [env NATS_CERT]",
    "tls_key": "client private key file [env NATS_KEY]",
}


def connection_options(f: Callable[..., _R]) -> Callable[..., _R]:
    """Add ``--server``, auth and TLS options; the command receives them as ``conn`` (a dict)."""
    opts = [
        click.option("-s", "--server", "server", metavar="URL", help=_CONN_HELP["server"]),
        click.option("--user", metavar="USER", help=_CONN_HELP["user"]),
        click.option("--password", metavar="PASSWORD", help=_CONN_HELP["password"]),
        click.option("--token", metavar="TOKEN", help=_CONN_HELP["token"]),
        click.option("--creds", metavar="FILE", type=click.Path(exists=True, dir_okay=False), help=_CONN_HELP["creds"]),
        click.option("--nkey", metavar="FILE", help=_CONN_HELP["nkey"]),
        click.option("--tls-ca", metavar="FILE", type=click.Path(exists=True, dir_okay=False), help=_CONN_HELP["tls_ca"]),
        click.option("--tls-cert", metavar="FILE", type=click.Path(exists=True, dir_okay=False), help=_CONN_HELP["tls_cert"]),
        click.option("--tls-key", metavar="FILE", type=click.Path(exists=True, dir_okay=False), help=_CONN_HELP["tls_key"]),
    ]

    def wrapper(*args: Any, **kwargs: Any) -> _R:
        conn = {k: kwargs.pop(k, None) for k in CONN_KEYS}
        ctx = click.get_current_context()
        if ctx.parent is None:  # the root command: what it was given, for its commands (below)
            kwargs["conn"] = conn
            return f(*args, **kwargs)
        parent = ctx.find_root().meta.get("jetwire.conn", {})
        for k in CONN_KEYS:
            if conn[k] is None:
                conn[k] = parent.get(k)
            if conn[k] is None:
                conn[k] = env_setting(k, ctx)
        kwargs["conn"] = conn
        return f(*args, **kwargs)

    wrapper.__name__ = f.__name__
    wrapper.__doc__ = f.__doc__
    wrapper.__dict__.update(getattr(f, "__dict__", {}))
    for o in reversed(opts):
        wrapper = o(wrapper)
    return wrapper


_FILE = click.Path(exists=True, dir_okay=False)  # what --tls-ca, --tls-cert and --tls-key take


def env_setting(key: str, ctx: click.Context | None = None) -> str | None:
    """A connection setting from its `nats` CLI variable (``CONN_ENV``), or None. The files
    it names are checked as the options' are (a usage error naming the variable): a TLS
    file must exist; a credentials file too, unless the variable holds the file's text."""
    var = CONN_ENV[key]
    value = os.environ.get(var) or None
    if value is None:
        return None
    if key in ("tls_ca", "tls_cert", "tls_key"):
        try:
            _FILE.convert(value, None, ctx)
        except click.BadParameter as exc:
            exc.param_hint = var
            raise
    elif key == "creds":
        from .._redact import shown
        from ..auth import expand_path, is_creds_text

        if not is_creds_text(value) and not os.path.isfile(expand_path(value)):
            raise click.BadParameter(f"credentials file {shown(value)} not found", ctx=ctx, param_hint=var)
    return value


@contextmanager
def connected(conn: ConnSettings, **extra: Any) -> Iterator[Client]:
    """A blocking jetwire connection for one command."""
    import jetwire

    kw = connect_kwargs(conn)
    kw.setdefault("name", "jetwire-cli")
    kw.setdefault("connect_timeout", 5.0)
    kw.update(extra)
    nc = jetwire.connect(server_url(conn.get("server")), **kw)
    stopped = False
    try:
        yield nc
    except KeyboardInterrupt:
        stopped = True
        raise
    finally:
        if stopped:  # Ctrl-C: the command exits within seconds, however the close goes
            closer = threading.Thread(target=_close_quietly, args=(nc,), name="jetwire-cli-close", daemon=True)
            closer.start()
            closer.join(5.0)
        else:
            _close_quietly(nc)


def _close_quietly(nc: Client) -> None:
    try:
        nc.close()
    except Exception:
        pass


# ------------------------------------------------------------------------- output


def console(stderr: bool = False) -> Console:
    """A rich console on the current stdout/stderr (so click's test runner captures it).
    Output into a closed pipe (``jetwire stream info X | head -1``) ends the command with
    status 0, as plain output does (rich's own console exits 1)."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            _silence(self.file)
            raise SystemExit(0)

    stream = sys.stderr if stderr else sys.stdout
    tty = hasattr(stream, "isatty") and stream.isatty()
    return _Console(file=stream, width=None if tty else max(160, int(os.environ.get("COLUMNS", 0) or 0)),
                    highlight=False, soft_wrap=not tty, force_terminal=None if tty else False)


def _silence(stream: IO[str]) -> None:
    """Point a stream whose reader is gone at /dev/null, so that nothing written to it
    later (the interpreter's last flush included) fails again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, stream.fileno())
        finally:
            os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a file descriptor (click's test runner)
        pass


def table(*cols: str, title: str | None = None, **kw: Any) -> Table:
    """A rich table whose cells show exactly the text they are given: values, subjects,
    descriptions and metadata from the server are never read as rich markup (``[x]``
    stays). Styled cells are passed as ``rich.text.Text``."""
    from rich.table import Table
    from rich.text import Text

    class _PlainTable(Table):
        def add_row(self, *cells: RenderableType | None, **opts: Any) -> None:
            super().add_row(*(Text(c) if isinstance(c, str) else c for c in cells), **opts)

    t = _PlainTable(title=Text(title) if isinstance(title, str) else title,
                    **{"title_justify": "left", "header_style": "bold", **kw})
    for c in cols:
        t.add_column(c)
    return t


def _json_default(o: object) -> object:
    if isinstance(o, datetime):
        return o.isoformat()
    if isinstance(o, Enum):
        return o.value
    if isinstance(o, (bytes, bytearray, memoryview)):
        try:
            return bytes(o).decode()
        except UnicodeDecodeError:
            import base64

            return base64.b64encode(bytes(o)).decode()
    if hasattr(o, "to_json_dict"):
        return o.to_json_dict()
    if hasattr(o, "__dataclass_fields__"):
        import dataclasses

        return {k: v for k, v in dataclasses.asdict(cast("DataclassInstance", o)).items() if not k.startswith("_")}
    return str(o)


def to_jsonable(obj: object) -> Any:
    return json.loads(json.dumps(obj, default=_json_default))


def echo_json(obj: object, compact: bool = False) -> None:
    text = json.dumps(obj, default=_json_default, indent=None if compact else 2, sort_keys=False)
    click.echo(text)


def text_or_repr(data: bytes, limit: int | None = None) -> str:
    """Message data for humans: UTF-8 text, else a short hex/bytes preview."""
    if limit is not None and len(data) > limit:
        data = data[:limit]
        tail = " ..."
    else:
        tail = ""
    try:
        return data.decode() + tail
    except UnicodeDecodeError:
        return repr(data) + tail


def headers_dict(h: Headers | Mapping[str, str] | None) -> dict[str, list[str]]:
    if not h:
        return {}
    out: dict[str, list[str]] = {}
    for k in h:
        out[k] = list(h.get_all(k)) if hasattr(h, "get_all") else [h[k]]
    return out


def parse_headers(values: Iterable[str] | None) -> dict[str, list[str]] | None:
    """``-H K:V`` (repeatable) -> headers dict, or None."""
    if not values:
        return None
    out: dict[str, list[str]] = {}
    for v in values:
        if ":" not in v:
            raise click.BadParameter(f"header {v!r} is not KEY:VALUE", param_hint="'-H/--header'")
        k, _, val = v.partition(":")
        out.setdefault(k.strip(), []).append(val.strip())
    return out


def read_body(body: str | None) -> bytes:
    """A message body argument: text, ``-`` for stdin, or absent (empty)."""
    if body is None:
        return b""
    if body == "-":
        return stdin_bytes().read()
    return body.encode()


def stdin_bytes() -> IO[bytes]:
    """Binary standard input (the current one, so click's test runner can feed it)."""
    return cast("IO[bytes]", getattr(sys.stdin, "buffer", sys.stdin))


def write_bytes(data: bytes) -> None:
    """Raw bytes to the current standard output."""
    sys.stdout.flush()
    out = getattr(sys.stdout, "buffer", None)
    if out is None:
        sys.stdout.write(data.decode(errors="replace"))
    else:
        out.write(data)
        out.flush()


def size_or_none(value: str | None) -> int | None:
    return None if value is None else parse_size(value)


def duration_or_none(value: str | None) -> float | None:
    return None if value is None else parse_duration(value)
