"""Services (ADR-32) at their limits, against a real nats-server: huge error texts, answers
that cannot be sent, stop/drain deadlines, the request backlog's pending limits, broken
stats handlers, repeated error headers, non-ASCII versions and blank error descriptions
(asyncio source; the blocking twin is generated)."""
from __future__ import annotations

# sync-only: import threading
import time

import orjson
import pytest

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims
from jetwire.aio import micro
from jetwire.errors import InvalidServiceConfigError, InvalidServiceVersionError, SlowConsumerError
from jetwire.options import Options
from jetwire.protocol.headers import Headers
from tests.aio._helpers import uniq, wait_until


def name_of(prefix: str) -> str:
    return uniq(prefix).replace("_", "-")


async def test_a_huge_exception_text_still_answers_500_and_stats_stay_answerable(nats_url):
    """A handler's exception text (or a respond_error description) of megabytes is cut to
    a bounded description: the 500 still goes out and last_error stays small, so
    $SRV.STATS is still answered."""
    nc = await jetwire.connect(nats_url)
    client = await jetwire.connect(nats_url)
    name = name_of("huge")
    try:
        async def raises(req):
            body = req.data.decode()
            raise ValueError(f"bad request body {body!r}, expected {body!r}")

        async def describes(req):
            await req.respond_error("400", "d" * 2_000_000)

        svc = await micro.add_service(nc, name=name, version="1.0.0")
        await svc.add_endpoint("validate", raises, subject=f"{name}.v1")
        await svc.add_endpoint("validate2", raises, subject=f"{name}.v2")
        await svc.add_endpoint("describe", describes, subject=f"{name}.d")
        for subject, body in ((f"{name}.v1", b"x" * 600_000), (f"{name}.v2", b"y" * 300_000)):
            with pytest.raises(jetwire.ServiceError) as ei:
                await micro.request(client, subject, body, timeout=5)
            assert ei.value.code == "500"
            assert ei.value.description.startswith("ValueError: bad request body '")
            assert 100 < len(ei.value.description) <= 1024
        with pytest.raises(jetwire.ServiceError) as ei:
            await micro.request(client, f"{name}.d", b"", timeout=5)
        assert ei.value.code == "400" and ei.value.description.startswith("ddd")
        assert len(ei.value.description) <= 1024
        eps = svc.stats().endpoints
        assert [e.num_errors for e in eps] == [1, 1, 1]
        assert all(0 < len(e.last_error) <= 1100 for e in eps), [len(e.last_error) for e in eps]
        found = await micro.stats(client, name, timeout=5, max_results=1)
        assert len(found) == 1 and [e.num_errors for e in found[0].endpoints] == [1, 1, 1]
        await svc.stop()
    finally:
        await client.close()
        await nc.close()


async def test_an_answer_that_cannot_be_sent_answers_500_and_counts_once(nats_url):
    """respond() with more than max_payload raises in the handler: the request is not
    counted as answered, so the handler's exception answers 500 and the request counts
    once, as an error."""
    errors: list = []
    nc = await jetwire.connect(nats_url)
    client = await jetwire.connect(nats_url)
    name = name_of("big")
    try:
        async def too_big(req):
            await req.respond(b"x" * (nc.max_payload + 10))

        svc = await micro.add_service(nc, name=name, version="1.0.0", error_cb=errors.append)
        await svc.add_endpoint("big", too_big, subject=f"{name}.big")
        with pytest.raises(jetwire.ServiceError) as ei:
            await micro.request(client, f"{name}.big", b"", timeout=5)
        assert ei.value.code == "500" and "MaxPayloadError" in ei.value.description
        ep = svc.stats().endpoints[0]
        assert (ep.num_requests, ep.num_errors) == (1, 1)
        assert ep.last_error.startswith("500:MaxPayloadError")
        assert await wait_until(lambda: len(errors) == 1)
        assert isinstance(errors[0], jetwire.MaxPayloadError)
        await svc.stop()
    finally:
        await client.close()
        await nc.close()


@pytest.mark.parametrize("how", ["stop", "drain"])
async def test_stop_and_drain_keep_one_deadline_for_all_endpoints(nats_url, how):
    """stop(timeout) / nc.drain(timeout) with N endpoints, each with a stuck handler,
    return after about ``timeout``, not N times it."""
    n, timeout = 8, 0.4
    nc = await jetwire.connect(nats_url)
    client = await jetwire.connect(nats_url)
    name = name_of(f"dl{how}")
    gate = prims.Signal()
    started: list = []
    try:
        async def stuck(req):
            started.append(req.subject)
            await gate.wait(20)

        svc = await micro.add_service(nc, name=name, version="1.0.0")
        for i in range(n):
            await svc.add_endpoint(f"e{i}", stuck, subject=f"{name}.e{i}")
        for i in range(n):
            await client.publish(f"{name}.e{i}", b"", reply=client.new_inbox())
        await client.flush()
        assert await wait_until(lambda: len(started) == n)
        t0 = time.monotonic()
        if how == "stop":
            await svc.stop(timeout=timeout)
        else:
            with pytest.raises(jetwire.DrainTimeoutError):
                await nc.drain(timeout=timeout)
        took = time.monotonic() - t0
        assert took < timeout * 4, took  # was n x timeout (3.2 s)
        assert svc.stopped
    finally:
        gate.set()
        await client.close()
        await nc.close()


async def test_the_request_backlog_has_pending_limits(nats_url):
    """Requests waiting for a stuck handler are bounded like a subscription's pending
    messages: past the limit they are dropped and error_cb hears a SlowConsumerError
    (once per episode); the connection's pending limits apply (connect()'s)."""
    conn_errors: list = []
    nc = await jetwire.connect(nats_url, error_cb=conn_errors.append, pending_msgs_limit=5)
    client = await jetwire.connect(nats_url)
    name = name_of("backlog")
    subject = f"{name}.e"
    gate = prims.Signal()
    started: list = []
    try:
        async def stuck(req):
            started.append(1)
            await gate.wait(20)
            await req.respond(b"ok")

        svc = await micro.add_service(nc, name=name, version="1.0.0", concurrency=1)
        ep = await svc.add_endpoint("e", stuck, subject=subject)
        workers = ep._workers
        assert (workers.max_msgs, workers.max_bytes) == (5, Options.pending_bytes_limit)
        inbox = client.new_inbox()
        answers = await client.subscribe(inbox)
        for _ in range(30):
            await client.publish(subject, b"x" * 100, reply=inbox)
        await client.flush()
        assert await wait_until(lambda: workers.dropped == 24), workers.dropped
        assert workers.pending == 6  # one in progress, five waiting
        assert await wait_until(lambda: any(isinstance(e, SlowConsumerError) for e in conn_errors))
        slow = [e for e in conn_errors if isinstance(e, SlowConsumerError)]
        assert len(slow) == 1 and slow[0].subject == subject and slow[0].dropped >= 1
        # the bytes limit too
        workers.max_msgs, workers.max_bytes = 1000, 250
        for _ in range(10):
            await client.publish(subject, b"y" * 100, reply=inbox)
        await client.flush()
        assert await wait_until(lambda: workers.dropped == 24 + 10), workers.dropped  # 500 bytes wait already
        gate.set()
        for _ in range(6):
            assert (await answers.next_msg(5)).data == b"ok"
        assert ep.num_requests == 6
        await svc.stop()
    finally:
        gate.set()
        await client.close()
        await nc.close()


async def test_a_broken_stats_handler_still_lets_stats_be_answered(nats_url):
    """A stats_handler that raises or returns something that is not JSON gives that
    endpoint ``data`` None (nats.go ignores the marshal error); a document that still
    cannot be sent (over max_payload) is answered with a 500 service error."""
    conn_errors: list = []
    nc = await jetwire.connect(nats_url, error_cb=conn_errors.append)
    client = await jetwire.connect(nats_url)
    name = name_of("stath")
    try:
        def handler(ep):
            if ep.name == "a":
                raise ZeroDivisionError("no stats")
            if ep.name == "b":
                return object()
            if ep.name == "c":
                return {1, 2}
            return {"ok": ep.name}

        svc = await micro.add_service(nc, name=name, version="1.0.0", stats_handler=handler)
        for ep_name in "abcd":
            await svc.add_endpoint(ep_name, lambda req: req.respond(b""), subject=f"{name}.{ep_name}")
        doc = orjson.loads((await client.request(f"$SRV.STATS.{name}", b"", timeout=2)).data)
        assert [e["data"] for e in doc["endpoints"]] == [None, None, None, {"ok": "d"}]
        assert [e.data for e in svc.stats().endpoints] == [None, None, None, {"ok": "d"}]
        assert await wait_until(lambda: any(isinstance(e, ZeroDivisionError) for e in conn_errors))
        await svc.stop()

        big = await micro.add_service(nc, name=name + "-big", version="1.0.0",
                                      stats_handler=lambda ep: "z" * (nc.max_payload + 1))
        await big.add_endpoint("e", lambda req: req.respond(b""), subject=f"{name}.big")
        msg = await client.request(f"$SRV.STATS.{name}-big", b"", timeout=2)
        assert msg.headers is not None and msg.headers["Nats-Service-Error-Code"] == "500"
        assert msg.headers["Nats-Service-Error"]
        with pytest.raises(jetwire.ServiceError):
            await micro.request(client, f"$SRV.STATS.{name}-big", timeout=2)
        assert len(await micro.ping(client, name + "-big", timeout=2, max_results=1)) == 1
        await big.stop()

        # aio-only: begin
        async def coroutine_handler(ep):
            return {"a": 1}

        with pytest.raises(InvalidServiceConfigError):  # svc.stats() is not awaited
            await micro.add_service(nc, name=name, version="1.0.0", stats_handler=coroutine_handler)
        # aio-only: end
        with pytest.raises(InvalidServiceConfigError):
            await micro.add_service(nc, name=name, version="1.0.0", stats_handler="not callable")
    finally:
        await client.close()
        await nc.close()


async def test_respond_error_keeps_every_value_of_a_repeated_header(nats_url):
    nc = await jetwire.connect(nats_url)
    client = await jetwire.connect(nats_url)
    name = name_of("hdrs")
    try:
        async def from_headers(req):
            await req.respond_error("400", "bad", headers=Headers([("X-Multi", "a"), ("X-Multi", "b")]))

        async def from_pairs(req):
            await req.respond_error("400", "bad", headers=[("X-Multi", "a"), ("X-Multi", "b"), ("X-One", "1")])

        async def from_dict(req):
            await req.respond_error("400", "bad", headers={"X-Multi": ["a", "b"]})

        async def overriding(req):  # the error headers are the service's own
            await req.respond_error("400", "bad", headers=[("Nats-Service-Error", "x"), ("Nats-Service-Error", "y")])

        svc = await micro.add_service(nc, name=name, version="1.0.0")
        for ep_name, h in (("h", from_headers), ("p", from_pairs), ("d", from_dict), ("o", overriding)):
            await svc.add_endpoint(ep_name, h, subject=f"{name}.{ep_name}")
        for ep_name in "hpd":
            msg = await client.request(f"{name}.{ep_name}", b"", timeout=2)
            assert msg.headers.get_all("X-Multi") == ["a", "b"], ep_name
            assert msg.headers["Nats-Service-Error-Code"] == "400"
        assert (await client.request(f"{name}.p", b"", timeout=2)).headers["X-One"] == "1"
        msg = await client.request(f"{name}.o", b"", timeout=2)
        assert msg.headers.get_all("Nats-Service-Error") == ["bad"]
        await svc.stop()
    finally:
        await client.close()
        await nc.close()


@pytest.mark.parametrize("version", ["1\u0661.0.0", "1.0.0-1\u0661", "1.\u0662.0", "1.0.0+b\u0663"])
async def test_versions_with_non_ascii_digits_are_refused(nats_url, version):
    """Go's (and the JSON schema's) \\d is [0-9]: '1\u0661.0.0' is no semantic version."""
    nc = await jetwire.connect(nats_url)
    try:
        with pytest.raises(InvalidServiceVersionError):
            await micro.add_service(nc, name=name_of("semver"), version=version)
    finally:
        await nc.close()


# sync-only: begin
# def test_a_slow_stats_handler_does_not_hold_up_answers(nats_url):
#     """Blocking flavour (in asyncio a stats_handler runs on the loop, as every handler
#     does): the stats_handler runs without the endpoints' counter locks, so a request is
#     answered while a STATS document is being built."""
#     nc = jetwire.connect(nats_url)
#     client = jetwire.connect(nats_url)
#     name = name_of("slowstats")
#     in_handler = threading.Event()
#     answered = threading.Event()
#     try:
#         def slow_stats(ep):
#             in_handler.set()
#             answered.wait(10)  # (held the counter locks before: the request below timed out)
#             return {"ok": 1}
#
#         svc = micro.add_service(nc, name=name, version="1.0.0", stats_handler=slow_stats)
#         svc.add_endpoint("fast", lambda req: req.respond(b"f"), subject=f"{name}.fast")
#         assert client.request(f"{name}.fast", b"", timeout=5).data == b"f"
#         stats = prims.spawn(client.request, f"$SRV.STATS.{name}", b"", 15)
#         assert in_handler.wait(5)
#         assert client.request(f"{name}.fast", b"", timeout=3).data == b"f"
#         answered.set()
#         assert prims.join(stats, 10)
#         svc.stop()
#     finally:
#         answered.set()
#         client.close()
#         nc.close()
# sync-only: end


async def test_blank_error_descriptions_are_refused_or_replaced(nats_url):
    """A description that is empty once CR/LF are cleaned and it is trimmed is refused by
    respond_error (InvalidServiceConfigError, as an empty one); an exception whose text
    or ServiceError description is blank still answers with a description."""
    nc = await jetwire.connect(nats_url)
    client = await jetwire.connect(nats_url)
    name = name_of("blank")
    refused: list = []
    try:
        async def blank(req):
            try:
                await req.respond_error("400", req.data.decode())
            except InvalidServiceConfigError as exc:
                refused.append(exc)
                await req.respond(b"refused")

        async def raises_blank(req):
            raise RuntimeError("\n")

        async def service_error_blank(req):
            raise jetwire.ServiceError("418", "\r\n")

        svc = await micro.add_service(nc, name=name, version="1.0.0")
        await svc.add_endpoint("blank", blank, subject=f"{name}.blank")
        await svc.add_endpoint("raise", raises_blank, subject=f"{name}.raise")
        await svc.add_endpoint("svcerr", service_error_blank, subject=f"{name}.svcerr")
        for text in ("\n", "\r\n", " \n\t "):
            assert (await micro.request(client, f"{name}.blank", text.encode(), timeout=2)).data == b"refused"
        assert len(refused) == 3
        with pytest.raises(jetwire.ServiceError) as ei:
            await micro.request(client, f"{name}.raise", timeout=2)
        assert (ei.value.code, ei.value.description) == ("500", "RuntimeError")
        with pytest.raises(jetwire.ServiceError) as ei:
            await micro.request(client, f"{name}.svcerr", timeout=2)
        assert ei.value.code == "418" and ei.value.description.strip()
        await svc.stop()
    finally:
        await client.close()
        await nc.close()


async def test_discovery_ends_when_the_connection_closes(nats_url):
    """ping/info/stats collect answers until their timeout, or until the connection
    closes: then they raise ConnectionClosedError at once (not an empty list, late)."""
    nc = await jetwire.connect(nats_url)
    watcher = await jetwire.connect(nats_url)
    name = name_of("nobody")
    outcome: list = []

    async def ping() -> None:
        try:
            outcome.append(await micro.ping(nc, name, timeout=30.0))
        except Exception as exc:
            outcome.append(exc)

    try:
        seen = await watcher.subscribe(f"$SRV.PING.{name}")
        await watcher.flush()
        pinging = prims.spawn(ping)
        await seen.next_msg(timeout=5)  # the ping is out: it waits for answers
        await nc.close()
        assert await prims.join(pinging, 5), "still waiting after close()"
        assert len(outcome) == 1 and isinstance(outcome[0], jetwire.ConnectionClosedError), outcome
        with pytest.raises(jetwire.ConnectionClosedError):  # and on a closed connection at once
            await micro.stats(nc, timeout=30.0)
    finally:
        await watcher.close()
        await nc.close()


async def test_stop_waits_at_most_the_connections_drain_timeout(nats_url):
    """stop() with no timeout waits for the requests in progress at most the
    connection's drain_timeout (it waited a fixed 30 s)."""
    nc = await jetwire.connect(nats_url, drain_timeout=0.5)
    client = await jetwire.connect(nats_url)
    name = name_of("stopdl")
    gate = prims.Signal()
    started = prims.Signal()
    try:
        async def stuck(req):
            started.set()
            await gate.wait(60)

        svc = await micro.add_service(nc, name=name, version="1.0.0")
        await svc.add_endpoint("e", stuck, subject=f"{name}.e")
        await client.publish(f"{name}.e", b"", reply=client.new_inbox())
        await client.flush()
        assert await started.wait(5)
        stopping = prims.spawn(svc.stop)
        assert await prims.join(stopping, 10), "stop() outlived drain_timeout"
        assert svc.stopped
    finally:
        gate.set()
        await client.close()
        await nc.close()
