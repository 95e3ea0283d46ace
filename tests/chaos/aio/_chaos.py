"""Helpers of the chaos suite (asyncio source; the blocking twin is generated): the
flavour's name, running a blocking server operation without stopping the event loop,
a connection that reconnects fast, the restart loop and reading a stream back."""
from __future__ import annotations

import asyncio  # aio-only
import time
from collections.abc import Callable
from typing import Any

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims

FLAVOUR = "aio"  # aio-only
# sync-only: FLAVOUR = "sync"


async def off_loop(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` (a blocking server operation) without blocking the event loop."""
    return await asyncio.to_thread(fn, *args)  # aio-only
    # sync-only: return fn(*args)


class Conn:
    """Connection events a scenario waits on and measures."""

    def __init__(self) -> None:
        self.disconnected = prims.Signal()
        self.reconnected = prims.Signal()
        self.errors: list = []
        self.lost_at: float | None = None
        self.recoveries: list = []  # seconds from the server being ready to the client back

    def on_disconnected(self) -> None:
        self.lost_at = time.monotonic()
        self.disconnected.set()

    def on_reconnected(self) -> None:
        self.reconnected.set()

    def on_error(self, err: Any) -> None:
        self.errors.append(err)

    async def connect(self, url: Any, **kw: Any) -> Any:
        opts: dict = dict(reconnect_time_wait=0.05, max_reconnect_attempts=-1, reconnect_jitter=0.0,
                          disconnected_cb=self.on_disconnected, reconnected_cb=self.on_reconnected,
                          error_cb=self.on_error)
        opts.update(kw)
        return await jetwire.connect(url, **opts)

    async def wait_reconnected(self, timeout: float = 20.0) -> None:
        assert await self.reconnected.wait(timeout), "the client did not reconnect"
        self.reconnected.clear()


async def bounce(server: Any, conn: Conn, kill: bool) -> None:
    """Stop the server (``kill``: SIGKILL, else a clean shutdown), start it again on the
    same port and store, and wait until the client is back."""
    conn.reconnected.clear()
    await off_loop(server.restart, 10.0, kill)
    ready = time.monotonic()
    await conn.wait_reconnected()
    conn.recoveries.append(max(0.0, time.monotonic() - ready))


def kinds(n: int) -> list:
    """``n`` bounces alternating kill -9 and clean restarts, kill first."""
    return [i % 2 == 0 for i in range(n)]


async def read_stream(js: Any, stream: str, expect: int, timeout: float = 30.0) -> list:
    """Every message of ``stream`` (an ordered consumer), once ``expect`` have come."""
    oc = await js.ordered_consumer(stream)
    out: list = []
    deadline = time.monotonic() + timeout
    while len(out) < expect and time.monotonic() < deadline:
        batch = await oc.fetch(min(1000, expect - len(out)), max_wait=2)
        async for m in batch:
            out.append(m)
    return out


async def retry(op: Callable[[], Any], timeout: float = 20.0) -> Any:
    """``await op()`` again while it fails with a NatsError (a server coming back)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await op()
        except jetwire.NatsError:
            if time.monotonic() > deadline:
                raise
            await prims.sleep(0.05)
