"""The one benchmark engine behind ``jetwire bench <mode>`` and ``jetwire bench compare``:
both produce the same result model (:class:`Measurement`), the plain and rich renderers
lay out the same report, the JSON keys people parse stay, and bad input fails with a
clear error before anything runs. Against a real embedded nats-server, small counts."""
from __future__ import annotations

import json
import os
import re
from typing import Any

import pytest
from _cli import run  # tests/integration/_cli.py
from rich.console import Console

from jetwire.cli import _engine, _modes
from jetwire.cli._render import render_plain, render_rich, write_csv
from jetwire.cli._results import CompareReport, GroupResult, Latency, Measurement, ModeReport, WorkerResult

CPUS = sorted(os.sched_getaffinity(0))




def rich_text(rep: ModeReport | CompareReport) -> str:
    con = Console(record=True, width=250, force_terminal=False, color_system=None)
    render_rich(rep, con)
    return con.export_text()


# ------------------------------------------------------------------------------ one model


def test_bench_mode_and_compare_produce_the_same_result_model(nats_server: Any) -> None:
    """A request-like workload through each view: both give a Measurement with a rate or
    latency percentiles and the client's CPU per message, and each JSON form carries it."""
    mode = _modes.run_mode(_modes.ModeSettings("request", msgs=300, size=16, subject="engine.req",
                                               server=nats_server.url))
    assert isinstance(mode, ModeReport) and mode.accounted
    [(name, m)] = list(mode.measurements())
    assert name == "req" and isinstance(m, Measurement)
    assert m.n == 300 and m.rate is not None and m.rate > 0
    assert m.latency is not None and m.latency.count == 300 and 0 < m.latency.p50_us <= m.latency.p99_us
    assert m.cpu_us is not None and m.cpu_us > 0
    js = mode.to_json()
    assert js["groups"]["req"]["latency"]["p50_us"] == m.latency.p50_us  # type: ignore[index]
    assert js["groups"]["req"]["cpu_us"] == m.cpu_us  # type: ignore[index]

    cmp = _engine.run_compare(["c"], ["jetwire"], rounds=1, scale=0.01, server=nats_server.url)
    assert isinstance(cmp, CompareReport) and not cmp.failed and cmp.rounds == 1
    [(name, m2)] = list(cmp.measurements())
    assert name == "c/jetwire" and isinstance(m2, Measurement)
    assert m2.n == 50 and m2.latency is not None and 0 < m2.latency.p50_us <= m2.latency.p99_us
    assert m2.cpu_us is not None and m2.cpu_us > 0
    median = cmp.to_json()["rows"]["c"]["clients"]["jetwire"]["median"]  # type: ignore[index]
    assert median["p50_us"] == m2.latency.p50_us and median["cpu_us"] == m2.cpu_us and median["n"] == 50


def test_a_measurement_round_trips_a_rows_result() -> None:
    row = {"rate": 1000.0, "n": 50, "seconds": 0.05, "p50_us": 10.0, "p99_us": 20.0, "p999_us": 30.0,
           "cpu_us": 3.5, "cpu_rate": 2000.0}
    m = Measurement.from_row(row)
    assert m.latency == Latency(p50_us=10.0, p99_us=20.0, p999_us=30.0)
    assert m.extra == {"cpu_rate": 2000.0} and m.cpu_us == 3.5
    assert m.row() == row


def test_group_figures_span_first_start_to_last_end() -> None:
    rs: list[WorkerResult] = [
        {"idx": 1, "msgs": 100, "bytes": 1600, "start": 10.0, "end": 11.0, "bad": 0, "cpu": 0.001},
        {"idx": 0, "msgs": 300, "bytes": 4800, "start": 10.5, "end": 12.0, "bad": 0, "latencies": [0.001, 0.003],
         "cpu": 0.003},
    ]
    g = GroupResult.of(rs)
    assert [c.client for c in g.clients] == [1, 2]
    assert g.measurement.n == 400 and g.measurement.seconds == 2.0 and g.measurement.rate == 200.0
    assert g.measurement.cpu_us == pytest.approx(10.0)
    assert g.measurement.latency is not None and g.measurement.latency.count == 2
    assert g.spread() == {"min": 100.0, "avg": 150.0, "max": 200.0, "stddev": 50.0}
    assert set(g.to_json()) == {"msgs", "bytes", "seconds", "msgs_per_sec", "mb_per_sec", "clients", "spread",
                                "latency", "cpu_us"}


# ------------------------------------------------------------------------------ renderers


def _synthetic_mode() -> ModeReport:
    rs: list[WorkerResult] = [{"idx": i, "msgs": 1500, "bytes": 1500 * 64, "start": 1.0, "end": 1.5 + i, "bad": 0,
                               "latencies": [0.0001 * (k + 1) for k in range(100)], "cpu": 0.01} for i in range(2)]
    rep = ModeReport(mode="request", flavour="sync", server="nats://127.0.0.1:4222", embedded_server=False,
                     msgs=3000, size=64, pub=2, sub=1, groups={"req": GroupResult.of(rs)}, client_cpus=[0])
    rep.checks.append(_modes.Check(True, "req: 3,000 of 3,000 requests answered"))
    return rep


def test_plain_and_rich_renderers_show_the_same_mode_report() -> None:
    rep = _synthetic_mode()
    plain = render_plain(rep)
    rich = rich_text(rep)
    assert "\x1b[" not in plain and not re.search(r"[\u2500-\u257f]", plain)  # no colours, no box drawing
    for text in (plain, rich):
        assert "jetwire bench request  3,000 msgs x 64 B, pub=2, sub=1, sync flavour" in text
        assert "pinned: server on any CPU, each client on CPU 0" in text
        assert re.search(r"req\s+all\s+3,000\s+1\.500\s+2,000\s+0\.12", text), text
        assert re.search(r"req\s+1,000\s+2,000\s+3,000\s+1,000", text), text  # per-client spread
        assert re.search(r"req\s+200\s+100\.0\s+5000\.0\s+9000\.0\s+9900\.0\s+10000\.0\s+10000\.0", text), text
        assert "client CPU: req 6.67 us/msg" in text
        assert "ok  req: 3,000 of 3,000 requests answered" in text
    assert write_csv(rep).splitlines()[-1] == "request,sync,req,all,3000,192000,1.500000,2000.0,0.122,5000.0,9900.0"


def test_plain_and_rich_renderers_show_the_same_compare_report() -> None:
    runs: dict[str, dict[str, list[dict[str, object]]]] = {
        "a": {"jetwire": [{"rate": 2000.0, "n": 5000, "cpu_us": 1.0}, {"rate": 4000.0, "n": 5000, "cpu_us": 3.0}],
              "nats-py": [{"rate": 1000.0, "n": 5000, "cpu_us": 4.0}, {"error": "boom"}]},
    }
    rep = CompareReport.of(runs, scale=0.01, server_cpus=[1], client_cpus=[0])
    assert rep.rounds == 2 and rep.clients == ["jetwire", "nats-py"] and rep.failed
    assert rep.failed_clients() == ["a/nats-py"]
    js = rep.to_json()
    row = js["rows"]["a"]  # type: ignore[index]
    assert row["clients"]["jetwire"]["median"] == {"rate": 3000.0, "n": 5000, "cpu_us": 2.0}
    assert row["ratios"] == {"jetwire": 3.0} and row["ratios_go"] == {} and row["n"] == 5000
    assert row["clients"]["nats-py"]["errors"] == ["boom"] and js["failed"] is True
    plain, rich = render_plain(rep), rich_text(rep)
    assert "pinned: server on CPU 1, each client on CPU 0" in plain
    assert re.search(r"jetwire\s+3,000 msg/s\s+cpu 2\.00 us/msg\s+py 3\.00x", plain), plain
    assert "(1 of 2 runs FAILED)" in plain
    assert "3,000/s" in rich and "3.00x" in rich and "1 failed" in rich and "row a nats-py failed: boom" in rich


# ------------------------------------------------------------------------------ the commands


def test_plain_flag_prints_text_for_both_commands(nats_server: Any) -> None:
    res = run("bench", "pub", "--msgs", 500, "--size", 16, "--plain", "-s", nats_server.url)
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("jetwire bench pub  500 msgs x 16 B, pub=1, sync flavour")
    assert "ok  pub: 500 of 500 published and flushed" in res.stdout
    res = run("bench", "compare", "--rows", "c", "--scale", "0.01", "--rounds", "1", "--clients", "jetwire",
              "--plain", "-s", nats_server.url)
    assert res.exit_code == 0, res.output
    assert "[c] 5k sequential requests to a responder on another connection" in res.stdout
    assert re.search(r"jetwire\s+p50\s+[\d.]+ us", res.stdout)


def test_bench_mode_pins_its_clients_and_says_so() -> None:
    cpu = CPUS[0]
    res = run("bench", "pub", "--msgs", 500, "--size", 16, "--client-cpus", cpu, "--server-cpus", CPUS[-1], "--json")
    rep = json.loads(res.stdout)
    assert res.exit_code == 0 and rep["accounted"] is True
    assert rep["client_cpus"] == [cpu] and rep["server_cpus"] == [CPUS[-1]] and rep["embedded_server"] is True


def test_bench_mode_hooks_see_storing_and_progress(nats_server: Any) -> None:
    stored: list[tuple[int, int]] = []
    ticks: list[int] = []
    started: list[bool] = []
    hooks = _modes.Hooks(on_started=started.append, storing=lambda done, of: stored.append((done, of)),
                         on_tick=lambda c: ticks.append(sum(c.done(g) for g, _, _ in c.spans)))
    rep = _modes.run_mode(_modes.ModeSettings("js-fetch", msgs=1500, size=16, subject="engine.fetch",
                                              stream="ENGINE_FETCH", server=nats_server.url), hooks)
    assert rep.accounted and rep.settings == {"storage": "file", "replicas": 1, "stream": "ENGINE_FETCH",
                                              "batch": 500, "acks": "explicit"}
    assert stored[0] == (0, 1500) and stored[-1] == (1500, 1500)
    assert started == [False] and ticks and ticks[-1] == 1500


# ------------------------------------------------------------------------------ bad input


def test_bad_settings_fail_clearly_before_anything_runs() -> None:
    with pytest.raises(_modes.UsageError, match="unknown mode 'nope'; known: pub, sub"):
        _modes.run_mode(_modes.ModeSettings("nope"))
    with pytest.raises(_modes.UsageError, match="kv-put needs --pub of at least 1"):
        _modes.run_mode(_modes.ModeSettings("kv-put", pub=0))
    with pytest.raises(_engine.BenchError, match="--server-cpus pins the embedded server"):
        _engine.run_compare(["a"], ["jetwire"], server="nats://127.0.0.1:4222", server_cpus={CPUS[0]})


def test_a_client_that_cannot_connect_fails_the_run_with_its_reason() -> None:
    with pytest.raises(_engine.BenchError, match=r"^pub #1: .*(Error|refused)"):
        _modes.run_mode(_modes.ModeSettings("pub", msgs=10, server="nats://127.0.0.1:1", conn={}),)


@pytest.mark.parametrize("args,message", [
    (["bench", "pub", "--client-cpus", "0-x"], "bad CPU list '0-x'"),
    (["bench", "pub", "--server-cpus", str(CPUS[0]), "-s", "nats://127.0.0.1:4222"], "--server-cpus pins"),
    (["bench", "compare", "--server-cpus", "99999"], "does not offer"),
    (["bench", "kv-put", "--pub", "0"], "kv-put needs --pub of at least 1"),
])
def test_bad_command_lines_are_usage_errors(args: list[str], message: str) -> None:
    res = run(*args)
    assert res.exit_code == 2, res.output
    err = res.stderr
    assert "Error:" in err and message in err and "Traceback" not in err
