"""A consumer (or its stream) deleted by another connection between pulls (ADR-37).

With no pull outstanding when the consumer is deleted, the next pull is answered at once
with status 503 (nobody listens on its subject any more). An ordered consumer recreates
its consumer right then and goes on from the next stream sequence; a durable consumer's
``fetch``/``fetch_no_wait``/``fetch_bytes``/``next``/``consume``/``messages`` look the
consumer up once and raise what is gone: ``ConsumerNotFoundError`` (a
``ConsumerGoneError``, also a ``ConsumerDeletedError``) or ``StreamNotFoundError``,
promptly (well before the pull's expiry), never an empty batch. A pull waiting when the
consumer is deleted is ended by the server with 409 Consumer Deleted:
``ConsumerDeletedError`` after the messages that came before it.
"""
from __future__ import annotations

import time

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
        with pytest.raises(jetwire.ConsumerNotFoundError):
            await c.fetch(5, max_wait=2)
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
        with pytest.raises(jetwire.ConsumerNotFoundError) as ei:
            await ctx.next(timeout=2)
        assert isinstance(ei.value, jetwire.ConsumerDeletedError)
        assert ctx.is_closed
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
        err = await errors.wait_for(jetwire.ConsumerNotFoundError, 5)
        assert isinstance(err, jetwire.ConsumerDeletedError)
        assert await cc.closed(5)
        assert cc.is_closed
    finally:
        await js.delete_stream(stream)
        await other.close()
        await nc.close()


# -- a pull on a consumer or stream that no longer exists -----------------------------

# what is deleted -> what a pull raises
GONE = {"consumer": jetwire.ConsumerNotFoundError, "stream": jetwire.StreamNotFoundError}
# every pull below waits up to this long: the error must come well before
EXPIRES = 30.0
PROMPT = 5.0


async def _vanished(nc, other, what: str, n: int = 0):
    """A durable consumer handle whose consumer (or whole stream) another connection then
    deletes: ``(js, stream, consumer)``."""
    js, stream = await new_stream(nc, n)
    c = await js.create_consumer(stream, durable_name="gone", ack_policy="none")
    ojs = other.jetstream()
    if what == "consumer":
        await ojs.delete_consumer(stream, "gone")
    else:
        await ojs.delete_stream(stream)
    return js, stream, c


def _names_both(err: BaseException, stream: str) -> None:
    assert stream in str(err) and "gone" in str(err), str(err)


async def _cleanup(js, stream: str) -> None:
    try:
        await js.delete_stream(stream)
    except jetwire.StreamNotFoundError:
        pass


@pytest.mark.parametrize("what", ["consumer", "stream"])
@pytest.mark.parametrize("op", ["fetch", "fetch_no_wait", "fetch_bytes"])
async def test_fetch_on_vanished_raises_at_once(nats_url, what, op):
    nc = await jetwire.connect(nats_url)
    other = await jetwire.connect(nats_url)
    js, stream, c = await _vanished(nc, other, what, n=3)
    try:
        t0 = time.monotonic()
        with pytest.raises(GONE[what]) as ei:
            if op == "fetch":
                await c.fetch(1, max_wait=EXPIRES)
            elif op == "fetch_no_wait":
                await c.fetch_no_wait(1)
            else:
                await c.fetch_bytes(1024, max_wait=EXPIRES)
        assert time.monotonic() - t0 < PROMPT
        _names_both(ei.value, stream)
        # the connection stays usable
        await nc.flush(5)
    finally:
        await _cleanup(js, stream)
        await other.close()
        await nc.close()


@pytest.mark.parametrize("what", ["consumer", "stream"])
async def test_next_on_vanished_raises(nats_url, what):
    nc = await jetwire.connect(nats_url)
    other = await jetwire.connect(nats_url)
    js, stream, c = await _vanished(nc, other, what, n=3)
    try:
        t0 = time.monotonic()
        with pytest.raises(GONE[what]) as ei:
            await c.next(timeout=EXPIRES)
        assert time.monotonic() - t0 < PROMPT
        _names_both(ei.value, stream)
    finally:
        await _cleanup(js, stream)
        await other.close()
        await nc.close()


@pytest.mark.parametrize("what", ["consumer", "stream"])
async def test_consume_on_vanished_reports_and_closes(nats_url, what):
    nc = await jetwire.connect(nats_url)
    other = await jetwire.connect(nats_url)
    js, stream, c = await _vanished(nc, other, what, n=3)
    try:
        errors = Errors()
        got: list = []
        t0 = time.monotonic()
        cc = await c.consume(got.append, expires=EXPIRES, error_cb=errors)
        err = await errors.wait_for(GONE[what], PROMPT)
        _names_both(err, stream)
        assert await cc.closed(PROMPT)
        assert cc.is_closed
        assert time.monotonic() - t0 < PROMPT
        assert got == []
        # one lookup, then stopped: no storm of pulls and warnings
        assert [type(e) for e in errors.errors] == [type(err)], errors.errors
    finally:
        await _cleanup(js, stream)
        await other.close()
        await nc.close()


@pytest.mark.parametrize("what", ["consumer", "stream"])
@pytest.mark.parametrize("how", ["next", "iterate"])
async def test_messages_on_vanished_raise(nats_url, what, how):
    nc = await jetwire.connect(nats_url)
    other = await jetwire.connect(nats_url)
    js, stream, c = await _vanished(nc, other, what, n=3)
    try:
        ctx = await c.messages(expires=EXPIRES)
        t0 = time.monotonic()
        with pytest.raises(GONE[what]) as ei:
            if how == "next":
                await ctx.next(timeout=EXPIRES)
            else:
                async for _ in ctx:
                    pass
        assert time.monotonic() - t0 < PROMPT
        _names_both(ei.value, stream)
        assert ctx.is_closed
        with pytest.raises(jetwire.MsgIteratorClosedError):
            await ctx.next(timeout=1)
    finally:
        await _cleanup(js, stream)
        await other.close()
        await nc.close()


@pytest.mark.parametrize("what", ["consumer", "stream"])
async def test_batch_yields_what_came_then_raises_when_deleted_during_pull(nats_url, what):
    """The batch is returned before the consumer goes: its messages, then the error."""
    nc = await jetwire.connect(nats_url)
    other = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc, 2)
    try:
        c = await js.create_consumer(stream, durable_name="gone", ack_policy="none")
        t0 = time.monotonic()
        batch = await c.fetch(5, max_wait=EXPIRES)

        async def both_sent() -> bool:  # the pull waits on for three more
            info = await js.consumer_info(stream, "gone")
            return info.delivered.stream_seq == 2 and info.num_waiting == 1

        assert await wait_until(both_sent, 5)
        if what == "consumer":
            await other.jetstream().delete_consumer(stream, "gone")
        else:
            await other.jetstream().delete_stream(stream)
        got = []
        with pytest.raises((jetwire.ConsumerDeletedError, jetwire.ConsumerNotFoundError,
                            jetwire.StreamNotFoundError)) as ei:
            async for m in batch:
                got.append(m.data)
        assert got == [b"0", b"1"]
        assert batch.error is ei.value
        assert time.monotonic() - t0 < PROMPT
    finally:
        await _cleanup(js, stream)
        await other.close()
        await nc.close()


@pytest.mark.parametrize("how", ["fetch", "next", "messages", "consume"])
async def test_ordered_consumer_on_a_deleted_stream_raises_instead_of_retrying(nats_url, how):
    """Recreating cannot bring a stream back: StreamNotFoundError at once, no reset storm."""
    nc = await jetwire.connect(nats_url)
    other = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc, 3)
    try:
        oc = await js.ordered_consumer(stream)
        assert [m.metadata.sequence.stream async for m in await oc.fetch(3, max_wait=5)] == [1, 2, 3]
        await other.jetstream().delete_stream(stream)
        t0 = time.monotonic()
        if how == "consume":
            errors = Errors()
            cc = await oc.consume(lambda m: None, error_cb=errors)
            err = await errors.wait_for(jetwire.StreamNotFoundError, PROMPT)
            assert stream in str(err)
            assert await cc.closed(PROMPT)
            assert [type(e) for e in errors.errors] == [jetwire.StreamNotFoundError], errors.errors
        else:
            with pytest.raises(jetwire.StreamNotFoundError, match=stream):
                if how == "fetch":
                    [m async for m in await oc.fetch(1, max_wait=EXPIRES)]
                elif how == "next":
                    await oc.next(timeout=EXPIRES)
                else:
                    ctx = await oc.messages()
                    await ctx.next(timeout=EXPIRES)
        assert time.monotonic() - t0 < PROMPT
    finally:
        await _cleanup(js, stream)
        await other.close()
        await nc.close()
