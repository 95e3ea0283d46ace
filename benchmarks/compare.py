"""Side-by-side comparison of jetwire (blocking and asyncio) with nats.go, nats-py and the
raw-socket limit on one server.

    python benchmarks/compare.py                  # rows a-h, 3 rounds, embedded server
    python benchmarks/compare.py --rows a,c --rounds 5 --server nats://127.0.0.1:4222
    python benchmarks/compare.py --scale 0.1 --rounds 1   # smoke run

The same as ``jetwire bench compare`` (which prints a rich table): both run the one
implementation in ``jetwire.cli.compare``, with the rows of BENCHMARKS.md from
``jetwire.cli.rows`` (written once in ``jetwire.cli.rows_aio``); the peers' rows are next
to this script: ``natsgo_rows.py`` (the Go program ``natsgo/main.go`` over nats.go; needs
``apt-get install golang-go golang-github-nats-io-go-nats-dev``), ``natspy_rows.py``
(nats-py) and ``raw_rows.py`` (stdlib sockets, no client logic). Each (row, client) runs in its
own process, in turns, for several rounds; a row whose messages are not all accounted
for fails instead of reporting a number.
"""
from __future__ import annotations

import os
import sys

from jetwire.cli.compare import main

if __name__ == "__main__":
    sys.exit(main(peers=os.path.dirname(os.path.abspath(__file__))))
