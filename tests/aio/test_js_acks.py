"""JetStream message acknowledgements end to end: ack, ack_sync, nak (with delay),
in_progress, term, MsgAlreadyAckedError and metadata (asyncio source; the blocking twin
is generated)."""
from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

import jetwire.aio as jetwire
from tests.aio._helpers import acks_applied, new_stream


async def make(nc, n: int = 1, **consumer):
    js, name = await new_stream(nc)
    for i in range(n):
        await js.publish(f"{name}.s{i % 2}", b"m%d" % i)
    consumer.setdefault("durable_name", "c")
    return js, name, await js.create_consumer(name, **consumer)


async def one(c, max_wait: float = 2.0):
    msgs = [m async for m in await c.fetch(1, max_wait=max_wait)]
    return msgs[0] if msgs else None


async def test_ack_sync_and_double_ack_errors(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream, c = await make(nc, 3)
    try:
        m = await one(c)
        await m.ack_sync(timeout=2)
        with pytest.raises(jetwire.MsgAlreadyAckedError):
            await m.ack()
        with pytest.raises(jetwire.MsgAlreadyAckedError):
            await m.nak()
        with pytest.raises(jetwire.MsgAlreadyAckedError):
            await m.term()
        m2 = await one(c)
        await m2.ack()
        with pytest.raises(jetwire.MsgAlreadyAckedError):
            await m2.ack_sync()
        m3 = await one(c)
        await m3.term("bad payload")
        with pytest.raises(jetwire.MsgAlreadyAckedError):
            await m3.ack()
        await nc.flush()
        info = await acks_applied(c)
        assert info.num_ack_pending == 0
        assert info.ack_floor.stream_seq == 3
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_nak_redelivers_with_num_delivered_2(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream, c = await make(nc, 1)
    try:
        m = await one(c)
        assert m.metadata.num_delivered == 1
        await m.nak()
        again = await one(c)
        assert again is not None
        assert again.data == m.data
        assert again.metadata.sequence.stream == 1
        assert again.metadata.num_delivered == 2
        assert again.metadata.sequence.consumer == 2
        await again.ack_sync()
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_nak_with_delay(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream, c = await make(nc, 1)
    try:
        m = await one(c)
        start = time.monotonic()
        await m.nak(delay=0.6)
        batch = await c.fetch_no_wait(1)
        assert [x async for x in batch] == []  # not redelivered before the delay
        again = await one(c, max_wait=5)
        assert again is not None
        assert time.monotonic() - start >= 0.5
        assert again.metadata.num_delivered == 2
        await again.ack()
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_term_stops_redelivery(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream, c = await make(nc, 1, ack_wait=0.5)
    try:
        m = await one(c)
        await m.term()
        assert await one(c, max_wait=1.2) is None  # well past ack_wait
        info = await c.info()
        assert info.num_ack_pending == 0 and info.num_redelivered == 0
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_unacked_message_is_redelivered_after_ack_wait(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream, c = await make(nc, 1, ack_wait=0.5)
    try:
        m = await one(c)
        assert m.metadata.num_delivered == 1
        again = await one(c, max_wait=3)
        assert again is not None and again.metadata.num_delivered == 2
        await again.ack_sync()
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_in_progress_extends_ack_wait(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream, c = await make(nc, 1, ack_wait=1.0)
    try:
        m = await one(c)
        for _ in range(4):  # 1.6 s of work, acknowledged as ongoing every 0.4 s
            await m.in_progress()
            assert await one(c, max_wait=0.4) is None
        await m.in_progress()  # may be sent many times: not terminal
        await m.ack_sync()
        info = await c.info()
        assert info.num_redelivered == 0 and info.num_ack_pending == 0
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_metadata_fields(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream, c = await make(nc, 4)
    try:
        before = datetime.now(UTC)
        msgs = [m async for m in await c.fetch(4, max_wait=2)]
        assert len(msgs) == 4
        for i, m in enumerate(msgs):
            md = m.metadata
            assert md.stream == stream
            assert md.consumer == "c"
            assert md.sequence.stream == i + 1
            assert md.sequence.consumer == i + 1
            assert md.num_delivered == 1
            assert md.num_pending == 3 - i
            assert md.domain is None
            assert md.timestamp.tzinfo is not None
            assert before - timedelta(minutes=1) < md.timestamp <= datetime.now(UTC) + timedelta(seconds=5)
            assert md.timestamp_ns // 1000 == int((md.timestamp - datetime(1970, 1, 1, tzinfo=UTC))
                                                   / timedelta(microseconds=1))
            assert m.subject == f"{stream}.s{i % 2}"
            assert m.data == b"m%d" % i
            assert jetwire.parse_metadata(m.reply) == md
            await m.ack()
        await nc.flush()
        assert (await acks_applied(c)).num_ack_pending == 0
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_ack_none_consumer_messages_and_core_messages(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream, c = await make(nc, 1, ack_policy="none")
    try:
        m = await one(c)
        assert m.metadata.sequence.stream == 1
        sub = await nc.subscribe(f"plain.{stream}")
        await nc.publish(f"plain.{stream}", b"x")
        core = await sub.next_msg(timeout=2)
        with pytest.raises(jetwire.NotJSMessageError):
            await core.ack()
        with pytest.raises(jetwire.NotJSMessageError):
            core.metadata
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_acks_from_consume_callback(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream, c = await make(nc, 50)
    try:
        from jetwire.aio import _prims as prims

        done = prims.Signal()
        seen: list = []
        redelivered: list = []

        async def cb(msg):
            if msg.metadata.sequence.stream % 10 == 0 and msg.metadata.num_delivered == 1:
                await msg.nak()
                return
            seen.append(msg.metadata.sequence.stream)
            if msg.metadata.sequence.stream % 10 == 0:
                redelivered.append(msg.metadata.num_delivered)
            await msg.ack()
            if len(seen) == 50:
                done.set()

        cc = await c.consume(cb, max_messages=20)
        assert await done.wait(10), seen
        cc.stop()
        assert sorted(seen) == list(range(1, 51))
        await nc.flush()
        info = await acks_applied(c)
        assert info.num_ack_pending == 0
        assert redelivered == [2] * 5
    finally:
        await js.delete_stream(stream)
        await nc.close()
