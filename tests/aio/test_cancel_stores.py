"""Store calls cancelled at their worst moment against a real nats-server: an object put
cancelled once its meta has been sent (or whose meta publish times out), and KV and
object watchers, listings, object reads and ordered consumers cancelled while their
consumer is being made. asyncio only: the blocking flavour has no cancellation (its
generated twin holds nothing but this docstring)."""
# aio-only: begin
from __future__ import annotations

import asyncio
import base64
import hashlib

import pytest

import jetwire.aio as jetwire
from tests.aio._helpers import uniq, wait_until

OLD = b"old version " * 1000  # one chunk
NEW = b"new version " * 100_000  # ten chunks of 128 KiB


def digest_of(data: bytes) -> str:
    return "SHA-256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode()


class Held:
    """Wraps an async callable (a request, a publish): a call for which ``which(*args)`` is
    true does its work, then holds its answer back until :meth:`cancel_and_release`: the
    moment a caller can be cancelled after the server acted but before it learned so
    (its answer on the way), made certain instead of raced for."""

    def __init__(self, fn, which=lambda *args: True) -> None:
        self.fn = fn
        self.which = which
        self.answered = asyncio.Event()
        self.release = asyncio.Event()

    async def __call__(self, *args, **kwargs):
        result = await self.fn(*args, **kwargs)
        if self.which(*args) and not self.release.is_set():
            self.answered.set()
            await self.release.wait()
        return result

    async def cancel_and_release(self, make) -> None:
        """Run ``make()`` as a task, cancel it once a held call was answered, then let the
        answer through; asserts the task ends cancelled."""
        task = asyncio.ensure_future(make())
        await asyncio.wait_for(self.answered.wait(), 10)
        assert not task.done()
        task.cancel()
        self.release.set()
        with pytest.raises(asyncio.CancelledError):
            await task


def consumer_create(subject, *args) -> bool:
    return subject.startswith("CONSUMER.CREATE.")


async def assert_one_whole_version(js, obs, bucket: str, name: str) -> bytes:
    """The object reads back whole as the old or the new version, and the bucket holds only
    that version's chunks and its meta."""
    data = await asyncio.wait_for(obs.get_bytes(name), 10)
    assert data in (OLD, NEW), f"got {len(data)} bytes"
    info = await obs.get_info(name)
    assert (info.size, info.digest) == (len(data), digest_of(data))
    assert (await js.stream_info(f"OBJ_{bucket}")).state.messages == info.chunks + 1
    return data


async def no_consumers_left(js, stream: str) -> None:
    async def none() -> bool:
        return (await js.stream_info(stream)).state.consumer_count == 0

    assert await wait_until(none), [c.name async for c in js.list_consumers(stream)]


async def test_put_cancelled_after_its_meta_was_sent_keeps_a_whole_version(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("obcancel")
    try:
        obs = await js.create_object_store(bucket=bucket)
        await obs.put_bytes("file", OLD)
        # the meta is stored, its ack on the way: the caller gives up waiting for it
        obs._publish_meta = held = Held(obs._publish_meta)
        await held.cancel_and_release(lambda: obs.put_bytes("file", NEW))
        # the put went through (its meta is stored): the new version stays, the old chunks went
        assert await assert_one_whole_version(js, obs, bucket, "file") == NEW
    finally:
        await js.delete_object_store(bucket)
        await nc.close()


async def test_put_whose_meta_ack_is_lost_decides_by_the_stored_meta(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("obackl")
    try:
        obs = await js.create_object_store(bucket=bucket)
        await obs.put_bytes("file", OLD)
        publish_meta = obs._publish_meta

        async def stored_but_ack_lost(info) -> None:
            await publish_meta(info)
            raise jetwire.TimeoutError("the meta's ack was lost")

        obs._publish_meta = stored_but_ack_lost
        # the meta is there: the put stands (its chunks are not purged from under it)
        info = await obs.put_bytes("file", NEW)
        assert info.size == len(NEW)
        assert await assert_one_whole_version(js, obs, bucket, "file") == NEW

        async def never_stored(info) -> None:
            raise jetwire.TimeoutError("the meta never got there")

        obs._publish_meta = never_stored
        # the meta is not there: the put fails and the version before stays whole
        with pytest.raises(jetwire.TimeoutError):
            await obs.put_bytes("file", OLD)
        assert await assert_one_whole_version(js, obs, bucket, "file") == NEW
    finally:
        await js.delete_object_store(bucket)
        await nc.close()


@pytest.mark.parametrize("op", ["keys", "history", "watch", "watch_all"])
async def test_kv_call_cancelled_while_its_consumer_is_made_leaves_none(nats_url, op):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("kvcancel")
    stream = f"KV_{bucket}"
    try:
        kv = await js.create_key_value(bucket=bucket)
        for i in range(3):
            await kv.put(f"k{i}", b"v")
        args = {"keys": (), "history": ("k1",), "watch": ("k.>",), "watch_all": ()}[op]
        js.api_request = held = Held(js.api_request, consumer_create)
        await held.cancel_and_release(lambda: getattr(kv, op)(*args))
        await no_consumers_left(js, stream)
    finally:
        await js.delete_key_value(bucket)
        await nc.close()


@pytest.mark.parametrize("op", ["get", "get_bytes", "list", "watch"])
async def test_object_call_cancelled_while_its_consumer_is_made_leaves_none(nats_url, op):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("obcons")
    stream = f"OBJ_{bucket}"
    try:
        obs = await js.create_object_store(bucket=bucket)
        await obs.put_bytes("file", OLD)
        args = ("file",) if op.startswith("get") else ()
        js.api_request = held = Held(js.api_request, consumer_create)
        await held.cancel_and_release(lambda: getattr(obs, op)(*args))
        await no_consumers_left(js, stream)
    finally:
        await js.delete_object_store(bucket)
        await nc.close()


async def test_ordered_consumer_cancelled_while_its_consumer_is_made_leaves_none(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    stream = uniq("ORDCANCEL")
    try:
        await js.create_stream(name=stream, subjects=[f"{stream}.>"])
        await js.publish(f"{stream}.a", b"m")
        js.api_request = held = Held(js.api_request, consumer_create)
        await held.cancel_and_release(lambda: js.ordered_consumer(stream))
        await no_consumers_left(js, stream)
    finally:
        await js.delete_stream(stream)
        await nc.close()

async def test_rename_cancelled_after_its_new_meta_was_sent_leaves_one_name(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("obrename")
    try:
        obs = await js.create_object_store(bucket=bucket)
        await obs.put_bytes("a", OLD)
        info = await obs.get_info("a")
        info.name = "b"
        # the new name's meta is stored, its ack on the way: the caller gives up waiting
        obs._publish_meta = held = Held(obs._publish_meta)
        await held.cancel_and_release(lambda: obs.update_meta("a", info))
        # the rename was seen through: the old name is gone, not left on the same chunks
        # (a later put to "a" would have purged the chunks "b" reads)
        assert await wait_until(lambda: _gone(obs, "a"))
        assert await obs.get_bytes("b") == OLD
        await obs.put_bytes("a", NEW)
        assert await obs.get_bytes("b") == OLD
    finally:
        await js.delete_object_store(bucket)
        await nc.close()


async def test_delete_cancelled_after_its_meta_was_sent_still_purges_the_chunks(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("obdelete")
    try:
        obs = await js.create_object_store(bucket=bucket)
        await obs.put_bytes("a", NEW)
        # the deleted meta is stored, its ack on the way: the caller gives up waiting
        obs._publish_meta = held = Held(obs._publish_meta)
        await held.cancel_and_release(lambda: obs.delete("a"))

        async def only_the_meta_left() -> bool:
            return (await js.stream_info(f"OBJ_{bucket}")).state.messages == 1

        assert await wait_until(only_the_meta_left)  # the chunks went too
        assert (await obs.get_info("a", show_deleted=True)).deleted
    finally:
        await js.delete_object_store(bucket)
        await nc.close()


async def _gone(obs, name: str) -> bool:
    try:
        await obs.get_info(name)
    except jetwire.ObjectNotFoundError:
        return True
    return False
# aio-only: end
