"""Push consumers (nats.go legacy ``js.subscribe`` style) against a real nats-server:
callbacks with auto-ack, iteration, flow control and heartbeats, queue groups, binding,
ordered push consumers (asyncio source; the blocking twin is generated)."""
from __future__ import annotations

import time

import pytest

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims
from tests.aio._helpers import Errors, Seqs, fill, new_stream


async def no_ack_pending(sub, timeout: float = 5.0) -> None:
    """Auto-acks go out after each callback returns: wait until the server has them all."""
    deadline = time.monotonic() + timeout
    while True:
        await sub._js._nc.flush()
        info = await sub.consumer_info()
        if info.num_ack_pending == 0:
            return
        assert time.monotonic() < deadline, f"{info.num_ack_pending} acks still pending"


async def test_push_callback_auto_acks(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc, 100)
    try:
        rec = Seqs()
        done = rec.at(100)
        sub = await js.subscribe(f"{stream}.>", cb=rec)
        assert await done.wait(10)
        assert rec.seqs == list(range(1, 101))
        await no_ack_pending(sub)  # the last ack goes out after the callback that set `done`
        info = await sub.consumer_info()
        assert info.config.deliver_subject
        assert info.config.ack_policy == jetwire.AckPolicy.EXPLICIT
        assert info.num_ack_pending == 0 and info.delivered.stream_seq == 100
        assert sub.delivered == 100
        name = info.name
        await sub.unsubscribe()
        with pytest.raises(jetwire.ConsumerNotFoundError):  # the ephemeral consumer is deleted
            await js.consumer_info(stream, name)
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_auto_ack_leaves_a_message_the_callback_acknowledged(nats_url):
    """With auto-ack on, a callback may acknowledge a message itself (here every second
    one, with ``term``, which auto-ack could not have sent): nothing is sent twice, no
    error reaches ``error_cb``, and every message ends acknowledged."""
    errors = Errors()
    nc = await jetwire.connect(nats_url, error_cb=errors)
    js, stream = await new_stream(nc, 20)
    try:
        rec = Seqs()
        done = rec.at(20)

        async def cb(msg):
            if msg.metadata.sequence.stream % 2 == 0:
                await msg.term()
            rec(msg)

        sub = await js.subscribe(f"{stream}.>", cb=cb)
        assert await done.wait(10)
        await no_ack_pending(sub)
        info = await sub.consumer_info()
        assert info.num_ack_pending == 0 and info.num_redelivered == 0
        assert errors.errors == []
        await sub.unsubscribe()
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_push_iteration_and_manual_acks(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc, 5)
    try:
        sub = await js.subscribe(f"{stream}.a", durable="dur", manual_ack=True)
        got = []
        async for msg in sub:
            got.append(msg.metadata.sequence.stream)
            await msg.ack()
            if len(got) == 5:
                break
        assert got == [1, 2, 3, 4, 5]
        with pytest.raises(jetwire.TimeoutError):
            await sub.next_msg(timeout=0.2)
        await fill(js, f"{stream}.a", 1)
        m = await sub.next_msg(timeout=2)
        assert m.metadata.sequence.stream == 6 and m.metadata.consumer == "dur"
        await m.ack_sync()
        await sub.unsubscribe()
        await nc.flush()
        info = await js.consumer_info(stream, "dur")  # a durable stays
        assert info.num_ack_pending == 0 and not info.push_bound
        with pytest.raises(jetwire.NatsError):
            await sub.next_msg(timeout=0.1)
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_push_flow_control_and_heartbeats(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc)
    try:
        # the client's answers to flow-control requests, seen on the wire by another connection
        watcher = await jetwire.connect(nats_url)
        fc_answers = await watcher.subscribe("$JS.FC.>")
        await watcher.flush()
        await fill(js, f"{stream}.a", 3000, b"p" * 1024)
        rec = Seqs()
        done = rec.at(3000)
        sub = await js.subscribe(f"{stream}.a", cb=rec, flow_control=True, idle_heartbeat=0.5)
        assert await done.wait(30), len(rec.seqs)
        assert rec.seqs == list(range(1, 3001))
        answer = await fc_answers.next_msg(5)
        assert answer.subject.startswith("$JS.FC."), "flow control requests were answered"
        info = await sub.consumer_info()
        assert info.config.flow_control is True and info.config.idle_heartbeat == 0.5
        await no_ack_pending(sub)
        await sub.unsubscribe()
        assert len(rec.seqs) == 3000
        await watcher.close()
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_push_heartbeats_never_reach_iteration(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc, 1)
    try:
        sub = await js.subscribe(f"{stream}.a", idle_heartbeat=0.5, manual_ack=True)
        m = await sub.next_msg(timeout=2)
        await m.ack()
        start = time.monotonic()
        with pytest.raises(jetwire.TimeoutError):
            await sub.next_msg(timeout=1.3)  # at least two heartbeats arrive meanwhile
        assert time.monotonic() - start >= 1.2
        assert sub._seen >= 3
        await sub.unsubscribe()
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_push_stalled_heartbeat_is_answered(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc)
    try:
        sub = await js.subscribe(f"{stream}.a", manual_ack=True)
        answer = await nc.subscribe("stall.reply.x")
        await nc.flush()
        hb = jetwire.Msg(sub._sub.subject, b"", None,
                         jetwire.Headers({"Nats-Last-Consumer": "0", "Nats-Consumer-Stalled": "stall.reply.x"}))
        hb.headers.status = "100"
        hb.headers.description = "Idle Heartbeat"
        sub._on_msg(hb)
        got = await answer.next_msg(timeout=2)
        assert got.data == b""
        assert sub.pending_msgs == 0
        await sub.unsubscribe()
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_queue_push_consumer(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc)
    try:
        rec1, rec2 = Seqs(), Seqs()
        total = prims.Signal()
        both: list = []

        def cb_for(rec):
            def cb(msg):
                rec(msg)
                both.append(msg.metadata.sequence.stream)
                if len(both) == 300:
                    total.set()
            return cb

        s1 = await js.subscribe(f"{stream}.>", queue="workers", cb=cb_for(rec1))
        s2 = await js.subscribe(f"{stream}.>", queue="workers", cb=cb_for(rec2))
        info = await s1.consumer_info()
        assert info.name == "workers" and info.config.deliver_group == "workers"
        await nc.flush()
        await fill(js, f"{stream}.a", 300)
        assert await total.wait(15), len(both)
        assert sorted(both) == list(range(1, 301))
        assert rec1.seqs and rec2.seqs
        await no_ack_pending(s2)
        with pytest.raises(ValueError):
            await js.subscribe(f"{stream}.>", queue="workers", idle_heartbeat=1)
        await s1.unsubscribe()
        await s2.unsubscribe()
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_subscribe_bind(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc, 10)
    try:
        inbox = nc.new_inbox()
        await js.create_consumer(stream, durable_name="bound", deliver_subject=inbox)
        sub = await js.subscribe_bind(stream, "bound", manual_ack=True)
        seqs = []
        for _ in range(10):
            m = await sub.next_msg(timeout=2)
            seqs.append(m.metadata.sequence.stream)
            await m.ack()
        assert seqs == list(range(1, 11))
        with pytest.raises(jetwire.JetStreamError):  # already bound
            await js.subscribe_bind(stream, "bound")
        await sub.unsubscribe()
        assert (await js.consumer_info(stream, "bound")).name == "bound"  # binding never deletes
        await js.create_consumer(stream, durable_name="puller")
        with pytest.raises(jetwire.JetStreamError):
            await js.subscribe_bind(stream, "puller")
        with pytest.raises(jetwire.ConsumerNotFoundError):
            await js.subscribe_bind(stream, "nope")
        with pytest.raises(jetwire.StreamNotFoundError):
            await js.subscribe(f"nostream.{stream}")
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_ordered_push_consumer_survives_deletion(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc, 200)
    try:
        rec = Seqs()
        half = rec.at(200)
        done = rec.at(400)
        sub = await js.subscribe(f"{stream}.>", cb=rec, ordered_consumer=True, idle_heartbeat=0.5)
        info = await sub.consumer_info()
        assert info.config.ack_policy == jetwire.AckPolicy.NONE and info.config.flow_control
        assert await half.wait(10)
        first = sub.consumer_name
        await js.delete_consumer(stream, first)
        await fill(js, f"{stream}.a", 200)
        assert await done.wait(30), len(rec.seqs)
        assert sub.consumer_name != first
        assert rec.seqs == list(range(1, 401))
        await sub.unsubscribe()
        with pytest.raises(ValueError):
            await js.subscribe(f"{stream}.>", durable="d", ordered_consumer=True)
    finally:
        await js.delete_stream(stream)
        await nc.close()
