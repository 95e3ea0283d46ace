"""The client side of ``jetwire bench``: one worker process per client.

Each worker connects, gets ready (subscribes, looks its consumer up, ...), reports
``ready`` on the queue, waits for the common start signal, runs its role and reports
``done`` with ``{msgs, bytes, start, end, latencies?, bad, cpu}`` (a ``_results.WorkerResult``) (``time.monotonic()``
seconds, comparable across processes on one machine). Progress is published in a
shared array of counters, one slot per worker, which is also how workers sharing one
JetStream consumer (or one queue group) know that their group has received everything.

Only jetwire's public API is used, in the flavour asked for (blocking ``jetwire`` or
``jetwire.aio``): the roles are written once in ``workers_aio.py`` (the blocking
``workers_sync.py`` is generated from it). No click or rich here: these processes
start fast.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ._conn import connect_kwargs
from ._results import WorkerResult

now = time.monotonic
STEP = 1024  # messages between progress updates in tight loops


class Worker:
    """What a worker knows: its spec (a dict) plus the shared signalling objects."""

    def __init__(self, spec: dict[str, Any], counters: Any, queue: Any, start_ev: Any, stop_ev: Any) -> None:
        self.spec = spec
        self.idx: int = spec["idx"]
        self.n: int = spec.get("n", 0)
        self.expected: int = spec.get("expected", 0)
        self.size: int = spec.get("size", 0)
        self.subject: str = spec.get("subject", "")
        self.payload = b"x" * self.size
        self.counters = counters
        self.queue = queue
        self.start_ev = start_ev
        self.stop_ev = stop_ev
        self.lo, self.hi = spec.get("group_slice", (self.idx, self.idx + 1))
        self.group_total: int = spec.get("group_total", self.expected)
        self.grace: float = spec.get("grace", 10.0)
        self.timeout: float = spec.get("timeout", 10.0)
        self.external: bool = spec.get("external", False)

    # -- plumbing ----------------------------------------------------------------
    def connect_kw(self, **extra: Any) -> dict[str, Any]:
        kw = connect_kwargs(self.spec.get("conn") or {})
        kw["name"] = f"jetwire-bench-{self.spec['role']}-{self.idx + 1}"
        kw.update(extra)
        return kw

    def ready(self) -> None:
        self.queue.put(("ready", self.idx, None))

    def group_count(self) -> int:
        c = self.counters
        return sum(c[i] for i in range(self.lo, self.hi))

    def group_done(self) -> bool:
        return self.group_count() >= self.group_total

    def waiter(self, reached: Callable[[], bool], count: Callable[[], int]) -> Callable[[], bool | None]:
        """A step function for waiting until ``reached()``; returns True (reached),
        False (gave up: the producers are done and nothing arrived for ``grace`` s) or None."""
        state: dict[str, Any] = {"last": count(), "changed": now(), "stop_seen": None}

        def step() -> bool | None:
            if reached():
                return True
            c = count()
            t = now()
            if c != state["last"]:
                state["last"], state["changed"] = c, t
                return None
            if self.external and c and t - state["changed"] > self.grace:
                return False  # senders elsewhere went quiet: what is missing is lost
            if self.stop_ev.is_set():
                if state["stop_seen"] is None:
                    state["stop_seen"] = t
                if t - max(state["changed"], state["stop_seen"]) > self.grace:
                    return False
            return None

        return step

    def result(self, msgs: int, start: float, end: float, latencies: list[float] | None = None,
               bad: int = 0) -> WorkerResult:
        out: WorkerResult = {"idx": self.spec["gidx"], "msgs": msgs, "bytes": msgs * self.size, "start": start,
                             "end": end, "bad": bad}
        if latencies is not None:
            out["latencies"] = latencies
        return out


def ack_mode(w: Worker) -> str:
    return str(w.spec.get("acks", "none"))
