"""Stream backup and restore throughput next to the server-side limit.

    python benchmarks/backup_bench.py                    # 200 MB stream, 3 rounds, embedded server
    python benchmarks/backup_bench.py --mb 50 --msg-size 4096 --rounds 5 --server nats://127.0.0.1:4222

One file stream of ``--mb`` MB of messages that do not compress (``--msg-size`` bytes
each). Rows, every one in MB/s of the stream's stored bytes (``state.bytes``):

  snapshot limit   the snapshot request alone: a minimal client that answers each
                   chunk's flow-control reply at once from the reader and discards
                   the data (what the server can send)
  backup aio/sync  ``js.snapshot_stream()`` into a directory (files written)
  restore limit    the restore request fed from memory by a minimal client, one
                   chunk at a time waiting for its ack (what the server can take)
  restore aio/sync ``js.restore_stream()`` from that directory

Prints the best and the median of each row and their ratios to its limit (target >= 0.8).
The machine is shared: run it when it is quiet, and look at the best of the rounds.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import jetwire
import jetwire.aio
from jetwire.testing import NatsServer

STREAM = "BACKUPBENCH"
CHUNK = 128 * 1024


def fill(url: str, mb: int, msg_size: int) -> dict[str, Any]:
    with jetwire.connect(url) as nc:
        js = nc.jetstream(timeout=30)
        try:
            js.delete_stream(STREAM)
        except jetwire.StreamNotFoundError:
            pass
        js.create_stream(name=STREAM, subjects=[f"{STREAM}.>"], storage="file")
        pool = os.urandom(8 * 1024 * 1024 + msg_size)
        n = mb * 1_000_000 // msg_size
        step = 7919 * 64 % (8 * 1024 * 1024)
        for i in range(n):
            off = (i * step) % (8 * 1024 * 1024)
            js.publish_async(f"{STREAM}.{i % 16}", pool[off:off + msg_size])
        js.publish_async_complete(timeout=120)
        info = js.stream_info(STREAM)
        return {"bytes": info.state.bytes, "messages": info.state.messages}


async def snapshot_limit(url: str) -> float:
    """Seconds for the server to send the whole snapshot to a client that discards it."""
    nc = await jetwire.aio.connect(url)
    try:
        link = nc.link
        inbox = nc.new_inbox()
        done = asyncio.get_running_loop().create_future()
        received = [0]

        def on_chunk(msg: Any) -> None:  # from the reader
            if msg.data:
                received[0] += len(msg.data)
                if msg.reply:
                    link.publish_raw(msg.reply, None, None, b"")
            elif not done.done():
                done.set_result(received[0])

        sub = link.subscribe_direct(inbox, on_chunk)
        js = nc.jetstream(timeout=30)
        t0 = time.perf_counter()
        await js.api_request(f"STREAM.SNAPSHOT.{STREAM}", {"deliver_subject": inbox, "chunk_size": CHUNK})
        await asyncio.wait_for(done, 300)
        took = time.perf_counter() - t0
        link.unsubscribe(sub)
        return took
    finally:
        await nc.close()


async def restore_limit(url: str, data: bytes, meta: dict[str, Any]) -> float:
    """Seconds for the server to take the snapshot from memory, one chunk per ack."""
    nc = await jetwire.aio.connect(url)
    try:
        js = nc.jetstream(timeout=30)
        request = nc.link.request_raw
        t0 = time.perf_counter()
        resp = await js.api_request(f"STREAM.RESTORE.{STREAM}", meta)
        deliver = resp["deliver_subject"]
        view = memoryview(data)
        for off in range(0, len(data), CHUNK):
            await request(deliver, view[off:off + CHUNK], None, 30)
        answer = await request(deliver, b"", None, 300)
        took = time.perf_counter() - t0
        assert b'"error"' not in answer.data[:200], answer.data[:300]
        return took
    finally:
        await nc.close()


async def backup_aio(url: str, dest: str) -> float:
    nc = await jetwire.aio.connect(url)
    try:
        js = nc.jetstream(timeout=30)
        t0 = time.perf_counter()
        await js.snapshot_stream(STREAM, dest)
        return time.perf_counter() - t0
    finally:
        await nc.close()


async def restore_aio(url: str, src: str) -> float:
    nc = await jetwire.aio.connect(url)
    try:
        js = nc.jetstream(timeout=30)
        t0 = time.perf_counter()
        await js.restore_stream(src)
        return time.perf_counter() - t0
    finally:
        await nc.close()


def backup_sync(url: str, dest: str) -> float:
    with jetwire.connect(url) as nc:
        js = nc.jetstream(timeout=30)
        t0 = time.perf_counter()
        js.snapshot_stream(STREAM, dest)
        return time.perf_counter() - t0


def restore_sync(url: str, src: str) -> float:
    with jetwire.connect(url) as nc:
        js = nc.jetstream(timeout=30)
        t0 = time.perf_counter()
        js.restore_stream(src)
        return time.perf_counter() - t0


def delete_stream(url: str) -> None:
    with jetwire.connect(url) as nc:
        nc.jetstream(timeout=30).delete_stream(STREAM)


def run(url: str, mb: int, msg_size: int, rounds: int) -> None:
    info = fill(url, mb, msg_size)
    nbytes = info["bytes"]
    print(f"stream {STREAM}: {info['messages']:,} messages of {msg_size} B, {nbytes / 1e6:.1f} MB stored; "
          f"jetwire {jetwire.__version__}, compiled core: {jetwire.speedups_enabled()}")
    tmp = tempfile.mkdtemp(prefix="backup-bench-")
    times: dict[str, list[float]] = {k: [] for k in ("snapshot limit", "backup aio", "backup sync",
                                                       "restore limit", "restore aio", "restore sync")}
    try:
        src = os.path.join(tmp, "ref")
        backup_sync(url, src)
        with open(os.path.join(src, "stream.tar.s2"), "rb") as f:
            data = f.read()
        print(f"snapshot file: {len(data) / 1e6:.1f} MB")
        with open(os.path.join(src, "backup.json"), "rb") as f:
            meta = json.load(f)
        for r in range(rounds):
            times["snapshot limit"].append(asyncio.run(snapshot_limit(url)))
            shutil.rmtree(os.path.join(tmp, "a"), ignore_errors=True)
            times["backup aio"].append(asyncio.run(backup_aio(url, os.path.join(tmp, "a"))))
            shutil.rmtree(os.path.join(tmp, "s"), ignore_errors=True)
            times["backup sync"].append(backup_sync(url, os.path.join(tmp, "s")))
            restores: list[tuple[str, Callable[[], float]]] = [("restore limit", lambda: asyncio.run(restore_limit(url, data, meta))),
                                     ("restore aio", lambda: asyncio.run(restore_aio(url, src))),
                                     ("restore sync", lambda: restore_sync(url, src))]
            for row, fn in restores:
                delete_stream(url)
                times[row].append(fn())
            print(f"round {r + 1}/{rounds}: " + ", ".join(f"{k} {nbytes / v[-1] / 1e6:.0f}" for k, v in times.items()),
                  file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\n{'row':<16}{'best MB/s':>12}{'median MB/s':>14}{'best / limit':>14}{'median / limit':>16}")
    for row, ts in times.items():
        limit = times["snapshot limit" if row.startswith(("snapshot", "backup")) else "restore limit"]
        best = nbytes / min(ts) / 1e6
        ratios = ("", "") if "limit" in row else (f"{min(limit) / min(ts):.2f}",
                                                   f"{statistics.median(limit) / statistics.median(ts):.2f}")
        print(f"{row:<16}{best:>12.0f}{nbytes / statistics.median(ts) / 1e6:>14.0f}{ratios[0]:>14}{ratios[1]:>16}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=200, help="stream size in MB (default 200)")
    ap.add_argument("--msg-size", type=int, default=1024, help="message size in bytes (default 1024)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--server", default=None, help="a nats-server URL (default: an embedded one)")
    args = ap.parse_args()
    if args.server:
        run(args.server, args.mb, args.msg_size, args.rounds)
        return
    with NatsServer() as srv:
        run(srv.url, args.mb, args.msg_size, args.rounds)


if __name__ == "__main__":
    main()
