"""One benchmark row (BENCHMARKS.md) for one client, in this process:

    python benchmarks/rows.py <row> <jetwire|jetwire.aio|nats.go|nats-py|raw> <url> <monitor-url> [scale]

prints one JSON line with the measurement. The rows are written once, in
``jetwire.cli.rows_aio`` (the blocking ``rows_sync`` is generated from it), and run with
the client asked for: jetwire's from the package, nats-py's from ``natspy_rows.py``
here, nats.go's from ``natsgo_rows.py`` (the Go program ``natsgo/main.go``), the
raw-socket limit's from ``raw_rows.py``. ``jetwire bench compare`` and ``benchmarks/compare.py`` run them in turns.
"""
from __future__ import annotations

import sys

from jetwire.cli.rows import main

if __name__ == "__main__":
    if sys.argv[2:3] == ["nats-py"]:
        from natspy_rows import CLIENT  # this script's folder is on sys.path

        sys.exit(main(peer=CLIENT))
    if sys.argv[2:3] == ["nats.go"]:
        from natsgo_rows import CLIENT as GO_CLIENT

        sys.exit(main(peer=GO_CLIENT))
    if sys.argv[2:3] == ["raw"]:
        from raw_rows import CLIENT as RAW_CLIENT

        sys.exit(main(peer=RAW_CLIENT))
    sys.exit(main())
