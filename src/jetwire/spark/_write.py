"""Publishing one Spark task's rows to JetStream (runs inside Spark tasks). No Spark
imports: the Spark-facing writers in :mod:`jetwire.spark.source` call
:func:`write_partition` with the task's identity.

Rows are published with ``js.publish_async`` on one connection per task, with at most
``maxPendingAcks`` acks outstanding (the JetStream context's window: a publish that
finds it full waits for room). Every ack is awaited before the task returns; the first
failed ack (or a timeout) fails the task, so Spark retries it. With message ids
(``msgIdColumn`` or ``msgIdPrefix``) the stream's duplicate window makes the retry
idempotent.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ._options import OptionError, WriteOptions
from ._read import open_js

__all__ = ["WriteResult", "write_partition"]


@dataclass
class WriteResult:
    """What one task published (the payload of its Spark commit message)."""

    partition_id: int = 0
    count: int = 0
    duplicates: int = 0
    first_seq: int | None = None
    last_seq: int | None = None
    stream: str | None = None

    def add_ack(self, ack: Any) -> None:
        self.count += 1
        if ack.duplicate:
            self.duplicates += 1
            return
        seq = ack.seq
        if self.first_seq is None or seq < self.first_seq:
            self.first_seq = seq
        if self.last_seq is None or seq > self.last_seq:
            self.last_seq = seq
        if self.stream is None:
            self.stream = ack.stream


def _as_bytes(v: Any) -> bytes:
    if v is None:
        return b""
    if isinstance(v, bytes):
        return v
    if isinstance(v, (bytearray, memoryview)):
        return bytes(v)
    if isinstance(v, str):
        return v.encode("utf-8")
    raise OptionError(f"column 'data' must be binary or string, not {type(v).__name__}")


def _as_headers(v: Any) -> dict[str, Any] | None:
    """A Spark map value (dict, list of pairs from Arrow, or Row-ish) to publish headers."""
    if v is None:
        return None
    items = v.items() if isinstance(v, dict) else v
    out: dict[str, Any] = {}
    for k, val in items:
        if k is None or val is None:
            continue
        if isinstance(val, (list, tuple)):
            vals = [x if isinstance(x, str) else str(x) for x in val if x is not None]
            if vals:
                out[k] = vals
        else:
            out[k] = val if isinstance(val, str) else str(val)
    return out or None


class _Columns:
    """Column positions / names of the input, checked once."""

    def __init__(self, names: list[str], opts: WriteOptions) -> None:
        lower = {n.lower(): n for n in names}
        self.subject = lower.get("subject")
        self.data = lower.get("data")
        self.headers = lower.get("headers")
        self.msg_id = None
        if opts.msg_id_column:
            self.msg_id = lower.get(opts.msg_id_column.lower())
            if self.msg_id is None:
                raise OptionError(f"msgIdColumn {opts.msg_id_column!r} is not a column of the DataFrame "
                                  f"(columns: {', '.join(names)})")
        if self.data is None:
            raise OptionError(f"the DataFrame needs a 'data' column (binary or string); columns: {', '.join(names)}")
        if self.subject is None and not opts.subject:
            raise OptionError("give each row a 'subject' column or set the 'subject' option")


def _rows_of_batch(rb: Any, cols: _Columns) -> Iterator[tuple]:
    """(subject, data, headers, msg_id) per row of an Arrow record batch."""
    n = rb.num_rows
    names = rb.schema.names
    def col(name: str | None) -> list[Any]:
        if name is None:
            return [None] * n
        return rb.column(names.index(name)).to_pylist()
    return zip(col(cols.subject), col(cols.data), col(cols.headers), col(cols.msg_id), strict=False)


def _rows_of_rows(first: Any, rest: Iterable[Any], cols: _Columns) -> Iterator[tuple]:
    def one(r: Any) -> tuple:
        d = r.asDict(recursive=False) if hasattr(r, "asDict") else dict(r)
        return (d.get(cols.subject) if cols.subject else None, d.get(cols.data),
                d.get(cols.headers) if cols.headers else None, d.get(cols.msg_id) if cols.msg_id else None)
    yield one(first)
    for r in rest:
        yield one(r)


def write_partition(opts: WriteOptions, iterator: Iterator[Any], partition_id: int,
                    batch_id: int | None = None) -> WriteResult:
    """Publish every row of ``iterator`` (Arrow record batches or Spark rows) and wait for
    all acks. Raises on the first failed publish."""
    import pyarrow as pa

    result = WriteResult(partition_id=partition_id)
    it = iter(iterator)
    try:
        first = next(it)
    except StopIteration:
        return result
    if isinstance(first, pa.RecordBatch):
        cols = _Columns(first.schema.names, opts)

        def rows() -> Iterator[tuple]:
            yield from _rows_of_batch(first, cols)
            for rb in it:
                yield from _rows_of_batch(rb, cols)
        source = rows()
    else:
        names = list(first.__fields__) if hasattr(first, "__fields__") else list(first.asDict().keys())
        cols = _Columns(names, opts)
        source = _rows_of_rows(first, it, cols)

    fixed_subject = opts.subject
    prefix = opts.msg_id_prefix
    id_base = f"{prefix}:{batch_id if batch_id is not None else 0}:{partition_id}:" if prefix else None
    stall = opts.ack_timeout
    with open_js(opts.conn, publish_async_max_pending=opts.max_pending) as (_nc, js):
        publish = js.publish_async
        futs: deque[Any] = deque()
        add = result.add_ack
        for i, (subject, data, headers, mid) in enumerate(source):
            subj = subject if subject is not None else fixed_subject
            if not subj:
                raise OptionError(f"row {i} has no subject (null 'subject' and no 'subject' option)")
            if id_base is not None:
                mid = id_base + str(i)
            elif mid is not None and not isinstance(mid, str):
                mid = str(mid)
            hdrs = _as_headers(headers) if headers is not None else None
            if type(data) is not bytes:
                data = _as_bytes(data)
            futs.append(publish(subj, data, headers=hdrs, msg_id=mid, stall_wait=stall))
            if i & 255 == 255:
                while futs and futs[0].done():
                    add(_outcome(futs.popleft()))
        js.publish_async_complete(timeout=opts.ack_timeout)
        while futs:
            f = futs.popleft()
            if not f.done():  # publish_async_complete returned: only a failed/odd future remains
                f.result(timeout=opts.ack_timeout)
            add(_outcome(f))
    return result


def _outcome(f: Any) -> Any:
    """The ack of a resolved publish future (raises its error). Reads the resolved state
    directly: ``Future.result()`` would build the future's ``Condition``, which jetwire's
    ack futures otherwise never need -- per message that is a noticeable cost."""
    try:
        if f._state == "FINISHED":
            exc = f._exception
            if exc is not None:
                raise exc
            return f._result
    except AttributeError:  # not a concurrent.futures.Future
        pass
    return f.result(timeout=0)
