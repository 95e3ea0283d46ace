"""The entry point of a ``jetwire bench`` worker process: runs its role in the flavour
asked for (``workers_aio.py`` or its generated twin ``workers_sync.py``, both built on
``_benchwork.py``) and reports to the orchestrator (``_engine.py``). A worker whose
orchestrator is gone (killed, or stopped before it could stop its workers) exits at once."""
from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
import traceback
from typing import Any

from ._benchwork import Worker

__all__ = ["worker_main"]


def worker_main(spec: dict[str, Any], counters: Any, queue: Any, start_ev: Any, stop_ev: Any) -> None:
    """Entry point of a worker process (``multiprocessing`` target)."""
    w = Worker(spec, counters, queue, start_ev, stop_ev)
    _exit_with_parent()
    try:
        if spec.get("cpus"):  # --client-cpus: this process and its threads
            os.sched_setaffinity(0, spec["cpus"])
        cpu0 = time.process_time()
        if spec["flavour"] == "aio":
            import jetwire.aio

            from . import workers_aio

            res = jetwire.aio.run(workers_aio.ROLES[spec["role"]](w))
        else:
            from . import workers_sync

            res = workers_sync.ROLES[spec["role"]](w)
        res["cpu"] = time.process_time() - cpu0  # the client's CPU over its role, connecting included
        queue.put(("done", w.idx, res))
    except KeyboardInterrupt:
        queue.put(("error", w.idx, "interrupted"))
    except BaseException as exc:  # report, never a traceback on the terminal
        detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        if spec.get("debug"):
            detail += "\n" + traceback.format_exc()
        queue.put(("error", w.idx, detail))


def _exit_with_parent() -> None:
    """A daemon thread that ends this process when the process that started it (the
    ``jetwire bench`` orchestrator) is gone: its end of the start-up pipe closes then."""
    parent = multiprocessing.parent_process()
    sentinel = getattr(parent, "sentinel", None)
    if sentinel is None:  # pragma: no cover - not started by multiprocessing
        return

    def watch() -> None:
        from multiprocessing.connection import wait

        wait([sentinel])
        os.kill(os.getpid(), signal.SIGKILL)  # at once, whatever the role is blocked in

    threading.Thread(target=watch, name="jetwire-bench-parent-watch", daemon=True).start()
