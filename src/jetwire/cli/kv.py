"""``jetwire kv``: ls, add, info, get, put, del, history, watch and rm of key-value buckets.
"""
from __future__ import annotations

import base64
import sys
from typing import TYPE_CHECKING, Any

import click

from ._click import (
    DURATION,
    SIZE,
    JetwireGroup,
    connected,
    connection_options,
    console,
    echo_json,
    read_body,
    table,
    text_or_repr,
    write_bytes,
)
from ._conn import ConnSettings, comma, human_bytes, human_duration, human_time
from ._shared import confirm, echo_list, echo_names, enum_text, force_option, js_of, json_option, kv_table

if TYPE_CHECKING:
    from ..jetstream.kv_models import KeyValueEntry, KeyValueStatus

# ============================================================================== kv


@click.group("kv", cls=JetwireGroup)
def kv() -> None:
    """Key-value buckets: ls, add, info, get, put, del, history, watch, rm."""


def _kv_status_row(s: KeyValueStatus) -> list[str]:
    return [s.bucket, s.description or "", enum_text(s.storage), str(s.replicas), str(s.history),
            human_duration(s.ttl) if s.ttl else "-", comma(s.values), human_bytes(s.bytes)]


def _kv_status_json(s: KeyValueStatus) -> dict[str, object]:
    return {"bucket": s.bucket, "description": s.description, "values": s.values, "history": s.history,
            "ttl": s.ttl, "bytes": s.bytes, "storage": enum_text(s.storage), "replicas": s.replicas,
            "compressed": s.is_compressed, "stream_info": s.stream_info.to_json_dict()}


@kv.command("ls")
@click.option("-n", "--names", is_flag=True, help="Names only, one a line.")
@json_option
@connection_options
def kv_ls(names: bool, as_json: bool, conn: ConnSettings) -> None:
    """List key-value buckets."""
    with connected(conn) as nc:
        js = js_of(nc)
        if names:
            echo_names(js.key_value_store_names(), as_json)
            return
        stats = sorted(js.key_value_stores(), key=lambda s: s.bucket)
    echo_list(stats, as_json, _kv_status_json, "No key-value buckets defined",
               ("Bucket", "Description", "Storage", "Replicas", "History", "TTL", "Values", "Size"),
               "Key-value buckets", _kv_status_row)


def _print_kv_status(s: KeyValueStatus) -> None:
    console().print(kv_table([
        ("Bucket", s.bucket), ("Description", s.description), ("Values", comma(s.values)),
        ("History", s.history), ("TTL", human_duration(s.ttl) if s.ttl else "forever"),
        ("Size", human_bytes(s.bytes)), ("Storage", enum_text(s.storage)), ("Replicas", s.replicas),
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
def kv_add(bucket: str, history: int, ttl: float | None, storage: str, replicas: int,
           max_value_size: int | None, max_bytes: int | None, description: str | None, compress: bool,
           as_json: bool, conn: ConnSettings) -> None:
    """Create a key-value bucket."""
    fields: dict[str, Any] = {"bucket": bucket, "history": history, "storage": storage, "replicas": replicas}
    for k, v in (("ttl", ttl), ("max_value_size", max_value_size), ("max_bytes", max_bytes),
                 ("description", description)):
        if v is not None:
            fields[k] = v
    if compress:
        fields["compression"] = True
    with connected(conn) as nc:
        s = js_of(nc).create_key_value(**fields).status()
    if as_json:
        echo_json(_kv_status_json(s))
    else:
        _print_kv_status(s)


@kv.command("info")
@click.argument("bucket")
@json_option
@connection_options
def kv_info(bucket: str, as_json: bool, conn: ConnSettings) -> None:
    """Show a bucket's status."""
    with connected(conn) as nc:
        s = js_of(nc).key_value(bucket).status()
    if as_json:
        echo_json(_kv_status_json(s))
    else:
        _print_kv_status(s)


def _entry_json(e: KeyValueEntry) -> dict[str, object]:
    d: dict[str, object] = {"bucket": e.bucket, "key": e.key, "revision": e.revision,
                         "created": e.created.isoformat() if e.created else None, "delta": e.delta,
                         "operation": enum_text(e.operation)}
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
def kv_get(bucket: str, key: str, revision: int | None, raw: bool, as_json: bool, conn: ConnSettings) -> None:
    """Show a key's value."""
    with connected(conn) as nc:
        e = js_of(nc).key_value(bucket).get(key, revision=revision)
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
def kv_put(bucket: str, key: str, value: str | None, as_json: bool, conn: ConnSettings) -> None:
    """Store VALUE under KEY (VALUE '-' or absent: read standard input)."""
    data = read_body("-" if value is None else value)
    with connected(conn) as nc:
        rev = js_of(nc).key_value(bucket).put(key, data)
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
def kv_del(bucket: str, key: str, purge: bool, force: bool, conn: ConnSettings) -> None:
    """Delete (or purge) a key."""
    confirm(force, f"{'purge' if purge else 'delete'} key {bucket} > {key}")
    with connected(conn) as nc:
        b = js_of(nc).key_value(bucket)
        b.purge(key) if purge else b.delete(key)
    click.echo(f"{bucket} > {key} was {'purged' if purge else 'deleted'}")


@kv.command("history")
@click.argument("bucket")
@click.argument("key")
@json_option
@connection_options
def kv_history(bucket: str, key: str, as_json: bool, conn: ConnSettings) -> None:
    """Show every stored revision of a key."""
    with connected(conn) as nc:
        entries = js_of(nc).key_value(bucket).history(key)
    if as_json:
        echo_json([_entry_json(e) for e in entries])
        return
    t = table("Key", "Revision", "Op", "Created", "Length", "Value", title=f"History of {bucket} > {key}")
    for e in entries:
        t.add_row(e.key, str(e.revision), enum_text(e.operation), human_time(e.created), comma(len(e.value)),
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
def kv_watch(bucket: str, key: str, count: int | None, updates_only: bool, include_history: bool, as_json: bool,
             conn: ConnSettings) -> None:
    """Print changes to a bucket (KEY may be a pattern; default: every key)."""
    seen = 0
    with connected(conn) as nc:
        w = js_of(nc).key_value(bucket).watch(key, updates_only=updates_only, include_history=include_history)
        click.echo(f"Watching {bucket} > {key}", err=True)
        try:
            for e in w:
                if e is None:
                    continue
                seen += 1
                if as_json:
                    echo_json(_entry_json(e), compact=True)
                else:
                    click.echo(f"[{human_time(e.created)}] {enum_text(e.operation)} {e.bucket} > {e.key}: "
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
def kv_rm(bucket: str, force: bool, conn: ConnSettings) -> None:
    """Delete a bucket and everything in it."""
    confirm(force, f"delete bucket {bucket}")
    with connected(conn) as nc:
        js_of(nc).delete_key_value(bucket)
    click.echo(f"Bucket {bucket} was deleted")
