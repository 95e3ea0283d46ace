"""``jetwire micro ls|info|stats`` against running services (in-process, click's runner)."""
from __future__ import annotations

import json
import uuid

import rich  # noqa: F401
from _cli import run  # tests/integration/_cli.py

import jetwire


def test_micro_ls_info_stats(nats_url):
    name = f"cli-{uuid.uuid4().hex[:8]}"
    with jetwire.connect(nats_url) as nc, jetwire.connect(nats_url) as client:
        svcs = [jetwire.micro.add_service(nc, name=name, version="1.0.0", description="cli test",
                                          metadata={"a": "b"}) for _ in range(2)]
        for s in svcs:
            s.add_endpoint("echo", lambda r: r.respond(r.data), subject=f"{name}.echo", metadata={"k": "v"})
            s.add_group("g", queue_group="").add_endpoint("err", lambda r: r.respond_error("400", "nope"),
                                                          subject=f"{name}.err")
        client.request(f"{name}.echo", b"x")
        for _ in range(2):  # no queue group: both instances answer and count it
            try:
                jetwire.micro.request(client, f"g.{name}.err", b"x")
            except jetwire.ServiceError:
                pass
        ids = sorted(s.id for s in svcs)

        res = run("micro", "ls", name, "-s", nats_url, "--timeout", "500ms")
        assert res.exit_code == 0, res.output
        assert "Services (2)" in res.stdout and ids[0] in res.stdout and "cli test" in res.stdout

        res = run("micro", "ls", name, "--json", "-s", nats_url, "--timeout", "500ms")
        docs = json.loads(res.stdout)
        assert sorted(d["id"] for d in docs) == ids
        assert all(d["type"] == "io.nats.micro.v1.info_response" for d in docs)

        res = run("micro", "info", name, ids[1], "-s", nats_url)
        assert res.exit_code == 0, res.output
        assert ids[1] in res.stdout and ids[0] not in res.stdout
        assert f"{name}.echo" in res.stdout and "(none)" in res.stdout and "k=v" in res.stdout

        res = run("micro", "stats", name, "--json", "-s", nats_url, "--timeout", "500ms")
        docs = json.loads(res.stdout)
        assert len(docs) == 2 and all(d["type"] == "io.nats.micro.v1.stats_response" for d in docs)
        per = {(d["id"], e["name"]): (e["num_requests"], e["num_errors"]) for d in docs for e in d["endpoints"]}
        assert sum(v[0] for k, v in per.items() if k[1] == "echo") == 1
        assert [v for k, v in sorted(per.items()) if k[1] == "err"] == [(2, 2), (2, 2)]

        res = run("micro", "stats", name, "-s", nats_url, "--timeout", "500ms")
        assert res.exit_code == 0, res.output
        assert "400:nope" in res.stdout and "total" in res.stdout

        res = run("micro", "info", f"{name}-none", "-s", nats_url, "--timeout", "300ms")
        assert res.exit_code == 1
        res = run("micro", "ls", f"{name}-none", "--json", "-s", nats_url, "--timeout", "300ms")
        assert res.exit_code == 0 and json.loads(res.stdout) == []
        for s in svcs:
            s.stop()


def test_the_example_runs(nats_url):
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "examples" / "micro_service.py"
    out = subprocess.run([sys.executable, str(script), "--server", nats_url], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert "math.add [1, 2, 3] -> 6" in out.stdout
    assert "service error 400: division by zero" in out.stdout
    assert "stats div: 2 requests, 1 errors" in out.stdout
    assert "service stopped: True" in out.stdout
