"""Priority groups on pull consumers (ADR-42) against a real nats-server: pinned clients
(the pin id kept per handle, sent on every pull, reset on 423; the pin moving on unpin
and when the pinned client stops), overflow pulls with min_pending/min_ack_pending,
prioritized pulls, and the option checks (asyncio source; the blocking twin is
generated)."""
from __future__ import annotations

import orjson
import pytest

import jetwire.aio as jetwire
from tests.aio._helpers import Errors, fill, new_stream, uniq, wait_until

PIN = "Nats-Pin-Id"


def server_version(nc) -> tuple:
    return tuple(int(x) for x in nc.server_info["version"].split("-")[0].split(".")[:3])


class Rec:
    """consume() callback: keeps (and acks) what it gets."""

    def __init__(self) -> None:
        self.msgs: list = []

    def __call__(self, msg) -> None:
        self.msgs.append(msg)
        msg.ack()

    def __len__(self) -> int:
        return len(self.msgs)

    def pins(self) -> set:
        return {m.headers.get(PIN) if m.headers is not None else None for m in self.msgs}


async def make(nc, policy: str, **config):
    js, stream = await new_stream(nc)
    await js.create_consumer(stream, durable_name="w", priority_groups=["jobs"], priority_policy=policy, **config)
    return js, stream


async def waiting_pulls(c, n: int) -> None:
    """Until the consumer has ``n`` waiting pulls (consumer info also makes the server
    forget pulls nobody listens to any more)."""

    async def enough():
        return (await c.info()).num_waiting >= n

    assert await wait_until(enough, 10), (await c.info()).num_waiting


async def test_priority_config_round_trips(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream = await make(nc, "pinned_client", priority_timeout=12.5)
    try:
        assert server_version(nc) >= (2, 11, 0)
        cfg = (await js.consumer(stream, "w")).cached_info().config
        assert cfg.priority_policy == jetwire.PriorityPolicy.PINNED
        assert cfg.priority_groups == ["jobs"]
        assert cfg.priority_timeout == 12.5
        info = await js.consumer_info(stream, "w")
        assert [g.group for g in info.priority_groups] == ["jobs"]
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_pinned_client_gets_everything_and_unpin_moves_the_pin(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream = await make(nc, "pinned_client", priority_timeout=60)
    subject = f"{stream}.a"
    try:
        c1 = await js.consumer(stream, "w")
        c2 = await js.consumer(stream, "w")  # another handle: its own pin id
        rec1, rec2, errors1 = Rec(), Rec(), Errors()
        cc1 = await c1.consume(rec1, group="jobs", max_messages=10, error_cb=errors1)
        await fill(js, subject, 1)
        assert await wait_until(lambda: len(rec1) == 1)
        pin1 = c1.pin_id
        assert pin1 and rec1.pins() == {pin1}
        cc2 = await c2.consume(rec2, group="jobs", max_messages=10)
        await waiting_pulls(c1, 2)  # c2's pull is waiting next to c1's
        await fill(js, subject, 20, start=1)
        assert await wait_until(lambda: len(rec1) == 21), len(rec1)
        assert rec2.msgs == [] and c2.pin_id is None  # the standby got nothing
        assert rec1.pins() == {pin1}
        assert sorted(int(m.data) for m in rec1.msgs) == list(range(21))

        await js.unpin_consumer(stream, "w", "jobs")
        await fill(js, subject, 5, start=21)
        assert await wait_until(lambda: len(rec2) == 5), len(rec2)
        pin2 = c2.pin_id
        assert pin2 and pin2 != pin1 and rec2.pins() == {pin2}
        # c1's waiting pulls carried the old pin id: refused with 423, which the handle
        # reports and forgets; it goes on pulling without an id (a standby now)
        assert isinstance(await errors1.wait_for(jetwire.PinIdMismatchError), jetwire.PullStatusError)
        assert c1.pin_id is None
        assert len(rec1) == 21
        cc1.stop()
        cc2.stop()
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_pin_moves_when_the_pinned_client_stops(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream = await make(nc, "pinned_client", priority_timeout=2)
    subject = f"{stream}.a"
    try:
        c1 = await js.consumer(stream, "w")
        c2 = await js.consumer(stream, "w")
        rec1, rec2 = Rec(), Rec()
        # pulls expiring every second keep the pin (priority_timeout 2 s) while c1 runs
        cc1 = await c1.consume(rec1, group="jobs", max_messages=10, expires=1)
        await fill(js, subject, 1)
        assert await wait_until(lambda: len(rec1) == 1)
        pin1 = c1.pin_id
        assert pin1
        cc2 = await c2.consume(rec2, group="jobs", max_messages=10, expires=1)
        await waiting_pulls(c1, 2)
        await fill(js, subject, 10, start=1)
        assert await wait_until(lambda: len(rec1) == 11), len(rec1)
        assert rec2.msgs == []

        cc1.stop()
        assert await cc1.closed(5)
        await nc.flush()
        await c1.info()  # the server forgets c1's pulls (nobody listens)
        await fill(js, subject, 5, start=11)
        # no pull from the pinned client for priority_timeout: the server pins c2
        assert await wait_until(lambda: len(rec2) == 5, 15), len(rec2)
        assert c2.pin_id and c2.pin_id != pin1 and rec2.pins() == {c2.pin_id}
        assert len(rec1) == 11
        cc2.stop()

        # c1's handle still holds the old pin id: its next pull is refused (423), the
        # handle forgets the id, and the pull after that waits as a standby
        batch = await c1.fetch(5, max_wait=5, group="jobs")
        assert [m async for m in batch] == []
        assert isinstance(batch.error, jetwire.PinIdMismatchError)
        assert c1.pin_id is None
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_fetch_sends_the_pin_id_and_a_standby_gets_nothing(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream = await make(nc, "pinned_client", priority_timeout=60)
    subject = f"{stream}.a"
    try:
        c1 = await js.consumer(stream, "w")
        c2 = await js.consumer(stream, "w")
        await fill(js, subject, 4)
        batch = await c1.fetch(2, max_wait=5, group="jobs")
        got = [m async for m in batch]
        assert len(got) == 2 and batch.error is None
        pin = c1.pin_id
        assert pin and {m.headers[PIN] for m in got} == {pin}
        # c2 has no pin id: its pull waits while c1 is pinned, though 2 messages are there
        standby = await c2.fetch(2, max_wait=0.5, group="jobs")
        assert [m async for m in standby] == [] and standby.error is None
        assert c2.pin_id is None
        # the pinned handle's next pulls carry its id and get the rest
        msg = await c1.next(timeout=5, group="jobs")
        assert msg.headers[PIN] == pin
        rest = [m async for m in await c1.fetch_no_wait(5, group="jobs")]
        assert [int(m.data) for m in [*got, msg, *rest]] == [0, 1, 2, 3]
        # unpinned: c2's next pull takes the pin
        await js.unpin_consumer(stream, "w", "jobs")
        await fill(js, subject, 1, start=4)
        msg = await c2.next(timeout=5, group="jobs")
        assert int(msg.data) == 4 and c2.pin_id == msg.headers[PIN] != pin
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_pull_requests_carry_group_fields_and_pin_id(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream = await make(nc, "pinned_client")
    try:
        c = await js.consumer(stream, "w")
        seen = await nc.subscribe(f"$JS.API.CONSUMER.MSG.NEXT.{stream}.w")  # a listener next to the server
        await fill(js, f"{stream}.a", 2)
        assert len([m async for m in await c.fetch(1, max_wait=5, group="jobs")]) == 1
        first = orjson.loads((await seen.next_msg(5)).data)
        assert first["group"] == "jobs" and "id" not in first
        ctx = await c.messages(group="jobs", max_messages=3)
        assert (await ctx.next(timeout=5)).headers[PIN] == c.pin_id
        pulled = orjson.loads((await seen.next_msg(5)).data)
        assert pulled["group"] == "jobs" and pulled["id"] == c.pin_id and pulled["batch"] == 3
        ctx.stop()
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_overflow_min_pending_and_min_ack_pending(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream = await make(nc, "overflow")
    subject = f"{stream}.a"
    try:
        c = await js.consumer(stream, "w")
        await fill(js, subject, 5)
        # 5 pending < 10: the overflow pull is not served
        batch = await c.fetch(10, max_wait=0.5, group="jobs", min_pending=10)
        assert [m async for m in batch] == [] and batch.error is None
        await fill(js, subject, 10, start=5)
        # 15 pending: served while at least 10 are pending (15, 14, ..., 10: 6 messages)
        batch = await c.fetch(10, max_wait=1, group="jobs", min_pending=10)
        over = [int(m.data) async for m in batch]
        assert over == list(range(6)), over
        assert (await c.info()).num_pending == 9
        # a pull without conditions takes the rest
        rest = [int(m.data) async for m in await c.fetch(20, max_wait=1, group="jobs")]
        assert rest == list(range(6, 15))
        # nothing was acked: 15 await their ack
        await fill(js, subject, 3, start=15)
        batch = await c.fetch(10, max_wait=0.5, group="jobs", min_ack_pending=100)
        assert [m async for m in batch] == []
        batch = await c.fetch(10, max_wait=1, group="jobs", min_ack_pending=15)
        assert [int(m.data) async for m in batch] == [15, 16, 17]
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_overflow_consume_waits_for_a_backlog(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream = await make(nc, "overflow")
    subject = f"{stream}.a"
    try:
        c = await js.consumer(stream, "w")
        ctx = await c.messages(group="jobs", min_pending=5, max_messages=10, expires=2)
        await fill(js, subject, 3)
        with pytest.raises(jetwire.TimeoutError):
            await ctx.next(timeout=1)  # 3 pending: below the backlog this pull waits for
        await fill(js, subject, 4, start=3)
        # 7 pending: served down to 5 pending
        got = [int((await ctx.next(timeout=5)).data) for _ in range(3)]
        assert got == [0, 1, 2]
        with pytest.raises(jetwire.TimeoutError):
            await ctx.next(timeout=1)
        ctx.stop()
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_prioritized_pulls_serve_the_lowest_priority_first(nats_url):
    nc = await jetwire.connect(nats_url)
    assert server_version(nc) >= (2, 12, 0), nc.server_info["version"]
    js, stream = await make(nc, "prioritized")
    try:
        low = await js.consumer(stream, "w")
        high = await js.consumer(stream, "w")
        rec_low, rec_high = Rec(), Rec()
        cc_low = await low.consume(rec_low, group="jobs", priority=5)
        cc_high = await high.consume(rec_high, group="jobs", priority=1)
        await waiting_pulls(low, 2)
        await fill(js, f"{stream}.a", 30)
        assert await wait_until(lambda: len(rec_high) == 30), len(rec_high)
        assert rec_low.msgs == []
        cc_high.stop()
        await nc.flush()
        await high.info()  # the server forgets the stopped pull
        await fill(js, f"{stream}.a", 3, start=30)
        assert await wait_until(lambda: len(rec_low) == 3), len(rec_low)
        cc_low.stop()
    finally:
        await js.delete_stream(stream)
        await nc.close()


async def test_pull_options_are_checked_before_anything_is_sent(nats_url):
    nc = await jetwire.connect(nats_url)
    js, stream = await make(nc, "overflow")
    try:
        c = await js.consumer(stream, "w")
        plain = await js.create_consumer(stream, durable_name="plain")
        seen = await nc.subscribe(f"$JS.API.CONSUMER.MSG.NEXT.{stream}.>")
        with pytest.raises(jetwire.InvalidOptionError, match="group"):
            await c.fetch(1, max_wait=1)  # the server would answer "Priority Group missing"
        with pytest.raises(jetwire.InvalidOptionError):
            await c.fetch(1, max_wait=1, group="other")
        with pytest.raises(jetwire.InvalidOptionError):
            await c.consume(lambda m: None, group="jobs", min_pending=0)
        with pytest.raises(ValueError):
            await c.messages(group="jobs", priority=10)
        with pytest.raises(jetwire.InvalidOptionError):
            await plain.next(timeout=1, group="jobs")
        with pytest.raises(jetwire.JetStreamError):
            await plain.fetch_no_wait(1, min_pending=3)
        await nc.flush()
        with pytest.raises(jetwire.TimeoutError):
            await seen.next_msg(0.2)  # no pull went out
        with pytest.raises(jetwire.APIError) as exc:
            await js.unpin_consumer(stream, "w", "nope")
        assert exc.value.err_code == 10160
        with pytest.raises(jetwire.ConsumerNotFoundError):
            await js.unpin_consumer(stream, uniq("C"), "jobs")
        stream_handle = await js.stream(stream)
        await stream_handle.unpin_consumer("w", "jobs")  # nothing pinned: fine
    finally:
        await js.delete_stream(stream)
        await nc.close()
