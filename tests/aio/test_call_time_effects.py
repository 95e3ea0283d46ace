"""What a publish or an ack does happens when it is called, on every path.

In ``jetwire.aio`` ``publish()``, ``Msg.respond()`` and the fire-and-forget acks queue
their message at call time and return an awaitable that is already done (or done once a
congested socket drains): a caller that never awaits the result loses nothing. The
blocking flavour (generated from this file) runs the same checks.
"""
from __future__ import annotations

import threading

import pytest

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims
from tests.aio._helpers import Collector, Errors, new_stream, wait_until


def _not_awaited(result: object) -> None:
    """Drop what a call returned without awaiting it: a coroutine here would be a bug
    (its work would never run), so it must be an already-scheduled awaitable or None."""
    assert not hasattr(result, "cr_frame"), f"{result!r} is a coroutine: nothing happens unless awaited"


async def test_publish_with_headers_not_awaited_is_delivered(nats_url):
    nc = await jetwire.connect(nats_url)
    try:
        got = Collector(3)
        await nc.subscribe("cte.h", cb=got)
        await nc.flush()
        _not_awaited(nc.publish("cte.h", b"plain"))
        _not_awaited(nc.publish("cte.h", b"with headers", headers={"K": "v"}))
        _not_awaited(nc.publish("cte.h", b"reply too", reply="cte.r", headers={"K": ["a", "b"]}))
        msgs = await got.wait(10)
        assert [m.data for m in msgs] == [b"plain", b"with headers", b"reply too"]
        assert msgs[1].headers["K"] == "v"
        assert msgs[2].headers.get_all("K") == ["a", "b"] and msgs[2].reply == "cte.r"
    finally:
        await nc.close()


async def test_publish_errors_raise_at_call_time(nats_url):
    nc = await jetwire.connect(nats_url)
    try:
        with pytest.raises(jetwire.BadSubjectError):
            nc.publish("bad subject", b"x", headers={"K": "v"})
        with pytest.raises(jetwire.MaxPayloadError):
            nc.publish("cte.big", b"x" * (nc.max_payload + 1))
        with pytest.raises(jetwire.MaxPayloadError):
            nc.publish("cte.big", b"x" * nc.max_payload, headers={"K": "v"})
    finally:
        await nc.close()
    with pytest.raises(jetwire.ConnectionClosedError):
        nc.publish("cte.closed", b"x")
    with pytest.raises(jetwire.ConnectionClosedError):
        nc.publish("cte.closed", b"x", headers={"K": "v"})


async def test_publish_while_reconnecting_not_awaited_is_delivered(fresh_nats_server):
    srv = fresh_nats_server
    disconnected = prims.Signal()
    reconnected = prims.Signal()
    nc = await jetwire.connect(srv.url, reconnect_time_wait=0.1, max_reconnect_attempts=-1,
                               disconnected_cb=disconnected.set, reconnected_cb=reconnected.set)
    try:
        got = Collector(3)
        await nc.subscribe("cte.rc", cb=got)
        await nc.flush()
        srv.kill()
        assert await disconnected.wait(10)
        assert nc.is_reconnecting
        # queued in the reconnect buffer when called, awaited or not
        _not_awaited(nc.publish("cte.rc", b"one"))
        _not_awaited(nc.publish("cte.rc", b"two", headers={"K": "v"}))
        await nc.publish("cte.rc", b"three")
        srv.start()
        assert await reconnected.wait(20)
        msgs = await got.wait(10)
        assert [m.data for m in msgs] == [b"one", b"two", b"three"]
        assert msgs[1].headers["K"] == "v"
    finally:
        await nc.close()


async def test_reconnect_buffer_full_raises_at_call_time(fresh_nats_server):
    srv = fresh_nats_server
    disconnected = prims.Signal()
    nc = await jetwire.connect(srv.url, reconnect_time_wait=0.1, max_reconnect_attempts=-1,
                               reconnect_buffer_size=1024, disconnected_cb=disconnected.set)
    try:
        srv.kill()
        assert await disconnected.wait(10)
        nc.publish("cte.buf", b"x" * 512)
        with pytest.raises(jetwire.ReconnectBufferFullError):
            nc.publish("cte.buf", b"x" * 600, headers={"K": "v"})
    finally:
        await nc.close()


async def test_respond_and_acks_not_awaited_take_effect(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc, 0)
    try:
        # respond() with headers, not awaited
        async def responder(msg):
            _not_awaited(msg.respond(b"pong", headers={"R": "1"}))

        await nc.subscribe("cte.req", cb=responder)
        await nc.flush()
        reply = await nc.request("cte.req", b"ping", timeout=5)
        assert reply.data == b"pong" and reply.headers["R"] == "1"

        for i in range(4):
            await js.publish(f"{stream}.a", str(i).encode())
        cons = await js.create_consumer(stream, durable_name="cte", ack_policy="explicit",
                                        ack_wait=30, max_deliver=5)
        msgs = [m async for m in await cons.fetch(4, max_wait=5)]
        assert len(msgs) == 4
        _not_awaited(msgs[0].ack())
        _not_awaited(msgs[1].term())
        _not_awaited(msgs[2].in_progress())
        _not_awaited(msgs[2].ack())
        _not_awaited(msgs[3].nak())
        for m in (msgs[0], msgs[1], msgs[2]):
            with pytest.raises(jetwire.MsgAlreadyAckedError):
                m.ack()

        async def settled() -> bool:
            await nc.flush()
            info = await cons.info()
            # 0 acked, 1 termed, 2 acked after a progress report; 3 nak'ed: still pending
            return info.ack_floor.stream_seq == 3 and info.num_ack_pending == 1

        assert await wait_until(settled, 10), await cons.info()
        again = [m async for m in await cons.fetch(1, max_wait=5)]
        assert [m.data for m in again] == [b"3"] and again[0].metadata.num_delivered == 2
        await again[0].ack_sync()
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_callback_errors_go_to_error_cb_without_a_thread_each(nats_url):
    """Errors raised by user callbacks reach ``error_cb``, in order, on the connection's
    one callback dispatcher (the blocking flavour starts no thread per error)."""
    errors = Errors()
    nc = await jetwire.connect(nats_url, error_cb=errors)
    try:
        threads_before = threading.active_count()

        def boom(msg):
            raise ValueError(msg.data.decode())

        await nc.subscribe("cte.boom", cb=boom)
        await nc.flush()
        for i in range(50):
            nc.publish("cte.boom", str(i).encode())
        assert await wait_until(lambda: len(errors.errors) >= 50, 10)
        assert [str(e) for e in errors.errors[:50]] == [str(i) for i in range(50)]
        assert all(isinstance(e, ValueError) for e in errors.errors[:50])
        # the callback thread of the subscription and the dispatcher: nothing per error
        assert threading.active_count() <= threads_before + 2
    finally:
        await nc.close()
