"""``jetwire stream cluster step-down|peer-remove``, ``jetwire consumer cluster
step-down`` and ``jetwire server cluster step-down`` against one 3-node cluster
(in-process, click's runner), and their one-line errors on a server that is not
clustered."""
from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest
import rich  # noqa: F401
from _cli import run  # tests/integration/_cli.py

import jetwire
from jetwire.testing import NatsCluster

ACCOUNTS = """
accounts {
  JS: { jetstream: enabled, users: [{user: js, password: js}] }
  SYS: { users: [{user: sys, password: sys}] }
}
system_account: SYS
no_auth_user: js
"""


@pytest.fixture(scope="module")
def cluster():
    c = NatsCluster(3, config=ACCOUNTS)
    try:
        c.start(30)
        yield c
    finally:
        c.stop()




def stderr_of(res: Any) -> str:
    try:
        return res.stderr
    except ValueError:
        return ""


def js_out(res: Any) -> Any:
    assert res.exit_code == 0, (res.output, stderr_of(res))
    return json.loads(res.stdout)


def retry(fn: Any, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            return fn()
        except (jetwire.TimeoutError, jetwire.APIError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def stream_leader(js: Any, name: str, timeout: float = 20.0) -> str:
    """The stream's leader once it has one."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            lead = js.stream_info(name).cluster.leader
            if lead:
                return lead
        except (jetwire.TimeoutError, jetwire.APIError):
            pass
        assert time.monotonic() < deadline, f"stream {name} has no leader"
        time.sleep(0.1)


def test_stream_and_consumer_step_down_and_peer_remove(cluster):
    url = cluster.url
    name = f"C{uuid.uuid4().hex[:10].upper()}"
    with jetwire.connect(cluster.urls) as nc:
        js = nc.jetstream(timeout=2)
        retry(lambda: js.create_stream(name=name, subjects=[f"{name}.>"], num_replicas=3))
        retry(lambda: js.create_consumer(name, durable_name="d"))
        stream_leader(js, name)
        try:
            out = js_out(run("stream", "cluster", "step-down", name, "--json", "-s", url))
            assert out["stream"] == name and out["leader"] and out["leader"] != out["previous_leader"]
            target = next(s.name for s in cluster if s.name != out["leader"])
            res = run("stream", "cluster", "step-down", name, "--preferred", target, "-s", url)
            assert res.exit_code == 0, (res.output, stderr_of(res))
            assert f"new leader {target}" in res.stdout

            out = js_out(run("consumer", "cluster", "step-down", name, "d", "--json", "-s", url))
            assert out["consumer"] == "d" and out["leader"] != out["previous_leader"]

            res = run("stream", "cluster", "step-down", name + "X", "-s", url)
            assert res.exit_code == 1 and stderr_of(res).startswith("error: ")

            # an R2 stream: the removed peer is replaced by the third server
            r2 = name + "_R2"
            retry(lambda: js.create_stream(name=r2, subjects=[f"{r2}.>"], num_replicas=2))
            victim = stream_leader(js, r2)
            out = js_out(run("stream", "cluster", "peer-remove", r2, victim, "-f", "--json", "-s", url))
            assert out == {"stream": r2, "peer": victim, "removed": True}
            deadline = time.monotonic() + 30
            while True:
                try:
                    i = js.stream_info(r2)
                    peers = {i.cluster.leader, *(r.name for r in i.cluster.replicas or ())}
                    if victim not in peers and None not in peers and len(peers) == 2:
                        break
                except (jetwire.TimeoutError, jetwire.APIError):
                    pass
                assert time.monotonic() < deadline, "the peer was not replaced"
                time.sleep(0.1)
            res = run("stream", "cluster", "peer-remove", r2, "nobody", "-f", "-s", url)
            assert res.exit_code == 1 and "peer not a member" in stderr_of(res)
        finally:
            retry(lambda: js.delete_stream(name))
            try:
                retry(lambda: js.delete_stream(name + "_R2"))
            except jetwire.StreamNotFoundError:
                pass


def test_server_cluster_step_down(cluster):
    url = cluster.url
    out = js_out(run("server", "cluster", "step-down", "--json", "-s", url, "--user", "sys", "--password", "sys"))
    assert out["leader"] and out["previous_leader"] and out["leader"] != out["previous_leader"]
    target = next(s.name for s in cluster if s.name != out["leader"])
    for _ in range(3):  # a meta group just elected may not answer yet on a loaded machine
        res = run("server", "cluster", "step-down", "--preferred", target, "-s", url, "--user", "sys",
                  "--password", "sys", "--wait", "20s")
        if res.exit_code == 0 or "code=408" not in stderr_of(res):
            break
    assert res.exit_code == 0, (res.output, stderr_of(res))
    assert f"new leader {target}" in res.stdout
    assert "sys" not in stderr_of(res)


def test_cluster_commands_need_a_cluster(nats_url):
    name = f"C{uuid.uuid4().hex[:10].upper()}"
    with jetwire.connect(nats_url) as nc:
        js = nc.jetstream()
        js.create_stream(name=name, subjects=[f"{name}.>"])
        js.create_consumer(name, durable_name="d")
        try:
            for args in (("stream", "cluster", "step-down", name), ("consumer", "cluster", "step-down", name, "d"),
                         ("stream", "cluster", "peer-remove", name, "x", "-f"), ("server", "cluster", "step-down")):
                res = run(*args, "-s", nats_url)
                assert res.exit_code == 1, (args, res.output)
                err = stderr_of(res).strip()
                assert err.startswith("error: JetStream clustering support required (code=503, err_code=10010"), err
                assert len(err.splitlines()) == 1
        finally:
            js.delete_stream(name)
