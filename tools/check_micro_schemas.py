"""Check that what jetwire's services answer validates against the published
``io.nats.micro.v1.*`` JSON schemas.

    python tools/check_micro_schemas.py                       # schemas in ../shared/schemas/micro
    python tools/check_micro_schemas.py --schemas DIR          # a folder holding v1/*.json

Starts an embedded nats-server, runs services in both flavours (with and without
metadata, description, stats data and queue groups; after requests, errors and a handler
that raises), asks ``$SRV.PING|INFO|STATS`` on all three subjects of each, and validates
every answer (formats included: ``started`` must be RFC 3339) against the schema its
``type`` names. Exit status 0 when every document is valid, 1 when one is not, 2 when
the schemas are not there under CI (``CI=true``; elsewhere it says so and exits 0). CI
runs it; the test suite does not need the schemas.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SCHEMAS = ROOT.parent / "shared" / "schemas" / "micro"
TYPES = {
    "io.nats.micro.v1.ping_response": "ping_response.json",
    "io.nats.micro.v1.info_response": "info_response.json",
    "io.nats.micro.v1.stats_response": "stats_response.json",
}


def load_validators(folder: Path) -> dict[str, Any]:
    """One jsonschema validator per document type, ``$ref``s to definitions.json resolved."""
    import jsonschema
    from referencing import Registry, Resource

    v1 = folder / "v1" if (folder / "v1").is_dir() else folder
    schemas = {p.name: json.loads(p.read_text()) for p in v1.glob("*.json")}
    registry: Any = Registry()
    for doc in schemas.values():
        registry = registry.with_resource(doc["$id"], Resource.from_contents(doc))
    out = {}
    for typ, fname in TYPES.items():
        schema = schemas[fname]
        cls = jsonschema.validators.validator_for(schema)
        out[typ] = cls(schema, registry=registry, format_checker=cls.FORMAT_CHECKER)
    return out


def validate(validators: dict[str, Any], where: str, doc: dict[str, Any]) -> list[str]:
    typ = doc.get("type")
    v = validators.get(typ)  # type: ignore[arg-type]
    if v is None:
        return [f"{where}: unknown type {typ!r}"]
    return [f"{where}: {'/'.join(str(p) for p in e.absolute_path) or '(document)'}: {e.message}"
            for e in v.iter_errors(doc)]


def services_blocking(url: str) -> list[tuple[Any, Any]]:
    """Blocking services: (connection, service) pairs, exercised."""
    import jetwire

    nc = jetwire.connect(url)
    full = jetwire.micro.add_service(nc, name="schema-sync", version="1.2.3-beta.1+b7", description="blocking",
                                     metadata={"flavour": "sync"}, queue_group="svcq",
                                     stats_handler=lambda ep: {"endpoint": ep.name, "n": ep.num_requests})
    full.add_endpoint("echo", lambda r: r.respond(r.data), metadata={"k": "v"})
    g = full.add_group("grp", queue_group="")
    g.add_endpoint("err", lambda r: r.respond_error("400", "bad"), subject="e.*")
    g.add_group("deep").add_endpoint("all", lambda r: r.respond(b""), subject=">")

    def boom(req: Any) -> None:
        raise RuntimeError("boom")

    full.add_endpoint("boom", boom)
    bare = jetwire.micro.add_service(nc, name="schema_bare", version="0.0.0")
    c = jetwire.connect(url)
    c.request("echo", b"x")
    for subject in ("grp.e.1", "boom"):
        try:
            jetwire.micro.request(c, subject, b"x")
        except jetwire.ServiceError:
            pass
    c.close()
    return [(nc, full), (nc, bare)]


async def services_aio(url: str) -> list[tuple[Any, Any]]:
    import jetwire.aio

    nc = await jetwire.aio.connect(url)
    svc = await jetwire.aio.micro.add_service(nc, name="schema-aio", version="2.0.0", description="",
                                              metadata={}, stats_handler=lambda ep: None)

    async def echo(req: Any) -> None:
        await req.respond(req.data)

    await svc.add_endpoint("echo", echo, subject="aio.echo", queue_group="")
    await jetwire.aio.micro.request(nc, "aio.echo", b"x")
    return [(nc, svc)]


def collect(url: str, svcs: list[tuple[Any, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """Every answer of every service to every monitoring subject, as (subject, document)."""
    import jetwire

    out = []
    with jetwire.connect(url) as c:
        for verb in ("PING", "INFO", "STATS"):
            for _, svc in svcs:
                for subject in (f"$SRV.{verb}.{svc.name}", f"$SRV.{verb}.{svc.name}.{svc.id}"):
                    out.append((subject, json.loads(c.request(subject, b"", timeout=5).data)))
            for doc in jetwire.micro.ping(c, timeout=0.5) if verb == "PING" else []:
                out.append((f"$SRV.{verb}", doc.to_dict()))
        inbox = c.new_inbox()
        sub = c.subscribe(inbox)
        for verb in ("PING", "INFO", "STATS"):  # the all-services subjects, raw
            c.publish(f"$SRV.{verb}", b"", reply=inbox)
            for _ in svcs:
                m = sub.next_msg(5)
                out.append((f"$SRV.{verb}", json.loads(m.data)))
    return out


def main(argv: Any = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--schemas", type=Path, default=DEFAULT_SCHEMAS, help=f"default: {DEFAULT_SCHEMAS}")
    args = ap.parse_args(argv)
    if not args.schemas.is_dir():
        # CI always has shared/ beside the clone; a checkout elsewhere may not
        print(f"check_micro_schemas: no schemas at {args.schemas}", file=sys.stderr)
        return 2 if os.environ.get("CI") == "true" else 0
    validators = load_validators(args.schemas)
    from jetwire.testing import NatsServer

    problems: list[str] = []
    n = 0
    with NatsServer() as server:
        url = server.url
        loop = asyncio.new_event_loop()  # the asyncio services run on their own thread
        thread = threading.Thread(target=loop.run_forever, daemon=True)
        thread.start()
        blocking = services_blocking(url)
        aio = asyncio.run_coroutine_threadsafe(services_aio(url), loop).result(30)
        try:
            docs = collect(url, blocking + aio)
            for where, doc in docs:
                problems += validate(validators, where, doc)
                n += 1
            types = {d["type"] for _, d in docs}
            if types != set(TYPES):
                problems.append(f"not every document type was seen: {sorted(types)}")
            stats = [d for _, d in docs if d["type"].endswith("stats_response") and d["name"] == "schema-sync"]
            if not any(e["num_errors"] for d in stats for e in d["endpoints"]):
                problems.append("the stats documents never showed an error: the check did not exercise them")
        finally:
            blocking[0][0].close()
            asyncio.run_coroutine_threadsafe(aio[0][0].close(), loop).result(30)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)
            loop.close()
    for p in problems:
        print(f"INVALID {p}", file=sys.stderr)
    print(f"check_micro_schemas: {n} documents, {len(problems)} problem(s), against {args.schemas}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
