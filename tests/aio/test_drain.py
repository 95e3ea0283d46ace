"""A connection's drain() lets the layers above finish what they received before the
connection closes: consume() callbacks, service handlers, async publishes awaiting their
acks; a drain while reconnecting waits for the connection within its timeout, or says
what it could not send (asyncio source; the blocking twin is generated). Against a
real nats-server."""
from __future__ import annotations

import pytest

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims
from jetwire.aio import micro
from tests.aio._helpers import fill, new_stream, uniq, wait_until


async def test_drain_lets_consume_callbacks_finish_and_ack_what_was_delivered(nats_url):
    nc = await jetwire.connect(nats_url)
    admin = await jetwire.connect(nats_url)
    js, stream = await new_stream(admin, 0)
    try:
        await fill(js, f"{stream}.a", 60)
        await js.create_consumer(stream, durable_name="c", ack_policy="explicit")
        handled: list = []
        go = prims.Signal()

        async def cb(msg):
            assert await go.wait(10)  # busy while the drain starts
            handled.append(msg.data)
            await msg.ack()

        cc = await (await nc.jetstream().consumer(stream, "c")).consume(cb, max_messages=20)
        assert await wait_until(lambda: cc.delivered >= 1, 5)
        drainer = prims.spawn(nc.drain, 10)
        assert await wait_until(lambda: nc.is_draining, 5)
        go.set()
        assert await prims.join(drainer, 15)
        assert nc.is_closed and cc.is_closed and handled
        info = await (await admin.jetstream().consumer(stream, "c")).info()
        # every message the callback was handed was acked before the connection closed;
        # what was not handed out is the server's to deliver again, unacked
        assert info.num_ack_pending == 0
        assert info.ack_floor.stream_seq == len(handled)
    finally:
        await js.delete_stream(stream)
        await admin.close()
        await nc.close()


@pytest.mark.parametrize("kind", ["push consume", "js.subscribe"])
async def test_drain_lets_push_callbacks_finish_and_ack_what_was_delivered(nats_url, kind):
    nc = await jetwire.connect(nats_url)
    admin = await jetwire.connect(nats_url)
    js, stream = await new_stream(admin, 0)
    try:
        await fill(js, f"{stream}.a", 40)
        handled: list = []
        entered: list = []
        go = prims.Signal()

        async def cb(msg):
            entered.append(msg)
            assert await go.wait(10)  # busy while the drain starts
            handled.append(msg.data)
            if kind == "push consume":
                await msg.ack()  # (js.subscribe acks after the callback returns)

        njs = nc.jetstream()
        if kind == "push consume":
            pc = await njs.create_push_consumer(stream, deliver_subject=nc.new_inbox(), durable_name="p",
                                                max_ack_pending=10)
            await pc.consume(cb)
        else:
            await njs.subscribe(f"{stream}.a", cb=cb, durable="p", config={"max_ack_pending": 10})
        assert await wait_until(lambda: bool(entered), 5)
        drainer = prims.spawn(nc.drain, 10)
        assert await wait_until(lambda: nc.is_draining, 5)
        go.set()
        assert await prims.join(drainer, 15)
        assert nc.is_closed and handled
        info = await admin.jetstream().consumer_info(stream, "p")
        # every message handed to the callback was acked before the connection closed
        assert info.num_ack_pending == 0 and info.ack_floor.stream_seq == len(handled)
    finally:
        await js.delete_stream(stream)
        await admin.close()
        await nc.close()


async def test_drain_lets_a_service_answer_the_requests_it_took(nats_url):
    nc = await jetwire.connect(nats_url)
    client = await jetwire.connect(nats_url)
    name = uniq("drainsvc")
    subject = f"{name}.slow"
    gates: list = []
    answers: list = []
    try:
        async def slow(req):
            gate = prims.Signal()  # (a signal wakes one waiter)
            gates.append(gate)
            assert await gate.wait(10)
            await req.respond(b"done " + req.data)

        svc = await micro.add_service(nc, name=name, version="1.0.0", concurrency=4)
        await svc.add_endpoint("slow", slow, subject=subject)

        async def ask(i):
            answers.append((await client.request(subject, b"%d" % i, timeout=10)).data)

        askers = [prims.spawn(ask, i) for i in range(3)]
        assert await wait_until(lambda: len(gates) == 3, 5)
        drainer = prims.spawn(nc.drain, 10)
        assert await wait_until(lambda: nc.is_draining, 5)
        for gate in gates:
            gate.set()
        for a in askers:
            assert await prims.join(a, 15)
        assert await prims.join(drainer, 15)
        assert sorted(answers) == [b"done 0", b"done 1", b"done 2"]
        assert nc.is_closed and svc.stopped
    finally:
        await client.close()
        await nc.close()


async def test_drain_waits_for_the_acks_of_async_publishes(nats_url):
    nc = await jetwire.connect(nats_url)
    admin = await jetwire.connect(nats_url)
    js, stream = await new_stream(admin, 0)
    try:
        pub = nc.jetstream(publish_async_max_pending=500)
        futs = [await pub.publish_async(f"{stream}.a", b"%d" % i) for i in range(2000)]
        await nc.drain(10)
        acks = [f.result() for f in futs]  # every future has its ack: none failed at the close
        assert sorted(a.seq for a in acks) == list(range(1, 2001))
        assert (await (await admin.jetstream().stream(stream)).info()).state.messages == 2000
    finally:
        await js.delete_stream(stream)
        await admin.close()
        await nc.close()


async def test_drain_while_reconnecting_waits_for_the_connection(fresh_nats_server):
    """What was published while the connection was away goes out once it is back: the
    stream (file storage, kept across the restart) stores all of it."""
    srv = fresh_nats_server
    nc = await jetwire.connect(srv.url, reconnect_time_wait=0.05, max_reconnect_attempts=-1)
    admin = await jetwire.connect(srv.url, reconnect_time_wait=0.05, max_reconnect_attempts=-1)
    js, stream = await new_stream(admin, 0, storage="file")
    try:
        srv.kill()
        assert await wait_until(lambda: not nc.is_connected, 5)
        for i in range(10):
            await nc.publish(f"{stream}.a", b"%d" % i)  # buffered for the reconnect
        drainer = prims.spawn(nc.drain, 20)
        srv.start()
        assert await prims.join(drainer, 25)
        assert nc.is_closed and nc.last_error is None
        assert await wait_until(lambda: admin.is_connected, 10)
        info = await (await js.stream(stream)).info()
        assert info.state.messages == 10
    finally:
        await admin.close()
        await nc.close()


async def test_drain_while_reconnecting_says_what_it_could_not_send(fresh_nats_server):
    srv = fresh_nats_server
    nc = await jetwire.connect(srv.url, reconnect_time_wait=0.05, max_reconnect_attempts=-1)
    try:
        srv.kill()
        assert await wait_until(lambda: not nc.is_connected, 5)
        for i in range(10):
            await nc.publish("gone.x", b"%d" % i)
        with pytest.raises(jetwire.DrainTimeoutError, match="not back within the drain timeout .*bytes not sent"):
            await nc.drain(0.5)
        assert nc.is_closed
    finally:
        await nc.close()


async def test_leaving_a_with_block_drains_and_an_exception_closes_at_once(nats_url):
    subject = uniq("withdrain")
    handled: list[bytes] = []

    async def slow(msg) -> None:
        await prims.sleep(0.01)  # the callback takes a while: ten of them are still queued
        handled.append(msg.data)

    async with await jetwire.connect(nats_url) as nc:
        await nc.subscribe(subject, cb=slow)
        for i in range(10):
            await nc.publish(subject, b"%d" % i)
        await nc.flush()
    assert nc.is_closed
    assert handled == [b"%d" % i for i in range(10)]  # every one handled before the block was left

    handled.clear()
    with pytest.raises(RuntimeError):
        async with await jetwire.connect(nats_url) as nc:
            await nc.subscribe(subject, cb=slow)
            for i in range(10):
                await nc.publish(subject, b"%d" % i)
            await nc.flush()
            raise RuntimeError("the block failed")
    assert nc.is_closed and len(handled) < 10  # closed at once: not waited for
