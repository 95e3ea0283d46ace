"""Where a row's client time goes, per thread: one row and one client in this process,
with every thread's voluntary / involuntary context switches and CPU per message.

    python benchmarks/thread_stats.py <row> [jetwire|jetwire.aio] [scale] [url]

Without ``url`` an embedded nats-server is started (``jetwire.testing``). Prints the
row's JSON result, then one line per kind of thread (threads of one name summed: the
16 requesters of row s, a connection's reader threads, a service's workers) with its
switches and CPU microseconds per message, read from ``/proc/self/task/*/status`` and
``stat`` by a sampling thread (``sampler``: its own cost is listed). A voluntary switch
is a wait: for a lock, a reply, the socket or the GIL; the GIL waits are the ones a
thread makes beyond what its job needs. Linux only. With ``THREAD_STATS_SPY=<file>`` py-spy (on the PATH) samples the
row into that file (collapsed stacks), and with ``THREAD_STATS_PERF=<file>`` so does
``perf record`` (native code, kernel included). Run it pinned (``taskset -c 0``
with the server on another CPU) for the cross-core proxy of a many-core machine.
"""
from __future__ import annotations

import contextlib
import gc
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

from jetwire.cli.rows import ROWS, run_row

TICK = os.sysconf("SC_CLK_TCK")


def task_stats(tid: int) -> tuple[int, int, float] | None:
    """(voluntary, involuntary switches, CPU seconds) of one thread of this process."""
    try:
        with open(f"/proc/self/task/{tid}/status") as f:
            status = f.read()
        with open(f"/proc/self/task/{tid}/stat") as f:
            stat = f.read()
    except OSError:  # ended meanwhile
        return None
    vol = invol = 0
    for line in status.splitlines():
        if line.startswith("voluntary_ctxt_switches"):
            vol = int(line.split()[1])
        elif line.startswith("nonvoluntary_ctxt_switches"):
            invol = int(line.split()[1])
    fields = stat[stat.rindex(")") + 2:].split()
    return vol, invol, (int(fields[11]) + int(fields[12])) / TICK


class Sampler:
    """Keeps the last figures of every thread seen (a thread that ends keeps its last)."""

    def __init__(self, period: float = 0.05) -> None:
        self.period = period
        self.last: dict[int, tuple[int, int, float]] = {}
        self.names: dict[int, str] = {}
        self.base: dict[int, tuple[int, int, float]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sampler", daemon=True)

    def _sample(self) -> None:
        for t in threading.enumerate():
            if t.native_id is not None:
                self.names[t.native_id] = t.name
        for tid in os.listdir("/proc/self/task"):
            got = task_stats(int(tid))
            if got is not None:
                self.last[int(tid)] = got

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            self._sample()

    def __enter__(self) -> Sampler:
        self._sample()
        self.base = dict(self.last)  # what threads of the set-up had done before the row
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def by_kind(self) -> dict[str, list[float]]:
        """name → [threads, voluntary, involuntary, CPU seconds], threads of one name summed
        (``Thread-N (fn)`` counted under ``Thread (fn)``)."""
        out: dict[str, list[float]] = {}
        for tid, (vol, invol, cpu) in self.last.items():
            v0, i0, c0 = self.base.get(tid, (0, 0, 0.0))
            vol, invol, cpu = vol - v0, invol - i0, cpu - c0
            name = self.names.get(tid, "?")
            if name.startswith("Thread-"):
                name = "Thread" + name[name.find(" "):] if " " in name else "Thread"
            acc = out.setdefault(name, [0, 0, 0, 0.0])
            acc[0] += 1
            acc[1] += vol
            acc[2] += invol
            acc[3] += cpu
        return out


class GcStats:
    """Collections per generation, and the seconds they took, while the row runs
    (``gc.callbacks``; each collection's objects examined too)."""

    def __init__(self) -> None:
        self.count = [0, 0, 0]
        self.seconds = [0.0, 0.0, 0.0]
        self._t0 = 0.0

    def _cb(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._t0 = time.perf_counter()
        else:
            gen = info["generation"]
            self.count[gen] += 1
            self.seconds[gen] += time.perf_counter() - self._t0

    def __enter__(self) -> GcStats:
        gc.callbacks.append(self._cb)
        return self

    def __exit__(self, *exc: Any) -> None:
        gc.callbacks.remove(self._cb)


def start_spy(out: str) -> subprocess.Popen[bytes] | None:
    """``py-spy record`` of this process into ``out`` (collapsed stacks, idle threads too;
    ``THREAD_STATS_SPY_RATE`` samples/s, 200; ``THREAD_STATS_SPY_MODE``: py-spy's mode,
    ``--nonblocking`` (Python frames, the process never paused) or ``--native`` (native
    frames too, the process paused for each sample)), once it samples."""
    if not out:
        return None
    rate = os.environ.get("THREAD_STATS_SPY_RATE", "200")
    mode = os.environ.get("THREAD_STATS_SPY_MODE", "--nonblocking").split()
    spy = subprocess.Popen(["py-spy", "record", *mode, "--idle", "-r", rate, "--format", "raw", "-o", out,
                            "--pid", str(os.getpid())], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert spy.stdout is not None
    spy.stdout.readline()  # "Sampling process N times a second": attached
    return spy


def start_perf(out: str) -> subprocess.Popen[bytes] | None:
    """``perf record`` of this process into ``out`` (``THREAD_STATS_PERF_ARGS``: more of
    perf's options, e.g. ``-g``), started once perf has opened its counters."""
    if not out:
        return None
    ctl = out + ".ctl"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(ctl)
    os.mkfifo(ctl)
    args = os.environ.get("THREAD_STATS_PERF_ARGS", "").split()
    perf = subprocess.Popen(["perf", "record", "-F", "4999", *args, "-D", "-1", "--control", f"fifo:{ctl}",
                             "-o", out, "-p", str(os.getpid())], stdout=subprocess.DEVNULL)
    with open(ctl, "w") as f:  # opens once perf reads it: perf is attached
        f.write("enable\n")
    return perf


def stop_spy(spy: subprocess.Popen[bytes] | None) -> None:
    if spy is not None:
        spy.send_signal(signal.SIGINT)
        out, _ = spy.communicate(timeout=60)
        sys.stderr.write(out.decode(errors="replace"))


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ROWS:
        print(__doc__, file=sys.stderr)
        return 2
    row = argv[0]
    client = argv[1] if len(argv) > 1 else "jetwire"
    scale = float(argv[2]) if len(argv) > 2 else 1.0
    url = argv[3] if len(argv) > 3 else ""
    server = None
    if not url:
        from jetwire.testing import NatsServer

        server = NatsServer()
        server.start()
        url = server.url
    sampler = Sampler()
    gcs = GcStats()
    wall = [0.0]

    @contextlib.contextmanager
    def around() -> Iterator[None]:  # the row alone, after its stream's set-up
        spy = start_spy(os.environ.get("THREAD_STATS_SPY", ""))
        perf = start_perf(os.environ.get("THREAD_STATS_PERF", ""))
        t0 = time.perf_counter()
        try:
            with sampler, gcs:
                yield
        finally:
            wall[0] = time.perf_counter() - t0
            stop_spy(spy)
            if perf is not None:
                perf.send_signal(signal.SIGINT)
                perf.wait(60)

    try:
        res = run_row(row, client, url, "", scale, around=around)
    finally:
        if server is not None:
            server.stop()
    print(json.dumps({k: v for k, v in res.items() if not isinstance(v, list)}))
    n = int(res.get("n") or max(1, int(ROWS[row].count * scale)))
    print(f"{n} messages in {wall[0]:.2f} s (the row's client set-up included, its stream's not)")
    print(f"{'thread':40s} {'n':>3s} {'vol/msg':>8s} {'invol/msg':>9s} {'cpu us/msg':>10s}")
    tot = [0.0, 0.0, 0.0]
    for name, (cnt, vol, invol, cpu) in sorted(sampler.by_kind().items(), key=lambda kv: -kv[1][3]):
        tot[0] += vol
        tot[1] += invol
        tot[2] += cpu
        print(f"{name[:40]:40s} {int(cnt):3d} {vol / n:8.2f} {invol / n:9.2f} {cpu / n * 1e6:10.1f}")
    print(f"{'all':40s} {'':3s} {tot[0] / n:8.2f} {tot[1] / n:9.2f} {tot[2] / n * 1e6:10.1f}")
    print("garbage collections (gen 0/1/2): " + " / ".join(str(c) for c in gcs.count)
          + f", {sum(gcs.seconds) / n * 1e6:.3f} us per message in them ("
          + " / ".join(f"{t / n * 1e6:.3f}" for t in gcs.seconds) + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
