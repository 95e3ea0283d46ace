"""Object store against a real nats-server (asyncio source; the blocking twin is generated)."""
from __future__ import annotations

import base64
import hashlib
import io
import os

import orjson
import pytest

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims
from jetwire.aio.push_core import Watcher  # aio-only

# sync-only: from jetwire._sync.push_core import Watcher
from tests.aio._helpers import drain_initial, server_subscriptions, uniq, wait_until

CHUNK = 128 * 1024


def digest_of(data: bytes) -> str:
    return "SHA-256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode()


def meta_subject(bucket: str, name: str) -> str:
    return f"$O.{bucket}.M.{base64.urlsafe_b64encode(name.encode()).decode()}"


async def stream_messages(js, bucket: str) -> int:
    return (await js.stream_info(f"OBJ_{bucket}")).state.messages


async def test_bucket_lifecycle(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("oblife")
    try:
        obs = await js.create_object_store(bucket=bucket, description="objs", ttl=3600.0, max_bytes=64 << 20,
                                           storage=jetwire.StorageType.FILE, metadata={"k": "v"})
        assert obs.bucket == bucket
        st = await obs.status()
        assert isinstance(st, jetwire.ObjectStoreStatus)
        assert (st.bucket, st.description, st.ttl, st.sealed, st.size) == (bucket, "objs", 3600.0, False, 0)
        assert st.metadata.get("k") == "v" and st.backing_store == "JetStream"
        cfg = st.stream_info.config
        assert cfg.name == f"OBJ_{bucket}"
        assert cfg.subjects == [f"$O.{bucket}.C.>", f"$O.{bucket}.M.>"]
        assert cfg.allow_rollup_hdrs and cfg.allow_direct and cfg.discard == jetwire.DiscardPolicy.NEW
        assert (await js.object_store(bucket)).bucket == bucket
        assert bucket in [n async for n in js.object_store_names()]
        assert bucket in [s.bucket async for s in js.object_stores()]
        obs2 = await js.update_object_store(bucket=bucket, description="changed", ttl=3600.0, max_bytes=64 << 20,
                                            metadata={"k": "v"})
        assert (await obs2.status()).description == "changed"
        obs3 = await js.create_or_update_object_store(bucket=bucket, description="again", ttl=3600.0,
                                                      max_bytes=64 << 20)
        assert (await obs3.status()).description == "again"
    finally:
        assert await js.delete_object_store(bucket) is True
    with pytest.raises(jetwire.BucketNotFoundError):
        await js.object_store(bucket)
    with pytest.raises(jetwire.BucketNotFoundError):
        await js.delete_object_store(bucket)
    with pytest.raises(jetwire.BucketNotFoundError):
        await js.update_object_store(bucket=bucket)
    await nc.flush()
    sent = nc.stats["out_msgs"]
    for bad in ("a.b", "", "a b", "x>"):
        with pytest.raises(jetwire.InvalidBucketNameError):
            await js.create_object_store(bucket=bad)
        with pytest.raises(jetwire.InvalidBucketNameError):
            await js.object_store(bad)
    assert nc.stats["out_msgs"] == sent
    await nc.close()


@pytest.mark.parametrize("size", [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 17])
async def test_round_trip_sizes(nats_url, size):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("obrt")
    obs = await js.create_object_store(bucket=bucket)
    try:
        data = os.urandom(size)
        info = await obs.put_bytes("blob", data)
        assert isinstance(info, jetwire.ObjectInfo)
        assert (info.name, info.bucket, info.size) == ("blob", bucket, size)
        assert info.chunks == -(-size // CHUNK)
        assert info.digest == digest_of(data)
        assert info.max_chunk_size == CHUNK
        assert info.nuid and not info.deleted and info.link is None
        assert info.mtime is not None
        assert await obs.get_bytes("blob") == data
        stored = await obs.get_info("blob")
        assert (stored.size, stored.chunks, stored.digest, stored.nuid) == (size, info.chunks, info.digest, info.nuid)
        assert stored.mtime is not None and stored.mtime.tzinfo is not None
        result = await obs.get("blob")
        assert result.info.name == "blob" and result.info.size == size
        got = bytearray()
        while True:
            part = await result.read(1000)
            if not part:
                break
            assert len(part) <= 1000
            got += part
        assert bytes(got) == data
        assert await result.read() == b""
        result.close()
        # chunk iteration and readinto
        result = await obs.get("blob")
        assert b"".join([c async for c in result]) == data
        result = await obs.get("blob")
        buf = bytearray(size + 10)
        n = 0
        while True:
            k = await result.readinto(memoryview(buf)[n:])
            if k == 0:
                break
            n += k
        assert n == size and bytes(buf[:n]) == data
        # the stream holds exactly the chunks and one meta message
        assert await stream_messages(js, bucket) == info.chunks + 1
    finally:
        await js.delete_object_store(bucket)
        await nc.close()


async def test_fifty_megabytes(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("ob50")
    obs = await js.create_object_store(bucket=bucket)
    try:
        data = os.urandom(50 * 1024 * 1024)
        info = await obs.put(jetwire.ObjectMeta(name="big/file.bin", description="50 MB"), io.BytesIO(data))
        assert info.size == len(data) and info.chunks == 400 and info.digest == digest_of(data)
        h = hashlib.sha256()
        total = 0
        async with await obs.get("big/file.bin") as result:
            assert result.info.description == "50 MB"
            while True:
                part = await result.read(1 << 20)
                if not part:
                    break
                h.update(part)
                total += len(part)
        assert total == len(data) and h.digest() == hashlib.sha256(data).digest()
        st = await obs.status()
        assert st.size > len(data)
    finally:
        await js.delete_object_store(bucket)
        await nc.close()


async def test_slow_reader_memory_stays_bounded(nats_url):
    """Flow control is answered only as the reader takes chunks: what waits in memory
    is bounded by the server's window, not by the object's size."""
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("obslow")
    obs = await js.create_object_store(bucket=bucket)
    try:
        data = os.urandom(40 * 1024 * 1024)
        await obs.put_bytes("big", data)
        result = await obs.get("big")
        first = await result.read(10)
        await prims.sleep(1.0)
        queued = len(result._push._queue)
        assert queued * CHUNK < 16 * 1024 * 1024, queued
        rest = await result.read()
        assert first + rest == data
        assert result._push._state.fc_answered > 0
    finally:
        await js.delete_object_store(bucket)
        await nc.close()


async def test_put_variants_and_files(nats_url, tmp_path):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("obfile")
    obs = await js.create_object_store(bucket=bucket)
    try:
        info = await obs.put_string("greeting", "héllo wörld")
        assert info.size == len("héllo wörld".encode())
        assert await obs.get_string("greeting") == "héllo wörld"

        # custom chunk size, headers and metadata
        meta = jetwire.ObjectMeta(name="chunky", description="d", headers={"X-A": "1"}, metadata={"m": "v"},
                                  max_chunk_size=1000)
        data = os.urandom(4500)
        info = await obs.put(meta, io.BytesIO(data))
        assert info.chunks == 5 and info.max_chunk_size == 1000
        assert meta.max_chunk_size == 1000  # the caller's meta is not changed otherwise
        stored = await obs.get_info("chunky")
        assert stored.headers["X-A"] == "1" and stored.metadata == {"m": "v"} and stored.description == "d"
        assert stored.max_chunk_size == 1000
        assert await obs.get_bytes("chunky") == data

        # a reader that returns short reads still gives full chunks
        class Trickle:
            def __init__(self, payload: bytes) -> None:
                self.buf = io.BytesIO(payload)

            def read(self, n: int = -1) -> bytes:
                return self.buf.read(min(n, 7) if n and n > 0 else 7)

        info = await obs.put(jetwire.ObjectMeta(name="trickle", max_chunk_size=100), Trickle(data[:1000]))
        assert info.chunks == 10 and await obs.get_bytes("trickle") == data[:1000]

        src = tmp_path / "source.bin"
        src.write_bytes(data)
        info = await obs.put_file(str(src))
        assert info.name == str(src)
        assert await obs.get_bytes(str(src)) == data
        info = await obs.put_file(src, name="named")
        assert info.name == "named"
        dst = tmp_path / "out.bin"
        await obs.get_file("named", str(dst))
        assert dst.read_bytes() == data
        with pytest.raises(jetwire.ObjectNotFoundError):
            await obs.get_file("missing", str(tmp_path / "never.bin"))
        assert not (tmp_path / "never.bin").exists()

        # replacing an object purges the chunks of the old version
        before = await stream_messages(js, bucket)
        await obs.put_bytes("chunky", b"small")
        assert await obs.get_bytes("chunky") == b"small"
        assert await stream_messages(js, bucket) == before - 5 + 1  # 5 old chunks out, 1 in, meta replaced
        with pytest.raises(jetwire.BadObjectMetaError):
            await obs.put_bytes("", b"x")
    finally:
        await js.delete_object_store(bucket)
        await nc.close()


async def test_failed_put_leaves_nothing(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("obfail")
    obs = await js.create_object_store(bucket=bucket)
    try:
        await obs.put_bytes("keep", b"old data")
        before = await stream_messages(js, bucket)

        class Broken:
            def __init__(self) -> None:
                self.n = 0

            def read(self, n: int = -1) -> bytes:
                self.n += 1
                if self.n > 3:
                    raise OSError("disk on fire")
                return b"x" * n

        with pytest.raises(OSError):
            await obs.put(jetwire.ObjectMeta(name="keep", max_chunk_size=1024), Broken())
        assert await stream_messages(js, bucket) == before
        assert await obs.get_bytes("keep") == b"old data"
    finally:
        await js.delete_object_store(bucket)
        await nc.close()


async def test_corruption_is_detected(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("obbad")
    obs = await js.create_object_store(bucket=bucket)
    try:
        data = os.urandom(2 * CHUNK + 5)
        # an extra chunk published to the object's chunk subject
        info = await obs.put_bytes("extra", data)
        await js.publish(f"$O.{bucket}.C.{info.nuid}", b"intruder")
        with pytest.raises(jetwire.DigestMismatchError):
            await obs.get_bytes("extra")
        # a chunk replaced by another payload of the same size
        info = await obs.put_bytes("swapped", data)
        chunk_subject = f"$O.{bucket}.C.{info.nuid}"
        await (await js.stream(f"OBJ_{bucket}")).purge(subject=chunk_subject)
        forged = bytearray(data)
        forged[CHUNK + 3] ^= 0xFF
        for i in range(0, len(forged), CHUNK):
            await js.publish(chunk_subject, bytes(forged[i:i + CHUNK]))
        result = await obs.get("swapped")
        got = bytearray()
        with pytest.raises(jetwire.DigestMismatchError):
            while True:
                part = await result.read(CHUNK)
                if not part:
                    break
                got += part
        assert len(got) == len(data)  # the data came; the check at EOF failed
        # the meta's digest rewritten
        info = await obs.put_bytes("meta", data)
        d = orjson.loads(orjson.dumps(info.to_json_dict()))
        d["digest"] = digest_of(b"something else")
        await js.publish(meta_subject(bucket, "meta"), orjson.dumps(d), headers={"Nats-Rollup": "sub"})
        with pytest.raises(jetwire.DigestMismatchError):
            await obs.get_bytes("meta")
        # a size that does not match
        info = await obs.put_bytes("size", data)
        d = orjson.loads(orjson.dumps(info.to_json_dict()))
        d["size"] = len(data) + 1
        await js.publish(meta_subject(bucket, "size"), orjson.dumps(d), headers={"Nats-Rollup": "sub"})
        with pytest.raises(jetwire.DigestMismatchError):
            await obs.get_bytes("size")
        # a meta message that is not JSON
        await js.publish(meta_subject(bucket, "junk"), b"not json", headers={"Nats-Rollup": "sub"})
        with pytest.raises(jetwire.BadObjectMetaError):
            await obs.get_info("junk")
    finally:
        await js.delete_object_store(bucket)
        await nc.close()


async def test_info_delete_and_list(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("obdel")
    obs = await js.create_object_store(bucket=bucket)
    try:
        assert await obs.list() == []
        assert await obs.list(show_deleted=True) == []
        with pytest.raises(jetwire.ObjectNotFoundError):
            await obs.get_info("nope")
        with pytest.raises(jetwire.ObjectNotFoundError):
            await obs.get("nope")
        with pytest.raises(jetwire.ObjectNotFoundError):
            await obs.delete("nope")
        await obs.put_bytes("a", os.urandom(3 * CHUNK))
        await obs.put_bytes("b", b"bee")
        await obs.put_bytes("c", b"sea")
        assert [i.name for i in await obs.list()] == ["a", "b", "c"]
        await obs.delete("a")
        with pytest.raises(jetwire.ObjectNotFoundError):
            await obs.get_info("a")
        with pytest.raises(jetwire.ObjectNotFoundError):
            await obs.get_bytes("a")
        gone = await obs.get_info("a", show_deleted=True)
        assert gone.deleted and gone.size == 0 and gone.chunks == 0 and not gone.digest
        assert await obs.get_bytes("a", show_deleted=True) == b""
        assert [i.name for i in await obs.list()] == ["b", "c"]
        listed = await obs.list(show_deleted=True)
        assert sorted((i.name, i.deleted) for i in listed) == [("a", True), ("b", False), ("c", False)]
        assert all(i.mtime is not None and i.bucket == bucket for i in listed)
        # chunks are gone: 2 live objects (1 chunk each) + 3 metas
        assert await stream_messages(js, bucket) == 5
        # a deleted name can be used again
        await obs.put_bytes("a", b"back")
        assert await obs.get_bytes("a") == b"back"
    finally:
        await js.delete_object_store(bucket)
        await nc.close()


async def test_update_meta(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("obmeta")
    obs = await js.create_object_store(bucket=bucket)
    try:
        data = os.urandom(CHUNK + 10)
        await obs.put_bytes("old", data)
        await obs.put_bytes("taken", b"t")
        await obs.update_meta("old", jetwire.ObjectMeta(name="old", description="described", metadata={"a": "b"}))
        info = await obs.get_info("old")
        assert info.description == "described" and info.metadata == {"a": "b"}
        assert await obs.get_bytes("old") == data
        with pytest.raises(jetwire.ObjectAlreadyExistsError):
            await obs.update_meta("old", jetwire.ObjectMeta(name="taken"))
        await obs.update_meta("old", jetwire.ObjectMeta(name="new", description="renamed"))
        with pytest.raises(jetwire.ObjectNotFoundError):
            await obs.get_info("old")
        info = await obs.get_info("new")
        assert info.description == "renamed" and info.size == len(data)
        assert await obs.get_bytes("new") == data
        with pytest.raises(jetwire.ObjectNotFoundError):
            await obs.update_meta("old", jetwire.ObjectMeta(name="x"))
        # renaming onto a deleted object is allowed
        await obs.delete("taken")
        await obs.update_meta("new", jetwire.ObjectMeta(name="taken"))
        assert await obs.get_bytes("taken") == data
        assert sorted(i.name for i in await obs.list()) == ["taken"]
    finally:
        await js.delete_object_store(bucket)
        await nc.close()


async def test_links(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket, other = uniq("oblink"), uniq("oblink2")
    obs = await js.create_object_store(bucket=bucket)
    obs2 = await js.create_object_store(bucket=other)
    try:
        data = os.urandom(CHUNK * 2)
        target = await obs.put_bytes("target", data)
        link = await obs.add_link("alias", target)
        assert link.link == jetwire.ObjectLink(bucket=bucket, name="target")
        assert link.name == "alias" and link.bucket == bucket and link.nuid
        assert (await obs.get_info("alias")).link.name == "target"
        assert await obs.get_bytes("alias") == data
        result = await obs.get("alias")
        assert result.info.name == "target"  # the info of what was read
        result.close()

        with pytest.raises(jetwire.LinkNotAllowedError):
            await obs.add_link("alias2", await obs.get_info("alias"))
        await obs.put_bytes("doomed", b"x")
        doomed = await obs.get_info("doomed")
        await obs.delete("doomed")
        with pytest.raises(jetwire.LinkNotAllowedError):
            await obs.add_link("to-deleted", await obs.get_info("doomed", show_deleted=True))
        assert doomed.deleted is False
        with pytest.raises(jetwire.ObjectAlreadyExistsError):
            await obs.add_link("target", target)  # an object with that name exists
        with pytest.raises(jetwire.ObjectAlreadyExistsError):
            await obs.add_link("doomed", target)  # a deleted one too (as nats.go): only a link is replaced
        assert (await obs.get_info("doomed", show_deleted=True)).deleted
        link2 = await obs.add_link("alias", target)  # a link may be replaced
        assert link2.link.name == "target"

        # across buckets
        far = await obs2.put_bytes("far", b"far away")
        await obs.add_link("far-link", far)
        assert await obs.get_bytes("far-link") == b"far away"

        # a link to a whole bucket cannot be read as an object
        blink = await obs.add_bucket_link("bucket-link", obs2)
        assert blink.link == jetwire.ObjectLink(bucket=other, name=None)
        assert (await obs.get_info("bucket-link")).link.bucket == other
        with pytest.raises(jetwire.BadObjectMetaError):
            await obs.get("bucket-link")
        await obs.add_bucket_link("bucket-link-2", other)
        # puts may not carry links
        with pytest.raises(jetwire.LinkNotAllowedError):
            await obs.put(await obs.get_info("alias"), io.BytesIO(b"x"))
        names = sorted(i.name for i in await obs.list())
        assert names == ["alias", "bucket-link", "bucket-link-2", "far-link", "target"]
    finally:
        await js.delete_object_store(bucket)
        await js.delete_object_store(other)
        await nc.close()


async def test_seal(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("obseal")
    obs = await js.create_object_store(bucket=bucket)
    try:
        await obs.put_bytes("a", b"data")
        await obs.seal()
        assert (await obs.status()).sealed
        with pytest.raises(jetwire.JetStreamError):
            await obs.put_bytes("b", b"more")
        assert await obs.get_bytes("a") == b"data"
        assert [i.name for i in await obs.list()] == ["a"]
    finally:
        await js.delete_object_store(bucket)
        await nc.close()


async def test_watch(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("obwatch")
    obs = await js.create_object_store(bucket=bucket)
    try:
        w = await obs.watch()
        assert await w.next(5) is None
        await obs.put_bytes("one", b"1")
        info = await w.next(5)
        assert info.name == "one" and info.size == 1 and info.mtime is not None
        w.stop()
        await obs.put_bytes("two", b"22")
        await obs.put_bytes("one", b"111")
        await obs.delete("two")

        w = await obs.watch()
        initial = []
        async for info in w:
            if info is None:
                break
            initial.append(info)
        assert [(i.name, i.size, i.deleted) for i in initial] == [("one", 3, False), ("two", 0, True)]
        await obs.put_bytes("three", b"333")
        assert (await w.next(5)).name == "three"
        with pytest.raises(jetwire.TimeoutError):
            await w.next(0.3)
        w.stop()

        w = await obs.watch(ignore_deletes=True)
        assert [i.name for i in await drain_initial(w)] == ["one", "three"]
        w.stop()
        w = await obs.watch(include_history=True)  # metas are rolled up: one per name is stored
        assert [(i.name, i.size) for i in await drain_initial(w)] == [("one", 3), ("two", 0), ("three", 3)]
        w.stop()
        w = await obs.watch(updates_only=True)
        assert await w.next(5) is None
        await obs.put_bytes("four", b"4")
        assert (await w.next(5)).name == "four"
        w.stop()
    finally:
        await js.delete_object_store(bucket)
        await nc.close()


async def test_put_rejects_payloads_of_the_wrong_type(nats_url):
    """put_bytes takes bytes-like data, put_string a str: anything else is a TypeError
    naming the argument and what it takes, before anything is sent."""
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("obtype")
    obs = await js.create_object_store(bucket=bucket)
    try:
        await nc.flush()
        sent = nc.stats["out_msgs"]
        for bad in (5, "text", None, [1, 2], 1.5):
            with pytest.raises(TypeError, match=r"^data must be bytes, bytearray or memoryview, not "):
                await obs.put_bytes("x", bad)
        for bad in (b"b", bytearray(b"b"), memoryview(b"b"), 5, None):
            with pytest.raises(TypeError, match=r"^data must be a str, not "):
                await obs.put_string("x", bad)
        assert nc.stats["out_msgs"] == sent
        with pytest.raises(jetwire.ObjectNotFoundError):
            await obs.get_info("x")
        for data in (b"ab", bytearray(b"ab"), memoryview(b"xaby")[1:3]):
            assert (await obs.put_bytes("x", data)).size == 2
            assert await obs.get_bytes("x") == b"ab"
    finally:
        await js.delete_object_store(bucket)
        await nc.close()


async def test_list_raises_when_the_connection_closes(nats_url, monkeypatch):
    """A list cut short by the connection closing raises instead of returning a part."""
    admin = await jetwire.connect(nats_url)
    ajs = admin.jetstream()
    bucket = uniq("obcut")
    aobs = await ajs.create_object_store(bucket=bucket)
    nc = await jetwire.connect(nats_url)
    on_msg = Watcher._on_msg
    take = Watcher.next

    def first_only(self, msg) -> None:  # what follows never arrives: the list cannot be complete
        if not getattr(self, "fed", False):
            self.fed = True
            on_msg(self, msg)

    async def take_then_close(self, timeout=None):  # the connection closes halfway through
        item = await take(self, timeout)
        if not nc.is_closed:
            await nc.close()
        return item

    try:
        for name in ("a", "b", "c"):
            await aobs.put_bytes(name, name.encode())
        obs = await nc.jetstream().object_store(bucket)
        monkeypatch.setattr(Watcher, "_on_msg", first_only)
        monkeypatch.setattr(Watcher, "next", take_then_close)
        with pytest.raises(jetwire.ConnectionClosedError):
            await obs.list()
        assert nc.is_closed
    finally:
        monkeypatch.undo()
        await nc.close()
        await ajs.delete_object_store(bucket)
        await admin.close()


async def test_dropped_result_lets_go_of_its_subscription(nats_server, nats_url):
    """An ObjectResult garbage-collected before its end without close() stops its consumer
    (at its next heartbeat at the latest): its subscription does not stay for the
    connection's life."""
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("obdrop")
    obs = await js.create_object_store(bucket=bucket)
    obs._push_heartbeat = 0.25
    try:
        await obs.put_bytes("big", os.urandom(3 * CHUNK))
        before = await server_subscriptions(nats_server, nc)
        r = await obs.get("big")
        assert len(await r.read(10)) == 10
        assert await server_subscriptions(nats_server, nc) == before + 1
        r.close()  # closed: gone at once
        assert await server_subscriptions(nats_server, nc) == before

        r = await obs.get("big")
        assert len(await r.read(10)) == 10
        assert await server_subscriptions(nats_server, nc) == before + 1
        del r  # dropped before its end, never closed

        async def released() -> bool:
            return await server_subscriptions(nats_server, nc) == before

        assert await wait_until(released, 5)

        async def no_consumer() -> bool:  # and its consumer is deleted
            return (await js.stream_info(f"OBJ_{bucket}")).state.consumer_count == 0

        assert await wait_until(no_consumer, 5)
    finally:
        await js.delete_object_store(bucket)
        await nc.close()
