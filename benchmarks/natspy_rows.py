"""The nats-py rows of BENCHMARKS.md: the peer jetwire is compared with (not part of the
jetwire package, which never imports nats-py).

    python benchmarks/natspy_rows.py <row> nats-py <url> <monitor-url> [scale]

runs one row in this process through jetwire's row harness (``jetwire.cli.rows``: the
same set-up and accounting as jetwire's rows) and prints one JSON line.
``jetwire bench compare`` and ``benchmarks/compare.py`` run it for the nats-py column.

The rows themselves are not here: they are written once, in ``jetwire.cli.rows_aio``,
as functions of a client object. This file is that object for nats-py: the few calls
in which nats-py differs from jetwire (connecting, its coroutine callbacks, waiting for
async publish acks, pulling one batch).
"""
from __future__ import annotations

import asyncio
import sys
from typing import Any

from jetwire.cli.rows import main
from jetwire.cli.rows_aio import Signal, stamp_age

PENDING = 64 * 1024 * 1024  # nats-py's client-side buffer for a fast publisher


class NatsPy:
    """nats-py as the rows use it (the methods of ``jetwire.cli.rows_aio.Client``)."""

    name = "nats-py"

    async def connect(self, url: str, publisher: bool = False) -> Any:
        import nats

        if publisher:  # without a large buffer nats-py flushes (and waits) every 2 MiB
            return await nats.connect(url, pending_size=PENDING)
        return await nats.connect(url)

    def tally(self, n: int) -> tuple[Any, Any, list[int]]:
        done = Signal()
        count = [0]

        async def cb(msg: Any) -> None:  # nats-py takes coroutine callbacks only
            count[0] += 1
            if count[0] == n:
                done.set()

        return cb, done, count

    def stamps(self, n: int) -> tuple[Any, Any, list[int], list[float]]:
        done = Signal()
        count = [0]
        lat: list[float] = []

        async def cb(msg: Any) -> None:
            lat.append(stamp_age(msg.data))
            count[0] += 1
            if count[0] == n:
                done.set()

        return cb, done, count, lat

    async def acks_complete(self, js: Any, timeout: float) -> None:
        await asyncio.wait_for(js.publish_async_completed(), timeout)

    async def pull_consumer(self, js: Any, stream: str, consumer: str) -> Any:
        return await js.pull_subscribe_bind(consumer, stream=stream)

    async def take(self, psub: Any, batch: int, wait: float, ack: bool) -> int:
        from nats.errors import TimeoutError as NatsTimeout

        try:
            msgs = await psub.fetch(batch, timeout=wait)
        except NatsTimeout:
            return 0
        if ack:
            for m in msgs:
                await m.ack()
        return len(msgs)

    async def echo_service(self, nc: Any, name: str, subject: str) -> Any:
        import nats.micro

        async def echo(req: Any) -> None:
            await req.respond(req.data)

        svc = await nats.micro.add_service(nc, name=name, version="1.0.0")
        await svc.add_endpoint(name="echo", subject=subject, handler=echo)
        await nc.flush()  # nats-py's add_endpoint does not wait for the server to have the subscription
        return svc

    def js_msgs(self, subjects: list[str]) -> list[Any]:
        from nats.aio.msg import Msg

        return [Msg(None, "bench.m", s, b"", None) for s in subjects]

    def parse_metadata(self, subject: str) -> Any:
        from nats.aio.msg import Msg

        return Msg.Metadata._from_reply(subject)


CLIENT = NatsPy()

if __name__ == "__main__":
    sys.exit(main(peer=CLIENT))
