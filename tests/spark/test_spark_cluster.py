"""``format("jetstream")`` on a real standalone cluster (``spark_cluster``: a master and
two one-core workers, each task on an executor JVM of its own): batch and streaming
reads and writes, each checked to have run on both executors."""
from __future__ import annotations


def _pid_udf():
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType

    from jetwire.testing.spark_cluster import executor_jvm_pid

    return F.udf(lambda _: executor_jvm_pid(), LongType(), useArrow=False)


def _assert_on_executors(pids, cluster):
    """Rows were produced on (at least) two executor JVMs of the cluster, none elsewhere."""
    executors = set(cluster.executor_pids())
    assert len(executors) == 2, executors
    assert set(pids) <= executors, (set(pids), executors)
    assert len(set(pids)) == 2, set(pids)


def test_batch_read_on_two_executors(cluster_spark, spark_cluster, spark_nats, make_stream, fill):
    stream = make_stream(allow_direct=True)
    fill(stream, 4000)
    df = (cluster_spark.read.format("jetstream").option("servers", spark_nats.url).option("stream", stream)
          .option("numPartitions", 4).load())
    rows = df.select("seq", "data", _pid_udf()("seq").alias("pid")).collect()
    assert sorted(r.seq for r in rows) == list(range(1, 4001))
    assert {bytes(r.data) for r in rows} == {b"m%d" % i for i in range(4000)}
    _assert_on_executors([r.pid for r in rows], spark_cluster)


def test_batch_write_on_two_executors(cluster_spark, spark_cluster, spark_nats, make_stream, js):
    from pyspark.sql import functions as F

    stream = make_stream(allow_direct=True)
    subject = f"{stream.lower()}.w"
    n = 3000
    df = (cluster_spark.range(n, numPartitions=4)
          .select(F.lit(subject).alias("subject"), F.col("id").cast("string").alias("key"),
                  F.concat_ws(":", F.col("id").cast("string"), _pid_udf()("id").cast("string")).alias("data")))
    df.write.format("jetstream").option("servers", spark_nats.url).option("msgIdColumn", "key") \
        .mode("append").save()
    assert js.stream(stream).info().state.messages == n
    back = (cluster_spark.read.format("jetstream").option("servers", spark_nats.url).option("stream", stream)
            .load().select("data").collect())
    pairs = [bytes(r.data).split(b":") for r in back]
    assert sorted(int(i) for i, _ in pairs) == list(range(n))
    _assert_on_executors([int(p) for _, p in pairs], spark_cluster)


def test_streaming_read_and_write_on_two_executors(cluster_spark, spark_cluster, spark_nats, make_stream, fill, js,
                                                     tmp_path):
    """stream -> transform (tag each row with its executor) -> stream, in micro-batches
    of 500 sequences with two partitions each."""
    from pyspark.sql import functions as F

    src = make_stream(allow_direct=True)
    dst = make_stream(allow_direct=True)
    fill(src, 1500)
    out = f"{dst.lower()}.copy"
    df = (cluster_spark.readStream.format("jetstream").option("servers", spark_nats.url).option("stream", src)
          .option("maxMessagesPerTrigger", 500).option("numPartitions", 2).load()
          .select(F.lit(out).alias("subject"),
                  F.concat_ws(":", F.col("seq").cast("string"), _pid_udf()("seq").cast("string")).alias("data")))
    q = (df.writeStream.format("jetstream").option("servers", spark_nats.url).option("msgIdPrefix", "cl")
         .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start())
    assert q.awaitTermination(120)
    assert q.exception() is None
    assert js.stream(dst).info().state.messages == 1500
    back = (cluster_spark.read.format("jetstream").option("servers", spark_nats.url).option("stream", dst)
            .load().select("data").collect())
    pairs = [bytes(r.data).split(b":") for r in back]
    assert sorted(int(s) for s, _ in pairs) == list(range(1, 1501))
    _assert_on_executors([int(p) for _, p in pairs], spark_cluster)


def test_cluster_fixture_is_on_loopback(spark_cluster):
    state = spark_cluster.master_state()
    workers = [w for w in state["workers"] if w["state"] == "ALIVE"]
    assert len(workers) == 2 and all(w["cores"] == 1 and w["host"] == "127.0.0.1" for w in workers)
    assert spark_cluster.master_url.startswith("spark://127.0.0.1:")
