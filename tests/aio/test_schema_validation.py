"""``nc.jetstream(validate=True)`` against a real nats-server (asyncio source; the
blocking twin is generated): valid configs go out complete and work, invalid ones raise
``SchemaValidationError`` and the server's API request counter proves nothing was sent."""
from __future__ import annotations

import orjson
import pytest

import jetwire.aio as jetwire
from jetwire import schemas
from tests.aio._helpers import uniq

VALID_STREAMS = [
    {},
    {"max_msgs": 100, "max_bytes": 1 << 20, "max_age": 3600.0, "storage": "memory", "discard": "new"},
    {"retention": "workqueue", "max_msgs_per_subject": 5, "duplicate_window": 1.5, "description": "d" * 4096},
    {"retention": jetwire.RetentionPolicy.INTEREST, "num_replicas": 1, "allow_direct": True,
     "metadata": {"team": "a"}, "compression": "s2"},
]

INVALID_STREAMS = [  # (fields, the JSON path named in the error)
    ({"max_msgs": -5}, "$.max_msgs"),                       # negative limit
    ({"max_bytes": -2}, "$.max_bytes"),
    ({"max_age": -1.0}, "$.max_age"),                       # negative duration
    ({"storage": "disk"}, "$.storage"),                     # wrong enum
    ({"retention": "forever"}, "$.retention"),
    ({"discard": "oldest"}, "$.discard"),
    ({"num_replicas": 7}, "$.num_replicas"),
    ({"max_msgs": "ten"}, "$.max_msgs"),                    # wrong field types
    ({"max_consumers": 1.5}, "$.max_consumers"),
    ({"deny_delete": "yes"}, "$.deny_delete"),
    ({"subjects": "orders.>"}, "$.subjects"),
    ({"subjects": [""]}, "$.subjects[0]"),
    ({"description": "d" * 4097}, "$.description"),
    ({"mirror": {"name": "bad name"}}, "$.mirror.name"),    # bad names
    ({"sources": [{"name": "a.b"}]}, "$.sources[0].name"),
]

INVALID_CONSUMERS = [
    ({"ack_policy": "sometimes"}, "$.config.ack_policy"),
    ({"deliver_policy": "first"}, "$.config.deliver_policy"),
    ({"max_waiting": -1}, "$.config.max_waiting"),
    ({"max_deliver": -5}, "$.config.max_deliver"),
    ({"max_ack_pending": -3}, "$.config.max_ack_pending"),
    ({"backoff": [1.0, -1.0]}, "$.config.backoff[1]"),
    ({"sample_freq": "often"}, "$.config.sample_freq"),
    ({"max_batch": "many"}, "$.config.max_batch"),
    ({"filter_subjects": ["a", ""]}, "$.config.filter_subjects[1]"),
]


async def api_total(js) -> int:
    return (await js.account_info()).api.total


async def test_valid_configs_go_out_complete(nats_url):
    sent: list = []

    def trace(subject, payload):
        if ".CREATE." in subject:
            sent.append((subject, payload))

    nc = await jetwire.connect(nats_url)
    js = nc.jetstream(validate=True, trace_cb=trace)
    names = []
    try:
        for fields in VALID_STREAMS:
            name = uniq("SV")
            names.append(name)
            stream = await js.create_stream(name=name, subjects=[f"{name}.>"], **fields)
            assert stream.cached_info().config.name == name
        c = await js.create_consumer(names[0], durable_name="D", max_deliver=3, backoff=[1.0, 2.0],
                                     sample_freq="50%", filter_subjects=[f"{names[0]}.a", f"{names[0]}.b"])
        assert c.cached_info().config.max_deliver == 3
        await js.publish(f"{names[0]}.a", b"x")
        msg = await js.stream(names[0])
        assert (await msg.get_msg(1)).data == b"x"
        await js.delete_consumer(names[0], "D")
    finally:
        for name in names:
            await js.delete_stream(name)
        await nc.close()
    assert len(sent) == len(VALID_STREAMS) + 1
    for _subject, payload in sent[:-1]:
        body = orjson.loads(payload)
        for required in ("retention", "max_consumers", "max_msgs", "max_bytes", "max_age", "storage",
                         "num_replicas"):
            assert required in body, (required, body)
        assert schemas.validate(body, "io.nats.jetstream.api.v1.stream_create_request") == []
    req = orjson.loads(sent[-1][1])
    assert req["config"]["ack_policy"] == "explicit"
    assert schemas.validate(req, "io.nats.jetstream.api.v1.consumer_create_request") == []


async def test_invalid_configs_raise_with_nothing_sent(nats_url):
    nc = await jetwire.connect(nats_url)
    plain = nc.jetstream()
    js = nc.jetstream(validate=True)
    name = uniq("SI")
    await plain.create_stream(name=name, subjects=[f"{name}.>"])
    try:
        # the counter counts: one request between two readings adds one
        t0 = await api_total(plain)
        t1 = await api_total(plain)
        base = t1 - t0
        await js.stream(name)
        t2 = await api_total(plain)
        assert t2 - t1 == base + 1

        before = await api_total(plain)
        for fields, path in INVALID_STREAMS:
            with pytest.raises(jetwire.SchemaValidationError) as ei:
                await js.create_stream(name=uniq("BAD"), **fields)
            assert ei.value.errors and ei.value.errors[0].startswith(path + ":"), (fields, ei.value.errors)
            assert isinstance(ei.value, jetwire.JetStreamError)
            with pytest.raises(jetwire.SchemaValidationError):
                await js.update_stream(name=name, **fields)
        for fields, path in INVALID_CONSUMERS:
            with pytest.raises(jetwire.SchemaValidationError) as ei:
                await js.create_consumer(name, durable_name="D", **fields)
            assert ei.value.errors[0].startswith(path + ":"), (fields, ei.value.errors)
        # raw requests are checked too: a bad durable name, an unknown field, a bad type
        for subject, payload in [
            (f"CONSUMER.CREATE.{name}.D", {"stream_name": name, "config": {"durable_name": "a b"}}),
            (f"STREAM.CREATE.{name}X", {"name": f"{name}X", "colour": "red"}),
            (f"STREAM.CREATE.{name}X", b'{"name": "X", "max_msgs": "1"}'),
            (f"STREAM.MSG.DELETE.{name}", {"seq": 0}),
            (f"STREAM.PURGE.{name}", {"keep": -1}),
            ("STREAM.NAMES", {"offset": -1}),
        ]:
            with pytest.raises(jetwire.SchemaValidationError):
                await js.api_request(subject, payload)
        after = await api_total(plain)
        assert after - before == base, "an invalid request reached the server"
        assert [c async for c in plain.consumer_names(name)] == []
    finally:
        await plain.delete_stream(name)
        await nc.close()


async def test_everything_jetwire_sends_validates(nats_url):
    """KV, object stores, ordered and push consumers, paging, purges and message gets all
    build requests the schemas accept."""
    checked: list = []

    def trace(subject, payload):
        rel = subject[len("$JS.API."):] if subject.startswith("$JS.API.") else None
        if rel is not None and payload and schemas.request_type(rel):
            assert schemas.validate(payload, schemas.request_type(rel)) == [], (subject, payload)
            checked.append(rel.split(".")[0:2])

    nc = await jetwire.connect(nats_url)
    js = nc.jetstream(validate=True, trace_cb=trace)
    b, s = uniq("KV"), uniq("SV")
    try:
        kv = await js.create_key_value(bucket=b, history=5, ttl=60.0)
        await kv.put("a", b"1")
        assert (await kv.get("a")).value == b"1"
        ob = await js.create_object_store(bucket=b)
        await ob.put_bytes("x", b"y" * 300000)
        assert len(await ob.get_bytes("x")) == 300000
        await js.create_stream(name=s, subjects=[f"{s}.>"])
        for _ in range(3):
            await js.publish(f"{s}.a", b"x")
        oc = await js.ordered_consumer(s)
        assert len([m async for m in await oc.fetch(3)]) == 3
        sub = await js.subscribe(f"{s}.a", durable="P")
        assert (await sub.next_msg(timeout=5)).data == b"x"
        await sub.unsubscribe()
        stream = await js.stream(s)
        await stream.purge(keep=1)
        assert [n async for n in js.stream_names()]
    finally:
        await js.delete_key_value(b)
        await js.delete_object_store(b)
        await js.delete_stream(s)
        await nc.close()
    assert ["STREAM", "CREATE"] in checked and ["CONSUMER", "CREATE"] in checked
