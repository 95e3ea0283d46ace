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

import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import chain
from typing import Any

from ..errors import (
    APIError,
    ConnectionClosedError,
    ConnectionLostError,
    JetStreamError,
    NoStreamResponseError,
    TimeoutError,
)
from ..jetstream.models import PubAck
from ._options import OptionError, WriteOptions
from ._read import open_js

__all__ = ["WriteResult", "headers_type_error", "write_partition"]


#: one row to publish: (subject or None, data, headers or None, message id or None)
_Row = tuple[Any, Any, Any, Any]


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


def headers_type_error(shown: str) -> OptionError:
    """The error for a ``headers`` column of type ``shown`` (any but the two below)."""
    return OptionError(f"column 'headers' must be map<string, array<string>> or map<string, string>, not {shown}")


def _check_headers_type(t: Any) -> None:
    """Refuse an Arrow ``headers`` column type that is not a map of string to string or
    to a list of strings (an all-null column of type null is no headers)."""
    import pyarrow as pa

    def text(x: Any) -> bool:
        return bool(pa.types.is_string(x) or pa.types.is_large_string(x))

    if pa.types.is_null(t):
        return
    if pa.types.is_map(t) and text(t.key_type):
        v = t.item_type
        if text(v) or ((pa.types.is_list(v) or pa.types.is_large_list(v)) and text(v.value_type)):
            return
    raise headers_type_error(str(t))


def _wildcard_error(row: int, subject: str) -> OptionError:
    return OptionError(f"row {row}: subject {subject!r} must not contain wildcards (a row is published to one "
                       "subject, as with the 'subject' option)")


def _is_wildcard(subject: str) -> bool:
    return ("*" in subject or ">" in subject) and any(t in ("*", ">") for t in subject.split("."))


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


def _rows_of_batch(rb: Any, cols: _Columns) -> Iterator[_Row]:
    """(subject, data, headers, msg_id) per row of an Arrow record batch."""
    n = rb.num_rows
    names = rb.schema.names
    def col(name: str | None) -> list[Any]:
        if name is None:
            return [None] * n
        values: list[Any] = rb.column(names.index(name)).to_pylist()
        return values
    return zip(col(cols.subject), col(cols.data), col(cols.headers), col(cols.msg_id), strict=False)


def _rows_of_rows(first: Any, rest: Iterable[Any], cols: _Columns) -> Iterator[_Row]:
    def one(r: Any) -> _Row:
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
    arrow = isinstance(first, pa.RecordBatch)
    if arrow:
        cols = _Columns(first.schema.names, opts)
        if cols.headers is not None:
            _check_headers_type(first.schema.field(cols.headers).type)
    else:
        names = list(first.__fields__) if hasattr(first, "__fields__") else list(first.asDict().keys())
        cols = _Columns(names, opts)

    prefix = opts.msg_id_prefix
    id_base = f"{prefix}:{batch_id if batch_id is not None else 0}:{partition_id}:" if prefix else None
    with open_js(opts.conn, publish_async_max_pending=opts.max_pending) as (nc, js):
        rows = _RowPublisher(js, opts, result, id_base)
        if not arrow:
            rows.publish(_rows_of_rows(first, it, cols), 0)
        else:
            bulk = _BulkPublisher(nc, opts, result)
            try:
                base = 0
                for rb in chain((first,), it):
                    # (expectedStream is a header on every row: the row path sends it)
                    frames = None if opts.expected_stream else \
                        _frames(rb, cols, opts.subject, bulk.reply_prefix, base, id_base, nc.max_payload)
                    if frames is None:  # headers, or a column the frames are not built for
                        _refuse_wildcards(rb, cols, base)  # before any row of the batch is sent
                        rows.publish(_rows_of_batch(rb, cols), base)
                    else:
                        bulk.send(frames)
                    base += rb.num_rows
                bulk.finish()
            finally:
                bulk.close()
        rows.finish()
    return result


class _RowPublisher:
    """Row by row through ``js.publish_async`` (rows with headers, Spark ``Row`` input)."""

    def __init__(self, js: Any, opts: WriteOptions, result: WriteResult, id_base: str | None) -> None:
        self.js = js
        self.opts = opts
        self.result = result
        self.id_base = id_base
        self.futs: deque[Any] = deque()

    def publish(self, source: Iterable[_Row], start: int) -> None:
        fixed_subject = self.opts.subject
        id_base = self.id_base
        stall = self.opts.ack_timeout
        publish = self.js.publish_async
        futs = self.futs
        add = self.result.add_ack
        for i, (subject, data, headers, mid) in enumerate(source, start):
            subj = subject if subject is not None else fixed_subject
            if not subj:
                raise OptionError(f"row {i} has no subject (null 'subject' and no 'subject' option)")
            if subject is not None and _is_wildcard(subj):
                raise _wildcard_error(i, subj)
            if id_base is not None:
                mid = id_base + str(i)
            elif mid is not None and not isinstance(mid, str):
                mid = str(mid)
            hdrs = _as_headers(headers) if headers is not None else None
            if type(data) is not bytes:
                data = _as_bytes(data)
            futs.append(publish(subj, data, headers=hdrs, msg_id=mid, expected_stream=self.opts.expected_stream,
                                stall_wait=stall))
            if i & 255 == 255:
                while futs and futs[0].done():
                    add(_outcome(futs.popleft()))

    def finish(self) -> None:
        futs = self.futs
        if not futs:
            return
        timeout = self.opts.ack_timeout
        self.js.publish_async_complete(timeout=timeout)
        add = self.result.add_ack
        while futs:
            f = futs.popleft()
            if not f.done():  # publish_async_complete returned: only a failed/odd future remains
                f.result(timeout=timeout)
            add(_outcome(f))


# --------------------------------------------------------------------------- bulk path
# Arrow record batches without headers become whole windows of PUB (or, with message
# ids, HPUB) frames built by Arrow's compute kernels from the columns' buffers: no Python
# object per row on the way out. The acks come back on one wildcard inbox of the task
# (a direct subscription: each ack is appended to a list by the reader) and are checked
# in bulk, per window, by Arrow kernels too (errors, duplicates, first/last sequence).
_BAD_SUBJECT = r"[\x00-\x20\x7f]|^\.|\.\.|\.$|^$"
_WILDCARD = r"(?:^|\.)[*>](?:\.|$)"  # a token that is '*' or '>'
_MSG_ID_HDR = b"NATS/1.0\r\nNats-Msg-Id: "


def _refuse_wildcards(rb: Any, cols: _Columns, base: int) -> None:
    """Raise for the first row of ``rb`` whose string subject has a wildcard token."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if cols.subject is None:
        return
    subj = rb.column(rb.schema.names.index(cols.subject))
    if not (pa.types.is_string(subj.type) or pa.types.is_large_string(subj.type)):
        return
    wild = pc.match_substring_regex(subj, _WILDCARD)
    if pc.any(wild).as_py():
        i = pc.index(wild, True).as_py()
        raise _wildcard_error(base + i, subj[i].as_py())


def _binary(arr: Any) -> Any:
    """``arr`` as large_binary when it is a string/binary column, else None."""
    import pyarrow as pa

    t = arr.type
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) \
            or pa.types.is_large_binary(t):
        return arr.cast(pa.large_binary())
    return None


def _frames(rb: Any, cols: _Columns, fixed_subject: str | None, reply_prefix: str, base: int,
            id_base: str | None, max_payload: int) -> tuple[Any, Any] | None:
    """``(frames, cumulative payload bytes)`` of the rows of ``rb`` (row ``k`` replies to
    ``reply_prefix + str(base + k)``), or None when this batch takes the row path."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from .. import _impl
    from ..errors import MaxPayloadError

    n = rb.num_rows
    names = rb.schema.names
    if cols.headers is not None and rb.column(names.index(cols.headers)).null_count != n:
        return None
    lb = pa.large_binary()
    if cols.subject is not None:
        subj = rb.column(names.index(cols.subject))
        if not (pa.types.is_string(subj.type) or pa.types.is_large_string(subj.type)):
            return None
        if fixed_subject and subj.null_count:
            subj = pc.fill_null(subj, fixed_subject)
        if subj.null_count:
            i = pc.index(pc.is_null(subj), True).as_py()
            raise OptionError(f"row {base + i} has no subject (null 'subject' and no 'subject' option)")
        bad = pc.match_substring_regex(subj, f"{_BAD_SUBJECT}|{_WILDCARD}")
        if pc.any(bad).as_py():
            i = pc.index(bad, True).as_py()
            first_bad = subj[i].as_py()
            _impl.validate_subject(first_bad)  # raises BadSubjectError
            if _is_wildcard(first_bad):
                raise _wildcard_error(base + i, first_bad)
            return None
        subj = subj.cast(lb)
    else:
        subj = pa.scalar((fixed_subject or "").encode(), lb)
    data = _binary(rb.column(names.index(cols.data)))
    if data is None:
        return None
    if data.null_count:
        data = pc.fill_null(data, pa.scalar(b"", lb))
    idx = pa.array(range(base, base + n), pa.int64()).cast(pa.string()).cast(lb)
    lens = pc.binary_length(data)
    sp = pa.scalar(b" ", lb)
    crlf = pa.scalar(b"\r\n", lb)
    empty = pa.scalar(b"", lb)
    reply = pa.scalar((" " + reply_prefix).encode(), lb)
    ids = None
    if id_base is not None:
        ids = pc.binary_join_element_wise(pa.scalar(id_base.encode(), lb), idx, empty)
    elif cols.msg_id is not None:
        col = rb.column(names.index(cols.msg_id))
        if pa.types.is_integer(col.type):
            col = col.cast(pa.string())
        elif not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
            return None
        if col.null_count or pc.any(pc.match_substring_regex(col, r"[\r\n]|^$")).as_py():
            return None  # the row path sends a null id without the header, refuses the others
        ids = col.cast(lb)
    if ids is None:
        tot = lens
        frames = pc.binary_join_element_wise(pa.scalar(b"PUB ", lb), subj, reply, idx, sp,
                                             lens.cast(pa.string()).cast(lb), crlf, data, crlf, empty)
    else:
        hdr = pc.binary_join_element_wise(pa.scalar(_MSG_ID_HDR, lb), ids, pa.scalar(b"\r\n\r\n", lb), empty)
        hlen = pc.binary_length(hdr)
        tot = pc.add(hlen, lens)
        frames = pc.binary_join_element_wise(pa.scalar(b"HPUB ", lb), subj, reply, idx, sp,
                                             hlen.cast(pa.string()).cast(lb), sp, tot.cast(pa.string()).cast(lb),
                                             crlf, hdr, data, crlf, empty)
    biggest = pc.max(tot).as_py() or 0
    if biggest > max_payload:
        raise MaxPayloadError(f"message of {biggest} bytes exceeds max_payload {max_payload}")
    return frames, pc.cumulative_sum(tot.cast(pa.int64()))


class _BulkPublisher:
    """Sends frames windows at a time (at most ``maxPendingAcks`` awaiting their ack) and
    checks the acks in bulk."""

    def __init__(self, nc: Any, opts: WriteOptions, result: WriteResult) -> None:
        self.link = nc.link
        self.window = opts.max_pending
        self.timeout = opts.ack_timeout
        self.result = result
        self.reply_prefix = nc.new_inbox() + "."
        self.acks: list[Any] = []  # ack messages not yet checked (appended by the reader)
        self.checked = 0  # acks checked
        self.sent = 0
        self.want = 1 << 62  # wake the task once this many acks are in the list
        self.error: BaseException | None = None
        self.event = threading.Event()
        self.sub = self.link.subscribe_direct(self.reply_prefix + "*", self._on_ack)
        self._unreg = [self.link.on_lost(self._on_lost), self.link.on_close(self._on_lost)]

    def _on_ack(self, m: Any) -> None:  # from the reader
        acks = self.acks
        acks.append(m)
        if len(acks) >= self.want:
            self.event.set()

    def _on_lost(self, exc: BaseException) -> None:
        if self.error is None:
            self.error = ConnectionLostError(
                f"connection lost with {self.sent - self.checked - len(self.acks)} publishes awaiting their ack")
        self.event.set()

    def _wait_for(self, acked: int) -> None:
        """Until ``acked`` acks arrived in all (checking them as they come)."""
        deadline = time.monotonic() + self.timeout
        while True:
            if self.error is not None:
                raise self.error
            if len(self.acks) >= 4096:
                self._check()
            have = self.checked + len(self.acks)
            if have >= acked:
                break
            self.event.clear()
            self.want = acked - self.checked
            if self.checked + len(self.acks) >= acked:
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"{self.sent - self.checked - len(self.acks)} publishes got no ack "
                                   f"within ackTimeout={self.timeout}s")
            if self.event.wait(remaining):
                deadline = time.monotonic() + self.timeout  # progress
        self.want = 1 << 62
        self._check()

    def send(self, built: tuple[Any, Any]) -> None:
        frames, cum = built
        n = len(frames)
        offsets = memoryview(frames.buffers()[1]).cast("q")[frames.offset:]
        values = memoryview(frames.buffers()[2])
        payload = memoryview(cum.buffers()[1]).cast("q")[cum.offset:]
        window = self.window
        step = max(1, window // 4)
        i = 0
        while i < n:
            room = window - (self.sent - self.checked - len(self.acks))
            if room < min(step, n - i):
                self._wait_for(self.sent - window + min(step, n - i))
                continue
            j = min(n, i + room)
            size = payload[j - 1] - (payload[i - 1] if i else 0)
            if not self.link.try_publish_frames(values[offsets[i]:offsets[j]], j - i, size):
                raise self.error or ConnectionClosedError("not connected: cannot publish")
            self.sent += j - i
            i = j

    def finish(self) -> None:
        self._wait_for(self.sent)

    def _check(self) -> None:
        """Check the acks that arrived (in bulk) and add them to the result."""
        import pyarrow as pa
        import pyarrow.compute as pc

        acks = self.acks
        k = len(acks)
        if not k:
            return
        msgs = acks[:k]
        del acks[:k]  # (the reader only appends: atomic under the GIL)
        self.checked += k
        arr = pa.array([m.data for m in msgs], pa.binary())
        if pc.min(pc.binary_length(arr)).as_py() == 0:  # a status (no responders) or an empty reply
            m = msgs[pc.index(pc.equal(pc.binary_length(arr), 0), True).as_py()]
            status = m.headers.status if m.headers is not None else None
            if status == "503":
                raise NoStreamResponseError(f"no stream answered the publish of row "
                                            f"{m.subject[len(self.reply_prefix):]}")
            raise APIError(code=int(status) if status and status.isdigit() else None, err_code=None,
                           description=f"publish of row {m.subject[len(self.reply_prefix):]}: "
                                       f"{(m.headers.description if m.headers is not None else '') or 'no ack'}")
        # an error answer has the key "error" (a stream or domain may be named "error": as a
        # value it is followed by ',' or '}', never by ':')
        errors = pc.match_substring_regex(arr, r'"error"\s*:')
        if pc.any(errors).as_py():
            PubAck.from_json_bytes(msgs[pc.index(errors, True).as_py()].data)  # raises the typed error
        # every ack's sequence in one pass: one without any is neither an ack nor an error,
        # and nothing says its row was stored
        seqs = pc.struct_field(pc.extract_regex(arr, r'"seq"\s*:\s*(?P<s>\d+)'), [0])
        if seqs.null_count:
            bad = msgs[pc.index(pc.is_null(seqs), True).as_py()]
            raise JetStreamError(f"invalid JetStream publish ack for row {bad.subject[len(self.reply_prefix):]}: "
                                 f"{bytes(bad.data[:100])!r}")
        dup = pc.match_substring_regex(arr, r'"duplicate":\s*true')  # (the server writes '"duplicate": true')
        ndup = pc.sum(dup).as_py() or 0
        r = self.result
        r.count += k
        r.duplicates += ndup
        if ndup == k:
            return
        stored = pc.filter(arr, pc.invert(dup)) if ndup else arr
        seqs = (pc.filter(seqs, pc.invert(dup)) if ndup else seqs).cast(pa.int64())
        mm = pc.min_max(seqs)
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
        if r.first_seq is None or lo < r.first_seq:
            r.first_seq = lo
        if r.last_seq is None or hi > r.last_seq:
            r.last_seq = hi
        if r.stream is None:
            r.stream = PubAck.from_json_bytes(stored[0].as_py()).stream

    def close(self) -> None:
        for unreg in self._unreg:
            try:
                unreg()
            except Exception:
                pass
        try:
            self.link.unsubscribe(self.sub)
        except Exception:
            pass


def _outcome(f: Any) -> Any:
    """The ack of a resolved publish future (raises its error); jetwire's ack futures
    answer ``result()`` without building a ``Condition`` once resolved."""
    return f.result(timeout=0)
