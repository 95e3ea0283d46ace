"""The ``jetwire`` command in the awkward cases: stopped by SIGTERM or SIGHUP (everything
it started goes with it), interrupted while its bench workers are busy, fed values that
are not numbers or sizes, writing into a closed pipe, given settings through the `nats`
CLI's environment variables that name missing files; and the bench figures where a
window would otherwise be measured wrong (a js-fetch's last pull, a zero-length span),
and `bench compare` taking its server like the other bench commands."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from _cli import like_a_terminal, run  # tests/integration/_cli.py

import jetwire
from jetwire.testing import NatsServer, free_port

_T = TypeVar("_T")


def uid(prefix: str = "T") -> str:
    return f"{prefix}{uuid.uuid4().hex[:10].upper()}"


def stderr_of(res: Any) -> str:
    try:
        return str(res.stderr)
    except ValueError:
        return ""


def js_out(res: Any) -> Any:
    assert res.exit_code == 0, (res.output, stderr_of(res))
    return json.loads(res.stdout)


def jetwire_cmd(*args: Any) -> list[str]:
    return [sys.executable, "-m", "jetwire", *[str(a) for a in args]]


def no_nats_url() -> dict[str, str]:
    """This environment without the `nats` CLI's variables (so a bench embeds its server)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("NATS_")}


def wait_for(what: str, probe: Callable[[], _T | None], timeout: float = 60.0) -> _T:
    """Poll ``probe`` until it gives something (not None / False), or fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        got = probe()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.05)


# ------------------------------------------------------------------------------ processes


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state, ppid, pgrp, ...)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read()
    except OSError:
        return None
    return text[text.rindex(b")") + 2:].decode().split()


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def group_members(pgrp: int) -> dict[int, str]:
    """Live processes (zombies excluded) of process group ``pgrp``: pid -> command line."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        st = _stat(int(name))
        if st is not None and st[2] == str(pgrp) and st[0] != "Z":
            out[int(name)] = _cmdline(int(name))
    return out


class Command:
    """``python -m jetwire ARGS`` in a process group of its own (whatever it starts is in it
    too), output to files; :meth:`cleanup` kills and removes whatever it left behind."""

    def __init__(self, tmp_path: Path, *args: Any, preexec_fn: Callable[[], None] | None = None) -> None:
        self.out_path, self.err_path = tmp_path / "out.txt", tmp_path / "err.txt"
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.p = subprocess.Popen(jetwire_cmd(*args), stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                      env=no_nats_url(), cwd=tmp_path, start_new_session=True, preexec_fn=preexec_fn)

    @property
    def pid(self) -> int:
        return self.p.pid

    def out(self) -> str:
        return self.out_path.read_text(errors="replace")

    def err(self) -> str:
        return self.err_path.read_text(errors="replace")

    def others(self) -> dict[int, str]:
        """What the command started and is still running (the command itself excluded)."""
        return {pid: cmd for pid, cmd in group_members(self.pid).items() if pid != self.pid}

    def running(self, needle: str) -> bool:
        return any(needle in cmd for cmd in self.others().values())

    def workers_running(self) -> bool:
        """A bench worker process exists: the fork server and one process forked from it."""
        return sum("multiprocessing.forkserver" in cmd for cmd in self.others().values()) >= 2

    def wait(self, timeout: float) -> int:
        return self.p.wait(timeout=timeout)

    def leftovers(self, timeout: float = 20.0) -> dict[int, str]:
        """What is still running of the command's process group ``timeout`` seconds after it
        exited (nothing, when it cleaned up)."""
        deadline = time.monotonic() + timeout
        while True:
            left = group_members(self.pid)
            if not left or time.monotonic() > deadline:
                return left
            time.sleep(0.05)

    def cleanup(self) -> None:
        left = group_members(self.pid)
        dirs = {part.rsplit("/", 1)[0] for cmd in left.values() if "nats-server" in cmd
                for part in cmd.split() if part.startswith("/tmp/jetwire-nats-") and part.endswith(".conf")}
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if self.p.poll() is None:
            self.p.wait(timeout=10)
        for d in dirs:
            wait_for(f"the processes of {d}'s server to go", lambda: not group_members(self.pid), 10)
            shutil.rmtree(d, ignore_errors=True)


# ------------------------------------------------------------------------------ 1. SIGTERM / SIGHUP

SIGNALLED = [
    # (command, what shows it is busy, the signal)
    (["bench", "pub", "--msgs", "1e9", "--size", "16", "--no-progress"], "workers", signal.SIGTERM),
    (["bench", "pubsub", "--aio", "--msgs", "1e9", "--size", "16", "--no-progress"], "workers", signal.SIGHUP),
    (["bench", "compare", "--rows", "a", "--clients", "jetwire", "--rounds", "1", "--scale", "100"],
     "jetwire.cli.rows", signal.SIGTERM),
    (["demo", "--scale", "1000", "--no-compare"], "workers", signal.SIGHUP),
]


@pytest.mark.parametrize("args,busy,sig", SIGNALLED, ids=[f"{' '.join(a[:2])}-{s.name}" for a, _, s in SIGNALLED])
def test_sigterm_and_sighup_stop_the_server_and_the_workers_it_started(tmp_path: Path, args: list[str], busy: str,
                                                                       sig: signal.Signals) -> None:
    cmd = Command(tmp_path, *args)
    try:
        wait_for("the benchmark to be under way",
                 lambda: cmd.p.poll() is None and cmd.running("nats-server")
                 and (cmd.workers_running() if busy == "workers" else cmd.running(busy)))
        assert cmd.p.poll() is None, cmd.err()
        os.kill(cmd.pid, sig)  # the command alone, as a service manager or a closed terminal does
        rc = cmd.wait(60)
        left = cmd.leftovers()
        assert not left, f"still running after `jetwire {' '.join(args)}` got {sig.name}: {left}"
        assert rc == 128 + sig, (rc, cmd.err())
        assert "Traceback" not in cmd.err()
    finally:
        cmd.cleanup()


def test_bench_workers_end_when_the_bench_process_is_killed(tmp_path: Path, nats_url: str) -> None:
    """SIGKILL leaves no unwinding: the workers notice their parent is gone."""
    cmd = Command(tmp_path, "bench", "pubsub", "--msgs", "1e9", "--size", "16", "--no-progress",
                  "--subject", uid("killed.").lower(), "-s", nats_url)
    try:
        wait_for("the workers to run", lambda: cmd.p.poll() is None and cmd.workers_running())
        os.kill(cmd.pid, signal.SIGKILL)
        cmd.wait(30)
        left = cmd.leftovers()
        assert not left, f"still running after the bench process was killed: {left}"
    finally:
        cmd.cleanup()


def test_server_command_stops_its_server_on_sighup(tmp_path: Path) -> None:
    cmd = Command(tmp_path, "server", "--port", "0")
    try:
        wait_for("the server to listen", lambda: "nats-server listening" in cmd.out() or cmd.p.poll() is not None)
        assert cmd.p.poll() is None, cmd.err()
        os.kill(cmd.pid, signal.SIGHUP)
        rc = cmd.wait(30)
        assert not cmd.leftovers(), "nats-server still running after `jetwire server` got SIGHUP"
        assert rc == 0 and "nats-server stopped" in cmd.err(), (rc, cmd.err())
    finally:
        cmd.cleanup()


def test_sighup_left_ignored_by_nohup_is_still_ignored(tmp_path: Path) -> None:
    """`nohup jetwire server`: a hangup does not stop it."""
    cmd = Command(tmp_path, "server", "--port", "0", preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    try:
        line = wait_for("the server to listen", lambda: next((ln for ln in cmd.out().splitlines()
                                                              if ln.startswith("nats-server listening")), None))
        os.kill(cmd.pid, signal.SIGHUP)
        with jetwire.connect(line.split()[-1]) as nc:  # it answers after the hangup
            nc.flush(timeout=5)
        assert cmd.p.poll() is None
        os.kill(cmd.pid, signal.SIGTERM)
        assert cmd.wait(30) == 0, cmd.err()
        assert not cmd.leftovers()
    finally:
        cmd.cleanup()


# ------------------------------------------------------------------------------ 9. Ctrl-C, the main process alone


def test_sigint_to_the_bench_process_alone_stops_its_workers_promptly(tmp_path: Path) -> None:
    cmd = Command(tmp_path, "bench", "pub", "--msgs", "1e9", "--size", "16", "--no-progress",
                  preexec_fn=like_a_terminal)
    try:
        wait_for("the publisher to run", lambda: cmd.p.poll() is None and cmd.running("nats-server")
                 and cmd.workers_running())
        t0 = time.monotonic()
        os.kill(cmd.pid, signal.SIGINT)  # not the process group: the workers do not see it
        rc = cmd.wait(60)
        took = time.monotonic() - t0
        assert not cmd.leftovers(), "processes left behind"
        assert rc == 130, (rc, cmd.err())
        assert took < 4.5, f"took {took:.1f}s to stop after Ctrl-C"
    finally:
        cmd.cleanup()


# ------------------------------------------------------------------------------ 2. js-fetch's window


@pytest.mark.parametrize("nsub", [1, 2])
def test_js_fetch_rate_ends_at_the_last_message(nats_url: str, nsub: int) -> None:
    """1000 messages fetched 600 at a time: the last pull asks for what is left (or the
    fetchers' windows end at their last message), never counting a pull's 1 s wait."""
    name = uid("F")
    rep = js_out(run("bench", "js-fetch", "--msgs", 1000, "--batch", 600, "--sub", nsub, "--size", 16,
                     "--subject", name.lower(), "--stream", name, "--json", "-s", nats_url))
    assert rep["accounted"] is True, rep["checks"]
    fetch = rep["groups"]["fetch"]
    assert fetch["msgs"] == 1000
    assert fetch["seconds"] < 0.9, f"the window includes a pull's wait: {fetch['seconds']:.3f}s"
    for c in fetch["clients"]:
        assert c["seconds"] < 0.9, c


# ------------------------------------------------------------------------------ 3, 4. bench compare's server


def test_compare_takes_its_server_from_the_root_option_and_nats_url(nats_server_factory: Any) -> None:
    s: NatsServer = nats_server_factory(jetstream=False, auth={"user": "alice", "password": "s3cret"})

    def in_msgs() -> int:
        return int(s.monitor("varz")["in_msgs"])

    args = ["--rows", "c", "--scale", "0.01", "--rounds", "1", "--clients", "jetwire,jetwire.aio", "--json"]
    before = in_msgs()
    res = run("-s", s.url, "bench", "compare", "--user", "alice", "--password", "s3cret", *args)
    summary = js_out(res)
    assert summary["failed"] is False, summary
    assert in_msgs() - before >= 2 * 50, "the rows did not run on the server given to the root command"
    before = in_msgs()
    env = {**no_nats_url(), "NATS_URL": s.url, "NATS_USER": "alice", "NATS_PASSWORD": "s3cret"}
    out = subprocess.run(jetwire_cmd("bench", "compare", *args), capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["failed"] is False
    assert in_msgs() - before >= 2 * 50, "the rows did not run on $NATS_URL"
    # the peers' rows take only the URL: asked for by name with auth settings, they cannot run
    res = run("bench", "compare", "-s", s.url, "--user", "alice", "--password", "s3cret", *args[:6],
              "--clients", "jetwire,nats-py")
    assert res.exit_code == 1
    assert stderr_of(res).strip() == ("error: nats-py rows unavailable: the peers' rows take only the server's "
                                      "URL, not its auth or TLS settings")


def test_compare_against_a_server_that_is_down_fails_at_once(tmp_path: Path) -> None:
    url = f"nats://127.0.0.1:{free_port()}"
    t0 = time.monotonic()
    out = subprocess.run(jetwire_cmd("bench", "compare", "--rows", "c,d", "--scale", "0.01", "--rounds", "2",
                                     "--clients", "jetwire", "-s", url), capture_output=True, text=True, timeout=120,
                         env=no_nats_url(), cwd=tmp_path)
    assert out.returncode == 1, out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and url in lines[0], out.stderr
    assert time.monotonic() - t0 < 30


# ------------------------------------------------------------------------------ 5, 7. values


@pytest.mark.parametrize("args", [["--size", "-1"], ["--msgs", "inf"], ["--msgs", "nan"], ["--msgs", "1e400"],
                                  ["--msgs", "-inf"]], ids=["size-1", "inf", "nan", "1e400", "-inf"])
def test_bench_values_that_are_not_sizes_or_counts_are_usage_errors(args: list[str]) -> None:
    dead = f"nats://127.0.0.1:{free_port()}"  # (never reached)
    res = run("bench", "pub", "--msgs", "10", *args, "-s", dead)
    err = stderr_of(res) or res.output
    assert res.exit_code == 2, err
    assert f"Invalid value for '{args[0]}'" in err and "Traceback" not in err


# ------------------------------------------------------------------------------ 6. zero-length span


def test_a_zero_length_span_shows_no_rate(nats_url: str) -> None:
    """One message: the subscriber's first and last delivery are the same instant."""
    subj = uid("one.").lower()
    rep = js_out(run("bench", "pubsub", "--msgs", 1, "--size", 16, "--subject", subj, "--json", "-s", nats_url))
    sub = rep["groups"]["sub"]
    assert sub["msgs"] == 1 and sub["seconds"] == 0
    assert sub["msgs_per_sec"] is None and sub["mb_per_sec"] is None
    assert sub["clients"][0]["msgs_per_sec"] is None and sub["clients"][0]["mb_per_sec"] is None
    assert rep["groups"]["pub"]["msgs_per_sec"] > 0
    res = run("bench", "pubsub", "--msgs", 1, "--size", 16, "--subject", subj, "--plain", "-s", nats_url)
    assert res.exit_code == 0, stderr_of(res)
    row = next(ln.split() for ln in res.stdout.splitlines() if ln.startswith("sub "))
    assert row[-2:] == ["-", "-"], row  # msgs/s and MB/s
    for line in (res.stdout + run("bench", "pubsub", "--msgs", 1, "--subject", subj, "--csv", "-",
                                  "-s", nats_url).stdout).splitlines():
        assert "1000000000" not in line.replace(",", ""), line


# ------------------------------------------------------------------------------ 8. a closed pipe


def test_output_into_a_closed_pipe_exits_0(nats_url: str) -> None:
    name = uid("PIPE")
    with jetwire.connect(nats_url) as nc:
        nc.jetstream().create_stream(name=name, subjects=[name.lower()])
    try:
        for fmt in ([], ["--json"]):
            r, w = os.pipe()
            os.close(r)  # `| head -1` gone before anything was written
            try:
                p = subprocess.run(jetwire_cmd("stream", "info", name, *fmt, "-s", nats_url), stdout=w,
                                   stderr=subprocess.PIPE, text=True, timeout=60)
            finally:
                os.close(w)
            assert p.returncode == 0, (fmt, p.returncode, p.stderr)
            assert p.stderr == "", (fmt, p.stderr)
    finally:
        with jetwire.connect(nats_url) as nc:
            nc.jetstream().delete_stream(name)


# ------------------------------------------------------------------------------ 10. files named by the environment


@pytest.mark.parametrize("var", ["NATS_CA", "NATS_CERT", "NATS_KEY"], ids=["ca", "cert", "key"])
def test_tls_files_from_the_environment_are_checked(nats_url: str, var: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "missing.pem"
    monkeypatch.setenv(var, str(missing))
    res = run("stream", "ls", "-s", nats_url)
    err = stderr_of(res) or res.output
    assert res.exit_code == 2, err
    assert f"Invalid value for {var}: File '{missing}' does not exist" in err and "Errno" not in err, err
    monkeypatch.setenv(var, str(tmp_path))  # a directory
    res = run("stream", "ls", "-s", nats_url)
    assert res.exit_code == 2 and f"Invalid value for {var}: File '{tmp_path}' is a directory" in (
        stderr_of(res) or res.output)
    # an option on the command line wins over the variable, as for every setting
    monkeypatch.setenv(var, str(missing))
    opt = {"NATS_CA": "--tls-ca", "NATS_CERT": "--tls-cert", "NATS_KEY": "--tls-key"}[var]
    other = tmp_path / "given.pem"
    other.write_text("x")
    res = run("stream", "ls", opt, other, "-s", nats_url)
    assert var not in (stderr_of(res) or res.output)


def test_a_missing_credentials_file_from_the_environment_says_so(nats_url: str, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "nobody.creds"
    monkeypatch.setenv("NATS_CREDS", str(missing))
    res = run("stream", "ls", "-s", nats_url)
    err = stderr_of(res) or res.output
    assert res.exit_code == 2, err
    assert f"Invalid value for NATS_CREDS: credentials file '{missing}' not found" in err, err
    assert "Errno" not in err and "Traceback" not in err
