"""More of nats.go's JetStream surface against a real nats-server: get_msg with
next_by_subject (direct and API), the JetStream trace hook, the object digest helpers
and messages(err_on_missing_heartbeat=False) (asyncio source; the blocking twin is
generated)."""
from __future__ import annotations

import base64
import hashlib

import orjson
import pytest

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims
from jetwire.testing import NatsServer
from tests.aio._helpers import Errors, fill, uniq


# -- get_msg(next_by_subject=) ----------------------------------------------------------
@pytest.mark.parametrize("allow_direct", [False, True])
async def test_get_msg_next_by_subject(nats_url, allow_direct):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    name = uniq("NEXT")
    s = await js.create_stream(name=name, subjects=[f"{name}.>"], storage="memory", allow_direct=allow_direct)
    try:
        for subj in ("a", "b", "a", "b", "c"):  # seqs 1..5
            await js.publish(f"{name}.{subj}", subj.encode())
        for direct in (False, True):
            if direct and not allow_direct:
                continue
            got = await s.get_msg(1, direct=direct, next_by_subject=f"{name}.b")
            assert (got.seq, got.subject, got.data) == (2, f"{name}.b", b"b")
            assert (await s.get_msg(2, direct=direct, next_by_subject=f"{name}.b")).seq == 2  # at or after
            assert (await s.get_msg(3, direct=direct, next_by_subject=f"{name}.b")).seq == 4
            assert (await s.get_msg(4, direct=direct, next_by_subject=f"{name}.c")).seq == 5
            assert (await s.get_msg(3, direct=direct, next_by_subject=f"{name}.*")).seq == 3
            assert (await s.get_msg(0, direct=direct, next_by_subject=f"{name}.>")).seq == 1
            with pytest.raises(jetwire.MsgNotFoundError):
                await s.get_msg(5, direct=direct, next_by_subject=f"{name}.a")
        with pytest.raises(ValueError):
            await s.get_msg(1, next_by_subject="")
        with pytest.raises(jetwire.BadSubjectError):
            await s.get_msg(1, next_by_subject="a b")
    finally:
        await js.delete_stream(name)
        await nc.close()


# -- trace_cb ------------------------------------------------------------------------------
async def test_trace_cb_sees_every_api_request_and_response(nats_url):
    nc = await jetwire.connect(nats_url)
    calls: list = []
    js = nc.jetstream(trace_cb=lambda subject, payload: calls.append((subject, payload)))
    name = uniq("TRACE")
    try:
        await js.create_stream(name=name, subjects=[f"{name}.>"], storage="memory", allow_direct=True)
        assert len(calls) == 2
        (req_subject, req_payload), (resp_subject, resp_payload) = calls
        assert req_subject == f"$JS.API.STREAM.CREATE.{name}"
        assert isinstance(req_payload, bytes) and orjson.loads(req_payload)["name"] == name
        assert resp_subject != req_subject and isinstance(resp_payload, bytes)
        assert orjson.loads(resp_payload)["type"] == "io.nats.jetstream.api.v1.stream_create_response"

        calls.clear()
        await js.account_info()
        assert calls[0] == ("$JS.API.INFO", b"")
        assert orjson.loads(calls[1][1])["type"] == "io.nats.jetstream.api.v1.account_info_response"

        calls.clear()
        with pytest.raises(jetwire.StreamNotFoundError):
            await js.stream_info(uniq("missing"))
        assert len(calls) == 2 and b"stream not found" in calls[1][1]

        # a direct get is an API request too; publishes are not
        calls.clear()
        await js.publish(f"{name}.a", b"hello")
        assert calls == []
        s = await js.stream(name)
        calls.clear()
        assert (await s.get_msg(1)).data == b"hello"
        assert calls[0] == (f"$JS.API.DIRECT.GET.{name}", b'{"seq":1}')
        assert calls[1][1] == b"hello"
    finally:
        await js.delete_stream(name)
        await nc.close()


async def test_trace_cb_domain_no_response_and_failures(nats_url):
    errors = Errors()
    nc = await jetwire.connect(nats_url, error_cb=errors)
    calls: list = []

    async def trace(subject, payload):  # aio: a coroutine function works too
        calls.append(subject)
        await prims.sleep(0)

    js = nc.jetstream(domain="nowhere", trace_cb=trace, timeout=1)
    try:
        with pytest.raises(jetwire.JetStreamNotEnabledError):
            await js.account_info()
        assert calls == ["$JS.nowhere.API.INFO"]  # sent, never answered

        def broken(subject, payload):
            raise RuntimeError("trace failed")

        js2 = nc.jetstream(trace_cb=broken)
        assert (await js2.account_info()).api.level >= 1  # the request goes on
        assert isinstance(await errors.wait_for(RuntimeError), RuntimeError)
    finally:
        await nc.close()


# -- object digests --------------------------------------------------------------------------
async def test_object_digest_helpers_match_the_object_store(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("OBJ")
    obs = await js.create_object_store(bucket=bucket, storage="memory")
    try:
        data = bytes(range(256)) * 1000
        info = await obs.put_bytes("blob", data)
        assert jetwire.object_digest(data) == info.digest
        assert (await obs.get_info("blob")).digest == jetwire.object_digest(data)
        raw = hashlib.sha256(data).digest()
        assert jetwire.decode_object_digest(info.digest) == raw
        assert jetwire.object_digest(b"") == "SHA-256=" + base64.urlsafe_b64encode(hashlib.sha256(b"").digest()).decode()
        # standard base64 (as some writers send it) decodes to the same bytes
        std = "SHA-256=" + base64.b64encode(raw).decode()
        assert jetwire.decode_object_digest(std) == raw
        for bad in ("nope", "MD5=abc", "SHA-256=***"):
            with pytest.raises(jetwire.DigestMismatchError):
                jetwire.decode_object_digest(bad)
    finally:
        await js.delete_object_store(bucket)
        await nc.close()


# -- messages(err_on_missing_heartbeat=False) --------------------------------------------------
async def test_messages_without_heartbeat_errors_keep_going(fresh_nats_server: NatsServer):
    nc = await jetwire.connect(fresh_nats_server.url)
    js = nc.jetstream()
    name = uniq("HB")
    await js.create_stream(name=name, subjects=[f"{name}.>"], storage="memory")
    c = await js.create_consumer(name, durable_name="c", ack_policy="none")
    try:
        quiet = await c.messages(expires=2, heartbeat=0.5, err_on_missing_heartbeat=False)
        loud = await c.messages(expires=2, heartbeat=0.5)
        fresh_nats_server.freeze()
        try:
            # heartbeats stop for far longer than their 1 s window
            with pytest.raises(jetwire.NoHeartbeatError):
                await loud.next(timeout=10)
            with pytest.raises(jetwire.TimeoutError):
                await quiet.next(timeout=3)  # no NoHeartbeatError: it re-pulled and waits on
        finally:
            fresh_nats_server.thaw()
        loud.stop()
        await fill(js, f"{name}.a", 3)
        seqs = [(await quiet.next(timeout=10)).metadata.sequence.stream for _ in range(3)]
        assert seqs == [1, 2, 3]
        quiet.stop()
    finally:
        await js.delete_stream(name)
        await nc.close()
