"""The ``jetstream`` PySpark data source (Python Data Source API, Spark 4.0+).

``JetStreamDataSource`` is what ``spark.read.format("jetstream")``,
``spark.readStream.format("jetstream")``, ``df.write.format("jetstream")`` and
``df.writeStream.format("jetstream")`` resolve to. The classes here only plan and
adapt; the work happens in :mod:`._read` and :mod:`._write`. Everything Spark pickles
(the data source, readers, writers, partitions, commit messages) holds plain option
values: connections are opened inside ``read()`` / ``write()`` and closed before they
return.
"""
from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from .._typing import JSONObject
from ..errors import CommitLogError
from ._arrow import READ_SCHEMA_DDL
from ._commit import commit_batch, committed_batch
from ._options import OptionError, ReadOptions, WriteOptions
from ._read import (
    DataLossError,
    RangePartition,
    open_js,
    plan_ranges,
    read_range,
    resolve_mode,
    stream_state,
    time_to_seq,
)
from ._write import WriteResult, headers_type_error, write_partition

# -- version-dependent pieces (see docs/guide/spark.md) ------------------------------------
try:  # 4.0+
    from pyspark.sql.datasource import DataSourceArrowWriter as _BatchWriterBase
except ImportError:  # pragma: no cover - Spark without the Arrow writer
    _BatchWriterBase = DataSourceWriter  # type: ignore[misc,assignment]
try:  # 4.1+
    from pyspark.sql.datasource import DataSourceStreamArrowWriter as _StreamWriterBase
except ImportError:  # pragma: no cover - Spark 4.0
    _StreamWriterBase = DataSourceStreamWriter  # type: ignore[misc,assignment]
try:  # 4.2+: admission control and Trigger.AvailableNow for Python sources
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadLimit,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )
except ImportError:  # pragma: no cover - Spark 4.0 / 4.1
    ReadAllAvailable = ReadMaxRows = ReadLimit = None  # type: ignore[assignment,misc]

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        """Placeholder: Spark before 4.2 has no such mixin (availableNow then reads
        everything up to the latest offset in one batch)."""

log = logging.getLogger("jetwire.spark")

__all__ = [
    "JetStreamCommitMessage",
    "JetStreamDataSource",
    "JetStreamPartition",
    "JetStreamReader",
    "JetStreamStreamReader",
    "JetStreamStreamWriter",
    "JetStreamWriter",
]


@dataclass
class JetStreamPartition(InputPartition):
    """Stream sequences ``[lo, hi)`` read with ``mode`` (``direct`` or ``consumer``)."""

    index: int
    lo: int
    hi: int
    mode: str

    @classmethod
    def of(cls, r: RangePartition) -> JetStreamPartition:
        return cls(r.index, r.lo, r.hi, r.mode)

    def to_range(self) -> RangePartition:
        return RangePartition(self.index, self.lo, self.hi, self.mode)


@dataclass
class JetStreamCommitMessage(WriteResult, WriterCommitMessage):
    """One write task's result (the fields of :class:`WriteResult`): rows published, how
    many the stream reported as duplicates (``Nats-Msg-Id`` seen within its duplicate
    window) and the first/last stream sequence stored. With ``commitBucket``: the
    streaming query's id, and ``skipped``, the rows of a replayed micro-batch (one the
    commit log already holds) that were not published."""

    query_id: str | None = None
    skipped: int = 0

    @classmethod
    def of(cls, r: WriteResult, **extra: Any) -> JetStreamCommitMessage:
        return cls(**dataclasses.asdict(r), **extra)


def _summarise(messages: Sequence[WriterCommitMessage | None]) -> JSONObject:
    done = [m for m in messages if isinstance(m, JetStreamCommitMessage)]
    firsts = [m.first_seq for m in done if m.first_seq is not None]
    lasts = [m.last_seq for m in done if m.last_seq is not None]
    return {
        "tasks": len(done),
        "count": sum(m.count for m in done),
        "duplicates": sum(m.duplicates for m in done),
        "skipped": sum(m.skipped for m in done),
        "first_seq": min(firsts) if firsts else None,
        "last_seq": max(lasts) if lasts else None,
    }


def _task_ids() -> tuple[int, int | None]:
    """(partition id, streaming batch id or None) of the running Spark task."""
    try:
        from pyspark import TaskContext

        tc = TaskContext.get()
    except Exception:  # pragma: no cover
        tc = None
    if tc is None:
        return 0, None
    batch = tc.getLocalProperty("streaming.sql.batchId")
    return tc.partitionId(), (int(batch) if batch not in (None, "") else None)


def _query_id() -> str | None:
    """The id of the streaming query running this task (Spark's ``StreamingQuery.id``,
    stored in the checkpoint: the same after a restart), or None outside one."""
    try:
        from pyspark import TaskContext

        tc = TaskContext.get()
    except Exception:  # pragma: no cover
        return None
    qid = tc.getLocalProperty("sql.streaming.queryId") if tc is not None else None
    return qid or None


def _drain(iterator: Iterator[Any]) -> int:
    """Consume a task's input without publishing it; the number of rows."""
    n = 0
    for item in iterator:
        rows = getattr(item, "num_rows", None)
        n += rows if isinstance(rows, int) else 1
    return n


class JetStreamDataSource(DataSource):
    """``format("jetstream")``: read a JetStream stream (batch or streaming) and publish
    rows to it. Options are documented in ``docs/guide/spark.md``."""

    @classmethod
    def name(cls) -> str:
        return "jetstream"

    def schema(self) -> str:
        return READ_SCHEMA_DDL

    def reader(self, schema: StructType) -> JetStreamReader:
        return JetStreamReader(ReadOptions(self.options, "read"))

    def streamReader(self, schema: StructType) -> JetStreamStreamReader:
        return JetStreamStreamReader(ReadOptions(self.options, "readStream"))

    def writer(self, schema: StructType, overwrite: bool) -> JetStreamWriter:
        if overwrite:
            raise OptionError("a JetStream stream is append-only: use mode('append') (overwrite is not supported)")
        opts = WriteOptions(self.options, "write")  # (refuses commitBucket: streaming writes only)
        _check_input_schema(schema)
        return JetStreamWriter(opts)

    def streamWriter(self, schema: StructType, overwrite: bool) -> JetStreamStreamWriter:
        if overwrite:
            raise OptionError("a JetStream stream is append-only: use outputMode('append')")
        opts = WriteOptions(self.options, "writeStream")
        _check_input_schema(schema)
        return JetStreamStreamWriter(opts)


def _check_input_schema(schema: StructType | None) -> None:
    """The column types a writer cannot publish, refused once on the driver (before any
    task): a ``headers`` column that is not a map of string to string or array<string>."""
    from pyspark.sql.types import ArrayType, MapType, NullType, StringType

    for field in schema.fields if schema is not None else ():
        if field.name.lower() != "headers":
            continue
        t = field.dataType
        v = t.valueType if isinstance(t, MapType) else None
        if isinstance(t, NullType) or (
                isinstance(t, MapType) and isinstance(t.keyType, StringType)
                and (isinstance(v, StringType) or (isinstance(v, ArrayType) and isinstance(v.elementType, StringType)))):
            continue
        raise headers_type_error(t.simpleString())


# --------------------------------------------------------------------------- batch read
class JetStreamReader(DataSourceReader):
    """Batch reader: the stream's ``[first..last]`` sequence range (narrowed by
    ``startSequence`` / ``endSequence`` / ``startTime``) split into partitions. The range
    is fixed when ``partitions()`` runs, i.e. once per Spark action."""

    def __init__(self, opts: ReadOptions) -> None:
        self.opts = opts

    def partitions(self) -> Sequence[InputPartition]:
        o = self.opts
        with open_js(o.conn) as (nc, js):
            st = stream_state(nc, js, o.stream)
            mode = resolve_mode(o.read_mode, st)
            lo = st.first_available
            hi = st.next_seq
            if o.start_sequence is not None:
                lo = max(lo, o.start_sequence)
            if o.end_sequence is not None:
                hi = min(hi, o.end_sequence + 1)
            if o.start_time is not None:
                lo = max(lo, time_to_seq(nc, js, st, o.start_time))
        parts = [JetStreamPartition.of(r) for r in plan_ranges(lo, hi, o.num_partitions, o.max_per_partition, mode)]
        if not parts:  # nothing to read: one empty partition keeps every Spark version happy
            parts = [JetStreamPartition(0, lo, lo, mode)]
        return parts

    def read(self, partition: JetStreamPartition) -> Iterator[Any]:  # type: ignore[override]
        o = self.opts
        return read_range(o.conn, o.stream, partition.to_range(), o.subject, o.fetch_batch, o.fetch_timeout,
                          max_bytes=o.fetch_max_bytes)


# --------------------------------------------------------------------------- streaming read
class JetStreamStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batch reader. Offsets are ``{"seq": <next stream sequence to read>}``; a
    micro-batch reads ``[start.seq, end.seq)``, planned deterministically from the two
    offsets, so replaying a batch after a failure reads the same messages (as long as
    the stream still holds them). Nothing is acknowledged: ``commit()`` is a no-op."""

    def __init__(self, opts: ReadOptions) -> None:
        self.opts = opts
        self._mode: str | None = None
        self._target: int | None = None  # Trigger.AvailableNow: never read past this
        self._pos: int | None = None  # Spark < 4.2: where the next batch starts
        self._initial: int | None = None  # what initialOffset() returned: a start, not a reached offset
        self._conn: Any = None  # (nc, js) kept by the driver-side reader between triggers

    def __getstate__(self) -> JSONObject:
        d = dict(self.__dict__)
        d["_conn"] = None
        return d

    # -- helpers
    def _js(self) -> Any:
        c = self._conn
        if c is None or c[0].is_closed:
            from ._options import jetstream_kwargs
            from ._read import connect

            nc = connect(self.opts.conn)
            c = self._conn = (nc, nc.jetstream(**jetstream_kwargs(self.opts.conn)))
        return c

    def _state(self) -> Any:
        nc, js = self._js()
        st = stream_state(nc, js, self.opts.stream)
        if self._mode is None:
            self._mode = resolve_mode(self.opts.read_mode, st)
        return st

    # -- Spark API
    def initialOffset(self) -> JSONObject:
        o = self.opts
        nc, js = self._js()
        st = self._state()
        if o.starting_timestamp is not None:
            seq = time_to_seq(nc, js, st, o.starting_timestamp)
        elif o.starting_offsets in (None, "earliest"):
            seq = st.first_available
        elif o.starting_offsets == "latest":
            seq = st.next_seq
        else:
            seq = int(o.starting_offsets)
        self._pos = self._initial = seq
        return {"seq": seq}

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._state().next_seq

    def getDefaultReadLimit(self) -> Any:
        if self.opts.max_per_trigger and ReadMaxRows is not None:
            return ReadMaxRows(self.opts.max_per_trigger)
        return ReadAllAvailable() if ReadAllAvailable is not None else None

    def _went_back(self, begin: int, last: int | None = None) -> str:
        """The text of a stream whose sequences went back below ``begin``, an offset the
        query had reached (now ending at ``last``, when known)."""
        now = f", but the stream now ends at sequence {last}" if last is not None else ""
        return (f"stream {self.opts.stream!r} went back: the query has already read up to sequence {begin - 1}"
                f"{now}; it was deleted and re-created under the same name (or restored from an older state). "
                "Set failOnDataLoss=false to read it again from its first message, or start the query with a "
                "new checkpoint")

    def latestOffset(self, start: JSONObject | None = None, limit: Any = None) -> JSONObject:
        st = self._state()
        latest = st.next_seq if self._target is None else min(st.next_seq, self._target)
        if start is None:  # Spark < 4.2 calls latestOffset() without arguments
            begin = self._pos
            cap = self.opts.max_per_trigger
        else:
            begin = int(start["seq"])
            cap = int(limit.max_rows) if ReadMaxRows is not None and isinstance(limit, ReadMaxRows) else None
        end = latest
        if begin is not None and st.next_seq < begin and begin != self._initial:
            # The stream ends below where the query is (a start past the end that the query
            # was told to wait for excepted): re-created. A purge never lowers next_seq.
            if self.opts.fail_on_data_loss:
                raise DataLossError(self._went_back(begin, st.last_seq))
            # restart at its first message: an end below the start tells partitions() so
            return {"seq": min(end, st.first_available + cap) if cap else end}
        if begin is not None:
            if cap:
                end = min(end, begin + cap)
            end = max(end, begin)  # never go backwards
        return {"seq": end}

    def reportLatestOffset(self) -> JSONObject | None:
        try:
            return {"seq": self._state().next_seq}
        except Exception:
            return None

    def partitions(self, start: JSONObject, end: JSONObject) -> Sequence[InputPartition]:
        o = self.opts
        lo, hi = int(start["seq"]), int(end["seq"])
        self._pos = hi
        if hi == lo:
            return []
        st = self._state()
        if hi < lo:  # planned by latestOffset() after the stream went back below the query's offset
            if o.fail_on_data_loss:
                raise DataLossError(self._went_back(lo))
            log.warning("jetstream source: stream %r went back below sequence %d that the query had reached (it "
                        "was deleted and re-created, or restored from an older state); failOnDataLoss=false: "
                        "reading it again from its first message, %d", o.stream, lo, st.first_available)
            lo = st.first_available
            if hi <= lo:
                return []
        elif lo < st.first_available:
            if o.fail_on_data_loss:
                raise DataLossError(
                    f"stream {o.stream!r} no longer holds sequences {lo}..{min(hi, st.first_available) - 1} "
                    f"that the query has not read yet (first stored sequence is {st.first_available}); "
                    "messages were removed by retention, purge or deletion. Set failOnDataLoss=false to skip "
                    "them.")
            log.warning("jetstream source: stream %r lost sequences %d..%d; skipping ahead",
                        o.stream, lo, min(hi, st.first_available) - 1)
            lo = min(hi, st.first_available)
            if hi <= lo:
                return []
        mode = self._mode or "direct"
        return [JetStreamPartition.of(r) for r in plan_ranges(lo, hi, o.num_partitions, o.max_per_partition, mode)]

    def read(self, partition: JetStreamPartition) -> Iterator[Any]:  # type: ignore[override]
        o = self.opts
        return read_range(o.conn, o.stream, partition.to_range(), o.subject, o.fetch_batch, o.fetch_timeout,
                          check_loss=o.fail_on_data_loss, max_bytes=o.fetch_max_bytes)

    def commit(self, end: JSONObject) -> None:
        self._pos = int(end["seq"])

    def stop(self) -> None:
        c, self._conn = self._conn, None
        if c is not None:
            try:
                c[0].close()
            except Exception:
                pass


# --------------------------------------------------------------------------- writers
class JetStreamWriter(_BatchWriterBase):
    """Batch writer: each task publishes its rows and waits for every ack."""

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts
        self.summary: JSONObject | None = None

    def write(self, iterator: Iterator[Any]) -> JetStreamCommitMessage:
        pid, batch_id = _task_ids()
        return JetStreamCommitMessage.of(write_partition(self.opts, iterator, pid, batch_id))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        self.summary = _summarise(messages)
        log.info("jetstream sink: committed %s", self.summary)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        # Published messages cannot be taken back; they are already in the stream.
        log.warning("jetstream sink: write aborted after %s (already published messages stay in the stream)",
                    _summarise(messages))


class JetStreamStreamWriter(_StreamWriterBase):
    """Streaming writer: like the batch writer, per micro-batch. With ``msgIdPrefix``
    the ids are ``<prefix>:<batchId>:<partition>:<row>``. With ``commitBucket`` the
    driver records the query's last committed batch id in that KV bucket once every task
    of the batch has all its acks, and a task of a batch at or below it (a replay)
    publishes nothing (see :mod:`jetwire.spark._commit`)."""

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[Any]) -> JetStreamCommitMessage:
        pid, batch_id = _task_ids()
        o = self.opts
        if o.commit_bucket is None:
            return JetStreamCommitMessage.of(write_partition(o, iterator, pid, batch_id))
        qid = _query_id()
        if qid is None or batch_id is None:
            raise CommitLogError("option 'commitBucket': this task belongs to no streaming query (no "
                                 "sql.streaming.queryId / streaming.sql.batchId in its context)",
                                 bucket=o.commit_bucket)
        done = committed_batch(o.conn, o.commit_bucket, qid, o.ack_timeout)
        if done is not None and batch_id <= done:
            skipped = _drain(iterator)
            log.warning("jetstream sink: batch %d of query %s is a replay (committed up to batch %d in %r): "
                        "partition %d publishes none of its %d rows", batch_id, qid, done, o.commit_bucket,
                        pid, skipped)
            return JetStreamCommitMessage(partition_id=pid, query_id=qid, skipped=skipped)
        return JetStreamCommitMessage.of(write_partition(o, iterator, pid, batch_id), query_id=qid)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        summary = _summarise(messages)
        bucket = self.opts.commit_bucket
        if bucket is not None:
            qids = {m.query_id for m in messages if isinstance(m, JetStreamCommitMessage)}
            if len(qids) > 1 or None in qids:
                raise CommitLogError(f"option 'commitBucket': batch {batchId}'s tasks report query ids "
                                     f"{sorted(map(str, qids))}, not one", bucket=bucket)
            if qids:  # a batch without tasks published nothing and has nothing to record
                qid = qids.pop()
                assert qid is not None
                if not commit_batch(self.opts.conn, bucket, qid, batchId, summary, self.opts.ack_timeout):
                    log.info("jetstream sink: batch %d of query %s was already committed in %r", batchId, qid,
                             bucket)
        log.info("jetstream sink: batch %d committed %s", batchId, summary)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.warning("jetstream sink: batch %d aborted after %s (already published messages stay in the stream)",
                    batchId, _summarise(messages))
