"""Reading a stream's sequence range in bulk (runs inside Spark tasks, and on the driver
for planning). No Spark imports here: everything works on plain values and pyarrow.

Two ways of reading a half-open range ``[lo, hi)`` of stream sequences:

* **direct** -- batched direct get (ADR-31, server 2.11+, stream ``allow_direct``):
  ``$JS.API.DIRECT.GET.<stream>`` with ``{"seq": s, "batch": n, "next_by_subj": f}``.
  The server answers with up to ``n`` messages (headers ``Nats-Subject``,
  ``Nats-Sequence``, ``Nats-Time-Stamp``, ``Nats-Num-Pending``, ...) followed by a
  ``204 EOB`` status whose ``Nats-Last-Sequence`` is the last sequence sent, or with a
  ``404`` when nothing is stored at or after ``s``. No server-side state is made.
* **consumer** -- a short-lived ephemeral pull consumer (ack none, memory storage,
  one replica) starting at ``lo``, deleted in ``finally``; its ack subjects carry the
  stream sequence, the time in nanoseconds and the number of matching messages still
  pending, which ends the range without waiting for a pull to expire. ``auto`` reads
  this way (cheaper per message than direct get, on the client and on the server).

Both keep one request in flight ahead of the consumer of the data: the reader thread
of the connection turns the replies of a request into column values as they arrive (a
compiled direct handler on a private inbox: ``DirectCollector`` / ``AckCollector``, no
queue, no message kept, no per-message wake-up or Python call; the ``AckCollector`` is
also a frame sink, so a pull's deliveries never become message objects at all) and,
when the request completes, sends the next one at once, so the server prepares batch
*k+1* while batch *k* is turned into an Arrow record batch. A request asks for at most
``fetchBatch`` messages and ``fetchMaxBytes`` bytes.
"""
from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from .. import _impl
from .._nuid import NUID
from .._units import format_rfc3339, rfc3339_to_us
from ..errors import (
    APIError,
    ConnectionClosedError,
    DataLossError,
    MsgNotFoundError,
    NoRespondersError,
    StreamNotFoundError,
    TimeoutError,
)
from ..jetstream.pull import (
    S_END,
    S_FLOW_CONTROL,
    S_HEARTBEAT,
    S_PENDING,
    classify_status,
    pull_request,
    status_error,
)
from ._arrow import TS_TYPE, BatchBuilder, utf8_column
from ._options import OptionError, connect_kwargs, jetstream_kwargs, parse_time

__all__ = [
    "DataLossError",
    "RangePartition",
    "StreamState",
    "direct_get_batch",
    "open_js",
    "plan_ranges",
    "read_range",
    "resolve_mode",
    "stream_state",
    "time_to_seq",
]

_nuid = NUID()

K_STREAM = "Nats-Stream"
K_SUBJECT = "Nats-Subject"
K_SEQ = "Nats-Sequence"
K_TIME = "Nats-Time-Stamp"
K_PENDING = "Nats-Num-Pending"
K_LAST = "Nats-Last-Sequence"
# headers a batched direct get adds to every message; what remains is what was published
DIRECT_KEYS = frozenset((K_STREAM, K_SUBJECT, K_SEQ, K_TIME, K_PENDING, K_LAST))


@dataclass(frozen=True)
class StreamState:
    """What planning needs to know about a stream (plain values)."""

    name: str
    first_seq: int
    last_seq: int
    messages: int
    allow_direct: bool
    server_version: str

    @property
    def next_seq(self) -> int:
        """The sequence the next stored message will get."""
        return self.last_seq + 1

    @property
    def first_available(self) -> int:
        """The first stored sequence (``next_seq`` when the stream is empty)."""
        if self.messages == 0:
            return self.last_seq + 1
        return max(self.first_seq, 1)


@dataclass
class RangePartition:
    """One task's share: stream sequences ``[lo, hi)`` read with ``mode``. Plain values
    only (Spark pickles it); the Spark-facing ``InputPartition`` subclass adds nothing."""

    index: int
    lo: int
    hi: int
    mode: str


# --------------------------------------------------------------------------- connecting
_CONNECT_ATTEMPTS = 3


def connect(conn: dict[str, Any]) -> Any:
    """A blocking connection from parsed connection options. A first connection that
    fails for a reason other than credentials is tried again twice (after 0.2 s, 0.4 s):
    a Spark task would otherwise fail and be rescheduled for a transient hiccup."""
    import jetwire

    delay = 0.2
    for attempt in range(_CONNECT_ATTEMPTS):
        try:
            return jetwire.connect(**connect_kwargs(conn))
        except jetwire.AuthorizationError:
            raise
        except (jetwire.NoServersError, TimeoutError, OSError):
            if attempt + 1 >= _CONNECT_ATTEMPTS:
                raise
            time.sleep(delay)
            delay *= 2
    raise AssertionError("unreachable")  # pragma: no cover


@contextmanager
def open_js(conn: dict[str, Any], **js_options: Any) -> Iterator[tuple[Any, Any]]:
    """A blocking connection and JetStream context for the duration of the block."""
    nc = connect(conn)
    try:
        yield nc, nc.jetstream(**jetstream_kwargs(conn), **js_options)
    finally:
        try:
            nc.close()
        except Exception:
            pass


def _version_tuple(v: str) -> tuple[int, ...]:
    out = []
    for part in (v or "0").split("-")[0].split("."):
        try:
            out.append(int(part))
        except ValueError:
            break
    return tuple(out) or (0,)


def stream_state(nc: Any, js: Any, stream: str) -> StreamState:
    try:
        info = js.stream(stream).info()
    except StreamNotFoundError:
        raise StreamNotFoundError(code=404, err_code=10059, description=f"stream {stream!r} not found") from None
    st = info.state
    return StreamState(name=stream, first_seq=int(st.first_seq or 0), last_seq=int(st.last_seq or 0),
                       messages=int(st.messages or 0), allow_direct=bool(info.config.allow_direct),
                       server_version=str(nc.server_info.get("version") or ""))


def resolve_mode(requested: str, state: StreamState) -> str:
    """``direct`` or ``consumer`` for ``readMode``. ``auto`` reads with consumers: a pull
    delivery carries its metadata in the ack subject (a direct-get reply carries six
    headers to format on the server and decode on the client), so consumers cost less on
    both sides (see docs/guide/spark.md, *Performance*)."""
    batch_ok = _version_tuple(state.server_version) >= (2, 11)
    if requested == "consumer":
        return "consumer"
    if requested == "direct":
        if not state.allow_direct:
            raise OptionError(f"stream {state.name!r} does not allow direct get (allow_direct is false); "
                              "use readMode 'consumer' or 'auto'")
        if not batch_ok:
            raise OptionError(f"batched direct get needs nats-server 2.11 or later (server is "
                              f"{state.server_version}); use readMode 'consumer' or 'auto'")
        return "direct"
    return "consumer"


def time_to_seq(nc: Any, js: Any, state: StreamState, when: Any) -> int:
    """The sequence of the first message stored at or after ``when`` (a datetime or an
    option string); ``next_seq`` when there is none."""
    dt = parse_time(when, "startTime") if not hasattr(when, "tzinfo") else when
    stamp = format_rfc3339(dt)
    if state.allow_direct:
        api = js.api  # the context's API requests (prefix, timeout, trace_cb)
        subject, data = api.prepare(f"DIRECT.GET.{state.name}", {"start_time": stamp})
        try:
            msg = api.request_msg(subject, data)
        except NoRespondersError:
            msg = None
        if msg is not None:
            h = msg.headers
            if h is not None and h.status is None and h.get(K_SEQ):
                return int(h.get(K_SEQ))
            if h is not None and h.status == "404":
                return state.next_seq
    try:
        resp = js.api_request(f"STREAM.MSG.GET.{state.name}", {"start_time": stamp})
    except MsgNotFoundError:
        return state.next_seq
    return int(resp["message"]["seq"])


# --------------------------------------------------------------------------- planning
def plan_ranges(lo: int, hi: int, num_partitions: int | None, max_per_partition: int,
                mode: str) -> list[RangePartition]:
    """Split ``[lo, hi)`` into contiguous half-open ranges: ``num_partitions`` of them
    when given (never more than there are sequences), otherwise as many as needed for at
    most ``max_per_partition`` sequences each. An empty range gives no partitions."""
    span = hi - lo
    if span <= 0:
        return []
    n = min(num_partitions, span) if num_partitions else max(1, -(-span // max_per_partition))
    base, extra = divmod(span, n)
    out: list[RangePartition] = []
    start = lo
    for i in range(n):
        size = base + (1 if i < extra else 0)
        out.append(RangePartition(i, start, start + size, mode))
        start += size
    return out


# --------------------------------------------------------------------------- fetching
class _Fetch:
    """The replies to one request, filled in by the connection's reader thread."""

    __slots__ = ("end", "error", "last_seq", "msgs", "partial", "pending", "reply", "rows", "seqs", "times", "token")

    def __init__(self, token: str, reply: str = "") -> None:
        self.token = token
        self.reply = reply  # the request's reply subject: its replies arrive on it
        self.msgs: list[Any] = []
        self.rows: Any = None  # direct gets read into columns: the DirectRows being filled
        self.seqs: list[int] = []  # consumer mode: stream sequences (direct: from headers)
        self.times: list[int] = []  # consumer mode: nanoseconds
        self.last_seq = 0
        self.pending = -1
        self.end = False  # nothing more to read after this fetch
        self.error: BaseException | None = None
        self.partial = False  # consumer: the pull ended before its batch was full


class _Pump:
    """One request in flight, its successor sent by the reader thread as soon as it
    completes (while at most ``depth`` completed fetches wait to be consumed)."""

    def __init__(self, nc: Any, lo: int, hi: int, batch: int, timeout: float, depth: int = 1,
                 max_bytes: int = 0) -> None:
        self.nc = nc
        self.hi = hi
        self.batch = batch
        self.max_bytes = max_bytes  # a request's byte budget (0: none)
        self.timeout = timeout
        self.depth = depth
        self.next_seq = lo
        self.inbox = nc.new_inbox()
        self._ntok = 0
        self._cur: _Fetch | None = None
        self._ready: deque[_Fetch] = deque()
        self._finished = False
        self._cv = threading.Condition(threading.Lock())
        self._sub = nc.link.subscribe_direct(self.inbox + ".*", self._handler())

    # reader side --------------------------------------------------------------------
    def _handler(self) -> Any:
        """The direct handler of the reply subscription."""
        return self._on_msg

    def _on_msg(self, m: Any) -> None:  # pragma: no cover - replaced per mode
        raise NotImplementedError

    def _started(self, f: _Fetch | None) -> None:
        """``f`` is now the request in flight (None: none is)."""

    def _complete(self, f: _Fetch) -> None:
        """``f`` is done (called from the reader thread, or on errors from anywhere)."""
        with self._cv:
            if self._cur is not f:
                return
            self._cur = None
            self._started(None)
            if f.error is not None or f.end:
                self._finished = True
            self._ready.append(f)
            if not self._finished and len(self._ready) <= self.depth:
                self._issue()
            self._cv.notify()

    def _issue(self) -> None:
        """Send the next request (caller holds the lock)."""
        self._ntok += 1
        token = str(self._ntok)
        f = _Fetch(token, self.inbox + "." + token)
        self._cur = f
        self._started(f)
        try:
            subject, payload = self._request(f)
            ok = self.nc.link.try_publish(subject, f.reply, payload)
        except Exception as exc:  # pragma: no cover - defensive
            ok = False
            f.error = exc
        if not ok:
            self._cur = None
            self._started(None)
            f.error = f.error or ConnectionClosedError("not connected: cannot request more messages")
            self._finished = True
            self._ready.append(f)

    def _request(self, f: _Fetch) -> tuple[str, bytes]:  # pragma: no cover - per mode
        raise NotImplementedError

    def _size(self) -> int:
        """Messages to ask for next: ``batch``, never past ``hi``."""
        return max(1, min(self.batch, self.hi - self.next_seq))

    # consumer side ------------------------------------------------------------------
    def fetches(self) -> Iterator[_Fetch]:
        """Completed fetches in order; raises the first error or ``TimeoutError``."""
        cv = self._cv
        with cv:
            if not self._finished and self._cur is None:
                self._issue()
        while True:
            with cv:
                deadline = time.monotonic() + self.timeout
                while not self._ready:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise TimeoutError(f"no reply from the server within fetchTimeout={self.timeout}s")
                    cv.wait(remaining)
                f = self._ready.popleft()
                if not self._finished and self._cur is None and len(self._ready) <= self.depth:
                    self._issue()
                last = self._finished and self._cur is None and not self._ready
            if f.error is not None:
                raise f.error
            yield f
            if last:
                return

    def close(self) -> None:
        with self._cv:
            self._finished = True
            self._cur = None
            self._started(None)
        try:
            self.nc.link.unsubscribe(self._sub)
        except Exception:
            pass


class _DirectPump(_Pump):
    """Batched direct gets. With ``rows`` (the Spark reader) the replies become column
    values as they arrive, in compiled code (``DirectCollector`` filling each fetch's
    ``DirectRows``): no message is kept, and only the end-of-batch status reaches Python
    (``_on_status``). Without, each fetch keeps its messages (``direct_get_batch``)."""

    def __init__(self, nc: Any, api_prefix: str, stream: str, lo: int, hi: int, subject: str | None,
                 batch: int, timeout: float, rows: bool = False, max_bytes: int = 0) -> None:
        self.get_subject = f"{api_prefix}.DIRECT.GET.{stream}"
        self.filter = subject
        self._collector = _impl.DirectCollector(self._on_status) if rows else None
        super().__init__(nc, lo, hi, batch, timeout, max_bytes=max_bytes)

    def _handler(self) -> Any:
        return self._collector if self._collector is not None else self._on_msg

    def _started(self, f: _Fetch | None) -> None:
        c = self._collector
        if c is not None:
            if f is not None:
                f.rows = _impl.DirectRows(f.reply)
                c.target = f.rows
            else:
                c.target = None

    def _request(self, f: _Fetch) -> tuple[str, bytes]:
        seq = self.next_seq
        req: dict[str, Any] = {"seq": seq, "batch": self._size()}
        if self.max_bytes:  # (the server sends at least one message, whatever its size)
            req["max_bytes"] = self.max_bytes
        if self.filter:
            req["next_by_subj"] = self.filter
        return self.get_subject, orjson.dumps(req)

    def _on_msg(self, m: Any) -> None:
        f = self._cur
        if f is None or m.subject != f.reply:
            return  # a late reply to an abandoned request
        h = m.headers
        if h is not None and h.status is None:
            f.msgs.append(m)
            return
        self._status(f, m)

    def _on_status(self, m: Any) -> None:
        f = self._cur
        if f is not None and m.subject == f.reply:
            self._status(f, m)

    def _status(self, f: _Fetch, m: Any) -> None:
        """A status reply (or one without headers) to the request in flight."""
        h = m.headers
        status = h.status if h is not None else None
        rows = f.rows
        count = len(rows) if rows is not None else len(f.msgs)
        if rows is not None and rows.error is not None:
            f.error = rows.error
        elif status == "204":  # EOB
            last = h.get(K_LAST)
            pend = h.get(K_PENDING)
            if last:
                f.last_seq = int(last)
            elif count:  # (a server that leaves the header out of the EOB)
                f.last_seq = rows.last_seq if rows is not None else int(f.msgs[-1].headers[K_SEQ])
            f.pending = int(pend) if pend else -1
            if not count or f.pending == 0 or f.last_seq + 1 >= self.hi:
                f.end = True
            else:
                self.next_seq = f.last_seq + 1
        elif status == "404":  # nothing stored at or after the requested sequence
            f.end = True
        elif status is None:
            f.error = APIError(code=None, err_code=None,
                               description=f"direct get of {self.get_subject}: a reply without headers")
        else:
            desc = h.description or "direct get failed"
            f.error = APIError(code=int(status) if status.isdigit() else None, err_code=None,
                               description=f"direct get of {self.get_subject}: {desc}")
        self._complete(f)


class _PullPump(_Pump):
    """Pulls of a consumer (``$JS.API.CONSUMER.MSG.NEXT``) whose deliveries become column
    values as they arrive, in compiled code (``AckCollector`` filling each fetch's
    ``AckRows`` from the ack subjects): no message is kept and nothing per message runs in
    Python. A pull is complete when it delivered its batch, when the range or the stream
    is exhausted (a delivery past ``hi``, at ``hi - 1``, or with nothing more pending:
    no wait for the pull to expire), or with a status (``408``: expired; ``409 Message Size
    Exceeds MaxBytes``: the byte budget is spent). A message larger than the whole budget
    is asked for alone, with no budget."""

    def __init__(self, nc: Any, api_prefix: str, stream: str, consumer: str, lo: int, hi: int, batch: int,
                 timeout: float, max_bytes: int = 0) -> None:
        self.next_subject = f"{api_prefix}.CONSUMER.MSG.NEXT.{stream}.{consumer}"
        self.where = f"consumer {consumer!r} of stream {stream!r}"
        self._collector = _impl.AckCollector(self._on_event)
        self._oversized = False  # the next message did not fit in a whole budget
        super().__init__(nc, lo, hi, batch, timeout, max_bytes=max_bytes)

    def _handler(self) -> Any:
        return self._collector

    def _started(self, f: _Fetch | None) -> None:
        if f is not None:
            want = 1 if self._oversized else self._size()
            f.rows = _impl.AckRows(f.reply, self.hi, want)
            self._collector.target = f.rows
        else:
            self._collector.target = None

    def _request(self, f: _Fetch) -> tuple[str, bytes]:
        budget = 0 if self._oversized else self.max_bytes
        self._oversized = False
        return self.next_subject, pull_request(f.rows.want, self.timeout, max_bytes=budget)

    def _on_event(self, m: Any) -> None:
        """The pull in flight ended (``m`` None) or got a status reply ``m``."""
        f = self._cur
        if f is None:
            return
        rows = f.rows
        if m is not None:
            h = m.headers
            kind = classify_status(h.status, h.description)
            if kind in (S_HEARTBEAT, S_FLOW_CONTROL):
                return  # (none is asked for)
            if kind == S_PENDING:  # 409 Message Size Exceeds MaxBytes: the byte budget is spent
                if not len(rows) and not rows.end:
                    self._oversized = True  # the next message alone is larger than the budget
            elif kind != S_END:
                f.error = status_error(h.status, h.description, self.where) or APIError(
                    code=int(h.status) if h.status.isdigit() else None, err_code=None,
                    description=f"pull of {self.where}: {h.status} {h.description or ''}".rstrip())
            elif h.status != "409" and not len(rows) and not rows.end:  # (409 Batch Completed: a full pull)
                f.error = TimeoutError(f"consumer delivered nothing within fetchTimeout={self.timeout}s "
                                       "although messages are pending")
        if rows.error is not None:
            f.error = rows.error
        elif rows.end:
            f.end = True
        elif len(rows):
            self.next_seq = rows.last_seq + 1
        self._complete(f)


# --------------------------------------------------------------------------- to Arrow
# The per-message work is in compiled code (jetwire._impl: ``DirectCollector`` turns each
# direct-get reply into a row of ``DirectRows`` on the reader thread as it arrives,
# reading the direct-get headers and parsing the RFC 3339 time; ``ack_columns`` parses
# ack subjects): sequences and times arrive as int64 buffers Arrow wraps without a copy.
_INT64 = pa.int64()
_BINARY = pa.binary()


def _int64(buf: Any, n: int, typ: pa.DataType = _INT64) -> pa.Array:
    return pa.Array.from_buffers(typ, n, [None, pa.py_buffer(buf)])


def _direct_to_batch(builder: BatchBuilder, f: _Fetch, hi: int) -> pa.RecordBatch | None:
    rows = f.rows
    if rows is None or not len(rows):
        return None
    subjects, seqs, times, data, headers, odd = rows.columns()
    n = len(subjects)
    if odd:  # times not in the usual RFC 3339 form: the lenient parser, row by row
        fixed: list[int | None] = list(times)
        for i, text in odd:
            fixed[i] = rfc3339_to_us(text)
        ts = pa.array(fixed, pa.int64()).cast(TS_TYPE)
    else:
        ts = _int64(times, n, TS_TYPE)
    seq_arr = _int64(seqs, n)
    batch = builder.build(subjects, seq_arr, ts, data, headers)
    return _trim(batch, seq_arr, hi)


def _pull_to_batch(builder: BatchBuilder, f: _Fetch, hi: int) -> pa.RecordBatch | None:
    rows = f.rows
    if rows is None or not len(rows):
        return None
    soff, subj, seqs, times, doff, data, headers = rows.columns()
    n = len(seqs)
    return builder.build(utf8_column(n, soff, subj), _int64(seqs, n), _int64(times, n, TS_TYPE),
                         pa.Array.from_buffers(_BINARY, n, [None, pa.py_buffer(doff), pa.py_buffer(data)]), headers)


def _trim(batch: pa.RecordBatch, seqs: pa.Array, hi: int) -> pa.RecordBatch | None:
    """Drop rows at or past ``hi`` (a filtered batch can run past the range end)."""
    n = len(seqs)
    if n and seqs[n - 1].as_py() >= hi:
        keep = pc.sum(pc.less(seqs, hi)).as_py() or 0
        if keep == 0:
            return None
        batch = batch.slice(0, keep)
    return batch


def read_range(conn: dict[str, Any], stream: str, part: RangePartition, subject: str | None, batch: int,
               timeout: float, check_loss: bool = False, max_bytes: int = 0) -> Iterator[pa.RecordBatch]:
    """Arrow record batches of the messages in ``[part.lo, part.hi)`` (matching
    ``subject`` when given), fetched ``batch`` messages and at most ``max_bytes`` (0: no
    limit) at a time. ``check_loss`` raises :class:`DataLossError` when the stream no
    longer holds the start of the range."""
    if part.hi <= part.lo:
        return
    builder = BatchBuilder(stream)
    with open_js(conn) as (nc, js):
        if check_loss:
            st = stream_state(nc, js, stream)
            if part.lo < st.first_available:
                raise DataLossError(
                    f"stream {stream!r} no longer holds sequences {part.lo}..{min(part.hi, st.first_available) - 1} "
                    f"(first stored sequence is {st.first_available}); messages were removed before they were "
                    "read. Set failOnDataLoss=false to skip them.")
        if part.mode == "direct":
            yield from _read_direct(nc, js, stream, part, subject, batch, timeout, builder, max_bytes)
        else:
            yield from _read_consumer(nc, js, stream, part, subject, batch, timeout, builder, max_bytes)


def _pumped(pump: Any, to_batch: Any, builder: BatchBuilder, hi: int) -> Iterator[pa.RecordBatch]:
    """The non-empty record batches of a pump's fetches (each fetch's messages are let go
    once converted)."""
    for f in pump.fetches():
        rb = to_batch(builder, f, hi)
        f.msgs = []
        f.rows = None
        if rb is not None and rb.num_rows:
            yield rb


def _read_direct(nc: Any, js: Any, stream: str, part: RangePartition, subject: str | None, batch: int,
                 timeout: float, builder: BatchBuilder, max_bytes: int) -> Iterator[pa.RecordBatch]:
    pump = _DirectPump(nc, js.api_prefix, stream, part.lo, part.hi, subject, batch, timeout, rows=True,
                       max_bytes=max_bytes)
    try:
        yield from _pumped(pump, _direct_to_batch, builder, part.hi)
    finally:
        pump.close()


def _read_consumer(nc: Any, js: Any, stream: str, part: RangePartition, subject: str | None, batch: int,
                   timeout: float, builder: BatchBuilder, max_bytes: int) -> Iterator[pa.RecordBatch]:
    name = f"jetwire_spark_{_nuid.next()}"
    fields: dict[str, Any] = dict(
        name=name, deliver_policy="by_start_sequence", opt_start_seq=part.lo, ack_policy="none",
        replay_policy="instant", mem_storage=True, num_replicas=1, max_deliver=1,
        inactive_threshold=max(30.0, timeout * 3), description="jetwire spark reader (temporary)",
    )
    if subject:
        fields["filter_subject"] = subject
    cons = js.create_consumer(stream, **fields)
    try:
        if int(cons.cached_info().num_pending or 0) == 0:
            return
        pump = _PullPump(nc, js.api_prefix, stream, name, part.lo, part.hi, batch, timeout, max_bytes)
        try:
            yield from _pumped(pump, _pull_to_batch, builder, part.hi)
        finally:
            pump.close()
    finally:
        try:
            js.delete_consumer(stream, name)
        except Exception:
            pass  # ephemeral: the server removes it after inactive_threshold anyway


def direct_get_batch(nc: Any, stream: str, seq: int, batch: int, subject: str | None = None,
                     timeout: float = 5.0, api_prefix: str = "$JS.API") -> list[Any]:
    """One batched direct get: up to ``batch`` messages at or after ``seq`` (matching
    ``subject``), as :class:`jetwire.RawStreamMsg`. A small building block kept here
    (rather than on ``Stream``) for the Spark reader and its tests."""
    from ..jetstream.manage import direct_msg

    pump = _DirectPump(nc, api_prefix, stream, seq, seq + batch, subject, batch, timeout)
    out: list[Any] = []
    try:
        for f in pump.fetches():
            out.extend(direct_msg(m) for m in f.msgs)
            break
    finally:
        pump.close()
    return out
