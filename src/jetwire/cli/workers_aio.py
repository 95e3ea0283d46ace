"""The roles of ``jetwire bench`` workers: the asyncio source of both flavours.

``workers_sync.py`` (``jetwire``, blocking) is generated from this file by
``tools/gen_sync.py``; never edit it. :mod:`jetwire.cli._benchwork` holds the worker's
plumbing (``Worker``) and the process entry point.
"""
from __future__ import annotations

import asyncio  # aio-only
from collections.abc import Callable
from typing import Any

import jetwire.aio
from jetwire.aio import _prims as prims

from ._benchwork import STEP, Worker, ack_mode, now
from ._results import WorkerResult


async def start(w: Worker) -> None:
    """Wait for the common start signal (a multiprocessing event)."""
    await asyncio.get_running_loop().run_in_executor(None, w.start_ev.wait)  # aio-only
    # sync-only: w.start_ev.wait()


async def until(w: Worker, reached: Callable[[], bool], count: Callable[[], int]) -> bool:
    """Wait until ``reached()`` (True), or until the producers are done and nothing has
    arrived for ``grace`` seconds (False)."""
    step = w.waiter(reached, count)
    while True:
        r = step()
        if r is not None:
            return r
        await prims.sleep(0.01)



async def _connect(w: Worker, **extra: int) -> jetwire.aio.Client:
    return await jetwire.aio.connect(w.spec["url"], **w.connect_kw(**extra))


async def pub(w: Worker) -> WorkerResult:
    nc = await _connect(w)
    pub, subj, payload, n, counters, idx = nc.publish, w.subject, w.payload, w.n, w.counters, w.idx
    w.ready()
    await start(w)
    t0 = now()
    done = 0
    while done < n:
        k = min(STEP, n - done)
        for _ in range(k):
            await pub(subj, payload)
        done += k
        counters[idx] = done
        await prims.sleep(0)  # aio-only
    await nc.flush(timeout=60)
    t1 = now()
    await nc.close()
    return w.result(n, t0, t1)


def tally(w: Worker, st: list[Any]) -> Callable[[Any], int]:
    """A callback counting deliveries in ``st`` (count, first, last, wrong sizes) and
    publishing progress; it returns the count."""
    size, counters, idx = w.size, w.counters, w.idx

    def count(m: Any) -> int:
        c: int = st[0] + 1
        st[0] = c
        t = now()
        if c == 1:
            st[1] = t
        st[2] = t
        if len(m.data) != size:
            st[3] += 1
        if not c & 1023:
            counters[idx] = c
        return c

    return count


async def sub(w: Worker) -> WorkerResult:
    exp, counters, idx = w.expected, w.counters, w.idx
    st: list[Any] = [0, 0.0, 0.0, 0]
    cb = tally(w, st)
    nc = await _connect(w, pending_msgs_limit=max(65536, exp + 1), pending_bytes_limit=-1)
    await nc.subscribe(w.subject, queue=w.spec.get("queue"), cb=cb)
    await nc.flush()
    w.ready()
    await start(w)
    if w.spec.get("fanout", True):
        await until(w, lambda: st[0] >= exp, lambda: st[0])
    else:
        await until(w, lambda: (counters.__setitem__(idx, st[0]) or w.group_done()), lambda: st[0])
    counters[idx] = st[0]
    await nc.close()
    return w.result(st[0], st[1], st[2], bad=st[3])


async def req(w: Worker) -> WorkerResult:
    nc = await _connect(w)
    req, subj, payload, n, counters, idx, timeout = nc.request, w.subject, w.payload, w.n, w.counters, w.idx, w.timeout
    lat: list[float] = []
    add = lat.append
    bad = 0
    w.ready()
    await start(w)
    t0 = now()
    for i in range(n):
        a = now()
        m = await req(subj, payload, timeout=timeout)
        add(now() - a)
        if len(m.data) != w.size:
            bad += 1
        if not i & 255:
            counters[idx] = i + 1
    t1 = now()
    counters[idx] = n
    await nc.close()
    return w.result(n, t0, t1, latencies=lat, bad=bad)


async def rep(w: Worker) -> WorkerResult:
    counters, idx = w.counters, w.idx
    st: list[Any] = [0, 0.0, 0.0]

    def cb(m: Any) -> object:
        c = st[0] + 1
        st[0] = c
        t = now()
        if c == 1:
            st[1] = t
        st[2] = t
        if not c & 255:
            counters[idx] = c
        return m.respond(m.data)

    nc = await _connect(w, pending_msgs_limit=1_000_000, pending_bytes_limit=-1)
    await nc.subscribe(w.subject, queue="jetwire-bench", cb=cb)
    await nc.flush()
    w.ready()
    await start(w)
    while not w.stop_ev.is_set():
        counters[idx] = st[0]
        if w.group_total and w.group_done():
            break
        await prims.sleep(0.01)
    await nc.flush()
    counters[idx] = st[0]
    await nc.close()
    return w.result(st[0], st[1], st[2])


async def sequential(w: Worker, nc: Any, op: Any, check: Any = None) -> WorkerResult:
    """The timed part of a role making ``w.n`` calls one after the other, each waiting for
    its answer: ``await op(i)``, its latency recorded; ``check(answer)`` False counts as
    bad. Closes ``nc`` afterwards."""
    n, counters, idx = w.n, w.counters, w.idx
    lat: list[float] = []
    add = lat.append
    bad = 0
    w.ready()
    await start(w)
    t0 = now()
    for i in range(n):
        a = now()
        r = await op(i)
        add(now() - a)
        if check is not None and not check(r):
            bad += 1
        if not i & 255:
            counters[idx] = i + 1
    t1 = now()
    counters[idx] = n
    await nc.close()
    return w.result(n, t0, t1, latencies=lat, bad=bad)


async def jspub(w: Worker) -> WorkerResult:
    nc = await _connect(w)
    js = nc.jetstream(timeout=w.timeout)
    pub, subj, payload = js.publish, w.subject, w.payload
    return await sequential(w, nc, lambda i: pub(subj, payload))


async def jspubasync(w: Worker) -> WorkerResult:
    nc = await _connect(w)
    js = nc.jetstream(timeout=w.timeout, publish_async_max_pending=w.spec["window"])
    pub, subj, payload, n, counters, idx = js.publish_async, w.subject, w.payload, w.n, w.counters, w.idx
    futs: list[Any] = []
    add = futs.append
    w.ready()
    await start(w)
    t0 = now()
    done = 0
    while done < n:
        k = min(STEP, n - done)
        for _ in range(k):
            add(await pub(subj, payload, stall_wait=w.timeout))
        done += k
        counters[idx] = done - js.publish_async_pending()  # progress counts acks
    deadline = now() + max(60.0, w.timeout)
    while True:
        try:
            await js.publish_async_complete(timeout=0.1)
            break
        except TimeoutError:
            counters[idx] = n - js.publish_async_pending()
            if now() > deadline:
                raise
    t1 = now()
    counters[idx] = n
    bad = sum(1 for f in futs if not f.done() or f.cancelled() or f.exception() is not None)
    await nc.close()
    return w.result(n, t0, t1, bad=bad)


async def jsfetch(w: Worker) -> WorkerResult:
    nc = await _connect(w)
    js = nc.jetstream(timeout=w.timeout)
    c = await js.consumer(w.spec["stream"], w.spec["consumer"])
    batch, counters, idx, size = w.spec["batch"], w.counters, w.idx, w.size
    acks = ack_mode(w)
    got = bad = 0
    w.ready()
    await start(w)
    t0 = last = now()
    empty_since = None
    while not w.group_done():
        # never more than is left: a pull for more waits out its max_wait for messages that
        # will not come (and the window ends at the last message received, whatever a pull
        # shared with other fetchers waits for)
        want = min(batch, max(1, w.group_total - w.group_count()))
        b = await c.fetch(want, max_wait=w.spec.get("fetch_wait", 1.0))
        k = 0
        m = None
        async for m in b:
            k += 1
            if len(m.data) != size:
                bad += 1
            if acks == "explicit":
                await m.ack()
            last = now()
        if k:
            if acks == "all" and m is not None:
                await m.ack()
            got += k
            counters[idx] = got
            empty_since = None
        else:
            t = now()
            empty_since = empty_since or t
            if t - max(empty_since, last) > w.grace:
                break
    if acks != "none":
        t = now()
        await nc.flush(timeout=30)
        if got:
            last += now() - t  # the acks' round trip counts, right after the last message
    await nc.close()
    return w.result(got, t0, last, bad=bad)


async def jsconsume(w: Worker) -> WorkerResult:
    nc = await _connect(w)
    js = nc.jetstream(timeout=w.timeout)
    counters, idx = w.counters, w.idx
    acks = ack_mode(w)
    st: list[Any] = [0, 0.0, 0.0, 0]
    last: list[Any] = [None]
    count = tally(w, st)

    async def acking(m: Any) -> None:
        c = count(m)
        last[0] = m
        if acks == "explicit" or not c & 255:
            await m.ack()

    cb: Any = count if acks == "none" else acking  # (no coroutine per message without acks)

    ordered = w.spec["role"] == "jsordered"
    con: Any  # an ordered or a durable pull consumer: both consume()
    if ordered:
        con = await js.ordered_consumer(w.spec["stream"], deliver_policy="by_start_sequence",
                                        opt_start_seq=w.spec["start_seq"])
    else:
        con = await js.consumer(w.spec["stream"], w.spec["consumer"])
    w.ready()
    await start(w)
    t0 = now()
    cc = await con.consume(cb, max_messages=w.spec["batch"])
    if ordered:
        await until(w, lambda: st[0] >= w.expected, lambda: st[0])
    else:
        await until(w, lambda: (counters.__setitem__(idx, st[0]) or w.group_done()), lambda: st[0])
    cc.stop()
    counters[idx] = st[0]
    if acks == "all" and last[0] is not None:
        await last[0].ack()  # AckAll: the newest delivery acknowledges everything before it
    if acks != "none":
        await nc.flush(timeout=30)
    await nc.close()
    return w.result(st[0], st[1] or t0, st[2] or t0, bad=st[3])


async def kvput(w: Worker) -> WorkerResult:
    nc = await _connect(w)
    js = nc.jetstream(timeout=w.timeout)
    kv = await js.key_value(w.spec["bucket"])
    put, payload = kv.put, w.payload
    prefix = f"{w.spec['key_prefix']}.{w.idx}"
    return await sequential(w, nc, lambda i: put(f"{prefix}.{i}", payload))


async def kvget(w: Worker) -> WorkerResult:
    nc = await _connect(w)
    js = nc.jetstream(timeout=w.timeout)
    kv = await js.key_value(w.spec["bucket"])
    get, size = kv.get, w.size
    prefix, nkeys, off = w.spec["key_prefix"], w.spec["nkeys"], w.spec.get("offset", 0)
    keys = [f"{prefix}.{(off + i) % nkeys}" for i in range(min(w.n, nkeys))]
    nk = len(keys)
    return await sequential(w, nc, lambda i: get(keys[i % nk]), lambda e: len(e.value) == size)


ROLES = {
    "pub": pub, "sub": sub, "req": req, "rep": rep, "jspub": jspub, "jspubasync": jspubasync,
    "jsfetch": jsfetch, "jsconsume": jsconsume, "jsordered": jsconsume, "kvput": kvput, "kvget": kvget,
}
