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


# ------------------------------------------------------------ secrets in Spark's plans
_SEED = "SUAIBDPBAUTWCWBKIO6XHQNINK5FWJW4OHLXC3HQ2KFE4PEJUA44CNHTC4"
_PASSWORD = "s3cretPW0rd"
_REDACTION = "spark.sql.redaction.options.regex"


def _explain(df):
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        df.explain(True)
    return out.getvalue()


def test_register_redacts_the_secret_options_in_plans(spark):
    """Spark prints a streaming read's options in its plans and redacts only the keys
    matching spark.sql.redaction.options.regex (default ``(?i)url``) or its secret
    pattern: ``register()`` adds the options of this source that can hold a secret."""
    import jetwire.spark

    before = spark.conf.get(_REDACTION)
    try:
        spark.conf.set(_REDACTION, "(?i)url|mySecretKey")  # a user's own pattern is kept
        jetwire.spark.register(spark)
        jetwire.spark.register(spark)  # twice: extended once
        regex = spark.conf.get(_REDACTION)
        assert regex.startswith("(?:(?i)url|mySecretKey)|") and regex.count("nkeyseed") == 1
        url = f"nats://alice:{_PASSWORD}@127.0.0.1:1"
        for opts in ({"servers": url}, {"nkeySeed": _SEED}, {"creds": "-----BEGIN NATS USER JWT-----x"},
                     {"user": "alice", "password": _PASSWORD}, {"token": _PASSWORD}):
            r = spark.readStream.format("jetstream").option("stream", "S")
            for k, v in opts.items():
                r = r.option(k, v)
            plan = _explain(r.load())
            assert "StreamingRelation" in plan
            for secret in (_PASSWORD, _SEED, "BEGIN NATS"):
                assert secret not in plan, (opts, plan)
        batch = _explain(spark.read.format("jetstream").option("servers", url).option("stream", "S")
                         .option("nkeySeed", _SEED).load())
        assert _PASSWORD not in batch and _SEED not in batch
        spark.conf.unset(_REDACTION)  # Spark's default, (?i)url, is kept too
        jetwire.spark.register(spark)
        assert spark.conf.get(_REDACTION).startswith("(?:(?i)url)|")
    finally:
        spark.conf.set(_REDACTION, before)


# ------------------------------------------------------------ unknown options
def test_unknown_and_inapplicable_options_are_refused(spark_available):
    from jetwire.spark._options import OptionError, ReadOptions, WriteOptions

    base = {"servers": "nats://127.0.0.1:1", "stream": "S"}
    with pytest.raises(OptionError, match=r"unknown option 'endsequnce'.*did you mean 'endSequence'"):
        ReadOptions({**base, "endSequnce": "10"}, "read")
    with pytest.raises(OptionError, match=r"unknown option 'endingoffsets'.*batch read.*did you mean 'endSequence'"):
        ReadOptions({**base, "endingOffsets": "10"}, "read")
    with pytest.raises(OptionError, match=r"'startingOffsets' is for a streaming read.*startSequence"):
        ReadOptions({**base, "startingOffsets": "90"}, "read")
    with pytest.raises(OptionError, match=r"'endSequence' is for a batch read.*has no end"):
        ReadOptions({**base, "endSequence": "95"}, "readStream")
    with pytest.raises(OptionError, match=r"unknown option 'msgidcolumns'.*did you mean 'msgIdColumn'"):
        WriteOptions({"msgIdColumns": "id"}, "write")
    with pytest.raises(OptionError, match=r"'commitBucket' is for streaming writes"):
        WriteOptions({"commitBucket": "b"}, "write")
    with pytest.raises(OptionError, match=r"'startSequence' is for a batch read"):
        WriteOptions({"startSequence": "1"}, "writeStream")
    with pytest.raises(OptionError, match=r"no path.*option\('stream'"):
        ReadOptions({**base, "path": "ORDERS"}, "read")
    # what Spark itself hands a streaming sink is accepted
    WriteOptions({"checkpointLocation": "/tmp/c", "queryName": "q", "commitBucket": "b"}, "writeStream")
    ReadOptions({**base, "startingOffsets": "1", "failOnDataLoss": "false", "readMode": "direct"}, "readStream")


def test_batch_read_refuses_unknown_options(spark, spark_nats, make_stream):
    stream = make_stream()
    with pytest.raises(Exception, match=r"unknown option 'endsequnce'.*did you mean 'endSequence'"):
        _read(spark, spark_nats.url, stream, endSequnce=10).count()
    with pytest.raises(Exception, match=r"'startingOffsets' is for a streaming read"):
        _read(spark, spark_nats.url, stream, startingOffsets=90).count()
    with pytest.raises(Exception, match=r"no path"):
        spark.read.format("jetstream").option("servers", spark_nats.url).load(stream).count()
