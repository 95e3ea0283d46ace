"""JetStream publishing from nats.go's last rows against a real nats-server (asyncio
source; the blocking twin is generated): atomic batches (ADR-50),
expected_last_subject_seq_subject, message schedules (ADR-51) and publish_async_ack_cb."""
from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

import jetwire.aio as jetwire
from tests.aio._helpers import uniq, wait_until


async def stream_of(js, prefix: str, **config):
    name = uniq(prefix)
    await js.create_stream(name=name, subjects=[f"{name}.>"], storage="memory", **config)
    return name, await js.stream(name)


async def stored(s) -> int:
    return (await s.info()).state.messages


async def count_on(s, subject: str) -> int:
    """How many messages the stream holds on ``subject``."""
    return ((await s.info(subjects_filter=subject)).state.subjects or {}).get(subject, 0)


# -- atomic batches -------------------------------------------------------------------
async def test_atomic_batch_stores_all_in_order(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    name, s = await stream_of(js, "BATCH", allow_atomic=True)
    try:
        assert s.cached_info().config.allow_atomic is True
        await js.publish(f"{name}.before", b"0")  # seq 1
        b = js.atomic_batch()
        assert b.size == 0 and not b.is_closed
        await b.add(f"{name}.a", b"1")
        b.add(f"{name}.b", b"2", headers={"K": "v"})  # awaiting add is optional
        await b.add(f"{name}.c", b"3", msg_id="m3")
        await b.add(f"{name}.a", b"4", expected_stream=name)
        assert b.size == 4
        ack = await b.commit(f"{name}.d", b"5")
        assert isinstance(ack, jetwire.BatchAck)
        assert (ack.stream, ack.seq, ack.count, ack.batch_id) == (name, 6, 5, b.batch_id)
        assert ack.first_seq == 2 and b.is_closed
        got = [await s.get_msg(seq) for seq in range(2, 7)]
        assert [m.data for m in got] == [b"1", b"2", b"3", b"4", b"5"]
        assert [m.subject for m in got] == [f"{name}.{x}" for x in "abcad"]
        assert got[1].headers["K"] == "v"
        assert got[2].headers["Nats-Msg-Id"] == "m3"
        assert all(m.headers["Nats-Batch-Id"] == b.batch_id for m in got)
        assert await stored(s) == 6
        with pytest.raises(jetwire.AtomicBatchError):  # used once
            b.add(f"{name}.a", b"again")
        with pytest.raises(jetwire.AtomicBatchError):
            await b.commit(f"{name}.a", b"again")
        assert await stored(s) == 6
    finally:
        await js.delete_stream(name)
        await nc.close()


async def test_atomic_batch_broken_in_the_middle_stores_nothing(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    name, s = await stream_of(js, "BATCH", allow_atomic=True)
    try:
        await js.publish(f"{name}.x", b"0")
        b = js.atomic_batch()
        await b.add(f"{name}.a", b"1")
        await b.add(f"{name}.b", b"2")
        await b.add(f"{name}.c", b"3", expected_last_subject_seq=7)  # wrong: c has no message
        await b.add(f"{name}.d", b"4")
        with pytest.raises(jetwire.AtomicBatchError) as ei:
            await b.commit(f"{name}.e", b"5")
        err = ei.value
        assert isinstance(err, jetwire.APIError)
        assert err.batch_id == b.batch_id and b.batch_id in str(err)
        assert err.err_code == 10071 and "wrong last sequence" in str(err) and err.reason == err.description
        assert isinstance(err.error, jetwire.WrongLastSequenceError) and err.__cause__ is err.error
        assert await stored(s) == 1
        # the connection and the stream are fine: a new batch commits
        b2 = js.atomic_batch()
        assert b2.batch_id != b.batch_id
        await b2.add(f"{name}.a", b"1")
        ack = await b2.commit(f"{name}.b", b"2")
        assert (ack.seq, ack.count) == (3, 2)
    finally:
        await js.delete_stream(name)
        await nc.close()


async def test_atomic_batch_on_a_stream_without_allow_atomic(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    name, s = await stream_of(js, "NOBATCH")
    try:
        b = js.atomic_batch()
        await b.add(f"{name}.a", b"1")
        await b.add(f"{name}.a", b"2")
        with pytest.raises(jetwire.AtomicBatchError) as ei:
            await b.commit(f"{name}.a", b"3")
        assert ei.value.err_code == 10174 and ei.value.batch_id == b.batch_id
        assert await stored(s) == 0
    finally:
        await js.delete_stream(name)
        await nc.close()


async def test_atomic_batch_duplicate_msg_id_and_no_stream(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    name, s = await stream_of(js, "BATCH", allow_atomic=True)
    try:
        await js.publish(f"{name}.a", b"0", msg_id="dup")
        b = js.atomic_batch()
        await b.add(f"{name}.a", b"1", msg_id="new")
        with pytest.raises(jetwire.AtomicBatchError) as ei:
            await b.commit(f"{name}.a", b"2", msg_id="dup")
        assert ei.value.err_code == 10201
        assert await stored(s) == 1
        b = js.atomic_batch(timeout=2)
        with pytest.raises(jetwire.AtomicBatchError) as ei:
            await b.commit(uniq("nostream"), b"x")
        assert isinstance(ei.value.error, jetwire.NoStreamResponseError)
        # bad input raises before anything is sent and leaves the batch open
        b = js.atomic_batch()
        with pytest.raises(jetwire.BadSubjectError):
            b.add("bad subject", b"1")
        with pytest.raises(TypeError):
            b.add(f"{name}.a", "text")
        with pytest.raises(ValueError):
            b.add(f"{name}.a", b"1", expected_last_subject_seq=-1)
        assert b.size == 0 and not b.is_closed
        await b.add(f"{name}.a", b"1")
        ack = await b.commit(f"{name}.a", b"2")
        assert ack.count == 2
        assert await stored(s) == 3
    finally:
        await js.delete_stream(name)
        await nc.close()


# -- expectations on another subject ------------------------------------------------
async def test_expected_last_subject_seq_subject(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    name, s = await stream_of(js, "ELSS")
    try:
        await js.publish(f"{name}.other", b"1")  # seq 1
        await js.publish(f"{name}.mine", b"2")  # seq 2
        ack = await js.publish(f"{name}.new", b"3", expected_last_subject_seq=1,
                               expected_last_subject_seq_subject=f"{name}.other")
        assert ack.seq == 3
        msg = await s.get_msg(3)
        assert msg.headers["Nats-Expected-Last-Subject-Sequence-Subject"] == f"{name}.other"
        with pytest.raises(jetwire.WrongLastSequenceError):
            await js.publish(f"{name}.new", b"4", expected_last_subject_seq=2,
                             expected_last_subject_seq_subject=f"{name}.other")
        with pytest.raises(ValueError):  # needs the sequence: nothing sent
            await js.publish(f"{name}.new", b"5", expected_last_subject_seq_subject=f"{name}.other")
        assert await stored(s) == 3
    finally:
        await js.delete_stream(name)
        await nc.close()


# -- message schedules ----------------------------------------------------------------
async def schedule_stream(js, **config):
    return await stream_of(js, "SCHED", allow_msg_schedules=True, **config)


async def test_bad_schedule_raises_before_sending(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    name, s = await schedule_stream(js)
    sub = await nc.subscribe(f"{name}.>")
    try:
        for spec in ("@at tomorrow", "@every 500ms", "@every 5", "0 0 * * *", "61 * * * * *", "@sometimes", ""):
            with pytest.raises(ValueError):
                await js.publish(f"{name}.sched", b"x", schedule=spec, schedule_target=f"{name}.target")
        with pytest.raises(jetwire.InvalidOptionError):  # a target is required
            await js.publish(f"{name}.sched", b"x", schedule="@hourly")
        with pytest.raises(ValueError):
            await js.publish(f"{name}.sched", b"x", schedule="@hourly", schedule_target=f"{name}.t",
                             schedule_ttl=0)
        with pytest.raises(ValueError):  # schedule_target alone
            await js.publish(f"{name}.sched", b"x", schedule_target=f"{name}.t")
        await nc.flush()
        assert sub.pending_msgs == 0
        assert await stored(s) == 0
        # the server judges what only it can: a date that never comes
        with pytest.raises(jetwire.MsgScheduleInvalidError):
            await js.publish(f"{name}.sched", b"x", schedule="0 0 0 30 2 *", schedule_target=f"{name}.t")
    finally:
        await sub.unsubscribe()
        await js.delete_stream(name)
        await nc.close()


async def test_schedule_at_delivers_to_the_target(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    name, s = await schedule_stream(js)
    try:
        at = datetime.now(UTC) + timedelta(seconds=1)
        spec = "@at " + at.strftime("%Y-%m-%dT%H:%M:%SZ")
        t0 = time.monotonic()
        await js.publish(f"{name}.sched.one", b"later", headers={"App": "1"}, schedule=spec,
                         schedule_target=f"{name}.target")

        async def arrived():
            return await count_on(s, f"{name}.target") == 1

        assert await wait_until(arrived, 10)
        assert time.monotonic() - t0 < 10
        msg = await s.get_last_msg_for_subject(f"{name}.target")
        assert msg.data == b"later" and msg.headers["App"] == "1"
        assert msg.headers["Nats-Scheduler"] == f"{name}.sched.one"
        assert msg.headers["Nats-Schedule-Next"] == "purge"
        assert await count_on(s, f"{name}.sched.one") == 0  # a one-off schedule is removed
        # a datetime works too (sent as @at in UTC); a time in the past fires at once
        await js.publish(f"{name}.sched.two", b"now", schedule=datetime.now(UTC) - timedelta(seconds=5),
                         schedule_target=f"{name}.target2")

        async def fired():
            return await count_on(s, f"{name}.target2") == 1

        assert await wait_until(fired, 10)
    finally:
        await js.delete_stream(name)
        await nc.close()


async def test_schedule_every_with_ttl_and_cron(nats_url):
    nc = await jetwire.connect(nats_url)
    js = nc.jetstream()
    name, s = await schedule_stream(js, allow_msg_ttl=True)
    try:
        await js.publish(f"{name}.sched.tick", b"tick", schedule="@every 1s", schedule_target=f"{name}.ticks",
                         schedule_ttl=60)

        async def two_ticks():
            return await count_on(s, f"{name}.ticks") >= 2

        assert await wait_until(two_ticks, 10)
        msg = await s.get_last_msg_for_subject(f"{name}.ticks")
        assert msg.data == b"tick" and msg.headers["Nats-TTL"] == "60s"
        assert msg.headers["Nats-Scheduler"] == f"{name}.sched.tick"
        await s.purge(subject=f"{name}.sched.tick")  # stops the schedule
        for spec in ("0 0 * * * *", "*/5 * * * jan-jun mon-fri", "@hourly", timedelta(minutes=5)):
            ack = await js.publish(f"{name}.sched.cron", b"c", schedule=spec, schedule_target=f"{name}.cron")
            got = await s.get_msg(ack.seq)
            assert got.headers["Nats-Schedule"] == (spec if isinstance(spec, str) else "@every 300s")
        # a stream without schedules refuses them
        other, _ = await stream_of(js, "NOSCHED")
        try:
            with pytest.raises(jetwire.MsgSchedulesDisabledError):
                await js.publish(f"{other}.s", b"x", schedule="@hourly", schedule_target=f"{other}.t")
        finally:
            await js.delete_stream(other)
    finally:
        await js.delete_stream(name)
        await nc.close()


# -- publish_async_ack_cb -------------------------------------------------------------
async def test_publish_async_ack_cb_once_per_ack(nats_url):
    nc = await jetwire.connect(nats_url)
    acks: list = []
    failed: list = []
    js = nc.jetstream(publish_async_ack_cb=acks.append, publish_async_err_cb=lambda msg, err: failed.append(err))
    name, s = await stream_of(js, "ACKCB")
    try:
        futs = [await js.publish_async(f"{name}.a", b"%d" % i) for i in range(50)]
        futs.append(await js.publish_async(f"{name}.b", b"h", headers={"K": "v"}, msg_id="x"))
        # failures are not acks: a broken expectation and no stream at all
        futs.append(await js.publish_async(f"{name}.c", b"bad", expected_last_seq=1))
        futs.append(await js.publish_async(uniq("nostream"), b"lost", retry_attempts=0))
        await js.publish_async_complete(timeout=10)
        assert await wait_until(lambda: len(acks) >= 51 and len(failed) == 2, 5)
        await nc.flush()
        assert len(acks) == 51 and len(failed) == 2
        assert all(isinstance(a, jetwire.PubAck) for a in acks)
        assert sorted(a.seq for a in acks) == list(range(1, 52))
        assert await stored(s) == 51
        # a context without the callback is unaffected; one with (msg, ack) gets the message
        pairs: list = []
        js2 = nc.jetstream(publish_async_ack_cb=lambda msg, ack: pairs.append((msg.subject, msg.data, ack.seq)))
        await js2.publish_async(f"{name}.p", b"pair")
        await nc.jetstream().publish_async(f"{name}.q", b"plain")
        await js2.publish_async_complete(timeout=10)
        assert await wait_until(lambda: len(pairs) == 1, 5)
        assert pairs == [(f"{name}.p", b"pair", 52)]
        assert len(acks) == 51
        with pytest.raises(TypeError):
            nc.jetstream(publish_async_ack_cb=42)
    finally:
        await js.delete_stream(name)
        await nc.close()
