"""Stream backup and restore against real nats-servers (asyncio source; the blocking
twin is generated): round trips of messages and consumer state, flat memory on a 200 MB
stream, the ``nats stream backup`` layout restored by a second server from the files
alone, and every error path, provoked (servers killed and frozen mid-transfer)."""
from __future__ import annotations

import gc
import hashlib
import os

import orjson
import pytest

import jetwire.aio as jetwire
from tests.aio._helpers import uniq, wait_until

MB = 1024 * 1024


def rss() -> int:
    """This process's resident set size in bytes (Linux /proc)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


def file_digest(path) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def frame_starts(data: bytes) -> list:
    """Offsets of the S2 frames of ``data``."""
    out, i = [], 0
    while i < len(data):
        out.append(i)
        i += 4 + int.from_bytes(data[i + 1:i + 4], "little")
    return out


async def exists(js, name: str) -> bool:
    try:
        await js.stream_info(name)
        return True
    except jetwire.StreamNotFoundError:
        return False


async def random_stream(js, name: str, total: int, size: int = 128 * 1024) -> None:
    """A file stream of about ``total`` bytes of messages that do not compress."""
    await js.create_stream(name=name, subjects=[f"{name}.>"], storage="file")
    pool = os.urandom(4 * MB + size)
    for i in range(total // size):
        off = (i * 7919 * 64) % (4 * MB)
        await js.publish_async(f"{name}.{i % 4}", pool[off:off + size])
    await js.publish_async_complete(timeout=60)


async def all_messages(js, stream: str, expected: int) -> list:
    """Every stored message as (stream seq, subject, data, headers, timestamp ns)."""
    c = await js.create_consumer(stream, ack_policy="none", inactive_threshold=60.0)
    out: list = []
    try:
        while len(out) < expected:
            async for m in await c.fetch(min(10000, expected - len(out)), max_wait=10):
                md = m.metadata
                out.append((md.sequence.stream, m.subject, m.data, m.headers, md.timestamp_ns))
            assert out, "no messages"
    finally:
        await js.delete_consumer(stream, c.name)
    return out


def consumer_state(ci) -> tuple:
    return (ci.name, ci.config.filter_subject, ci.delivered.consumer_seq, ci.delivered.stream_seq,
            ci.ack_floor.consumer_seq, ci.ack_floor.stream_seq, ci.num_ack_pending, ci.num_pending,
            ci.num_redelivered)


class Progress:
    def __init__(self) -> None:
        self.calls: list = []

    def __call__(self, done, total) -> None:
        self.calls.append((done, total))


async def small_backup(js, tmp_path, n: int = 50) -> tuple:
    """A stream of ``n`` messages and a durable, backed up into ``tmp_path/<name>``."""
    name = uniq("BK")
    await js.create_stream(name=name, subjects=[f"{name}.>"], storage="file")
    for i in range(n):
        await js.publish_async(f"{name}.x", b"m%d" % i)
    await js.publish_async_complete(timeout=10)
    await js.create_consumer(name, durable_name="D")
    dest = tmp_path / name
    await js.snapshot_stream(name, dest)
    return name, dest


# ---------------------------------------------------------------------------------
# round trips


async def test_round_trip_keeps_messages_headers_sequences_times_and_consumers(nats_url, tmp_path):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream(timeout=10)
    name = uniq("BK")
    n = 100_000
    try:
        await js.create_stream(name=name, subjects=[f"{name}.>"], storage="file")
        for i in range(n):
            hdrs = {"Idx": str(i), "Kind": ["a", "b"]} if i % 3 == 0 else None
            await js.publish_async(f"{name}.s{i % 5}", b"%d" % i, headers=hdrs)
        await js.publish_async_complete(timeout=60)
        stream = await js.stream(name)
        for seq in range(40_001, 40_201, 2):  # deleted messages in the middle
            await stream.delete_msg(seq)
        c1 = await js.create_consumer(name, durable_name="C1", filter_subject=f"{name}.s1")
        c2 = await js.create_consumer(name, durable_name="C2")
        async for m in await c1.fetch(700, max_wait=5):
            await m.ack()
        i = 0
        async for m in await c2.fetch(300, max_wait=5):
            if i < 200 or i % 2:  # 200 acked in order, then every other one
                await m.ack()
            i += 1
        await nc.flush()
        assert await wait_until(lambda: _ack_pending(js, name, "C2", 50))
        before = await js.stream_info(name)
        assert before.state.messages == n - 100 and before.state.num_deleted == 100
        msgs = await all_messages(js, name, n - 100)
        consumers = sorted([consumer_state(ci) async for ci in js.list_consumers(name)])
        assert [c[0] for c in consumers] == ["C1", "C2"]

        snap_progress = Progress()
        result = await js.snapshot_stream(name, tmp_path / "b", progress=snap_progress)
        assert isinstance(result, jetwire.SnapshotResult)
        assert result.bytes == os.path.getsize(tmp_path / "b" / "stream.tar.s2")
        assert result.chunks >= result.bytes // (128 * 1024) and result.duration > 0
        assert snap_progress.calls[0] == (0, before.state.bytes)
        dones = [d for d, _ in snap_progress.calls]
        assert dones == sorted(dones) and dones[-1] > 0

        await js.delete_stream(name)
        restore_progress = Progress()
        info = await js.restore_stream(tmp_path / "b", progress=restore_progress)
        assert isinstance(info, jetwire.StreamInfo)
        size = result.bytes
        assert restore_progress.calls[0] == (0, size) and restore_progress.calls[-1] == (size, size)

        st, want = info.state, before.state
        assert (st.messages, st.bytes, st.first_seq, st.last_seq, st.num_deleted, st.first_ts, st.last_ts,
                st.num_subjects, st.consumer_count) == \
               (want.messages, want.bytes, want.first_seq, want.last_seq, want.num_deleted, want.first_ts,
                want.last_ts, want.num_subjects, 2)
        assert info.config.subjects == before.config.subjects and info.config.storage == before.config.storage
        assert sorted([consumer_state(ci) async for ci in js.list_consumers(name)]) == consumers
        assert await all_messages(js, name, n - 100) == msgs
        # the restored consumer goes on where it was: C2 redelivers none of what was acked
        c2 = await js.consumer(name, "C2")
        got = [m.metadata.sequence.stream async for m in await c2.fetch(1, max_wait=5)]
        assert got == [301]
    finally:
        if await exists(js, name):
            await js.delete_stream(name)
        await nc.close()


async def _ack_pending(js, stream: str, consumer: str, n: int) -> bool:
    return (await js.consumer_info(stream, consumer)).num_ack_pending == n


async def test_restore_under_another_name(nats_url, tmp_path):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    name, dest = await small_backup(js, tmp_path)
    other = uniq("BKNEW")
    try:
        # the original still holds the subjects: the server refuses, before any data
        progress = Progress()
        with pytest.raises(jetwire.APIError) as ei:
            await js.restore_stream(dest, name=other, progress=progress)
        assert "overlap" in str(ei.value) and ei.value.err_code == 10065 and progress.calls == []
        assert not await exists(js, other)
        await js.delete_stream(name)
        info = await js.restore_stream(dest, name=other)
        assert info.config.name == other and info.state.messages == 50
        assert [c.name async for c in js.list_consumers(other)] == ["D"]
        assert not await exists(js, name)
        with pytest.raises(jetwire.InvalidStreamNameError):
            await js.restore_stream(dest, name="a.b")
    finally:
        for s in (name, other):
            if await exists(js, s):
                await js.delete_stream(s)
        await nc.close()


async def test_big_stream_memory_stays_flat(nats_url, tmp_path):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream(timeout=10)
    name = uniq("BKBIG")
    try:
        await random_stream(js, name, 200 * MB)
        before = (await js.stream_info(name)).state
        assert before.bytes >= 200 * MB
        first = await (await js.stream(name)).get_msg(1)
        last = await (await js.stream(name)).get_msg(before.last_seq)
        gc.collect()
        base = rss()
        peak = [base]

        def sample(done, total):
            peak[0] = max(peak[0], rss())

        result = await js.snapshot_stream(name, tmp_path / "big", progress=sample)
        assert result.bytes >= 200 * MB  # random data does not compress
        await js.delete_stream(name)
        info = await js.restore_stream(tmp_path / "big", progress=sample)
        peak[0] = max(peak[0], rss())
        assert peak[0] - base < 50 * MB, f"RSS grew by {(peak[0] - base) / MB:.1f} MB"
        assert (info.state.messages, info.state.bytes, info.state.last_seq) == \
               (before.messages, before.bytes, before.last_seq)
        s = await js.stream(name)
        assert (await s.get_msg(1)).data == first.data
        assert (await s.get_msg(before.last_seq)).data == last.data
    finally:
        if await exists(js, name):
            await js.delete_stream(name)
        await nc.close()


# ---------------------------------------------------------------------------------
# the format


async def test_layout_of_nats_stream_backup_restored_by_another_server_from_the_files(nats_server_factory,
                                                                                      tmp_path):
    a = nats_server_factory()
    b = nats_server_factory()
    nc = await jetwire.connect(a.url)
    js = nc.jetstream()
    name = uniq("BK")
    try:
        await js.create_stream(name=name, subjects=[f"{name}.>"], storage="file")
        for i in range(1000):
            await js.publish_async(f"{name}.{i % 3}", b"x%d" % i, headers={"N": str(i)})
        await js.publish_async_complete(timeout=10)
        await js.create_consumer(name, durable_name="D")
        dest = tmp_path / "backup"
        await js.snapshot_stream(name, dest)
    finally:
        await nc.close()

    assert sorted(os.listdir(dest)) == ["backup.json", "stream.tar.s2"]
    meta = orjson.loads((dest / "backup.json").read_bytes())
    assert set(meta) == {"config", "state"}
    assert meta["config"]["name"] == name and meta["state"]["messages"] == 1000
    data = (dest / "stream.tar.s2").read_bytes()
    assert data.startswith(b"\xff\x06\x00\x00S2sTwO")

    # restore on the second server the way `nats stream restore` does, with plain
    # requests and nothing but the two files
    nc = await jetwire.connect(b.url)
    try:
        resp = orjson.loads((await nc.request(f"$JS.API.STREAM.RESTORE.{name}", (dest / "backup.json").read_bytes(),
                                              timeout=5)).data)
        assert "error" not in resp, resp
        deliver = resp["deliver_subject"]
        for off in range(0, len(data), 64 * 1024):
            ack = await nc.request(deliver, data[off:off + 64 * 1024], timeout=5)
            assert ack.data == b""
        done = orjson.loads((await nc.request(deliver, b"", timeout=30)).data)
        assert "error" not in done, done
        assert done["state"]["messages"] == 1000
        js = nc.jetstream()
        m = await (await js.stream(name)).get_msg(1000)
        assert (m.subject, m.data, m.headers["N"]) == (f"{name}.0", b"x999", "999")
        assert [c.name async for c in js.list_consumers(name)] == ["D"]
    finally:
        await nc.close()


# ---------------------------------------------------------------------------------
# errors


async def test_restore_onto_an_existing_stream_is_refused_before_any_data(nats_url, tmp_path):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    name, dest = await small_backup(js, tmp_path)
    try:
        await js.publish(f"{name}.x", b"after the backup")
        progress = Progress()
        with pytest.raises(jetwire.StreamNameInUseError):
            await js.restore_stream(dest, progress=progress)
        assert progress.calls == []
        assert (await js.stream_info(name)).state.messages == 51
        # the restore API itself answers err_code 10130: the same error
        meta = orjson.loads((dest / "backup.json").read_bytes())
        with pytest.raises(jetwire.StreamNameInUseError) as ei:
            await js.api_request(f"STREAM.RESTORE.{name}", meta)
        assert ei.value.err_code == 10130
    finally:
        await js.delete_stream(name)
        await nc.close()


async def test_missing_truncated_and_corrupt_backups(nats_url, tmp_path):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    name = uniq("BK")
    try:
        await random_stream(js, name, 4 * MB, size=16 * 1024)
        await js.snapshot_stream(name, tmp_path / "good")
        await js.delete_stream(name)
        meta = (tmp_path / "good" / "backup.json").read_bytes()
        data = (tmp_path / "good" / "stream.tar.s2").read_bytes()

        def backup(dirname: str, meta_bytes=meta, data_bytes=data):
            d = tmp_path / dirname
            d.mkdir()
            if meta_bytes is not None:
                (d / "backup.json").write_bytes(meta_bytes)
            if data_bytes is not None:
                (d / "stream.tar.s2").write_bytes(data_bytes)
            return d

        cases = [
            (backup("nometa", meta_bytes=None), "backup.json is missing"),
            (backup("nodata", data_bytes=None), "stream.tar.s2 is missing"),
            (backup("badjson", meta_bytes=b"{not json"), "not valid JSON"),
            (backup("notbackup", meta_bytes=b'{"a": 1}'), "not a stream backup"),
            (backup("empty", data_bytes=b""), "empty"),
            (backup("notS2", data_bytes=b"hello world, not a snapshot"), "not an S2 stream"),
            (backup("halfframe", data_bytes=data[:len(data) // 2 + 7]), "truncated"),
        ]
        for d, problem in cases:
            progress = Progress()
            with pytest.raises(jetwire.JetStreamError) as ei:
                await js.restore_stream(d, progress=progress)
            assert problem in str(ei.value), (problem, str(ei.value))
            assert progress.calls == [], problem  # found before anything was sent
            assert not await exists(js, name)

        # problems only the server can see: the partial stream it made is deleted
        starts = frame_starts(data)
        assert len(starts) > 4
        flipped = bytearray(data)
        mid = starts[len(starts) // 2] + 40
        flipped[mid:mid + 16] = bytes(b ^ 0x5A for b in flipped[mid:mid + 16])
        for d in (backup("cut", data_bytes=data[:starts[-2]]), backup("flipped", data_bytes=bytes(flipped))):
            progress = Progress()
            with pytest.raises(jetwire.JetStreamError) as ei:
                await js.restore_stream(d, progress=progress)
            assert "stream.tar.s2" in str(ei.value) and name in str(ei.value)
            assert progress.calls  # data was sent
            assert not await exists(js, name)
        # and the good one still restores (under another name: nats-server may still be
        # removing the failed restores' files of the first name in the background, and
        # then fails a restore into it with "expected sequence does not match store")
        info = await js.restore_stream(tmp_path / "good", name=name + "_OK")
        assert info.state.messages == 4 * MB // (16 * 1024)
    finally:
        for n in (name, name + "_OK"):
            if await exists(js, n):
                await js.delete_stream(n)
        await nc.close()


async def test_snapshot_bad_input_and_missing_stream_leave_nothing(nats_url, tmp_path):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    try:
        with pytest.raises(jetwire.StreamNotFoundError):
            await js.snapshot_stream(uniq("NOPE"), tmp_path / "x")
        assert not (tmp_path / "x").exists()
        with pytest.raises(jetwire.StreamNotFoundError):  # the folders it made on the way go too
            await js.snapshot_stream(uniq("NOPE"), tmp_path / "deep" / "er" / "x")
        assert not (tmp_path / "deep").exists()
        with pytest.raises(jetwire.InvalidStreamNameError):
            await js.snapshot_stream("a.b", tmp_path / "x")
        for bad in (100, 2 * MB):
            with pytest.raises(ValueError):
                await js.snapshot_stream("S", tmp_path / "x", chunk_size=bad)
        assert not (tmp_path / "x").exists()
    finally:
        await nc.close()


async def test_snapshot_chunk_size_and_check_msgs(nats_url, tmp_path):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    name, _ = await small_backup(js, tmp_path, n=2000)
    try:
        r = await js.snapshot_stream(name, tmp_path / "small", chunk_size=1024, check_msgs=True)
        assert r.chunks == -(-r.bytes // 1024)
        await js.delete_stream(name)
        assert (await js.restore_stream(tmp_path / "small")).state.messages == 2000
    finally:
        await js.delete_stream(name)
        await nc.close()


async def _good_backup(js, tmp_path, name: str):
    """A 24 MB stream (three times the server's flow-control window) and its backup."""
    await random_stream(js, name, 24 * MB)
    await js.snapshot_stream(name, tmp_path / "b")
    return {p: file_digest(tmp_path / "b" / p) for p in ("backup.json", "stream.tar.s2")}


async def test_server_killed_mid_snapshot_leaves_no_partial_files(fresh_nats_server, tmp_path):
    srv = fresh_nats_server
    nc = await jetwire.connect(srv.url, max_reconnect_attempts=-1, reconnect_time_wait=0.1)
    js = nc.jetstream()
    try:
        good = await _good_backup(js, tmp_path, "KILLED")

        def kill(done, total):
            if done and srv.running:
                srv.kill()

        with pytest.raises(jetwire.ConnectionLostError):
            await js.snapshot_stream("KILLED", tmp_path / "b", progress=kill)
        # the earlier backup in that directory is untouched, and nothing else is there
        assert sorted(os.listdir(tmp_path / "b")) == ["backup.json", "stream.tar.s2"]
        assert {p: file_digest(tmp_path / "b" / p) for p in good} == good
        srv.start()
        assert await wait_until(lambda: _back(js, "KILLED"), timeout=30)
        with pytest.raises(jetwire.ConnectionLostError):
            await js.snapshot_stream("KILLED", tmp_path / "new", progress=kill)
        assert not (tmp_path / "new").exists()  # the directory it made is gone too
    finally:
        await nc.close()


async def test_server_frozen_mid_snapshot_times_out_and_leaves_no_partial_files(fresh_nats_server, tmp_path):
    srv = fresh_nats_server
    nc = await jetwire.connect(srv.url)
    js = nc.jetstream(timeout=1)
    try:
        await random_stream(js, "FROZEN", 24 * MB)

        def freeze(done, total):
            if done and not srv.frozen:
                srv.freeze()

        try:
            with pytest.raises(jetwire.TimeoutError):
                await js.snapshot_stream("FROZEN", tmp_path / "b", progress=freeze)
        finally:
            srv.thaw()
        assert not (tmp_path / "b").exists()
    finally:
        await nc.close()


async def test_server_killed_mid_restore_then_the_partial_stream_is_deleted(fresh_nats_server, tmp_path):
    srv = fresh_nats_server
    nc = await jetwire.connect(srv.url, max_reconnect_attempts=-1, reconnect_time_wait=0.1)
    js = nc.jetstream()
    try:
        await _good_backup(js, tmp_path, "KILLED")
        await js.delete_stream("KILLED")

        def kill(done, total):
            if done > total // 3 and srv.running:
                srv.kill()

        with pytest.raises(jetwire.ConnectionLostError):
            await js.restore_stream(tmp_path / "b", progress=kill)
        srv.start()  # the server recovers the partial stream from its disk; jetwire deletes it
        assert await wait_until(lambda: _gone(js, "KILLED"), timeout=30)
        info = await js.restore_stream(tmp_path / "b")
        assert info.state.bytes >= 24 * MB
    finally:
        await nc.close()


async def test_server_frozen_mid_restore_times_out_then_the_partial_stream_is_deleted(fresh_nats_server, tmp_path):
    srv = fresh_nats_server
    nc = await jetwire.connect(srv.url)
    js = nc.jetstream(timeout=1)
    try:
        await _good_backup(js, tmp_path, "FROZEN")
        await js.delete_stream("FROZEN")

        def freeze(done, total):
            if done > total // 3 and not srv.frozen:
                srv.freeze()

        try:
            with pytest.raises(jetwire.TimeoutError):
                await js.restore_stream(tmp_path / "b", progress=freeze)
        finally:
            srv.thaw()
        assert await wait_until(lambda: _gone(js, "FROZEN"), timeout=30)
        # the server is fine again: the backup restores (under another name: the server
        # removes a deleted stream's files on its own time, and a restore into the same
        # directory meanwhile can be refused with "expected sequence does not match store")
        info = await js.restore_stream(tmp_path / "b", name="FROZEN2")
        assert info.config.name == "FROZEN2" and info.state.bytes >= 24 * MB
    finally:
        await nc.close()


async def _gone(js, name: str) -> bool:
    try:
        return not await exists(js, name)
    except jetwire.NatsError:  # the server is still coming back
        return False



async def _back(js, name: str) -> bool:
    try:
        return await exists(js, name)
    except jetwire.NatsError:  # the server is still coming back
        return False


async def test_server_refusing_the_restore_for_lack_of_storage(nats_server_factory, tmp_path):
    big = nats_server_factory()
    small = nats_server_factory(jetstream={"max_file_store": 8 * MB})
    nc = await jetwire.connect(big.url)
    js = nc.jetstream()
    try:
        await random_stream(js, "LARGE", 12 * MB)
        await js.snapshot_stream("LARGE", tmp_path / "b")
    finally:
        await nc.close()
    nc = await jetwire.connect(small.url)
    js = nc.jetstream()
    try:
        progress = Progress()
        with pytest.raises(jetwire.JetStreamError) as ei:
            await js.restore_stream(tmp_path / "b", progress=progress)
        assert "could not restore LARGE" in str(ei.value) and "insufficient storage" in str(ei.value)
        assert progress.calls  # refused once data was sent
        assert not await exists(js, "LARGE")
    finally:
        await nc.close()
