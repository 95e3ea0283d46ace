"""A caller's mistake raises a typed error before anything is sent, and a server ``-ERR``
that does not end the connection never drops it (asyncio source; the blocking twin is
generated). Against a real nats-server."""
from __future__ import annotations

import re

import pytest

import jetwire.aio as jetwire
from jetwire.aio import micro
from tests.aio._helpers import Errors, new_stream, server_subscriptions, uniq

# wildcards that are not whole tokens, or '>' before the last token
BAD_FILTERS = ["foo.>.bar", "foo.*bar", "foo.b>", "*foo.bar", ">.foo"]
GOOD_FILTERS = ["foo.*.bar", "foo.>", "*", ">", "*.*.>"]
BAD_DATA = [5, 1.5, None, object()]


def data_error(name: str = "data", kinds: str = "bytes, bytearray or memoryview") -> str:
    """The TypeError text (a regex): the argument's name and the bytes-like types it takes."""
    return rf"^{name} must be {re.escape(kinds)}, not (int|float|NoneType|object|str)$"


async def connect(url: str, **options):
    errs = Errors()
    nc = await jetwire.connect(url, error_cb=errs, **options)
    return nc, errs


async def assert_usable(nc, errs) -> None:
    """The connection still carries messages, never dropped, and nothing reached error_cb."""
    subject = uniq("usable")
    sub = await nc.subscribe(subject)
    await nc.publish(subject, b"still here")
    assert (await sub.next_msg(timeout=5)).data == b"still here"
    await sub.unsubscribe()
    await nc.flush(5)
    assert nc.is_connected
    assert nc.stats["reconnects"] == 0
    assert nc.last_error is None, nc.last_error
    assert errs.errors == []


# ------------------------------------------------------------------------- bad subjects
async def test_publish_and_request_to_misplaced_wildcards_raise_before_sending(nats_url):
    """The contract's rule for every subject: a wildcard that is not a whole token ('>'
    only last) is a BadSubjectError; nothing goes out, the connection stays usable."""
    nc, errs = await connect(nats_url)
    watcher = await jetwire.connect(nats_url)
    p = uniq("wild")
    try:
        seen = await watcher.subscribe(f"{p}.>")
        await watcher.flush(5)
        js = nc.jetstream()
        for bad in BAD_FILTERS:
            subject = f"{p}.{bad}"
            with pytest.raises(jetwire.BadSubjectError, match="wildcard"):
                await nc.publish(subject, b"x")
            with pytest.raises(jetwire.BadSubjectError, match="wildcard"):
                await nc.publish(subject, b"x", headers={"A": "b"})
            with pytest.raises(jetwire.BadSubjectError, match="wildcard"):
                await nc.publish_msg(jetwire.Msg(subject, b"x"))
            with pytest.raises(jetwire.BadSubjectError, match="wildcard"):
                await nc.request(subject, b"x", timeout=1)
            with pytest.raises(jetwire.BadSubjectError, match="wildcard"):
                await js.publish(subject, b"x")
            with pytest.raises(jetwire.BadSubjectError, match="wildcard"):
                await js.publish_async(subject, b"x")
        assert js.publish_async_pending() == 0
        await nc.publish(f"{p}.*", b"whole-token wildcards are the server's to judge")
        await nc.flush(5)
        got = await seen.next_msg(timeout=5)
        assert got.subject == f"{p}.*"  # the first (and only) message the watcher saw
        await assert_usable(nc, errs)
    finally:
        await watcher.close()
        await nc.close()


async def test_timeouts_that_are_nan_raise_and_infinity_waits_as_long_as_it_takes(nats_url):
    """A NaN timeout compares false with every time: it is a ValueError, never a wait
    that cannot end; infinity means no limit where a wait can be unbounded, and a pull's
    expiry (which the server needs) must be finite."""
    nc, errs = await connect(nats_url)
    try:
        js, stream = await new_stream(nc, 3)
        subject = uniq("echo")

        async def echo(msg):
            await msg.respond(msg.data)

        await nc.subscribe(subject, cb=echo)
        sub = await nc.subscribe(uniq("quiet"))
        c = await js.create_consumer(stream, durable_name="c")
        nan, inf = float("nan"), float("inf")
        for call in (lambda: nc.request(subject, b"x", timeout=nan), lambda: sub.next_msg(timeout=nan),
                     lambda: nc.flush(timeout=nan), lambda: js.publish(f"{stream}.a", b"x", timeout=nan)):
            with pytest.raises(ValueError, match="NaN"):
                await call()
        it = await c.messages()
        assert (await it.next(timeout=inf)).data == b"0"
        with pytest.raises(ValueError, match="NaN"):
            await it.next(timeout=nan)
        it.stop()
        with pytest.raises(ValueError, match="max_wait must be a finite number of seconds > 0, not inf"):
            await c.fetch(1, max_wait=inf)
        with pytest.raises(ValueError, match="timeout must be a finite number of seconds > 0, not 0"):
            await c.next(timeout=0)
        assert (await nc.request(subject, b"y", timeout=inf)).data == b"y"
        await nc.publish(sub.subject, b"z")
        assert (await sub.next_msg(timeout=inf)).data == b"z"
        await nc.flush(timeout=inf)
        assert (await js.publish(f"{stream}.a", b"w", timeout=inf)).seq == 4
        for bad in (0, -1, nan):
            with pytest.raises(jetwire.InvalidOptionError, match="^timeout must be a number of seconds > 0"):
                nc.jetstream(timeout=bad)
        await js.delete_stream(stream)
        await assert_usable(nc, errs)
    finally:
        await nc.close()


async def test_subscribe_with_misplaced_wildcards_raises_before_sending(nats_server, nats_url):
    nc, errs = await connect(nats_url)
    try:
        before = await server_subscriptions(nats_server, nc)
        for subject in BAD_FILTERS:
            with pytest.raises(jetwire.BadSubjectError, match="wildcard"):
                await nc.subscribe(subject)
            with pytest.raises(jetwire.BadSubjectError, match="wildcard"):
                await nc.subscribe(subject, queue="workers")
            with pytest.raises(jetwire.BadSubjectError, match="wildcard"):
                await nc.subscribe(subject, cb=lambda msg: None)
        for queue in ("a b", "q\t", "\x00"):
            with pytest.raises(jetwire.BadSubjectError):
                await nc.subscribe("foo", queue=queue)
        assert await server_subscriptions(nats_server, nc) == before
        await assert_usable(nc, errs)
        subs = [await nc.subscribe(s) for s in GOOD_FILTERS]  # whole-token wildcards are fine
        assert await server_subscriptions(nats_server, nc) == before + len(GOOD_FILTERS)
        for sub in subs:
            await sub.unsubscribe()
        await assert_usable(nc, errs)
    finally:
        await nc.close()


async def test_inbox_prefix_with_wildcards_is_refused_before_connecting(nats_url):
    for prefix in ("_IN.>", "_IN.*", "_IN.a*", "a b", ""):
        with pytest.raises(jetwire.BadSubjectError):
            await jetwire.connect(nats_url, inbox_prefix=prefix)
    nc = await jetwire.connect(nats_url, inbox_prefix="_MY.inbox")
    try:
        sub = await nc.subscribe("bad.input.echo", cb=lambda msg: msg.respond(msg.data))
        await nc.flush()
        assert (await nc.request("bad.input.echo", b"hi", timeout=5)).data == b"hi"
        await sub.unsubscribe()
    finally:
        await nc.close()


async def test_jetstream_filters_with_misplaced_wildcards_raise_before_sending(nats_server, nats_url):
    nc, errs = await connect(nats_url)
    try:
        js, name = await new_stream(nc)
        before = await server_subscriptions(nats_server, nc)
        for bad in BAD_FILTERS:
            subject = f"{name}.{bad}"
            with pytest.raises(jetwire.BadSubjectError):
                await js.create_consumer(name, filter_subject=subject)
            with pytest.raises(jetwire.BadSubjectError):
                await js.create_consumer(name, filter_subjects=[f"{name}.ok", subject])
            with pytest.raises(jetwire.BadSubjectError):
                await js.ordered_consumer(name, filter_subjects=[subject])
            with pytest.raises(jetwire.BadSubjectError):
                await js.subscribe(subject, stream=name)
            with pytest.raises(jetwire.BadSubjectError):
                await js.create_stream(name=uniq("S"), subjects=[subject])
            with pytest.raises(jetwire.BadSubjectError):
                await js.update_stream(name=name, subjects=[f"{name}.>", subject])
        assert [c async for c in js.consumer_names(name)] == []  # no consumer was made
        assert (await (await js.stream(name)).info()).config.subjects == [f"{name}.>"]
        assert await server_subscriptions(nats_server, nc) == before
        cons = await js.create_consumer(name, filter_subject=f"{name}.*.x")  # whole tokens
        assert cons.cached_info().config.filter_subject == f"{name}.*.x"
        await assert_usable(nc, errs)
    finally:
        await nc.close()


async def test_stream_calls_taking_a_subject_refuse_bad_ones_before_sending(nats_url):
    """Purge, last-message-for-subject and info's subjects filter check their subject
    as publish does (an empty one is a bad subject, never "all of them"); a stream's
    subjects may not be empty either."""
    nc, errs = await connect(nats_url)
    try:
        js, name = await new_stream(nc, 3)
        stream = await js.stream(name)
        for bad in ["", "a b", f"{name}..a", *(f"{name}.{f}" for f in BAD_FILTERS)]:
            with pytest.raises(jetwire.BadSubjectError):
                await stream.purge(subject=bad)
            for direct in (False, True):
                with pytest.raises(jetwire.BadSubjectError):
                    await stream.get_last_msg_for_subject(bad, direct=direct)
            with pytest.raises(jetwire.BadSubjectError):
                await stream.info(subjects_filter=bad)
            with pytest.raises(jetwire.BadSubjectError):
                await stream.get_msg(1, next_by_subject=bad)
        with pytest.raises(jetwire.BadSubjectError):
            await js.create_stream(name=uniq("S"), subjects=[f"{name}x.a", ""])
        assert (await stream.info()).state.messages == 3  # nothing was purged
        assert (await stream.get_last_msg_for_subject(f"{name}.a")).seq == 3
        assert await stream.purge(subject=f"{name}.*") == 3
        await assert_usable(nc, errs)
    finally:
        await nc.close()


async def test_pull_options_out_of_range_are_invalid_option_errors(nats_url):
    """Every option a pull or a stream read refuses is an ``InvalidOptionError``: a
    ``JetStreamError`` (as every JetStream error) and a ``ValueError``."""
    nc, errs = await connect(nats_url)
    try:
        js, name = await new_stream(nc, 1)
        cons = await js.create_consumer(name, durable_name="c")
        stream = await js.stream(name)
        calls = [lambda: cons.fetch(0), lambda: cons.fetch(1, max_wait=0),
                 lambda: cons.fetch(1, max_wait=1, heartbeat=0.8), lambda: cons.fetch_bytes(0),
                 lambda: cons.consume(lambda m: None, max_messages=10, max_bytes=10),
                 lambda: cons.consume(None), lambda: cons.messages(max_messages=0), lambda: stream.get_msg(-1)]
        for call in calls:
            with pytest.raises(jetwire.InvalidOptionError) as ei:
                await call()
            assert isinstance(ei.value, jetwire.JetStreamError) and isinstance(ei.value, ValueError)
        assert (await cons.next(timeout=5)).data is not None  # nothing was pulled by the refused calls
        await assert_usable(nc, errs)
    finally:
        await nc.close()


async def test_kv_watch_with_misplaced_wildcards_raises(nats_url):
    nc, errs = await connect(nats_url)
    try:
        js = nc.jetstream()
        kv = await js.create_key_value(bucket=uniq("kvbad"))
        for bad in ("a*", "a.b>", "*a.b", "a.*b"):
            with pytest.raises(jetwire.InvalidKeyError):
                await kv.watch(bad)
            with pytest.raises(jetwire.InvalidKeyError):
                await kv.keys(bad)
        await kv.put("a.b", b"1")
        assert await kv.keys("a.*") == ["a.b"]
        await assert_usable(nc, errs)
    finally:
        await nc.close()


async def test_micro_endpoint_with_misplaced_wildcards_is_refused(nats_server, nats_url):
    nc, errs = await connect(nats_url)
    try:
        svc = await micro.add_service(nc, name=uniq("badsvc").replace("_", "-"), version="1.0.0")
        before = await server_subscriptions(nats_server, nc)
        for bad in BAD_FILTERS:
            with pytest.raises(jetwire.InvalidServiceConfigError, match="wildcard"):
                await svc.add_endpoint("e", lambda req: None, subject=bad)
        assert await server_subscriptions(nats_server, nc) == before
        await svc.stop()
        await assert_usable(nc, errs)
    finally:
        await nc.close()


# --------------------------------------------------------------- server errors that stay
async def test_max_subscriptions_exceeded_reaches_error_cb_and_keeps_the_connection(nats_server_factory):
    srv = nats_server_factory(jetstream=False, config="max_subscriptions: 2")
    nc, errs = await connect(srv.url)
    try:
        first = await nc.subscribe("limit.a")
        await nc.subscribe("limit.b")
        await nc.subscribe("limit.c")  # the server refuses it, and keeps the connection
        err = await errs.wait_for(jetwire.MaxSubscriptionsError)
        assert "maximum subscriptions exceeded" in str(err)
        assert all(isinstance(e, jetwire.MaxSubscriptionsError) for e in errs.errors)
        await nc.publish("limit.a", b"one")
        assert (await first.next_msg(timeout=5)).data == b"one"
        await nc.flush(5)
        assert nc.is_connected and nc.stats["reconnects"] == 0
        assert len(errs.errors) == 1
    finally:
        await nc.close()


async def test_invalid_subject_from_the_server_reaches_error_cb_and_keeps_the_connection(nats_url):
    # with pedantic on, the server answers a publish to a wildcard with -ERR 'Invalid
    # Publish Subject' and goes on (the client does not check publish subjects for wildcards)
    nc, errs = await connect(nats_url, pedantic=True)
    try:
        sub = await nc.subscribe("pedantic.ok")
        await nc.publish("pedantic.*", b"refused")
        err = await errs.wait_for(jetwire.BadSubjectError)
        assert "invalid" in str(err).lower()
        await nc.publish("pedantic.ok", b"fine")
        assert (await sub.next_msg(timeout=5)).data == b"fine"
        await nc.flush(5)
        assert nc.is_connected and nc.stats["reconnects"] == 0
        assert all(isinstance(e, jetwire.BadSubjectError) for e in errs.errors)
    finally:
        await nc.close()


# ------------------------------------------------------------------------- bad payloads
async def test_core_publish_paths_refuse_payloads_that_are_not_bytes_like(nats_url):
    nc, errs = await connect(nats_url)
    try:
        subject = uniq("payload")
        sub = await nc.subscribe(subject)
        await nc.flush()
        sent = nc.stats["out_msgs"]
        for bad in [*BAD_DATA, "text"]:
            with pytest.raises(TypeError, match=data_error()):
                await nc.publish(subject, bad)
            with pytest.raises(TypeError, match=data_error()):
                await nc.publish(subject, bad, headers={"A": "b"})
            with pytest.raises(TypeError, match=data_error()):
                await nc.publish(subject, bad, reply="some.reply")
            with pytest.raises(TypeError, match=data_error()):
                await nc.request(subject, bad, timeout=1)
            with pytest.raises(TypeError, match=data_error()):
                await nc.request(subject, bad, timeout=1, headers={"A": "b"})
            with pytest.raises(TypeError, match=data_error()):
                await nc.publish_msg(jetwire.Msg(subject, bad))
        assert nc.stats["out_msgs"] == sent
        await nc.publish(subject, b"ok")
        assert (await sub.next_msg(timeout=5)).data == b"ok"  # the first message to arrive
        await nc.publish(subject, b"reply me", reply=subject)
        req = await sub.next_msg(timeout=5)
        for bad in [*BAD_DATA, "text"]:
            with pytest.raises(TypeError, match=data_error()):
                await req.respond(bad)
        await req.respond(b"answer")
        assert (await sub.next_msg(timeout=5)).data == b"answer"
        await assert_usable(nc, errs)
    finally:
        await nc.close()


async def test_jetstream_publish_paths_refuse_payloads_that_are_not_bytes_like(nats_url):
    nc, errs = await connect(nats_url)
    try:
        js, name = await new_stream(nc)
        for bad in [*BAD_DATA, "text"]:
            with pytest.raises(TypeError, match=data_error()):
                await js.publish(f"{name}.a", bad)
            with pytest.raises(TypeError, match=data_error()):
                await js.publish(f"{name}.a", bad, msg_id="m1")
            with pytest.raises(TypeError, match=data_error()):
                await js.publish_async(f"{name}.a", bad)
            with pytest.raises(TypeError, match=data_error()):
                await js.publish_async(f"{name}.a", bad, msg_id="m2")
        assert js.publish_async_pending() == 0
        ack = await js.publish(f"{name}.a", b"one")
        assert ack.seq == 1  # nothing was stored before
        await js.publish_async(f"{name}.a", b"two")
        await js.publish_async_complete(timeout=5)
        assert (await (await js.stream(name)).info()).state.messages == 2
        await assert_usable(nc, errs)
    finally:
        await nc.close()


async def test_kv_and_object_puts_refuse_payloads_that_are_not_bytes_like(nats_url):
    nc, errs = await connect(nats_url)
    try:
        js = nc.jetstream()
        kv = await js.create_key_value(bucket=uniq("kvpay"))
        for bad in BAD_DATA:
            with pytest.raises(TypeError, match=data_error("value", "bytes, bytearray, memoryview or str")):
                await kv.put("k", bad)
            with pytest.raises(TypeError, match=data_error("value", "bytes, bytearray, memoryview or str")):
                await kv.create("k", bad)
            with pytest.raises(TypeError, match=data_error("value", "bytes, bytearray, memoryview or str")):
                await kv.update("k", bad, 0)
        assert await kv.keys() == []
        assert await kv.put("k", "text is UTF-8") == 1  # str is accepted, as before
        obs = await js.create_object_store(bucket=uniq("obpay"))
        for bad in (5, 1.5, object()):
            with pytest.raises(TypeError, match=data_error("reader", "bytes, bytearray, memoryview, str or a binary file object")):
                await obs.put("o", bad)
        assert await obs.list() == []
        assert (await obs.put("o", b"bytes")).size == 5
        await assert_usable(nc, errs)
    finally:
        await nc.close()


async def test_service_respond_refuses_payloads_that_are_not_bytes_like(nats_url):
    nc, errs = await connect(nats_url)
    client = await jetwire.connect(nats_url)
    refused: list = []

    async def handler(req) -> None:
        for bad in [*BAD_DATA, "text"]:
            try:
                await req.respond(bad)
            except TypeError as exc:
                refused.append(str(exc))
        await req.respond(b"fine")

    try:
        svc = await micro.add_service(nc, name=uniq("paysvc").replace("_", "-"), version="1.0.0")
        ep = uniq("pay")
        await svc.add_endpoint(ep, handler)
        reply = await client.request(ep, b"", timeout=5)
        assert reply.data == b"fine" and reply.headers is None
        assert len(refused) == len(BAD_DATA) + 1
        assert all(re.match(data_error(), text) for text in refused), refused
        stats = svc.stats()
        assert stats.endpoints[0].num_requests == 1 and stats.endpoints[0].num_errors == 0
        await svc.stop()
        await assert_usable(nc, errs)
    finally:
        await client.close()
        await nc.close()
