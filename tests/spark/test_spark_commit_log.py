"""The streaming writer's commit log (option ``commitBucket``): the last committed
micro-batch id per query in a KV bucket, so that a replayed batch publishes nothing even
after the target stream's duplicate window.

The first tests call the log's two functions directly against a real server; the
others run streaming queries (``local[2,2]``) whose last batch Spark replays on restart
(its own commit for the batch is removed from the checkpoint, which is what a driver
that dies between the sink's commit and Spark's leaves behind).
"""
from __future__ import annotations

import json
import os
import time
import uuid

import pytest

QID = "6d1f4c52-0a0e-4a4f-9a55-3f2b8e1c9d70"


def _conn(url, **extra):
    return {"servers": url, "name": "commit-log-test", **extra}


def _bucket():
    return f"SPC_{uuid.uuid4().hex[:8]}"


def test_commit_log_records_the_last_batch_and_never_moves_back(spark_available, spark_nats, js):
    from jetwire.spark._commit import commit_batch, committed_batch

    bucket = _bucket()
    conn = _conn(spark_nats.url)
    try:
        assert committed_batch(conn, bucket, QID, 5) is None  # no bucket yet: nothing committed
        assert commit_batch(conn, bucket, QID, 0, {"count": 3, "duplicates": 0}, 5) is True  # creates it
        assert committed_batch(conn, bucket, QID, 5) == 0
        assert commit_batch(conn, bucket, QID, 1, {"count": 4, "duplicates": 1}, 5) is True
        assert commit_batch(conn, bucket, QID, 1, {"count": 4}, 5) is False  # a replay: unchanged
        assert commit_batch(conn, bucket, QID, 0, {"count": 4}, 5) is False  # never backwards
        entry = js.key_value(bucket).get(QID)
        assert json.loads(entry.value) == {"batchId": 1, "count": 4, "duplicates": 1}
        assert entry.revision == 2
        assert committed_batch(conn, bucket, "other-query", 5) is None  # one key per query
    finally:
        js.delete_key_value(bucket)


def test_commit_log_errors_are_typed(spark_available, spark_nats, js):
    """An entry that is not a commit record, and a server that does not answer (here: no
    server at all), fail with CommitLogError naming the bucket and key; never None."""
    from jetwire.errors import CommitLogError, JetStreamError
    from jetwire.spark import CommitLogError as ReExported
    from jetwire.spark._commit import commit_batch, committed_batch
    from jetwire.testing import free_port

    assert ReExported is CommitLogError and issubclass(CommitLogError, JetStreamError)
    bucket = _bucket()
    kv = js.create_key_value(bucket=bucket)
    try:
        kv.put(QID, b"not json")
        with pytest.raises(CommitLogError, match=f"{bucket}/{QID}.*not a jetwire commit record") as ei:
            committed_batch(_conn(spark_nats.url), bucket, QID, 5)
        assert (ei.value.bucket, ei.value.key) == (bucket, QID)
        with pytest.raises(CommitLogError, match="not a jetwire commit record"):
            commit_batch(_conn(spark_nats.url), bucket, QID, 3, {}, 5)
        assert kv.get(QID).value == b"not json"  # left alone
    finally:
        js.delete_key_value(bucket)
    nowhere = _conn(f"nats://127.0.0.1:{free_port()}", connecttimeout=0.5)
    with pytest.raises(CommitLogError, match="reading the last committed batch failed"):
        committed_batch(nowhere, bucket, QID, 1)
    with pytest.raises(CommitLogError, match="committing batch 7 failed"):
        commit_batch(nowhere, bucket, QID, 7, {}, 1)


def test_commit_bucket_option(spark_available):
    from jetwire.spark._options import OptionError, WriteOptions

    assert WriteOptions({"commitBucket": " sink_commits "}).commit_bucket == "sink_commits"
    assert WriteOptions({}).commit_bucket is None
    with pytest.raises(OptionError, match="commitBucket"):
        WriteOptions({"commitBucket": "no.dots"})


# --------------------------------------------------------------------------- with Spark
def _drop_spark_commit(ckpt, batch_id):
    """Remove Spark's own commit of ``batch_id`` from the checkpoint: on restart Spark
    runs that micro-batch again (same offsets), as after a driver that died between the
    sink's commit and Spark's."""
    commits = os.path.join(ckpt, "commits")
    os.remove(os.path.join(commits, str(batch_id)))
    crc = os.path.join(commits, f".{batch_id}.crc")
    if os.path.exists(crc):
        os.remove(crc)


def _wait_window_passed(js, subject, timeout=30):
    """Publish a probe id and wait until the stream accepts it again: its duplicate
    window (which covers every id published before the probe) has passed."""
    js.publish(subject, b"", msg_id="window-probe")
    deadline = time.monotonic() + timeout
    while js.publish(subject, b"", msg_id="window-probe").duplicate:
        assert time.monotonic() < deadline, "the duplicate window never passed"
        time.sleep(0.05)


def _copy_query(spark, url, src, out, ckpt, **sink_options):
    df = (spark.readStream.format("jetstream").option("servers", url).option("stream", src).load()
          .selectExpr(f"'{out}' AS subject", "data"))
    w = df.writeStream.format("jetstream").option("servers", url).option("checkpointLocation", ckpt)
    for k, v in sink_options.items():
        w = w.option(k, v)
    return w.trigger(availableNow=True).start()


def _run(q, timeout=90):
    assert q.awaitTermination(timeout), "the query did not finish"
    return q


def _data(spark, url, stream, subject):
    rows = (spark.read.format("jetstream").option("servers", url).option("stream", stream)
            .option("subject", subject).load().select("data").collect())
    return sorted(int(bytes(r.data)[1:]) for r in rows)


def test_replay_older_than_the_duplicate_window_is_skipped(spark, spark_nats, make_stream, fill, js, tmp_path):
    """Batch 0 (20 rows) is committed by the sink; Spark's own commit of it is lost.
    Once the target's 1 s duplicate window has passed, the query restarts: Spark runs
    batch 0 again (its progress says so), the commit log makes its tasks publish
    nothing, and batch 1 (5 new rows) is written: every row once. The same replay
    without the commit log stores batch 0 a second time (the gap this closes)."""
    src = make_stream(allow_direct=True)
    dst = make_stream(allow_direct=True, duplicate_window=1.0)
    out, probe = f"{dst.lower()}.copy", f"{dst.lower()}.probe"
    bucket = _bucket()
    ckpt = str(tmp_path / "ckpt")
    fill(src, 20)
    try:
        first = _run(_copy_query(spark, spark_nats.url, src, out, ckpt, msgIdPrefix="cp", commitBucket=bucket))
        assert first.exception() is None
        qid = str(first.id)
        assert _data(spark, spark_nats.url, dst, out) == list(range(20))
        assert json.loads(js.key_value(bucket).get(qid).value)["batchId"] == 0

        _drop_spark_commit(ckpt, 0)
        _wait_window_passed(js, probe)
        fill(src, 5, start=20)
        again = _run(_copy_query(spark, spark_nats.url, src, out, ckpt, msgIdPrefix="cp", commitBucket=bucket))
        assert again.exception() is None
        assert str(again.id) == qid  # the same query (from its checkpoint), the same key
        ran = [(p["batchId"], p["numInputRows"]) for p in again.recentProgress]
        assert (0, 20) in ran and (1, 5) in ran, ran  # batch 0 really was replayed
        assert _data(spark, spark_nats.url, dst, out) == list(range(25))  # every row exactly once
        assert json.loads(js.key_value(bucket).get(qid).value) == {"batchId": 1, "count": 5, "duplicates": 0}

        # the control: the same replay without commitBucket publishes batch 1 again
        _drop_spark_commit(ckpt, 1)
        _wait_window_passed(js, probe)
        third = _run(_copy_query(spark, spark_nats.url, src, out, ckpt, msgIdPrefix="cp"))
        assert third.exception() is None
        assert _data(spark, spark_nats.url, dst, out) == sorted([*range(25), *range(20, 25)])
    finally:
        try:
            js.delete_key_value(bucket)
        except Exception:
            pass


def test_commit_log_failures_fail_loudly_and_lose_nothing(spark, make_stream, tmp_path):
    """On a server where the sink's user may not write the bucket (``$KV.<bucket>.>``
    denied), batch 0 is published and then its commit fails: the query stops with
    CommitLogError and Spark does not record the batch. Restarted with a user who may,
    batch 0 runs again (the message ids drop what is already stored) and is committed.
    A user who may not even read the bucket (its stream info denied) fails batch 1's
    tasks before they publish anything."""
    from pyspark.errors import StreamingQueryException

    import jetwire
    from jetwire.testing import NatsServer

    bucket = _bucket()
    deny_write = [f"$KV.{bucket}.>"]
    deny_read = [f"$JS.API.STREAM.INFO.KV_{bucket}", f"$JS.API.DIRECT.GET.KV_{bucket}.>",
                 f"$JS.API.DIRECT.GET.KV_{bucket}", f"$JS.API.STREAM.MSG.GET.KV_{bucket}"]
    srv = NatsServer(auth={"users": [
        {"user": "admin", "password": "a"},
        {"user": "nowrite", "password": "w", "permissions": {"publish": {"deny": deny_write}}},
        {"user": "noread", "password": "r", "permissions": {"publish": {"deny": deny_read}}},
    ]}).start()
    try:
        nc = jetwire.connect(srv.url, user="admin", password="a")
        js = nc.jetstream()
        js.create_stream(name="CLSRC", subjects=["clsrc.>"], allow_direct=True)
        js.create_stream(name="CLDST", subjects=["cldst.>"], allow_direct=True)
        for i in range(30):
            js.publish("clsrc.x", b"m%d" % i)
        ckpt = str(tmp_path / "ckpt")

        def run(user, password):
            df = (spark.readStream.format("jetstream").option("servers", srv.url).option("stream", "CLSRC")
                  .option("user", "admin").option("password", "a").load()
                  .selectExpr("'cldst.copy' AS subject", "data"))
            q = (df.writeStream.format("jetstream").option("servers", srv.url).option("user", user)
                 .option("password", password).option("msgIdPrefix", "cl").option("commitBucket", bucket)
                 .option("ackTimeout", "2s").option("checkpointLocation", ckpt)
                 .trigger(availableNow=True).start())
            try:
                assert q.awaitTermination(90), "the query did not finish"
            except StreamingQueryException:  # a failed query raises; q.exception() has it
                pass
            return q

        q = run("nowrite", "w")
        err = str(q.exception())
        assert "CommitLogError" in err and f"commit log {bucket}/" in err and "committing batch 0 failed" in err, err
        assert js.stream("CLDST").info().state.messages == 30  # published, not lost, not committed
        assert not os.path.exists(os.path.join(ckpt, "commits", "0"))

        q = run("admin", "a")
        assert q.exception() is None
        assert js.stream("CLDST").info().state.messages == 30  # batch 0 again: all duplicates
        assert json.loads(js.key_value(bucket).get(str(q.id)).value) == {"batchId": 0, "count": 30,
                                                                          "duplicates": 30}

        for i in range(30, 35):
            js.publish("clsrc.x", b"m%d" % i)
        q = run("noread", "r")
        err = str(q.exception())
        assert "CommitLogError" in err and "reading the last committed batch failed" in err, err
        assert js.stream("CLDST").info().state.messages == 30  # nothing published by batch 1
        assert json.loads(js.key_value(bucket).get(str(q.id)).value)["batchId"] == 0
        nc.close()
    finally:
        srv.stop()


def test_commit_bucket_is_refused_for_batch_writes(spark, spark_nats):
    df = spark.createDataFrame([("a.b", "x")], "subject string, data string")
    with pytest.raises(Exception, match="commitBucket' is for streaming writes"):
        (df.write.format("jetstream").option("servers", spark_nats.url).option("commitBucket", "B")
         .mode("append").save())
