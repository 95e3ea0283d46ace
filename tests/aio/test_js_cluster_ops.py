"""jsm.go's cluster operations against real servers: stream, consumer and meta leader
step-downs and stream peer removal in one 3-node cluster (with a system account for the
meta leader), and their typed errors on a server that is not clustered (asyncio
source; the blocking twin is generated)."""
from __future__ import annotations

import time
from typing import Any

import pytest

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims
from jetwire.testing import NatsCluster
from tests.aio._helpers import uniq

# the account of users without credentials has JetStream; "sys" is the system account's
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
    """One 3-node cluster for the module."""
    c = NatsCluster(3, config=ACCOUNTS)
    try:
        c.start(30)
        yield c
    finally:
        c.stop()


async def _retry(fn: Any, timeout: float = 20.0) -> Any:
    """``await fn()`` until it stops failing (no leader while one is elected)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await fn()
        except (jetwire.TimeoutError, jetwire.JetStreamNotEnabledError, jetwire.APIError):
            if time.monotonic() > deadline:
                raise
            await prims.sleep(0.1)


async def _leader(fn: Any, differs_from: Any = None, timeout: float = 20.0) -> str:
    """The leader named by the info ``fn()`` returns, once there is one (other than
    ``differs_from``)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            info = await fn()
            lead = info.cluster.leader if info.cluster is not None else None
            if lead and lead != differs_from:
                return lead
        except (jetwire.TimeoutError, jetwire.APIError):
            pass
        assert time.monotonic() < deadline, f"no new leader (still {differs_from!r})"
        await prims.sleep(0.1)


def _meta_leader(cluster: Any) -> str:
    for s in cluster:
        try:
            lead = (s.monitor("jsz").get("meta_cluster") or {}).get("leader")
        except Exception:
            continue
        if lead:
            return lead
    return ""


async def _meta_leader_not(cluster: Any, old: str, timeout: float = 20.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        lead = _meta_leader(cluster)
        if lead and lead != old:
            return lead
        assert time.monotonic() < deadline, f"the meta leader is still {old!r}"
        await prims.sleep(0.1)


async def test_stream_and_consumer_leader_stepdown(cluster):
    nc = await jetwire.connect(cluster.urls)
    js = nc.jetstream(timeout=2)
    name = uniq("R3")
    try:
        await _retry(lambda: js.create_stream(name=name, subjects=[f"{name}.>"], num_replicas=3))
        await _retry(lambda: js.create_consumer(name, durable_name="d"))

        def sinfo() -> Any:
            return js.stream_info(name)

        before = await _leader(sinfo)
        await _retry(lambda: js.stream_leader_stepdown(name))
        after = await _leader(sinfo, differs_from=before)
        assert after != before
        # preferred: the named server leads next
        info = await _retry(sinfo)
        target = next(r.name for r in info.cluster.replicas)
        assert target != after
        await _retry(lambda: js.stream_leader_stepdown(name, preferred=target))
        assert await _leader(sinfo, differs_from=after) == target

        def cinfo() -> Any:
            return js.consumer_info(name, "d")

        cbefore = await _leader(cinfo)
        await _retry(lambda: js.consumer_leader_stepdown(name, "d"))
        assert await _leader(cinfo, differs_from=cbefore) != cbefore

        with pytest.raises(jetwire.StreamNotFoundError):
            await js.stream_leader_stepdown(name + "X")
        with pytest.raises(jetwire.ConsumerNotFoundError):
            await js.consumer_leader_stepdown(name, "missing")
        with pytest.raises(jetwire.APIError):  # not a peer of the stream
            await js.stream_leader_stepdown(name, preferred="nobody")
    finally:
        await _retry(lambda: js.delete_stream(name))
        await nc.close()


async def test_remove_stream_peer(cluster):
    nc = await jetwire.connect(cluster.urls)
    js = nc.jetstream(timeout=2)
    name = uniq("R2")
    try:
        await _retry(lambda: js.create_stream(name=name, subjects=[f"{name}.>"], num_replicas=2))
        await _retry(lambda: js.publish(f"{name}.a", b"kept"))

        async def peers() -> list:
            info = await js.stream_info(name)
            return sorted([info.cluster.leader or ""] + [r.name for r in info.cluster.replicas or ()])

        await _leader(lambda: js.stream_info(name))
        before = await _retry(peers)
        victim = before[0]
        await _retry(lambda: js.remove_stream_peer(name, victim))
        deadline = time.monotonic() + 30
        while True:  # replaced by the third server
            try:
                now = await peers()
                if victim not in now and len(now) == 2 and "" not in now:
                    break
            except (jetwire.TimeoutError, jetwire.APIError):
                pass
            assert time.monotonic() < deadline, f"peer {victim!r} still in {now!r}"
            await prims.sleep(0.1)
        spare = ({s.name for s in cluster} - set(before)).pop()
        assert spare in now
        with pytest.raises(jetwire.APIError) as ei:
            await js.remove_stream_peer(name, "nobody")
        assert ei.value.err_code == 10040  # peer not a member
        with pytest.raises(jetwire.StreamNotFoundError):
            await js.remove_stream_peer(name + "X", victim)
        with pytest.raises(ValueError):  # bad input: nothing sent
            await js.remove_stream_peer(name, "")
    finally:
        await _retry(lambda: js.delete_stream(name))
        await nc.close()


async def test_meta_leader_stepdown(cluster):
    snc = await jetwire.connect(cluster.urls, user="sys", password="sys")
    nc = await jetwire.connect(cluster.urls)
    try:
        sjs = snc.jetstream(timeout=2)
        before = await _meta_leader_not(cluster, "")
        await _retry(lambda: sjs.meta_leader_stepdown())
        after = await _meta_leader_not(cluster, before)
        target = next(s.name for s in cluster if s.name != after)
        await _retry(lambda: sjs.meta_leader_stepdown(preferred=target))
        assert await _meta_leader_not(cluster, after) == target
        # a user of another account gets no answer: a typed error after the timeout
        with pytest.raises(jetwire.APIError) as ei:
            await nc.jetstream(timeout=0.5).meta_leader_stepdown()
        assert ei.value.code == 408
    finally:
        await nc.close()
        await snc.close()


async def test_cluster_operations_need_a_cluster(nats_url):
    nc = await jetwire.connect(nats_url)
    sent: list = []
    js = nc.jetstream(trace_cb=lambda subject, payload: sent.append(subject))
    name = uniq("R1")
    try:
        await js.create_stream(name=name, subjects=[f"{name}.>"])
        await js.create_consumer(name, durable_name="d")
        for call in (lambda: js.stream_leader_stepdown(name), lambda: js.consumer_leader_stepdown(name, "d"),
                     lambda: js.remove_stream_peer(name, "x")):
            with pytest.raises(jetwire.APIError) as ei:
                await call()
            assert ei.value.err_code == 10010  # clustering required
        sent.clear()
        with pytest.raises(jetwire.APIError) as ei:
            await js.meta_leader_stepdown()
        assert ei.value.err_code == 10010 and sent == []  # known from INFO: nothing sent
        assert (await js.stream_info(name)).config.name == name
    finally:
        await js.delete_stream(name)
        await nc.close()
