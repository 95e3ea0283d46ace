"""The write limit for ``spark_bench.py``: a Spark sink in the shape of
``format("jetstream")`` that publishes over a plain socket, with no client library.

``format("jetwire_rawpub")`` takes ``servers`` (one ``nats://host:port``) and
``maxPendingAcks`` (default 512, jetwire's default window). Each task opens a TCP
socket, sends ``CONNECT`` and one ``SUB`` on a wildcard inbox, then turns every Arrow
record batch (``subject``, ``data``) into ``PUB <subject> <inbox>.<row> <len>`` frames
with Arrow compute kernels (no Python object per row) and writes them with ``sendall``,
at most ``maxPendingAcks`` unacknowledged. Acks are counted the cheapest way: the
``MSG `` lines in what the socket returns (every reply on the inbox is one stored
message's ack); an ``"error"`` or a status reply (``HMSG``, e.g. no responders) fails the
task. No ``Nats-Msg-Id`` headers: jetwire writes none without ``msgIdColumn`` /
``msgIdPrefix``, which the benchmark does not set. Importable by the Spark workers (the
benchmark puts this folder on their ``PYTHONPATH``).
"""
from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage


@dataclass
class RawCommit(WriterCommitMessage):
    rows: int


class RawPubWriter(DataSourceArrowWriter):
    def __init__(self, options: dict) -> None:
        self.url = str(options.get("servers", "nats://127.0.0.1:4222")).split(",")[0]
        self.window = int(options.get("maxPendingAcks", 512))

    def write(self, iterator: Iterator[Any]) -> RawCommit:
        u = urlparse(self.url)
        sock = socket.create_connection((u.hostname or "127.0.0.1", u.port or 4222))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        inbox = f"_RAW.{os.urandom(8).hex()}"
        try:
            got = b""
            while b"\r\n" not in got:  # INFO
                got += sock.recv(65536)
            sock.sendall(b'CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":true}\r\n'
                         b"SUB " + inbox.encode() + b".* 1\r\nPING\r\n")
            got = b""
            while b"PONG\r\n" not in got:
                got += sock.recv(65536)
                if b"-ERR" in got:
                    raise RuntimeError(got.decode(errors="replace"))
            sent = acked = 0
            tail = b""

            def receive() -> int:
                nonlocal tail
                data = sock.recv(1 << 20)
                if not data:
                    raise RuntimeError("server closed the connection")
                if b'"error"' in data or b"HMSG" in data or b"-ERR" in data:
                    raise RuntimeError(f"publish failed: {data[:300]!r}")
                if b"PING\r\n" in data:
                    sock.sendall(b"PONG\r\n")
                chunk = tail + data
                tail = chunk[-3:]
                return chunk.count(b"MSG ")

            lb = pa.large_binary()
            window = self.window
            step = max(1, window // 4)
            base = 0
            for rb in iterator:
                n = rb.num_rows
                names = rb.schema.names
                subj = rb.column(names.index("subject")).cast(lb)
                data = pc.fill_null(rb.column(names.index("data")).cast(lb), pa.scalar(b"", lb))
                idx = pa.array(range(base, base + n), pa.int64()).cast(pa.string()).cast(lb)
                frames = pc.binary_join_element_wise(
                    pa.scalar(b"PUB ", lb), subj, pa.scalar(f" {inbox}.".encode(), lb), idx, pa.scalar(b" ", lb),
                    pc.binary_length(data).cast(pa.string()).cast(lb), pa.scalar(b"\r\n", lb), data,
                    pa.scalar(b"\r\n", lb), pa.scalar(b"", lb))
                offsets = memoryview(frames.buffers()[1]).cast("q")[frames.offset:]
                values = memoryview(frames.buffers()[2])
                i = 0
                while i < n:
                    room = window - (sent - acked)
                    if room < min(step, n - i):
                        acked += receive()
                        continue
                    j = min(n, i + room)
                    sock.sendall(values[offsets[i]:offsets[j]])
                    sent += j - i
                    i = j
                base += n
            while acked < sent:
                acked += receive()
            return RawCommit(sent)
        finally:
            sock.close()


class RawPubDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "jetwire_rawpub"

    def schema(self) -> str:
        return "subject string, data binary"

    def writer(self, schema: Any, overwrite: bool) -> RawPubWriter:
        return RawPubWriter(self.options)
