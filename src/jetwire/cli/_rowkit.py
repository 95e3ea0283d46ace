"""What a benchmark row and its accounting share (``rows.py`` runs the rows, ``rows_aio.py``
and its generated twin ``rows_sync.py`` hold the timed parts): the clocks, the row's
context and failure, the workload's constants."""
from __future__ import annotations

import json
import os
import time
from typing import Any, TypedDict

from ._conn import connect_kwargs

__all__ = ["FETCH", "IDLE", "PAYLOAD", "RATE", "REQUESTERS", "ROW_CONN_ENV", "WAIT", "WINDOW", "RowCtx", "RowFailed",
           "ack_subjects", "conn_kwargs", "cpu_now", "now"]

now = time.perf_counter
cpu_now = time.process_time


class RowFailed(Exception):
    """A row whose messages were not all accounted for (or that could not run)."""


class RowCtx(TypedDict, total=False):
    """What a row's set-up, its timed part and its accounting share."""

    stream: str  # JetStream rows: the stream, its subject, the pull consumer
    subject: str
    consumer: str
    n: int
    received: int  # pull rows: what the timed part got
    parse_seconds: float  # row m
    cpu_seconds: float  # row m
    cpu: float  # a peer running another process: that process's CPU seconds


IDLE = 5.0  # seconds without a new delivery after which missing messages count as lost

PAYLOAD = b"x" * 16
REQUESTERS = 16  # row s: concurrent requesters (one connection)
WINDOW = 1000  # row e: acks in flight
FETCH = 1000  # rows f, f2: fetch batch; row g: consume's max_messages
WAIT = 10.0  # seconds a pull may come back empty before the row fails
RATE = 20_000  # row h: messages per second


def ack_subjects(n: int) -> list[str]:
    """Row m: ``n`` distinct ack subjects as the server sends them (stream and consumer
    sequences, delivery count, nanosecond time, pending count)."""
    ts = 1_700_000_000_000_000_000
    return [f"$JS.ACK.BENCH_M.worker.1.{i + 1}.{i + 1}.{ts + i * 1000}.{n - i - 1}" for i in range(n)]


#: the environment variable ``bench compare`` hands a row process the server's auth and
#: TLS settings in (JSON: the CLI's connection settings, the server excluded)
ROW_CONN_ENV = "JETWIRE_BENCH_CONN"


def conn_kwargs() -> dict[str, Any]:
    """``jetwire.connect`` keyword arguments for a row's connections: the settings in
    ``$JETWIRE_BENCH_CONN`` (none when it is unset)."""
    text = os.environ.get(ROW_CONN_ENV)
    return connect_kwargs(json.loads(text)) if text else {}
