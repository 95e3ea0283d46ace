"""Benchmark arithmetic: the per-client spread (min / avg / max / stddev), latency
percentiles, medians, message counts split over clients. (The result model built from
them is :mod:`._results`.)"""
from __future__ import annotations

import math
from collections.abc import Sequence


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (``p`` in 0..100) of an ascending sequence."""
    if not sorted_values:
        return float("nan")
    if p <= 0:
        return sorted_values[0]
    k = max(1, math.ceil(p / 100.0 * len(sorted_values)))
    return sorted_values[min(k, len(sorted_values)) - 1]


def spread(values: Sequence[float]) -> dict[str, float]:
    """min / avg / max / (population) stddev, as ``nats bench`` prints per-client rates."""
    if not values:
        return {"min": 0.0, "avg": 0.0, "max": 0.0, "stddev": 0.0}
    avg = sum(values) / len(values)
    var = sum((v - avg) ** 2 for v in values) / len(values)
    return {"min": min(values), "avg": avg, "max": max(values), "stddev": math.sqrt(var)}


def latency_stats(latencies: Sequence[float]) -> dict[str, float]:
    """Percentiles of round-trip times (seconds in), microseconds out."""
    s = sorted(latencies)
    return {
        "count": len(s),
        "min_us": s[0] * 1e6,
        "p50_us": percentile(s, 50) * 1e6,
        "p90_us": percentile(s, 90) * 1e6,
        "p99_us": percentile(s, 99) * 1e6,
        "p999_us": percentile(s, 99.9) * 1e6,
        "max_us": s[-1] * 1e6,
        "avg_us": sum(s) / len(s) * 1e6,
    }


def split_evenly(total: int, parts: int) -> list[int]:
    """``total`` messages over ``parts`` clients, the remainder going to the first ones."""
    parts = max(1, parts)
    q, r = divmod(total, parts)
    return [q + (1 if i < r else 0) for i in range(parts)]


def median(values: Sequence[float]) -> float | None:
    v = sorted(values)
    if not v:
        return None
    mid = len(v) // 2
    return v[mid] if len(v) % 2 else (v[mid - 1] + v[mid]) / 2
