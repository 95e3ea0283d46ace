"""Key-value store against a real nats-server (asyncio source; the blocking twin is generated)."""
from __future__ import annotations

import pytest

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims
from jetwire.aio.push_core import Watcher  # aio-only

# sync-only: from jetwire._sync.push_core import Watcher
from tests.aio._helpers import drain_initial, uniq, wait_until


async def assert_quiet(w, timeout: float = 0.3) -> None:
    """Nothing more arrives (in particular no second None)."""
    with pytest.raises(jetwire.TimeoutError):
        await w.next(timeout)


async def test_bucket_lifecycle_and_config(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("kvlife")
    try:
        kv = await js.create_key_value(bucket=bucket, description="lifecycle", history=5, ttl=3600.0,
                                       max_bytes=1 << 20, max_value_size=1024, storage=jetwire.StorageType.MEMORY,
                                       replicas=1, compression=True, metadata={"team": "jw"})
        assert kv.bucket == bucket
        st = await kv.status()
        assert st.bucket == bucket
        assert st.history == 5
        assert st.ttl == 3600.0
        assert st.values == 0
        assert st.is_compressed
        assert st.description == "lifecycle"
        assert st.storage == jetwire.StorageType.MEMORY
        assert st.metadata.get("team") == "jw"
        cfg = st.stream_info.config
        assert cfg.name == f"KV_{bucket}"
        assert cfg.subjects == [f"$KV.{bucket}.>"]
        assert cfg.max_bytes == 1 << 20 and cfg.max_msg_size == 1024
        assert cfg.allow_direct and cfg.allow_rollup_hdrs and cfg.deny_delete
        assert cfg.discard == jetwire.DiscardPolicy.NEW
        assert cfg.duplicate_window == 120.0

        # the same config again returns the bucket; another one is refused
        again = await js.create_key_value(jetwire.KeyValueConfig(
            bucket=bucket, description="lifecycle", history=5, ttl=3600.0, max_bytes=1 << 20, max_value_size=1024,
            storage=jetwire.StorageType.MEMORY, compression=True, metadata={"team": "jw"}))
        assert again.bucket == bucket
        with pytest.raises(jetwire.StreamNameInUseError):
            await js.create_key_value(bucket=bucket, history=2)

        kv2 = await js.update_key_value(bucket=bucket, history=10, storage=jetwire.StorageType.MEMORY)
        assert (await kv2.status()).history == 10
        kv3 = await js.create_or_update_key_value(bucket=bucket, history=7, storage=jetwire.StorageType.MEMORY)
        assert (await kv3.status()).history == 7

        bound = await js.key_value(bucket)
        await bound.put("k", b"v")
        assert (await kv.get("k")).value == b"v"

        names = [n async for n in js.key_value_store_names()]
        assert bucket in names
        stores = [s async for s in js.key_value_stores()]
        assert bucket in [s.bucket for s in stores]
        assert all(isinstance(s, jetwire.KeyValueStatus) for s in stores)
    finally:
        assert await js.delete_key_value(bucket) is True
    with pytest.raises(jetwire.BucketNotFoundError):
        await js.key_value(bucket)
    with pytest.raises(jetwire.BucketNotFoundError):
        await js.delete_key_value(bucket)
    with pytest.raises(jetwire.BucketNotFoundError):
        await js.update_key_value(bucket=bucket)
    await nc.close()


async def test_create_or_update_creates(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("kvcou")
    try:
        kv = await js.create_or_update_key_value(bucket=bucket, history=2)
        assert (await kv.status()).history == 2
    finally:
        await js.delete_key_value(bucket)
        await nc.close()


async def test_bad_input_raises_before_sending(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("kvbad")
    kv = await js.create_key_value(bucket=bucket)
    try:
        await nc.flush()
        sent = nc.stats["out_msgs"]
        for bad in ("bad.name", "a b", "", "x*", "ü"):
            with pytest.raises(jetwire.InvalidBucketNameError):
                await js.create_key_value(bucket=bad)
            with pytest.raises(jetwire.InvalidBucketNameError):
                await js.key_value(bad)
            with pytest.raises(jetwire.InvalidBucketNameError):
                await js.delete_key_value(bad)
        for history in (65, 100, -1):
            with pytest.raises(jetwire.HistoryTooLargeError):
                await js.create_key_value(bucket=uniq("kvh"), history=history)
        for key in (".a", "a.", "a..b", "a b", "", "*", ">", "a*", "ä", "a\r\nb"):
            with pytest.raises(jetwire.InvalidKeyError):
                await kv.put(key, b"x")
            with pytest.raises(jetwire.InvalidKeyError):
                await kv.get(key)
            with pytest.raises(jetwire.InvalidKeyError):
                await kv.create(key, b"x")
            with pytest.raises(jetwire.InvalidKeyError):
                await kv.update(key, b"x", 1)
            with pytest.raises(jetwire.InvalidKeyError):
                await kv.delete(key)
            with pytest.raises(jetwire.InvalidKeyError):
                await kv.purge(key)
        for pattern in (".a", "a..b", "a b", ""):
            with pytest.raises(jetwire.InvalidKeyError):
                await kv.watch(pattern)
        assert nc.stats["out_msgs"] == sent
        # the errors are also ValueErrors
        assert issubclass(jetwire.InvalidKeyError, ValueError)
        # keys allowed by nats.go
        for key in ("a", "a.b.c", "A-Z_0=9/x", "_kv.reserved", "x" * 200):
            assert await kv.put(key, b"ok") > 0
            assert (await kv.get(key)).value == b"ok"
    finally:
        await js.delete_key_value(bucket)
        await nc.close()


async def test_put_get_and_revisions(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("kvpg")
    kv = await js.create_key_value(bucket=bucket, history=10)
    try:
        r1 = await kv.put("color", b"red")
        r2 = await kv.put("size", b"L")
        r3 = await kv.put("color", b"blue")
        assert (r1, r2, r3) == (1, 2, 3)
        e = await kv.get("color")
        assert isinstance(e, jetwire.KeyValueEntry)
        assert (e.bucket, e.key, e.value, e.revision, e.operation) == (
            bucket, "color", b"blue", 3, jetwire.KeyValueOp.PUT)
        assert e.created is not None and e.created.tzinfo is not None
        assert e.delta == 0
        old = await kv.get("color", revision=1)
        assert old.value == b"red" and old.revision == 1
        assert (await kv.get("color", revision=0)).revision == 3  # 0: the latest, as nats.go
        with pytest.raises(jetwire.KeyNotFoundError):
            await kv.get("color", revision=2)  # the revision of another key
        with pytest.raises(jetwire.KeyNotFoundError):
            await kv.get("color", revision=99)
        with pytest.raises(jetwire.KeyNotFoundError) as ei:
            await kv.get("missing")
        assert not isinstance(ei.value, jetwire.KeyDeletedError)
        assert isinstance(ei.value, KeyError) and isinstance(ei.value, jetwire.JetStreamError)
        # values: empty, binary, str encoded as UTF-8
        assert (await kv.get("color", revision=await kv.put("color", b""))).value == b""
        blob = bytes(range(256)) * 10
        await kv.put("blob", blob)
        assert (await kv.get("blob")).value == blob
        await kv.put("text", "héllo")
        assert (await kv.get("text")).value == "héllo".encode()
        # a value larger than max_value_size is refused by the server
    finally:
        await js.delete_key_value(bucket)
        await nc.close()


async def test_get_without_direct_get(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("kvnd")
    kv = await js.create_key_value(bucket=bucket, history=3)
    try:
        await kv.put("a", b"1")
        await kv.put("a", b"2")
        await kv.delete("b")
        info = await js.stream_info(f"KV_{bucket}")
        cfg = info.config
        cfg.allow_direct = False
        await js.update_stream(cfg)
        kv2 = await js.key_value(bucket)
        assert (await kv2.get("a")).value == b"2"
        assert (await kv2.get("a", revision=1)).value == b"1"
        with pytest.raises(jetwire.KeyDeletedError):
            await kv2.get("b")
        with pytest.raises(jetwire.KeyNotFoundError):
            await kv2.get("zzz")
        with pytest.raises(jetwire.KeyNotFoundError):
            await kv2.get("a", revision=3)
    finally:
        await js.delete_key_value(bucket)
        await nc.close()


async def test_delete_and_purge(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("kvdel")
    kv = await js.create_key_value(bucket=bucket, history=10)
    try:
        await kv.put("a", b"1")
        await kv.put("a", b"2")
        await kv.delete("a")
        with pytest.raises(jetwire.KeyDeletedError) as ei:
            await kv.get("a")
        assert isinstance(ei.value, jetwire.KeyNotFoundError)
        assert ei.value.entry.operation == jetwire.KeyValueOp.DEL
        hist = await kv.history("a")
        assert [(h.value, h.operation) for h in hist] == [
            (b"1", jetwire.KeyValueOp.PUT), (b"2", jetwire.KeyValueOp.PUT), (b"", jetwire.KeyValueOp.DEL)]
        # the latest revision is still readable by number
        assert (await kv.get("a", revision=2)).value == b"2"

        await kv.put("b", b"1")
        await kv.put("b", b"2")
        await kv.purge("b")
        with pytest.raises(jetwire.KeyDeletedError) as ei:
            await kv.get("b")
        assert ei.value.entry.operation == jetwire.KeyValueOp.PURGE
        hist = await kv.history("b")
        assert [(h.value, h.operation) for h in hist] == [(b"", jetwire.KeyValueOp.PURGE)]

        # conditional delete / purge
        rev = await kv.put("c", b"1")
        with pytest.raises(jetwire.WrongLastSequenceError):
            await kv.delete("c", last_revision=rev - 1 if rev > 1 else 999)
        await kv.delete("c", last_revision=rev)
        rev = await kv.put("d", b"1")
        with pytest.raises(jetwire.WrongLastSequenceError):
            await kv.purge("d", last_revision=rev + 5)
        await kv.purge("d", last_revision=rev)
        with pytest.raises(jetwire.KeyDeletedError):
            await kv.get("d")
        # deleting a key that never existed leaves a marker
        await kv.delete("never")
        with pytest.raises(jetwire.KeyDeletedError):
            await kv.get("never")
    finally:
        await js.delete_key_value(bucket)
        await nc.close()


async def test_create_and_update(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("kvcu")
    kv = await js.create_key_value(bucket=bucket, history=5)
    try:
        r1 = await kv.create("k", b"first")
        with pytest.raises(jetwire.KeyExistsError) as ei:
            await kv.create("k", b"again")
        assert isinstance(ei.value, jetwire.WrongLastSequenceError)
        assert isinstance(ei.value, jetwire.APIError)
        r2 = await kv.update("k", b"second", r1)
        assert r2 > r1
        with pytest.raises(jetwire.WrongLastSequenceError) as ei:
            await kv.update("k", b"stale", r1)
        assert not isinstance(ei.value, jetwire.KeyExistsError)
        assert (await kv.get("k")).value == b"second"
        # update of a missing key needs revision 0
        with pytest.raises(jetwire.WrongLastSequenceError):
            await kv.update("nokey", b"x", 5)
        assert await kv.update("nokey", b"x", 0) > 0
        # create works again after a delete, and after a purge
        await kv.delete("k")
        r3 = await kv.create("k", b"reborn")
        assert (await kv.get("k")).value == b"reborn" and (await kv.get("k")).revision == r3
        await kv.purge("k")
        await kv.create("k", b"again")
        assert (await kv.get("k")).value == b"again"
        with pytest.raises(jetwire.KeyExistsError):
            await kv.create("k", b"no")
    finally:
        await js.delete_key_value(bucket)
        await nc.close()


async def test_cas_race_between_two_clients(nats_url):
    nc1 = await jetwire.connect(nats_url)
    nc2 = await jetwire.connect(nats_url)
    js1 = nc1.jetstream()
    bucket = uniq("kvcas")
    kv1 = await js1.create_key_value(bucket=bucket)
    kv2 = await nc2.jetstream().key_value(bucket)
    try:
        for round_ in range(10):
            rev = await kv1.put("counter", b"%d" % round_)
            results: list = []

            async def attempt(kv, value, _rev=rev, _results=results):
                try:
                    _results.append(await kv.update("counter", value, _rev))
                except jetwire.WrongLastSequenceError as exc:
                    _results.append(exc)

            t1 = prims.spawn(attempt, kv1, b"one")
            t2 = prims.spawn(attempt, kv2, b"two")
            assert await prims.join(t1, 10) and await prims.join(t2, 10)
            wins = [r for r in results if isinstance(r, int)]
            losses = [r for r in results if isinstance(r, jetwire.WrongLastSequenceError)]
            assert len(wins) == 1 and len(losses) == 1, results
            e = await kv1.get("counter")
            assert e.revision == wins[0] and e.value in (b"one", b"two")
        # create races too: exactly one creator
        results2: list = []

        async def make(kv, value):
            try:
                results2.append(await kv.create("fresh", value))
            except jetwire.KeyExistsError as exc:
                results2.append(exc)

        t1 = prims.spawn(make, kv1, b"one")
        t2 = prims.spawn(make, kv2, b"two")
        assert await prims.join(t1, 10) and await prims.join(t2, 10)
        assert sorted(type(r).__name__ for r in results2) == ["KeyExistsError", "int"]
    finally:
        await js1.delete_key_value(bucket)
        await nc1.close()
        await nc2.close()


async def test_history_limit(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("kvhist")
    kv = await js.create_key_value(bucket=bucket, history=3)
    try:
        for i in range(6):
            await kv.put("k", b"v%d" % i)
        hist = await kv.history("k")
        assert [h.value for h in hist] == [b"v3", b"v4", b"v5"]
        assert [h.revision for h in hist] == [4, 5, 6]
        assert [h.delta for h in hist] == [2, 1, 0]
        assert all(h.key == "k" and h.bucket == bucket for h in hist)
        with pytest.raises(jetwire.KeyNotFoundError):
            await kv.history("other")
        with pytest.raises(jetwire.KeyNotFoundError):
            await kv.get("k", revision=1)  # gone with the history limit
        assert (await kv.status()).values == 3
    finally:
        await js.delete_key_value(bucket)
        await nc.close()


async def test_keys_and_list_keys(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("kvkeys")
    kv = await js.create_key_value(bucket=bucket, history=5)
    try:
        assert await kv.keys() == []
        assert [k async for k in kv.list_keys()] == []
        await kv.put("z", b"1")
        await kv.put("a.x", b"1")
        await kv.put("a.y", b"1")
        await kv.put("b.x", b"1")
        await kv.put("z", b"2")
        await kv.put("gone", b"1")
        await kv.delete("gone")
        await kv.put("purged", b"1")
        await kv.purge("purged")
        assert await kv.keys() == ["a.x", "a.y", "b.x", "z"]
        assert await kv.keys("a.*") == ["a.x", "a.y"]
        assert await kv.keys("a.*", "z") == ["a.x", "a.y", "z"]
        assert await kv.keys(["*.x"]) == ["a.x", "b.x"]
        listed = [k async for k in kv.list_keys()]
        assert sorted(listed) == ["a.x", "a.y", "b.x", "z"]
        assert listed == ["a.x", "a.y", "b.x", "z"]  # stream order of the latest revisions
        assert sorted([k async for k in kv.list_keys("*.x")]) == ["a.x", "b.x"]
        # many keys: the marker comes after every one of them
        for i in range(300):
            await kv.put(f"many.{i:04d}", b"x")
        keys = await kv.keys("many.>")
        assert keys == [f"many.{i:04d}" for i in range(300)]
    finally:
        await js.delete_key_value(bucket)
        await nc.close()


async def test_watch_empty_bucket_yields_none_once(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("kvwe")
    kv = await js.create_key_value(bucket=bucket)
    try:
        w = await kv.watch_all()
        assert await w.next(5) is None
        await assert_quiet(w)
        await kv.put("a", b"1")
        e = await w.next(5)
        assert (e.key, e.value, e.revision, e.delta) == ("a", b"1", 1, 0)
        # one update at a time: nats-server 2.15 may skip an update to a key that arrives
        # right behind another on a last-per-subject consumer (seen under heavy load)
        await kv.put("a", b"2")
        assert (await w.next(5)).value == b"2"
        await kv.delete("a")
        d = await w.next(5)
        assert d.operation == jetwire.KeyValueOp.DEL and d.value == b""
        await assert_quiet(w)
        w.stop()
        assert [x async for x in w] == []
        w.stop()  # idempotent
    finally:
        await js.delete_key_value(bucket)
        await nc.close()


async def test_watch_initial_values_then_updates(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("kvwi")
    kv = await js.create_key_value(bucket=bucket, history=10)
    try:
        for i in range(50):
            await kv.put(f"k{i % 10}", b"%d" % i)
        w = await kv.watch_all()
        initial = await drain_initial(w)
        assert [e.key for e in initial] == [f"k{i}" for i in range(10)]
        assert [e.value for e in initial] == [b"%d" % (40 + i) for i in range(10)]
        assert [e.delta for e in initial] == list(range(9, -1, -1))
        await kv.put("k3", b"live")
        e = await w.next(5)
        assert (e.key, e.value, e.revision) == ("k3", b"live", 51)
        await assert_quiet(w)
        w.stop()

        # async iteration, and a watch on one key / on a pattern / on a list of keys
        seen = []
        w = await kv.watch("k1")
        async for e in w:
            seen.append(e)
            if e is None:
                break
        w.stop()
        assert [x.value if x else None for x in seen] == [b"41", None]
        w = await kv.watch("*")
        assert len(await drain_initial(w)) == 10
        w.stop()
        w = await kv.watch(["k1", "k2"])
        assert [e.key for e in await drain_initial(w)] == ["k1", "k2"]
        await kv.put("k2", b"z")
        await kv.put("k5", b"z")
        await kv.put("k1", b"z")
        assert [(await w.next(5)).key, (await w.next(5)).key] == ["k2", "k1"]
        w.stop()
        # a watch on a key that does not exist yet
        w = await kv.watch("nothing.here")
        assert await w.next(5) is None
        await kv.put("nothing.here", b"now")
        assert (await w.next(5)).value == b"now"
        w.stop()
    finally:
        await js.delete_key_value(bucket)
        await nc.close()


async def test_watch_options(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("kvwo")
    kv = await js.create_key_value(bucket=bucket, history=10)
    try:
        await kv.put("a", b"1")
        await kv.put("a", b"2")
        await kv.put("b", b"1")
        await kv.delete("b")
        await kv.put("c", b"1")

        w = await kv.watch_all(include_history=True)
        hist = await drain_initial(w)
        assert [(e.key, e.value) for e in hist] == [("a", b"1"), ("a", b"2"), ("b", b"1"), ("b", b""), ("c", b"1")]
        assert [e.revision for e in hist] == [1, 2, 3, 4, 5]
        w.stop()

        w = await kv.watch_all(ignore_deletes=True)
        assert [(e.key, e.value) for e in await drain_initial(w)] == [("a", b"2"), ("c", b"1")]
        await kv.delete("a")
        await kv.put("d", b"1")
        assert (await w.next(5)).key == "d"  # the delete is skipped
        await assert_quiet(w)
        w.stop()

        w = await kv.watch_all(include_history=True, ignore_deletes=True)
        assert [(e.key, e.value) for e in await drain_initial(w)] == [
            ("a", b"1"), ("a", b"2"), ("b", b"1"), ("c", b"1"), ("d", b"1")]
        w.stop()

        w = await kv.watch_all(updates_only=True)
        assert await w.next(5) is None  # no initial values: the marker comes first
        await assert_quiet(w)
        await kv.put("e", b"new")
        e = await w.next(5)
        assert (e.key, e.value) == ("e", b"new")
        await assert_quiet(w)
        w.stop()
        with pytest.raises(jetwire.InvalidOptionError, match="include_history and updates_only"):
            await kv.watch_all(include_history=True, updates_only=True)  # as nats.go: one or the other

        w = await kv.watch_all(meta_only=True)
        initial = await drain_initial(w)
        assert [e.key for e in initial] == ["b", "c", "a", "d", "e"]
        assert all(e.value == b"" for e in initial)
        P, D = jetwire.KeyValueOp.PUT, jetwire.KeyValueOp.DEL
        assert [e.operation for e in initial] == [D, P, D, P, P]
        await kv.put("f", b"payload")
        live = await w.next(5)
        assert live.key == "f" and live.value == b""
        w.stop()

        w = await kv.watch_all(resume_from_revision=5)
        resumed = await drain_initial(w)
        assert [e.revision for e in resumed] == [5, 6, 7, 8, 9]
        assert resumed[0].key == "c"
        await kv.put("g", b"1")
        assert (await w.next(5)).key == "g"
        w.stop()

        w = await kv.watch_all(resume_from_revision=1000)  # past the end: nothing initial
        assert await w.next(5) is None
        w.stop()
    finally:
        await js.delete_key_value(bucket)
        await nc.close()


async def test_watch_many_large_values_and_slow_reader(nats_url):
    """Enough data for the server to ask for flow control; the marker still comes once,
    right after the last initial value."""
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("kvwl")
    kv = await js.create_key_value(bucket=bucket)
    try:
        value = b"v" * 60_000
        for i in range(400):
            await js.publish_async(f"$KV.{bucket}.key{i:04d}", value)
        await js.publish_async_complete(timeout=20)
        w = await kv.watch_all()
        n = 0
        while True:
            e = await w.next(10)
            if e is None:
                break
            assert e.key == f"key{n:04d}" and len(e.value) == 60_000
            n += 1
            if n % 100 == 0:
                await prims.sleep(0.05)
        assert n == 400
        await kv.put("after", b"x")
        assert (await w.next(5)).key == "after"
        await assert_quiet(w)
        w.stop()
    finally:
        await js.delete_key_value(bucket)
        await nc.close()


async def test_watch_marker_with_writes_during_initial_delivery(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("kvwr")
    kv = await js.create_key_value(bucket=bucket)
    try:
        for i in range(200):
            await js.publish_async(f"$KV.{bucket}.init{i}", b"x")
        await js.publish_async_complete(timeout=10)
        w = await kv.watch_all()
        for i in range(50):  # keep writing while the initial values are delivered
            await js.publish_async(f"$KV.{bucket}.late{i}", b"y")
        await js.publish_async_complete(timeout=10)
        items = []
        while True:
            try:
                items.append(await w.next(1.0))
            except jetwire.TimeoutError:
                break
        assert items.count(None) == 1
        assert items.index(None) == 200  # right after the values present when the watch began
        assert [e.key for e in items[:200]] == [f"init{i}" for i in range(200)]
        keys = [e.key for e in items if e is not None]
        assert len(keys) == 250 and len(set(keys)) == 250
        w.stop()
    finally:
        await js.delete_key_value(bucket)
        await nc.close()


async def test_purge_deletes(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("kvpd")
    kv = await js.create_key_value(bucket=bucket, history=10)
    try:
        await kv.put("a", b"1")
        await kv.put("a", b"2")
        await kv.delete("a")
        await kv.put("b", b"1")
        await kv.purge("b")
        await kv.put("keep", b"1")
        # markers younger than older_than keep only themselves
        await kv.purge_deletes()
        assert [h.operation for h in await kv.history("a")] == [jetwire.KeyValueOp.DEL]
        assert [h.operation for h in await kv.history("b")] == [jetwire.KeyValueOp.PURGE]
        assert (await kv.get("keep")).value == b"1"
        # a negative older_than removes the markers too
        await kv.purge_deletes(older_than=-1)
        with pytest.raises(jetwire.KeyNotFoundError):
            await kv.history("a")
        with pytest.raises(jetwire.KeyNotFoundError):
            await kv.history("b")
        with pytest.raises(jetwire.KeyNotFoundError) as ei:
            await kv.get("a")
        assert not isinstance(ei.value, jetwire.KeyDeletedError)
        assert await kv.keys() == ["keep"]
        assert (await kv.status()).values == 1
        # markers older than older_than go completely
        await kv.delete("keep")
        await prims.sleep(1.2)
        await kv.purge_deletes(older_than=1.0)
        with pytest.raises(jetwire.KeyNotFoundError):
            await kv.history("keep")
        assert (await kv.status()).values == 0
    finally:
        await js.delete_key_value(bucket)
        await nc.close()


async def test_status_and_ttl(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("kvst")
    kv = await js.create_key_value(bucket=bucket, ttl=1.0, history=2)
    try:
        await kv.put("a", b"12345")
        st = await kv.status()
        assert st.values == 1 and st.bytes > 0 and st.size == st.bytes
        assert st.ttl == 1.0 and st.history == 2
        assert st.backing_store == "JetStream"
        assert st.config.bucket == bucket and st.config.history == 2
        assert st.stream_info.config.duplicate_window == 1.0  # min(ttl, 2 min)
        await prims.sleep(1.5)
        with pytest.raises(jetwire.KeyNotFoundError):
            await kv.get("a")
    finally:
        await js.delete_key_value(bucket)
        await nc.close()


async def test_mirror_and_sources(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    origin, mirror, merged = uniq("kvorig"), uniq("kvmirr"), uniq("kvsrc")
    kv = await js.create_key_value(bucket=origin)
    try:
        await kv.put("a", b"1")
        await kv.put("b", b"2")
        m = await js.create_key_value(bucket=mirror, mirror=jetwire.StreamSource(name=origin))
        assert (await m.status()).stream_info.config.mirror.name == f"KV_{origin}"
        s = await js.create_key_value(bucket=merged, sources=[jetwire.StreamSource(name=origin)])
        async def copied() -> bool:
            return (await s.status()).values == 2 and (await m.status()).values == 2

        assert await wait_until(copied, 5)
        assert (await s.get("a")).value == b"1"  # sourced keys land under the new bucket
        assert await s.keys() == ["a", "b"]
        assert (await m.get("b")).value == b"2"
        assert await m.keys() == ["a", "b"]
        await m.put("c", b"3")  # a mirror writes to its origin
        # read the origin stream itself: a direct get may be answered by the mirror,
        # which copies "c" a moment later
        origin_stream = await js.stream(f"KV_{origin}")
        raw = await origin_stream.get_last_msg_for_subject(f"$KV.{origin}.c", direct=False)
        assert raw.data == b"3"
    finally:
        for b in (mirror, merged, origin):
            try:
                await js.delete_key_value(b)
            except jetwire.BucketNotFoundError:
                pass
        await nc.close()


async def test_domain_prefix(nats_server_factory):
    server = nats_server_factory(domain="hub")
    nc = await jetwire.connect(server.url)
    js = nc.jetstream(domain="hub")
    bucket = uniq("kvdom")
    kv = await js.create_key_value(bucket=bucket, history=3)
    try:
        assert kv._put_pre == f"$JS.hub.API.$KV.{bucket}."
        assert await kv.put("a", b"1") == 1
        assert await kv.create("b", b"2") == 2
        await kv.update("b", b"3", 2)
        await kv.delete("a")
        assert (await kv.get("b")).value == b"3"
        assert await kv.keys() == ["b"]
        assert [h.value for h in await kv.history("b")] == [b"2", b"3"]
        w = await kv.watch_all()
        assert [e.key for e in await drain_initial(w)] == ["b", "a"]
        w.stop()
        assert [n async for n in js.key_value_store_names()] == [bucket]
    finally:
        await js.delete_key_value(bucket)
        await nc.close()


async def test_watcher_survives_consumer_loss(nats_url):
    """The ordered consumer is recreated (from the last revision seen) when it disappears."""
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("kvreset")
    kv = await js.create_key_value(bucket=bucket)
    kv._push_heartbeat = 0.5  # missed heartbeats are noticed after 1.5-2 s
    try:
        await kv.put("a", b"1")
        w = await kv.watch_all()
        assert [e.key for e in await drain_initial(w)] == ["a"]
        await js.delete_consumer(f"KV_{bucket}", w._consumer)
        await kv.put("b", b"2")
        e = await w.next(10)
        assert e.key == "b"
        await kv.put("c", b"3")
        assert (await w.next(5)).key == "c"
        await assert_quiet(w)
        w.stop()
    finally:
        await js.delete_key_value(bucket)
        await nc.close()


async def test_watcher_survives_server_restart(nats_server_factory):
    server = nats_server_factory()
    nc = await jetwire.connect(server.url, reconnect_time_wait=0.1, max_reconnect_attempts=-1)
    js = nc.jetstream()
    bucket = uniq("kvrestart")
    kv = await js.create_key_value(bucket=bucket)
    try:
        await kv.put("a", b"1")
        w = await kv.watch_all()
        assert [e.key for e in await drain_initial(w)] == ["a"]
        server.restart()
        assert await wait_until(lambda: nc.is_connected, 10)
        for _ in range(50):  # JetStream may need a moment after the restart
            try:
                await kv.put("b", b"2")
                break
            except jetwire.NatsError:
                await prims.sleep(0.2)
        e = await w.next(15)
        assert (e.key, e.value, e.revision) == ("b", b"2", 2)
        await assert_quiet(w)
        w.stop()
    finally:
        await js.delete_key_value(bucket)
        await nc.close()


async def test_republish_and_limit_markers(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("kvrepub")
    kv = await js.create_key_value(
        bucket=bucket, ttl=1.0, limit_marker_ttl=5.0,
        republish=jetwire.RePublish(src=f"$KV.{bucket}.>", dest=f"repub.{bucket}.>"))
    try:
        st = await kv.status()
        assert st.limit_marker_ttl == 5.0
        assert st.stream_info.config.allow_msg_ttl
        assert st.stream_info.config.republish.dest == f"repub.{bucket}.>"
        sub = await nc.subscribe(f"repub.{bucket}.>")
        await nc.flush()
        w = await kv.watch_all()
        assert await w.next(5) is None
        await kv.put("short", b"lived")
        msg = await sub.next_msg(5)
        assert msg.subject == f"repub.{bucket}.short" and msg.data == b"lived"
        assert (await w.next(5)).value == b"lived"
        # the value expires: the server's marker reaches the watcher as a purge
        marker = await w.next(10)
        assert marker.key == "short" and marker.operation == jetwire.KeyValueOp.PURGE
        with pytest.raises(jetwire.KeyDeletedError):
            await kv.get("short")
        assert await kv.keys() == []
        w.stop()
    finally:
        await js.delete_key_value(bucket)
        await nc.close()


def close_halfway(monkeypatch, nc) -> None:
    """Watchers get only the first delivery of their consumer (what follows never arrives,
    so their initial values cannot be complete), and ``nc`` closes once the first item
    is taken: a listing under way sees the connection close halfway through."""
    on_msg = Watcher._on_msg
    take = Watcher.next

    def first_only(self, msg) -> None:
        if not getattr(self, "fed", False):
            self.fed = True
            on_msg(self, msg)

    async def take_then_close(self, timeout=None):
        item = await take(self, timeout)
        if not nc.is_closed:
            await nc.close()
        return item

    monkeypatch.setattr(Watcher, "_on_msg", first_only)
    monkeypatch.setattr(Watcher, "next", take_then_close)


@pytest.mark.parametrize("listing", ["keys", "list_keys", "history"])
async def test_listing_raises_when_the_connection_closes(nats_url, monkeypatch, listing):
    """A listing cut short by the connection closing raises instead of returning a part."""
    admin = await jetwire.connect(nats_url)
    ajs = admin.jetstream()
    bucket = uniq("kvcut")
    akv = await ajs.create_key_value(bucket=bucket, history=5)
    nc = await jetwire.connect(nats_url)
    try:
        for v in (b"1", b"2", b"3"):
            await akv.put("k", v)
        await akv.put("other", b"x")
        kv = await nc.jetstream().key_value(bucket)
        close_halfway(monkeypatch, nc)
        with pytest.raises(jetwire.ConnectionClosedError):
            if listing == "keys":
                await kv.keys()
            elif listing == "list_keys":
                async for _ in kv.list_keys():
                    pass
            else:
                await kv.history("k")
        assert nc.is_closed
    finally:
        monkeypatch.undo()
        await nc.close()
        await ajs.delete_key_value(bucket)
        await admin.close()


async def test_watcher_raises_when_the_connection_closes(nats_url):
    """A watcher stopped ends quietly; one whose connection closes raises ConnectionClosedError."""
    admin = await jetwire.connect(nats_url)
    ajs = admin.jetstream()
    bucket = uniq("kvwclosed")
    akv = await ajs.create_key_value(bucket=bucket)
    nc = await jetwire.connect(nats_url)
    try:
        await akv.put("a", b"1")
        kv = await nc.jetstream().key_value(bucket)
        stopped = await kv.watch_all()
        closed = await kv.watch_all()
        for w in (stopped, closed):
            assert [e.key for e in await drain_initial(w)] == ["a"]
        stopped.stop()
        await nc.close()
        assert [e async for e in stopped] == []  # stopped before the close: still quiet
        with pytest.raises(jetwire.ConnectionClosedError):
            await closed.next(5)
        with pytest.raises(jetwire.ConnectionClosedError):
            async for _ in closed:
                pass
        closed.stop()
    finally:
        await nc.close()
        await ajs.delete_key_value(bucket)
        await admin.close()


async def test_watcher_wakes_when_its_subscription_closes_just_before_the_clear(nats_url):
    """The subscription closing (and setting the reader's signal) between the reader's
    checks and its ``signal.clear()`` still ends the wait at once."""
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("kvclear")
    kv = await js.create_key_value(bucket=bucket)
    try:
        w = await kv.watch_all()
        assert await w.next(5) is None
        signal = w._signal
        slept: list = []

        class CloseAtClear:
            """The watcher's signal; its subscription closes right before each clear()."""

            def set(self) -> None:
                signal.set()

            def clear(self) -> None:
                w._link.unsubscribe(w._sub)  # as the connection closing would: sets the signal
                signal.clear()

            async def wait(self, timeout=None) -> bool:
                if w._sub._closed:  # it would sleep through the close (for ever without a timeout)
                    slept.append(timeout)
                    return False
                return await signal.wait(timeout)

        w._signal = CloseAtClear()
        with pytest.raises(jetwire.ConnectionClosedError):
            await w.next(None)
        assert slept == []
        w.stop()
    finally:
        await js.delete_key_value(bucket)
        await nc.close()


async def test_create_brings_a_bucket_of_an_older_client_up_to_date(nats_url):
    from jetwire.jetstream.kv_models import KeyValueConfig, kv_stream_config

    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    bucket = uniq("legacy").replace(".", "_")
    try:
        old = kv_stream_config(KeyValueConfig(bucket=bucket))
        old.discard, old.allow_direct = jetwire.DiscardPolicy.OLD, False  # as clients before nats 2.9 made them
        await js.create_stream(old)
        kv = await js.create_key_value(bucket=bucket)  # nats.go's CreateKeyValue updates such a bucket
        cfg = (await kv.status()).stream_info.config
        assert cfg.discard == jetwire.DiscardPolicy.NEW and cfg.allow_direct is True
        await kv.put("k", b"v")
        assert (await kv.get("k")).value == b"v"
        # a bucket that differs in anything else is still refused
        with pytest.raises(jetwire.StreamNameInUseError):
            await js.create_key_value(bucket=bucket, history=5)
    finally:
        await js.delete_key_value(bucket)
        await nc.close()
