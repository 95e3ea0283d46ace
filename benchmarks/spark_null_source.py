"""A do-nothing Python data source in the shape of ``format("jetstream")``: the yardstick
for what Spark's Python data source machinery itself costs on this machine.

``format("jetwire_null")`` reads ``rows`` rows (option, default 200000) in
``numPartitions`` partitions (default: the jetstream planning, 50k rows each), each
partition yielding the same prebuilt 1000-row Arrow record batch of the jetstream read
schema (200 B ``data``); writing counts the rows of the Arrow batches it is given and
throws them away. Used by ``spark_bench.py``; importable by the Spark workers (the
benchmark puts this folder on their ``PYTHONPATH``).
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)

from jetwire.spark._arrow import READ_SCHEMA_DDL, build_batch

BATCH = 1000


@dataclass
class NullPartition(InputPartition):
    rows: int


@dataclass
class NullCommit(WriterCommitMessage):
    rows: int


class NullReader(DataSourceReader):
    def __init__(self, options: dict) -> None:
        self.rows = int(options.get("rows", 200_000))
        per = int(options.get("maxMessagesPerPartition", 50_000))
        n = int(options.get("numPartitions", 0)) or max(1, -(-self.rows // per))
        base, extra = divmod(self.rows, n)
        self.sizes = [base + (1 if i < extra else 0) for i in range(n)]

    def partitions(self) -> list[NullPartition]:
        return [NullPartition(s) for s in self.sizes]

    def read(self, partition: NullPartition) -> Iterator[Any]:  # type: ignore[override]
        rb = build_batch("BENCH_R", ["bench_r.k1"] * BATCH, range(1, BATCH + 1), [1_700_000_000_000_000_000] * BATCH,
                         [bytes(200)] * BATCH)
        left = partition.rows
        while left > 0:
            k = min(left, BATCH)
            yield rb if k == BATCH else rb.slice(0, k)
            left -= k


class NullWriter(DataSourceArrowWriter):
    def write(self, iterator: Iterator[Any]) -> NullCommit:
        return NullCommit(sum(rb.num_rows for rb in iterator))


class NullDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "jetwire_null"

    def schema(self) -> str:
        return READ_SCHEMA_DDL

    def reader(self, schema: Any) -> NullReader:
        return NullReader(self.options)

    def writer(self, schema: Any, overwrite: bool) -> NullWriter:
        return NullWriter()
