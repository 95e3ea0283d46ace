"""Key-value and object-store throughput: jetwire (blocking and asyncio) side by side
with nats-py, on one embedded nats-server, in separate processes, in turns.

    python benchmarks/kv_obj.py                      # 3 rounds, embedded server
    python benchmarks/kv_obj.py --rounds 5 --scale 0.2 --server nats://127.0.0.1:4222

Rows (each client makes and deletes its own buckets; every result is checked):
  kv_put   N sequential ``put`` of a 128 B value, each waiting for its ack   (ops/s)
  kv_get   N sequential ``get`` of those keys (direct get)                  (ops/s)
  obj_put  one object of M MiB from memory (128 KiB chunks)                  (MB/s)
  obj_get  reading it back with the digest verified                          (MB/s)
Prints the median of each row per client and the ratio jetwire/nats-py.
"""
from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

CLIENTS = ["jetwire", "jetwire.aio", "nats-py"]
ROWS = ["kv_put", "kv_get", "obj_put", "obj_get"]
UNITS = {"kv_put": "ops/s", "kv_get": "ops/s", "obj_put": "MB/s", "obj_get": "MB/s"}
KV_OPS = 5000
OBJ_MIB = 64
VALUE = b"v" * 128


def _sizes(scale: float) -> tuple:
    return max(100, int(KV_OPS * scale)), max(1, int(OBJ_MIB * scale))


# ---------------------------------------------------------------------------------
# workers (one process per client and round)


def work_jetwire(url: str, scale: float) -> dict[str, float]:
    import jetwire

    n, mib = _sizes(scale)
    data = os.urandom(mib << 20)
    out: dict[str, float] = {}
    nc = jetwire.connect(url)
    js = nc.jetstream()
    bucket = "bkv_" + uuid.uuid4().hex[:10]
    kv = js.create_key_value(bucket=bucket)
    try:
        t = time.perf_counter()
        for i in range(n):
            kv.put(f"k{i}", VALUE)
        out["kv_put"] = n / (time.perf_counter() - t)
        t = time.perf_counter()
        for i in range(n):
            if kv.get(f"k{i}").value != VALUE:
                raise SystemExit("kv_get: wrong value")
        out["kv_get"] = n / (time.perf_counter() - t)
    finally:
        js.delete_key_value(bucket)
    obucket = "bob_" + uuid.uuid4().hex[:10]
    obs = js.create_object_store(bucket=obucket)
    try:
        t = time.perf_counter()
        obs.put_bytes("blob", data)
        out["obj_put"] = len(data) / 1e6 / (time.perf_counter() - t)
        t = time.perf_counter()
        h = hashlib.sha256()
        total = 0
        with obs.get("blob") as result:
            for chunk in result:
                h.update(chunk)
                total += len(chunk)
        out["obj_get"] = len(data) / 1e6 / (time.perf_counter() - t)
        if total != len(data) or h.digest() != hashlib.sha256(data).digest():
            raise SystemExit("obj_get: wrong data")
    finally:
        js.delete_object_store(obucket)
        nc.close()
    return out


async def _kv_rows_async(js: Any, bucket: str, n: int, out: dict[str, float], **options: Any) -> None:
    """The kv_put and kv_get rows on a new bucket (deleted after): the same calls in
    jetwire.aio and nats-py."""
    kv = await js.create_key_value(bucket=bucket, **options)
    try:
        t = time.perf_counter()
        for i in range(n):
            await kv.put(f"k{i}", VALUE)
        out["kv_put"] = n / (time.perf_counter() - t)
        t = time.perf_counter()
        for i in range(n):
            if (await kv.get(f"k{i}")).value != VALUE:
                raise SystemExit("kv_get: wrong value")
        out["kv_get"] = n / (time.perf_counter() - t)
    finally:
        await js.delete_key_value(bucket)


# How an asyncio client reads the object back: ``(size, digest_of)``, where ``digest_of()``
# (called after the timed part) gives the SHA-256 of what was read.
async def _read_chunks(obs: Any, name: str) -> tuple[int, Callable[[], bytes]]:
    """jetwire.aio streams the chunks: hashed as they come (inside the timed part, as
    nats-py checks the digest inside its get)."""
    h = hashlib.sha256()
    total = 0
    async with await obs.get(name) as result:
        async for chunk in result:
            h.update(chunk)
            total += len(chunk)
    return total, h.digest


async def _read_whole(obs: Any, name: str) -> tuple[int, Callable[[], bytes]]:
    """nats-py reads the whole object (and checks the digest itself)."""
    got = (await obs.get(name)).data
    return len(got), lambda: hashlib.sha256(got).digest()


async def work_async(client: str, url: str, scale: float) -> dict[str, float]:
    """All four rows for an asyncio client (jetwire.aio or nats-py): the same calls but
    for connecting, the KV options, and how an object is written and read."""
    if client == "nats-py":
        import nats as lib

        kv_options: dict[str, Any] = {"direct": True}
    else:
        import jetwire.aio as lib

        kv_options = {}
    n, mib = _sizes(scale)
    data = os.urandom(mib << 20)
    out: dict[str, float] = {}
    nc = await lib.connect(url)
    js = nc.jetstream()
    tag = "n" if client == "nats-py" else "a"
    await _kv_rows_async(js, tag + "kv_" + uuid.uuid4().hex[:10], n, out, **kv_options)
    obucket = tag + "ob_" + uuid.uuid4().hex[:10]
    obs = await js.create_object_store(bucket=obucket)
    put, read = (obs.put, _read_whole) if client == "nats-py" else (obs.put_bytes, _read_chunks)
    try:
        t = time.perf_counter()
        await put("blob", data)
        out["obj_put"] = len(data) / 1e6 / (time.perf_counter() - t)
        t = time.perf_counter()
        total, digest_of = await read(obs, "blob")
        out["obj_get"] = len(data) / 1e6 / (time.perf_counter() - t)
        if total != len(data) or digest_of() != hashlib.sha256(data).digest():
            raise SystemExit("obj_get: wrong data")
    finally:
        await js.delete_object_store(obucket)
        await nc.close()
    return out


def _run_async(coro: Any) -> Any:
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)


def worker(client: str, url: str, scale: float) -> None:
    if client == "jetwire":
        res = work_jetwire(url, scale)
    elif client in ("jetwire.aio", "nats-py"):
        res = _run_async(work_async(client, url, scale))
    else:
        raise SystemExit(f"unknown client {client!r}")
    print(json.dumps(res))


# ---------------------------------------------------------------------------------
# parent


def run_worker(client: str, url: str, scale: float) -> dict[str, Any]:
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", client, url, str(scale)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        lines = (out.stderr or out.stdout or "failed").strip().splitlines()
        return {"error": lines[-1] if lines else "failed"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv and argv[0] == "--worker":
        worker(argv[1], argv[2], float(argv[3]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--clients", default=",".join(CLIENTS))
    ap.add_argument("--server", default=None, help="URL of a running server (default: embedded)")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply op counts and object size")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    clients = [c.strip() for c in args.clients.split(",") if c.strip()]
    if "nats-py" in clients:
        try:
            import nats  # noqa: F401
        except ImportError:
            print("nats-py is not installed: comparing jetwire flavours only", file=sys.stderr)
            clients.remove("nats-py")

    server = None
    if args.server:
        url = args.server
    else:
        from jetwire.testing import NatsServer

        server = NatsServer().start()
        url = server.url
    results: dict[str, dict[str, list[float]]] = {c: {r: [] for r in ROWS} for c in clients}
    errors: dict[str, str] = {}
    try:
        for rnd in range(args.rounds):
            for client in clients:
                res = run_worker(client, url, args.scale)
                if "error" in res:
                    errors[client] = res["error"]
                    continue
                for r in ROWS:
                    results[client][r].append(res[r])
                print(f"round {rnd + 1} {client:12s} " + "  ".join(
                    f"{r}={res[r]:,.0f}" for r in ROWS), file=sys.stderr)
    finally:
        if server is not None:
            server.stop()

    med = {c: {r: (statistics.median(v) if v else None) for r, v in rows.items()} for c, rows in results.items()}
    if args.json:
        print(json.dumps({"median": med, "errors": errors}, indent=2))
        return 1 if errors else 0
    n, mib = _sizes(args.scale)
    print(f"\nmedians of {args.rounds} rounds ({n} KV ops, {mib} MiB object)")
    head = f"{'row':8s} {'unit':6s}" + "".join(f"{c:>14s}" for c in clients)
    base = "nats-py" if "nats-py" in clients else None
    if base:
        head += "".join(f"{c + '/py':>16s}" for c in clients if c != base)
    print(head)
    for r in ROWS:
        line = f"{r:8s} {UNITS[r]:6s}" + "".join(
            f"{med[c][r]:>14,.0f}" if med[c][r] is not None else f"{'-':>14s}" for c in clients)
        if base and med[base][r]:
            line += "".join(f"{(med[c][r] or 0) / med[base][r]:>15.2f}x" for c in clients if c != base)
        print(line)
    for c, e in errors.items():
        print(f"{c}: FAILED: {e}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
