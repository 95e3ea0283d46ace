"""The client side of ``jetwire bench``: one worker process per client.

Each worker connects, gets ready (subscribes, looks its consumer up, ...), reports
``ready`` on the queue, waits for the common start signal, runs its role and reports
``done`` with ``{msgs, bytes, start, end, latencies?, bad}`` (``time.monotonic()``
seconds, comparable across processes on one machine). Progress is published in a
shared array of counters, one slot per worker, which is also how workers sharing one
JetStream consumer (or one queue group) know that their group has received everything.

Only jetwire's public API is used, in the flavour asked for (blocking ``jetwire`` or
``jetwire.aio``). No click or rich here: these processes start fast.
"""
from __future__ import annotations

import time
import traceback
from typing import Any, Callable, Dict, List

from ._conn import connect_kwargs

now = time.monotonic
STEP = 1024  # messages between progress updates in tight loops


class Worker:
    """What a worker knows: its spec (a dict) plus the shared signalling objects."""

    def __init__(self, spec: Dict[str, Any], counters: Any, queue: Any, start_ev: Any, stop_ev: Any) -> None:
        self.spec = spec
        self.idx: int = spec["idx"]
        self.n: int = spec.get("n", 0)
        self.expected: int = spec.get("expected", 0)
        self.size: int = spec.get("size", 0)
        self.subject: str = spec.get("subject", "")
        self.payload = b"x" * self.size
        self.counters = counters
        self.queue = queue
        self.start_ev = start_ev
        self.stop_ev = stop_ev
        self.lo, self.hi = spec.get("group_slice", (self.idx, self.idx + 1))
        self.group_total: int = spec.get("group_total", self.expected)
        self.grace: float = spec.get("grace", 10.0)
        self.timeout: float = spec.get("timeout", 10.0)
        self.external: bool = spec.get("external", False)

    # -- plumbing ----------------------------------------------------------------
    def connect_kw(self, **extra: Any) -> Dict[str, Any]:
        kw = connect_kwargs(self.spec.get("conn") or {})
        kw["name"] = f"jetwire-bench-{self.spec['role']}-{self.idx + 1}"
        kw.update(extra)
        return kw

    def ready(self) -> None:
        self.queue.put(("ready", self.idx, None))

    def wait_start(self) -> None:
        self.start_ev.wait()

    async def await_start(self) -> None:
        import asyncio

        await asyncio.get_running_loop().run_in_executor(None, self.start_ev.wait)

    def group_count(self) -> int:
        c = self.counters
        return sum(c[i] for i in range(self.lo, self.hi))

    def group_done(self) -> bool:
        return self.group_count() >= self.group_total

    def _waiter(self, reached: Callable[[], bool], count: Callable[[], int]) -> Callable[[], Any]:
        """A step function for waiting until ``reached()``; returns True (reached),
        False (gave up: the producers are done and nothing arrived for ``grace`` s) or None."""
        state: Dict[str, Any] = {"last": count(), "changed": now(), "stop_seen": None}

        def step() -> Any:
            if reached():
                return True
            c = count()
            t = now()
            if c != state["last"]:
                state["last"], state["changed"] = c, t
                return None
            if self.external and c and t - state["changed"] > self.grace:
                return False  # senders elsewhere went quiet: what is missing is lost
            if self.stop_ev.is_set():
                if state["stop_seen"] is None:
                    state["stop_seen"] = t
                if t - max(state["changed"], state["stop_seen"]) > self.grace:
                    return False
            return None

        return step

    def wait_until(self, reached: Callable[[], bool], count: Callable[[], int]) -> bool:
        step = self._waiter(reached, count)
        while True:
            r = step()
            if r is not None:
                return r
            time.sleep(0.01)

    async def await_until(self, reached: Callable[[], bool], count: Callable[[], int]) -> bool:
        import asyncio

        step = self._waiter(reached, count)
        while True:
            r = step()
            if r is not None:
                return r
            await asyncio.sleep(0.01)

    def result(self, msgs: int, start: float, end: float, **extra: Any) -> Dict[str, Any]:
        out = {"idx": self.spec["gidx"], "msgs": msgs, "bytes": msgs * self.size, "start": start, "end": end,
               "bad": 0}
        out.update(extra)
        return out


# =============================================================================== blocking


def _connect_sync(w: Worker, **extra: Any) -> Any:
    import jetwire

    return jetwire.connect(w.spec["url"], **w.connect_kw(**extra))


def pub_sync(w: Worker) -> Dict[str, Any]:
    nc = _connect_sync(w)
    pub, subj, payload, n, counters, idx = nc.publish, w.subject, w.payload, w.n, w.counters, w.idx
    w.ready()
    w.wait_start()
    t0 = now()
    done = 0
    while done < n:
        k = min(STEP, n - done)
        for _ in range(k):
            pub(subj, payload)
        done += k
        counters[idx] = done
    nc.flush(timeout=60)
    t1 = now()
    nc.close()
    return w.result(n, t0, t1)


def sub_sync(w: Worker) -> Dict[str, Any]:
    exp, size, counters, idx = w.expected, w.size, w.counters, w.idx
    st: List[Any] = [0, 0.0, 0.0, 0]  # count, first, last, bad

    def cb(msg: Any) -> None:
        c = st[0] + 1
        st[0] = c
        t = now()
        if c == 1:
            st[1] = t
        st[2] = t
        if len(msg.data) != size:
            st[3] += 1
        if not c & 1023:
            counters[idx] = c

    nc = _connect_sync(w, pending_msgs_limit=max(65536, exp + 1), pending_bytes_limit=-1)
    nc.subscribe(w.subject, queue=w.spec.get("queue"), cb=cb)
    nc.flush()
    w.ready()
    w.wait_start()
    if w.spec.get("fanout", True):
        w.wait_until(lambda: st[0] >= exp, lambda: st[0])
    else:
        w.wait_until(lambda: (counters.__setitem__(idx, st[0]) or w.group_done()), lambda: st[0])
    counters[idx] = st[0]
    nc.close()
    return w.result(st[0], st[1], st[2], bad=st[3])


def req_sync(w: Worker) -> Dict[str, Any]:
    nc = _connect_sync(w)
    req, subj, payload, n, counters, idx, timeout = nc.request, w.subject, w.payload, w.n, w.counters, w.idx, w.timeout
    lat: List[float] = []
    add = lat.append
    bad = 0
    w.ready()
    w.wait_start()
    t0 = now()
    for i in range(n):
        a = now()
        m = req(subj, payload, timeout=timeout)
        add(now() - a)
        if len(m.data) != w.size:
            bad += 1
        if not i & 255:
            counters[idx] = i + 1
    t1 = now()
    counters[idx] = n
    nc.close()
    return w.result(n, t0, t1, latencies=lat, bad=bad)


def rep_sync(w: Worker) -> Dict[str, Any]:
    counters, idx = w.counters, w.idx
    st: List[Any] = [0, 0.0, 0.0]

    def cb(m: Any) -> None:
        m.respond(m.data)
        c = st[0] + 1
        st[0] = c
        t = now()
        if c == 1:
            st[1] = t
        st[2] = t
        if not c & 255:
            counters[idx] = c

    nc = _connect_sync(w, pending_msgs_limit=1_000_000, pending_bytes_limit=-1)
    nc.subscribe(w.subject, queue="jetwire-bench", cb=cb)
    nc.flush()
    w.ready()
    w.wait_start()
    while not w.stop_ev.is_set():
        counters[idx] = st[0]
        if w.group_total and w.group_done():
            break
        time.sleep(0.01)
    nc.flush()
    counters[idx] = st[0]
    nc.close()
    return w.result(st[0], st[1], st[2])


def jspub_sync(w: Worker) -> Dict[str, Any]:
    nc = _connect_sync(w)
    js = nc.jetstream(timeout=w.timeout)
    pub, subj, payload, n, counters, idx = js.publish, w.subject, w.payload, w.n, w.counters, w.idx
    lat: List[float] = []
    add = lat.append
    w.ready()
    w.wait_start()
    t0 = now()
    for i in range(n):
        a = now()
        pub(subj, payload)
        add(now() - a)
        if not i & 255:
            counters[idx] = i + 1
    t1 = now()
    counters[idx] = n
    nc.close()
    return w.result(n, t0, t1, latencies=lat)


def jspubasync_sync(w: Worker) -> Dict[str, Any]:
    nc = _connect_sync(w)
    js = nc.jetstream(timeout=w.timeout, publish_async_max_pending=w.spec["window"])
    pub, subj, payload, n, counters, idx = js.publish_async, w.subject, w.payload, w.n, w.counters, w.idx
    futs: List[Any] = []
    add = futs.append
    w.ready()
    w.wait_start()
    t0 = now()
    done = 0
    while done < n:
        k = min(STEP, n - done)
        for _ in range(k):
            add(pub(subj, payload, stall_wait=w.timeout))
        done += k
        counters[idx] = done - js.publish_async_pending()  # progress counts acks
    deadline = now() + max(60.0, w.timeout)
    while True:
        try:
            js.publish_async_complete(timeout=0.1)
            break
        except TimeoutError:  # jetwire's TimeoutError is also the builtin
            counters[idx] = n - js.publish_async_pending()
            if now() > deadline:
                raise
    t1 = now()
    counters[idx] = n
    bad = sum(1 for f in futs if f.exception() is not None)
    nc.close()
    return w.result(n, t0, t1, bad=bad)


def _ack_mode(w: Worker) -> str:
    return w.spec.get("acks", "none")


def jsfetch_sync(w: Worker) -> Dict[str, Any]:
    nc = _connect_sync(w)
    js = nc.jetstream(timeout=w.timeout)
    c = js.consumer(w.spec["stream"], w.spec["consumer"])
    batch, counters, idx, size = w.spec["batch"], w.counters, w.idx, w.size
    acks = _ack_mode(w)
    got = bad = 0
    w.ready()
    w.wait_start()
    t0 = last = now()
    empty_since = None
    while not w.group_done():
        b = c.fetch(batch, max_wait=w.spec.get("fetch_wait", 1.0))
        k = 0
        m = None
        for m in b:
            k += 1
            if len(m.data) != size:
                bad += 1
            if acks == "explicit":
                m.ack()
        if k:
            if acks == "all" and m is not None:
                m.ack()
            got += k
            last = now()
            counters[idx] = got
            empty_since = None
        else:
            t = now()
            empty_since = empty_since or t
            if t - max(empty_since, last) > w.grace:
                break
    if acks != "none":
        nc.flush(timeout=30)
        last = now() if got else last
    nc.close()
    return w.result(got, t0, last, bad=bad)


def jsconsume_sync(w: Worker) -> Dict[str, Any]:
    nc = _connect_sync(w)
    js = nc.jetstream(timeout=w.timeout)
    counters, idx, size = w.counters, w.idx, w.size
    acks = _ack_mode(w)
    st: List[Any] = [0, 0.0, 0.0, 0]
    last: List[Any] = [None]

    def cb(m: Any) -> None:
        c = st[0] + 1
        st[0] = c
        t = now()
        if c == 1:
            st[1] = t
        st[2] = t
        if len(m.data) != size:
            st[3] += 1
        if acks == "explicit":
            m.ack()
        elif acks == "all":
            last[0] = m
            if not c & 255:
                m.ack()
        if not c & 1023:
            counters[idx] = c

    ordered = w.spec["role"] == "jsordered"
    if ordered:
        con = js.ordered_consumer(w.spec["stream"], deliver_policy="by_start_sequence",
                                  opt_start_seq=w.spec["start_seq"])
    else:
        con = js.consumer(w.spec["stream"], w.spec["consumer"])
    w.ready()
    w.wait_start()
    t0 = now()
    cc = con.consume(cb, max_messages=w.spec["batch"])
    if ordered:
        w.wait_until(lambda: st[0] >= w.expected, lambda: st[0])
    else:
        w.wait_until(lambda: (counters.__setitem__(idx, st[0]) or w.group_done()), lambda: st[0])
    cc.stop()
    counters[idx] = st[0]
    if acks == "all" and last[0] is not None:
        last[0].ack()  # AckAll: the newest delivery acknowledges everything before it
    if acks != "none":
        nc.flush(timeout=30)
    nc.close()
    return w.result(st[0], st[1] or t0, st[2] or t0, bad=st[3])


def kvput_sync(w: Worker) -> Dict[str, Any]:
    nc = _connect_sync(w)
    js = nc.jetstream(timeout=w.timeout)
    kv = js.key_value(w.spec["bucket"])
    put, payload, n, counters, idx = kv.put, w.payload, w.n, w.counters, w.idx
    prefix = f"{w.spec['key_prefix']}.{w.idx}"
    lat: List[float] = []
    add = lat.append
    w.ready()
    w.wait_start()
    t0 = now()
    for i in range(n):
        a = now()
        put(f"{prefix}.{i}", payload)
        add(now() - a)
        if not i & 255:
            counters[idx] = i + 1
    t1 = now()
    counters[idx] = n
    nc.close()
    return w.result(n, t0, t1, latencies=lat)


def kvget_sync(w: Worker) -> Dict[str, Any]:
    nc = _connect_sync(w)
    js = nc.jetstream(timeout=w.timeout)
    kv = js.key_value(w.spec["bucket"])
    get, n, counters, idx, size = kv.get, w.n, w.counters, w.idx, w.size
    prefix, nkeys, off = w.spec["key_prefix"], w.spec["nkeys"], w.spec.get("offset", 0)
    keys = [f"{prefix}.{(off + i) % nkeys}" for i in range(min(n, nkeys))]
    nk = len(keys)
    lat: List[float] = []
    add = lat.append
    bad = 0
    w.ready()
    w.wait_start()
    t0 = now()
    for i in range(n):
        a = now()
        e = get(keys[i % nk])
        add(now() - a)
        if len(e.value) != size:
            bad += 1
        if not i & 255:
            counters[idx] = i + 1
    t1 = now()
    counters[idx] = n
    nc.close()
    return w.result(n, t0, t1, latencies=lat, bad=bad)


# =============================================================================== asyncio


async def _connect_aio(w: Worker, **extra: Any) -> Any:
    import jetwire.aio

    return await jetwire.aio.connect(w.spec["url"], **w.connect_kw(**extra))


async def pub_aio(w: Worker) -> Dict[str, Any]:
    import asyncio

    nc = await _connect_aio(w)
    pub, subj, payload, n, counters, idx = nc.publish, w.subject, w.payload, w.n, w.counters, w.idx
    w.ready()
    await w.await_start()
    t0 = now()
    done = 0
    while done < n:
        k = min(STEP, n - done)
        for _ in range(k):
            await pub(subj, payload)
        done += k
        counters[idx] = done
        await asyncio.sleep(0)
    await nc.flush(timeout=60)
    t1 = now()
    await nc.close()
    return w.result(n, t0, t1)


async def sub_aio(w: Worker) -> Dict[str, Any]:
    exp, size, counters, idx = w.expected, w.size, w.counters, w.idx
    st: List[Any] = [0, 0.0, 0.0, 0]

    def cb(msg: Any) -> None:
        c = st[0] + 1
        st[0] = c
        t = now()
        if c == 1:
            st[1] = t
        st[2] = t
        if len(msg.data) != size:
            st[3] += 1
        if not c & 1023:
            counters[idx] = c

    nc = await _connect_aio(w, pending_msgs_limit=max(65536, exp + 1), pending_bytes_limit=-1)
    await nc.subscribe(w.subject, queue=w.spec.get("queue"), cb=cb)
    await nc.flush()
    w.ready()
    await w.await_start()
    if w.spec.get("fanout", True):
        await w.await_until(lambda: st[0] >= exp, lambda: st[0])
    else:
        await w.await_until(lambda: (counters.__setitem__(idx, st[0]) or w.group_done()), lambda: st[0])
    counters[idx] = st[0]
    await nc.close()
    return w.result(st[0], st[1], st[2], bad=st[3])


async def req_aio(w: Worker) -> Dict[str, Any]:
    nc = await _connect_aio(w)
    req, subj, payload, n, counters, idx, timeout = nc.request, w.subject, w.payload, w.n, w.counters, w.idx, w.timeout
    lat: List[float] = []
    add = lat.append
    bad = 0
    w.ready()
    await w.await_start()
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


async def rep_aio(w: Worker) -> Dict[str, Any]:
    import asyncio

    counters, idx = w.counters, w.idx
    st: List[Any] = [0, 0.0, 0.0]

    def cb(m: Any) -> Any:
        c = st[0] + 1
        st[0] = c
        t = now()
        if c == 1:
            st[1] = t
        st[2] = t
        if not c & 255:
            counters[idx] = c
        return m.respond(m.data)

    nc = await _connect_aio(w, pending_msgs_limit=1_000_000, pending_bytes_limit=-1)
    await nc.subscribe(w.subject, queue="jetwire-bench", cb=cb)
    await nc.flush()
    w.ready()
    await w.await_start()
    while not w.stop_ev.is_set():
        counters[idx] = st[0]
        if w.group_total and w.group_done():
            break
        await asyncio.sleep(0.01)
    await nc.flush()
    counters[idx] = st[0]
    await nc.close()
    return w.result(st[0], st[1], st[2])


async def jspub_aio(w: Worker) -> Dict[str, Any]:
    nc = await _connect_aio(w)
    js = nc.jetstream(timeout=w.timeout)
    pub, subj, payload, n, counters, idx = js.publish, w.subject, w.payload, w.n, w.counters, w.idx
    lat: List[float] = []
    add = lat.append
    w.ready()
    await w.await_start()
    t0 = now()
    for i in range(n):
        a = now()
        await pub(subj, payload)
        add(now() - a)
        if not i & 255:
            counters[idx] = i + 1
    t1 = now()
    counters[idx] = n
    await nc.close()
    return w.result(n, t0, t1, latencies=lat)


async def jspubasync_aio(w: Worker) -> Dict[str, Any]:
    nc = await _connect_aio(w)
    js = nc.jetstream(timeout=w.timeout, publish_async_max_pending=w.spec["window"])
    pub, subj, payload, n, counters, idx = js.publish_async, w.subject, w.payload, w.n, w.counters, w.idx
    futs: List[Any] = []
    add = futs.append
    w.ready()
    await w.await_start()
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


async def jsfetch_aio(w: Worker) -> Dict[str, Any]:
    nc = await _connect_aio(w)
    js = nc.jetstream(timeout=w.timeout)
    c = await js.consumer(w.spec["stream"], w.spec["consumer"])
    batch, counters, idx, size = w.spec["batch"], w.counters, w.idx, w.size
    acks = _ack_mode(w)
    got = bad = 0
    w.ready()
    await w.await_start()
    t0 = last = now()
    empty_since = None
    while not w.group_done():
        b = await c.fetch(batch, max_wait=w.spec.get("fetch_wait", 1.0))
        k = 0
        m = None
        async for m in b:
            k += 1
            if len(m.data) != size:
                bad += 1
            if acks == "explicit":
                await m.ack()
        if k:
            if acks == "all" and m is not None:
                await m.ack()
            got += k
            last = now()
            counters[idx] = got
            empty_since = None
        else:
            t = now()
            empty_since = empty_since or t
            if t - max(empty_since, last) > w.grace:
                break
    if acks != "none":
        await nc.flush(timeout=30)
        last = now() if got else last
    await nc.close()
    return w.result(got, t0, last, bad=bad)


async def jsconsume_aio(w: Worker) -> Dict[str, Any]:
    nc = await _connect_aio(w)
    js = nc.jetstream(timeout=w.timeout)
    counters, idx, size = w.counters, w.idx, w.size
    acks = _ack_mode(w)
    st: List[Any] = [0, 0.0, 0.0, 0]
    last: List[Any] = [None]

    def count(m: Any) -> int:
        c = st[0] + 1
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

    if acks == "none":
        def cb(m: Any) -> None:
            count(m)
    else:
        async def cb(m: Any) -> None:  # type: ignore[misc]
            c = count(m)
            last[0] = m
            if acks == "explicit" or not c & 255:
                await m.ack()

    ordered = w.spec["role"] == "jsordered"
    if ordered:
        con = await js.ordered_consumer(w.spec["stream"], deliver_policy="by_start_sequence",
                                        opt_start_seq=w.spec["start_seq"])
    else:
        con = await js.consumer(w.spec["stream"], w.spec["consumer"])
    w.ready()
    await w.await_start()
    t0 = now()
    cc = await con.consume(cb, max_messages=w.spec["batch"])
    if ordered:
        await w.await_until(lambda: st[0] >= w.expected, lambda: st[0])
    else:
        await w.await_until(lambda: (counters.__setitem__(idx, st[0]) or w.group_done()), lambda: st[0])
    cc.stop()
    counters[idx] = st[0]
    if acks == "all" and last[0] is not None:
        await last[0].ack()  # AckAll: the newest delivery acknowledges everything before it
    if acks != "none":
        await nc.flush(timeout=30)
    await nc.close()
    return w.result(st[0], st[1] or t0, st[2] or t0, bad=st[3])


async def kvput_aio(w: Worker) -> Dict[str, Any]:
    nc = await _connect_aio(w)
    js = nc.jetstream(timeout=w.timeout)
    kv = await js.key_value(w.spec["bucket"])
    put, payload, n, counters, idx = kv.put, w.payload, w.n, w.counters, w.idx
    prefix = f"{w.spec['key_prefix']}.{w.idx}"
    lat: List[float] = []
    add = lat.append
    w.ready()
    await w.await_start()
    t0 = now()
    for i in range(n):
        a = now()
        await put(f"{prefix}.{i}", payload)
        add(now() - a)
        if not i & 255:
            counters[idx] = i + 1
    t1 = now()
    counters[idx] = n
    await nc.close()
    return w.result(n, t0, t1, latencies=lat)


async def kvget_aio(w: Worker) -> Dict[str, Any]:
    nc = await _connect_aio(w)
    js = nc.jetstream(timeout=w.timeout)
    kv = await js.key_value(w.spec["bucket"])
    get, n, counters, idx, size = kv.get, w.n, w.counters, w.idx, w.size
    prefix, nkeys, off = w.spec["key_prefix"], w.spec["nkeys"], w.spec.get("offset", 0)
    keys = [f"{prefix}.{(off + i) % nkeys}" for i in range(min(n, nkeys))]
    nk = len(keys)
    lat: List[float] = []
    add = lat.append
    bad = 0
    w.ready()
    await w.await_start()
    t0 = now()
    for i in range(n):
        a = now()
        e = await get(keys[i % nk])
        add(now() - a)
        if len(e.value) != size:
            bad += 1
        if not i & 255:
            counters[idx] = i + 1
    t1 = now()
    counters[idx] = n
    await nc.close()
    return w.result(n, t0, t1, latencies=lat, bad=bad)


ROLES: Dict[str, Dict[str, Callable[[Worker], Any]]] = {
    "sync": {
        "pub": pub_sync, "sub": sub_sync, "req": req_sync, "rep": rep_sync,
        "jspub": jspub_sync, "jspubasync": jspubasync_sync, "jsfetch": jsfetch_sync,
        "jsconsume": jsconsume_sync, "jsordered": jsconsume_sync,
        "kvput": kvput_sync, "kvget": kvget_sync,
    },
    "aio": {
        "pub": pub_aio, "sub": sub_aio, "req": req_aio, "rep": rep_aio,
        "jspub": jspub_aio, "jspubasync": jspubasync_aio, "jsfetch": jsfetch_aio,
        "jsconsume": jsconsume_aio, "jsordered": jsconsume_aio,
        "kvput": kvput_aio, "kvget": kvget_aio,
    },
}


def worker_main(spec: Dict[str, Any], counters: Any, queue: Any, start_ev: Any, stop_ev: Any) -> None:
    """Entry point of a worker process (``multiprocessing`` target)."""
    w = Worker(spec, counters, queue, start_ev, stop_ev)
    try:
        fn = ROLES[spec["flavour"]][spec["role"]]
        if spec["flavour"] == "aio":
            import jetwire.aio

            res = jetwire.aio.run(fn(w))
        else:
            res = fn(w)
        queue.put(("done", w.idx, res))
    except KeyboardInterrupt:
        queue.put(("error", w.idx, "interrupted"))
    except BaseException as exc:  # report, never a traceback on the terminal
        detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        if spec.get("debug"):
            detail += "\n" + traceback.format_exc()
        queue.put(("error", w.idx, detail))

