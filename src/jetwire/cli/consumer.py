"""``jetwire consumer``: ls, info, add, rm, next and ``cluster step-down``, modelled on the nats
CLI; tables for humans, ``--json`` for scripts.
"""
from __future__ import annotations

import sys
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import click

from .._units import parse_time_input
from ._click import (
    DURATION,
    CliError,
    JetwireGroup,
    connected,
    connection_options,
    console,
    echo_json,
    split_list,
    text_or_repr,
)
from ._conn import ConnSettings, ago, comma, human_duration, human_time
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
    msg_json,
    show_headers,
)
from .cluster import leader_of, new_leader, preferred_option, stepped_down, wait_option

if TYPE_CHECKING:
    from ..jetstream.models import ConsumerInfo
    from ..msg import Msg

# ============================================================================== consumer


@click.group("consumer", cls=JetwireGroup)
def consumer() -> None:
    """JetStream consumers: ls, info, add, rm, next."""


@consumer.command("ls")
@click.argument("stream_name", metavar="STREAM")
@click.option("-n", "--names", is_flag=True, help="Names only, one a line.")
@json_option
@connection_options
def consumer_ls(stream_name: str, names: bool, as_json: bool, conn: ConnSettings) -> None:
    """List a stream's consumers."""
    with connected(conn) as nc:
        js = js_of(nc)
        if names:
            echo_names(js.consumer_names(stream_name), as_json)
            return
        infos = sorted(js.list_consumers(stream_name), key=lambda i: i.name)
    echo_list(infos, as_json, lambda i: i.to_json_dict(), f"No consumers defined on {stream_name}",
               ("Name", "Description", "Created", "Ack Pending", "Unprocessed", "Last Delivery"),
               f"Consumers on {stream_name}",
               lambda i: (i.name, i.config.description or "", human_time(i.created), comma(i.num_ack_pending),
                          comma(i.num_pending), ago(i.delivered.last_active)))


def _print_consumer_info(i: ConsumerInfo) -> None:
    c = i.config
    con = console()
    con.print(kv_table([
        ("Name", i.name),
        ("Stream", i.stream_name),
        ("Durable Name", c.durable_name),
        ("Description", c.description),
        ("Created", human_time(i.created)),
        ("Pull Mode", "no" if c.deliver_subject else "yes"),
        ("Deliver Subject", c.deliver_subject),
        ("Filter Subject", c.filter_subject or (", ".join(c.filter_subjects) if c.filter_subjects else None)),
        ("Deliver Policy", enum_text(c.deliver_policy) + (f" (from {c.opt_start_seq})" if c.opt_start_seq else "")),
        ("Ack Policy", enum_text(c.ack_policy)),
        ("Ack Wait", human_duration(c.ack_wait)),
        ("Replay Policy", enum_text(c.replay_policy)),
        ("Max Deliver", limit_text(c.max_deliver)),
        ("Max Ack Pending", limit_text(c.max_ack_pending)),
        ("Max Waiting Pulls", limit_text(c.max_waiting)),
        ("Inactive Threshold", human_duration(c.inactive_threshold) if c.inactive_threshold else None),
        ("Paused", "yes" if i.paused else None),
    ], title="Configuration"))
    con.print(kv_table([
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
def consumer_info(stream_name: str, name: str, as_json: bool, conn: ConnSettings) -> None:
    """Show a consumer's configuration and state."""
    with connected(conn) as nc:
        info = js_of(nc).consumer_info(stream_name, name)  # pull or push
    if as_json:
        echo_json(info.to_json_dict())
    else:
        _print_consumer_info(info)


def _deliver(value: str) -> dict[str, Any]:
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
    return {"deliver_policy": "by_start_time", "opt_start_time": dt.astimezone(UTC)}


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
def consumer_add(stream_name: str, name: str, filters: tuple[str, ...], ack: str | None, deliver: str | None,
                 replay: str | None, ack_wait: float | None, max_deliver: int | None,
                 max_ack_pending: int | None, max_waiting: int | None, inactive_threshold: float | None,
                 description: str | None, headers_only: bool | None, ephemeral: bool,
                 config_file: str | None, as_json: bool, conn: ConnSettings) -> None:
    """Create a pull consumer (durable unless --ephemeral)."""
    from ..jetstream.models import ConsumerConfig

    base = load_config(config_file, ConsumerConfig)
    fields: dict[str, Any] = {}
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
        c = js_of(nc).create_consumer(stream_name, base, **fields)
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
def consumer_rm(stream_name: str, name: str, force: bool, conn: ConnSettings) -> None:
    """Delete a consumer."""
    confirm(force, f"delete consumer {stream_name} > {name}")
    with connected(conn) as nc:
        js_of(nc).delete_consumer(stream_name, name)
    click.echo(f"Consumer {stream_name} > {name} was deleted")




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
                  conn: ConnSettings) -> None:
    """Fetch and print (and acknowledge) the next messages of a pull consumer."""
    got = 0
    with connected(conn) as nc:
        c = js_of(nc).consumer(stream_name, name)
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


def _show_js_msg(m: Msg, raw: bool, as_json: bool) -> None:
    if as_json:
        d = msg_json(m)
        md = _metadata(m)
        if md:
            d["metadata"] = md
        echo_json(d, compact=True)
    elif raw:
        click.echo(text_or_repr(m.data))
    else:
        md = _metadata(m)
        where = f" stream seq {md['stream_seq']} consumer seq {md['consumer_seq']}" if md else ""
        click.echo(f"[{human_time(datetime.now(UTC))}] subj: {m.subject} /{where} / bytes: {len(m.data)}")
        show_headers(m)
        click.echo(text_or_repr(m.data))
        click.echo("")
    sys.stdout.flush()


def _metadata(m: Msg) -> dict[str, object] | None:
    try:
        md = m.metadata
    except Exception:
        return None
    if md is None:
        return None
    return {"stream": md.stream, "consumer": md.consumer, "stream_seq": md.sequence.stream,
            "consumer_seq": md.sequence.consumer, "num_delivered": md.num_delivered, "num_pending": md.num_pending,
            "timestamp": md.timestamp.isoformat() if md.timestamp else None}






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
def consumer_cluster_step_down(stream_name: str, name: str, preferred: str | None, wait: float, as_json: bool,
                               conn: ConnSettings) -> None:
    """Make the leader of a consumer step down; prints the new leader."""
    with connected(conn) as nc:
        js = js_of(nc)
        old = leader_of(js.consumer_info(stream_name, name))
        js.consumer_leader_stepdown(stream_name, name, preferred)
        poll = nc.jetstream(timeout=1)  # a request nobody answers (no leader yet) waits this long
        new = new_leader(lambda: leader_of(poll.consumer_info(stream_name, name)), old, wait)
    stepped_down(f"Consumer {stream_name} > {name}", old, new, wait, as_json, stream=stream_name, consumer=name)
