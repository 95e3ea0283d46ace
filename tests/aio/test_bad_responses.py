"""Answers that are not what a JetStream server sends, from something else that answers
on the API subjects (an ``api_prefix`` pointing at the wrong service) or on a publish's
subject (a plain responder, not a stream), against a real server: each is a typed
``InvalidJSONError`` (a ``JetStreamError``) naming what did not fit, never an untyped
decoding error and never an ack the user would take for a stored message; the
connection goes on working. (asyncio source; the blocking twin is generated.)"""
from __future__ import annotations

import orjson
import pytest

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims
from tests.aio._helpers import uniq

CREATED = "2026-01-02T03:04:05.123456789Z"


def _stream_info(**config) -> dict:
    return {"type": "io.nats.jetstream.api.v1.stream_info_response", "created": CREATED,
            "config": {"name": "S", "subjects": ["s.>"], **config},
            "state": {"messages": 0, "bytes": 0, "first_seq": 0, "last_seq": 0, "consumer_count": 0}}


async def test_api_answers_of_the_wrong_shape_are_typed_errors(nats_url):
    prefix = uniq("FAKE")
    answers = {
        "STREAM.INFO.NOTJSON": b"hello, I am not JetStream",
        "STREAM.INFO.ARRAY": b"[1, 2, 3]",
        "STREAM.INFO.SUBJECTS": orjson.dumps(_stream_info(subjects="s.>")),
        "STREAM.INFO.MAXAGE": orjson.dumps(_stream_info(max_age="1h")),
        "STREAM.INFO.STATE": orjson.dumps({**_stream_info(), "state": {"messages": "many"}}),
        "STREAM.INFO.CREATED": orjson.dumps({**_stream_info(), "created": 12}),
        "STREAM.INFO.ERRSTR": b'{"error": "something broke"}',
        "STREAM.INFO.GOOD": orjson.dumps(_stream_info()),
    }
    nc = await jetwire.connect(nats_url)
    try:
        async def answer(msg):
            await msg.respond(answers[msg.subject[len(prefix) + 1:]])

        await nc.subscribe(f"{prefix}.>", cb=answer)
        await nc.flush()
        js = nc.jetstream(api_prefix=prefix, timeout=2)

        cases = [("NOTJSON", ""), ("ARRAY", ""), ("SUBJECTS", "config.subjects"), ("MAXAGE", "config.max_age"),
                 ("STATE", "state.messages"), ("CREATED", "created")]
        for name, path in cases:
            with pytest.raises(jetwire.InvalidJSONError) as ei:
                await js.stream_info(name)
            assert isinstance(ei.value, jetwire.JetStreamError)
            if path:
                assert ei.value.model == "StreamInfo" and ei.value.path == path, (name, ei.value)
                assert f"StreamInfo.{path}" in str(ei.value)
        with pytest.raises(jetwire.APIError, match="something broke"):
            await js.stream_info("ERRSTR")
        info = await js.stream_info("GOOD")  # the same context and connection still work
        assert info.config.subjects == ["s.>"] and info.state.messages == 0
    finally:
        await nc.close()


async def test_a_publish_answered_by_a_plain_responder_is_not_an_ack(nats_url):
    subject = uniq("plain")
    replies = iter([b"ok", b'{"stream": "S"}', b'{"stream": "S", "seq": "7"}', b'{"seq": 7}',
                    b'{"seq": "7", "stream": "S"}', b'{"stream": "S", "seq": 7}'])
    nc = await jetwire.connect(nats_url)
    try:
        async def answer(msg):
            await msg.respond(next(replies))

        await nc.subscribe(subject, cb=answer)
        await nc.flush()
        js = nc.jetstream(timeout=2)
        for _ in range(3):
            with pytest.raises(jetwire.InvalidJSONError, match="invalid JetStream publish ack"):
                await js.publish(subject, b"x")
        for _ in range(2):  # (no stream; a seq that is no integer: as publish, not an ack)
            fut = await js.publish_async(subject, b"x")
            with pytest.raises(jetwire.InvalidJSONError, match="invalid JetStream publish ack"):
                await prims.wait_future(fut, 5.0)
        ack = await js.publish(subject, b"x")  # an answer that is an ack is one
        assert (ack.stream, ack.seq) == ("S", 7)
    finally:
        await nc.close()


async def test_listing_pages_that_leave_out_what_the_server_cannot_reach(nats_url):
    """A cluster with a node down leaves the streams it cannot reach out of a page
    (``missing``) but counts them in ``total`` and in its offsets: each stream is listed
    once (the next page starts at ``offset + limit``, as jsm.go's), not the last ones
    again and again."""
    prefix = uniq("FAKE")
    names = [f"S{i}" for i in range(7)]
    gone = {"S1", "S4", "S5"}
    asked: list = []
    nc = await jetwire.connect(nats_url)
    try:
        async def answer(msg):
            offset = orjson.loads(msg.data).get("offset", 0)
            asked.append(offset)
            window = names[offset:offset + 2]  # a page of 2, as a server's of 256
            page = [{**_stream_info(), "config": {"name": n, "subjects": [f"{n}.>"]}} for n in window if n not in gone]
            await msg.respond(orjson.dumps({"total": len(names), "offset": offset, "limit": 2, "streams": page,
                                            "missing": [n for n in window if n in gone]}))

        await nc.subscribe(f"{prefix}.STREAM.LIST", cb=answer)
        await nc.flush()
        js = nc.jetstream(api_prefix=prefix, timeout=2)
        listed = [info.config.name async for info in js.list_streams()]
        assert listed == ["S0", "S2", "S3", "S6"] and asked == [0, 2, 4, 6]
    finally:
        await nc.close()


async def test_a_cluster_operation_nobody_answers_is_an_api_error(nats_url):
    """Every cluster operation raises a typed APIError when it is not acknowledged: one
    that gets no answer in time (a step-down during an election) too (code 408)."""
    prefix = uniq("FAKE")
    nc = await jetwire.connect(nats_url)
    try:
        await nc.subscribe(f"{prefix}.>", cb=lambda msg: None)  # takes every request, answers none
        await nc.flush()
        js = nc.jetstream(api_prefix=prefix, timeout=0.3)
        calls = [lambda: js.stream_leader_stepdown("S"), lambda: js.consumer_leader_stepdown("S", "C"),
                 lambda: js.remove_stream_peer("S", "n2"), lambda: js.meta_leader_stepdown()]
        for call in calls:
            with pytest.raises(jetwire.APIError) as ei:
                await call()
            assert ei.value.code == 408 and "no answer" in str(ei.value)
    finally:
        await nc.close()
