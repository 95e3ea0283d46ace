"""Arrow side of the reader: the exact schema Spark expects and bulk column builders.

Spark (4.3) compares the schema of every returned ``RecordBatch`` with
``to_arrow_schema(schema, timezone="UTC")`` using ``pa.Schema.equals``, so the schema is
built here by hand to match it field for field: ``timestamp[us, tz=UTC]`` and
``map<string, list<element: string>>`` whose entries are ``struct<key: string not null,
value: list<element: string>>``. (``to_arrow_schema`` changed its signature between
4.0 and 4.3; the hand-built schema compares equal on both.)

Columns are built in bulk from Python lists collected per fetch: sequences and
timestamps arrive as decimal / RFC 3339 strings in direct-get headers and are converted
by Arrow casts (vectorised, integer-exact: nanoseconds are truncated to microseconds,
never rounded through a float).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from .._units import rfc3339_to_us

__all__ = ["HEADERS_TYPE", "READ_SCHEMA", "READ_SCHEMA_DDL", "build_batch", "ts_from_ns", "ts_from_strings",
           "utf8_column"]

READ_SCHEMA_DDL = (
    "stream string, subject string, seq long, timestamp timestamp, data binary, "
    "headers map<string,array<string>>"
)

HEADERS_TYPE = pa.map_(
    pa.field("key", pa.string(), nullable=False),
    pa.field("value", pa.list_(pa.field("element", pa.string())), nullable=True),
)
TS_TYPE = pa.timestamp("us", tz="UTC")
_TS_NS = pa.timestamp("ns", tz="UTC")

READ_SCHEMA = pa.schema([
    pa.field("stream", pa.string()),
    pa.field("subject", pa.string()),
    pa.field("seq", pa.int64()),
    pa.field("timestamp", TS_TYPE),
    pa.field("data", pa.binary()),
    pa.field("headers", HEADERS_TYPE),
])


def ts_from_strings(values: list[str]) -> pa.Array:
    """RFC 3339 UTC strings (up to 9 fractional digits) to ``timestamp[us, tz=UTC]``."""
    arr = pa.array(values, pa.string())
    try:
        return arr.cast(_TS_NS).cast(TS_TYPE, safe=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.array([rfc3339_to_us(v) for v in values], pa.int64()).cast(TS_TYPE)


def ts_from_ns(values: Sequence[int]) -> pa.Array:
    """Integer nanoseconds since the epoch to ``timestamp[us, tz=UTC]`` (floor division,
    never through a float)."""
    return pa.array(values, pa.int64()).cast(_TS_NS).cast(TS_TYPE, safe=False)


def _utf8(text: str) -> str:
    """Text for an Arrow string column: bytes another client sent that are not UTF-8
    (kept by jetwire as surrogate escapes) become U+FFFD; the binary ``data`` column is exact."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _strings(values: list[str]) -> pa.Array:
    try:
        return pa.array(values, pa.string())
    except (UnicodeEncodeError, pa.ArrowInvalid):
        return pa.array([_utf8(v) for v in values], pa.string())


def utf8_column(n: int, offsets: Any, values: Any) -> pa.Array:
    """A string column from Arrow's layout (``n + 1`` int32 ``offsets`` into the UTF-8
    ``values``), wrapped without a copy; text that is not valid UTF-8 (bytes another
    client sent) is decoded with U+FFFD in its place, row by row."""
    arr = pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(values)])
    try:
        arr.validate(full=True)
    except pa.ArrowInvalid:
        raw = bytes(values)
        arr = pa.array([raw[offsets[i]:offsets[i + 1]].decode("utf-8", "replace") for i in range(n)], pa.string())
    return arr


def headers_array(rows: list[Any] | None, n: int) -> pa.Array:
    """The headers column: ``rows`` is None (no message had headers) or one entry per
    row, None or a list of ``(key, [values])``."""
    if rows is None:
        return pa.nulls(n, HEADERS_TYPE)
    try:
        return pa.array(rows, HEADERS_TYPE)
    except (UnicodeEncodeError, pa.ArrowInvalid):
        return pa.array([None if r is None else [(_utf8(k), [_utf8(v) for v in vs]) for k, vs in r]
                         for r in rows], HEADERS_TYPE)


class BatchBuilder:
    """Builds record batches for one stream; keeps a constant ``stream`` column to slice."""

    __slots__ = ("_const", "stream")

    def __init__(self, stream: str) -> None:
        self.stream = stream
        self._const = pa.array([stream] * 1024, pa.string())

    def stream_column(self, n: int) -> pa.Array:
        const = self._const
        if n > len(const):
            size = max(n, 2 * len(const))
            const = self._const = pa.array([self.stream] * size, pa.string())
        return const.slice(0, n)

    def build(self, subjects: list[str] | pa.Array, seqs: pa.Array, ts: pa.Array, data: list[bytes] | pa.Array,
              headers: list[Any] | None) -> pa.RecordBatch:
        """A record batch; ``subjects`` and ``data`` as Python lists or as built columns."""
        n = len(subjects)
        return pa.RecordBatch.from_arrays(
            [self.stream_column(n), subjects if isinstance(subjects, pa.Array) else _strings(subjects), seqs, ts,
             data if isinstance(data, pa.Array) else pa.array(data, pa.binary()), headers_array(headers, n)],
            schema=READ_SCHEMA,
        )


def build_batch(stream: str, subjects: list[str], seqs: Sequence[int], ts_ns: Sequence[int], data: list[bytes],
                headers: list[Any] | None = None) -> pa.RecordBatch:
    """Convenience builder from plain Python values (integer seqs, nanosecond times)."""
    return BatchBuilder(stream).build(subjects, pa.array(seqs, pa.int64()), ts_from_ns(ts_ns), data, headers)
