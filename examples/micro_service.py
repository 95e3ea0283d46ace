"""A small NATS service (ADR-32, like nats.go's ``micro``) and a client calling it.

    python examples/micro_service.py                               # starts its own nats-server
    python examples/micro_service.py --server nats://127.0.0.1:4222
    jetwire micro ls -s nats://127.0.0.1:4222                       # while it runs (--linger 30)

The service ``calc`` has a ``math`` group with two endpoints, ``math.add`` (JSON in,
JSON out) and ``math.div`` (answers a service error for a division by zero), and counts
what it handled in its own stats data. The client (another connection) discovers it,
calls it, gets a typed ``ServiceError`` back for the bad request and reads its stats.
The service runs on ``jetwire.aio`` with coroutine handlers; the blocking ``jetwire.micro``
has the same names.
"""
from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

import orjson

import jetwire.aio
from jetwire.aio import micro


async def run_service(nc: Any) -> micro.Service:
    handled = {"add": 0, "div": 0}

    async def add(req: micro.Request) -> None:
        args = orjson.loads(req.data)
        handled["add"] += 1
        await req.respond_json({"result": sum(args)})

    async def div(req: micro.Request) -> None:
        a, b = orjson.loads(req.data)
        handled["div"] += 1
        if b == 0:
            await req.respond_error("400", "division by zero")  # counts as an error in the stats
            return
        await req.respond_json({"result": a / b})

    svc = await micro.add_service(nc, name="calc", version="1.0.0", description="adds and divides",
                                  metadata={"example": "yes"},
                                  stats_handler=lambda ep: {"handled": handled.get(ep.name, 0)})
    math = svc.add_group("math")
    await math.add_endpoint("add", add, metadata={"input": "[numbers]"})
    await math.add_endpoint("div", div, metadata={"input": "[a, b]"})
    return svc


async def run_client(nc: Any) -> None:
    for info in await micro.info(nc, "calc"):
        print(f"found {info.name} {info.version} ({info.id}): "
              + ", ".join(f"{e.subject} [queue {e.queue_group}]" for e in info.endpoints))

    reply = await micro.request(nc, "math.add", orjson.dumps([1, 2, 3]))
    print("math.add [1, 2, 3] ->", orjson.loads(reply.data)["result"])
    reply = await micro.request(nc, "math.div", orjson.dumps([1, 4]))
    print("math.div [1, 4]    ->", orjson.loads(reply.data)["result"])
    try:
        await micro.request(nc, "math.div", orjson.dumps([1, 0]))
    except jetwire.aio.ServiceError as err:
        print(f"math.div [1, 0]    -> service error {err.code}: {err.description}")

    for st in await micro.stats(nc, "calc"):
        for ep in st.endpoints:
            print(f"stats {ep.name}: {ep.num_requests} requests, {ep.num_errors} errors, "
                  f"average {ep.average_processing_time * 1e6:.0f} us, data {ep.data}")


async def main(server: str | None, linger: float) -> None:
    local = None
    if server is None:
        from jetwire.testing import NatsServer

        local = NatsServer()
        local.start()
        server = local.url
    try:
        service_conn = await jetwire.aio.connect(server, name="calc-service")
        client_conn = await jetwire.aio.connect(server, name="calc-client")
        async with await run_service(service_conn) as svc:
            await run_client(client_conn)
            if linger:
                print(f"service {svc.id} answers on {server} for {linger:g}s more")
                await asyncio.sleep(linger)
        print("service stopped:", svc.stopped)
        await client_conn.close()
        await service_conn.close()
    finally:
        if local is not None:
            local.stop()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--server", default=None, help="a running server (default: start one)")
    ap.add_argument("--linger", type=float, default=0.0, help="keep the service up this many seconds")
    args = ap.parse_args()
    jetwire.aio.run(main(args.server, args.linger))
    sys.exit(0)
