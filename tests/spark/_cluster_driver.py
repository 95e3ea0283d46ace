"""A streaming driver run as a subprocess by the cluster failure tests (so that it can be
SIGKILLed): stream -> transform -> stream with a checkpoint, on the cluster.

    python _cluster_driver.py '<json: conf, servers, src, dst, checkpoint, trigger>'

``trigger`` is ``"run"`` (a processing-time trigger, until killed) or ``"finish"``
(``availableNow``: process what is stored, then exit 0). Each output row's data is
``<source seq>:<source data>``; ids are ``drv:<batch>:<partition>:<row>``.
"""
from __future__ import annotations

import json
import sys


def main() -> int:
    args = json.loads(sys.argv[1])
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    builder = SparkSession.builder.appName("jetwire-cluster-driver")
    for k, v in args["conf"].items():
        builder = builder.config(k, v)
    # the writer gets its rows in Arrow batches of 10: a micro-batch is written as it is
    # transformed, so the kill lands while one is half written
    builder = builder.config("spark.sql.execution.arrow.maxRecordsPerBatch", "10")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")

    def tag(seq, data):
        import time

        time.sleep(0.005)  # a transform that takes some time: the kill lands mid-batch
        return f"{seq}:{bytes(data).decode()}"

    df = (spark.readStream.format("jetstream").option("servers", args["servers"]).option("stream", args["src"])
          .option("maxMessagesPerTrigger", 200).option("numPartitions", 2).load()
          .select(F.lit(args["out"]).alias("subject"),
                  F.udf(tag, StringType(), useArrow=False)("seq", "data").alias("data")))
    w = (df.writeStream.format("jetstream").option("servers", args["servers"]).option("msgIdPrefix", "drv")
         .option("checkpointLocation", args["checkpoint"]))
    if args["trigger"] == "finish":
        q = w.trigger(availableNow=True).start()
        q.awaitTermination()
        if q.exception() is not None:
            raise q.exception()
    else:
        q = w.trigger(processingTime="100 milliseconds").start()
        print("started", flush=True)
        q.awaitTermination()
    spark.stop()
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
