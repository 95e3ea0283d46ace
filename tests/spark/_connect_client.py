"""A Spark Connect client run as a subprocess by ``test_spark_connect.py`` (PySpark
refuses a Connect session in a process that has a classic one, as the test process
does). It reads and writes through ``format("jetstream")`` over ``sc://`` and prints
what it saw as one JSON line (the last line of its output; ``t``: seconds since the
start at the end of each step).

    python _connect_client.py '<json: url, servers, src, dst, ckpt, bucket>'
"""
from __future__ import annotations

import json
import sys
import time


def main() -> int:
    args = json.loads(sys.argv[1])
    from pyspark.sql import SparkSession

    t0 = time.monotonic()
    out: dict = {"t": {}}

    def mark(step: str) -> None:
        out["t"][step] = round(time.monotonic() - t0, 1)

    spark = SparkSession.builder.remote(args["url"]).getOrCreate()
    out["session"] = f"{type(spark).__module__}.{type(spark).__name__}"
    mark("session")
    servers, src, dst = args["servers"], args["src"], args["dst"]

    def read(**options):
        r = spark.read.format("jetstream").option("servers", servers)
        for k, v in options.items():
            r = r.option(k, v)
        return r.load()

    # found by the server without any registration (its workers import pyspark_jetwire)
    out["auto_count"] = read(stream=src).count()

    mark("auto")
    import jetwire.spark

    out["registered"] = jetwire.spark.register(spark).__name__
    jetwire.spark.register(spark)  # again: harmless

    df = read(stream=src)
    out["schema"] = df.schema.simpleString()
    out["rows"] = [[r.seq, r.subject, bytes(r.data).decode(), r.headers] for r in df.orderBy("seq").collect()]
    mark("collect")
    out["range_count"] = read(stream=src, startSequence=5, endSequence=14, numPartitions=3).count()
    out["consumer_count"] = read(stream=src, readMode="consumer", numPartitions=2).count()

    mark("counts")
    w = (df.selectExpr(f"'{dst.lower()}.copy' AS subject", "data", "headers").write.format("jetstream")
         .option("servers", servers).option("msgIdPrefix", "conn").mode("append"))
    w.save()
    w.save()  # the same ids again: the stream drops them

    mark("write")
    try:
        spark.read.format("jetstream").option("servers", servers).load().count()
    except Exception as exc:
        out["error"] = [type(exc).__name__, str(exc)]

    mark("error")
    # a streaming copy with the commit log, through Connect too
    sdf = (spark.readStream.format("jetstream").option("servers", servers).option("stream", src).load()
           .selectExpr(f"'{dst.lower()}.stream' AS subject", "data"))
    q = (sdf.writeStream.format("jetstream").option("servers", servers).option("msgIdPrefix", "cs")
         .option("commitBucket", args["bucket"]).option("checkpointLocation", args["ckpt"])
         .trigger(availableNow=True).start())
    q.awaitTermination(90)
    out["stream_query_id"] = q.id
    out["stream_error"] = None if q.exception() is None else str(q.exception())
    mark("stream")
    spark.stop()
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
