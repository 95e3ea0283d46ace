"""The chaos suite's accounting: every scenario records one row, printed as a table at
the end of the session (``pytest tests/chaos``; also written to ``$CHAOS_REPORT`` as
JSON lines when that is set)."""
from __future__ import annotations

import json
import os
from typing import Any

ROWS: list = []
COLUMNS = ("scenario", "flavour", "published", "acked", "stored", "lost", "duplicated", "retried", "recovery_s")


def record(scenario: str, flavour: str, *, published: int, acked: int, stored: int, lost: int,
           duplicated: int, retried: int = 0, recovery: float | None = None) -> dict:
    """One row of the table. ``retried``: publishes that failed and were sent again with
    their msg id, or deliveries the server made again (at-least-once redeliveries);
    ``recovery``: the longest time, in seconds, from the server (or network) being back
    to the client working again."""
    row: dict[str, Any] = dict(scenario=scenario, flavour=flavour, published=published, acked=acked,
                               stored=stored, lost=lost, duplicated=duplicated, retried=retried,
                               recovery_s=None if recovery is None else round(recovery, 2))
    ROWS.append(row)
    path = os.environ.get("CHAOS_REPORT")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(row) + "\n")
    return row


def table() -> str:
    rows = [[str(r[c]) if r[c] is not None else "-" for c in COLUMNS] for r in ROWS]
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(COLUMNS)]
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=False)) + " |"  # noqa: E731
    out = [line(COLUMNS), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(r) for r in sorted(rows, key=lambda r: (r[0], r[1]))]
    return "\n".join(out)
