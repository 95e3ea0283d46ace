"""The nats.go rows of BENCHMARKS.md: the reference peer jetwire is compared with (not
part of the jetwire package).

    python benchmarks/natsgo_rows.py <row> nats.go <url> <monitor-url> [scale]
    python benchmarks/natsgo_rows.py --prepare     # build the Go program; print its path

The timed part of each row is ``natsgo/main.go`` next to this file, a small Go program
over nats.go 1.22 (its legacy JetStream API), built in GOPATH mode against Debian's
``golang-github-nats-io-go-nats-dev`` with no module download. The set-up around it and
the accounting are jetwire's row harness (``jetwire.cli.rows``), the same for every
client. ``jetwire bench compare`` and ``benchmarks/compare.py`` run this file for the
nats.go column; without ``go`` they say in one line how to install it.
"""
from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
from typing import Any

from jetwire.cli.rows import CLIENT_ROWS, RATE, REQUESTERS, RowFailed, main

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "natsgo", "main.go")
GOPATH = os.environ.get("JETWIRE_GOPATH", "/usr/share/gocode")
INSTALL = "apt-get install golang-go golang-github-nats-io-go-nats-dev"


def _cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "jetwire")


def _go_env() -> dict[str, str]:
    env = dict(os.environ, GO111MODULE="off", GOPATH=GOPATH, GOPROXY="off", GOFLAGS="")
    env.setdefault("GOCACHE", os.path.join(_cache_dir(), "go-build"))
    return env


def prepare() -> tuple[str | None, str]:
    """``(path of the built program, "")``, or ``(None, why it cannot run)``. The build is
    cached by the hash of the source and of ``go version``."""
    go = shutil.which("go")
    if go is None:
        return None, f"go is not installed ({INSTALL})"
    if not os.path.isdir(os.path.join(GOPATH, "src", "github.com", "nats-io", "nats.go")):
        return None, f"nats.go is not in {GOPATH} ({INSTALL})"
    try:
        version = subprocess.run([go, "version"], capture_output=True, text=True, timeout=60).stdout
        with open(SOURCE, "rb") as fh:
            digest = hashlib.sha256(fh.read() + version.encode()).hexdigest()[:16]
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"cannot run go: {exc}"
    path = os.path.join(_cache_dir(), f"natsgo-{digest}")
    if os.path.isfile(path):
        return path, ""
    os.makedirs(_cache_dir(), exist_ok=True)
    tmp = f"{path}.{os.getpid()}"
    out = subprocess.run([go, "build", "-o", tmp, SOURCE], capture_output=True, text=True, timeout=600,
                         env=_go_env(), cwd=os.path.dirname(SOURCE))
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["go build failed"])[-1]
        return None, f"go build failed: {last}"
    os.replace(tmp, path)
    return path, ""


class NatsGo:
    """nats.go as the rows use it: each row's timed part is the Go program."""

    name = "nats.go"

    def __init__(self) -> None:
        self.rows = {r: self._row(r) for r in CLIENT_ROWS[self.name]}
        self._bin: str | None = None

    def _row(self, row: str) -> Any:
        def run(cl: NatsGo, url: str, n: int, ctx: dict[str, Any]) -> Any:
            return cl.run(row, url, n, ctx)

        return run

    def run(self, row: str, url: str, n: int, ctx: dict[str, Any]) -> Any:
        if self._bin is None:
            path, why = prepare()
            if path is None:
                raise RowFailed(why)
            self._bin = path
        cmd = [self._bin, row, url, str(n), ctx.get("subject", "-"), ctx.get("stream", "-"),
               ctx.get("consumer", "-"), str(REQUESTERS if row == "s" else RATE)]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if out.returncode != 0:
            text = (out.stderr or out.stdout or "").strip()
            last = text.splitlines()[-1] if text else f"exit status {out.returncode}"
            raise RowFailed(last[len("FAILED: "):] if last.startswith("FAILED: ") else last)
        res = json.loads(out.stdout.strip().splitlines()[-1])
        # the Go process's CPU (the set-up and accounting in this process are not the client's)
        ctx["cpu"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if "received" in res:
            ctx["received"] = res["received"]
        if "lat" in res:
            return (res["seconds"], res["lat"]) if row == "s" else res["lat"]
        return res["seconds"]


CLIENT = NatsGo()

if __name__ == "__main__":
    if sys.argv[1:2] == ["--prepare"]:
        built, why = prepare()
        print(built or why)
        sys.exit(0 if built else 3)
    sys.exit(main(peer=CLIENT))
