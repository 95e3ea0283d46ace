"""``format("jetstream")`` through a Spark Connect server (``spark_connect``): the client
(a subprocess, ``_connect_client.py``) only sends plans; the data source's Python code
runs in the server's Python workers, which import jetwire."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))


def _run_client(args, timeout=240):
    env = dict(os.environ)
    for k in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_API_MODE"):
        env.pop(k, None)
    p = subprocess.run([sys.executable, "-W", "ignore::FutureWarning", os.path.join(HERE, "_connect_client.py"),
                        json.dumps(args)], env=env, stdin=subprocess.DEVNULL, capture_output=True,
                       timeout=timeout, text=True)
    assert p.returncode == 0, f"client exited with {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-6000:]}"
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_read_and_write_through_spark_connect(spark_connect, spark_nats, make_stream, js, tmp_path):
    src = make_stream(allow_direct=True)
    dst = make_stream(allow_direct=True)
    base = src.lower()
    for i in range(30):
        js.publish(f"{base}.s{i % 3}", b"m%d" % i, headers={"K": ["a", str(i)]} if i % 10 == 0 else None)
    bucket = f"SPCONN_{uuid.uuid4().hex[:8]}"
    out = _run_client({"url": spark_connect.url, "servers": spark_nats.url, "src": src, "dst": dst,
                       "ckpt": str(tmp_path / "ckpt"), "bucket": bucket})
    try:
        assert out["session"] == "pyspark.sql.connect.session.SparkSession"
        assert out["auto_count"] == 30
        assert out["registered"] == "JetStreamDataSource"
        assert out["schema"] == ("struct<stream:string,subject:string,seq:bigint,timestamp:timestamp,data:binary,"
                                 "headers:map<string,array<string>>>")
        assert [r[0] for r in out["rows"]] == list(range(1, 31))
        assert out["rows"][10] == [11, f"{base}.s1", "m10", {"K": ["a", "10"]}]
        assert out["rows"][11][3] is None
        assert out["range_count"] == 10 and out["consumer_count"] == 30

        assert out["stream_error"] is None
        stored = [js.stream(dst).get_msg(seq) for seq in range(1, js.stream(dst).info().state.last_seq + 1)]
        by_subject: dict = {}
        for m in stored:
            by_subject.setdefault(m.subject.rsplit(".", 1)[1], []).append(m)
        # the batch write, twice with the same ids: stored once; the streaming copy: once
        assert sorted(m.data.decode() for m in by_subject["copy"]) == sorted(f"m{i}" for i in range(30))
        assert sorted(m.data.decode() for m in by_subject["stream"]) == sorted(f"m{i}" for i in range(30))
        m10 = next(m for m in by_subject["copy"] if m.data == b"m10")
        assert m10.headers.get_all("K") == ["a", "10"]

        name, text = out["error"]  # a bad option reaches the client as Spark's error, with jetwire's text
        assert "option 'stream' is required" in text, (name, text)

        entry = js.key_value(bucket).get(out["stream_query_id"])
        assert json.loads(entry.value) == {"batchId": 0, "count": 30, "duplicates": 0}
    finally:
        try:
            js.delete_key_value(bucket)
        except Exception:
            pass
