"""A small Spark pipeline over JetStream: read a stream, aggregate, write the results to
another stream -- as a batch job and as an incremental streaming job.

    pip install -e '.[spark]'          # pyspark>=4.0 + pyarrow; Java 17+ on the machine
    python examples/spark_pipeline.py  # starts its own nats-server (jetwire.testing)
    python examples/spark_pipeline.py --server nats://127.0.0.1:4222   # --reset to recreate its streams

Flow:

1. ``ORDERS`` (subjects ``orders.<region>``) gets a few thousand JSON orders.
2. Batch: ``spark.read.format("jetstream")`` reads them, Spark parses the JSON and sums
   the amounts per region, and ``df.write.format("jetstream")`` publishes one message per
   region to ``ORDER_TOTALS`` (subject ``totals.<region>``). The region and the last
   order sequence form the ``Nats-Msg-Id`` (``msgIdColumn``), so running the job again
   over the same orders adds nothing.
3. Streaming: ``spark.readStream.format("jetstream")`` picks orders up incrementally
   (``Trigger.AvailableNow``, a checkpoint directory) and ``writeStream`` forwards the
   large ones to ``ORDER_TOTALS`` under ``totals.large.<region>``, with derived ids
   (``msgIdPrefix``) that make a retried micro-batch idempotent. Run twice, the second
   run reads only the orders published in between.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile


def publish_orders(url: str, n: int, start: int = 0) -> None:
    import jetwire

    regions = ["eu", "us", "apac"]
    rnd = random.Random(start)
    with jetwire.connect(url) as nc:
        js = nc.jetstream()
        for i in range(start, start + n):
            region = regions[i % len(regions)]
            order = {"id": i, "region": region, "amount": round(rnd.uniform(5, 500), 2)}
            js.publish_async(f"orders.{region}", json.dumps(order).encode(), msg_id=f"order-{i}")
        js.publish_async_complete(timeout=30)


STREAMS = (("ORDERS", ["orders.>"]), ("ORDER_TOTALS", ["totals.>"]))


def setup_streams(url: str, reset: bool) -> None:
    """Create the example's two streams. Streams of those names already on the server
    are deleted first only when ``reset`` (``--reset``); otherwise the example stops and
    says so, touching nothing."""
    import jetwire

    with jetwire.connect(url) as nc:
        js = nc.jetstream()
        existing = set(js.stream_names())
        found = [name for name, _ in STREAMS if name in existing]
        if found and not reset:
            raise SystemExit(f"stream(s) {', '.join(found)} already exist on this server; the example would "
                             "delete them: pass --reset to allow that, or use another server")
        for name, subjects in STREAMS:
            if name in found:
                js.delete_stream(name)
            js.create_stream(name=name, subjects=subjects, allow_direct=True)


def show_totals(url: str, title: str, prefix: str = "totals.", last: int = 10) -> int:
    """Print the last ``last`` messages of ORDER_TOTALS whose subject starts with
    ``prefix``; returns how many there are."""
    import jetwire

    with jetwire.connect(url) as nc:
        st = nc.jetstream().stream("ORDER_TOTALS")
        info = st.info()
        msgs = [st.get_msg(seq) for seq in range(info.state.first_seq, info.state.last_seq + 1)]
    msgs = [m for m in msgs if m.subject.startswith(prefix)]
    print(f"\n{title}: {len(msgs)} message(s)")
    for m in msgs[-last:]:
        print(f"  #{m.seq:<3} {m.subject:<22} {m.data.decode()}")
    return len(msgs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Spark + JetStream pipeline example")
    ap.add_argument("--server", help="NATS URL (default: start an embedded nats-server)")
    ap.add_argument("--reset", action="store_true",
                    help="delete and recreate the streams ORDERS and ORDER_TOTALS if --server already has them")
    ap.add_argument("--orders", type=int, default=3000)
    args = ap.parse_args(argv)

    srv = None
    url = args.server
    if url is None:
        from jetwire.testing import NatsServer

        srv = NatsServer().start()
        url = srv.url
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers need jetwire + pyarrow
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    spark = (SparkSession.builder.master("local[2]").appName("jetwire-spark-pipeline")
             .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    # Installed with the [spark] extra, format("jetstream") is found automatically;
    # registering explicitly does no harm (and helps when only jetwire.spark is importable).
    import jetwire.spark

    jetwire.spark.register(spark)
    order_schema = "id long, region string, amount double"
    try:
        setup_streams(url, args.reset)
        publish_orders(url, args.orders)

        # -- batch: read everything, aggregate, publish one total per region ------------
        orders = (spark.read.format("jetstream").option("servers", url).option("stream", "ORDERS")
                  .option("subject", "orders.>").load())
        parsed = orders.select("seq", F.from_json(F.col("data").cast("string"), order_schema).alias("o"))
        totals = (parsed.groupBy("o.region")
                  .agg(F.count("*").alias("orders"), F.round(F.sum("o.amount"), 2).alias("total"),
                       F.max("seq").alias("upto"))
                  .select(F.concat(F.lit("totals."), F.col("region")).alias("subject"),
                          F.to_json(F.struct("region", "orders", "total", "upto")).alias("data"),
                          F.concat_ws(":", F.lit("total"), F.col("region"), F.col("upto")).alias("msg_id")))
        for _ in range(2):  # the second run publishes duplicates only: the stream keeps one copy
            (totals.write.format("jetstream").option("servers", url).option("stream", "ORDER_TOTALS")
             .option("msgIdColumn", "msg_id").mode("append").save())
        show_totals(url, "ORDER_TOTALS after the batch job (run twice, stored once)", "totals.", 10)

        # -- streaming: forward large orders incrementally -----------------------------
        ckpt = tempfile.mkdtemp(prefix="jetwire-spark-ckpt-")

        def run_stream() -> None:
            src = (spark.readStream.format("jetstream").option("servers", url).option("stream", "ORDERS")
                   .option("startingOffsets", "earliest").option("maxMessagesPerTrigger", 2000).load())
            large = (src.select("seq", F.from_json(F.col("data").cast("string"), order_schema).alias("o"))
                     .where(F.col("o.amount") >= 495)
                     .select(F.concat(F.lit("totals.large."), F.col("o.region")).alias("subject"),
                             F.to_json(F.struct(F.col("seq").alias("order_seq"), "o.id", "o.amount")).alias("data")))
            # Python sinks take append mode; no shuffle, so the derived ids
            # (msgIdPrefix:batchId:partition:row) are the same if a micro-batch is retried
            q = (large.writeStream.format("jetstream").option("servers", url).option("msgIdPrefix", "large")
                 .option("checkpointLocation", ckpt).trigger(availableNow=True).start())
            q.awaitTermination()

        run_stream()
        first = show_totals(url, "large orders forwarded by the first streaming run", "totals.large.", 3)
        publish_orders(url, 300, start=args.orders)  # new orders arrive ...
        run_stream()  # ... and only they are read by the restarted query
        total = show_totals(url, "after the second run (new orders only)", "totals.large.", 3)
        print(f"  the second run forwarded {total - first} more")
    finally:
        spark.stop()
        if srv is not None:
            srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
