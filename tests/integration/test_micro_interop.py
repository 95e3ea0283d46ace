"""Services across clients: a jetwire service (both flavours) discovered, called and its
stats read by nats-py (``nats.micro``'s own types parse what jetwire answers), and a
nats-py service discovered and called by jetwire (nats-py is a test-only peer)."""
from __future__ import annotations

import asyncio
import json
import threading
import uuid

import nats
import nats.micro
import pytest
from nats.micro.request import ERROR_CODE_HEADER, ERROR_HEADER
from nats.micro.service import ServiceInfo as PyInfo
from nats.micro.service import ServicePing as PyPing
from nats.micro.service import ServiceStats as PyStats

import jetwire
import jetwire.aio


def uniq(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def run(coro):
    try:
        import uvloop
    except ImportError:  # pragma: no cover
        return asyncio.run(coro)
    return uvloop.run(coro)


async def natspy_reads(url: str, name: str, svc_id: str, subject: str) -> None:
    """What nats-py sees of a jetwire service called ``name`` listening on ``subject``."""
    nc = await nats.connect(url)
    try:
        ping = PyPing.from_dict(json.loads((await nc.request(f"$SRV.PING.{name}", b"", timeout=2)).data))
        assert (ping.name, ping.id, ping.version, ping.metadata) == (name, svc_id, "1.0.0", {"from": "jetwire"})
        ok = await nc.request(subject, b"ping", timeout=2)
        assert ok.data == b"pong:ping"
        bad = await nc.request(subject, b"fail", timeout=2)
        assert bad.headers[ERROR_CODE_HEADER] == "422" and bad.headers[ERROR_HEADER] == "no good"
        info = PyInfo.from_dict(json.loads((await nc.request(f"$SRV.INFO.{name}.{svc_id}", b"", timeout=2)).data))
        assert info.description == "jetwire side"
        assert [(e.name, e.subject, e.queue_group, e.metadata) for e in info.endpoints] == [
            ("rpc", subject, "q", {"k": "v"})]
        stats = PyStats.from_dict(json.loads((await nc.request(f"$SRV.STATS.{name}", b"", timeout=2)).data))
        assert stats.id == svc_id and stats.started.year >= 2024
        ep = stats.endpoints[0]
        assert (ep.num_requests, ep.num_errors, ep.last_error) == (2, 1, "422:no good")
        assert ep.processing_time > 0 and ep.data == {"custom": True}
    finally:
        await nc.close()


def test_jetwire_aio_service_seen_by_nats_py(nats_url):
    name = uniq("jwaio")
    subject = f"{name}.rpc"

    async def main():
        nc = await jetwire.aio.connect(nats_url)

        async def handler(req):
            if req.data == b"fail":
                await req.respond_error("422", "no good")
            else:
                await req.respond(b"pong:" + req.data)

        svc = await jetwire.aio.micro.add_service(nc, name=name, version="1.0.0", description="jetwire side",
                                                  metadata={"from": "jetwire"},
                                                  stats_handler=lambda ep: {"custom": True})
        await svc.add_endpoint("rpc", handler, subject=subject, metadata={"k": "v"})
        try:
            await natspy_reads(nats_url, name, svc.id, subject)
        finally:
            await svc.stop()
            await nc.close()

    run(main())


def test_jetwire_blocking_service_seen_by_nats_py(nats_url):
    name = uniq("jwsync")
    subject = f"{name}.rpc"

    def handler(req):
        if req.data == b"fail":
            req.respond_error("422", "no good")
        else:
            req.respond(b"pong:" + req.data)

    with jetwire.connect(nats_url) as nc:
        with jetwire.micro.add_service(nc, name=name, version="1.0.0", description="jetwire side",
                                       metadata={"from": "jetwire"},
                                       stats_handler=lambda ep: {"custom": True}) as svc:
            svc.add_endpoint("rpc", handler, subject=subject, metadata={"k": "v"})
            run(natspy_reads(nats_url, name, svc.id, subject))
        assert svc.stopped


async def start_natspy_service(url: str, name: str, subject: str):
    peer = await nats.connect(url)

    async def handler(req):
        if req.data == b"fail":
            await req.respond_error("503", "busy", data=b"later")
        else:
            await req.respond(b"py:" + req.data)

    svc = await nats.micro.add_service(peer, name=name, version="2.1.0", description="nats-py side",
                                       metadata={"from": "nats-py"})
    await svc.add_endpoint(name="rpc", subject=subject, handler=handler, metadata={"k": "v"})
    await peer.flush()
    return peer, svc


def check_natspy_service(pings, infos, stats, name: str, svc_id: str, subject: str) -> None:
    assert [(p.name, p.id, p.version, p.metadata) for p in pings] == [(name, svc_id, "2.1.0", {"from": "nats-py"})]
    assert isinstance(pings[0], jetwire.ServicePing)
    (info,) = infos
    assert info.description == "nats-py side"
    assert [(e.name, e.subject, e.queue_group, e.metadata) for e in info.endpoints] == [
        ("rpc", subject, "q", {"k": "v"})]
    (st,) = stats
    assert st.started is not None and st.started.tzinfo is not None
    ep = st.endpoints[0]
    assert (ep.name, ep.subject, ep.num_requests) == ("rpc", subject, 2)
    assert ep.num_errors == 0  # nats-py does not count respond_error as an error
    assert ep.processing_time > 0


def test_natspy_service_used_by_jetwire_aio(nats_url):
    name = uniq("pyaio")
    subject = f"{name}.rpc"

    async def main():
        peer, svc = await start_natspy_service(nats_url, name, subject)
        nc = await jetwire.aio.connect(nats_url)
        try:
            m = jetwire.aio.micro
            assert (await m.request(nc, subject, b"hi")).data == b"py:hi"
            with pytest.raises(jetwire.ServiceError) as ei:
                await m.request(nc, subject, b"fail")
            assert (ei.value.code, ei.value.description, ei.value.data) == ("503", "busy", b"later")
            check_natspy_service(await m.ping(nc, name, timeout=0.5), await m.info(nc, name, svc.id, max_results=1),
                                 await m.stats(nc, name, max_results=1), name, svc.id, subject)
        finally:
            await nc.close()
            await svc.stop()
            await peer.close()

    run(main())


def test_natspy_service_used_by_jetwire_blocking(nats_url):
    name = uniq("pysync")
    subject = f"{name}.rpc"
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    box = {}

    def peer_thread():  # nats-py on its own loop while the blocking client calls it
        asyncio.set_event_loop(loop)
        box["peer"], box["svc"] = loop.run_until_complete(start_natspy_service(nats_url, name, subject))
        ready.set()
        loop.run_forever()

    t = threading.Thread(target=peer_thread, daemon=True)
    t.start()
    assert ready.wait(10)
    try:
        with jetwire.connect(nats_url) as nc:
            m = jetwire.micro
            assert m.request(nc, subject, b"hi").data == b"py:hi"
            with pytest.raises(jetwire.ServiceError) as ei:
                m.request(nc, subject, b"fail")
            assert (ei.value.code, ei.value.description) == ("503", "busy")
            svc_id = box["svc"].id
            check_natspy_service(m.ping(nc, name, timeout=0.5), m.info(nc, name, svc_id, max_results=1),
                                 m.stats(nc, name, max_results=1), name, svc_id, subject)
    finally:
        async def down():
            await box["svc"].stop()
            await box["peer"].close()

        asyncio.run_coroutine_threadsafe(down(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        t.join(10)
        loop.close()
