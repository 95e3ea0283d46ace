"""The benchmark catalogue: every workload ``jetwire bench`` runs, described once.

* :data:`MODES` - the ``jetwire bench <mode>`` workloads (multi-process load, like
  ``nats bench``): what each runs, whether it measures latencies, which clients it needs
  and which settings its report names.
* :data:`ROWS` - the ``jetwire bench compare`` rows (BENCHMARKS.md), each one client in
  one process, the same work for jetwire (both flavours) and its peers; which client has
  which row is :data:`CLIENT_ROWS`.

Plain data, no click, rich or client imports: the row processes
(``python -m jetwire.cli.rows``) and the peers' row scripts import it.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

# ================================================================== bench <mode>


@dataclass(frozen=True)
class Mode:
    """One ``jetwire bench <mode>`` workload."""

    name: str
    help: str
    latency: bool = False  # its measured group records every call's latency
    needs_pub: bool = False  # it needs at least one publishing client (--pub)
    clients: tuple[str, ...] = ("pub",)  # the client counts its report header names
    settings: tuple[str, ...] = ()  # the options its report records (stream, bucket, storage, ...)


_STREAM = ("storage", "replicas", "stream")
_CONSUME = (*_STREAM, "batch", "acks")
_BUCKET = ("storage", "replicas", "bucket")

MODES: dict[str, Mode] = {m.name: m for m in (
    Mode("pub", "Core NATS publishers (--pub N) on --subject; the server's counters account for every message.",
         needs_pub=True),
    Mode("sub", "Core NATS subscribers (--sub N), each expecting all --msgs messages. Without --server a "
         "publisher is started too; with --server run `jetwire bench pub` elsewhere.", clients=("sub",)),
    Mode("pubsub", "Publishers (--pub N) and subscribers (--sub N) together; every subscriber must get every "
         "message.", needs_pub=True, clients=("pub", "sub")),
    Mode("request", "Requesters (--pub N) doing --msgs sequential requests in total, answered by --sub N "
         "repliers started here (--sub 0: answered by `jetwire bench reply` elsewhere).", latency=True,
         needs_pub=True, clients=("pub", "sub")),
    Mode("reply", "Repliers (--sub N, one queue group) answering --msgs requests. Without --server a requester "
         "is started too; with --server run `jetwire bench request --sub 0` elsewhere.", clients=("sub",)),
    Mode("js-pub", "JetStream publishers (--pub N), each publish waiting for its ack; the stream's state "
         "accounts for every message.", latency=True, needs_pub=True, settings=_STREAM),
    Mode("js-pub-async", "JetStream async publishers (--pub N), at most --window acks in flight each, until all "
         "are acked.", needs_pub=True, settings=(*_STREAM, "window")),
    Mode("js-fetch", "Pull consumers (--sub N sharing one durable consumer) fetching --msgs stored messages in "
         "batches of --batch.", clients=("sub",), settings=_CONSUME),
    Mode("js-consume", "Continuous pull (consume()) by --sub N clients sharing one durable consumer.",
         clients=("sub",), settings=_CONSUME),
    Mode("js-ordered", "Ordered consumers (--sub N), each reading all --msgs stored messages.", clients=("sub",),
         settings=_CONSUME),
    Mode("kv-put", "Key-value puts by --pub N clients into --bucket.", latency=True, needs_pub=True,
         settings=_BUCKET),
    Mode("kv-get", "Key-value gets by --sub N clients from --bucket (keys stored first).", latency=True,
         clients=("sub",), settings=_BUCKET),
)}


def latency_modes() -> list[str]:
    return [m.name for m in MODES.values() if m.latency]


# ================================================================== bench compare


@dataclass
class Row:
    """One ``bench compare`` row. A row's result (``python -m jetwire.cli.rows``) is a flat
    dict of numbers: ``rate`` (msgs/s), ``p50_us``/``p99_us`` (latency rows), ``cpu_us``
    (the client's CPU per message), ``n``, ``seconds`` and row-specific figures."""

    title: str
    kind: str  # "rate" (msgs/s, higher is better), "latency" (p50/p99 us, lower) or "service" (both)
    count: int
    target: str = ""
    js: bool = False  # needs a JetStream stream set up around it
    short: str = ""  # for narrow tables
    ratio_key: str = "rate"  # what rate ratios compare (row m: CPU-time rate, steadier on a busy box)
    key: str = ""  # what the ratio compares: "rate", or a latency percentile ("p50_us", "p99_us")

    def __post_init__(self) -> None:
        if not self.key:
            self.key = "rate" if self.kind == "rate" else "p50_us"

    def show(self, res: Mapping[str, object]) -> str:
        if self.kind == "rate":
            text = f"{res['rate']:>12,.0f} msg/s"
            if "cpu_rate" in res:
                text += f"  ({res['cpu_rate']:,.0f}/s of CPU time)"
            if "vs_pure" in res:
                text += f"  ({res['vs_pure']:.1f}x the pure twin)"
        elif self.kind == "service":
            text = f"{res['rate']:>10,.0f} req/s   p50 {res['p50_us']:7.1f} us   p99 {res['p99_us']:7.1f} us"
        else:
            text = f"p50 {res['p50_us']:8.1f} us   p99 {res['p99_us']:8.1f} us"
            if "p999_us" in res:
                text += f"   p99.9 {res['p999_us']:8.1f} us"
        if "cpu_us" in res:
            text += f"   cpu {res['cpu_us']:.2f} us/msg"
        return text

    def value(self, res: Mapping[str, float]) -> float:
        return res["rate"] if self.kind in ("rate", "service") else res[self.key]

    def ratio(self, res: Mapping[str, float], base: Mapping[str, float]) -> float:
        """How many times better ``res`` is than ``base`` (>1 is better; a service row by
        its request rate, its p50 reported beside as :meth:`p50_ratio`)."""
        if self.kind == "rate":
            k = self.ratio_key if self.ratio_key in res and self.ratio_key in base else "rate"
            return res[k] / base[k]
        if self.kind == "service":
            return res["rate"] / base["rate"]
        return base[self.key] / res[self.key]

    def p50_ratio(self, res: Mapping[str, float], base: Mapping[str, float]) -> float | None:
        """A service row's p50 as a fraction of ``base``'s (<1 is better); None otherwise."""
        if self.kind != "service":
            return None
        return res["p50_us"] / base["p50_us"]


ROWS: dict[str, Row] = {
    "a": Row("500k publish of 16 B, then a round trip (server counts them)", "rate", 500_000,
             ">= 1.0x nats.go", short="publish 16 B + round trip"),
    "b": Row("200k 16 B messages, publisher -> subscriber callback on two connections", "rate", 200_000,
             ">= 1.0x nats.go", short="pub -> sub callback"),
    "c": Row("5k sequential requests to a responder on another connection", "latency", 5_000,
             "p50, p99 <= 1.0x nats.go", short="sequential requests"),
    "d": Row("5k JetStream publishes, each waiting for its ack", "rate", 5_000,
             ">= 1.0x nats.go", js=True, short="JS publish, await each ack"),
    "e": Row("50k JetStream async publishes, <= 1000 acks in flight, until all acked", "rate", 50_000,
             ">= 1.2x nats.go, >= 0.7x raw", js=True, short="JS publish_async, 1000 in flight"),
    "f": Row("100k stored messages pulled with fetch(1000), AckNone", "rate", 100_000,
             ">= 1.0x nats.go", js=True, short="fetch(1000), AckNone"),
    "f2": Row("100k stored messages, fetch(1000), AckExplicit, one ack per message", "rate", 100_000,
              ">= 1.0x nats.go", js=True, short="fetch(1000), ack each"),
    "g": Row("consume() continuous pull of 100k stored messages, 1000 at a time (as row f)", "rate", 100_000,
             ">= f", js=True, short="consume(), continuous pull"),
    "h": Row("60k 16 B messages at a steady 20k msg/s, one-way latency publish -> subscriber callback",
             "latency", 60_000, "p50, p99 <= 1.0x nats.go", short="one-way latency at 20k/s", key="p99_us"),
    "m": Row("msg.metadata of 200k fresh JetStream messages in batches of 1000 (no server)", "rate", 200_000,
             ">= 10x nats-py, >= 8x pure twin", short="metadata parses", ratio_key="cpu_rate"),
    "s": Row("20k requests to an echo service (ADR-32 micro), 16 concurrent requesters", "service", 20_000,
             ">= 3x nats-py, p50 <= 0.7x", short="service echo, 16 requesters"),
}
ROW_ORDER = ["a", "b", "c", "d", "e", "f", "f2", "g", "h", "m", "s"]
COUNTS = {k: r.count for k, r in ROWS.items()}

CLIENTS = ["jetwire", "jetwire.aio", "nats.go", "nats-py", "raw"]
REFERENCE = "nats.go"  # the peer the targets of BENCHMARKS.md are ratios against
# the peers' row files (in the checkout's benchmarks/ folder, not in the package)
PEER_FILES = {"nats.go": "natsgo_rows.py", "nats-py": "natspy_rows.py", "raw": "raw_rows.py"}
# the ratio columns of a summary: peer -> (summary key, short name)
RATIO_KEYS = {"nats.go": ("ratios_go", "go"), "nats-py": ("ratios", "py"), "raw": ("ratios_raw", "raw")}

# The rows are written once (rows_aio.py; the blocking rows_sync.py is generated), as
# functions of a client object; the peers run the same functions (or their own program).
CLIENT_ROWS: dict[str, list[str]] = {
    "jetwire": ROW_ORDER,
    "jetwire.aio": ROW_ORDER,
    "nats-py": [r for r in ROW_ORDER if r != "g"],  # nats-py has no continuous-pull API: no row g
    # nats.go 1.22's legacy JetStream API has no continuous pull either; no metadata row
    "nats.go": [r for r in ROW_ORDER if r not in ("g", "m")],
    "raw": ["a", "c", "d", "e", "f", "f2", "h", "s"],  # the raw-socket limit (benchmarks/raw_rows.py)
}


def supported(row: str, client: str) -> bool:
    return row in CLIENT_ROWS.get(client, ())


def parse_rows(text: str) -> list[str]:
    """``"a,c"`` (or ``"all"``/``""``: every row) to row names; ``ValueError`` for an unknown row."""
    rows = [r.strip().lower() for r in text.split(",") if r.strip()]
    if not rows or rows == ["all"]:
        return list(ROW_ORDER)
    unknown = [r for r in rows if r not in ROWS]
    if unknown:
        raise ValueError(f"unknown row {unknown[0]!r}; known: {', '.join(ROW_ORDER)}")
    return rows


def parse_clients(text: str | None) -> list[str]:
    """``"jetwire,nats-py"`` (None: every client) to client names; ``ValueError`` for an unknown one."""
    clients = [c.strip() for c in (text or ",".join(CLIENTS)).split(",") if c.strip()]
    unknown = [c for c in clients if c not in CLIENTS]
    if unknown:
        raise ValueError(f"unknown client {unknown[0]!r}; known: {', '.join(CLIENTS)}")
    return clients
