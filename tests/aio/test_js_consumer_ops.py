"""Consumer operations against a real nats-server: ``reset_consumer`` (ResetConsumer /
ResetConsumerToSequence, server 2.14+), ``js.subscribe(skip_consumer_lookup=True)``
(SkipConsumerLookup) and the legacy ``CONSUMER.DURABLE.CREATE`` subject for servers
before 2.9 (asyncio source; the blocking twin is generated)."""
from __future__ import annotations

import pytest

import jetwire.aio as jetwire
from jetwire.jetstream.ops import server_at_least
from tests.aio._helpers import Seqs, acks_applied, new_stream


async def _collect(batch) -> list:
    return [m async for m in batch]


class Trace:
    """A ``trace_cb`` recording the subjects of the API requests sent."""

    def __init__(self) -> None:
        self.sent: list = []

    def __call__(self, subject: str, payload: bytes) -> None:
        if subject.startswith("$JS."):
            self.sent.append(subject)


async def test_reset_consumer_to_a_sequence_and_back_to_the_ack_floor(nats_url):
    nc = await jetwire.connect(nats_url)
    assert server_at_least(nc.server_info, 2, 14), nc.server_info.get("version")
    js, stream = await new_stream(nc, 10)
    try:
        c = await js.create_consumer(stream, durable_name="d")
        first = await _collect(await c.fetch(3, max_wait=2))
        assert [m.metadata.sequence.stream for m in first] == [1, 2, 3]
        for m in first:
            await m.ack_sync()
        unacked = await _collect(await c.fetch(4, max_wait=2))  # 4..7 delivered, not acknowledged
        assert [m.metadata.sequence.stream for m in unacked] == [4, 5, 6, 7]

        # no sequence: back to the ack floor + 1 (4, delivered before but never acknowledged)
        info = await js.reset_consumer(stream, "d")
        assert isinstance(info, jetwire.ConsumerInfo)
        assert info.name == "d" and info.stream_name == stream
        assert info.ack_floor.stream_seq == 3 and info.delivered.stream_seq == 3 and info.num_ack_pending == 0
        got = await _collect(await c.fetch(3, max_wait=2))
        assert [m.metadata.sequence.stream for m in got] == [4, 5, 6]

        # to a sequence: forward (what comes before counts as done) ...
        info = await js.reset_consumer(stream, "d", seq=9)
        assert info.delivered.stream_seq == 8 and info.ack_floor.stream_seq == 8 and info.num_pending == 2
        m = await c.next(timeout=2)
        assert m.metadata.sequence.stream == 9
        # ... and back (deliver policy all)
        await js.reset_consumer(stream, "d", seq=2)
        got = await _collect(await c.fetch(2, max_wait=2))
        assert [m.metadata.sequence.stream for m in got] == [2, 3]

        # a sequence before the start of a by_start_sequence consumer: refused (10204)
        await js.create_consumer(stream, durable_name="late", deliver_policy="by_start_sequence", opt_start_seq=5)
        with pytest.raises(jetwire.APIError) as ei:
            await js.reset_consumer(stream, "late", seq=2)
        assert ei.value.err_code == 10204
        with pytest.raises(ValueError):  # bad input: nothing sent
            await js.reset_consumer(stream, "d", seq=0)
        assert (await js.consumer_info(stream, "d")).name == "d"  # the connection is fine
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_reset_consumer_missing(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream = await new_stream(nc, 1)
    try:
        with pytest.raises(jetwire.ConsumerNotFoundError):
            await js.reset_consumer(stream, "nope")
        with pytest.raises(jetwire.StreamNotFoundError):
            await js.reset_consumer(stream + "X", "nope")
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_subscribe_skip_consumer_lookup_sends_no_info(nats_url):
    nc = await jetwire.connect(nats_url)
    trace = Trace()
    js = nc.jetstream(trace_cb=trace)
    _, stream = await new_stream(nc, 5)
    try:
        # an existing durable push consumer: bound without a CONSUMER.INFO
        dsubj = nc.new_inbox()
        await js.create_consumer(stream, durable_name="pd", deliver_subject=dsubj, filter_subject=f"{stream}.a")
        trace.sent.clear()
        rec = Seqs()
        done = rec.at(5)
        sub = await js.subscribe(f"{stream}.a", stream=stream, durable="pd", cb=rec, skip_consumer_lookup=True,
                                 deliver_subject=dsubj)
        assert await done.wait(5)
        assert rec.seqs == [1, 2, 3, 4, 5]
        assert not [s for s in trace.sent if ".CONSUMER.INFO." in s], trace.sent
        assert [s for s in trace.sent if ".CONSUMER.CREATE." in s]
        await sub.unsubscribe()
        assert (await js.consumer_info(stream, "pd")).name == "pd"  # a durable stays

        # without the option a durable is looked up first
        trace.sent.clear()
        sub = await js.subscribe(f"{stream}.a", stream=stream, durable="pd", cb=Seqs())
        assert [s for s in trace.sent if s.endswith(f".CONSUMER.INFO.{stream}.pd")], trace.sent
        await sub.unsubscribe()
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_durable_create_uses_the_legacy_subject_before_2_9(nats_url):
    nc = await jetwire.connect(nats_url)
    trace = Trace()
    js = nc.jetstream(trace_cb=trace)
    _, stream = await new_stream(nc, 2)
    try:
        await js.create_consumer(stream, durable_name="new")
        assert trace.sent[-1] == f"$JS.API.CONSUMER.CREATE.{stream}.new"
        nc._core.info["version"] = "2.8.4"  # as an old server announces itself
        c = await js.create_consumer(stream, durable_name="old", filter_subject=f"{stream}.a")
        assert trace.sent[-1] == f"$JS.API.CONSUMER.DURABLE.CREATE.{stream}.old"
        assert c.name == "old"
        got = await _collect(await c.fetch(2, max_wait=2))
        assert [m.metadata.sequence.stream for m in got] == [1, 2]
        for m in got:
            await m.ack()
        assert (await acks_applied(c)).num_ack_pending == 0
        # an ephemeral: CONSUMER.CREATE.<stream>, named by the server
        e = await js.create_consumer(stream)
        assert trace.sent[-1] == f"$JS.API.CONSUMER.CREATE.{stream}"
        assert e.name
    finally:
        await js.delete_stream(stream)
        await nc.close()


def test_contract_signatures():
    import importlib
    import inspect

    pkg = jetwire.Client.__module__.rsplit(".", 1)[0]  # the flavour's implementation package
    JetStream = importlib.import_module(f"{pkg}.jetstream").JetStream
    pcm = importlib.import_module(f"{pkg}.push_consumer")
    PushConsumer, PushConsumeContext = pcm.PushConsumer, pcm.PushConsumeContext

    def params(fn) -> list:
        return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()][1:]

    E = inspect.Parameter.empty
    assert params(JetStream.reset_consumer) == [("stream", E), ("consumer", E), ("seq", None)]
    assert params(JetStream.push_consumer) == [("stream", E), ("name", E)]
    assert params(JetStream.create_push_consumer)[0] == ("stream", E)
    assert params(JetStream.stream_leader_stepdown) == [("name", E), ("preferred", None)]
    assert params(JetStream.consumer_leader_stepdown)[:2] == [("stream", E), ("consumer", E)]
    assert params(JetStream.remove_stream_peer) == [("stream", E), ("peer", E)]
    assert params(JetStream.meta_leader_stepdown) == [("preferred", None)]
    assert params(PushConsumer.consume)[0] == ("cb", E)
    for name in ("stop", "drain", "closed"):
        assert callable(getattr(PushConsumeContext, name))
