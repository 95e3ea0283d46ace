"""The BENCHMARKS.md rows, written once: the asyncio source of both jetwire flavours,
and of the peer's rows.

``rows_sync.py`` (``jetwire``, blocking) is generated from this file by
``tools/gen_sync.py``; never edit it. :mod:`jetwire.cli.rows` holds the row table, the
set-up around the timed part and the accounting, and picks the flavour's functions.

Every row is one function ``row(cl, url, n, ctx)`` over a client ``cl``: the few calls
in which the clients differ (connecting, the counting callback, waiting for async
publish acks, pulling one batch) are methods of ``cl``; everything else (the loops, the
timing, the accounting) is the row's, the same for every client. :class:`Client` is
jetwire (the asyncio flavour here, the blocking one in the generated twin); the peer nats-py
(``benchmarks/natspy_rows.py``, outside the package: jetwire never imports nats-py)
gives the same methods over its own API and runs these functions.
"""
from __future__ import annotations

import os
import struct
import time
from collections.abc import Callable
from typing import Any, Protocol

import jetwire.aio
from jetwire.aio import _prims as prims
from jetwire.msg import Msg
from jetwire.options import usable_cpus  # aio-only
from jetwire.protocol.metadata import parse_metadata

from ._rowkit import (
    FETCH,
    IDLE,
    PAYLOAD,
    RATE,
    REQUESTERS,
    WAIT,
    WINDOW,
    RowCtx,
    RowFailed,
    ack_subjects,
    conn_kwargs,
    cpu_now,
    now,
)

Signal = prims.Signal  # what ``tally`` sets at the n-th delivery (``await done.wait(t) -> bool``)
Callback = Callable[[Any], None]  # a message callback (the message: jetwire's or the peer's)


class RowClient(Protocol):
    """What a row needs of a client: :class:`Client` (jetwire) or a peer's
    (``benchmarks/natspy_rows.py``); connections, consumers and messages are the client's own."""

    name: str

    async def connect(self, url: str, publisher: bool = False) -> Any: ...

    def tally(self, n: int) -> tuple[Callback, prims.Signal, list[int]]: ...

    def stamps(self, n: int) -> tuple[Callback, prims.Signal, list[int], list[float]]: ...

    async def acks_complete(self, js: Any, timeout: float) -> None: ...

    async def pull_consumer(self, js: Any, stream: str, consumer: str) -> Any: ...

    async def take(self, cons: Any, batch: int, wait: float, ack: bool) -> int: ...

    async def echo_service(self, nc: Any, name: str, subject: str) -> Any: ...

    def js_msgs(self, subjects: list[str]) -> list[Msg]: ...

    def parse_metadata(self, subject: str) -> Any: ...


POLL_IO = {"on": True, "off": False}.get(os.environ.get("JETWIRE_BENCH_POLL_IO", ""))


class Client:
    """jetwire as the rows use it."""

    name = "jetwire.aio"

    async def connect(self, url: str, publisher: bool = False) -> jetwire.aio.Client:
        """A connection (``publisher``: one that publishes as fast as it can); ``poll_io``
        from ``JETWIRE_BENCH_POLL_IO`` (``on``/``off``; unset: automatic), for A/B runs;
        the server's auth and TLS settings from ``JETWIRE_BENCH_CONN`` (``bench compare``)."""
        return await jetwire.aio.connect(url, poll_io=POLL_IO, **conn_kwargs())

    def tally(self, n: int) -> tuple[Callback, prims.Signal, list[int]]:
        """``(cb, done, count)``: a message callback counting deliveries in ``count[0]``
        that sets ``done`` at the ``n``-th."""
        done = Signal()
        count = [0]

        def cb(msg: Msg) -> None:
            count[0] += 1
            if count[0] == n:
                done.set()

        return cb, done, count

    def stamps(self, n: int) -> tuple[Callback, prims.Signal, list[int], list[float]]:
        """``(cb, done, count, lat)``: like :meth:`tally`, and the callback appends to
        ``lat`` how long ago (seconds) the message was published (:func:`stamp`)."""
        done = Signal()
        count = [0]
        lat: list[float] = []

        def cb(msg: Msg) -> None:
            lat.append(stamp_age(msg.data))
            count[0] += 1
            if count[0] == n:
                done.set()

        return cb, done, count, lat

    async def acks_complete(self, js: Any, timeout: float) -> None:
        """Wait until every async publish is acknowledged."""
        await js.publish_async_complete(timeout=timeout)

    async def pull_consumer(self, js: Any, stream: str, consumer: str) -> Any:
        return await js.consumer(stream, consumer)

    async def take(self, cons: Any, batch: int, wait: float, ack: bool) -> int:
        """Fetch one batch of up to ``batch`` messages (acking each when ``ack``); how
        many came (0: none within ``wait`` seconds)."""
        k = 0
        async for m in await cons.fetch(batch, max_wait=wait):
            k += 1
            if ack:
                await m.ack()
        return k

    async def echo_service(self, nc: Any, name: str, subject: str) -> jetwire.aio.micro.Service:
        """A service ``name`` whose one endpoint on ``subject`` answers with the request's data."""
        async def echo(req: jetwire.aio.micro.Request) -> None:
            await req.respond(req.data)

        svc = await jetwire.aio.micro.add_service(nc, name=name, version="1.0.0")
        await svc.add_endpoint("echo", echo, subject=subject)
        return svc

    def js_msgs(self, subjects: list[str]) -> list[Msg]:
        """Messages as a pull delivers them (reply: an ack subject), metadata not yet read."""
        return [Msg("bench.m", b"", reply=s) for s in subjects]

    def parse_metadata(self, subject: str) -> jetwire.aio.MsgMetadata:
        return parse_metadata(subject)


CLIENT = Client()

# an event loop's timer resolution (row h)
TICK = 0.001  # aio-only
# row h: the asyncio publisher paces by turning the loop where the connections poll
PACE_SPIN = POLL_IO if POLL_IO is not None else usable_cpus() >= 4  # aio-only
_STAMP = struct.Struct("<q8x")  # row h's 16 B payload: the publish time (perf_counter_ns) first


def stamp() -> bytes:
    """A row h payload: 16 bytes starting with the time now (``time.perf_counter_ns``)."""
    return _STAMP.pack(time.perf_counter_ns())


def stamp_age(data: bytes) -> float:
    """Seconds since the :func:`stamp` that made ``data``."""
    return (time.perf_counter_ns() - _STAMP.unpack_from(data)[0]) * 1e-9  # type: ignore[no-any-return, unused-ignore]


async def wait_count(done: prims.Signal, count: list[int]) -> bool:
    """Wait for ``done`` while deliveries keep coming; False once they stall for IDLE s."""
    last, since = count[0], time.monotonic()
    while not await done.wait(0.05):
        if count[0] != last:
            last, since = count[0], time.monotonic()
        elif time.monotonic() - since > IDLE:
            return False
    return True


async def a(cl: RowClient, url: str, n: int, ctx: RowCtx) -> float:
    nc = await cl.connect(url, publisher=True)
    pub = nc.publish
    t0 = now()
    for _ in range(n):
        await pub("bench.a", PAYLOAD)
    await nc.flush(timeout=60)
    dt = now() - t0
    await nc.close()
    return dt


async def b(cl: RowClient, url: str, n: int, ctx: RowCtx) -> float:
    sub_nc = await cl.connect(url)
    pub_nc = await cl.connect(url, publisher=True)
    cb, done, count = cl.tally(n)
    await sub_nc.subscribe("bench.b", cb=cb, pending_msgs_limit=n + 1, pending_bytes_limit=-1)
    await sub_nc.flush()
    pub = pub_nc.publish
    t0 = now()
    for i in range(n):
        await pub("bench.b", PAYLOAD)
        if i & 1023 == 0:  # aio-only
            await prims.sleep(0)  # aio-only
    await pub_nc.flush(timeout=60)
    if not await wait_count(done, count):
        raise RowFailed(f"lost messages: {count[0]} of {n}")
    dt = now() - t0
    await pub_nc.close()
    await sub_nc.close()
    return dt


async def c(cl: RowClient, url: str, n: int, ctx: RowCtx) -> list[float]:
    srv = await cl.connect(url)

    async def handler(m: Msg) -> None:
        await m.respond(m.data)

    await srv.subscribe("bench.c", cb=handler)
    await srv.flush()
    nc = await cl.connect(url)
    lat = []
    for _ in range(n):
        t0 = now()
        await nc.request("bench.c", PAYLOAD, timeout=5)
        lat.append(now() - t0)
    await nc.close()
    await srv.close()
    return lat


async def d(cl: RowClient, url: str, n: int, ctx: RowCtx) -> float:
    nc = await cl.connect(url)
    js = nc.jetstream()
    pub, subj = js.publish, ctx["subject"]
    t0 = now()
    for _ in range(n):
        await pub(subj, PAYLOAD)
    dt = now() - t0
    await nc.close()
    return dt


async def e(cl: RowClient, url: str, n: int, ctx: RowCtx) -> float:
    nc = await cl.connect(url, publisher=True)
    js = nc.jetstream(publish_async_max_pending=WINDOW)
    pub, subj = js.publish_async, ctx["subject"]
    t0 = now()
    for _ in range(n):
        await pub(subj, PAYLOAD)
    await cl.acks_complete(js, 60)
    dt = now() - t0
    await nc.close()
    return dt


async def _fetch(cl: RowClient, url: str, n: int, ctx: RowCtx, ack: bool) -> float:
    nc = await cl.connect(url)
    js = nc.jetstream()
    cons = await cl.pull_consumer(js, ctx["stream"], ctx["consumer"])
    take = cl.take
    got = 0
    t0 = now()
    while got < n:  # never asks for more than is left: a short last batch would wait WAIT s
        k = await take(cons, min(FETCH, n - got), WAIT, ack)
        if not k:
            raise RowFailed(f"lost messages: fetched {got} of {n}")
        got += k
    if ack:
        await nc.flush(timeout=60)
    dt = now() - t0
    ctx["received"] = got
    await nc.close()
    return dt


async def f(cl: RowClient, url: str, n: int, ctx: RowCtx) -> float:
    return await _fetch(cl, url, n, ctx, ack=False)


async def f2(cl: RowClient, url: str, n: int, ctx: RowCtx) -> float:
    return await _fetch(cl, url, n, ctx, ack=True)


async def g(cl: RowClient, url: str, n: int, ctx: RowCtx) -> float:
    """Continuous pull (jetwire's ``consume()``; nats-py has no such API), asking for
    FETCH messages at a time as row f's fetches do (consume's default is 500)."""
    nc = await cl.connect(url)
    js = nc.jetstream()
    cons = await cl.pull_consumer(js, ctx["stream"], ctx["consumer"])
    cb, done, count = cl.tally(n)
    t0 = now()
    cc = await cons.consume(cb, max_messages=FETCH)
    ok = await wait_count(done, count)
    dt = now() - t0
    cc.stop()
    ctx["received"] = count[0]
    await nc.close()
    if not ok:
        raise RowFailed(f"lost messages: consumed {count[0]} of {n}")
    return dt


async def h(cl: RowClient, url: str, n: int, ctx: RowCtx) -> list[float]:
    """One-way latency at a steady RATE: each payload carries its publish time, the
    subscriber's callback (another connection) notes how long ago that was.

    The publisher sleeps until the next message is due (blocking: ``time.sleep``, about
    50 us). An event loop's timers have a resolution of 1 ms (uvloop runs a shorter
    sleep at once: a busy loop that would take a core from the server), so the asyncio
    publisher sleeps at least 1 ms and then sends what became due, in one write; where
    the connections poll (``poll_io``: 4 or more CPUs, a core to spare) it turns the loop
    until the next message is due instead, as nats.go's timers do (``PACE_SPIN``)."""
    sub_nc = await cl.connect(url)
    pub_nc = await cl.connect(url)
    cb, done, count, lat = cl.stamps(n)
    await sub_nc.subscribe("bench.h", cb=cb, pending_msgs_limit=n + 1, pending_bytes_limit=-1)
    await sub_nc.flush()
    pub = pub_nc.publish
    interval = 1.0 / RATE
    i = 0
    t0 = now()
    while i < n:
        due = min(n, int((now() - t0) / interval) + 1)
        while i < due:
            await pub("bench.h", stamp())
            i += 1
        delay = t0 + i * interval - now()
        if delay > 0:
            if PACE_SPIN:  # aio-only
                await prims.sleep(0)  # aio-only
                continue  # aio-only
            delay = max(delay, TICK)  # aio-only
            await prims.sleep(delay)
    if not await wait_count(done, count):
        raise RowFailed(f"lost messages: {count[0]} of {n}")
    await pub_nc.close()
    await sub_nc.close()
    return lat


async def s(cl: RowClient, url: str, n: int, ctx: RowCtx) -> tuple[float, list[float]]:
    """An echo service on one connection, REQUESTERS requesters on another, each sending
    its share of ``n`` requests one after the other: (seconds, every request's latency)."""
    srv = await cl.connect(url)
    name = f"bench_s_{os.getpid()}"
    subject = f"bench.s.{os.getpid()}"
    svc = await cl.echo_service(srv, name, subject)
    nc = await cl.connect(url)
    lats: list[list[float]] = [[] for _ in range(REQUESTERS)]

    async def requester(lat: list[float], k: int) -> None:
        req = nc.request
        for _ in range(k):
            t0 = now()
            await req(subject, PAYLOAD, timeout=5)
            lat.append(now() - t0)

    t0 = now()
    workers = [prims.spawn(requester, lat, n // REQUESTERS) for lat in lats]
    for w in workers:
        await prims.join(w)
    dt = now() - t0
    await svc.stop()
    await nc.close()
    await srv.close()
    return dt, [x for lat in lats for x in lat]


async def m(cl: RowClient, url: str, n: int, ctx: RowCtx) -> float:
    """``msg.metadata`` of n fresh messages in batches of FETCH, as pulls deliver them (no
    server; making the messages is not timed). Also noted in ``ctx``: the CPU seconds of
    that (``cpu_seconds``: steadier than wall time on a busy machine) and the wall seconds
    of ``parse_metadata`` over the same subjects (``parse_seconds``)."""
    subjects = ack_subjects(n)
    dt = cpu = 0.0
    last = first = None
    for i in range(0, n, FETCH):
        msgs = cl.js_msgs(subjects[i : i + FETCH])
        c0, t0 = cpu_now(), now()
        for msg in msgs:
            msg.metadata
        dt += now() - t0
        cpu += cpu_now() - c0
        first = first or msgs[0].metadata
        last = msgs[-1].metadata
    if last is None or first is None or last.sequence.stream != n or first.num_pending != n - 1:
        raise RowFailed("metadata parsed wrong")
    parse = cl.parse_metadata
    t0 = now()
    for s in subjects:
        parse(s)
    ctx["parse_seconds"] = now() - t0
    ctx["cpu_seconds"] = cpu
    return dt


ROWS = {"a": a, "b": b, "c": c, "d": d, "e": e, "f": f, "f2": f2, "g": g, "h": h, "m": m, "s": s}
