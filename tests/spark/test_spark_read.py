"""Batch reads through ``spark.read.format("jetstream")`` against a real server."""
from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime

import pytest

MODES = ["direct", "consumer"]


def _read(spark, url, stream, **options):
    r = spark.read.format("jetstream").option("servers", url).option("stream", stream)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def test_format_is_found_without_register(spark):
    # conftest never calls jetwire.spark.register(): the pyspark_jetwire shim does it
    import pyspark_jetwire
    from jetwire.spark import JetStreamDataSource

    assert pyspark_jetwire.DefaultSource is JetStreamDataSource
    assert JetStreamDataSource.name() == "jetstream"
    with pytest.raises(Exception, match="option 'stream' is required"):
        spark.read.format("jetstream").option("servers", "nats://127.0.0.1:1").load().collect()


def test_shim_never_raises_without_pyspark():
    code = (
        "import sys\n"
        "sys.modules['pyspark'] = None\n"  # makes `import pyspark` fail
        "sys.modules['pyarrow'] = None\n"
        "import pyspark_jetwire\n"
        "assert not hasattr(pyspark_jetwire, 'DefaultSource')\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_register_returns_the_source(spark):
    import jetwire.spark

    assert jetwire.spark.register(spark) is jetwire.spark.JetStreamDataSource


@pytest.mark.parametrize("mode", MODES)
def test_read_whole_stream(spark, spark_nats, make_stream, fill, js, mode):
    stream = make_stream(allow_direct=True)
    fill(stream, 500, headers_every=50)
    df = _read(spark, spark_nats.url, stream, readMode=mode)
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == [
        ("stream", "string"), ("subject", "string"), ("seq", "bigint"), ("timestamp", "timestamp"),
        ("data", "binary"), ("headers", "map<string,array<string>>"),
    ]
    rows = df.orderBy("seq").collect()
    assert len(rows) == 500
    assert [r.seq for r in rows] == list(range(1, 501))
    base = stream.lower()
    for i, r in enumerate(rows):
        assert r.stream == stream
        assert r.subject == f"{base}.s{i % 3}"
        assert bytes(r.data) == b"m%d" % i
        if i % 50 == 0:
            assert r.headers == {"X-Multi": ["a", str(i)], "X-One": ["1"]}
        else:
            assert r.headers is None
    # timestamps: microseconds, truncated from the server's nanoseconds
    raw = js.stream(stream).get_msg(7, direct=True)
    expect = raw.time.astimezone(UTC).replace(tzinfo=None)
    assert rows[6].timestamp == expect
    assert abs((rows[-1].timestamp - datetime.now(UTC).replace(tzinfo=None)).total_seconds()) < 300


@pytest.mark.parametrize("mode", MODES)
def test_subject_filter_and_bounds(spark, spark_nats, make_stream, fill, mode):
    stream = make_stream(allow_direct=True)
    fill(stream, 300)
    base = stream.lower()
    df = _read(spark, spark_nats.url, stream, readMode=mode, subject=f"{base}.s1", startSequence=11,
               endSequence=200, numPartitions=4, fetchBatch=7)
    seqs = sorted(r.seq for r in df.select("seq", "subject").collect())
    # message i (seq i+1) goes to s{i % 3}: s1 holds seqs 2, 5, 8, ...
    assert seqs == [s for s in range(11, 201) if (s - 1) % 3 == 1]
    assert {r.subject for r in df.select("subject").distinct().collect()} == {f"{base}.s1"}
    # a filter matching nothing in the range returns at once, whatever the mode
    assert _read(spark, spark_nats.url, stream, readMode=mode, subject=f"{base}.none").count() == 0


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("parts", [1, 2, 3, 7])
def test_partition_counts(spark, spark_nats, make_stream, fill, js, mode, parts):
    stream = make_stream(allow_direct=True)
    fill(stream, 100)
    js.stream(stream).delete_msg(50)  # an interior gap
    df = _read(spark, spark_nats.url, stream, readMode=mode, numPartitions=parts)
    assert df.rdd.getNumPartitions() == parts
    seqs = sorted(r.seq for r in df.select("seq").collect())
    assert seqs == [s for s in range(1, 101) if s != 50]


def test_max_messages_per_partition(spark, spark_nats, make_stream, fill):
    stream = make_stream(allow_direct=True)
    fill(stream, 95)
    df = _read(spark, spark_nats.url, stream, maxMessagesPerPartition=20)
    assert df.rdd.getNumPartitions() == 5
    assert df.count() == 95


def test_start_time_and_consumer_fallback(spark, spark_nats, make_stream, fill, js):
    import time

    stream = make_stream(allow_direct=False)  # no direct get: auto reads with consumers
    fill(stream, 40)
    time.sleep(0.05)
    cut = datetime.now(UTC)
    time.sleep(0.05)
    fill(stream, 10, start=40)
    df = _read(spark, spark_nats.url, stream, startTime=cut.isoformat())
    assert sorted(r.seq for r in df.select("seq").collect()) == list(range(41, 51))
    # every temporary consumer was deleted
    assert list(js.consumer_names(stream)) == []
    with pytest.raises(Exception, match="does not allow direct get"):
        _read(spark, spark_nats.url, stream, readMode="direct").count()


def test_empty_stream_and_missing_stream(spark, spark_nats, make_stream):
    stream = make_stream(allow_direct=True)
    assert _read(spark, spark_nats.url, stream).count() == 0
    with pytest.raises(Exception, match="not found"):
        _read(spark, spark_nats.url, "NO_SUCH_STREAM").count()
    with pytest.raises(Exception, match="readMode"):
        _read(spark, spark_nats.url, stream, readMode="sideways").count()


@pytest.mark.parametrize("mode", MODES)
def test_fetch_byte_budget(spark, spark_nats, make_stream, js, mode):
    # sizes 100 B .. 2.9 KB, and one message of 20 KB: larger than the whole budget
    from jetwire.spark._read import RangePartition, read_range

    stream = make_stream(allow_direct=True)
    base = stream.lower()
    sizes = [100 + (i * 397) % 2800 for i in range(60)]
    sizes[25] = 20_000
    for i, n in enumerate(sizes):
        js.publish(f"{base}.s{i % 2}", bytes([i]) * n)
    budget = 8000
    batches = list(read_range({"servers": spark_nats.url}, stream, RangePartition(0, 1, 61, mode), None,
                              1000, 10.0, max_bytes=budget))
    got = [(s, bytes(d)) for b in batches for s, d in zip(b.column("seq").to_pylist(), b.column("data").to_pylist(),
                                                            strict=True)]
    assert got == [(i + 1, bytes([i]) * n) for i, n in enumerate(sizes)]
    assert len(batches) >= sum(sizes) // budget - 1  # the budget, not fetchBatch, cut the fetches
    for b in batches:  # within the budget but for the last message (a direct get may end past it)
        assert sum(len(d) for d in b.column("data").to_pylist()[:-1]) < budget
    df = _read(spark, spark_nats.url, stream, readMode=mode, fetchMaxBytes="8KB", fetchBatch=1000)
    assert [(r.seq, len(r.data)) for r in df.orderBy("seq").collect()] == [(i + 1, n) for i, n in enumerate(sizes)]
    for bad in ("lots", "0", "2GiB"):
        with pytest.raises(Exception, match="fetchMaxBytes"):
            _read(spark, spark_nats.url, stream, fetchMaxBytes=bad).count()
