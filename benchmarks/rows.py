"""Benchmark rows (BENCHMARKS.md) for each client; run one in a fresh process:

    python benchmarks/rows.py <row> <jetwire|jetwire.aio|nats-py> <url> <monitor-url> [scale]

prints one JSON line with the measurement. The rows live in ``jetwire.cli.rows`` (rows
a, b, c, d, e, f, f2, g; nats-py has no row g), shared with ``jetwire bench compare``
and ``benchmarks/compare.py``.
"""
from __future__ import annotations

import sys

from jetwire.cli.rows import COUNTS, IMPLS, ROWS, main, run_row  # noqa: F401 - re-exported

if __name__ == "__main__":
    sys.exit(main())
