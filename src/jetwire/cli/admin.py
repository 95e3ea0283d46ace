"""Everyday management, modelled on the nats CLI verbs: ``stream``, ``consumer``, ``kv``,
``object``, ``pub``, ``sub``, ``req`` and ``events``. Tables for humans, ``--json`` for
scripts. Everything goes through the blocking jetwire API."""
from __future__ import annotations

import base64
import os
import re
import sys
import time
from datetime import datetime, timezone
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence

import click

from .._units import parse_time_input
from ._click import (
    DURATION,
    SIZE,
    CliError,
    JetwireGroup,
    connected,
    connection_options,
    console,
    echo_json,
    headers_dict,
    parse_headers,
    read_body,
    split_list,
    stdin_bytes,
    table,
    text_or_repr,
    write_bytes,
)
from ._conn import ago, comma, human_bytes, human_duration, human_time

json_option = click.option("--json", "as_json", is_flag=True, help="Output JSON.")
force_option = click.option("-f", "--force", is_flag=True, help="Do not ask for confirmation.")


def _echo_names(names: Iterable[str], as_json: bool) -> None:
    """``ls --names``: the names sorted, as JSON or one a line."""
    ns = sorted(names)
    if as_json:
        echo_json(ns)
        return
    for n in ns:
        click.echo(n)


def _echo_list(items: Sequence[Any], as_json: bool, to_json: Callable[[Any], Any], empty: str,
               cols: Sequence[str], title: str, row: Callable[[Any], Sequence[Any]]) -> None:
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


def _kv_table(rows: List[tuple], title: Optional[str] = None) -> Any:
    t = table(title=title, show_header=False, box=None, pad_edge=False)
    t.add_column(justify="right", style="bold")
    t.add_column()
    for k, v in rows:
        if v is None or v == "":
            continue
        t.add_row(str(k), str(v))
    return t


def _interrupted(done: str) -> None:
    """Ctrl-C in a command that runs until stopped: say what was done, exit 130 (as
    everywhere else)."""
    click.echo(f"\ninterrupted: {done}", err=True)
    raise SystemExit(130)


def _confirm(force: bool, what: str) -> None:
    if not force:
        click.confirm(f"Really {what}?", abort=True, err=True)


def _limit(v: Optional[int], fmt: Any = comma) -> str:
    if v is None or v < 0:
        return "unlimited"
    return fmt(v)


def _enum(v: Any) -> str:
    return str(getattr(v, "value", v)) if v is not None else "-"


def _js(nc: Any) -> Any:
    return nc.jetstream(timeout=10)


# ============================================================================== stream


@click.group("stream", cls=JetwireGroup)
def stream() -> None:
    """JetStream streams: ls, info, add, edit, rm, purge, get."""


def _stream_row(info: Any) -> list:
    c, s = info.config, info.state
    return [c.name, ", ".join(c.subjects or []) or "-", _enum(c.storage), str(c.num_replicas),
            comma(s.messages), human_bytes(s.bytes), str(s.consumer_count), ago(s.last_ts) if s.messages else "never"]


@stream.command("ls")
@click.option("--subject", default=None, help="Only streams that hold this subject.")
@click.option("-n", "--names", is_flag=True, help="Names only, one a line.")
@json_option
@connection_options
def stream_ls(subject: Optional[str], names: bool, as_json: bool, conn: Dict[str, Any]) -> None:
    """List streams."""
    with connected(conn) as nc:
        js = _js(nc)
        if names:
            _echo_names(js.stream_names(subject), as_json)
            return
        infos = sorted(js.list_streams(subject), key=lambda i: i.config.name or "")
    _echo_list(infos, as_json, lambda i: i.to_json_dict(), "No streams defined",
               ("Name", "Subjects", "Storage", "Replicas", "Messages", "Size", "Consumers", "Last Message"),
               "Streams", _stream_row)


def _print_stream_info(info: Any) -> None:
    c, s = info.config, info.state
    con = console()
    con.print(_kv_table([
        ("Name", c.name),
        ("Description", c.description),
        ("Subjects", ", ".join(c.subjects or [])),
        ("Created", human_time(info.created)),
        ("Storage", _enum(c.storage)),
        ("Replicas", c.num_replicas),
        ("Retention", _enum(c.retention)),
        ("Discard", _enum(c.discard)),
        ("Max Messages", _limit(c.max_msgs)),
        ("Max Per Subject", _limit(c.max_msgs_per_subject)),
        ("Max Bytes", _limit(c.max_bytes, human_bytes)),
        ("Max Age", human_duration(c.max_age) if c.max_age else "unlimited"),
        ("Max Message Size", _limit(c.max_msg_size, human_bytes)),
        ("Duplicate Window", human_duration(c.duplicate_window)),
        ("Allows Direct", "yes" if c.allow_direct else "no"),
        ("Allows Rollups", "yes" if c.allow_rollup_hdrs else "no"),
        ("Deny Delete", "yes" if c.deny_delete else None),
        ("Deny Purge", "yes" if c.deny_purge else None),
        ("Sealed", "yes" if c.sealed else None),
        ("Compression", _enum(c.compression) if c.compression and _enum(c.compression) != "none" else None),
    ], title="Configuration"))
    if info.cluster and info.cluster.leader:
        con.print(_kv_table([("Name", info.cluster.name), ("Leader", info.cluster.leader)], title="Cluster"))
    con.print(_kv_table([
        ("Messages", comma(s.messages)),
        ("Bytes", human_bytes(s.bytes)),
        ("First Sequence", f"{s.first_seq} @ {human_time(s.first_ts)}" if s.messages else s.first_seq),
        ("Last Sequence", f"{s.last_seq} @ {human_time(s.last_ts)}" if s.last_seq else s.last_seq),
        ("Deleted Messages", comma(s.num_deleted) if s.num_deleted else None),
        ("Active Consumers", s.consumer_count),
        ("Number of Subjects", comma(s.num_subjects) if s.num_subjects else None),
    ], title="State"))


@stream.command("info")
@click.argument("name")
@json_option
@connection_options
def stream_info(name: str, as_json: bool, conn: Dict[str, Any]) -> None:
    """Show a stream's configuration and state."""
    with connected(conn) as nc:
        info = _js(nc).stream(name).info()
    if as_json:
        echo_json(info.to_json_dict())
    else:
        _print_stream_info(info)


def stream_config_options(f: Any) -> Any:
    opts = [
        click.option("--subjects", multiple=True, help="Subjects (comma separated or repeated)."),
        click.option("--description", default=None),
        click.option("--storage", type=click.Choice(["file", "memory"]), default=None, help="[add default: file]"),
        click.option("--replicas", type=click.IntRange(1, 5), default=None),
        click.option("--retention", type=click.Choice(["limits", "interest", "workqueue"]), default=None),
        click.option("--discard", type=click.Choice(["old", "new"]), default=None),
        click.option("--max-msgs", type=int, default=None, help="-1: unlimited"),
        click.option("--max-msgs-per-subject", type=int, default=None, help="-1: unlimited"),
        click.option("--max-bytes", type=SIZE, default=None, help="-1: unlimited (e.g. 1GB)"),
        click.option("--max-age", type=DURATION, default=None, help="0: unlimited (e.g. 1h, 7d)"),
        click.option("--max-msg-size", type=SIZE, default=None, help="-1: unlimited"),
        click.option("--dupe-window", type=DURATION, default=None, help="Duplicate detection window (e.g. 2m)."),
        click.option("--allow-direct/--no-allow-direct", default=None),
        click.option("--allow-rollup/--no-allow-rollup", default=None),
        click.option("--deny-delete/--allow-delete", default=None),
        click.option("--deny-purge/--allow-purge", default=None),
        click.option("--compression", type=click.Choice(["none", "s2"]), default=None),
        click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False), default=None,
                     help="A JSON stream configuration; options given here override it."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


_CFG_MAP = {
    "description": "description", "storage": "storage", "replicas": "num_replicas", "retention": "retention",
    "discard": "discard", "max_msgs": "max_msgs", "max_msgs_per_subject": "max_msgs_per_subject",
    "max_bytes": "max_bytes", "max_age": "max_age", "max_msg_size": "max_msg_size",
    "dupe_window": "duplicate_window", "allow_direct": "allow_direct", "allow_rollup": "allow_rollup_hdrs",
    "deny_delete": "deny_delete", "deny_purge": "deny_purge", "compression": "compression",
}


def _stream_fields(kw: Dict[str, Any]) -> Dict[str, Any]:
    fields: Dict[str, Any] = {}
    subjects = split_list(kw.pop("subjects", ()))
    if subjects:
        fields["subjects"] = subjects
    for opt, name in _CFG_MAP.items():
        v = kw.get(opt)
        if v is not None:
            fields[name] = v
    return fields


def _load_config(path: Optional[str], cls: Any) -> Any:
    if not path:
        return None
    with open(path, "rb") as f:
        try:
            return cls.from_json(f.read())
        except ValueError as exc:
            raise CliError(f"{path}: not a JSON configuration ({exc})") from None


@stream.command("add")
@click.argument("name")
@stream_config_options
@json_option
@connection_options
def stream_add(name: str, as_json: bool, conn: Dict[str, Any], config_file: Optional[str], **kw: Any) -> None:
    """Create a stream (subjects default to the stream's name)."""
    from ..jetstream.models import StreamConfig

    base = _load_config(config_file, StreamConfig)
    fields = _stream_fields(kw)
    fields["name"] = name
    with connected(conn) as nc:
        st = _js(nc).create_stream(base, **fields)
        info = st.info()
    if as_json:
        echo_json(info.to_json_dict())
    else:
        click.echo(f"Stream {name} was created")
        _print_stream_info(info)


@stream.command("edit")
@click.argument("name")
@stream_config_options
@json_option
@connection_options
def stream_edit(name: str, as_json: bool, conn: Dict[str, Any], config_file: Optional[str], **kw: Any) -> None:
    """Change a stream's configuration (only the options given)."""
    from ..jetstream.models import StreamConfig

    fields = _stream_fields(kw)
    with connected(conn) as nc:
        js = _js(nc)
        base = _load_config(config_file, StreamConfig) or js.stream(name).info().config
        if not fields and not config_file:
            raise click.UsageError("nothing to change: give at least one option")
        fields["name"] = name
        st = js.update_stream(base, **fields)
        info = st.info()
    if as_json:
        echo_json(info.to_json_dict())
    else:
        click.echo(f"Stream {name} was updated")
        _print_stream_info(info)


@stream.command("rm")
@click.argument("name")
@force_option
@connection_options
def stream_rm(name: str, force: bool, conn: Dict[str, Any]) -> None:
    """Delete a stream and all its messages."""
    _confirm(force, f"delete stream {name}")
    with connected(conn) as nc:
        _js(nc).delete_stream(name)
    click.echo(f"Stream {name} was deleted")


@stream.command("purge")
@click.argument("name")
@click.option("--subject", default=None, help="Only messages on this subject.")
@click.option("--seq", type=click.IntRange(min=1), default=None, help="Purge up to (not including) this sequence.")
@click.option("--keep", type=click.IntRange(min=0), default=None, help="Keep this many newest messages.")
@force_option
@json_option
@connection_options
def stream_purge(name: str, subject: Optional[str], seq: Optional[int], keep: Optional[int], force: bool,
                 as_json: bool, conn: Dict[str, Any]) -> None:
    """Remove messages from a stream."""
    if seq is not None and keep is not None:
        raise click.UsageError("--seq and --keep exclude each other")
    _confirm(force, f"purge stream {name}")
    with connected(conn) as nc:
        st = _js(nc).stream(name)
        purged = st.purge(subject=subject, sequence=seq, keep=keep)
        info = st.info()
    if as_json:
        echo_json({"purged": purged, "stream": info.to_json_dict()})
    else:
        n = f"{comma(purged)} messages" if isinstance(purged, int) and not isinstance(purged, bool) else "messages"
        click.echo(f"Purged {n} from {name}; {comma(info.state.messages)} left")


def _raw_msg_json(m: Any) -> Dict[str, Any]:
    d = {"subject": m.subject, "seq": m.seq, "time": m.time.isoformat() if m.time else None,
         "headers": headers_dict(m.headers) or None}
    try:
        d["data"] = m.data.decode()
    except UnicodeDecodeError:
        d["data_b64"] = base64.b64encode(m.data).decode()
    return d


@stream.command("get")
@click.argument("name")
@click.argument("seq", type=click.IntRange(min=1), required=False)
@click.option("--last-for", "last_for", metavar="SUBJECT", default=None, help="The last message on SUBJECT.")
@click.option("--direct", is_flag=True, help="Use the direct get API.")
@click.option("--raw", is_flag=True, help="Only the message data.")
@json_option
@connection_options
def stream_get(name: str, seq: Optional[int], last_for: Optional[str], direct: bool, raw: bool, as_json: bool,
               conn: Dict[str, Any]) -> None:
    """Show a stored message by sequence (or the last one for a subject)."""
    if (seq is None) == (last_for is None):
        raise click.UsageError("give a sequence or --last-for SUBJECT")
    with connected(conn) as nc:
        st = _js(nc).stream(name)
        m = st.get_msg(seq, direct=direct) if seq is not None else st.get_last_msg_for_subject(last_for, direct=direct)
    if as_json:
        echo_json(_raw_msg_json(m))
        return
    if raw:
        write_bytes(m.data)
        return
    click.echo(f"Item: {name}#{m.seq} received {human_time(m.time)} on Subject {m.subject}")
    h = headers_dict(m.headers)
    if h:
        click.echo("\nHeaders:\n")
        for k, vs in h.items():
            for v in vs:
                click.echo(f"  {k}: {v}")
    click.echo("")
    click.echo(text_or_repr(m.data))


_BATCH_KEYS = {"subject", "data", "data_b64", "headers", "msg_id", "expected_stream", "expected_last_seq",
               "expected_last_subject_seq", "expected_last_subject_seq_subject", "ttl"}


def _read_batch(path: str) -> List[Dict[str, Any]]:
    """The messages of ``stream publish --batch FILE`` ('-': standard input): JSON lines
    (or one JSON array) of ``{"subject": ..., "data": "text" | "data_b64": "...",
    "headers": {"K": "v" | ["v1", "v2"]}, "msg_id": ..., "expected_...": ..., "ttl": ...}``;
    blank lines are skipped. Everything is checked before anything is sent."""
    import orjson

    if path == "-":
        raw = stdin_bytes().read()
    else:
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except OSError as exc:
            raise CliError(f"{path}: {exc.strerror or exc}") from None
    if raw.lstrip().startswith(b"["):
        try:
            items = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise CliError(f"{path}: not JSON ({exc})") from None
        where = [f"{path}: message {i}" for i in range(1, len(items) + 1)]
    else:
        items, where = [], []
        for n, line in enumerate(raw.splitlines(), 1):
            if not line.strip():
                continue
            try:
                items.append(orjson.loads(line))
            except orjson.JSONDecodeError as exc:
                raise CliError(f"{path}:{n}: not a JSON object ({exc})") from None
            where.append(f"{path}:{n}")
    if not items:
        raise CliError(f"{path}: no messages")
    out = []
    for item, at in zip(items, where):
        if not isinstance(item, dict):
            raise CliError(f"{at}: not a JSON object")
        unknown = sorted(set(item) - _BATCH_KEYS)
        if unknown:
            raise CliError(f"{at}: unknown field(s) {', '.join(unknown)} (known: {', '.join(sorted(_BATCH_KEYS))})")
        subject = item.get("subject")
        if not isinstance(subject, str) or not subject:
            raise CliError(f"{at}: a subject is required")
        if "data" in item and "data_b64" in item:
            raise CliError(f"{at}: give data or data_b64, not both")
        msg = {k: v for k, v in item.items() if k not in ("subject", "data", "data_b64")}
        try:
            if "data_b64" in item:
                data = base64.b64decode(item["data_b64"], validate=True)
            else:
                text = item.get("data", "")
                if not isinstance(text, str):
                    raise CliError(f"{at}: data must be a string (data_b64 for bytes)")
                data = text.encode()
        except (ValueError, TypeError) as exc:
            raise CliError(f"{at}: bad data_b64 ({exc})") from None
        if msg.get("headers") is not None and not isinstance(msg["headers"], dict):
            raise CliError(f"{at}: headers must be an object")
        out.append({"subject": subject, "data": data, "at": at, **msg})
    return out


@stream.command("publish")
@click.argument("subject", required=False)
@click.argument("body", required=False)
@click.option("-H", "--header", "headers", multiple=True, metavar="KEY:VALUE", help="A header (repeatable).")
@click.option("--msg-id", default=None, help="A message id (de-duplication).")
@click.option("--batch", "batch_file", metavar="FILE", default=None,
              help="Publish the messages of FILE ('-': standard input; JSON lines of {\"subject\", \"data\" "
                   "or \"data_b64\", \"headers\", \"msg_id\", \"expected_...\", \"ttl\"}) as ONE atomic "
                   "batch: all stored or none (streams with allow_atomic).")
@json_option
@connection_options
def stream_publish(subject: Optional[str], body: Optional[str], headers: Any, msg_id: Optional[str],
                   batch_file: Optional[str], as_json: bool, conn: Dict[str, Any]) -> None:
    """Publish BODY ('-': standard input) to SUBJECT and wait for the stream's ack, or an
    atomic batch with --batch FILE (the last message commits it)."""
    if batch_file is None:
        if subject is None:
            raise click.UsageError("give SUBJECT [BODY], or --batch FILE")
        hdrs = parse_headers(headers)
        data = read_body(body)
        with connected(conn) as nc:
            ack = _js(nc).publish(subject, data, headers=hdrs, msg_id=msg_id)
        if as_json:
            echo_json(ack.to_json_dict())
        else:
            dup = " (duplicate)" if ack.duplicate else ""
            click.echo(f"Stored in {ack.stream} as message {ack.seq}{dup}")
        return
    if subject is not None or body is not None or headers or msg_id is not None:
        raise click.UsageError("--batch FILE takes no SUBJECT, BODY, --header or --msg-id (put them in FILE)")
    msgs = _read_batch(batch_file)
    with connected(conn) as nc:
        b = _js(nc).atomic_batch()
        last = len(msgs) - 1
        for i, m in enumerate(msgs):
            opts = {k: v for k, v in m.items() if k not in ("subject", "data", "at")}
            try:
                if i < last:
                    b.add(m["subject"], m["data"], **opts)
                else:
                    ack = b.commit(m["subject"], m["data"], **opts)
            except (ValueError, TypeError) as exc:  # bad input: raised before it was sent
                b.discard()
                raise CliError(f"{m['at']}: {exc}; nothing stored") from None
    if as_json:
        echo_json({"stream": ack.stream, "seq": ack.seq, "first_seq": ack.first_seq, "batch_id": ack.batch_id,
                   "count": ack.count})
    else:
        click.echo(f"Stored atomic batch {ack.batch_id} in {ack.stream}: {comma(ack.count)} messages, "
                   f"sequences {ack.first_seq}-{ack.seq}")


# ============================================================================== consumer


@click.group("consumer", cls=JetwireGroup)
def consumer() -> None:
    """JetStream consumers: ls, info, add, rm, next."""


@consumer.command("ls")
@click.argument("stream_name", metavar="STREAM")
@click.option("-n", "--names", is_flag=True, help="Names only, one a line.")
@json_option
@connection_options
def consumer_ls(stream_name: str, names: bool, as_json: bool, conn: Dict[str, Any]) -> None:
    """List a stream's consumers."""
    with connected(conn) as nc:
        js = _js(nc)
        if names:
            _echo_names(js.consumer_names(stream_name), as_json)
            return
        infos = sorted(js.list_consumers(stream_name), key=lambda i: i.name)
    _echo_list(infos, as_json, lambda i: i.to_json_dict(), f"No consumers defined on {stream_name}",
               ("Name", "Description", "Created", "Ack Pending", "Unprocessed", "Last Delivery"),
               f"Consumers on {stream_name}",
               lambda i: (i.name, i.config.description or "", human_time(i.created), comma(i.num_ack_pending),
                          comma(i.num_pending), ago(i.delivered.last_active)))


def _print_consumer_info(i: Any) -> None:
    c = i.config
    con = console()
    con.print(_kv_table([
        ("Name", i.name),
        ("Stream", i.stream_name),
        ("Durable Name", c.durable_name),
        ("Description", c.description),
        ("Created", human_time(i.created)),
        ("Pull Mode", "no" if c.deliver_subject else "yes"),
        ("Deliver Subject", c.deliver_subject),
        ("Filter Subject", c.filter_subject or (", ".join(c.filter_subjects) if c.filter_subjects else None)),
        ("Deliver Policy", _enum(c.deliver_policy) + (f" (from {c.opt_start_seq})" if c.opt_start_seq else "")),
        ("Ack Policy", _enum(c.ack_policy)),
        ("Ack Wait", human_duration(c.ack_wait)),
        ("Replay Policy", _enum(c.replay_policy)),
        ("Max Deliver", _limit(c.max_deliver)),
        ("Max Ack Pending", _limit(c.max_ack_pending)),
        ("Max Waiting Pulls", _limit(c.max_waiting)),
        ("Inactive Threshold", human_duration(c.inactive_threshold) if c.inactive_threshold else None),
        ("Paused", "yes" if i.paused else None),
    ], title="Configuration"))
    con.print(_kv_table([
        ("Last Delivered Message", f"Consumer sequence: {i.delivered.consumer_seq} Stream sequence: "
                                   f"{i.delivered.stream_seq}"),
        ("Acknowledgment Floor", f"Consumer sequence: {i.ack_floor.consumer_seq} Stream sequence: "
                                 f"{i.ack_floor.stream_seq}"),
        ("Outstanding Acks", comma(i.num_ack_pending)),
        ("Redelivered Messages", comma(i.num_redelivered)),
        ("Waiting Pulls", comma(i.num_waiting)),
        ("Unprocessed Messages", comma(i.num_pending)),
    ], title="State"))


@consumer.command("info")
@click.argument("stream_name", metavar="STREAM")
@click.argument("name")
@json_option
@connection_options
def consumer_info(stream_name: str, name: str, as_json: bool, conn: Dict[str, Any]) -> None:
    """Show a consumer's configuration and state."""
    with connected(conn) as nc:
        info = _js(nc).consumer(stream_name, name).info()
    if as_json:
        echo_json(info.to_json_dict())
    else:
        _print_consumer_info(info)


def _deliver(value: str) -> Dict[str, Any]:
    v = value.strip().lower()
    if v in ("all", "last", "new", "last_per_subject", "last-per-subject"):
        return {"deliver_policy": v.replace("-", "_")}
    try:
        seq = int(v)
    except ValueError:
        pass
    else:
        if seq < 1:
            raise click.BadParameter("a start sequence is at least 1", param_hint="'--deliver'")
        return {"deliver_policy": "by_start_sequence", "opt_start_seq": seq}
    try:
        dt = parse_time_input(value, naive_local=True)  # a time without a zone is local time
    except ValueError:
        raise click.BadParameter(f"{value!r}: use all, last, new, last_per_subject, a sequence or an ISO time",
                                 param_hint="'--deliver'") from None
    return {"deliver_policy": "by_start_time", "opt_start_time": dt.astimezone(timezone.utc)}


@consumer.command("add")
@click.argument("stream_name", metavar="STREAM")
@click.argument("name")
@click.option("--filter", "filters", multiple=True, help="Filter subject(s) (comma separated or repeated).")
@click.option("--ack", type=click.Choice(["explicit", "none", "all"]), default=None, help="Ack policy [default: explicit]")
@click.option("--deliver", default=None, help="all, last, new, last_per_subject, a start sequence or an ISO time.")
@click.option("--replay", type=click.Choice(["instant", "original"]), default=None)
@click.option("--ack-wait", type=DURATION, default=None, help="e.g. 30s")
@click.option("--max-deliver", type=int, default=None, help="-1: unlimited")
@click.option("--max-ack-pending", type=int, default=None)
@click.option("--max-waiting", type=int, default=None, help="Pull requests waiting at most.")
@click.option("--inactive-threshold", type=DURATION, default=None)
@click.option("--description", default=None)
@click.option("--headers-only", is_flag=True, default=None)
@click.option("--ephemeral", is_flag=True, help="A named ephemeral consumer instead of a durable one.")
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="A JSON consumer configuration; options given here override it.")
@json_option
@connection_options
def consumer_add(stream_name: str, name: str, filters: Any, ack: Optional[str], deliver: Optional[str],
                 replay: Optional[str], ack_wait: Optional[float], max_deliver: Optional[int],
                 max_ack_pending: Optional[int], max_waiting: Optional[int], inactive_threshold: Optional[float],
                 description: Optional[str], headers_only: Optional[bool], ephemeral: bool,
                 config_file: Optional[str], as_json: bool, conn: Dict[str, Any]) -> None:
    """Create a pull consumer (durable unless --ephemeral)."""
    from ..jetstream.models import ConsumerConfig

    base = _load_config(config_file, ConsumerConfig)
    fields: Dict[str, Any] = {}
    if ephemeral:
        fields["name"] = name
    else:
        fields["durable_name"] = name
    fl = split_list(filters)
    if len(fl) == 1:
        fields["filter_subject"] = fl[0]
    elif fl:
        fields["filter_subjects"] = fl
    if deliver:
        fields.update(_deliver(deliver))
    for k, v in (("ack_policy", ack), ("replay_policy", replay), ("ack_wait", ack_wait),
                 ("max_deliver", max_deliver), ("max_ack_pending", max_ack_pending), ("max_waiting", max_waiting),
                 ("inactive_threshold", inactive_threshold), ("description", description),
                 ("headers_only", headers_only)):
        if v is not None:
            fields[k] = v
    with connected(conn) as nc:
        c = _js(nc).create_consumer(stream_name, base, **fields)
        info = c.info()
    if as_json:
        echo_json(info.to_json_dict())
    else:
        click.echo(f"Consumer {stream_name} > {info.name} was created")
        _print_consumer_info(info)


@consumer.command("rm")
@click.argument("stream_name", metavar="STREAM")
@click.argument("name")
@force_option
@connection_options
def consumer_rm(stream_name: str, name: str, force: bool, conn: Dict[str, Any]) -> None:
    """Delete a consumer."""
    _confirm(force, f"delete consumer {stream_name} > {name}")
    with connected(conn) as nc:
        _js(nc).delete_consumer(stream_name, name)
    click.echo(f"Consumer {stream_name} > {name} was deleted")


def _msg_json(m: Any) -> Dict[str, Any]:
    d: Dict[str, Any] = {"subject": m.subject}
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


@consumer.command("next")
@click.argument("stream_name", metavar="STREAM")
@click.argument("name")
@click.option("--count", default=1, show_default=True, type=click.IntRange(min=1), help="Messages to fetch.")
@click.option("--no-ack", is_flag=True, help="Do not acknowledge the messages.")
@click.option("--timeout", default="5s", show_default=True, type=DURATION, help="How long to wait.")
@click.option("--raw", is_flag=True, help="Only the message data, one a line.")
@json_option
@connection_options
def consumer_next(stream_name: str, name: str, count: int, no_ack: bool, timeout: float, raw: bool, as_json: bool,
                  conn: Dict[str, Any]) -> None:
    """Fetch and print (and acknowledge) the next messages of a pull consumer."""
    got = 0
    with connected(conn) as nc:
        c = _js(nc).consumer(stream_name, name)
        deadline = time.monotonic() + timeout
        while got < count:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            k = 0
            for m in c.fetch(count - got, max_wait=remaining):
                k += 1
                got += 1
                _show_js_msg(m, raw, as_json)
                if not no_ack and m.reply:
                    m.ack_sync(timeout=5)
            if not k:
                break
    if got < count:
        raise CliError(f"timeout: received {got} of {count} messages")


def _show_js_msg(m: Any, raw: bool, as_json: bool) -> None:
    if as_json:
        d = _msg_json(m)
        md = _metadata(m)
        if md:
            d["metadata"] = md
        echo_json(d, compact=True)
    elif raw:
        click.echo(text_or_repr(m.data))
    else:
        md = _metadata(m)
        where = f" stream seq {md['stream_seq']} consumer seq {md['consumer_seq']}" if md else ""
        click.echo(f"[{human_time(datetime.now(timezone.utc))}] subj: {m.subject} /{where} / bytes: {len(m.data)}")
        _show_headers(m)
        click.echo(text_or_repr(m.data))
        click.echo("")
    sys.stdout.flush()


def _metadata(m: Any) -> Optional[Dict[str, Any]]:
    try:
        md = m.metadata
    except Exception:
        return None
    if md is None:
        return None
    return {"stream": md.stream, "consumer": md.consumer, "stream_seq": md.sequence.stream,
            "consumer_seq": md.sequence.consumer, "num_delivered": md.num_delivered, "num_pending": md.num_pending,
            "timestamp": md.timestamp.isoformat() if md.timestamp else None}


def _show_headers(m: Any) -> None:
    h = headers_dict(m.headers)
    for k, vs in h.items():
        for v in vs:
            click.echo(f"{k}: {v}")
    if h:
        click.echo("")


# ============================================================================== kv


@click.group("kv", cls=JetwireGroup)
def kv() -> None:
    """Key-value buckets: ls, add, info, get, put, del, history, watch, rm."""


def _kv_status_row(s: Any) -> list:
    return [s.bucket, s.description or "", _enum(s.storage), str(s.replicas), str(s.history),
            human_duration(s.ttl) if s.ttl else "-", comma(s.values), human_bytes(s.bytes)]


def _kv_status_json(s: Any) -> Dict[str, Any]:
    return {"bucket": s.bucket, "description": s.description, "values": s.values, "history": s.history,
            "ttl": s.ttl, "bytes": s.bytes, "storage": _enum(s.storage), "replicas": s.replicas,
            "compressed": s.is_compressed, "stream_info": s.stream_info.to_json_dict()}


@kv.command("ls")
@click.option("-n", "--names", is_flag=True, help="Names only, one a line.")
@json_option
@connection_options
def kv_ls(names: bool, as_json: bool, conn: Dict[str, Any]) -> None:
    """List key-value buckets."""
    with connected(conn) as nc:
        js = _js(nc)
        if names:
            _echo_names(js.key_value_store_names(), as_json)
            return
        stats = sorted(js.key_value_stores(), key=lambda s: s.bucket)
    _echo_list(stats, as_json, _kv_status_json, "No key-value buckets defined",
               ("Bucket", "Description", "Storage", "Replicas", "History", "TTL", "Values", "Size"),
               "Key-value buckets", _kv_status_row)


def _print_kv_status(s: Any) -> None:
    console().print(_kv_table([
        ("Bucket", s.bucket), ("Description", s.description), ("Values", comma(s.values)),
        ("History", s.history), ("TTL", human_duration(s.ttl) if s.ttl else "forever"),
        ("Size", human_bytes(s.bytes)), ("Storage", _enum(s.storage)), ("Replicas", s.replicas),
        ("Compressed", "yes" if s.is_compressed else "no"), ("Backing Stream", s.stream_info.config.name),
    ], title=f"Key-value bucket {s.bucket}"))


@kv.command("add")
@click.argument("bucket")
@click.option("--history", default=1, show_default=True, type=click.IntRange(1, 64), help="Values kept per key.")
@click.option("--ttl", type=DURATION, default=None, help="How long values live (e.g. 1h).")
@click.option("--storage", type=click.Choice(["file", "memory"]), default="file", show_default=True)
@click.option("--replicas", type=click.IntRange(1, 5), default=1, show_default=True)
@click.option("--max-value-size", type=SIZE, default=None)
@click.option("--max-bytes", type=SIZE, default=None, help="Bucket size limit.")
@click.option("--description", default=None)
@click.option("--compress", is_flag=True, help="S2 compression.")
@json_option
@connection_options
def kv_add(bucket: str, history: int, ttl: Optional[float], storage: str, replicas: int,
           max_value_size: Optional[int], max_bytes: Optional[int], description: Optional[str], compress: bool,
           as_json: bool, conn: Dict[str, Any]) -> None:
    """Create a key-value bucket."""
    fields: Dict[str, Any] = {"bucket": bucket, "history": history, "storage": storage, "replicas": replicas}
    for k, v in (("ttl", ttl), ("max_value_size", max_value_size), ("max_bytes", max_bytes),
                 ("description", description)):
        if v is not None:
            fields[k] = v
    if compress:
        fields["compression"] = True
    with connected(conn) as nc:
        s = _js(nc).create_key_value(**fields).status()
    if as_json:
        echo_json(_kv_status_json(s))
    else:
        _print_kv_status(s)


@kv.command("info")
@click.argument("bucket")
@json_option
@connection_options
def kv_info(bucket: str, as_json: bool, conn: Dict[str, Any]) -> None:
    """Show a bucket's status."""
    with connected(conn) as nc:
        s = _js(nc).key_value(bucket).status()
    if as_json:
        echo_json(_kv_status_json(s))
    else:
        _print_kv_status(s)


def _entry_json(e: Any) -> Dict[str, Any]:
    d: Dict[str, Any] = {"bucket": e.bucket, "key": e.key, "revision": e.revision,
                         "created": e.created.isoformat() if e.created else None, "delta": e.delta,
                         "operation": _enum(e.operation)}
    try:
        d["value"] = e.value.decode()
    except UnicodeDecodeError:
        d["value_b64"] = base64.b64encode(e.value).decode()
    return d


@kv.command("get")
@click.argument("bucket")
@click.argument("key")
@click.option("--revision", type=click.IntRange(min=1), default=None)
@click.option("--raw", is_flag=True, help="Only the value.")
@json_option
@connection_options
def kv_get(bucket: str, key: str, revision: Optional[int], raw: bool, as_json: bool, conn: Dict[str, Any]) -> None:
    """Show a key's value."""
    with connected(conn) as nc:
        e = _js(nc).key_value(bucket).get(key, revision=revision)
    if as_json:
        echo_json(_entry_json(e))
    elif raw:
        write_bytes(e.value)
    else:
        click.echo(f"{bucket} > {key} revision: {e.revision} created @ {human_time(e.created)}")
        click.echo("")
        click.echo(text_or_repr(e.value))


@kv.command("put")
@click.argument("bucket")
@click.argument("key")
@click.argument("value", required=False)
@json_option
@connection_options
def kv_put(bucket: str, key: str, value: Optional[str], as_json: bool, conn: Dict[str, Any]) -> None:
    """Store VALUE under KEY (VALUE '-' or absent: read standard input)."""
    data = read_body("-" if value is None else value)
    with connected(conn) as nc:
        rev = _js(nc).key_value(bucket).put(key, data)
    if as_json:
        echo_json({"bucket": bucket, "key": key, "revision": rev})
    else:
        click.echo(f"{bucket} > {key} revision {rev}")


@kv.command("del")
@click.argument("bucket")
@click.argument("key")
@click.option("--purge", is_flag=True, help="Remove the key's history too.")
@force_option
@connection_options
def kv_del(bucket: str, key: str, purge: bool, force: bool, conn: Dict[str, Any]) -> None:
    """Delete (or purge) a key."""
    _confirm(force, f"{'purge' if purge else 'delete'} key {bucket} > {key}")
    with connected(conn) as nc:
        b = _js(nc).key_value(bucket)
        b.purge(key) if purge else b.delete(key)
    click.echo(f"{bucket} > {key} was {'purged' if purge else 'deleted'}")


@kv.command("history")
@click.argument("bucket")
@click.argument("key")
@json_option
@connection_options
def kv_history(bucket: str, key: str, as_json: bool, conn: Dict[str, Any]) -> None:
    """Show every stored revision of a key."""
    with connected(conn) as nc:
        entries = _js(nc).key_value(bucket).history(key)
    if as_json:
        echo_json([_entry_json(e) for e in entries])
        return
    t = table("Key", "Revision", "Op", "Created", "Length", "Value", title=f"History of {bucket} > {key}")
    for e in entries:
        t.add_row(e.key, str(e.revision), _enum(e.operation), human_time(e.created), comma(len(e.value)),
                  text_or_repr(e.value, limit=40))
    console().print(t)


@kv.command("watch")
@click.argument("bucket")
@click.argument("key", required=False, default=">")
@click.option("--count", type=click.IntRange(min=1), default=None, help="Exit after this many updates.")
@click.option("--updates-only", is_flag=True, help="No current values first.")
@click.option("--history", "include_history", is_flag=True, help="Every stored revision first.")
@json_option
@connection_options
def kv_watch(bucket: str, key: str, count: Optional[int], updates_only: bool, include_history: bool, as_json: bool,
             conn: Dict[str, Any]) -> None:
    """Print changes to a bucket (KEY may be a pattern; default: every key)."""
    seen = 0
    with connected(conn) as nc:
        w = _js(nc).key_value(bucket).watch(key, updates_only=updates_only, include_history=include_history)
        click.echo(f"Watching {bucket} > {key}", err=True)
        try:
            for e in w:
                if e is None:
                    continue
                seen += 1
                if as_json:
                    echo_json(_entry_json(e), compact=True)
                else:
                    click.echo(f"[{human_time(e.created)}] {_enum(e.operation)} {e.bucket} > {e.key}: "
                               f"{text_or_repr(e.value, limit=200)}")
                sys.stdout.flush()
                if count is not None and seen >= count:
                    break
        finally:
            w.stop()


@kv.command("rm")
@click.argument("bucket")
@force_option
@connection_options
def kv_rm(bucket: str, force: bool, conn: Dict[str, Any]) -> None:
    """Delete a bucket and everything in it."""
    _confirm(force, f"delete bucket {bucket}")
    with connected(conn) as nc:
        _js(nc).delete_key_value(bucket)
    click.echo(f"Bucket {bucket} was deleted")


# ============================================================================== object


@click.group("object", cls=JetwireGroup)
def object_() -> None:
    """Object stores: ls, add, put, get, info, rm."""


def _obj_status_json(s: Any) -> Dict[str, Any]:
    return {"bucket": s.bucket, "description": s.description, "size": s.size, "ttl": s.ttl, "sealed": s.sealed,
            "storage": _enum(s.storage), "replicas": s.replicas, "stream_info": s.stream_info.to_json_dict()}


def _obj_info_json(i: Any) -> Dict[str, Any]:
    d = i.to_json_dict() if hasattr(i, "to_json_dict") else {}
    d.update({"name": i.name, "bucket": i.bucket, "size": i.size, "chunks": i.chunks, "digest": i.digest,
              "mtime": i.mtime.isoformat() if i.mtime else None, "deleted": i.deleted})
    return d


def _print_obj_status(s: Any) -> None:
    console().print(_kv_table([
        ("Bucket", s.bucket), ("Description", s.description), ("Size", human_bytes(s.size)),
        ("TTL", human_duration(s.ttl) if s.ttl else "forever"), ("Sealed", "yes" if s.sealed else "no"),
        ("Storage", _enum(s.storage)), ("Replicas", s.replicas), ("Backing Stream", s.stream_info.config.name),
    ], title=f"Object store {s.bucket}"))


def _print_obj_info(i: Any) -> None:
    console().print(_kv_table([
        ("Name", i.name), ("Bucket", i.bucket), ("Description", i.description), ("Size", human_bytes(i.size)),
        ("Modified", human_time(i.mtime)), ("Chunks", i.chunks), ("Digest", i.digest),
        ("Link", f"{i.link.bucket}/{i.link.name or ''}" if i.link else None),
        ("Deleted", "yes" if i.deleted else None),
    ], title=f"Object {i.bucket} > {i.name}"))


@object_.command("add")
@click.argument("bucket")
@click.option("--ttl", type=DURATION, default=None)
@click.option("--storage", type=click.Choice(["file", "memory"]), default="file", show_default=True)
@click.option("--replicas", type=click.IntRange(1, 5), default=1, show_default=True)
@click.option("--max-bytes", type=SIZE, default=None)
@click.option("--description", default=None)
@json_option
@connection_options
def object_add(bucket: str, ttl: Optional[float], storage: str, replicas: int, max_bytes: Optional[int],
               description: Optional[str], as_json: bool, conn: Dict[str, Any]) -> None:
    """Create an object store bucket."""
    fields: Dict[str, Any] = {"bucket": bucket, "storage": storage, "replicas": replicas}
    for k, v in (("ttl", ttl), ("max_bytes", max_bytes), ("description", description)):
        if v is not None:
            fields[k] = v
    with connected(conn) as nc:
        s = _js(nc).create_object_store(**fields).status()
    if as_json:
        echo_json(_obj_status_json(s))
    else:
        _print_obj_status(s)


@object_.command("ls")
@click.argument("bucket", required=False)
@click.option("--deleted", "show_deleted", is_flag=True, help="Include deleted objects.")
@json_option
@connection_options
def object_ls(bucket: Optional[str], show_deleted: bool, as_json: bool, conn: Dict[str, Any]) -> None:
    """List object store buckets, or the objects in BUCKET."""
    with connected(conn) as nc:
        js = _js(nc)
        if bucket is None:
            stats = sorted(js.object_stores(), key=lambda s: s.bucket)
            _echo_list(stats, as_json, _obj_status_json, "No object stores defined",
                       ("Bucket", "Description", "Storage", "Replicas", "Size", "Sealed"), "Object stores",
                       lambda s: (s.bucket, s.description or "", _enum(s.storage), str(s.replicas),
                                  human_bytes(s.size), "yes" if s.sealed else "no"))
            return
        objs = sorted(js.object_store(bucket).list(show_deleted=show_deleted), key=lambda i: i.name or "")
    _echo_list(objs, as_json, _obj_info_json, f"No objects in {bucket}", ("Name", "Size", "Modified", "Digest"),
               f"Objects in {bucket}",
               lambda i: (i.name + (" (deleted)" if i.deleted else ""), human_bytes(i.size), human_time(i.mtime),
                          i.digest or ""))


@object_.command("put")
@click.argument("bucket")
@click.argument("file", type=click.Path(exists=False, dir_okay=False, allow_dash=True))
@click.option("--name", default=None, help="Object name (default: the file's path as given; needed for '-').")
@click.option("--description", default=None)
@json_option
@connection_options
def object_put(bucket: str, file: str, name: Optional[str], description: Optional[str], as_json: bool,
               conn: Dict[str, Any]) -> None:
    """Store FILE ('-': standard input) in BUCKET."""
    from ..jetstream.obj_models import ObjectMeta

    if file == "-" and not name:
        raise click.UsageError("--name is needed when reading standard input")
    if file != "-" and not os.path.isfile(file):
        raise click.BadParameter(f"file {file!r} does not exist", param_hint="'FILE'")
    with connected(conn) as nc:
        store = _js(nc).object_store(bucket)
        meta = ObjectMeta(name=name or file, description=description)
        if file == "-":
            info = store.put(meta, stdin_bytes())
        else:
            with open(file, "rb") as f:
                info = store.put(meta, f)
    if as_json:
        echo_json(_obj_info_json(info))
    else:
        click.echo(f"Stored {info.name} in {bucket}: {human_bytes(info.size)} in {info.chunks} chunk(s), {info.digest}")


@object_.command("get")
@click.argument("bucket")
@click.argument("name")
@click.option("-O", "--output", default=None, metavar="FILE",
              help="Where to write it ('-': standard output; default: the object's base name here).")
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
@connection_options
def object_get(bucket: str, name: str, output: Optional[str], force: bool, conn: Dict[str, Any]) -> None:
    """Fetch an object (its SHA-256 digest is checked)."""
    target = output or os.path.basename(name.rstrip("/")) or name
    if target != "-" and os.path.exists(target) and not force:
        raise CliError(f"{target} exists (use --force to overwrite, or --output)")
    with connected(conn) as nc:
        store = _js(nc).object_store(bucket)
        if target == "-":
            data = store.get_bytes(name)
            write_bytes(data)
            return
        store.get_file(name, target)
        size = os.path.getsize(target)
    click.echo(f"Wrote {human_bytes(size)} to {target}", err=True)


@object_.command("info")
@click.argument("bucket")
@click.argument("name", required=False)
@json_option
@connection_options
def object_info(bucket: str, name: Optional[str], as_json: bool, conn: Dict[str, Any]) -> None:
    """Show a bucket's status, or an object's metadata."""
    with connected(conn) as nc:
        store = _js(nc).object_store(bucket)
        if name is None:
            s = store.status()
            echo_json(_obj_status_json(s)) if as_json else _print_obj_status(s)
            return
        i = store.get_info(name)
    echo_json(_obj_info_json(i)) if as_json else _print_obj_info(i)


@object_.command("rm")
@click.argument("bucket")
@click.argument("name", required=False)
@force_option
@connection_options
def object_rm(bucket: str, name: Optional[str], force: bool, conn: Dict[str, Any]) -> None:
    """Delete an object, or (without NAME) the whole bucket."""
    _confirm(force, f"delete {'object ' + bucket + ' > ' + name if name else 'object store ' + bucket}")
    with connected(conn) as nc:
        js = _js(nc)
        if name is None:
            js.delete_object_store(bucket)
            click.echo(f"Object store {bucket} was deleted")
        else:
            js.object_store(bucket).delete(name)
            click.echo(f"Object {bucket} > {name} was deleted")


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
def pub(subject: str, body: Optional[str], headers: Any, count: int, reply: Optional[str], sleep: Optional[float],
        quiet: bool, conn: Dict[str, Any]) -> None:
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
def sub(subject: str, queue: Optional[str], count: Optional[int], timeout: Optional[float], raw: bool, as_json: bool,
        conn: Dict[str, Any]) -> None:
    """Print messages arriving on SUBJECT."""
    n = 0
    try:
        with connected(conn) as nc:
            for m in _incoming(nc, subject, queue, timeout, "Subscribing on", "message", lambda: f"{n} received"):
                n += 1
                if as_json:
                    echo_json(_msg_json(m), compact=True)
                elif raw:
                    click.echo(text_or_repr(m.data))
                else:
                    click.echo(f"[#{n}] Received on {m.subject!r}" + (f" with reply {m.reply!r}" if m.reply else ""))
                    _show_headers(m)
                    click.echo(text_or_repr(m.data))
                    click.echo("")
                sys.stdout.flush()
                if count is not None and n >= count:
                    break
    except KeyboardInterrupt:
        _interrupted(f"{n} received")


def _incoming(nc: Any, subject: str, queue: Optional[str], timeout: Optional[float], banner: str, noun: str,
              done: Callable[[], str]) -> Iterator[Any]:
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
def req(subject: str, body: Optional[str], headers: Any, timeout: float, raw: bool, as_json: bool,
        conn: Dict[str, Any]) -> None:
    """Send a request and print the reply."""
    hdrs = parse_headers(headers)
    data = read_body(body)
    with connected(conn) as nc:
        t0 = time.perf_counter()
        m = nc.request(subject, data, timeout=timeout, headers=hdrs)
        dt = time.perf_counter() - t0
    if as_json:
        d = _msg_json(m)
        d["rtt_us"] = round(dt * 1e6, 1)
        echo_json(d)
    elif raw:
        click.echo(text_or_repr(m.data))
    else:
        click.echo(f"Received with rtt {dt * 1e3:.3f}ms")
        _show_headers(m)
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
def reply(subject: str, template: Optional[str], queue: Optional[str], echo: bool, count: Optional[int],
          timeout: Optional[float], headers: Any, quiet: bool, conn: Dict[str, Any]) -> None:
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
                               lambda: f"{n} answered"):
                if not m.reply:
                    continue  # a plain publish: nothing to answer
                n += 1
                if echo:
                    m.respond(m.data, headers=m.headers)
                else:
                    fields = {b"count": str(n).encode(), b"request": m.data,
                              b"subject": m.subject.encode("utf-8", "surrogateescape")}
                    m.respond(_FIELD.sub(lambda f: fields[f.group(1)], raw), headers=hdrs)
                if not quiet:
                    click.echo(f"[#{n}] Answered a request on {m.subject!r}")
                    sys.stdout.flush()
                if count is not None and n >= count:
                    break
            nc.flush(timeout=10)
    except KeyboardInterrupt:
        _interrupted(f"{n} answered")


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
def events(count: Optional[int], timeout: Optional[float], fmt: str, kinds: tuple, domain: Optional[str],
           as_json: bool, conn: Dict[str, Any]) -> None:
    """Show JetStream advisories and metrics ($JS.EVENT.ADVISORY.> and $JS.EVENT.METRIC.>),
    rendered by jetwire.events; json and cloudevents print one document a line
    (--json is --format json)."""
    import orjson

    import jetwire
    from jetwire.events import render

    if as_json:
        fmt = "json"
    n = 0
    with connected(conn) as nc:
        with nc.jetstream(domain=domain).events(kinds=kinds or None) as stream:
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
                _interrupted(f"{n} received")


# ============================================================================== cluster


def _leader(info: Any) -> Optional[str]:
    return info.cluster.leader if info.cluster is not None else None


def _new_leader(leader_fn: Callable[[], Optional[str]], old: Optional[str], wait: float) -> Optional[str]:
    """The leader ``leader_fn()`` names once it is another than ``old`` (None when none is
    elected within ``wait`` seconds; the info requests fail while there is no leader)."""
    import jetwire

    deadline = time.monotonic() + wait
    while True:
        try:
            lead = leader_fn()
            if lead and lead != old:
                return lead
        except jetwire.NatsError:
            pass
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.1)


def _stepped_down(what: str, old: Optional[str], new: Optional[str], wait: float, as_json: bool,
                  **ids: Any) -> None:
    if as_json:
        echo_json({**ids, "previous_leader": old, "leader": new})
    if new is None:
        raise CliError(f"{what}: the leader ({old or 'unknown'}) stepped down, no new leader within "
                       f"{human_duration(wait)}")
    if not as_json:
        click.echo(f"{what}: leader stepped down ({old or 'unknown'}), new leader {new}")


preferred_option = click.option("--preferred", metavar="SERVER", default=None,
                                help="The server that should lead next (else the cluster picks).")
wait_option = click.option("--wait", type=DURATION, default="10s", show_default=True,
                           help="How long to wait for the new leader.")


@stream.group("cluster", cls=JetwireGroup)
def stream_cluster() -> None:
    """Clustered streams: step-down, peer-remove."""


@stream_cluster.command("step-down")
@click.argument("name")
@preferred_option
@wait_option
@json_option
@connection_options
def stream_cluster_step_down(name: str, preferred: Optional[str], wait: float, as_json: bool,
                             conn: Dict[str, Any]) -> None:
    """Make the leader of a stream step down; prints the new leader."""
    with connected(conn) as nc:
        js = _js(nc)
        old = _leader(js.stream_info(name))
        js.stream_leader_stepdown(name, preferred)
        poll = nc.jetstream(timeout=1)  # a request nobody answers (no leader yet) waits this long
        new = _new_leader(lambda: _leader(poll.stream_info(name)), old, wait)
    _stepped_down(f"Stream {name}", old, new, wait, as_json, stream=name)


@stream_cluster.command("peer-remove")
@click.argument("name")
@click.argument("peer")
@force_option
@json_option
@connection_options
def stream_cluster_peer_remove(name: str, peer: str, force: bool, as_json: bool, conn: Dict[str, Any]) -> None:
    """Remove server PEER from the replicas of a stream (a new one is placed if it can be)."""
    _confirm(force, f"remove peer {peer} from stream {name}")
    with connected(conn) as nc:
        _js(nc).remove_stream_peer(name, peer)
    if as_json:
        echo_json({"stream": name, "peer": peer, "removed": True})
    else:
        click.echo(f"Peer {peer} was removed from stream {name}")


@consumer.group("cluster", cls=JetwireGroup)
def consumer_cluster() -> None:
    """Clustered consumers: step-down."""


@consumer_cluster.command("step-down")
@click.argument("stream_name", metavar="STREAM")
@click.argument("name")
@preferred_option
@wait_option
@json_option
@connection_options
def consumer_cluster_step_down(stream_name: str, name: str, preferred: Optional[str], wait: float, as_json: bool,
                               conn: Dict[str, Any]) -> None:
    """Make the leader of a consumer step down; prints the new leader."""
    with connected(conn) as nc:
        js = _js(nc)
        old = _leader(js.consumer_info(stream_name, name))
        js.consumer_leader_stepdown(stream_name, name, preferred)
        poll = nc.jetstream(timeout=1)  # a request nobody answers (no leader yet) waits this long
        new = _new_leader(lambda: _leader(poll.consumer_info(stream_name, name)), old, wait)
    _stepped_down(f"Consumer {stream_name} > {name}", old, new, wait, as_json, stream=stream_name, consumer=name)


def _meta_leader(nc: Any) -> Optional[str]:
    """The meta group's leader as ``$SYS.REQ.SERVER.PING.JSZ`` reports it (system account)."""
    import orjson

    m = nc.request("$SYS.REQ.SERVER.PING.JSZ", b"{}", timeout=1)
    data = orjson.loads(m.data).get("data") or {}
    return (data.get("meta_cluster") or {}).get("leader")


@click.group("cluster", cls=JetwireGroup)
def server_cluster() -> None:
    """The JetStream meta group: step-down (a user of the system account)."""


@server_cluster.command("step-down")
@preferred_option
@wait_option
@json_option
@connection_options
def server_cluster_step_down(preferred: Optional[str], wait: float, as_json: bool, conn: Dict[str, Any]) -> None:
    """Make the JetStream meta leader step down; prints the new leader."""
    with connected(conn) as nc:
        try:
            old = _meta_leader(nc)
        except Exception:
            old = None
        _js(nc).meta_leader_stepdown(preferred)
        new = _new_leader(lambda: _meta_leader(nc), old, wait)
    _stepped_down("JetStream meta group", old, new, wait, as_json)


COMMANDS = [stream, consumer, kv, object_, pub, sub, req, reply, events]
