"""Benchmark-only reference: the ``jetstream`` data source shape with nats-py inside.

``format("jetstream_natspy")`` plans exactly like ``jetwire.spark`` (same options, same
sequence ranges and partitions, same Arrow schema, record batches built in bulk per
fetch) but reads and writes with nats-py, the way a connector written on it naturally
would: asyncio on a private event loop per task, an ephemeral AckNone pull consumer
per partition fetched with ``fetch(fetchBatch)``, and ``publish_async`` with a bounded
window for writes. It exists so ``benchmarks/spark_bench.py`` can put the two clients
side by side in the same Spark job shape; it is not part of jetwire and nothing else
may import nats-py.

The module must be importable by Spark's Python workers (the benchmark puts this
directory on ``PYTHONPATH`` before the session starts).
"""
from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)

from jetwire.spark._arrow import READ_SCHEMA_DDL, BatchBuilder, ts_from_ns
from jetwire.spark._options import ReadOptions, WriteOptions
from jetwire.spark._read import plan_ranges


@dataclass
class RefPartition(InputPartition):
    index: int
    lo: int
    hi: int


@dataclass
class RefCommit(WriterCommitMessage):
    count: int
    duplicates: int


def _servers(opts: Any) -> list[str]:
    return [s.strip() for s in opts.conn["servers"].split(",") if s.strip()]


def _run(coro_fn: Any, *args: Any) -> Any:
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coro_fn(*args))
    finally:
        loop.close()


class NatsPyDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "jetstream_natspy"

    def schema(self) -> str:
        return READ_SCHEMA_DDL

    def reader(self, schema: Any) -> NatsPyReader:
        return NatsPyReader(ReadOptions(self.options))

    def writer(self, schema: Any, overwrite: bool) -> NatsPyWriter:
        return NatsPyWriter(WriteOptions(self.options))


class NatsPyReader(DataSourceReader):
    def __init__(self, opts: ReadOptions) -> None:
        self.opts = opts

    def partitions(self) -> Sequence[InputPartition]:
        async def info() -> Any:
            import nats

            nc = await nats.connect(servers=_servers(self.opts))
            try:
                return await nc.jetstream().stream_info(self.opts.stream)
            finally:
                await nc.close()

        si = _run(info)
        st = si.state
        lo = max(st.first_seq or 1, 1) if st.messages else st.last_seq + 1
        hi = st.last_seq + 1
        if self.opts.start_sequence is not None:
            lo = max(lo, self.opts.start_sequence)
        if self.opts.end_sequence is not None:
            hi = min(hi, self.opts.end_sequence + 1)
        parts = plan_ranges(lo, hi, self.opts.num_partitions, self.opts.max_per_partition, "consumer")
        return [RefPartition(p.index, p.lo, p.hi) for p in parts] or [RefPartition(0, lo, lo)]

    def read(self, partition: RefPartition) -> Iterator[pa.RecordBatch]:
        if partition.hi <= partition.lo:
            return
        opts = self.opts
        loop = asyncio.new_event_loop()
        nc = sub = None
        builder = BatchBuilder(opts.stream)
        try:
            import nats
            from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

            async def start() -> Any:
                c = await nats.connect(servers=_servers(opts))
                j = c.jetstream()
                cfg = ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=partition.lo,
                                     ack_policy=AckPolicy.NONE, mem_storage=True, num_replicas=1,
                                     inactive_threshold=30.0)
                s = await j.pull_subscribe(opts.subject or ">", stream=opts.stream, config=cfg)
                return c, j, s

            nc, _js, sub = loop.run_until_complete(start())
            done = False
            while not done:
                want = max(1, min(opts.fetch_batch, partition.hi - partition.lo))
                msgs = loop.run_until_complete(sub.fetch(want, timeout=opts.fetch_timeout))
                subjects: list[str] = []
                seqs: list[int] = []
                ts: list[int] = []
                data: list[bytes] = []
                headers: list[Any] | None = None
                for m in msgs:
                    md = m.metadata
                    seq = md.sequence.stream
                    if seq >= partition.hi:
                        done = True
                        break
                    subjects.append(m.subject)
                    seqs.append(seq)
                    ts.append(int(md.timestamp.timestamp() * 1_000_000) * 1000)
                    data.append(m.data)
                    if m.headers:
                        if headers is None:
                            headers = [None] * (len(seqs) - 1)
                        headers.append([(k, [v]) for k, v in m.headers.items()])
                    elif headers is not None:
                        headers.append(None)
                    if md.num_pending == 0 or seq + 1 >= partition.hi:
                        done = True
                if seqs:
                    yield builder.build(subjects, pa.array(seqs, pa.int64()), ts_from_ns(ts), data, headers)
                if not msgs:
                    break
        finally:
            async def stop() -> None:
                if sub is not None:
                    try:
                        await sub.unsubscribe()
                    except Exception:
                        pass
                if nc is not None:
                    await nc.close()

            try:
                loop.run_until_complete(stop())
            finally:
                loop.close()


class NatsPyWriter(DataSourceArrowWriter):
    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> RefCommit:
        opts = self.opts

        async def run() -> RefCommit:
            import nats

            nc = await nats.connect(servers=_servers(opts))
            try:
                js = nc.jetstream(publish_async_max_pending=opts.max_pending)
                futs = []
                for rb in iterator:
                    names = rb.schema.names
                    subjects = rb.column(names.index("subject")).to_pylist() if "subject" in names else None
                    data = rb.column(names.index("data")).to_pylist()
                    for i, d in enumerate(data):
                        subj = subjects[i] if subjects is not None else opts.subject
                        if isinstance(d, str):
                            d = d.encode()
                        futs.append(await js.publish_async(subj, d or b"", wait_stall=opts.ack_timeout))
                acks = await asyncio.gather(*futs)
                return RefCommit(len(acks), sum(1 for a in acks if a.duplicate))
            finally:
                await nc.close()

        return _run(run)

    def commit(self, messages: Any) -> None:
        pass

    def abort(self, messages: Any) -> None:
        pass


if __name__ == "__main__":  # pragma: no cover
    print(json.dumps({"name": NatsPyDataSource.name()}))
