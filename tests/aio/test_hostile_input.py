"""What another writer or a careless caller may hand jetwire, against a real server: a
stored object meta or KV marker whose subject part is a wildcard purges nothing but its
own, a buffer's size is its bytes (not its items), an async publish keeps what was
passed, and names that go into API subjects are checked. (asyncio source; the blocking
twin is generated.)"""
from __future__ import annotations

import array

import orjson
import pytest

import jetwire.aio as jetwire
from jetwire.jetstream.obj_models import obj_meta_subject
from tests.aio._helpers import uniq


async def test_an_object_meta_with_a_wildcard_nuid_purges_nothing_else(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("objinj").replace(".", "_")
    try:
        obs = await js.create_object_store(bucket=bucket)
        await obs.put_bytes("a", b"A" * 1000)
        await obs.put_bytes("b", b"B" * 1000)
        # anyone who may publish to the bucket can store a meta naming a wildcard
        meta = {"name": "evil", "bucket": bucket, "nuid": "*", "size": 1, "chunks": 1, "digest": "SHA-256=x"}
        await js.publish(obj_meta_subject(bucket, "evil"), orjson.dumps(meta), headers={"Nats-Rollup": "sub"})
        with pytest.raises(jetwire.BadObjectMetaError):
            await obs.delete("evil")
        with pytest.raises(jetwire.BadObjectMetaError):
            await obs.get_bytes("evil")
        assert await obs.get_bytes("a") == b"A" * 1000  # the others' chunks are all there
        assert await obs.get_bytes("b") == b"B" * 1000
    finally:
        await js.delete_object_store(bucket)
        await nc.close()


async def test_kv_purge_deletes_skips_a_marker_with_a_wildcard_key(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("kvinj").replace(".", "_")
    try:
        kv = await js.create_key_value(bucket=bucket)
        await kv.put("k1", b"1")
        await kv.put("k2", b"2")
        await kv.put("gone", b"x")
        await kv.delete("gone")
        # a delete marker written past the client's checks, for the key "*"
        await js.publish(f"$KV.{bucket}.*", b"", headers={"KV-Operation": "DEL"})
        await kv.purge_deletes(older_than=-1)
        assert (await kv.get("k1")).value == b"1" and (await kv.get("k2")).value == b"2"
        with pytest.raises(jetwire.KeyNotFoundError):
            await kv.get("gone")
    finally:
        await js.delete_key_value(bucket)
        await nc.close()


async def test_a_buffers_size_is_its_bytes_not_its_items(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    big = array.array("d", [0.0]) * (nc.max_payload // 8 + 1)  # a few items over in bytes, far under in items
    assert len(big) < nc.max_payload < big.itemsize * len(big)
    try:
        with pytest.raises(jetwire.MaxPayloadError):
            await nc.publish(uniq("big"), big)
        with pytest.raises(jetwire.MaxPayloadError):
            await nc.publish(uniq("big"), memoryview(big), headers={"k": "v"})
        with pytest.raises(jetwire.MaxPayloadError):
            await js.publish_async(uniq("big"), big, msg_id="m1")
        assert nc.is_connected  # refused here, not by the server (which would drop the connection)
        await nc.flush()
    finally:
        await nc.close()


async def test_an_async_publish_keeps_what_was_passed(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    stream = uniq("MUT").replace(".", "_")
    try:
        await js.create_stream(name=stream, subjects=[f"{stream}.>"])
        buf = bytearray(b"original payload")
        fut = await js.publish_async(f"{stream}.a", buf)
        buf[:] = b"MUTATED!-PAYLOAD"  # the caller reuses its buffer
        await js.publish_async_complete(10)
        assert fut.msg.data == b"original payload"
        assert (await (await js.stream(stream)).get_msg(1)).data == b"original payload"
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_names_that_go_into_api_subjects_are_checked(nats_url):
    nc = await jetwire.connect(nats_url)
    try:
        js = nc.jetstream()
        for bad in ("INJ.X", "*", "A B"):
            with pytest.raises(jetwire.InvalidStreamNameError):
                await js.subscribe(uniq("inj"), stream=bad, ordered_consumer=True)
        for bad in ("*", "x.y", "a b"):
            with pytest.raises(ValueError, match="domain"):
                nc.jetstream(domain=bad)
    finally:
        await nc.close()
