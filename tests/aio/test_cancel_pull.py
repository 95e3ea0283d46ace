"""Cancelling asyncio pulls against a real nats-server: a cancelled ``next()`` or fetch
ends its pull (its inbox unsubscribed, so the server drops the request and the next
message goes to a later pull), and a ``consume()`` callback that raises
``CancelledError`` is reported like any failing callback (asyncio only: the blocking
twin of this file holds no tests)."""
# aio-only: begin
from __future__ import annotations

import asyncio
import time

import pytest

import jetwire.aio as jetwire
from tests.aio._helpers import Errors, new_stream, server_subscriptions, wait_until


async def _make(nc):
    js, name = await new_stream(nc)
    # a long ack_wait: a message lost to an abandoned pull would not come back in time
    return js, name, await js.create_consumer(name, durable_name="c", ack_wait=30)


async def _back_to(server, nc, base: int) -> bool:
    async def same() -> bool:
        return await server_subscriptions(server, nc) == base

    return await wait_until(same, 5.0)


async def _next_gets(js, stream: str, c, data: bytes) -> None:
    """A message published now is what the next ``next()`` returns, at once."""
    await js.publish(f"{stream}.a", data)
    start = time.monotonic()
    msg = await c.next(timeout=3)
    assert msg.data == data
    assert time.monotonic() - start < 1.5
    await msg.ack()


async def test_cancelled_next_ends_its_pull(nats_server):
    nc = await jetwire.connect(nats_server.url)
    js, stream, c = await _make(nc)
    try:
        base = await server_subscriptions(nats_server, nc)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(c.next(timeout=10), 0.2)
        assert await _back_to(nats_server, nc, base)
        await _next_gets(js, stream, c, b"after next")
        # asyncio.timeout() (cancelling the caller itself) too
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.2):
                await c.next(timeout=10)
        assert await _back_to(nats_server, nc, base)
        await _next_gets(js, stream, c, b"after timeout")
        assert await _back_to(nats_server, nc, base)
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_cancelled_fetch_ends_its_pull(nats_server):
    nc = await jetwire.connect(nats_server.url)
    js, stream, c = await _make(nc)
    try:
        base = await server_subscriptions(nats_server, nc)
        # cancelled while fetch() waits for the server to take the pull (_confirm)
        task = asyncio.ensure_future(c.fetch(5, max_wait=10))
        await asyncio.sleep(0)
        assert not task.done()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await _back_to(nats_server, nc, base)
        await _next_gets(js, stream, c, b"after fetch")
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_cancelled_batch_iteration_ends_its_pull(nats_server):
    nc = await jetwire.connect(nats_server.url)
    js, stream, c = await _make(nc)
    try:
        await js.publish(f"{stream}.a", b"first")
        base = await server_subscriptions(nats_server, nc)
        got = []
        batch = await c.fetch(5, max_wait=10)

        async def iterate() -> None:
            async for msg in batch:
                got.append(msg.data)
                await msg.ack()

        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(iterate(), 0.5)
        assert got == [b"first"]
        assert batch.done
        assert [m async for m in batch] == []  # the batch ended: nothing more comes to it
        assert await _back_to(nats_server, nc, base)
        await _next_gets(js, stream, c, b"after iteration")
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_consume_callback_raising_cancelled_error_is_reported(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream, c = await _make(nc)
    got = []
    blocked = asyncio.Event()

    async def cb(msg) -> None:
        got.append(msg.data)
        await msg.ack()
        if msg.data == b"boom":  # it awaits something cancelled elsewhere
            loop = asyncio.get_running_loop()
            fut = loop.create_future()
            loop.call_soon(fut.cancel)
            await fut
        if msg.data == b"block":
            blocked.set()
            await asyncio.sleep(60)

    errors = Errors()
    cc = await c.consume(cb, error_cb=errors)
    try:
        for d in (b"1", b"boom", b"2", b"3"):
            await js.publish(f"{stream}.a", d)
        assert await wait_until(lambda: len(got) == 4), got
        assert got == [b"1", b"boom", b"2", b"3"]
        err = await errors.wait_for(asyncio.CancelledError, 5)
        assert isinstance(err, asyncio.CancelledError)
        assert not cc.is_closed
        await js.publish(f"{stream}.a", b"later")
        assert await wait_until(lambda: len(got) == 5), got
        assert got[-1] == b"later"
        assert not cc.is_closed
        # a real cancellation of the consume task (while in the callback) still ends it
        await js.publish(f"{stream}.a", b"block")
        await asyncio.wait_for(blocked.wait(), 5)
        cc._task.cancel()
        assert await cc.closed(5)
        assert cc.is_closed
        assert len([e for e in errors.errors if isinstance(e, asyncio.CancelledError)]) == 1
    finally:
        cc.stop()
        await js.delete_stream(stream)
        await nc.close()
# aio-only: end
