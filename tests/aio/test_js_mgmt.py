"""Management helpers: the raw API funnel, templates, load-or-create and ensure for
streams and consumers (asyncio source; the blocking twin is generated)."""
from __future__ import annotations

import pytest

import jetwire.aio as jetwire
from tests.aio._helpers import uniq

_PREFIX_ACCOUNTS = """
accounts: {
  JS: {
    jetstream: enabled
    users: [{user: js, password: js}]
    exports: [{service: "$JS.API.>"}]
  }
  APP: {
    users: [{user: app, password: app}]
    imports: [{service: {account: JS, subject: "$JS.API.>"}, to: "jsa.API.>"}]
  }
}
"""


class Trace:
    """trace_cb recording the subjects of requests and answers."""

    def __init__(self) -> None:
        self.calls: list = []

    def __call__(self, subject: str, payload: bytes) -> None:
        self.calls.append((subject, payload))


# --- the raw API ---------------------------------------------------------------------
async def test_api_request_round_trip_and_typed_errors(nats_url):
    trace = Trace()
    async with await jetwire.connect(nats_url) as nc:
        js = nc.jetstream(trace_cb=trace)
        name = uniq("RAW")
        try:
            created = await js.api_request(f"STREAM.CREATE.{name}",
                                           {"name": name, "subjects": [f"{name}.>"], "storage": "memory"})
            assert created["type"] == "io.nats.jetstream.api.v1.stream_create_response"
            assert created["config"]["name"] == name
            assert trace.calls[0][0] == f"$JS.API.STREAM.CREATE.{name}"
            # bytes payloads are sent as they are; None sends an empty body
            info = await js.api_request(f"STREAM.INFO.{name}", b'{"deleted_details": true}')
            assert info["config"]["subjects"] == [f"{name}.>"]
            assert (await js.api_request(f"STREAM.INFO.{name}", None))["state"]["messages"] == 0
            # the typed error of an error answer, with the server's codes
            with pytest.raises(jetwire.StreamNotFoundError) as e:
                await js.api_request(f"STREAM.INFO.{name}_NOPE")
            assert e.value.err_code == 10059 and e.value.code == 404
            with pytest.raises(jetwire.ConsumerNotFoundError):
                await js.api_request(f"CONSUMER.INFO.{name}.nobody")
            with pytest.raises(jetwire.StreamNameInUseError):
                await js.api_request(f"STREAM.CREATE.{name}",
                                     {"name": name, "subjects": [f"{name}.>"], "max_msgs": 5, "storage": "memory"})
            with pytest.raises(jetwire.BadRequestError):
                await js.api_request(f"STREAM.CREATE.{name}", b"{not json")
            # bad input raises before anything is sent
            sent = len(trace.calls)
            with pytest.raises(TypeError):
                await js.api_request("INFO", ["a list"])
            with pytest.raises(ValueError):
                await js.api_request("")
            assert len(trace.calls) == sent
        finally:
            await js.delete_stream(name)


async def test_management_calls_go_through_api_request(nats_url):
    """Every management call of the context reaches the server through api_request."""
    async with await jetwire.connect(nats_url) as nc:
        js = nc.jetstream()
        seen: list = []
        real = js.api_request

        async def spy(subject, payload=None, timeout=None):
            seen.append(subject.split(".")[0] + "." + subject.split(".")[1] if "." in subject else subject)
            return await real(subject, payload, timeout)

        js.api_request = spy
        name = uniq("FUN")
        await js.account_info()
        s = await js.create_stream(name=name, subjects=[f"{name}.>"], storage="memory")
        await js.update_stream(name=name, subjects=[f"{name}.>"], storage="memory", max_msgs=10)
        await s.info()
        c = await s.create_consumer(durable_name="d")
        await c.info()
        await js.consumer(name, "d")
        assert [n async for n in js.consumer_names(name)] == ["d"]
        await s.delete_consumer("d")
        await s.purge()
        await js.delete_stream(name)
        assert seen == ["INFO", "STREAM.CREATE", "STREAM.UPDATE", "STREAM.INFO", "CONSUMER.CREATE",
                        "CONSUMER.INFO", "CONSUMER.INFO", "CONSUMER.NAMES", "CONSUMER.DELETE",
                        "STREAM.PURGE", "STREAM.DELETE"]


async def test_api_request_domain(nats_server_factory):
    srv = nats_server_factory(domain="hub")
    trace = Trace()
    async with await jetwire.connect(srv.url) as nc:
        js = nc.jetstream(domain="hub", trace_cb=trace)
        info = await js.api_request("INFO")
        assert info["domain"] == "hub"
        assert trace.calls[0][0] == "$JS.hub.API.INFO"
        with pytest.raises(jetwire.StreamNotFoundError):
            await js.api_request("STREAM.INFO.NOPE")
        # a domain nobody serves: no responders, JetStream is not enabled there
        with pytest.raises(jetwire.JetStreamNotEnabledError):
            await nc.jetstream(domain="nowhere", timeout=1).api_request("INFO")


async def test_api_request_prefix(nats_server_factory):
    """An account that imports another account's JetStream API under its own prefix."""
    srv = nats_server_factory(config=_PREFIX_ACCOUNTS)
    host_port = srv.url.split("://", 1)[1]
    trace = Trace()
    async with await jetwire.connect(f"nats://app:app@{host_port}") as nc:
        js = nc.jetstream(api_prefix="jsa.API", trace_cb=trace)
        name = uniq("PFX")
        resp = await js.api_request(f"STREAM.CREATE.{name}", {"name": name, "subjects": [f"{name}.>"],
                                                              "storage": "memory"})
        assert resp["config"]["name"] == name
        assert trace.calls[0][0] == f"jsa.API.STREAM.CREATE.{name}"
        with pytest.raises(jetwire.StreamNotFoundError):
            await js.api_request(f"STREAM.INFO.{name}_NOPE")
        # the default prefix is not imported into this account
        with pytest.raises(jetwire.JetStreamNotEnabledError):
            await nc.jetstream(timeout=1).api_request("INFO")
    async with await jetwire.connect(f"nats://js:js@{host_port}") as nc:
        assert (await nc.jetstream().stream(name)).name == name
