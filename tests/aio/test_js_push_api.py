"""Push consumers on the new API (nats.go's ``CreatePushConsumer``, ``PushConsumer``,
``PushConsumer.Consume``) against a real nats-server (asyncio source; the blocking twin
is generated)."""
from __future__ import annotations

import pytest

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims
from tests.aio._helpers import Errors, Seqs, acks_applied, fill, new_stream, wait_until


async def test_create_push_consumer_and_consume(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc, 200)
    try:
        dsubj = nc.new_inbox()
        pc = await js.create_push_consumer(stream, deliver_subject=dsubj, durable_name="p", idle_heartbeat=0.5,
                                           flow_control=True)
        assert pc.name == "p" and pc.stream == stream
        info = pc.cached_info()
        assert info.config.deliver_subject == dsubj and info.config.ack_policy == jetwire.AckPolicy.EXPLICIT
        rec = Seqs()
        done = rec.at(200)

        async def on_msg(msg) -> None:
            rec(msg)
            await msg.ack()

        errors = Errors()
        cc = await pc.consume(on_msg, error_cb=errors)
        assert await done.wait(10)
        assert rec.seqs == list(range(1, 201))
        with pytest.raises(jetwire.JetStreamError):  # one consume at a time per handle
            await pc.consume(on_msg)
        await fill(js, f"{stream}.a", 5)
        more = rec.at(205)
        assert await more.wait(5)
        assert rec.seqs[200:] == list(range(201, 206))
        assert cc.delivered == 205
        assert (await acks_applied(pc)).num_ack_pending == 0
        with pytest.raises(jetwire.ConsumerIsPushBasedError, match="push consumer"):  # as nats.go
            await js.consumer(stream, "p")  # a pull handle of it is refused
        assert (await js.consumer_info(stream, "p")).config.deliver_subject == dsubj

        cc.stop()
        assert await cc.closed(5)
        assert cc.is_closed
        await fill(js, f"{stream}.a", 3)
        await nc.flush()
        assert not await wait_until(lambda: len(rec.seqs) > 205, 0.3)  # nothing after stop()
        assert not [e for e in errors.errors if not isinstance(e, jetwire.NoHeartbeatError)], errors.errors
        # the consumer stays: a new consume picks up where it was
        rest = Seqs()
        d2 = rest.at(3)
        cc2 = await pc.consume(rest)
        assert await d2.wait(5)
        assert rest.seqs == [206, 207, 208]
        await cc2.drain(5)
        assert cc2.is_closed
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_push_consumer_binds_to_an_existing_one(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc, 10)
    try:
        dsubj = nc.new_inbox()
        await js.create_consumer(stream, durable_name="b", deliver_subject=dsubj, ack_policy="none")
        pc = await js.push_consumer(stream, "b")
        assert pc.name == "b" and pc.cached_info().config.deliver_subject == dsubj
        rec = Seqs()
        done = rec.at(10)
        cc = await pc.consume(rec)
        assert await done.wait(5)
        assert rec.seqs == list(range(1, 11))
        assert (await pc.info()).push_bound
        cc.stop()
        assert await cc.closed(5)

        with pytest.raises(jetwire.ConsumerNotFoundError):
            await js.push_consumer(stream, "missing")
        await js.create_consumer(stream, durable_name="pull")
        with pytest.raises(jetwire.JetStreamError, match="not a push consumer"):
            await js.push_consumer(stream, "pull")
        with pytest.raises(jetwire.InvalidOptionError):  # no deliver subject: nothing sent
            await js.create_push_consumer(stream, durable_name="x")
        with pytest.raises(jetwire.BadSubjectError):
            await js.create_push_consumer(stream, durable_name="x", deliver_subject="a.*")
        with pytest.raises(jetwire.ConsumerNotFoundError):
            await js.consumer_info(stream, "x")
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_push_consume_reports_missed_heartbeats(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc, 3)
    try:
        pc = await js.create_push_consumer(stream, deliver_subject=nc.new_inbox(), durable_name="gone",
                                           idle_heartbeat=0.5)
        rec = Seqs()
        done = rec.at(3)
        errors = Errors()
        cc = await pc.consume(rec, error_cb=errors)
        assert await done.wait(5)
        await prims.sleep(1.6)  # three heartbeat intervals: the heartbeats keep it quiet
        assert errors.errors == []
        await js.delete_consumer(stream, "gone")  # no more heartbeats
        await errors.wait_for(jetwire.NoHeartbeatError, 5)
        assert not cc.is_closed  # reported, not ended: the user decides
        cc.stop()
        assert await cc.closed(5)
    finally:
        await js.delete_stream(stream)
        await nc.close()
