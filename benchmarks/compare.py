"""Side-by-side comparison of jetwire (blocking and asyncio) with nats-py on one server.

    python benchmarks/compare.py                  # rows a-g, 3 rounds, embedded server
    python benchmarks/compare.py --rows a,c --rounds 5 --server nats://127.0.0.1:4222
    python benchmarks/compare.py --scale 0.1 --rounds 1   # smoke run

The same as ``jetwire bench compare`` (which prints a rich table): both run the one
implementation in ``jetwire.cli.compare``, with the rows of BENCHMARKS.md from
``jetwire.cli.rows`` (written once in ``jetwire.cli.rows_aio``); the nats-py client the
rows run with is ``natspy_rows.py`` next to this script. Each (row, client) runs in its
own process, in turns, for several rounds; a row whose messages are not all accounted
for fails instead of reporting a number.
"""
from __future__ import annotations

import os
import sys

from jetwire.cli.compare import main

if __name__ == "__main__":
    sys.exit(main(peers=os.path.dirname(os.path.abspath(__file__))))
