"""Streaming reads through ``spark.readStream.format("jetstream")``: offsets, triggers,
checkpoint restarts, admission control and data-loss handling."""
from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest


class Collector:
    """A ``foreachBatch`` sink that keeps (batch id, sorted seqs) of non-empty batches."""

    def __init__(self) -> None:
        self.batches = []

    def __call__(self, df, batch_id) -> None:
        seqs = sorted(r.seq for r in df.select("seq").collect())
        if seqs:
            self.batches.append((batch_id, seqs))

    @property
    def seqs(self):
        return [s for _, b in self.batches for s in b]


def _stream(spark, url, stream, **options):
    r = spark.readStream.format("jetstream").option("servers", url).option("stream", stream)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def _run_available_now(df, ckpt, sink, timeout=90):
    q = df.writeStream.foreachBatch(sink).option("checkpointLocation", str(ckpt)).trigger(availableNow=True).start()
    assert q.awaitTermination(timeout), "availableNow query did not finish"
    if q.exception() is not None:
        raise q.exception()
    return q


def test_available_now_then_restart_reads_only_new(spark, spark_nats, make_stream, fill, tmp_path):
    stream = make_stream(allow_direct=True)
    fill(stream, 30)
    ckpt = tmp_path / "ckpt"
    first = Collector()
    _run_available_now(_stream(spark, spark_nats.url, stream), ckpt, first)
    assert first.seqs == list(range(1, 31))

    fill(stream, 15, start=30)
    second = Collector()
    _run_available_now(_stream(spark, spark_nats.url, stream), ckpt, second)
    assert second.seqs == list(range(31, 46))

    third = Collector()  # nothing new: nothing read
    _run_available_now(_stream(spark, spark_nats.url, stream), ckpt, third)
    assert third.seqs == []


def _spark_version(spark):
    return tuple(int(x) for x in spark.version.split(".")[:2])


def test_max_messages_per_trigger(spark, spark_nats, make_stream, fill, tmp_path):
    stream = make_stream(allow_direct=True)
    fill(stream, 25)
    df = _stream(spark, spark_nats.url, stream, maxMessagesPerTrigger=10)
    if _spark_version(spark) >= (4, 2):
        sink = Collector()
        _run_available_now(df, tmp_path / "a", sink)
        assert [len(b) for _, b in sink.batches] == [10, 10, 5]
        assert sink.seqs == list(range(1, 26))
    # Processing-time triggers honour the limit on every supported Spark version. (Before
    # 4.2 Spark asks for the latest offset before telling the source where it starts, so
    # the first micro-batch after a start is not limited: it finds 5 messages here.)
    other = make_stream(allow_direct=True)
    fill(other, 5)
    sink = Collector()
    q = (_stream(spark, spark_nats.url, other, maxMessagesPerTrigger=10).writeStream.foreachBatch(sink)
         .option("checkpointLocation", str(tmp_path / "b")).trigger(processingTime="100 milliseconds").start())
    try:
        q.processAllAvailable()
        fill(other, 25, start=5)
        q.processAllAvailable()
    finally:
        q.stop()
    sizes = [len(b) for _, b in sink.batches]
    # a trigger may fire while the 25 are still being published: batches are then smaller
    assert sizes[0] == 5 and len(sizes) >= 4 and all(n <= 10 for n in sizes[1:]), sizes
    assert sink.seqs == list(range(1, 31))


def test_processing_time_trigger(spark, spark_nats, make_stream, fill, tmp_path):
    stream = make_stream(allow_direct=True)
    base = stream.lower()
    fill(stream, 20)
    sink = Collector()
    df = _stream(spark, spark_nats.url, stream, subject=f"{base}.s1", readMode="consumer")
    q = (df.writeStream.foreachBatch(sink).option("checkpointLocation", str(tmp_path / "c"))
         .trigger(processingTime="200 milliseconds").start())
    try:
        q.processAllAvailable()
        fill(stream, 20, start=20)
        q.processAllAvailable()
    finally:
        q.stop()
    # message i has seq i+1 and goes to s{i % 3}
    assert sink.seqs == [i + 1 for i in range(40) if i % 3 == 1]


def test_starting_offsets(spark, spark_nats, make_stream, fill, tmp_path):
    stream = make_stream(allow_direct=True)
    fill(stream, 10)
    by_seq = Collector()
    _run_available_now(_stream(spark, spark_nats.url, stream, startingOffsets="7"), tmp_path / "a", by_seq)
    assert by_seq.seqs == [7, 8, 9, 10]

    latest = Collector()
    q = (_stream(spark, spark_nats.url, stream, startingOffsets="latest").writeStream.foreachBatch(latest)
         .option("checkpointLocation", str(tmp_path / "b")).trigger(processingTime="200 milliseconds").start())
    try:
        q.processAllAvailable()
        fill(stream, 3, start=10)
        q.processAllAvailable()
    finally:
        q.stop()
    assert latest.seqs == [11, 12, 13]

    time.sleep(0.05)
    cut = datetime.now(UTC)
    time.sleep(0.05)
    fill(stream, 2, start=13)
    by_time = Collector()
    _run_available_now(_stream(spark, spark_nats.url, stream, startingTimestamp=cut.isoformat()),
                       tmp_path / "c", by_time)
    assert by_time.seqs == [14, 15]


def test_data_loss_detection(spark, spark_nats, make_stream, fill, js, tmp_path):
    stream = make_stream(allow_direct=True)
    fill(stream, 20)
    ckpt = tmp_path / "ckpt"
    first = Collector()
    _run_available_now(_stream(spark, spark_nats.url, stream), ckpt, first)
    assert first.seqs == list(range(1, 21))

    fill(stream, 10, start=20)  # seqs 21..30
    js.stream(stream).purge(sequence=26)  # retention removes 21..25 before they were read

    strict = Collector()
    with pytest.raises(Exception, match="failOnDataLoss"):
        _run_available_now(_stream(spark, spark_nats.url, stream), ckpt, strict)
    assert strict.seqs == []

    lenient = Collector()
    _run_available_now(_stream(spark, spark_nats.url, stream, failOnDataLoss="false"), ckpt, lenient)
    assert lenient.seqs == [26, 27, 28, 29, 30]


def test_replay_of_a_planned_range_is_deterministic(spark, spark_nats, make_stream, fill):
    """The same (start, end) offsets always plan the same partitions and rows."""
    from jetwire.spark.source import JetStreamDataSource

    stream = make_stream(allow_direct=True)
    fill(stream, 50)
    ds = JetStreamDataSource({"servers": spark_nats.url, "stream": stream, "numPartitions": "3"})
    reader = ds.streamReader(None)
    start, end = {"seq": 5}, {"seq": 45}
    a = reader.partitions(start, end)
    fill(stream, 10, start=50)  # more data arriving does not change a planned batch
    b = reader.partitions(start, end)
    assert a == b and [(p.lo, p.hi) for p in a] == [(5, 19), (19, 32), (32, 45)]
    rows = [r for p in a for rb in reader.read(p) for r in rb.column("seq").to_pylist()]
    assert rows == list(range(5, 45))
    reader.stop()


def _recreate(js, stream):
    js.delete_stream(stream)
    js.create_stream(name=stream, subjects=[f"{stream.lower()}.>"], allow_direct=True)


@pytest.mark.parametrize("fail_on_data_loss", ["true", "false"])
def test_stream_recreated_below_the_checkpoint(spark, spark_nats, make_stream, fill, js, tmp_path,
                                               fail_on_data_loss):
    """A stream deleted and re-created under the same name ends below the query's
    offset: a data loss (failOnDataLoss=true) or a restart from its first message."""
    stream = make_stream(allow_direct=True)
    fill(stream, 20)
    ckpt = tmp_path / "ckpt"
    first = Collector()
    _run_available_now(_stream(spark, spark_nats.url, stream), ckpt, first)
    assert first.seqs == list(range(1, 21))

    _recreate(js, stream)
    fill(stream, 5, start=100)  # seqs 1..5 of the new stream
    after = Collector()
    df = _stream(spark, spark_nats.url, stream, failOnDataLoss=fail_on_data_loss)
    if fail_on_data_loss == "true":
        with pytest.raises(Exception, match=r"(?s)DataLossError.*re-created.*failOnDataLoss"):
            _run_available_now(df, ckpt, after)
        assert after.seqs == []
        return
    _run_available_now(df, ckpt, after)
    assert after.seqs == [1, 2, 3, 4, 5]
    fill(stream, 2, start=105)
    again = Collector()  # and from there on as usual
    _run_available_now(_stream(spark, spark_nats.url, stream, failOnDataLoss="false"), ckpt, again)
    assert again.seqs == [6, 7]


def test_starting_offsets_past_the_end_is_no_data_loss(spark, spark_nats, make_stream, fill, tmp_path):
    """A new query told to start past the stream's end waits for it: nothing was lost."""
    stream = make_stream(allow_direct=True)
    fill(stream, 5)
    sink = Collector()
    _run_available_now(_stream(spark, spark_nats.url, stream, startingOffsets="50"), tmp_path / "a", sink)
    assert sink.seqs == []


def test_streaming_read_refuses_batch_and_unknown_options(spark, spark_nats, make_stream, fill, tmp_path):
    stream = make_stream(allow_direct=True)
    fill(stream, 5)
    with pytest.raises(Exception, match=r"'endSequence' is for a batch read"):
        _run_available_now(_stream(spark, spark_nats.url, stream, startSequence=2, endSequence=3),
                           tmp_path / "a", Collector())
    with pytest.raises(Exception, match=r"unknown option 'maxmessagespertriger'.*did you mean 'maxMessagesPerTrigger'"):
        _run_available_now(_stream(spark, spark_nats.url, stream, maxMessagesPerTriger=2), tmp_path / "b",
                           Collector())
