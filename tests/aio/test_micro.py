"""Services (ADR-32) against a real nats-server: the documents field by field, endpoints,
groups and queue groups, errors, draining, concurrency and the discovery client (asyncio
source; the blocking twin is generated). Interop with nats-py's ``nats.micro`` is in
tests/integration/test_micro_interop.py."""
from __future__ import annotations

import re
import time

import orjson
import pytest

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims
from jetwire.aio import micro
from tests.aio._helpers import Collector, server_subscriptions, uniq, wait_until

RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")


def name_of(prefix: str) -> str:
    return uniq(prefix).replace("_", "-")


async def echo(req) -> None:
    await req.respond(req.data)


async def raw(nc, subject: str) -> dict:
    """One monitoring request, the JSON answer as a dict."""
    msg = await nc.request(subject, b"", timeout=2)
    return orjson.loads(msg.data)


async def test_documents_match_adr32_field_by_field(nats_url):
    nc = await jetwire.connect(nats_url)
    client = await jetwire.connect(nats_url)
    name = name_of("docs")
    try:
        svc = await micro.add_service(nc, name=name, version="1.2.3-rc.1+build.5", description="the docs service",
                                      metadata={"team": "jw"}, stats_handler=lambda ep: {"ep": ep.name, "n": 7})
        await svc.add_endpoint("add", echo, metadata={"kind": "math"})
        g = svc.add_group("math")
        await g.add_endpoint("mul", echo, subject="times")
        await micro.request(client, "add", b"1")
        for subject in (f"$SRV.PING.{name}", f"$SRV.PING.{name}.{svc.id}"):
            ping = await raw(client, subject)
            assert ping == {"type": "io.nats.micro.v1.ping_response", "name": name, "id": svc.id,
                            "version": "1.2.3-rc.1+build.5", "metadata": {"team": "jw"}}

        info = await raw(client, f"$SRV.INFO.{name}.{svc.id}")
        assert set(info) == {"type", "name", "id", "version", "metadata", "description", "endpoints"}
        assert info["type"] == "io.nats.micro.v1.info_response"
        assert (info["name"], info["id"], info["version"]) == (name, svc.id, "1.2.3-rc.1+build.5")
        assert info["description"] == "the docs service" and info["metadata"] == {"team": "jw"}
        assert info["endpoints"] == [
            {"name": "add", "subject": "add", "queue_group": "q", "metadata": {"kind": "math"}},
            {"name": "mul", "subject": "math.times", "queue_group": "q", "metadata": {}},
        ]

        st = await raw(client, f"$SRV.STATS.{name}")
        assert set(st) == {"type", "name", "id", "version", "metadata", "started", "endpoints"}
        assert st["type"] == "io.nats.micro.v1.stats_response"
        assert RFC3339.match(st["started"]), st["started"]
        assert st["started"].endswith("Z")
        add, mul = st["endpoints"]
        assert set(add) == {"name", "subject", "queue_group", "num_requests", "num_errors", "last_error",
                            "processing_time", "average_processing_time", "data"}
        assert (add["name"], add["subject"], add["queue_group"]) == ("add", "add", "q")
        assert (add["num_requests"], add["num_errors"], add["last_error"]) == (1, 0, "")
        assert isinstance(add["processing_time"], int) and add["processing_time"] > 0
        assert add["average_processing_time"] == add["processing_time"]  # nanoseconds, one request
        assert add["data"] == {"ep": "add", "n": 7}
        assert (mul["num_requests"], mul["processing_time"], mul["average_processing_time"]) == (0, 0, 0)
        assert mul["data"] == {"ep": "mul", "n": 7}

        # the same through the typed API, in float seconds and an aware datetime
        s = svc.stats()
        assert isinstance(s, jetwire.ServiceStats) and s.started.tzinfo is not None
        assert s.endpoints[0].processing_time == pytest.approx(add["processing_time"] / 1e9)
        i = svc.info()
        assert isinstance(i, jetwire.ServiceInfo)
        assert [e.subject for e in i.endpoints] == ["add", "math.times"]
        assert svc.ping().to_dict() == await raw(client, f"$SRV.PING.{name}.{svc.id}")
    finally:
        await svc.stop()
        await client.close()
        await nc.close()


async def test_every_service_answers_the_three_subjects_of_each_verb(nats_url):
    nc = await jetwire.connect(nats_url)
    name = name_of("verbs")
    try:
        async with await micro.add_service(nc, name=name, version="0.0.1") as svc:
            for verb in ("PING", "INFO", "STATS"):
                for subject in (f"$SRV.{verb}.{name}", f"$SRV.{verb}.{name}.{svc.id}"):
                    assert (await raw(nc, subject))["id"] == svc.id
                inbox = nc.new_inbox()
                c = Collector(1)
                sub = await nc.subscribe(inbox, cb=c)
                await nc.publish(f"$SRV.{verb}", b"", reply=inbox)  # every service: ours among them
                await nc.flush()
                assert await wait_until(lambda: any(orjson.loads(m.data)["id"] == svc.id for m in c.msgs))
                await sub.unsubscribe()
            with pytest.raises(jetwire.NoRespondersError):
                await nc.request(f"$SRV.PING.{name}.NOTANID", b"", timeout=1)
        assert svc.stopped
    finally:
        await nc.close()


async def test_queue_groups_inherit_service_group_endpoint(nats_url):
    nc = await jetwire.connect(nats_url)
    name = name_of("qg")
    try:
        svc = await micro.add_service(nc, name=name, version="1.0.0", queue_group="svcq")
        await svc.add_endpoint("a", echo)                                   # the service's
        await svc.add_endpoint("b", echo, queue_group="own")                # its own
        await svc.add_endpoint("c", echo, queue_group="")                   # none
        g = svc.add_group("g", queue_group="gq")
        await g.add_endpoint("d", echo)                                     # the group's
        inner = g.add_group("h")                                            # inherits gq
        await inner.add_endpoint("e", echo, subject="x.y")
        off = svc.add_group("off", queue_group="")                          # a group with none
        await off.add_endpoint("f", echo)
        await off.add_endpoint("f2", echo, queue_group="back")
        # a group named "" adds no token (ADR-32 allows it; nats.go's micro leaves it out)
        await svc.add_group("").add_group(name).add_group("").add_endpoint("empty", echo)
        default = await micro.add_service(nc, name=name_of("qgd"), version="1.0.0")
        await default.add_endpoint("z", echo, subject=f"{name}.z")
        got = {e.name: (e.subject, e.queue_group) for e in svc.info().endpoints}
        assert got == {"a": ("a", "svcq"), "b": ("b", "own"), "c": ("c", ""), "d": ("g.d", "gq"),
                       "e": ("g.h.x.y", "gq"), "f": ("off.f", ""), "f2": ("off.f2", "back"),
                       "empty": (f"{name}.empty", "svcq")}
        assert (await micro.request(nc, f"{name}.empty", b"flat")).data == b"flat"
        assert [(e.queue_group) for e in default.info().endpoints] == ["q"]
        assert inner.prefix == "g.h" and inner.queue_group == "gq"
        # the stats documents carry the same
        st = await raw(nc, f"$SRV.STATS.{name}.{svc.id}")
        assert {e["name"]: e["queue_group"] for e in st["endpoints"]}["c"] == ""
        assert (await micro.request(nc, "g.h.x.y", b"deep")).data == b"deep"
        await default.stop()
        await svc.stop()
    finally:
        await nc.close()


async def test_respond_json_and_errors_are_counted(nats_url):
    nc = await jetwire.connect(nats_url)
    client = await jetwire.connect(nats_url)
    name = name_of("errs")
    seen = []
    try:
        async def handler(req):
            what = req.data
            if what == b"json":
                await req.respond_json({"sum": 3, "subject": req.subject})
            elif what == b"err":
                await req.respond_error("400", "bad input", data=b"details", headers={"X-Why": "because"})
            elif what == b"raise":
                raise RuntimeError("handler broke")
            elif what == b"svcerr":
                raise jetwire.ServiceError("418", "teapot")
            elif what == b"late":
                await req.respond(b"answered")
                raise ValueError("after the answer")
            else:
                await req.respond(b"h=" + req.headers["X-In"].encode(), headers={"X-Out": "1"})

        svc = await micro.add_service(nc, name=name, version="1.0.0", error_cb=seen.append)
        await svc.add_endpoint("calc", handler)
        r = await micro.request(client, "calc", b"json")
        assert orjson.loads(r.data) == {"sum": 3, "subject": "calc"}
        r = await micro.request(client, "calc", b"hdr", headers={"X-In": "v"})
        assert r.data == b"h=v" and r.headers["X-Out"] == "1"

        with pytest.raises(jetwire.ServiceError) as ei:
            await micro.request(client, "calc", b"err")
        assert (ei.value.code, ei.value.description, ei.value.data) == ("400", "bad input", b"details")
        assert ei.value.headers["X-Why"] == "because"
        assert isinstance(ei.value, jetwire.NatsError) and micro.ServiceError is jetwire.ServiceError
        plain = await client.request("calc", b"err")  # the headers on the wire (ADR-32)
        assert plain.headers["Nats-Service-Error-Code"] == "400"
        assert plain.headers["Nats-Service-Error"] == "bad input"

        with pytest.raises(jetwire.ServiceError) as ei:
            await micro.request(client, "calc", b"raise")
        assert ei.value.code == "500" and "handler broke" in ei.value.description
        with pytest.raises(jetwire.ServiceError) as ei:
            await micro.request(client, "calc", b"svcerr")
        assert (ei.value.code, ei.value.description) == ("418", "teapot")
        # the service keeps serving
        assert orjson.loads((await micro.request(client, "calc", b"json")).data)["sum"] == 3
        ep = svc.stats().endpoints[0]  # counted by the time its answer arrived
        assert (ep.num_requests, ep.num_errors, ep.last_error) == (7, 4, "418:teapot")
        assert (await micro.request(client, "calc", b"late")).data == b"answered"  # raised after answering

        async def late_counted():  # counted, then handed to error_cb
            return svc.stats().endpoints[0].num_errors == 5 and len(seen) == 3

        assert await wait_until(late_counted)
        ep = svc.stats().endpoints[0]
        assert (ep.num_requests, ep.num_errors) == (8, 5)
        assert ep.last_error == "500:ValueError: after the answer"
        assert ep.average_processing_time == pytest.approx(ep.processing_time / 8, rel=1e-3)
        # each handler's error, once (two requests' workers may report in either order:
        # a handler answers first, then hands its error to error_cb)
        assert sorted(type(e).__name__ for e in seen) == ["RuntimeError", "ServiceError", "ValueError"]

        await svc.reset()
        ep = svc.stats().endpoints[0]
        assert (ep.num_requests, ep.num_errors, ep.last_error, ep.processing_time) == (0, 0, "", 0.0)
        await svc.stop()
    finally:
        await client.close()
        await nc.close()


async def test_invalid_names_and_versions_raise_before_subscribing(nats_url, nats_server):
    nc = await jetwire.connect(nats_url)
    try:
        before = await server_subscriptions(nats_server, nc)
        for bad in ("", "has space", "dot.ted", "star*", "ü", None):
            with pytest.raises(ValueError):
                await micro.add_service(nc, name=bad, version="1.0.0")
        for bad in ("", "1", "1.0", "v1.0.0", "01.0.0", "1.0.0-", "1.0.0+", "1.0.0.0", None):
            with pytest.raises(jetwire.InvalidServiceVersionError):
                await micro.add_service(nc, name="ok", version=bad)
        with pytest.raises(jetwire.InvalidServiceNameError):
            await micro.add_service(nc, name="a.b", version="1.0.0")
        with pytest.raises(ValueError):
            await micro.add_service(nc, name="ok", version="1.0.0", queue_group="has space")
        assert await server_subscriptions(nats_server, nc) == before

        svc = await micro.add_service(nc, name=name_of("valid"), version="10.20.30-alpha.1")
        with_svc = await server_subscriptions(nats_server, nc)
        assert with_svc == before + 9  # three subjects for each of PING, INFO, STATS
        for kw in ({"name": "bad name"}, {"name": "ok", "subject": "a..b"}, {"name": "ok", "subject": "a.>.b"},
                   {"name": "ok", "queue_group": "q q"}, {"name": "ok", "metadata": {"k": 1}}):
            with pytest.raises(ValueError):
                await svc.add_endpoint(handler=echo, **kw)
        with pytest.raises(ValueError):
            svc.add_group("a.>")
        assert await server_subscriptions(nats_server, nc) == with_svc
        with pytest.raises(ValueError):
            await micro.ping(nc, id="X")  # an id needs the name
        await svc.stop()
        with pytest.raises(jetwire.NatsError):
            await svc.add_endpoint("late", echo)
    finally:
        await nc.close()


async def test_queue_group_spreads_requests_over_two_instances(nats_url):
    nc1 = await jetwire.connect(nats_url)
    nc2 = await jetwire.connect(nats_url)
    client = await jetwire.connect(nats_url)
    name = name_of("spread")
    subject = f"{name}.work"
    try:
        def answer(tag):
            async def h(req):
                await req.respond(tag)
            return h

        s1 = await micro.add_service(nc1, name=name, version="1.0.0")
        s2 = await micro.add_service(nc2, name=name, version="1.0.0")
        await s1.add_endpoint("work", answer(b"1"), subject=subject)
        await s2.add_endpoint("work", answer(b"2"), subject=subject)
        got = [(await client.request(subject, b"", timeout=2)).data for _ in range(200)]
        n1, n2 = got.count(b"1"), got.count(b"2")
        assert n1 + n2 == 200 and n1 > 20 and n2 > 20, (n1, n2)
        assert s1.stats().endpoints[0].num_requests == n1
        assert s2.stats().endpoints[0].num_requests == n2
        assert {p.id for p in await micro.ping(client, name, timeout=0.5)} == {s1.id, s2.id}
        st = await micro.stats(client, name, s2.id, timeout=2, max_results=1)
        assert [x.endpoints[0].num_requests for x in st] == [n2]

        # without a queue group every instance gets every request
        fan = f"{name}.fan"
        await s1.add_endpoint("fan", answer(b"1"), subject=fan, queue_group="")
        await s2.add_endpoint("fan", answer(b"2"), subject=fan, queue_group="")
        inbox = client.new_inbox()
        c = Collector(20)
        sub = await client.subscribe(inbox, cb=c)
        for _ in range(10):
            await client.publish(fan, b"", reply=inbox)
        msgs = await c.wait()
        assert sorted(m.data for m in msgs) == [b"1"] * 10 + [b"2"] * 10
        await sub.unsubscribe()
        await s1.stop()
        await s2.stop()
    finally:
        await client.close()
        await nc1.close()
        await nc2.close()


async def test_a_refused_endpoint_subscription_stops_the_service(nats_server_factory):
    """The server refusing an endpoint's subscription (permissions) stops the service,
    as nats.go's micro does: the endpoint counts the error, the service's error_cb hears
    the PermissionViolationError, done_cb follows; the connection's error_cb hears it too
    and the connection stays."""
    srv = nats_server_factory(auth={"users": [
        {"user": "svc", "password": "pw",
         "permissions": {"subscribe": {"deny": ["secret"]}, "publish": {"allow": [">"]}}}]})
    conn_errors: list = []
    nc = await jetwire.connect(srv.url, user="svc", password="pw", error_cb=conn_errors.append)
    try:
        svc_errors: list = []
        done: list = []
        svc = await micro.add_service(nc, name=name_of("refused"), version="1.0.0",
                                      error_cb=svc_errors.append, done_cb=done.append)
        await svc.add_endpoint("ok", echo)
        await svc.add_endpoint("secret", echo, subject="secret")
        assert await wait_until(lambda: bool(done), 5), (svc_errors, conn_errors)
        assert svc.stopped and done == [svc]
        assert await wait_until(lambda: bool(svc_errors), 5)
        err = svc_errors[0]
        assert isinstance(err, jetwire.PermissionViolationError) and err.subject == "secret"
        stats = {e.name: e for e in svc.stats().endpoints}
        assert stats["secret"].num_errors == 1 and "secret" in stats["secret"].last_error
        assert stats["ok"].num_errors == 0
        assert any(isinstance(e, jetwire.PermissionViolationError) for e in conn_errors)
        assert nc.is_connected
    finally:
        await nc.close()


async def test_stop_drains_in_flight_requests_and_takes_no_new_ones(nats_url, nats_server):
    nc = await jetwire.connect(nats_url)
    client = await jetwire.connect(nats_url)
    name = name_of("drain")
    subject = f"{name}.slow"
    gates: list = []
    started = prims.Signal()
    done_with: list = []
    answers: list = []
    try:
        async def slow(req):
            gate = prims.Signal()
            gates.append(gate)
            started.set()
            assert await gate.wait(10)
            await req.respond(b"late " + req.data)

        svc = await micro.add_service(nc, name=name, version="1.0.0", done_cb=done_with.append, concurrency=4)
        await svc.add_endpoint("slow", slow, subject=subject)
        subs = await server_subscriptions(nats_server, nc)

        async def ask(i):
            answers.append((await client.request(subject, b"%d" % i, timeout=10)).data)

        askers = [prims.spawn(ask, i) for i in range(3)]
        assert await wait_until(lambda: len(gates) == 3)
        stopper = prims.spawn(svc.stop)

        async def unsubscribed():
            return await server_subscriptions(nats_server, nc) == subs - 1

        assert await wait_until(unsubscribed)
        with pytest.raises(jetwire.NoRespondersError):  # nothing new is taken
            await client.request(subject, b"new", timeout=1)
        assert not svc.stopped and not done_with  # still draining: three requests in progress
        assert answers == []
        for gate in gates:
            gate.set()
        for a in askers:
            assert await prims.join(a, 10)
        assert await prims.join(stopper, 10)
        assert sorted(answers) == [b"late 0", b"late 1", b"late 2"]
        assert svc.stopped and done_with == [svc]
        assert svc.stats().endpoints[0].num_requests == 3
        with pytest.raises(jetwire.NoRespondersError):
            await client.request(f"$SRV.PING.{name}.{svc.id}", b"", timeout=1)
        await svc.stop()  # again: nothing happens
        assert done_with == [svc]
    finally:
        await client.close()
        await nc.close()


async def test_many_concurrent_requests_are_all_answered_within_the_bound(nats_url):
    nc = await jetwire.connect(nats_url)
    client = await jetwire.connect(nats_url)
    name = name_of("many")
    subject = f"{name}.work"
    n = 1000
    limit = 8
    state = {"now": 0, "max": 0}
    lock = prims.write_lock()
    try:
        async def handler(req):
            with lock:
                state["now"] += 1
                state["max"] = max(state["max"], state["now"])
            try:
                await prims.sleep(0.001)  # a coroutine handler that waits
                await req.respond(req.data)
            finally:
                with lock:
                    state["now"] -= 1

        svc = await micro.add_service(nc, name=name, version="1.0.0", concurrency=limit)
        await svc.add_endpoint("work", handler, subject=subject)
        inbox = client.new_inbox()
        c = Collector(n)
        sub = await client.subscribe(inbox + ".*", cb=c, pending_msgs_limit=n + 1)
        await client.flush()
        for i in range(n):  # every request in flight at once
            await client.publish(subject, b"%d" % i, reply=f"{inbox}.{i}")
        msgs = await c.wait(60)
        assert sorted(int(m.data) for m in msgs) == list(range(n))
        assert all(m.subject == f"{inbox}.{int(m.data)}" for m in msgs)
        assert 1 < state["max"] <= limit  # concurrent, never more than the bound
        assert svc.stats().endpoints[0].num_requests == n
        await sub.unsubscribe()
        await svc.stop()
    finally:
        await client.close()
        await nc.close()


async def test_discovery_client_gathers_every_instance(nats_url):
    ncs = [await jetwire.connect(nats_url) for _ in range(3)]
    client = await jetwire.connect(nats_url)
    name = name_of("disc")
    try:
        svcs = [await micro.add_service(nc, name=name, version=f"1.0.{i}", description=f"n{i}") for i, nc in
                enumerate(ncs)]
        for s in svcs:
            await s.add_endpoint("x", echo, subject=f"{name}.x")
        ids = {s.id for s in svcs}
        pings = await micro.ping(client, name, timeout=1.0)
        assert {p.id for p in pings} == ids and all(isinstance(p, jetwire.ServicePing) for p in pings)
        assert {p.version for p in pings} == {"1.0.0", "1.0.1", "1.0.2"}
        infos = await micro.info(client, name, timeout=0.5)
        assert {i.description for i in infos} == {"n0", "n1", "n2"}
        assert all(i.endpoints[0].subject == f"{name}.x" for i in infos)
        t0 = time.monotonic()
        first = await micro.stats(client, name, timeout=60, max_results=2)
        assert len(first) == 2 and time.monotonic() - t0 < 30  # returns at max_results, not the timeout
        one = await micro.info(client, name, svcs[1].id, timeout=60, max_results=1)
        assert [i.id for i in one] == [svcs[1].id]
        everyone = await micro.ping(client, timeout=0.5)
        assert ids <= {p.id for p in everyone}
        assert await micro.ping(client, name_of("nobody"), timeout=0.2) == []
        for s in svcs:
            await s.stop()
    finally:
        await client.close()
        for nc in ncs:
            await nc.close()


async def test_plain_handler_endpoint_handle_and_closing_the_connection(nats_url):
    nc = await jetwire.connect(nats_url)
    client = await jetwire.connect(nats_url)
    name = name_of("plain")
    done = prims.Signal()
    try:
        svc = await micro.add_service(nc, name=name, version="1.0.0", metadata={"a": "b"},
                                      done_cb=lambda s: done.set(),
                                      stats_handler=lambda ep: {"requests": ep.num_requests})

        def plain(req):  # a plain function in both flavours
            req.respond(req.data.upper())

        ep = await svc.add_endpoint("up", plain, subject=f"{name}.up")
        assert (ep.name, ep.subject, ep.queue_group, ep.metadata) == ("up", f"{name}.up", "q", {})
        assert (await micro.request(client, f"{name}.up", b"abc")).data == b"ABC"
        assert ep.num_requests == 1 and ep.processing_time > 0
        assert svc.stats().endpoints[0].data == {"requests": 1}
        assert (svc.name, svc.version, svc.metadata, svc.endpoints) == (name, "1.0.0", {"a": "b"}, [ep])
        assert repr(svc).startswith("<Service")
        await nc.close()  # the connection closing stops the service
        assert svc.stopped
        assert await done.wait(5)
    finally:
        await client.close()
        await nc.close()


@pytest.mark.parametrize("how", ["stop", "drain"])
async def test_stop_or_drain_from_a_handler_does_not_wait_for_that_handler(nats_url, how):
    nc = await jetwire.connect(nats_url, drain_timeout=20)
    client = await jetwire.connect(nats_url)
    name = name_of(f"self{how}")
    done_with: list = []
    returned = prims.Signal()
    try:
        async def last(req):
            await req.respond(b"bye")
            t0 = time.monotonic()
            if how == "stop":
                await svc.stop(timeout=20)
            else:
                await nc.drain()
            took.append(time.monotonic() - t0)
            returned.set()

        took: list = []
        svc = await micro.add_service(nc, name=name, version="1.0.0", done_cb=done_with.append)
        await svc.add_endpoint("last", last, subject=f"{name}.last")
        assert (await client.request(f"{name}.last", b"", timeout=5)).data == b"bye"
        assert await returned.wait(15)  # not after its own 20 s timeout
        assert took[0] < 10, took
        assert svc.stopped and done_with == [svc]
    finally:
        await client.close()
        await nc.close()


async def test_a_second_stop_returns_once_the_service_has_stopped(nats_url):
    nc = await jetwire.connect(nats_url)
    client = await jetwire.connect(nats_url)
    name = name_of("twostops")
    gate, started = prims.Signal(), prims.Signal()
    seen: list = []
    try:
        async def slow(req):
            started.set()
            assert await gate.wait(10)
            await req.respond(b"late")

        svc = await micro.add_service(nc, name=name, version="1.0.0")
        await svc.add_endpoint("slow", slow, subject=f"{name}.slow")
        asker = prims.spawn(client.request, f"{name}.slow", b"", 10)
        assert await started.wait(5)
        first = prims.spawn(svc.stop)
        assert await wait_until(lambda: svc._stopping)

        async def second():
            await svc.stop()
            seen.append(svc.stopped)

        other = prims.spawn(second)
        assert not await prims.join(other, 0.3)  # waits for the first stop, which waits for the handler
        gate.set()
        assert await prims.join(first, 10) and await prims.join(other, 10) and await prims.join(asker, 10)
        assert seen == [True]
    finally:
        await client.close()
        await nc.close()
