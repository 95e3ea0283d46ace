"""A consumer deleted by another connection between pulls (ADR-37).

With no pull outstanding when the consumer is deleted, the next pull is answered at once
with status 503 (nobody listens on its subject any more). An ordered consumer recreates
its consumer right then and goes on from the next stream sequence; a durable consumer's
``fetch``/``next``/``consume``/``messages`` report ``ConsumerDeletedError``.
"""
from __future__ import annotations

import pytest

import jetwire.aio as jetwire
from tests.aio._helpers import Errors, fill, new_stream, wait_until


async def _no_pull_waiting(js, stream: str, name: str, delivered: int) -> bool:
    async def settled() -> bool:
        info = await js.consumer_info(stream, name)
        return info.num_waiting == 0 and info.delivered.stream_seq == delivered

    return await wait_until(settled, 10)


async def test_ordered_messages_recreate_at_once_after_deletion_between_pulls(nats_url):
    nc = await jetwire.connect(nats_url)
    other = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc, 10)
    try:
        oc = await js.ordered_consumer(stream)
        # one pull of 10, refilled only once all 10 are handed out
        ctx = await oc.messages(max_messages=10, threshold_messages=1)
        first = oc.name
        assert await _no_pull_waiting(js, stream, first, 10)
        await other.jetstream().delete_consumer(stream, first)
        seqs = [(await ctx.next(timeout=5)).metadata.sequence.stream for _ in range(10)]
        # the refill after the tenth meets a deleted consumer: 503 at once
        await fill(js, f"{stream}.a", 5, start=10)
        seqs += [(await ctx.next(timeout=1)).metadata.sequence.stream for _ in range(5)]
        assert seqs == list(range(1, 16))
        assert oc.name != first
        ctx.stop()
    finally:
        await js.delete_stream(stream)
        await other.close()
        await nc.close()


async def test_ordered_consume_recreates_at_once_after_deletion_between_pulls(nats_url):
    nc = await jetwire.connect(nats_url)
    other = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc, 10)
    try:
        oc = await js.ordered_consumer(stream)
        first = oc.name
        errors = Errors()
        seqs: list = []
        deleted: list = []

        # the callback holds the ninth message until the consumer is gone: the refill pull
        # (sent when the tenth is taken) goes out after the deletion and gets a 503
        async def cb(msg):
            seqs.append(msg.metadata.sequence.stream)
            if len(seqs) == 9:
                await wait_until(lambda: bool(deleted), 10)

        cc = await oc.consume(cb, max_messages=10, threshold_messages=1, error_cb=errors)
        assert await wait_until(lambda: len(seqs) == 9, 10)
        assert await _no_pull_waiting(js, stream, first, 10)
        await other.jetstream().delete_consumer(stream, first)
        deleted.append(True)
        await fill(js, f"{stream}.a", 5, start=10)
        assert await wait_until(lambda: len(seqs) == 15, 1), (seqs, errors.errors)
        assert seqs == list(range(1, 16))
        assert oc.name != first
        cc.stop()
    finally:
        await js.delete_stream(stream)
        await other.close()
        await nc.close()


async def test_durable_fetch_and_next_report_consumer_deleted(nats_url):
    nc = await jetwire.connect(nats_url)
    other = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc, 5)
    try:
        c = await js.create_consumer(stream, durable_name="gone", ack_policy="none")
        got = [m async for m in await c.fetch(5, max_wait=2)]
        assert len(got) == 5
        await other.jetstream().delete_consumer(stream, "gone")
        batch = await c.fetch(5, max_wait=2)
        assert [m async for m in batch] == []
        assert isinstance(batch.error, jetwire.ConsumerDeletedError), batch.error
        with pytest.raises(jetwire.ConsumerDeletedError):
            await c.next(timeout=2)
    finally:
        await js.delete_stream(stream)
        await other.close()
        await nc.close()


async def test_durable_messages_raise_consumer_deleted_between_pulls(nats_url):
    nc = await jetwire.connect(nats_url)
    other = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc, 10)
    try:
        c = await js.create_consumer(stream, durable_name="gone", ack_policy="none")
        ctx = await c.messages(max_messages=10, threshold_messages=1)
        assert await _no_pull_waiting(js, stream, "gone", 10)
        await other.jetstream().delete_consumer(stream, "gone")
        seqs = [(await ctx.next(timeout=5)).metadata.sequence.stream for _ in range(10)]
        assert seqs == list(range(1, 11))
        with pytest.raises(jetwire.ConsumerDeletedError):
            await ctx.next(timeout=2)
    finally:
        await js.delete_stream(stream)
        await other.close()
        await nc.close()


async def test_durable_consume_reports_consumer_deleted_between_pulls(nats_url):
    nc = await jetwire.connect(nats_url)
    other = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc, 10)
    try:
        c = await js.create_consumer(stream, durable_name="gone", ack_policy="none")
        errors = Errors()
        seen: list = []
        # the callback holds the ninth message until the consumer is gone: the refill pull
        # (sent when the tenth is taken) goes out after the deletion and gets a 503
        deleted: list = []

        async def cb(msg):
            seen.append(msg.metadata.sequence.stream)
            if len(seen) == 9:
                await wait_until(lambda: bool(deleted), 10)

        cc = await c.consume(cb, max_messages=10, threshold_messages=1, error_cb=errors)
        assert await wait_until(lambda: len(seen) == 9, 10)
        assert await _no_pull_waiting(js, stream, "gone", 10)
        await other.jetstream().delete_consumer(stream, "gone")
        deleted.append(True)
        err = await errors.wait_for(jetwire.ConsumerDeletedError, 5)
        assert isinstance(err, jetwire.JetStreamError)
        assert await cc.closed(5)
    finally:
        await js.delete_stream(stream)
        await other.close()
        await nc.close()
