"""Batch and streaming writes through ``format("jetstream")``: columns, message ids and
idempotent retries."""
from __future__ import annotations

import re

import pytest


def _write(df, url, **options):
    w = df.write.format("jetstream").option("servers", url)
    for k, v in options.items():
        w = w.option(k, v)
    w.mode("append").save()


def _messages(js, stream):
    return js.stream(stream).info().state.messages


def test_write_columns_and_read_back(spark, spark_nats, make_stream, js):
    stream = make_stream(allow_direct=True)
    base = stream.lower()
    rows = [(f"{base}.a", f"text-{i}", {"K": ["v1", f"v{i}"]} if i % 4 == 0 else None) for i in range(40)]
    df = spark.createDataFrame(rows, "subject string, data string, headers map<string,array<string>>")
    _write(df.repartition(2), spark_nats.url)
    assert _messages(js, stream) == 40
    back = (spark.read.format("jetstream").option("servers", spark_nats.url).option("stream", stream).load()
            .collect())
    got = {bytes(r.data).decode(): r.headers for r in back}
    assert set(got) == {f"text-{i}" for i in range(40)}
    assert got["text-4"] == {"K": ["v1", "v4"]}
    assert got["text-5"] is None


def test_fixed_subject_binary_data_and_string_headers(spark, spark_nats, make_stream, js):
    stream = make_stream(allow_direct=True)
    df = spark.createDataFrame([(bytearray(b"\x00\x01"), {"A": "x"}), (bytearray(b"\xff"), None)],
                               "data binary, headers map<string,string>")
    _write(df, spark_nats.url, subject=f"{stream.lower()}.fixed")
    m1 = js.stream(stream).get_msg(1)
    m2 = js.stream(stream).get_msg(2)
    assert {m1.data, m2.data} == {b"\x00\x01", b"\xff"}
    assert m1.subject == f"{stream.lower()}.fixed"
    with_hdr = m1 if m1.data == b"\x00\x01" else m2
    assert with_hdr.headers["A"] == "x"


def test_msg_id_column_rewrite_leaves_distinct_count(spark, spark_nats, make_stream, js):
    stream = make_stream(allow_direct=True)
    base = stream.lower()
    # 100 rows with 80 distinct ids
    df = spark.createDataFrame([(f"{base}.x", f"d{i}", f"id-{i % 80}") for i in range(100)],
                               "subject string, data string, key string").repartition(2)
    _write(df, spark_nats.url, msgIdColumn="key")
    assert _messages(js, stream) == 80
    _write(df, spark_nats.url, msgIdColumn="key")  # the whole job again: all duplicates
    assert _messages(js, stream) == 80


def test_failed_task_retry_with_msg_ids_leaves_no_duplicates(spark, spark_nats, make_stream, js):
    """The first attempt of partition 0 dies half-way through its rows (after part of
    them were published); Spark retries it (local[2,2]) and the derived message ids make
    the re-published rows duplicates the stream drops."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType

    stream = make_stream(allow_direct=True, duplicate_window=120.0)
    subject = f"{stream.lower()}.x"
    n = 2000

    def fail_first_attempt(i):
        from pyspark import TaskContext

        tc = TaskContext.get()
        if tc is not None and tc.attemptNumber() == 0 and tc.partitionId() == 0 and i == 700:
            raise RuntimeError("injected failure in the first attempt")
        return i

    probe = F.udf(fail_first_attempt, LongType(), useArrow=False)
    df = (spark.range(n, numPartitions=2).select(probe("id").alias("id"))
          .select(F.lit(subject).alias("subject"),
                  # ~2 kB rows so that the writer's input is flushed batch by batch
                  F.concat(F.lit("row-"), F.col("id").cast("string"), F.lit(":"), F.repeat(F.lit("x"), 2000))
                  .alias("data")))

    seen = []  # every publish reaching the subject, including those the stream de-duplicates
    sub = js._nc.subscribe(subject, cb=lambda m: seen.append(len(m.data)))
    js._nc.flush()
    prev = spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "100")
    try:
        _write(df, spark_nats.url, msgIdPrefix="retry-test")
    finally:
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", prev)
    js._nc.flush()
    sub.unsubscribe()
    assert _messages(js, stream) == n  # exactly once in the stream
    # ... although the failed attempt may have published some rows first (how many
    # depends on how far the writer got before the task died: none on a slow machine)
    assert len(seen) >= n
    stored = [bytes(r.data).split(b":")[0] for r in spark.read.format("jetstream")
              .option("servers", spark_nats.url).option("stream", stream).load().select("data").collect()]
    assert sorted(stored) == sorted(b"row-%d" % i for i in range(n))


def test_publish_failure_fails_the_job(spark, spark_nats):
    df = spark.createDataFrame([("nobody.listens.here", "x")], "subject string, data string")
    with pytest.raises(Exception, match="(?i)no stream|no responders"):
        _write(df, spark_nats.url, ackTimeout="5s")


def test_overwrite_and_bad_columns_are_refused(spark, spark_nats):
    df = spark.createDataFrame([("a.b", "x")], "subject string, data string")
    with pytest.raises(Exception, match="append-only"):
        df.write.format("jetstream").option("servers", spark_nats.url).mode("overwrite").save()
    no_data = spark.createDataFrame([("a.b",)], "subject string")
    with pytest.raises(Exception, match="'data' column"):
        _write(no_data, spark_nats.url)


def test_streaming_jetstream_to_jetstream(spark, spark_nats, make_stream, fill, js, tmp_path):
    src = make_stream(allow_direct=True)
    dst = make_stream(allow_direct=True)
    fill(src, 60)
    out = f"{dst.lower()}.copy"

    def run():
        df = (spark.readStream.format("jetstream").option("servers", spark_nats.url).option("stream", src)
              .option("maxMessagesPerTrigger", 25).load()
              .selectExpr(f"'{out}' AS subject", "data", "headers"))
        q = (df.writeStream.format("jetstream").option("servers", spark_nats.url).option("msgIdPrefix", "copy")
             .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start())
        assert q.awaitTermination(90)
        assert q.exception() is None

    run()
    assert _messages(js, dst) == 60
    fill(src, 5, start=60)
    run()
    assert _messages(js, dst) == 65
    data = sorted(int(bytes(r.data)[1:]) for r in spark.read.format("jetstream")
                  .option("servers", spark_nats.url).option("stream", dst).load().select("data").collect())
    assert data == list(range(65))


def test_replay_after_the_duplicate_window_is_stored_again(spark, spark_nats, make_stream, js):
    """The documented gap of the writer: message ids only de-duplicate within the
    stream's duplicate_window. The same job run again once the window has passed stores
    every row a second time."""
    import time

    stream = make_stream(allow_direct=True, duplicate_window=5.0)  # the second job runs within it
    base = stream.lower()
    df = spark.createDataFrame([(f"{base}.x", f"d{i}", f"id-{i}") for i in range(20)],
                               "subject string, data string, key string").coalesce(1)  # id-19 last
    _write(df, spark_nats.url, msgIdColumn="key")
    _write(df, spark_nats.url, msgIdColumn="key")  # within the window: all duplicates
    assert _messages(js, stream) == 20

    deadline = time.monotonic() + 30  # until the server has forgotten id-19, the last id published
    while js.publish(f"{base}.probe", b"", msg_id="id-19").duplicate:
        assert time.monotonic() < deadline, "the duplicate window never passed"
        time.sleep(0.1)
    _write(df, spark_nats.url, msgIdColumn="key")  # after the window: stored again
    assert _messages(js, stream) == 20 + 1 + 19  # id-19 was taken by the probe


# ----------------------------------------------------------------- the task's bulk path
# Arrow record batches without headers are published as whole windows of frames built by
# Arrow kernels, acks checked in bulk; a batch with headers takes the row path. These call
# the task function directly (what JetStreamWriter.write runs), without a Spark job.
def _batch(subjects, data, **extra):
    import pyarrow as pa

    cols = {"subject": pa.array(subjects, pa.string()), "data": pa.array(data, pa.binary()), **extra}
    return pa.RecordBatch.from_pydict(cols)


def _write_task(url, batches, partition_id=0, batch_id=None, **options):
    from jetwire.spark._options import WriteOptions
    from jetwire.spark._write import write_partition

    return write_partition(WriteOptions({"servers": url, **options}), iter(batches), partition_id, batch_id)


def test_bulk_windows_ids_order_and_a_batch_with_headers(spark_nats, make_stream, js):
    import pyarrow as pa

    stream = make_stream()
    s = f"{stream.lower()}.k"
    htype = pa.map_(pa.string(), pa.list_(pa.string()))
    batches = [
        _batch([s] * 300, [b"a%d" % i for i in range(300)], headers=pa.nulls(300, htype)),
        # the row path, in between
        _batch([s, s], [b"h0", b"h1"], headers=pa.array([[("H", ["1", "2"])], None], htype)),
        _batch([s] * 500, [None if i % 7 == 0 else b"b%d" % i for i in range(500)], headers=pa.nulls(500, htype)),
    ]
    res = _write_task(spark_nats.url, batches, partition_id=3, batch_id=9, msgIdPrefix="q", maxPendingAcks="64")
    assert (res.count, res.duplicates, res.first_seq, res.last_seq, res.stream) == (802, 0, 1, 802, stream)
    st = js.stream(stream)
    assert st.info().state.messages == 802
    for seq, row in ((1, 0), (300, 299), (301, 300), (303, 302), (304, 303), (802, 801)):
        m = st.get_msg(seq)
        assert m.headers["Nats-Msg-Id"] == f"q:9:3:{row}"
    hm = st.get_msg(301).headers
    assert (hm.get_all("H"), hm["Nats-Msg-Id"]) == (["1", "2"], "q:9:3:300")
    assert st.get_msg(1).data == b"a0"
    assert st.get_msg(303).data == b""  # row 302 = third batch's row 0: NULL data, empty payload
    assert st.get_msg(304).data == b"b1"
    # the same task again (a retry): every row a duplicate, nothing stored
    again = _write_task(spark_nats.url, batches, partition_id=3, batch_id=9, msgIdPrefix="q")
    assert (again.count, again.duplicates, again.first_seq) == (802, 802, None)
    assert st.info().state.messages == 802


def test_bulk_integer_msg_id_column_and_fixed_subject(spark_nats, make_stream, js):
    import pyarrow as pa

    stream = make_stream()
    rb = pa.RecordBatch.from_pydict({"data": pa.array([b"x", b"y", b"z"]), "key": pa.array([7, 8, 7], pa.int64())})
    res = _write_task(spark_nats.url, [rb], subject=f"{stream.lower()}.fixed", msgIdColumn="key")
    assert (res.count, res.duplicates) == (3, 1)
    st = js.stream(stream)
    assert st.info().state.messages == 2
    assert st.get_msg(2).headers["Nats-Msg-Id"] == "8" and st.get_msg(2).subject == f"{stream.lower()}.fixed"


def test_bulk_refusals(spark_nats, make_stream, js):
    from jetwire.errors import BadSubjectError, MaxPayloadError, NoStreamResponseError
    from jetwire.spark._options import OptionError

    stream = make_stream()
    s = f"{stream.lower()}.k"
    with pytest.raises(OptionError, match="row 2 has no subject"):
        _write_task(spark_nats.url, [_batch([s, s, None], [b"1", b"2", b"3"])])
    with pytest.raises(BadSubjectError, match="whitespace"):
        _write_task(spark_nats.url, [_batch([s, "a b"], [b"1", b"2"])])
    with pytest.raises(MaxPayloadError):
        _write_task(spark_nats.url, [_batch([s], [b"x" * (2 * 1024 * 1024)])])
    assert js.stream(stream).info().state.messages == 0  # refused before anything was sent
    with pytest.raises(NoStreamResponseError):
        _write_task(spark_nats.url, [_batch(["nobody.listens.here"], [b"1"])])


def test_a_stream_named_error_still_has_its_failed_publishes_reported(spark_nats, make_stream, js):
    """The bulk ack check tells an error answer by its "error" key: a stream named
    "error" (every ack then holds that word) must not hide one."""
    from jetwire.errors import APIError

    make_stream(name="error", subjects=["err.named.>"], max_msgs=2, discard="new")
    s = "err.named.k"
    with pytest.raises(APIError, match="maximum messages"):
        _write_task(spark_nats.url, [_batch([s] * 5, [b"%d" % i for i in range(5)])])
    assert js.stream("error").info().state.messages == 2


def test_msg_id_prefix_with_a_line_break_is_refused(spark_nats):
    from jetwire.spark._options import OptionError, WriteOptions

    for bad in ("p\r\nX-Injected: yes", "p\n", "p\x00q"):
        with pytest.raises(OptionError, match="msgIdPrefix"):
            WriteOptions({"servers": spark_nats.url, "msgIdPrefix": bad})


def test_expected_stream_is_sent_with_every_row(spark_nats, make_stream, js):
    """``stream`` (or ``expectedStream``) on a writer: every publish carries the
    expected stream, so rows whose subject belongs to another stream are refused."""
    from jetwire.errors import APIError

    stream = make_stream()
    other = make_stream()
    s = f"{stream.lower()}.k"
    res = _write_task(spark_nats.url, [_batch([s, s], [b"1", b"2"])], stream=stream)
    assert (res.count, res.stream) == (2, stream)
    with pytest.raises(APIError, match="expected stream does not match"):
        _write_task(spark_nats.url, [_batch([s], [b"3"])], expectedStream=other)
    assert js.stream(stream).info().state.messages == 2
    assert js.stream(other).info().state.messages == 0


def test_headers_column_of_another_type_is_refused(spark, spark_nats, make_stream, js):
    """A 'headers' column must be a map (string keys, string or array<string> values):
    another type is refused once, by name, before anything is published."""
    import pyarrow as pa

    from jetwire.spark._options import OptionError

    stream = make_stream()
    s = f"{stream.lower()}.a"
    for ddl, value in (("string", "K: v"), ("array<string>", ["K: v"]), ("struct<k:string>", ("v",)),
                       ("map<string,int>", {"K": 1})):
        df = spark.createDataFrame([(s, "x", value)], f"subject string, data string, headers {ddl}")
        with pytest.raises(Exception, match=r"column 'headers' must be map<string, array<string>> or "
                                            r"map<string, string>, not " + re.escape(ddl)):
            _write(df, spark_nats.url)
    with pytest.raises(OptionError, match=r"column 'headers' must be .*, not string"):
        _write_task(spark_nats.url, [_batch([s], [b"1"], headers=pa.array(["K: v"]))])
    assert _messages(js, stream) == 0


def test_wildcard_subject_in_the_subject_column_is_refused(spark_nats, make_stream, js):
    """A row's subject is refused when it has a wildcard, as the 'subject' option is,
    in the bulk path and in the row path (a batch with headers)."""
    import pyarrow as pa

    from jetwire.spark._options import OptionError

    stream = make_stream()
    base = stream.lower()
    htype = pa.map_(pa.string(), pa.list_(pa.string()))
    for wild in (f"{base}.*", f"{base}.>", f"{base}.*.x"):
        with pytest.raises(OptionError, match=r"row 1: subject .* must not contain wildcards"):
            _write_task(spark_nats.url, [_batch([f"{base}.ok", wild], [b"1", b"2"])])
        with pytest.raises(OptionError, match=r"row 1: subject .* must not contain wildcards"):
            _write_task(spark_nats.url, [_batch([f"{base}.ok", wild], [b"1", b"2"],
                                                headers=pa.array([[("H", ["1"])], None], htype))])
    assert _messages(js, stream) == 0  # refused before any row of the batch was sent
    res = _write_task(spark_nats.url, [_batch([f"{base}.a*b", f"{base}.x>"], [b"1", b"2"])])
    assert res.count == 2  # not wildcards: a '*' or '>' inside a token is an ordinary character
    assert {m.subject for m in (js.stream(stream).get_msg(1), js.stream(stream).get_msg(2))} == \
        {f"{base}.a*b", f"{base}.x>"}


def test_writers_refuse_unknown_options(spark, spark_nats, make_stream, fill, js, tmp_path):
    stream = make_stream(allow_direct=True)
    df = spark.createDataFrame([(f"{stream.lower()}.a", "x", "k1")], "subject string, data string, id string")
    with pytest.raises(Exception, match=r"unknown option 'msgidcolumns'.*did you mean 'msgIdColumn'"):
        _write(df, spark_nats.url, msgIdColumns="id")
    with pytest.raises(Exception, match=r"no path"):
        df.write.format("jetstream").option("servers", spark_nats.url).mode("append").save(stream)
    src = make_stream(allow_direct=True)
    fill(src, 3)
    sdf = (spark.readStream.format("jetstream").option("servers", spark_nats.url).option("stream", src).load()
           .selectExpr(f"'{stream.lower()}.copy' AS subject", "data"))
    q = (sdf.writeStream.format("jetstream").option("servers", spark_nats.url).option("msgIdPrefx", "p")
         .option("checkpointLocation", str(tmp_path / "ckpt")).queryName("copy_typo")
         .trigger(availableNow=True).start())
    with pytest.raises(Exception) as failed:
        q.awaitTermination(90)
    err = str(failed.value)
    assert "unknown option 'msgidprefx'" in err and "did you mean 'msgIdPrefix'" in err, err
    assert "checkpointlocation" not in err.lower() and "queryname" not in err.lower()
    assert _messages(js, stream) == 0
