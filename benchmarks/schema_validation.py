"""What ``nc.jetstream(validate=True)`` costs a ``create_stream``: the client-side check
(complete the payload, validate it with the compiled schema) against the same
``create_stream`` on a real server, with and without validation.

Run: ``python benchmarks/schema_validation.py`` (budget: under 1 ms per validated create).
"""
from __future__ import annotations

import statistics
import time

import jetwire
from jetwire import schemas
from jetwire.jetstream.models import ConsumerConfig, StreamConfig
from jetwire.testing import NatsServer


def per_call_us(fn, n: int = 20000) -> float:
    fn()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


def main() -> None:
    t0 = time.perf_counter()
    schemas._VALIDATORS.clear()
    schemas.check_request("STREAM.CREATE.X", {"name": "X"})
    print(f"first use (compile the stream_create_request schema): {(time.perf_counter() - t0) * 1e3:.1f} ms, once")
    cfg = StreamConfig(name="ORDERS", subjects=["orders.>"], max_msgs=100000, max_age=3600.0, metadata={"a": "b"})
    print(f"check_request(stream create):   {per_call_us(lambda: schemas.check_request('STREAM.CREATE.ORDERS', cfg.to_json_dict())):.1f} us")
    cc = {"stream_name": "ORDERS", "config": ConsumerConfig(durable_name="C", max_deliver=5).to_json_dict()}
    print(f"check_request(consumer create): {per_call_us(lambda: schemas.check_request('CONSUMER.CREATE.ORDERS.C', cc)):.1f} us")
    with NatsServer() as srv, jetwire.connect(srv.url) as nc:
        for validate in (False, True):
            js = nc.jetstream(validate=validate)
            times = []
            for i in range(300):
                t = time.perf_counter()
                js.create_stream(name=f"B{int(validate)}_{i}", subjects=[f"b{int(validate)}.{i}"], storage="memory")
                times.append(time.perf_counter() - t)
            print(f"create_stream round trip, validate={validate!s:5}: median {statistics.median(times) * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
