"""Soak: mixed core, JetStream, KV and object-store traffic on one blocking connection for
minutes, with the server restarted (alternately kill -9 and a clean stop) every minute.
Not part of CI.

    python benchmarks/soak.py                          # 10 minutes, a restart every 60 s
    python benchmarks/soak.py --minutes 2 --restart-every 20

Traffic, each in its own thread, each retrying what a restart interrupts:
  js      publish_async with msg ids in batches, failed ones published again with the same
          id (the README's exactly-once pattern); a durable consume() acks every message
  core    request/reply round trips (a request that fails is asked again)
  kv      puts over 100 keys, a watcher checking every revision arrives once, in order
  obj     a 256 KiB object put and read back (digest checked)

Prints RSS after the warm-up and at the end (growth must be < 5 %), and every counter:
acked-but-lost, duplicates stored, consumer gaps, KV revisions missed or repeated,
object digest failures; exits 1 if any is not 0 or the growth is over 5 %.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import sys
import threading
import time
from typing import Any

import jetwire
from jetwire.testing import NatsServer


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class Soak:
    def __init__(self, url: str, stop: threading.Event, cap: int) -> None:
        self.stop = stop
        self.nc = jetwire.connect(url, reconnect_time_wait=0.05, max_reconnect_attempts=-1,
                                  error_cb=lambda e: None)
        self.js = self.nc.jetstream(timeout=5)
        self.c: dict = {k: 0 for k in ("js_published", "js_acked", "js_retried", "consumed", "requests",
                                        "request_retries", "kv_puts", "kv_seen", "obj_rounds", "obj_failures",
                                        "kv_repeated", "kv_out_of_order")}
        # bitmaps allocated up front: the soak's own bookkeeping does not grow
        self.acked = bytearray(cap)
        self.seen = bytearray(cap)
        self.n_acked = self.n_seen = self.seen_twice = 0
        self.kv_last = self.kv_count = 0
        self.errors: list = []

    def retry(self, fn: Any, *args: Any, **kw: Any) -> Any:
        """``fn(*args, **kw)`` again while the server is away."""
        while True:
            try:
                return fn(*args, **kw)
            except jetwire.NatsError:
                time.sleep(0.05)

    def setup(self) -> None:
        js = self.js
        self.retry(js.create_stream, name="SOAK", subjects=["soak.>"], storage="file")
        self.retry(js.create_consumer, "SOAK", durable_name="d", ack_wait=2.0)
        self.kv = self.retry(js.create_key_value, bucket="soak", history=1, storage="file")
        self.obs = self.retry(js.create_object_store, bucket="soakobj", storage="file")
        self.nc.subscribe("soak-svc", cb=lambda m: m.respond(m.data))

    # -- workers ---------------------------------------------------------------------
    def js_publisher(self) -> None:
        i = 0
        while not self.stop.is_set():
            batch = range(i, i + 500)
            todo = list(batch)
            while todo:
                futs = {}
                for j in todo:
                    while True:
                        try:
                            futs[j] = self.js.publish_async("soak.x", b"%d" % j, msg_id=f"m{j}", timeout=5)
                            break
                        except jetwire.NatsError:
                            time.sleep(0.01)
                for j, f in futs.items():
                    try:
                        f.result(30)
                        self.acked[j] = 1
                        self.n_acked += 1
                    except Exception:
                        pass
                failed = [j for j in todo if not self.acked[j]]
                self.c["js_retried"] += len(failed)
                todo = failed
            self.c["js_published"] += len(batch)
            self.c["js_acked"] = self.n_acked
            i += 500
            if i + 500 > len(self.acked):
                return
            time.sleep(0.1)

    def on_js(self, msg: Any) -> None:
        j = int(msg.data)
        if self.seen[j]:
            self.seen_twice += 1  # a redelivery (at least once): counted, not an error
        else:
            self.seen[j] = 1
            self.n_seen += 1
        self.c["consumed"] = self.n_seen
        msg.ack()

    def core(self) -> None:
        i = 0
        while not self.stop.is_set():
            try:
                r = self.nc.request("soak-svc", b"%d" % i, timeout=1)
            except jetwire.NatsError:
                self.c["request_retries"] += 1
                time.sleep(0.05)
                continue
            if r.data != b"%d" % i:
                self.errors.append(f"request {i} answered {r.data!r}")
            i += 1
            self.c["requests"] = i
            time.sleep(0.002)

    def kv_putter(self) -> None:
        i = 0
        while not self.stop.is_set():
            try:
                self.kv.put(f"k{i % 100}", b"%d" % i)
            except jetwire.NatsError:
                time.sleep(0.05)
                continue
            i += 1
            self.c["kv_puts"] = i
            time.sleep(0.005)

    def kv_watcher(self, w: Any) -> None:
        last = 0
        for e in w:
            if e is None:
                continue
            if e.revision == last:
                self.c["kv_repeated"] += 1
            elif e.revision < last:
                self.c["kv_out_of_order"] += 1
            last = max(last, e.revision)
            self.kv_last = last
            self.kv_count += 1
            self.c["kv_seen"] = self.kv_count

    def objects(self) -> None:
        data = hashlib.sha256(b"soak").digest() * (256 * 1024 // 32)
        while not self.stop.is_set():
            try:
                self.obs.put_bytes("blob", data)
                if self.obs.get_bytes("blob") != data:
                    self.c["obj_failures"] += 1
            except jetwire.DigestMismatchError:
                self.c["obj_failures"] += 1
            except jetwire.NatsError:
                time.sleep(0.05)
                continue
            self.c["obj_rounds"] += 1
            time.sleep(0.5)


def main(argv: Any = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--restart-every", type=float, default=60.0, help="seconds between restarts")
    ap.add_argument("--warmup", type=float, default=15.0, help="seconds before the first RSS reading")
    args = ap.parse_args(argv)
    server = NatsServer().start()
    stop = threading.Event()
    try:
        soak = Soak(server.url, stop, cap=int(args.minutes * 60 * 6000) + 10000)
        soak.setup()
        watcher = soak.kv.watch_all(updates_only=True)
        cc = soak.js.consumer("SOAK", "d").consume(soak.on_js, max_messages=200, expires=2)
        threads = [threading.Thread(target=fn, daemon=True) for fn in
                   (soak.js_publisher, soak.core, soak.kv_putter, soak.objects)]
        threads.append(threading.Thread(target=soak.kv_watcher, args=(watcher,), daemon=True))
        for th in threads:
            th.start()
        t0 = time.monotonic()
        end = t0 + args.minutes * 60
        time.sleep(min(args.warmup, args.minutes * 60 / 4))
        rss0 = rss()
        print(f"RSS after warm-up: {rss0 / 2**20:.1f} MiB", flush=True)
        next_restart = t0 + args.restart_every
        kill = True
        restarts = 0
        while time.monotonic() < end:
            time.sleep(max(0.0, min(end, next_restart) - time.monotonic()))
            if time.monotonic() >= next_restart and time.monotonic() < end:
                server.restart(kill=kill)
                restarts += 1
                print(f"{time.monotonic() - t0:6.0f}s  restart {restarts} ({'kill -9' if kill else 'stop'})  "
                      + "  ".join(f"{k}={v}" for k, v in soak.c.items()), flush=True)
                kill = not kill
                next_restart += args.restart_every
        stop.set()
        for th in threads[:4]:
            th.join(60)
        # let the consumer and the watcher catch up with what was acked and put
        deadline = time.monotonic() + 60
        def acked_not_seen() -> int:
            return sum(1 for a, b in zip(soak.acked, soak.seen, strict=False) if a and not b)

        while time.monotonic() < deadline and soak.n_seen < soak.n_acked:
            time.sleep(0.1)
        stream = soak.retry(soak.js.stream, "SOAK")
        state = soak.retry(stream.info).state
        kv_last = soak.retry(soak.js.stream, "KV_soak")
        kv_last_seq = soak.retry(kv_last.info).state.last_seq
        while time.monotonic() < deadline and soak.kv_last < kv_last_seq:
            time.sleep(0.1)
        cc.stop()
        watcher.stop()
        rss1 = rss()
        growth = (rss1 - rss0) / rss0 * 100
        counters = {
            "acked_but_lost": acked_not_seen(),
            "duplicates_stored": state.messages - soak.n_acked,
            "kv_repeated": soak.c["kv_repeated"],
            "kv_out_of_order": soak.c["kv_out_of_order"],
            "obj_failures": soak.c["obj_failures"],
            "request_mismatches": len(soak.errors),
        }
        print(f"\nran {args.minutes:g} min, {restarts} restarts")
        print("traffic:  " + "  ".join(f"{k}={v}" for k, v in soak.c.items()))
        print("counters: " + "  ".join(f"{k}={v}" for k, v in counters.items()))
        # history=1: a revision overwritten while the watcher was away is gone from the
        # stream, so a watcher may legitimately skip it (it always gets the latest value)
        print(f"kv: {kv_last_seq} revisions, the watcher saw {soak.kv_count} (skipped ones were overwritten); "
              f"js redeliveries seen by the consumer: {soak.seen_twice}")
        print(f"RSS: {rss0 / 2**20:.1f} MiB -> {rss1 / 2**20:.1f} MiB ({growth:+.1f} %)")
        soak.nc.close()
        bad = any(counters.values()) or growth >= 5.0
        print("FAIL" if bad else "OK")
        return 1 if bad else 0
    finally:
        stop.set()
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
