"""Per-message TTLs (js.publish/publish_async ttl=, KV create/purge ttl=) and counters
(js.incr) against a real nats-server (asyncio source; the blocking twin is generated)."""
from __future__ import annotations

import pytest

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims
from tests.aio._helpers import uniq, wait_until


async def ttl_stream(js, **config):
    name = uniq("TTL")
    return name, await js.create_stream(name=name, subjects=[f"{name}.>"], storage="memory", allow_msg_ttl=True,
                                        **config)


async def gone(stream, seq: int) -> bool:
    try:
        await stream.get_msg(seq)
    except jetwire.MsgNotFoundError:
        return True
    return False


async def test_publish_ttl_removes_the_message(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    name, s = await ttl_stream(js)
    try:
        assert s.cached_info().config.allow_msg_ttl is True
        short = await js.publish(f"{name}.a", b"short", ttl=1)
        fut = await js.publish_async(f"{name}.a", b"async", ttl=1.9)  # whole seconds on the wire
        long = await js.publish(f"{name}.a", b"long", ttl=3600)
        keep = await js.publish(f"{name}.a", b"keep")
        aseq = (await prims.wait_future(fut, 5)).seq
        assert (await s.get_msg(short.seq)).headers["Nats-TTL"] == "1s"
        assert (await s.get_msg(aseq)).headers["Nats-TTL"] == "1s"
        assert (await s.get_msg(long.seq)).headers["Nats-TTL"] == "3600s"
        assert (await s.get_msg(keep.seq)).headers is None

        async def expired():
            return await gone(s, short.seq) and await gone(s, aseq)

        assert await wait_until(expired, 15)
        assert (await s.get_msg(long.seq)).data == b"long"
        assert (await s.get_msg(keep.seq)).data == b"keep"
    finally:
        await js.delete_stream(name)
        await nc.close()


async def test_ttl_never_outlives_max_age(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    name, s = await ttl_stream(js, max_age=1)
    try:
        never = await js.publish(f"{name}.a", b"never", ttl="never")
        plain = await js.publish(f"{name}.a", b"plain")

        async def aged_out():
            return await gone(s, plain.seq)

        assert await wait_until(aged_out, 15)
        got = await s.get_msg(never.seq)
        assert got.data == b"never" and got.headers["Nats-TTL"] == "never"
    finally:
        await js.delete_stream(name)
        await nc.close()


async def test_ttl_errors(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    name = uniq("NOTTL")
    await js.create_stream(name=name, subjects=[f"{name}.>"], storage="memory")
    try:
        with pytest.raises(jetwire.MsgTTLDisabledError) as exc:
            await js.publish(f"{name}.a", b"x", ttl=5)
        assert isinstance(exc.value, jetwire.APIError) and exc.value.err_code == 10166
        fut = await js.publish_async(f"{name}.a", b"x", ttl=5)
        with pytest.raises(jetwire.MsgTTLDisabledError):
            await prims.wait_future(fut, 5)
        for bad in (0.5, 0, -3, "5m", float("nan")):
            with pytest.raises(ValueError):
                await js.publish(f"{name}.a", b"x", ttl=bad)
        with pytest.raises(TypeError):
            await js.publish(f"{name}.a", b"x", ttl=True)
        assert (await (await js.stream(name)).info()).state.messages == 0  # nothing was stored
    finally:
        await js.delete_stream(name)
        await nc.close()


async def test_kv_create_with_ttl_and_purge_marker_ttl(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("KVT")
    kv = await js.create_key_value(bucket=bucket, storage="memory", limit_marker_ttl=60)
    try:
        assert (await kv.status()).limit_marker_ttl == 60
        rev = await kv.create("k", b"v", ttl=1)
        assert (await kv.get("k")).value == b"v"
        with pytest.raises(jetwire.KeyExistsError):
            await kv.create("k", b"again", ttl=1)

        async def expired():
            try:
                await kv.get("k")
            except jetwire.KeyNotFoundError:
                return True
            return False

        assert await wait_until(expired, 15)
        # the server left a limit marker; create works over it
        rev2 = await kv.create("k", b"v2")
        assert rev2 > rev and (await kv.get("k")).value == b"v2"

        # a purge marker with a TTL: gone, with everything before it, once the TTL passed
        await kv.purge("k", ttl=1)
        with pytest.raises(jetwire.KeyDeletedError):
            await kv.get("k")

        async def no_history():
            try:
                await kv.history("k")
            except jetwire.KeyNotFoundError:
                return True
            return False

        assert await wait_until(no_history, 15)
        await kv.put("other", b"x")
        with pytest.raises(ValueError):
            await kv.create("z", b"v", ttl=0.2)
    finally:
        await js.delete_key_value(bucket)
        await nc.close()


async def test_kv_ttl_on_a_bucket_without_limit_markers(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("KVN")
    kv = await js.create_key_value(bucket=bucket, storage="memory")
    try:
        with pytest.raises(jetwire.MsgTTLDisabledError, match=bucket):
            await kv.create("k", b"v", ttl=5)
        with pytest.raises(jetwire.MsgTTLDisabledError, match="limit_marker_ttl"):
            await kv.purge("k", ttl=5)
        with pytest.raises(jetwire.KeyNotFoundError):
            await kv.get("k")
        assert await kv.create("k", b"v") == 1  # without a TTL: fine
    finally:
        await js.delete_key_value(bucket)
        await nc.close()


async def test_counter_incr(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    name = uniq("CNT")
    s = await js.create_stream(name=name, subjects=[f"{name}.>"], storage="memory", allow_msg_counter=True)
    try:
        assert s.cached_info().config.allow_msg_counter is True
        c = f"{name}.hits"
        assert await js.incr(c) == 1
        assert await js.incr(c, 5) == 6
        assert await js.incr(c, delta=-10) == -4
        assert await js.incr(c, 0) == -4
        assert await js.incr(f"{name}.other", 2**70) == 2**70  # beyond 64 bits
        assert await js.incr(f"{name}.other") == 2**70 + 1
        last = await s.get_last_msg_for_subject(c)
        assert last.data == b'{"val":"-4"}' and last.headers["Nats-Incr"] == "+0"
        with pytest.raises(TypeError):
            await js.incr(c, "1")
        with pytest.raises(TypeError):
            await js.incr(c, 1.5)
    finally:
        await js.delete_stream(name)
        await nc.close()


async def test_incr_on_a_stream_without_counters(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    name = uniq("NOCNT")
    await js.create_stream(name=name, subjects=[f"{name}.>"], storage="memory")
    try:
        with pytest.raises(jetwire.MsgCounterDisabledError) as exc:
            await js.incr(f"{name}.x")
        assert exc.value.err_code == 10168
        with pytest.raises(jetwire.NoStreamResponseError):
            await js.incr(uniq("nostream"))
    finally:
        await js.delete_stream(name)
        await nc.close()
