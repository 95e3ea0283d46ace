"""The benchmark result model, shared by both views of the engine.

:class:`Measurement` is what one workload measured: a rate, latency percentiles, the
client's CPU per message. ``jetwire bench <mode>`` reports one per group of clients
(:class:`ModeReport`, with per-client figures and the accounting checks); ``jetwire bench
compare`` one per row and client, the median over rounds (:class:`CompareReport`, with the
ratios against the peers). Each report's ``to_json()`` is the JSON the commands print
(and people parse): its keys do not change.

No click or rich here (``benchmarks/compare.py`` runs without the ``cli`` extra).
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypedDict

from ._stats import latency_stats, median, spread
from ._workloads import RATIO_KEYS, ROWS, Row

MB = 1024 * 1024
Json = dict[str, object]


class WorkerResult(TypedDict, total=False):
    """What one ``bench <mode>`` worker process reports (``time.monotonic()`` seconds)."""

    idx: int  # its index in its group
    msgs: int
    bytes: int
    start: float
    end: float
    bad: int  # wrong content, failed acks
    latencies: list[float]  # seconds, one per call (latency roles)
    cpu: float  # the process's CPU seconds over its role (set-up included)


RowResult = dict[str, float]  # one row's result: the flat dict ``python -m jetwire.cli.rows`` prints


# ================================================================== the shared model


@dataclass(frozen=True)
class Latency:
    """Latency percentiles in microseconds (nearest rank)."""

    p50_us: float
    p99_us: float
    p90_us: float | None = None
    p999_us: float | None = None
    min_us: float | None = None
    max_us: float | None = None
    avg_us: float | None = None
    count: int | None = None

    @classmethod
    def of(cls, latencies: Sequence[float]) -> Latency:
        """From round-trip times in seconds."""
        s = latency_stats(latencies)
        return cls(p50_us=s["p50_us"], p99_us=s["p99_us"], p90_us=s["p90_us"], p999_us=s["p999_us"],
                   min_us=s["min_us"], max_us=s["max_us"], avg_us=s["avg_us"], count=len(latencies))

    def to_json(self) -> dict[str, float]:
        keys = ("count", "min_us", "p50_us", "p90_us", "p99_us", "p999_us", "max_us", "avg_us")
        return {k: v for k in keys if (v := getattr(self, k)) is not None}


@dataclass(frozen=True)
class Measurement:
    """What one workload measured for one client or group of clients."""

    n: int  # messages (requests, gets, ...)
    seconds: float | None = None
    rate: float | None = None  # messages per second
    latency: Latency | None = None
    cpu_us: float | None = None  # the client's CPU time per message, microseconds
    extra: Mapping[str, float] = field(default_factory=dict)  # further figures (row m's parse_rate, ...)

    @classmethod
    def from_row(cls, res: Mapping[str, float]) -> Measurement:
        """From a compare row's flat result (see :data:`RowResult`)."""
        known = {"n", "seconds", "rate", "cpu_us"}
        lat = None
        if "p50_us" in res and "p99_us" in res:
            lat = Latency(p50_us=res["p50_us"], p99_us=res["p99_us"], p999_us=res.get("p999_us"))
            known |= {"p50_us", "p99_us", "p999_us"}
        return cls(n=int(res.get("n", 0)), seconds=res.get("seconds"), rate=res.get("rate"), latency=lat,
                   cpu_us=res.get("cpu_us"), extra={k: v for k, v in res.items() if k not in known})

    def row(self) -> RowResult:
        """The flat form (a compare row's result; ``median`` in the compare JSON)."""
        out: RowResult = {}
        if self.rate is not None:
            out["rate"] = self.rate
        out["n"] = self.n
        if self.seconds is not None:
            out["seconds"] = self.seconds
        if self.latency is not None:
            out["p50_us"], out["p99_us"] = self.latency.p50_us, self.latency.p99_us
            if self.latency.p999_us is not None:
                out["p999_us"] = self.latency.p999_us
        if self.cpu_us is not None:
            out["cpu_us"] = self.cpu_us
        out.update(self.extra)
        return out


# ================================================================== bench <mode>


def per_second(amount: float, msgs: int, seconds: float | None) -> float | None:
    """``amount`` per second over ``seconds``; 0.0 when nothing was counted, None (no
    rate: "-" in the tables, null in the JSON) when something was counted in a span of
    zero length (one message: its first and last delivery are the same instant)."""
    if not msgs:
        return 0.0
    return amount / seconds if seconds and seconds > 0 else None


@dataclass(frozen=True)
class ClientFigures:
    """One client (process) of a group."""

    client: int  # 1-based
    msgs: int
    bytes: int
    seconds: float

    @classmethod
    def of(cls, r: WorkerResult) -> ClientFigures:
        msgs = r.get("msgs", 0)
        return cls(client=r["idx"] + 1, msgs=msgs, bytes=r.get("bytes", 0),
                   seconds=max(r["end"] - r["start"], 0.0) if msgs else 0.0)

    @property
    def msgs_per_sec(self) -> float | None:
        return per_second(self.msgs, self.msgs, self.seconds)

    @property
    def mb_per_sec(self) -> float | None:
        rate = per_second(self.bytes, self.msgs, self.seconds)
        return None if rate is None else rate / MB

    def to_json(self) -> Json:
        return {"client": self.client, "msgs": self.msgs, "bytes": self.bytes, "seconds": self.seconds,
                "msgs_per_sec": self.msgs_per_sec, "mb_per_sec": self.mb_per_sec}


@dataclass(frozen=True)
class GroupResult:
    """A group of clients doing one role (publishers, subscribers, ...): like ``nats
    bench``, its rate spans from its first client's start to its last client's end."""

    measurement: Measurement
    bytes: int
    clients: list[ClientFigures]
    samples: list[float] = field(default_factory=list, repr=False)  # every latency, seconds (not in the JSON)

    @classmethod
    def of(cls, results: Sequence[WorkerResult]) -> GroupResult:
        clients = [ClientFigures.of(r) for r in sorted(results, key=lambda r: r["idx"])]
        msgs = sum(c.msgs for c in clients)
        active = [r for r in results if r.get("msgs")]
        dt = max(max(r["end"] for r in active) - min(r["start"] for r in active), 0.0) if active else 0.0
        lat = [x for r in results for x in r.get("latencies", ())]
        cpu = [r["cpu"] for r in results if "cpu" in r]
        m = Measurement(n=msgs, seconds=dt, rate=per_second(msgs, msgs, dt), latency=Latency.of(lat) if lat else None,
                        cpu_us=sum(cpu) / msgs * 1e6 if cpu and msgs else None)
        return cls(measurement=m, bytes=sum(c.bytes for c in clients), clients=clients, samples=lat)

    @property
    def mb_per_sec(self) -> float | None:
        m = self.measurement
        rate = per_second(self.bytes, m.n, m.seconds)
        return None if rate is None else rate / MB

    def spread(self) -> dict[str, float | None]:
        """min / avg / max / stddev of the clients' rates (those that have one; all None
        when none has)."""
        rates = [r for c in self.clients if (r := c.msgs_per_sec) is not None]
        if not rates and self.clients:
            return {"min": None, "avg": None, "max": None, "stddev": None}
        return dict(spread(rates))

    def totals(self) -> Json:
        m = self.measurement
        return {"msgs": m.n, "bytes": self.bytes, "seconds": m.seconds, "msgs_per_sec": m.rate,
                "mb_per_sec": self.mb_per_sec}

    def to_json(self) -> Json:
        out = self.totals()
        out.update(clients=[c.to_json() for c in self.clients], spread=self.spread())
        if self.measurement.latency is not None:
            out["latency"] = self.measurement.latency.to_json()
        if self.measurement.cpu_us is not None:
            out["cpu_us"] = self.measurement.cpu_us
        return out


@dataclass(frozen=True)
class Check:
    ok: bool
    text: str


@dataclass
class ModeReport:
    """One ``jetwire bench <mode>`` run."""

    mode: str
    flavour: str
    server: str  # redacted URL
    embedded_server: bool
    msgs: int
    size: int
    pub: int
    sub: int
    settings: dict[str, str | int] = field(default_factory=dict)  # stream, bucket, storage, batch, ...
    groups: dict[str, GroupResult] = field(default_factory=dict)
    total: GroupResult | None = None  # pubsub: publishers and subscribers together
    checks: list[Check] = field(default_factory=list)
    server_cpus: list[int] | None = None
    client_cpus: list[int] | None = None

    @property
    def accounted(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def failed(self) -> bool:
        return not self.accounted

    def measurements(self) -> Iterator[tuple[str, Measurement]]:
        for name, g in self.groups.items():
            yield name, g.measurement

    def to_json(self) -> Json:
        out: Json = {"mode": self.mode, "flavour": self.flavour, "server": self.server,
                     "embedded_server": self.embedded_server, "msgs": self.msgs, "size": self.size, "pub": self.pub,
                     "sub": self.sub, "groups": {n: g.to_json() for n, g in self.groups.items()}}
        out.update(self.settings)
        if self.total is not None:
            out["total"] = self.total.totals()
        out["checks"] = [{"ok": c.ok, "check": c.text} for c in self.checks]
        out["accounted"] = self.accounted
        out.update(server_cpus=self.server_cpus, client_cpus=self.client_cpus)
        return out


# ================================================================== bench compare


@dataclass
class ClientRuns:
    """One client's runs of one row: the median of every figure over the good runs."""

    median: Measurement | None
    runs: int
    errors: list[str]

    @classmethod
    def of(cls, runs: Sequence[Mapping[str, object]]) -> ClientRuns:
        ok: list[RowResult] = []
        errors: list[str] = []
        for x in runs:
            if "error" in x:
                errors.append(str(x["error"]))
            else:
                ok.append({k: v for k, v in x.items() if isinstance(v, int | float) and not isinstance(v, bool)})
        med = None
        if ok:
            med = Measurement.from_row({k: m for k in ok[0] if (m := median([x[k] for x in ok])) is not None})
        return cls(median=med, runs=len(runs), errors=errors)

    @property
    def failed(self) -> int:
        return len(self.errors)

    def to_json(self) -> Json:
        return {"median": None if self.median is None else self.median.row(), "runs": self.runs,
                "failed": self.failed, "errors": self.errors}


@dataclass
class RowReport:
    """One row: each client's medians, and the ratios of jetwire's against each peer's."""

    name: str
    spec: Row
    n: int
    clients: dict[str, ClientRuns]
    ratios: dict[str, dict[str, float]] = field(default_factory=dict)  # peer -> jetwire client -> times better
    p50_ratios: dict[str, float] = field(default_factory=dict)  # service rows: p50 as a fraction of nats-py's
    vs_f: dict[str, float] = field(default_factory=dict)  # row g: its rate as a multiple of row f's

    def __post_init__(self) -> None:
        for peer in RATIO_KEYS:
            base = self.medians().get(peer)
            for c, m in self.medians().items():
                if c.startswith("jetwire") and base is not None:
                    self.ratios.setdefault(peer, {})[c] = self.spec.ratio(m, base)
                    p50 = self.spec.p50_ratio(m, base)
                    if p50 is not None and peer == "nats-py":
                        self.p50_ratios[c] = p50

    def medians(self) -> dict[str, RowResult]:
        return {c: v.median.row() for c, v in self.clients.items() if v.median is not None}

    def to_json(self) -> Json:
        s = self.spec
        out: Json = {"title": s.title, "short": s.short, "kind": s.kind, "target": s.target,
                     "clients": {c: v.to_json() for c, v in self.clients.items()}}
        for peer in ("nats-py", "nats.go", "raw"):  # the order of the keys since they were added
            out[RATIO_KEYS[peer][0]] = dict(self.ratios.get(peer, {}))
        if self.p50_ratios:
            out["p50_ratios"] = self.p50_ratios
        out["n"] = self.n
        if self.vs_f:
            out["vs_f"] = self.vs_f
        return out


Runs = dict[str, dict[str, list[dict[str, object]]]]  # row -> client -> each round's result (or {"error": ...})


@dataclass
class CompareReport:
    """One ``jetwire bench compare`` run."""

    rows: dict[str, RowReport]
    rounds: int
    scale: float
    clients: list[str]
    server_cpus: list[int] | None = None
    client_cpus: list[int] | None = None

    @classmethod
    def of(cls, runs: Runs, scale: float = 1.0, clients: list[str] | None = None,
           server_cpus: list[int] | None = None, client_cpus: list[int] | None = None) -> CompareReport:
        rows = {r: RowReport(r, ROWS[r], max(1, int(ROWS[r].count * scale)),
                             {c: ClientRuns.of(x) for c, x in per_client.items()})
                for r, per_client in runs.items()}
        g, f = rows.get("g"), rows.get("f")
        if g and f:
            fm = f.medians()
            for c, m in g.medians().items():
                if c in fm:
                    g.vs_f[c] = m["rate"] / fm[c]["rate"]
        rounds = max((len(x) for per in runs.values() for x in per.values()), default=0)
        seen = clients if clients is not None else list(dict.fromkeys(c for per in runs.values() for c in per))
        return cls(rows=rows, rounds=rounds, scale=scale, clients=seen, server_cpus=server_cpus,
                   client_cpus=client_cpus)

    @property
    def failed(self) -> bool:
        return any(v.failed for row in self.rows.values() for v in row.clients.values())

    def failed_clients(self) -> list[str]:
        """``row/client`` of every failed run."""
        return [f"{r}/{c}" for r, row in self.rows.items() for c, v in row.clients.items() if v.failed]

    def measurements(self) -> Iterator[tuple[str, Measurement]]:
        for r, row in self.rows.items():
            for c, v in row.clients.items():
                if v.median is not None:
                    yield f"{r}/{c}", v.median

    def to_json(self) -> Json:
        return {"rows": {r: row.to_json() for r, row in self.rows.items()}, "failed": self.failed,
                "rounds": self.rounds, "scale": self.scale, "clients": self.clients,
                "server_cpus": self.server_cpus, "client_cpus": self.client_cpus}


def pinning_line(server_cpus: list[int] | None, client_cpus: list[int] | None) -> str | None:
    """One line saying where the server and the clients ran, or None when nothing was pinned."""
    if not server_cpus and not client_cpus:
        return None

    def on(cpus: list[int] | None) -> str:
        return f"on CPU {','.join(map(str, cpus))}" if cpus else "on any CPU"

    return f"pinned: server {on(server_cpus)}, each client {on(client_cpus)}"
