"""The ``jetwire`` command against a real nats-server: in-process through click's
``CliRunner`` and as a subprocess (``python -m jetwire``). JSON output parses, exit
codes are right, bad arguments give one line and a non-zero status, bench runs account
for every message, and the admin verbs round-trip streams, consumers, kv and objects."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import rich  # noqa: F401
from _cli import like_a_terminal, run  # tests/integration/_cli.py

import jetwire
from jetwire import _units
from jetwire.cli import _stats
from jetwire.events import parse, render

ROOT = Path(__file__).resolve().parents[2]


def uid(prefix: str = "T") -> str:
    return f"{prefix}{uuid.uuid4().hex[:10].upper()}"




def stderr_of(res: Any) -> str:
    try:
        return res.stderr
    except ValueError:
        return ""


def js_out(res: Any) -> Any:
    assert res.exit_code == 0, (res.output, stderr_of(res))
    return json.loads(res.stdout)


def jetwire_cmd(*args: Any) -> list[str]:
    return [sys.executable, "-m", "jetwire", *[str(a) for a in args]]


def sub_run(*args: Any, timeout: float = 60, **kw: Any) -> subprocess.CompletedProcess:
    return subprocess.run(jetwire_cmd(*args), capture_output=True, text=True, timeout=timeout, **kw)


def assert_one_line_error(text: str, contains: str = "") -> None:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, text
    assert lines[0].startswith("error: "), text
    assert "Traceback" not in text
    assert contains in lines[0], text


# ------------------------------------------------------------------------------ basics


def test_version_help_and_module_entry() -> None:
    res = run("--version")
    assert res.exit_code == 0 and res.stdout.startswith(f"jetwire {jetwire.__version__}")
    out = sub_run("--version")
    assert out.returncode == 0 and out.stdout.startswith("jetwire ")
    res = run("bench", "--help")
    assert res.exit_code == 0
    for mode in ("pub", "sub", "pubsub", "request", "reply", "js-pub", "js-pub-async", "js-fetch", "js-consume",
                 "js-ordered", "kv-put", "kv-get", "kv", "compare"):
        assert mode in res.stdout


@pytest.mark.parametrize("args", [
    ["bench", "nonsense"],
    ["bench", "pub", "--msgs", "0"],
    ["bench", "pub", "--size", "lots"],
    ["bench", "js-fetch", "--acks", "maybe"],
    ["bench", "compare", "--rows", "a,zz"],
    ["bench", "compare", "--client-cpus", "0-x"],
    ["bench", "compare", "--server-cpus", "0", "-s", "nats://127.0.0.1:4222"],
    ["bench", "pub", "--histogram", "x.png"],
    ["stream", "add"],
    ["stream", "purge", "S", "--seq", "3", "--keep", "1", "-f"],
    ["consumer", "add", "S", "C", "--deliver", "yesterday-ish"],
    ["kv", "add", "B", "--history", "100"],
    ["pub", "subj", "x", "-H", "no-colon"],
])
def test_bad_arguments_fail_with_usage_error(args: list[str]) -> None:
    res = run(*args)
    assert res.exit_code == 2, res.output
    err = stderr_of(res) or res.output
    assert "Error:" in err and "Traceback" not in err


def test_server_errors_are_one_line(nats_url: str) -> None:
    res = run("stream", "info", uid("NOPE"), "-s", nats_url)
    assert res.exit_code == 1
    assert_one_line_error(stderr_of(res) or res.output, "stream not found")
    out = sub_run("stream", "ls", "--server", "nats://127.0.0.1:1")
    assert out.returncode == 1
    assert_one_line_error(out.stderr, "connect")
    assert out.stdout == ""
    out = sub_run("req", uid("nobody."), "hi", "-s", nats_url)
    assert out.returncode == 1
    assert_one_line_error(out.stderr, "no responders")


def test_value_parsing_and_stats() -> None:
    assert _units.parse_size("1KB") == 1024 and _units.parse_size("2MiB") == 2 * 1024**2
    assert _units.parse_size("128") == 128 and _units.parse_size("-1") == -1
    assert _units.parse_duration("1m30s") == 90 and _units.parse_duration("500ms") == 0.5
    assert _units.parse_duration("2") == 2.0
    with pytest.raises(ValueError):
        _units.parse_duration("soon")
    assert _stats.split_evenly(10, 3) == [4, 3, 3]
    sp = _stats.spread([1.0, 2.0, 3.0])
    assert sp["min"] == 1 and sp["max"] == 3 and sp["avg"] == 2 and abs(sp["stddev"] - 0.8165) < 1e-3
    assert _stats.percentile([1, 2, 3, 4], 50) == 2 and _stats.percentile([1, 2, 3, 4], 99) == 4
    line = render(parse({"type": "io.nats.jetstream.advisory.v1.stream_action", "action": "create",
                         "stream": "ORDERS", "timestamp": "2026-01-02T03:04:05.1Z"}))
    assert line == "03:04:05 [Stream Create] ORDERS"


def test_auth_and_tls_options(nats_server_factory: Any, tmp_path: Path) -> None:
    s = nats_server_factory(jetstream=False, auth={"user": "alice", "password": "s3cret"})
    res = run("pub", "x", "y", "-s", s.url)
    assert res.exit_code == 1 and "Traceback" not in (stderr_of(res) + res.output)
    assert run("pub", "x", "y", "--user", "alice", "--password", "s3cret", "-s", s.url).exit_code == 0
    # connection options on the group apply to the command
    assert run("--user", "alice", "--password", "s3cret", "-s", s.url, "pub", "x", "y").exit_code == 0
    # the `nats` CLI's environment variables, below every option
    env = {"NATS_URL": s.url, "NATS_USER": "alice", "NATS_PASSWORD": "s3cret"}
    assert sub_run("pub", "x", "y", env={**os.environ, **env}).returncode == 0
    out = sub_run("pub", "x", "y", env={**os.environ, **env, "NATS_PASSWORD": "wrong"})
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert sub_run("pub", "x", "y", "--password", "s3cret", env={**os.environ, **env, "NATS_PASSWORD": "wrong"}
                   ).returncode == 0
    assert sub_run("--password", "s3cret", "pub", "x", "y", env={**os.environ, **env, "NATS_PASSWORD": "wrong"}
                   ).returncode == 0

    import jetwire.testing.certs as certs

    files = certs.make_tls_files(tmp_path / "tls")
    t = nats_server_factory(jetstream=False, tls=certs.server_tls_config(files, verify=True))
    tls = ["--tls-ca", files["ca_file"]]
    mine = ["--tls-cert", files["client_cert"], "--tls-key", files["client_key"]]
    assert run("pub", "x", "y", "-s", t.url, *tls).exit_code == 1  # no client certificate
    assert run("pub", "x", "y", "-s", t.url, *tls, *mine).exit_code == 0
    res = run("pub", "x", "y", "-s", t.url, "--tls-cert", files["client_cert"])
    assert res.exit_code == 1
    assert_one_line_error(stderr_of(res), "--tls-key")


# ------------------------------------------------------------------------------ admin


def test_stream_and_consumer_round_trip(nats_url: str) -> None:
    s, subj = uid("S"), uid("orders.").lower()
    info = js_out(run("stream", "add", s, "--subjects", f"{subj}.>", "--max-age", "1h", "--storage", "memory",
                      "--json", "-s", nats_url))
    assert info["config"]["name"] == s and info["config"]["subjects"] == [f"{subj}.>"]
    assert info["config"]["max_age"] == 3600 * 10**9
    res = run("pub", f"{subj}.new", "order {count}", "--count", "3", "-s", nats_url)
    assert res.exit_code == 0
    assert s in js_out(run("stream", "ls", "--names", "--json", "-s", nats_url))
    listed = js_out(run("stream", "ls", "--json", "-s", nats_url))
    assert [x["state"]["messages"] for x in listed if x["config"]["name"] == s] == [3]
    msg = js_out(run("stream", "get", s, "2", "--json", "-s", nats_url))
    assert msg["seq"] == 2 and msg["data"] == "order 2"
    last = js_out(run("stream", "get", s, "--last-for", f"{subj}.new", "--json", "-s", nats_url))
    assert last["seq"] == 3
    edited = js_out(run("stream", "edit", s, "--description", "the orders", "--json", "-s", nats_url))
    assert edited["config"]["description"] == "the orders"
    human = run("stream", "info", s, "-s", nats_url)
    assert human.exit_code == 0 and "the orders" in human.stdout and "Messages" in human.stdout

    c = js_out(run("consumer", "add", s, "C1", "--filter", f"{subj}.>", "--ack", "explicit", "--json",
                   "-s", nats_url))
    assert c["name"] == "C1" and c["config"]["ack_policy"] == "explicit"
    res = run("consumer", "next", s, "C1", "--count", "2", "--json", "-s", nats_url)
    got = [json.loads(line) for line in res.stdout.splitlines()]
    assert res.exit_code == 0 and [g["data"] for g in got] == ["order 1", "order 2"]
    assert got[1]["metadata"]["stream_seq"] == 2
    ci = js_out(run("consumer", "info", s, "C1", "--json", "-s", nats_url))
    assert ci["num_ack_pending"] == 0 and ci["delivered"]["stream_seq"] == 2 and ci["num_pending"] == 1
    assert [x["name"] for x in js_out(run("consumer", "ls", s, "--json", "-s", nats_url))] == ["C1"]
    res = run("consumer", "next", s, "C1", "--count", "5", "--timeout", "300ms", "--raw", "-s", nats_url)
    assert res.exit_code == 1 and res.stdout.strip() == "order 3"
    assert_one_line_error(stderr_of(res), "received 1 of 5")

    purged = js_out(run("stream", "purge", s, "-f", "--json", "-s", nats_url))
    assert purged["stream"]["state"]["messages"] == 0
    assert run("consumer", "rm", s, "C1", "-f", "-s", nats_url).exit_code == 0
    assert run("stream", "rm", s, "-f", "-s", nats_url).exit_code == 0
    assert run("stream", "info", s, "-s", nats_url).exit_code == 1
    # no --force and no confirmation: nothing is deleted
    res = run("stream", "rm", s, "-s", nats_url, input="n\n")
    assert res.exit_code == 1


def test_kv_round_trip(nats_url: str) -> None:
    b = uid("KV")
    st = js_out(run("kv", "add", b, "--history", "5", "--json", "-s", nats_url))
    assert st["bucket"] == b and st["history"] == 5
    assert run("kv", "put", b, "color", "red", "-s", nats_url).exit_code == 0
    put = js_out(run("kv", "put", b, "color", "--json", "-s", nats_url, input="blue"))
    assert put["revision"] == 2
    e = js_out(run("kv", "get", b, "color", "--json", "-s", nats_url))
    assert e["value"] == "blue" and e["revision"] == 2 and e["operation"] == "PUT"
    old = run("kv", "get", b, "color", "--revision", "1", "--raw", "-s", nats_url)
    assert old.stdout == "red"
    hist = js_out(run("kv", "history", b, "color", "--json", "-s", nats_url))
    assert [h["value"] for h in hist] == ["red", "blue"]
    assert b in [x["bucket"] for x in js_out(run("kv", "ls", "--json", "-s", nats_url))]
    watched = js_out(run("kv", "watch", b, "--count", "1", "--json", "-s", nats_url))
    assert watched["key"] == "color" and watched["value"] == "blue"
    assert run("kv", "del", b, "color", "-f", "-s", nats_url).exit_code == 0
    res = run("kv", "get", b, "color", "-s", nats_url)
    assert res.exit_code == 1
    assert_one_line_error(stderr_of(res), "deleted")
    assert js_out(run("kv", "info", b, "--json", "-s", nats_url))["values"] == 3
    assert run("kv", "rm", b, "-f", "-s", nats_url).exit_code == 0
    assert run("kv", "info", b, "-s", nats_url).exit_code == 1


def test_user_text_is_shown_as_given_never_as_rich_markup(nats_url: str) -> None:
    """Square brackets in values, descriptions and metadata are text, not markup."""
    s, b = uid("S"), uid("KV")
    assert run("stream", "add", s, "--subjects", uid("m.").lower(), "--storage", "memory", "--description",
               "[bold]orders[/bold] [numbers] and x", "-s", nats_url).exit_code == 0
    try:
        info = run("stream", "info", s, "-s", nats_url)
        assert info.exit_code == 0 and "[bold]orders[/bold] [numbers] and x" in info.stdout
    finally:
        run("stream", "rm", s, "-f", "-s", nats_url)
    assert run("kv", "add", b, "--history", "3", "-s", nats_url).exit_code == 0
    try:
        assert run("kv", "put", b, "k", "[numbers] and x", "-s", nats_url).exit_code == 0
        assert "[numbers] and x" in run("kv", "get", b, "k", "-s", nats_url).stdout
        hist = run("kv", "history", b, "k", "-s", nats_url)
        assert hist.exit_code == 0 and "[numbers] and x" in hist.stdout
    finally:
        run("kv", "rm", b, "-f", "-s", nats_url)
    with jetwire.connect(nats_url) as nc:
        name = uid("svc").lower()
        svc = jetwire.micro.add_service(nc, name=name, version="1.0.0", description="[red]cli[/red]",
                                        metadata={"[x]": "[y]"})
        svc.add_endpoint("e", lambda r: r.respond(b""), subject=f"{name}.e", metadata={"[k]": "[v]"})
        nc.flush()
        res = run("micro", "info", name, "-s", nats_url, "--timeout", "500ms")
        assert res.exit_code == 0, stderr_of(res)
        assert "[red]cli[/red]" in res.stdout and "[x]=[y]" in res.stdout and "[k]=[v]" in res.stdout


def test_object_round_trip(nats_url: str, tmp_path: Path) -> None:
    b = uid("OBJ")
    data = os.urandom(300_000)
    src = tmp_path / "blob.bin"
    src.write_bytes(data)
    st = js_out(run("object", "add", b, "--json", "-s", nats_url))
    assert st["bucket"] == b
    info = js_out(run("object", "put", b, str(src), "--name", "blob", "--json", "-s", nats_url))
    assert info["name"] == "blob" and info["size"] == len(data) and info["digest"].startswith("SHA-256=")
    assert [o["name"] for o in js_out(run("object", "ls", b, "--json", "-s", nats_url))] == ["blob"]
    assert b in [x["bucket"] for x in js_out(run("object", "ls", "--json", "-s", nats_url))]
    assert js_out(run("object", "info", b, "blob", "--json", "-s", nats_url))["digest"] == info["digest"]
    dst = tmp_path / "out.bin"
    res = run("object", "get", b, "blob", "-O", str(dst), "-s", nats_url)
    assert res.exit_code == 0 and dst.read_bytes() == data
    res = run("object", "get", b, "blob", "-O", str(dst), "-s", nats_url)
    assert res.exit_code == 1  # exists; not overwritten without --force
    out = subprocess.run(jetwire_cmd("object", "get", b, "blob", "-O", "-", "-s", nats_url), capture_output=True,
                         timeout=60)
    assert out.returncode == 0 and out.stdout == data
    assert run("object", "rm", b, "blob", "-f", "-s", nats_url).exit_code == 0
    assert run("object", "info", b, "blob", "-s", nats_url).exit_code == 1
    assert run("object", "rm", b, "-f", "-s", nats_url).exit_code == 0


# ------------------------------------------------------------------------------ pub / sub / req / events


def _wait_line(stream: Any, marker: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    box: list[str] = []

    def reader() -> None:
        for line in stream:
            box.append(line)
            if marker in line:
                return

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    t.join(max(0.1, deadline - time.monotonic()))
    assert any(marker in ln for ln in box), f"never saw {marker!r}: {box}"


def test_sub_count_pub_and_req(nats_url: str) -> None:
    subj = uid("greet.").lower()
    p = subprocess.Popen(jetwire_cmd("sub", f"{subj}.*", "--count", "2", "--json", "-s", nats_url),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_line(p.stderr, "Subscribing on")
        assert run("pub", f"{subj}.a", "hello", "-H", "X-Id:1", "-s", nats_url).exit_code == 0
        assert run("pub", f"{subj}.b", "-", "-s", nats_url, input="from stdin").exit_code == 0
        out, _ = p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0
    msgs = [json.loads(x) for x in out.splitlines()]
    assert [m["data"] for m in msgs] == ["hello", "from stdin"]
    assert msgs[0]["headers"] == {"X-Id": ["1"]} and msgs[1]["subject"] == f"{subj}.b"

    nc = jetwire.connect(nats_url)
    try:
        nc.subscribe(f"{subj}.svc", cb=lambda m: m.respond(m.data.upper()))
        nc.flush()
        rep = js_out(run("req", f"{subj}.svc", "ping", "--json", "-s", nats_url))
        assert rep["data"] == "PING" and rep["rtt_us"] > 0
    finally:
        nc.close()


def test_reply_answers_requests_from_a_template_or_echo(nats_url: str) -> None:
    subj = uid("svc.").lower()
    p = subprocess.Popen(jetwire_cmd("reply", subj, "#{count} for {subject}: {request}", "--count", "2",
                                     "-s", nats_url), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    q = subprocess.Popen(jetwire_cmd("reply", f"{subj}.echo", "--echo", "--queue", "q", "-q", "-s", nats_url),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=like_a_terminal)
    try:
        _wait_line(p.stderr, "Answering requests on")
        _wait_line(q.stderr, "Answering requests on")
        with jetwire.connect(nats_url) as nc:
            nc.publish(subj, b"no reply wanted")  # not counted, not answered
            assert nc.request(subj, b"{count}", timeout=5).data == f"#1 for {subj}: {{count}}".encode()
            assert nc.request(subj, b"b", timeout=5).data == f"#2 for {subj}: b".encode()
            echoed = nc.request(f"{subj}.echo", b"same", headers={"K": "v"}, timeout=5)
            assert echoed.data == b"same" and echoed.headers["K"] == "v"
        out, _ = p.communicate(timeout=20)
        assert p.returncode == 0 and out.count("Answered a request") == 2
        q.send_signal(signal.SIGINT)  # Ctrl-C: says what was done, exits 130 as every command does
        _, err = q.communicate(timeout=60)
        assert q.returncode == 130 and "interrupted: 1 answered" in err and "Traceback" not in err
    finally:
        for proc in (p, q):
            if proc.poll() is None:
                proc.kill()
    res = run("reply", subj, "x", "--echo", "-s", nats_url)
    assert res.exit_code == 2 and "TEMPLATE or --echo" in (stderr_of(res) or res.output)


def test_ctrl_c_exits_130_with_what_was_done(nats_url: str) -> None:
    for cmd, ready, done in ((["sub", uid("x.").lower()], "Subscribing on", "interrupted: 0 received"),
                             (["events"], "Listening for advisories", "interrupted: 0 received")):
        p = subprocess.Popen(jetwire_cmd(*cmd, "-s", nats_url), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, preexec_fn=like_a_terminal)
        try:
            _wait_line(p.stderr, ready)
            p.send_signal(signal.SIGINT)
            _, err = p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
        assert p.returncode == 130, (cmd, err)
        assert done in err and "Traceback" not in err


def test_events_renders_advisories(nats_url: str) -> None:
    s = uid("EV")
    procs = {fmt: subprocess.Popen(jetwire_cmd("events", "--count", "2", "--format", fmt, "--kind", "stream_action",
                                               "--kind", "io.nats.jetstream.advisory.v1.consumer_action",
                                               "-s", nats_url),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for fmt in ("json", "cloudevents", "text")}
    outs = {}
    try:
        for p in procs.values():
            _wait_line(p.stderr, "Listening")
        assert run("stream", "add", s, "--subjects", s.lower(), "-s", nats_url).exit_code == 0
        with jetwire.connect(nats_url) as nc:
            nc.jetstream().create_consumer(s, durable_name="D")
        for fmt, p in procs.items():
            outs[fmt], _ = p.communicate(timeout=20)
            assert p.returncode == 0, fmt
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
        run("stream", "rm", s, "-f", "-s", nats_url)
    first, second = (parse(line) for line in outs["json"].splitlines())  # one document a line
    assert first.type == "io.nats.jetstream.advisory.v1.stream_action" and first.stream == s
    assert second.type == "io.nats.jetstream.advisory.v1.consumer_action" and second.consumer == "D"
    ces = [json.loads(line) for line in outs["cloudevents"].splitlines()]
    assert [c["type"] for c in ces] == [first.type, second.type]
    assert all(c["specversion"] == "1.0" and c["source"] == "urn:nats:jetstream" for c in ces)
    lines = outs["text"].splitlines()
    assert len(lines) == 2 and lines[0].endswith(f"[Stream Create] {s}")
    assert lines[1].endswith(f"[Consumer Create] {s} > D")
    assert render(first) == lines[0]  # the same advisory, rendered by the library


# ------------------------------------------------------------------------------ server


def test_server_command_runs_and_stops_on_sigterm(tmp_path: Path) -> None:
    store = tmp_path / "store"
    p = subprocess.Popen(jetwire_cmd("server", "--port", "0", "--store-dir", store), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        assert line.startswith("nats-server listening on nats://127.0.0.1:"), line
        url = line.split()[-1]
        nc = jetwire.connect(url)
        js = nc.jetstream()
        js.create_stream(name="KEEP", subjects=["keep"])
        assert js.publish("keep", b"x").seq == 1
        nc.close()
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0
    assert "stopped" in p.stderr.read()
    assert store.is_dir()  # a given store directory is kept


def test_server_command_says_why_the_server_did_not_start(tmp_path: Path) -> None:
    conf = tmp_path / "bad.conf"
    conf.write_text("x y z\n")
    p = subprocess.run(jetwire_cmd("server", "--port", "0", "--config", conf), capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 1
    err = p.stderr.strip()
    assert err.startswith("error: nats-server on") and "Parse error" in err, err  # the reason, not just its heading
    assert "\n" not in err and "Traceback" not in err


# ------------------------------------------------------------------------------ bench

BENCH_CASES = [
    ("pub", [], "sync"),
    ("pubsub", ["--sub", "2"], "aio"),
    ("request", [], "sync"),
    ("js-pub", [], "aio"),
    ("js-pub-async", ["--pub", "2"], "sync"),
    ("js-fetch", ["--batch", "200"], "sync"),
    ("js-consume", ["--sub", "2", "--acks", "none"], "aio"),
    ("js-ordered", [], "sync"),
    ("kv-put", [], "sync"),
    ("kv-get", [], "aio"),
]


@pytest.mark.parametrize("mode,extra,flavour", BENCH_CASES, ids=[c[0] for c in BENCH_CASES])
def test_bench_modes_account_for_every_message(nats_url: str, mode: str, extra: list[str], flavour: str) -> None:
    name = uid("B")
    n = 2000
    res = run("bench", mode, "--msgs", n, "--size", 64, "--subject", name.lower(), "--stream", name, "--bucket", name,
              f"--{flavour}", "--json", "-s", nats_url, *extra)
    rep = js_out(res)
    assert rep["accounted"] is True and rep["checks"] and all(c["ok"] for c in rep["checks"])
    assert rep["mode"] == mode and rep["flavour"] == flavour
    groups = rep["groups"]
    assert groups
    for g in groups.values():
        assert g["msgs_per_sec"] > 0 and g["mb_per_sec"] > 0
        assert set(g["spread"]) == {"min", "avg", "max", "stddev"}
    total = {"pubsub": n * 3, "js-ordered": n}.get(mode, n)
    assert sum(g["msgs"] for g in groups.values()) == total
    if mode in ("request", "js-pub", "kv-put", "kv-get"):
        lat = next(iter(groups.values()))["latency"]
        assert lat["count"] == n and 0 < lat["p50_us"] <= lat["p90_us"] <= lat["p99_us"] <= lat["max_us"]


@pytest.mark.parametrize("verb", ["put", "get"])
def test_bench_kv_put_and_get_as_the_nats_cli_names_them(nats_url: str, verb: str) -> None:
    """``bench kv put|get`` (API.md's ``kv``, natscli's ``nats bench kv put|get``) run the
    kv-put and kv-get workloads."""
    name = uid("B")
    res = run("bench", "kv", verb, "--msgs", 300, "--size", 16, "--bucket", name, "--json", "-s", nats_url)
    rep = js_out(res)
    assert rep["mode"] == f"kv-{verb}" and rep["accounted"] is True and all(c["ok"] for c in rep["checks"])
    assert sum(g["msgs"] for g in rep["groups"].values()) == 300


def test_bench_subprocess_embedded_server_csv(tmp_path: Path) -> None:
    csv_path = tmp_path / "out.csv"
    out = sub_run("bench", "pubsub", "--msgs", "3000", "--pub", "2", "--sub", "2", "--csv", csv_path, "--no-progress")
    assert out.returncode == 0, out.stderr
    assert "pub+sub" in out.stdout and "received 3,000 of 3,000" in out.stdout
    rows = csv_path.read_text().splitlines()
    assert rows[0].startswith("mode,flavour,group,client,msgs")
    assert sum(1 for r in rows if r.startswith("pubsub,sync,sub,")) == 3  # two clients and "all"


def test_bench_lost_messages_fail_the_run(nats_url: str) -> None:
    subj = uid("lossy.").lower()
    p = subprocess.Popen(jetwire_cmd("bench", "sub", "--msgs", "10", "--size", "1", "--grace", "1",
                                     "--subject", subj, "-s", nats_url),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_line(p.stderr, "ready: waiting")
        assert run("pub", subj, "x", "--count", "5", "-q", "-s", nats_url).exit_code == 0
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 1
    assert "received 5 of 10" in out
    assert_one_line_error(err, "messages not accounted for")


def test_bench_histogram(nats_url: str, tmp_path: Path) -> None:
    import matplotlib  # noqa: F401 - the plot extra is part of the test install

    png = tmp_path / "lat.png"
    res = run("bench", "request", "--msgs", 300, "--subject", uid("h.").lower(), "--histogram", png, "-s", nats_url)
    assert res.exit_code == 0, stderr_of(res)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "p50" in res.stdout and "p99" in res.stdout


def test_bench_compare_smoke(nats_server: Any) -> None:
    res = run("bench", "compare", "--rows", "a,d,f", "--scale", "0.01", "--rounds", "1", "--clients", "jetwire",
              "--json", "-s", nats_server.url, "--monitor", nats_server.monitor_url)
    summary = js_out(res)
    assert summary["failed"] is False
    for r in ("a", "d", "f"):
        m = summary["rows"][r]["clients"]["jetwire"]["median"]
        assert m["rate"] > 0 and m["n"] == max(1, int({"a": 500_000, "d": 5_000, "f": 100_000}[r] * 0.01))


def test_benchmarks_compare_script_is_the_same_implementation(nats_server: Any) -> None:
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "compare.py"), "--rows", "c", "--scale", "0.01",
                          "--rounds", "1", "--clients", "jetwire.aio", "--json", "--server", nats_server.url],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["rows"]["c"]["clients"]["jetwire.aio"]["median"]["p50_us"] > 0


def test_bench_uses_nats_url_when_set(nats_url: str) -> None:
    out = sub_run("bench", "pub", "--msgs", "100", "--json", env={**os.environ, "NATS_URL": nats_url}, timeout=120)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["server"] == nats_url and report["embedded_server"] is False
    out = sub_run("bench", "pub", "--msgs", "100", "--json", env={k: v for k, v in os.environ.items()
                                                                   if k != "NATS_URL"}, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["embedded_server"] is True


def test_compare_pins_the_embedded_server_and_each_client() -> None:
    """The cross-core proxy in one command: the embedded server on one CPU, each client
    process on another; the summary says so, and the rows still account for every message."""
    cpus = sorted(os.sched_getaffinity(0))
    srv_cpu, cli_cpu = cpus[-1], cpus[0]
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "compare.py"), "--rows", "a,c", "--scale", "0.01",
                          "--rounds", "1", "--clients", "jetwire,jetwire.aio", "--server-cpus", str(srv_cpu),
                          "--client-cpus", str(cli_cpu), "--json"], capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["server_cpus"] == [srv_cpu] and summary["client_cpus"] == [cli_cpu]
    assert summary["failed"] is False
    assert summary["rows"]["c"]["clients"]["jetwire"]["median"]["p50_us"] > 0
    text = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "compare.py"), "--rows", "c", "--scale", "0.01",
                           "--rounds", "1", "--clients", "jetwire", "--client-cpus", str(cli_cpu)],
                          capture_output=True, text=True, timeout=180)
    assert text.returncode == 0, text.stderr
    assert f"pinned: server on any CPU, each client on CPU {cli_cpu}" in text.stdout


def test_demo_small() -> None:
    res = run("demo", "--scale", "0.02", "--rows", "c")
    assert res.exit_code == 0, (res.output, stderr_of(res))
    for mode in ("pub", "pubsub", "request", "js-pub-async", "js-fetch"):
        assert f"$ jetwire bench {mode} " in res.stdout
    assert "FAILED" not in res.stdout and "demo finished" in res.stdout and "every message was accounted for" in res.stdout
    assert "sequential requests" in res.stdout  # the compare table


# ------------------------------------------------------------------------------ compare peers
# jetwire's rows come with the package; the nats-py peer's are benchmarks/natspy_rows.py
# in the checkout (--peers DIR), never in the package.

# the nats.go peer runs where Debian's golang-go and golang-github-nats-io-go-nats-dev are
HAVE_GO = shutil.which("go") is not None and Path("/usr/share/gocode/src/github.com/nats-io/nats.go").is_dir()
GO = {"nats.go"} if HAVE_GO else set()

# makes `import nats` fail in a child interpreter, as in a venv without nats-py
_NO_NATS_PY = (
    "import sys\n"
    "class _Hide:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name.split('.')[0] == 'nats':\n"
    "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
    "        return None\n"
    "sys.meta_path.insert(0, _Hide())\n"
    "from jetwire.__main__ import main\n"
    "sys.exit(main())\n"
)


def _compare_args(server: Any, *extra: Any) -> list[str]:
    return ["bench", "compare", "--rows", "a,c", "--scale", "0.002", "--rounds", "1", "--json",
            "-s", server.url, "--monitor", server.monitor_url, *[str(e) for e in extra]]


def _ran_jetwire_only(summary: Any, also: Any = frozenset()) -> None:
    assert summary["failed"] is False
    for r in ("a", "c"):
        assert set(summary["rows"][r]["clients"]) == {"jetwire", "jetwire.aio"} | set(also)
        for v in summary["rows"][r]["clients"].values():
            assert v["median"] is not None and v["failed"] == 0


def test_compare_runs_every_row_for_every_client_from_one_implementation(nats_server: Any) -> None:
    """Every row of every client, nats-py's from the checkout (the default --peers), each
    accounted for by the harness: the one row implementation works with each client."""
    res = run("bench", "compare", "--rows", "all", "--scale", "0.01", "--rounds", "1", "--json",
              "-s", nats_server.url, "--monitor", nats_server.monitor_url)
    if res.exit_code != 0:  # name the rows that failed and why (the whole JSON is too long to read)
        try:
            rows = json.loads(res.stdout)["rows"]
            why = {(r, c): v["errors"] for r, row in rows.items() for c, v in row["clients"].items() if v["failed"]}
        except Exception:
            why = {"output": res.output[-2000:]}
        raise AssertionError(f"bench compare failed: {why}; {stderr_of(res)}")
    summary = js_out(res)
    assert summary["failed"] is False, summary
    assert summary["clients"] == ["jetwire", "jetwire.aio", *sorted(GO), "nats-py", "raw"]
    assert set(summary["rows"]) == {"a", "b", "c", "d", "e", "f", "f2", "g", "h", "m", "s"}
    for r, row in summary["rows"].items():
        go = GO if r not in ("g", "m") else set()  # nats.go 1.22: no continuous pull, no metadata row
        expected = {"jetwire", "jetwire.aio"} | ({"nats-py"} if r != "g" else set()) | go | (
            {"raw"} if r in ("a", "c", "d", "e", "f", "f2", "h", "s") else set())
        assert set(row["clients"]) == expected, r
        for c, v in row["clients"].items():
            assert v["median"] is not None and v["failed"] == 0, (r, c, v)
            assert v["median"]["cpu_us"] > 0, (r, c)
        if r != "g":
            assert set(row["ratios"]) == {"jetwire", "jetwire.aio"}
            assert set(row["ratios_go"]) == ({"jetwire", "jetwire.aio"} if go else set())
            assert set(row["ratios_raw"]) == ({"jetwire", "jetwire.aio"} if "raw" in row["clients"] else set())
    h = summary["rows"]["h"]["clients"]["jetwire"]["median"]
    assert 0 < h["p50_us"] <= h["p99_us"] <= h["p999_us"]


def test_compare_without_peer_rows_says_so_in_one_line_and_runs_jetwire(nats_server: Any, tmp_path: Path) -> None:
    res = run(*_compare_args(nats_server, "--peers", tmp_path))
    assert res.exit_code == 0, (res.output, stderr_of(res))
    lines = [ln for ln in stderr_of(res).splitlines() if "rows unavailable" in ln]
    assert lines == [f"nats.go rows unavailable: no natsgo_rows.py in {tmp_path}; running the other clients' rows",
                     f"nats-py rows unavailable: no natspy_rows.py in {tmp_path}; running the other clients' rows",
                     f"raw rows unavailable: no raw_rows.py in {tmp_path}; running the other clients' rows"]
    _ran_jetwire_only(json.loads(res.stdout))
    # the same through the environment variable
    out = sub_run(*_compare_args(nats_server), timeout=120, env={**os.environ, "JETWIRE_BENCH_PEERS": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    assert f"nats-py rows unavailable: no natspy_rows.py in {tmp_path}" in out.stderr
    assert "Traceback" not in out.stderr
    _ran_jetwire_only(json.loads(out.stdout))


def test_compare_without_nats_py_installed_says_so_in_one_line(nats_server: Any) -> None:
    out = subprocess.run([sys.executable, "-c", _NO_NATS_PY, *_compare_args(nats_server)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert [ln for ln in out.stderr.splitlines() if "nats-py" in ln] == [
        "nats-py rows unavailable: nats-py is not installed (pip install nats-py); running the other clients' rows"]
    _ran_jetwire_only(json.loads(out.stdout), GO | {"raw"})


def test_compare_without_go_says_how_to_install_it_in_one_line(nats_server: Any, tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()  # a PATH without go
    out = sub_run(*_compare_args(nats_server, "--clients", "jetwire,jetwire.aio,nats.go"), timeout=120,
                  env={**os.environ, "PATH": str(tmp_path / "bin")})
    assert out.returncode == 1
    assert_one_line_error(out.stderr, "nats.go rows unavailable: go is not installed (apt-get install golang-go "
                                      "golang-github-nats-io-go-nats-dev)")
    out = sub_run(*_compare_args(nats_server), timeout=120, env={**os.environ, "PATH": str(tmp_path / "bin")})
    assert out.returncode == 0, out.stderr
    assert [ln for ln in out.stderr.splitlines() if "nats.go" in ln] == [
        "nats.go rows unavailable: go is not installed (apt-get install golang-go golang-github-nats-io-go-nats-dev)"
        "; running the other clients' rows"]
    summary = json.loads(out.stdout)
    for r in ("a", "c"):
        assert set(summary["rows"][r]["clients"]) == {"jetwire", "jetwire.aio", "nats-py", "raw"}


def test_compare_asked_for_nats_py_without_its_rows_fails(nats_server: Any, tmp_path: Path) -> None:
    out = sub_run(*_compare_args(nats_server, "--clients", "jetwire,nats-py", "--peers", tmp_path), timeout=120)
    assert out.returncode == 1
    assert_one_line_error(out.stderr, "nats-py rows unavailable: no natspy_rows.py in")
    out = sub_run(*_compare_args(nats_server, "--peers", tmp_path / "missing"))
    assert out.returncode == 2 and "--peers" in out.stderr and "does not exist" in out.stderr
    assert "Traceback" not in out.stderr


def test_benchmarks_scripts_find_their_peer_rows(nats_server: Any, tmp_path: Path) -> None:
    """benchmarks/compare.py takes the nats-py rows next to it (whatever the cwd), and
    benchmarks/rows.py runs one row for any client."""
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "compare.py"), "--rows", "d", "--scale", "0.01",
                          "--rounds", "1", "--clients", "jetwire,nats-py", "--json", "--server", nats_server.url],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    clients = json.loads(out.stdout)["rows"]["d"]["clients"]
    assert clients["nats-py"]["median"]["rate"] > 0 and clients["jetwire"]["median"]["rate"] > 0
    for client in ("jetwire", "jetwire.aio", "nats-py", *GO):  # (raw has no row f2)
        out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "rows.py"), "f2", client, nats_server.url, "",
                              "0.01"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert out.returncode == 0, (client, out.stderr)
        assert json.loads(out.stdout)["n"] == 1000
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "rows.py"), "e", "raw", nats_server.url, "",
                          "0.01"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["n"] == 500
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "rows.py"), "g", "nats-py", nats_server.url],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and out.stderr.strip() == "row g has no nats-py implementation"
