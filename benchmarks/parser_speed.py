"""Frames per second of the compiled and the pure parser on 10 MB of 16-byte MSG frames.

Run: ``python benchmarks/parser_speed.py`` (prints the median of 5 runs for each
implementation and their ratio).
"""
from __future__ import annotations

import gc
import statistics
import sys
import time

from jetwire import _impl

FRAME = b"MSG foo.bar 1 16\r\n" + b"x" * 16 + b"\r\n"
TARGET = 10 * 1024 * 1024


def make_stream() -> bytes:
    return FRAME * (TARGET // len(FRAME))


def one_run(mod, msg_cls, stream: bytes, count: int) -> float:
    """Frames per second of one ``feed`` of the whole stream into a new parser."""
    parser = mod.Parser(msg_cls)
    t0 = time.perf_counter()
    events = parser.feed(stream)
    dt = time.perf_counter() - t0
    assert len(events) == count
    del events
    gc.collect()
    return count / dt


def main(runs: int = 5) -> int:
    impls = _impl.implementations()
    stream = make_stream()
    count = len(stream) // len(FRAME)
    print(f"stream: {len(stream)} bytes, {count} frames of {len(FRAME)} bytes; median of {runs} runs")
    mods = {name: impls[name] for name in ("compiled", "pure") if name in impls}
    for name in ("compiled", "pure"):
        if name not in mods:
            print(f"{name:9s}: not available")
    classes = {name: type("Msg", (mod.MsgBase,), {"__slots__": ()}) for name, mod in mods.items()}
    rates: dict = {name: [] for name in mods}
    for _ in range(runs):  # interleaved, so load changes on the machine hit both alike
        for name, mod in mods.items():
            rates[name].append(one_run(mod, classes[name], stream, count))
    results = {name: statistics.median(r) for name, r in rates.items()}
    for name, rate in results.items():
        print(f"{name:9s}: {rate / 1e6:8.2f} M frames/s")
    if len(results) == 2:
        print(f"ratio    : {results['compiled'] / results['pure']:8.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
