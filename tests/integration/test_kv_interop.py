"""Key-value and object-store data written by nats-py read by jetwire, and the other way
round (nats-py is a test-only peer). One flavour is enough here: the wire is the same."""
from __future__ import annotations

import asyncio
import hashlib
import os
import uuid

import nats
import pytest

import jetwire.aio as jetwire


def uniq(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


def run(coro):
    try:
        import uvloop
    except ImportError:  # pragma: no cover
        return asyncio.run(coro)
    return uvloop.run(coro)


async def _clients(url):
    peer = await nats.connect(url)
    nc = await jetwire.connect(url)
    return peer, peer.jetstream(), nc, nc.jetstream()


def test_kv_written_by_nats_py_read_by_jetwire(nats_url):
    async def main():
        peer, pjs, nc, js = await _clients(nats_url)
        bucket = uniq("interkv1")
        try:
            pkv = await pjs.create_key_value(bucket=bucket, history=5, description="from nats-py")
            await pkv.put("a", b"1")
            await pkv.put("a", b"2")
            await pkv.put("b.c", b"bc")
            await pkv.put("gone", b"x")
            await pkv.delete("gone")
            await pkv.put("wiped", b"x")
            await pkv.purge("wiped")

            kv = await js.key_value(bucket)
            st = await kv.status()
            assert st.history == 5 and st.description == "from nats-py"
            a = await kv.get("a")
            assert (a.value, a.revision, a.operation) == (b"2", 2, jetwire.KeyValueOp.PUT)
            assert (await kv.get("a", revision=1)).value == b"1"
            with pytest.raises(jetwire.KeyDeletedError) as ei:
                await kv.get("gone")
            assert ei.value.entry.operation == jetwire.KeyValueOp.DEL
            with pytest.raises(jetwire.KeyDeletedError) as ei:
                await kv.get("wiped")
            assert ei.value.entry.operation == jetwire.KeyValueOp.PURGE
            assert await kv.keys() == ["a", "b.c"]
            assert [h.value for h in await kv.history("a")] == [b"1", b"2"]
            w = await kv.watch_all()
            initial = []
            while True:
                e = await w.next(5)
                if e is None:
                    break
                initial.append((e.key, e.operation))
            assert initial == [("a", jetwire.KeyValueOp.PUT), ("b.c", jetwire.KeyValueOp.PUT),
                               ("gone", jetwire.KeyValueOp.DEL), ("wiped", jetwire.KeyValueOp.PURGE)]
            await pkv.put("live", b"from peer")  # live updates written by the peer
            e = await w.next(5)
            assert (e.key, e.value) == ("live", b"from peer")
            w.stop()
            # CAS across clients
            rev = (await kv.get("a")).revision
            await pkv.update("a", b"3", last=rev)
            with pytest.raises(jetwire.WrongLastSequenceError):
                await kv.update("a", b"stale", rev)
            assert await kv.create("gone", b"back") > 0
            assert (await pkv.get("gone")).value == b"back"
        finally:
            await js.delete_key_value(bucket)
            await nc.close()
            await peer.close()

    run(main())


def test_kv_written_by_jetwire_read_by_nats_py(nats_url):
    async def main():
        peer, pjs, nc, js = await _clients(nats_url)
        bucket, ref = uniq("interkv2"), uniq("interkvref")
        try:
            kv = await js.create_key_value(bucket=bucket, history=4, ttl=3600.0)
            await kv.put("x", b"1")
            await kv.put("x", b"2")
            await kv.put("y.z", b"yz")
            await kv.delete("y.z")
            await kv.put("p", b"p")
            await kv.purge("p")

            pkv = await pjs.key_value(bucket)
            e = await pkv.get("x")
            assert (e.value, e.revision) == (b"2", 2)
            assert [h.value for h in await pkv.history("x")] == [b"1", b"2"]
            gone = (nats.js.errors.KeyNotFoundError, nats.js.errors.KeyDeletedError)  # nats-py maps one to the other
            with pytest.raises(gone):
                await pkv.get("y.z")
            with pytest.raises(gone):
                await pkv.get("p")
            assert [h.operation for h in await pkv.history("y.z")] == [None, "DEL"]
            assert sorted(await pkv.keys()) == ["x"]
            st = await pkv.status()
            assert st.history == 4 and st.ttl == 3600.0

            # the stream layout matches the one nats-py makes (nats-py leaves allow_direct
            # off unless asked; jetwire sets it, as nats.go does)
            await pjs.create_key_value(bucket=ref, history=4, ttl=3600.0)
            ours = (await js.stream_info(f"KV_{bucket}")).config
            theirs = (await js.stream_info(f"KV_{ref}")).config
            for field in ("max_msgs_per_subject", "max_age", "allow_rollup_hdrs", "deny_delete",
                          "discard", "duplicate_window", "max_msgs", "storage", "num_replicas"):
                assert getattr(ours, field) == getattr(theirs, field), field
            assert ours.subjects == [f"$KV.{bucket}.>"] and theirs.subjects == [f"$KV.{ref}.>"]
        finally:
            await js.delete_key_value(bucket)
            try:
                await js.delete_key_value(ref)
            except jetwire.BucketNotFoundError:
                pass
            await nc.close()
            await peer.close()

    run(main())


def test_objects_written_by_nats_py_read_by_jetwire(nats_url):
    async def main():
        peer, pjs, nc, js = await _clients(nats_url)
        bucket = uniq("interob1")
        try:
            pobs = await pjs.create_object_store(bucket=bucket, description="peer")
            data = os.urandom(3 * 128 * 1024 + 999)
            await pobs.put("dir/file.bin", data)
            await pobs.put("empty", b"")
            await pobs.put("small", b"tiny")
            await pobs.delete("small")

            obs = await js.object_store(bucket)
            info = await obs.get_info("dir/file.bin")
            assert info.size == len(data) and info.chunks == 4 and info.bucket == bucket
            assert await obs.get_bytes("dir/file.bin") == data
            assert await obs.get_bytes("empty") == b""
            with pytest.raises(jetwire.ObjectNotFoundError):
                await obs.get_info("small")
            assert (await obs.get_info("small", show_deleted=True)).deleted
            assert sorted(i.name for i in await obs.list()) == ["dir/file.bin", "empty"]
            assert (await obs.status()).description == "peer"
        finally:
            await js.delete_object_store(bucket)
            await nc.close()
            await peer.close()

    run(main())


def test_objects_written_by_jetwire_read_by_nats_py(nats_url):
    async def main():
        peer, pjs, nc, js = await _clients(nats_url)
        bucket = uniq("interob2")
        try:
            obs = await js.create_object_store(bucket=bucket)
            data = os.urandom(5 * 128 * 1024 + 1)
            info = await obs.put(jetwire.ObjectMeta(name="big.bin", description="d", headers={"X-Kind": "test"}),
                                 data)
            await obs.put_bytes("empty", b"")
            await obs.put_string("doomed", "x")
            await obs.delete("doomed")

            pobs = await pjs.object_store(bucket)
            res = await pobs.get("big.bin")
            assert res.data == data
            assert res.info.size == len(data) and res.info.chunks == 6
            assert res.info.digest == info.digest
            assert res.info.description == "d"
            assert hashlib.sha256(res.data).digest() == hashlib.sha256(data).digest()
            assert (await pobs.get("empty")).data == b""
            pinfo = await pobs.get_info("big.bin")
            assert pinfo.nuid == info.nuid
            with pytest.raises(nats.js.errors.ObjectNotFoundError):
                await pobs.get_info("doomed")
            names = sorted(i.name for i in await pobs.list(ignore_deletes=True))
            assert names == ["big.bin", "empty"]
        finally:
            await js.delete_object_store(bucket)
            await nc.close()
            await peer.close()

    run(main())
