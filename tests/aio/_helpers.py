"""Helpers shared by the tests against a real nats-server: unique names, callback
recorders, stream makers and fillers (asyncio source; the blocking twin is generated)."""
from __future__ import annotations

import time
import uuid

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims


def uniq(prefix: str = "T") -> str:
    """A name no other test uses (streams, buckets, consumers)."""
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


async def wait_until(pred, timeout: float = 5.0) -> bool:
    """Poll ``pred()`` (plain, or a coroutine function in aio) until it is true or
    ``timeout`` seconds have passed; its last value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await prims.call(pred):
            return True
        await prims.sleep(0.02)
    return bool(await prims.call(pred))


async def acks_applied(cons, timeout: float = 5.0):
    """``cons.info()`` once it shows no ack pending (or the last one after ``timeout``):
    the server applies acks on the consumer's own goroutine, so one sent before a flush
    may not be counted yet when the PONG comes back."""
    last: list = []

    async def applied() -> bool:
        last[:] = [await cons.info()]
        return last[0].num_ack_pending == 0

    await wait_until(applied, timeout)
    return last[0]


class Collector:
    """Callback collecting messages; wakes the test when ``n`` have arrived."""

    def __init__(self, n: int = 1) -> None:
        self.n = n
        self.msgs: list = []
        self.done = prims.Signal()

    def __call__(self, msg) -> None:
        self.msgs.append(msg)
        if len(self.msgs) >= self.n:
            self.done.set()

    async def wait(self, timeout: float = 5.0) -> list:
        assert await self.done.wait(timeout), f"got {len(self.msgs)} of {self.n} messages"
        return self.msgs


class Seqs:
    """Callback recording stream sequences; wakes the test at given counts."""

    def __init__(self) -> None:
        self.seqs: list = []
        self.waits: dict = {}

    def at(self, n: int):
        sig = prims.Signal()
        self.waits[n] = sig
        if len(self.seqs) >= n:
            sig.set()
        return sig

    def __call__(self, msg) -> None:
        self.seqs.append(msg.metadata.sequence.stream)
        sig = self.waits.get(len(self.seqs))
        if sig is not None:
            sig.set()


class Errors:
    """Error callback recording what it gets."""

    def __init__(self) -> None:
        self.errors: list = []
        self.signal = prims.Signal()

    def __call__(self, err) -> None:
        self.errors.append(err)
        self.signal.set()

    async def wait_for(self, cls, timeout: float = 10.0):
        """The first error of type ``cls``, once there is one."""
        deadline = time.monotonic() + timeout
        while True:
            self.signal.clear()
            for e in self.errors:
                if isinstance(e, cls):
                    return e
            left = deadline - time.monotonic()
            assert left > 0, f"no {cls.__name__} among {self.errors!r}"
            await self.signal.wait(left)


async def fill(js, subject: str, n: int, data: bytes = b"", start: int = 0) -> None:
    """Publish ``n`` messages (``data``, or their numbers from ``start``) and wait for the acks."""
    for i in range(n):
        await js.publish_async(subject, data or b"%d" % (start + i))
    await js.publish_async_complete(timeout=30)


async def publish_when_back(js, subject: str, n: int, timeout: float = 20.0) -> None:
    """Publish ``n`` messages one by one, retrying while the server comes back."""
    deadline = time.monotonic() + timeout
    for i in range(n):
        while True:
            try:
                await js.publish(subject, b"%d" % i, timeout=1)
                break
            except jetwire.NatsError:
                assert time.monotonic() < deadline, "JetStream did not come back"
                await js._nc.flush(5)


async def new_stream(nc, n: int = 0, storage: str = "memory", data: bytes = b""):
    """A new stream on ``<name>.>`` holding ``n`` messages (see :func:`fill`) on
    ``<name>.a``: ``(js, name)``."""
    js = nc.jetstream()
    name = uniq("S")
    await js.create_stream(name=name, subjects=[f"{name}.>"], storage=storage)
    if n:
        await fill(js, f"{name}.a", n, data)
    return js, name


async def drain_initial(w, timeout: float = 5.0) -> list:
    """What a watcher yields up to (not including) its None marker."""
    out = []
    while True:
        e = await w.next(timeout)
        if e is None:
            return out
        out.append(e)


async def server_subscriptions(server, nc) -> int:
    """How many subscriptions the server holds for connection ``nc`` (monitoring ``connz``)."""
    await nc.flush(5)
    conns = server.monitor("connz", subs=1, cid=nc.client_id)["connections"]
    assert len(conns) == 1, conns
    return int(conns[0]["subscriptions"])
