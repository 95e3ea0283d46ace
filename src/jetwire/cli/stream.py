"""``jetwire stream``: ls, info, add, edit, rm, purge, get, publish and ``cluster`` (step-down,
peer-remove), modelled on the nats CLI; tables for humans, ``--json`` for scripts.
"""
from __future__ import annotations

import base64
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

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
    text_or_repr,
    write_bytes,
)
from ._conn import ConnSettings, ago, comma, human_bytes, human_duration, human_time
from ._shared import (
    confirm,
    echo_list,
    echo_names,
    enum_text,
    force_option,
    js_of,
    json_option,
    kv_table,
    limit_text,
    load_config,
)
from .cluster import leader_of, new_leader, preferred_option, stepped_down, wait_option

if TYPE_CHECKING:
    from ..jetstream._json import JSONObject
    from ..jetstream.models import RawStreamMsg, StreamInfo

_R = TypeVar("_R")

# ============================================================================== stream


@click.group("stream", cls=JetwireGroup)
def stream() -> None:
    """JetStream streams: ls, info, add, edit, rm, purge, get."""


def _stream_row(info: StreamInfo) -> list[str | None]:
    c, s = info.config, info.state
    return [c.name, ", ".join(c.subjects or []) or "-", enum_text(c.storage), str(c.num_replicas),
            comma(s.messages), human_bytes(s.bytes), str(s.consumer_count), ago(s.last_ts) if s.messages else "never"]


@stream.command("ls")
@click.option("--subject", default=None, help="Only streams that hold this subject.")
@click.option("-n", "--names", is_flag=True, help="Names only, one a line.")
@json_option
@connection_options
def stream_ls(subject: str | None, names: bool, as_json: bool, conn: ConnSettings) -> None:
    """List streams."""
    with connected(conn) as nc:
        js = js_of(nc)
        if names:
            echo_names(js.stream_names(subject), as_json)
            return
        infos = sorted(js.list_streams(subject), key=lambda i: i.config.name or "")
    echo_list(infos, as_json, lambda i: i.to_json_dict(), "No streams defined",
               ("Name", "Subjects", "Storage", "Replicas", "Messages", "Size", "Consumers", "Last Message"),
               "Streams", _stream_row)


def _print_stream_info(info: StreamInfo) -> None:
    c, s = info.config, info.state
    con = console()
    con.print(kv_table([
        ("Name", c.name),
        ("Description", c.description),
        ("Subjects", ", ".join(c.subjects or [])),
        ("Created", human_time(info.created)),
        ("Storage", enum_text(c.storage)),
        ("Replicas", c.num_replicas),
        ("Retention", enum_text(c.retention)),
        ("Discard", enum_text(c.discard)),
        ("Max Messages", limit_text(c.max_msgs)),
        ("Max Per Subject", limit_text(c.max_msgs_per_subject)),
        ("Max Bytes", limit_text(c.max_bytes, human_bytes)),
        ("Max Age", human_duration(c.max_age) if c.max_age else "unlimited"),
        ("Max Message Size", limit_text(c.max_msg_size, human_bytes)),
        ("Duplicate Window", human_duration(c.duplicate_window)),
        ("Allows Direct", "yes" if c.allow_direct else "no"),
        ("Allows Rollups", "yes" if c.allow_rollup_hdrs else "no"),
        ("Deny Delete", "yes" if c.deny_delete else None),
        ("Deny Purge", "yes" if c.deny_purge else None),
        ("Sealed", "yes" if c.sealed else None),
        ("Compression", enum_text(c.compression) if c.compression and enum_text(c.compression) != "none" else None),
    ], title="Configuration"))
    if info.cluster and info.cluster.leader:
        con.print(kv_table([("Name", info.cluster.name), ("Leader", info.cluster.leader)], title="Cluster"))
    con.print(kv_table([
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
def stream_info(name: str, as_json: bool, conn: ConnSettings) -> None:
    """Show a stream's configuration and state."""
    with connected(conn) as nc:
        info = js_of(nc).stream(name).info()
    if as_json:
        echo_json(info.to_json_dict())
    else:
        _print_stream_info(info)


def stream_config_options(f: Callable[..., _R]) -> Callable[..., _R]:
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


def _stream_fields(kw: dict[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    subjects = split_list(kw.pop("subjects", ()))
    if subjects:
        fields["subjects"] = subjects
    for opt, name in _CFG_MAP.items():
        v = kw.get(opt)
        if v is not None:
            fields[name] = v
    return fields




@stream.command("add")
@click.argument("name")
@stream_config_options
@json_option
@connection_options
def stream_add(name: str, as_json: bool, conn: ConnSettings, config_file: str | None, **kw: Any) -> None:
    """Create a stream (subjects default to the stream's name)."""
    from ..jetstream.models import StreamConfig

    base = load_config(config_file, StreamConfig)
    fields = _stream_fields(kw)
    fields["name"] = name
    with connected(conn) as nc:
        st = js_of(nc).create_stream(base, **fields)
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
def stream_edit(name: str, as_json: bool, conn: ConnSettings, config_file: str | None, **kw: Any) -> None:
    """Change a stream's configuration (only the options given)."""
    from ..jetstream.models import StreamConfig

    fields = _stream_fields(kw)
    with connected(conn) as nc:
        js = js_of(nc)
        base = load_config(config_file, StreamConfig) or js.stream(name).info().config
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
def stream_rm(name: str, force: bool, conn: ConnSettings) -> None:
    """Delete a stream and all its messages."""
    confirm(force, f"delete stream {name}")
    with connected(conn) as nc:
        js_of(nc).delete_stream(name)
    click.echo(f"Stream {name} was deleted")


@stream.command("purge")
@click.argument("name")
@click.option("--subject", default=None, help="Only messages on this subject.")
@click.option("--seq", type=click.IntRange(min=1), default=None, help="Purge up to (not including) this sequence.")
@click.option("--keep", type=click.IntRange(min=0), default=None, help="Keep this many newest messages.")
@force_option
@json_option
@connection_options
def stream_purge(name: str, subject: str | None, seq: int | None, keep: int | None, force: bool,
                 as_json: bool, conn: ConnSettings) -> None:
    """Remove messages from a stream."""
    if seq is not None and keep is not None:
        raise click.UsageError("--seq and --keep exclude each other")
    confirm(force, f"purge stream {name}")
    with connected(conn) as nc:
        st = js_of(nc).stream(name)
        purged = st.purge(subject=subject, sequence=seq, keep=keep)
        info = st.info()
    if as_json:
        echo_json({"purged": purged, "stream": info.to_json_dict()})
    else:
        n = f"{comma(purged)} messages" if isinstance(purged, int) and not isinstance(purged, bool) else "messages"
        click.echo(f"Purged {n} from {name}; {comma(info.state.messages)} left")


def _raw_msg_json(m: RawStreamMsg) -> dict[str, object]:
    d: dict[str, object] = {"subject": m.subject, "seq": m.seq, "time": m.time.isoformat() if m.time else None,
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
def stream_get(name: str, seq: int | None, last_for: str | None, direct: bool, raw: bool, as_json: bool,
               conn: ConnSettings) -> None:
    """Show a stored message by sequence (or the last one for a subject)."""
    if (seq is None) == (last_for is None):
        raise click.UsageError("give a sequence or --last-for SUBJECT")
    with connected(conn) as nc:
        st = js_of(nc).stream(name)
        if seq is not None:
            m = st.get_msg(seq, direct=direct)
        else:
            assert last_for is not None  # one of the two (checked above)
            m = st.get_last_msg_for_subject(last_for, direct=direct)
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


def _read_batch(path: str) -> list[JSONObject]:
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
    for item, at in zip(items, where, strict=False):
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
def stream_publish(subject: str | None, body: str | None, headers: tuple[str, ...], msg_id: str | None,
                   batch_file: str | None, as_json: bool, conn: ConnSettings) -> None:
    """Publish BODY ('-': standard input) to SUBJECT and wait for the stream's ack, or an
    atomic batch with --batch FILE (the last message commits it)."""
    if batch_file is None:
        if subject is None:
            raise click.UsageError("give SUBJECT [BODY], or --batch FILE")
        hdrs = parse_headers(headers)
        data = read_body(body)
        with connected(conn) as nc:
            ack = js_of(nc).publish(subject, data, headers=hdrs, msg_id=msg_id)
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
        b = js_of(nc).atomic_batch()
        last = len(msgs) - 1
        for i, m in enumerate(msgs):
            opts = {k: v for k, v in m.items() if k not in ("subject", "data", "at")}
            try:
                if i < last:
                    b.add(m["subject"], m["data"], **opts)
                else:
                    batch_ack = b.commit(m["subject"], m["data"], **opts)
            except (ValueError, TypeError) as exc:  # bad input: raised before it was sent
                b.discard()
                raise CliError(f"{m['at']}: {exc}; nothing stored") from None
    if as_json:
        echo_json({"stream": batch_ack.stream, "seq": batch_ack.seq, "first_seq": batch_ack.first_seq,
                   "batch_id": batch_ack.batch_id, "count": batch_ack.count})
    else:
        click.echo(f"Stored atomic batch {batch_ack.batch_id} in {batch_ack.stream}: {comma(batch_ack.count)} "
                   f"messages, sequences {batch_ack.first_seq}-{batch_ack.seq}")




@stream.group("cluster", cls=JetwireGroup)
def stream_cluster() -> None:
    """Clustered streams: step-down, peer-remove."""


@stream_cluster.command("step-down")
@click.argument("name")
@preferred_option
@wait_option
@json_option
@connection_options
def stream_cluster_step_down(name: str, preferred: str | None, wait: float, as_json: bool,
                             conn: ConnSettings) -> None:
    """Make the leader of a stream step down; prints the new leader."""
    with connected(conn) as nc:
        js = js_of(nc)
        old = leader_of(js.stream_info(name))
        js.stream_leader_stepdown(name, preferred)
        poll = nc.jetstream(timeout=1)  # a request nobody answers (no leader yet) waits this long
        new = new_leader(lambda: leader_of(poll.stream_info(name)), old, wait)
    stepped_down(f"Stream {name}", old, new, wait, as_json, stream=name)


@stream_cluster.command("peer-remove")
@click.argument("name")
@click.argument("peer")
@force_option
@json_option
@connection_options
def stream_cluster_peer_remove(name: str, peer: str, force: bool, as_json: bool, conn: ConnSettings) -> None:
    """Remove server PEER from the replicas of a stream (a new one is placed if it can be)."""
    confirm(force, f"remove peer {peer} from stream {name}")
    with connected(conn) as nc:
        js_of(nc).remove_stream_peer(name, peer)
    if as_json:
        echo_json({"stream": name, "peer": peer, "removed": True})
    else:
        click.echo(f"Peer {peer} was removed from stream {name}")
