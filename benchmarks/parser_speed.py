"""Frames per second of the compiled and the pure parser on 10 MB of 16-byte MSG frames.

Run: ``python benchmarks/parser_speed.py`` (prints the median of 5 runs for each
implementation and their ratio).
"""
from __future__ import annotations

import statistics
import sys
import time

from jetwire import _impl

FRAME = b"MSG foo.bar 1 16\r\n" + b"x" * 16 + b"\r\n"
TARGET = 10 * 1024 * 1024


def make_stream() -> bytes:
    return FRAME * (TARGET // len(FRAME))


def frames_per_second(mod, stream: bytes, runs: int = 5) -> float:
    class Msg(mod.MsgBase):
        __slots__ = ()

    count = stream.count(b"MSG ")
    rates = []
    for _ in range(runs):
        parser = mod.Parser(Msg)
        t0 = time.perf_counter()
        events = parser.feed(stream)
        dt = time.perf_counter() - t0
        assert len(events) == count
        del events
        rates.append(count / dt)
    return statistics.median(rates)


def main() -> int:
    impls = _impl.implementations()
    stream = make_stream()
    print(f"stream: {len(stream)} bytes, {len(stream) // len(FRAME)} frames of {len(FRAME)} bytes")
    results = {}
    for name in ("compiled", "pure"):
        mod = impls.get(name)
        if mod is None:
            print(f"{name:9s}: not available")
            continue
        results[name] = frames_per_second(mod, stream)
        print(f"{name:9s}: {results[name] / 1e6:8.2f} M frames/s")
    if len(results) == 2:
        print(f"ratio    : {results['compiled'] / results['pure']:8.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
