"""``jetwire object``: add, ls, put, get, info and rm of object stores.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

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
    stdin_bytes,
    write_bytes,
)
from ._conn import ConnSettings, human_bytes, human_duration, human_time
from ._shared import confirm, echo_list, enum_text, force_option, js_of, json_option, kv_table

if TYPE_CHECKING:
    from ..jetstream.obj_models import ObjectInfo, ObjectStoreStatus

# ============================================================================== object


@click.group("object", cls=JetwireGroup)
def object_() -> None:
    """Object stores: ls, add, put, get, info, rm."""


def _obj_status_json(s: ObjectStoreStatus) -> dict[str, object]:
    return {"bucket": s.bucket, "description": s.description, "size": s.size, "ttl": s.ttl, "sealed": s.sealed,
            "storage": enum_text(s.storage), "replicas": s.replicas, "stream_info": s.stream_info.to_json_dict()}


def _obj_info_json(i: ObjectInfo) -> dict[str, object]:
    d = i.to_json_dict() if hasattr(i, "to_json_dict") else {}
    d.update({"name": i.name, "bucket": i.bucket, "size": i.size, "chunks": i.chunks, "digest": i.digest,
              "mtime": i.mtime.isoformat() if i.mtime else None, "deleted": i.deleted})
    return d


def _print_obj_status(s: ObjectStoreStatus) -> None:
    console().print(kv_table([
        ("Bucket", s.bucket), ("Description", s.description), ("Size", human_bytes(s.size)),
        ("TTL", human_duration(s.ttl) if s.ttl else "forever"), ("Sealed", "yes" if s.sealed else "no"),
        ("Storage", enum_text(s.storage)), ("Replicas", s.replicas), ("Backing Stream", s.stream_info.config.name),
    ], title=f"Object store {s.bucket}"))


def _print_obj_info(i: ObjectInfo) -> None:
    console().print(kv_table([
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
def object_add(bucket: str, ttl: float | None, storage: str, replicas: int, max_bytes: int | None,
               description: str | None, as_json: bool, conn: ConnSettings) -> None:
    """Create an object store bucket."""
    fields: dict[str, Any] = {"bucket": bucket, "storage": storage, "replicas": replicas}
    for k, v in (("ttl", ttl), ("max_bytes", max_bytes), ("description", description)):
        if v is not None:
            fields[k] = v
    with connected(conn) as nc:
        s = js_of(nc).create_object_store(**fields).status()
    if as_json:
        echo_json(_obj_status_json(s))
    else:
        _print_obj_status(s)


@object_.command("ls")
@click.argument("bucket", required=False)
@click.option("--deleted", "show_deleted", is_flag=True, help="Include deleted objects.")
@json_option
@connection_options
def object_ls(bucket: str | None, show_deleted: bool, as_json: bool, conn: ConnSettings) -> None:
    """List object store buckets, or the objects in BUCKET."""
    with connected(conn) as nc:
        js = js_of(nc)
        if bucket is None:
            stats = sorted(js.object_stores(), key=lambda s: s.bucket)
            echo_list(stats, as_json, _obj_status_json, "No object stores defined",
                       ("Bucket", "Description", "Storage", "Replicas", "Size", "Sealed"), "Object stores",
                       lambda s: (s.bucket, s.description or "", enum_text(s.storage), str(s.replicas),
                                  human_bytes(s.size), "yes" if s.sealed else "no"))
            return
        objs = sorted(js.object_store(bucket).list(show_deleted=show_deleted), key=lambda i: i.name or "")
    echo_list(objs, as_json, _obj_info_json, f"No objects in {bucket}", ("Name", "Size", "Modified", "Digest"),
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
def object_put(bucket: str, file: str, name: str | None, description: str | None, as_json: bool,
               conn: ConnSettings) -> None:
    """Store FILE ('-': standard input) in BUCKET."""
    from ..jetstream.obj_models import ObjectMeta

    if file == "-" and not name:
        raise click.UsageError("--name is needed when reading standard input")
    if file != "-" and not os.path.isfile(file):
        raise click.BadParameter(f"file {file!r} does not exist", param_hint="'FILE'")
    with connected(conn) as nc:
        store = js_of(nc).object_store(bucket)
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
def object_get(bucket: str, name: str, output: str | None, force: bool, conn: ConnSettings) -> None:
    """Fetch an object (its SHA-256 digest is checked)."""
    target = output or os.path.basename(name.rstrip("/")) or name
    if target != "-" and os.path.exists(target) and not force:
        raise CliError(f"{target} exists (use --force to overwrite, or --output)")
    with connected(conn) as nc:
        store = js_of(nc).object_store(bucket)
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
def object_info(bucket: str, name: str | None, as_json: bool, conn: ConnSettings) -> None:
    """Show a bucket's status, or an object's metadata."""
    with connected(conn) as nc:
        store = js_of(nc).object_store(bucket)
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
def object_rm(bucket: str, name: str | None, force: bool, conn: ConnSettings) -> None:
    """Delete an object, or (without NAME) the whole bucket."""
    confirm(force, f"delete {'object ' + bucket + ' > ' + name if name else 'object store ' + bucket}")
    with connected(conn) as nc:
        js = js_of(nc)
        if name is None:
            js.delete_object_store(bucket)
            click.echo(f"Object store {bucket} was deleted")
        else:
            js.object_store(bucket).delete(name)
            click.echo(f"Object {bucket} > {name} was deleted")
