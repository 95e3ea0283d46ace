"""The benchmark reports on screen and on file: one layout per report, two renderers.

:func:`mode_tables` and :func:`compare_table` lay a report (:mod:`._results`) out as
:class:`Table` objects: plain cells with a style name. :func:`render_rich` draws them with
rich (``jetwire bench``'s default), :func:`render_plain` as aligned text (``--plain``,
and ``benchmarks/compare.py``, which runs without rich). JSON is each report's
``to_json()``; ``--csv`` and ``--histogram`` are :func:`write_csv` and
:func:`write_histogram`. rich and matplotlib are imported only where they draw.
"""
from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ._conn import comma, human_bytes
from ._results import ClientRuns, CompareReport, GroupResult, Measurement, ModeReport, RowResult, pinning_line
from ._workloads import MODES, RATIO_KEYS, Row

if TYPE_CHECKING:
    from rich.console import Console

Report = ModeReport | CompareReport


@dataclass(frozen=True)
class Cell:
    text: str
    style: str = ""  # rich style ("bold", "dim", "bold red", ...); the plain renderer ignores it


@dataclass
class Table:
    columns: list[tuple[str, str]]  # (header, "left" | "right")
    rows: list[list[Cell]] = field(default_factory=list)
    title: str = ""
    boxed: bool = False  # rich: a boxed table (compare) rather than bare columns

    def add(self, *cells: str | Cell) -> None:
        self.rows.append([c if isinstance(c, Cell) else Cell(c) for c in cells])


@dataclass
class Layout:
    """A report as a heading, tables and closing lines (each a list of cells)."""

    heading: list[Cell] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    footer: list[list[Cell]] = field(default_factory=list)


# ================================================================== bench <mode>


def _rate(v: float | None) -> str:
    """A rate; "-" for none (a span of zero length has no rate)."""
    return "-" if v is None else f"{v:,.0f}"


def _mb(v: float | None, digits: int = 2) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def _rates_table(rep: ModeReport) -> Table:
    t = Table([("group", "left"), ("client", "left"), ("msgs", "right"), ("seconds", "right"), ("msgs/s", "right"),
               ("MB/s", "right")])
    for name, g in rep.groups.items():
        if len(g.clients) > 1:
            for c in g.clients:
                t.add(name, f"[{c.client}]", comma(c.msgs), f"{c.seconds:.3f}", _rate(c.msgs_per_sec),
                      _mb(c.mb_per_sec))
        m = g.measurement
        t.add(Cell(name, "bold"), Cell("all", "bold"), comma(m.n), f"{m.seconds or 0.0:.3f}", Cell(_rate(m.rate), "bold"),
              _mb(g.mb_per_sec))
    if rep.total is not None:
        m = rep.total.measurement
        t.add(Cell("pub+sub", "bold"), "", comma(m.n), f"{m.seconds or 0.0:.3f}", Cell(_rate(m.rate), "bold"),
              _mb(rep.total.mb_per_sec))
    return t


def _spread_table(groups: dict[str, GroupResult]) -> Table:
    t = Table([("group", "left"), ("min", "right"), ("avg", "right"), ("max", "right"), ("stddev", "right")],
              title="per-client msgs/s")
    for name, g in groups.items():
        sp = g.spread()
        t.add(name, _rate(sp["min"]), _rate(sp["avg"]), _rate(sp["max"]), _rate(sp["stddev"]))
    return t


def _latency_table(lat: dict[str, Measurement]) -> Table:
    t = Table([("group", "left")] + [(c, "right") for c in ("count", "min", "p50", "p90", "p99", "p99.9", "max")],
              title="latency (us)")
    for name, m in lat.items():
        L = m.latency
        assert L is not None
        t.add(name, comma(L.count or 0), *(f"{v or 0.0:.1f}" for v in (L.min_us, L.p50_us, L.p90_us, L.p99_us,
                                                                        L.p999_us, L.max_us)))
    return t


def mode_heading(rep: ModeReport) -> list[Cell]:
    extra = [f"{k}={v}" for k, v in rep.settings.items()]
    counts = {"pub": rep.pub, "sub": rep.sub}
    clients = ", ".join(f"{k}={counts[k]}" for k in MODES[rep.mode].clients)
    where = f"({'embedded ' if rep.embedded_server else ''}server {rep.server})"
    pin = pinning_line(rep.server_cpus, rep.client_cpus)
    return [Cell(f"jetwire bench {rep.mode}", "bold"),
            Cell(f"  {comma(rep.msgs)} msgs x {human_bytes(rep.size)}, {clients}, {rep.flavour} flavour"
                 + (", " + ", ".join(extra) if extra else "") + "  "),
            Cell(where + (f"; {pin}" if pin else ""), "dim")]


def mode_tables(rep: ModeReport) -> Layout:
    """``bench <mode>``: the rates per group (and per client), the per-client spread,
    the latency percentiles, the client CPU per message and the accounting checks."""
    out = Layout(heading=mode_heading(rep), tables=[_rates_table(rep)])
    multi = {n: g for n, g in rep.groups.items() if len(g.clients) > 1}
    if multi:
        out.tables.append(_spread_table(multi))
    lat = {n: g.measurement for n, g in rep.groups.items() if g.measurement.latency is not None}
    if lat:
        out.tables.append(_latency_table(lat))
    cpu = [f"{n} {m.cpu_us:.2f} us/msg" for n, m in rep.measurements() if m.cpu_us is not None]
    if cpu:
        out.footer.append([Cell("client CPU: " + ", ".join(cpu), "dim")])
    for c in rep.checks:
        out.footer.append([Cell("  "), Cell("ok", "green") if c.ok else Cell("FAILED", "bold red"),
                           Cell(f"  {c.text}")])
    return out


# ================================================================== bench compare


def median_lines(spec: Row, m: RowResult) -> list[str]:
    """A compare cell: a client's medians for one row."""
    if spec.kind == "rate":
        lines = [f"{m['rate']:,.0f}/s"]
    elif spec.kind == "service":
        lines = [f"{m['rate']:,.0f}/s", f"p50 {m['p50_us']:.0f}us", f"p99 {m['p99_us']:.0f}us"]
    else:
        lines = [f"p50 {m['p50_us']:.0f}us", f"p99 {m['p99_us']:.0f}us"]
    if "cpu_rate" in m:
        lines.append(f"{m['cpu_rate']:,.0f}/s CPU")
    if "vs_pure" in m:
        lines.append(f"{m['vs_pure']:.1f}x pure twin")
    if "p999_us" in m:
        lines.append(f"p99.9 {m['p999_us']:.0f}us")
    if "cpu_us" in m:
        lines.append(f"cpu {m['cpu_us']:.2f}us")
    return lines


def _ratio_cell(rep: CompareReport, r: str, c: str, peers: list[str]) -> str:
    row = rep.rows[r]
    parts = [f"{x:.2f}x" if (x := row.ratios.get(p, {}).get(c)) is not None else "-" for p in peers]
    if all(x == "-" for x in parts) and c in row.vs_f:
        return f"{row.vs_f[c]:.2f}x of f"
    if c in row.p50_ratios:
        parts.append(f"p50 {row.p50_ratios[c]:.2f}x of py")
    return "\n".join(parts)


def compare_table(rep: CompareReport) -> Table:
    """``bench compare``: one line per row, one column per client, the ratios of
    jetwire's flavours against each peer, the target."""
    pin = pinning_line(rep.server_cpus, rep.client_cpus)
    t = Table([("row", "left"), ("what", "left"), ("n", "right")] + [(c, "right") for c in rep.clients], boxed=True,
              title=f"medians over {rep.rounds} round(s), scale {rep.scale:g}; "
                    "ratio = times better than nats.go (go) / nats-py (py) / the raw-socket limit (raw): "
                    "rates jetwire/peer, latency peer/jetwire (p50 for c, p99 for h); cpu = client CPU per message"
                    + (f"; {pin}" if pin else ""))
    peers = [p for p in RATIO_KEYS if p in rep.clients]
    ours = [c for c in rep.clients if c.startswith("jetwire")] if peers else []
    for c in ours:
        t.columns.append((f"{c}\nvs " + " / ".join(RATIO_KEYS[p][1] for p in peers), "right"))
    t.columns.append(("target", "left"))
    for r, row in rep.rows.items():
        cells = [Cell(r), Cell(row.spec.short), Cell(comma(row.n))]
        cells += [_median_cell(row.spec, row.clients.get(c)) for c in rep.clients]
        cells += [Cell(_ratio_cell(rep, r, c, peers)) for c in ours]
        cells.append(Cell(row.spec.target))
        t.rows.append(cells)
    return t


def _median_cell(spec: Row, v: ClientRuns | None) -> Cell:
    if v is None:
        return Cell("n/a", "dim")
    if v.median is None:
        return Cell("FAILED", "bold red")
    text = "\n".join(median_lines(spec, v.median.row()))
    return Cell(text + (f"\n{v.failed} failed" if v.failed else ""), "red" if v.failed else "")


def compare_tables(rep: CompareReport) -> Layout:
    out = Layout(tables=[compare_table(rep)])
    for r, row in rep.rows.items():
        for c, v in row.clients.items():
            out.footer += [[Cell(f"row {r} {c} failed:", "bold red"), Cell(f" {e}")] for e in v.errors]
    return out


def format_compare(rep: CompareReport) -> str:
    """``bench compare`` as plain text: a block per row, a line per client with its
    medians and ratios (the layout of ``benchmarks/compare.py``)."""
    lines = [f"medians over {rep.rounds} round(s); ratio = how many times better than nats.go (go), "
             "nats-py (py) and the raw-socket limit (raw) (rates: jetwire/peer; latency: peer / jetwire, "
             "p50 for c, p99 for h; service rows: the request rate's ratio, and p50 as a fraction of "
             "nats-py's); cpu: the client process's CPU per message"]
    pin = pinning_line(rep.server_cpus, rep.client_cpus)
    if pin:
        lines.append(pin)
    for r, row in rep.rows.items():
        lines += ["", f"[{r}] {row.spec.title}   (target {row.spec.target})"]
        for c, v in row.clients.items():
            if v.median is None:
                lines.append(f"  {c:12s} FAILED: {v.errors[-1] if v.errors else 'no result'}")
                continue
            line = f"  {c:12s} {row.spec.show(v.median.row())}"
            for peer in ("nats.go", "nats-py", "raw"):
                if (x := row.ratios.get(peer, {}).get(c)) is not None:
                    line += f"   {RATIO_KEYS[peer][1]} {x:.2f}x"
            if c in row.p50_ratios:
                line += f"   p50 {row.p50_ratios[c]:.2f}x of nats-py"
            if c in row.vs_f:
                line += f"   g/f {row.vs_f[c]:.2f}x"
            if v.failed:
                line += f"   ({v.failed} of {v.runs} runs FAILED)"
            lines.append(line)
    return "\n".join(lines)


# ================================================================== the two renderers


def layout(rep: Report) -> Layout:
    return mode_tables(rep) if isinstance(rep, ModeReport) else compare_tables(rep)


def _plain_table(t: Table) -> list[str]:
    lines = [t.title] if t.title else []
    grid = [[h for h, _ in t.columns]] + [[c.text for c in row] for row in t.rows]
    height = [max(len(c.split("\n")) for c in row) for row in grid]
    width = [max(len(part) for row in grid for part in row[i].split("\n")) for i in range(len(t.columns))]
    for row, h in zip(grid, height, strict=True):
        for k in range(h):
            parts = []
            for i, cell in enumerate(row):
                sub = cell.split("\n")
                text = sub[k] if k < len(sub) else ""
                parts.append(text.rjust(width[i]) if t.columns[i][1] == "right" else text.ljust(width[i]))
            lines.append("  ".join(parts).rstrip())
    return lines


def render_plain(rep: Report) -> str:
    """The report as plain text (no colours, no box drawing)."""
    if isinstance(rep, CompareReport):
        return format_compare(rep)
    lay = layout(rep)
    lines = ["".join(c.text for c in lay.heading)] if lay.heading else []
    for t in lay.tables:
        lines += _plain_table(t)
    lines += ["".join(c.text for c in cells) for cells in lay.footer]
    return "\n".join(lines)


def render_rich(rep: Report, con: Console) -> None:
    """The report with rich: a styled heading, tables and closing lines."""
    from rich.table import Table as RichTable
    from rich.text import Text

    def text(cells: Sequence[Cell]) -> Text:
        return Text.assemble(*((c.text, c.style) for c in cells))

    lay = layout(rep)
    if lay.heading:
        con.print(text(lay.heading))
    for t in lay.tables:
        kw: dict[str, object] = {} if t.boxed else {"box": None, "pad_edge": False}
        rt = RichTable(title=t.title or None, title_justify="left", header_style="bold", **kw)  # type: ignore[arg-type]
        for header, just in t.columns:
            rt.add_column(header, justify="right" if just == "right" else "left",
                          min_width=20 if t.boxed and header == "what" else None)
        for row in t.rows:
            rt.add_row(*(Text(c.text, c.style) for c in row))
        con.print(rt)
    for cells in lay.footer:
        con.print(text(cells))


# ================================================================== files


def _csv(v: float | None, digits: int) -> str:
    return "" if v is None else f"{v:.{digits}f}"


def write_csv(rep: ModeReport) -> str:
    """Per-client (and per-group: client "all") figures of a ``bench <mode>`` run as CSV."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["mode", "flavour", "group", "client", "msgs", "bytes", "seconds", "msgs_per_sec", "mb_per_sec",
                "p50_us", "p99_us"])
    for name, g in rep.groups.items():
        for c in g.clients:
            w.writerow([rep.mode, rep.flavour, name, c.client, c.msgs, c.bytes, f"{c.seconds:.6f}",
                        _csv(c.msgs_per_sec, 1), _csv(c.mb_per_sec, 3), "", ""])
        m = g.measurement
        lat = m.latency
        w.writerow([rep.mode, rep.flavour, name, "all", m.n, g.bytes, f"{m.seconds or 0.0:.6f}",
                    _csv(m.rate, 1), _csv(g.mb_per_sec, 3),
                    f"{lat.p50_us:.1f}" if lat else "", f"{lat.p99_us:.1f}" if lat else ""])
    return buf.getvalue()


def write_histogram(rep: ModeReport, path: str) -> None:
    """Plot each group's latencies on log axes, p50 and p99 marked, to ``path`` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5), dpi=110)
    for name, g in rep.groups.items():
        us = [x * 1e6 for x in g.samples]
        L = g.measurement.latency
        if not us or L is None:
            continue
        lo, hi = max(min(us), 0.1), max(max(us), min(us) * 1.01, 0.2)
        bins = [lo * (hi / lo) ** (i / 80) for i in range(81)]
        ax.hist(us, bins=bins, alpha=0.6, label=f"{name} ({len(us):,})")
        for label, value, style in (("p50", L.p50_us, "--"), ("p99", L.p99_us, ":")):
            ax.axvline(value, linestyle=style, color="black", linewidth=1)
            ax.annotate(label, (value, ax.get_ylim()[1] * 0.95), rotation=90, fontsize=8, ha="right", va="top")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("latency (us, log scale)")
    ax.set_ylabel("count")
    ax.set_title(f"jetwire bench {rep.mode} ({rep.flavour}, {rep.msgs:,} msgs x {rep.size} B)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
