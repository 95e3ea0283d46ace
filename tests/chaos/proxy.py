"""A loopback TCP fault proxy between a client and a server (asyncio, on its own thread).

``FaultProxy(host, port).start()`` listens on a free loopback port (``proxy.url``); every
connection accepted is paired with a new connection to the target, and bytes are pumped
both ways, through the faults currently switched on. Every method is thread-safe, so
tests of both flavours drive the same proxy:

- ``trickle(True, delay=0.0)``: pass bytes one at a time (one write, and one drain, per
  byte; ``delay`` seconds between two bytes: a server dribbling its INFO);
- ``stall(seconds=None)``: stop forwarding in both directions (``resume()``, or after
  ``seconds``); the connections stay open, nothing moves;
- ``drop("up" | "down" | None)``: discard what flows in one direction (``up``: client to
  server, ``down``: server to client), the other keeps flowing;
- ``cut_mid_frame(direction="down")``: forward half of the next chunk in that
  direction, then reset every connection (the peer sees a frame cut in the middle);
- ``cut()``: reset every connection now;
- ``inject(data, direction="down")``: write ``data`` into the stream at once;
- ``close_after(pattern, direction="down")``: from now on (until ``heal()``), each
  connection is reset right after a chunk holding ``pattern`` was forwarded in that
  direction (a server that closes right after its PONG: ``close_after(b"PONG")``);
- ``latency(seconds)``: delay every write by a fixed latency.

Counters (``accepted``, ``bytes_in[d]``, ``bytes_out[d]``, ``writes[d]``) and the first
MiB forwarded in each direction (``captured[d]``, every connection's in turn) let tests
check what happened.
"""
from __future__ import annotations

import asyncio
import socket
import threading
from typing import Any

UP, DOWN = "up", "down"


class _Pair:
    def __init__(self, cr: asyncio.StreamReader, cw: asyncio.StreamWriter,
                 sr: asyncio.StreamReader, sw: asyncio.StreamWriter) -> None:
        self.readers = {UP: cr, DOWN: sr}
        self.writers = {UP: sw, DOWN: cw}  # where the bytes of a direction go
        self.tasks: list = []

    def abort(self) -> None:
        for w in self.writers.values():
            w.transport.abort()


class FaultProxy:
    """See the module docstring."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.host = "127.0.0.1"
        self.port = 0
        self.accepted = 0
        self.bytes_in = {UP: 0, DOWN: 0}
        self.bytes_out = {UP: 0, DOWN: 0}
        self.writes = {UP: 0, DOWN: 0}
        self._trickle = False
        self._trickle_delay = 0.0
        self.captured = {UP: bytearray(), DOWN: bytearray()}
        self._latency = 0.0
        self._drop: str | None = None
        self._cut_next: str | None = None
        self._close_after: tuple[bytes, str] | None = None
        self._pairs: set = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.AbstractServer | None = None
        self._running: asyncio.Event | None = None  # set: bytes flow; clear: stalled
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle
    @property
    def url(self) -> str:
        return f"nats://{self.host}:{self.port}"

    def start(self) -> FaultProxy:
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()

        def run() -> None:
            assert self._loop is not None
            asyncio.set_event_loop(self._loop)
            self._loop.run_until_complete(self._listen())
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="fault-proxy", daemon=True)
        self._thread.start()
        assert ready.wait(5), "fault proxy did not start"
        return self

    async def _listen(self) -> None:
        self._running = asyncio.Event()
        self._running.set()
        self._server = await asyncio.start_server(self._accept, self.host, 0)
        self.port = self._server.sockets[0].getsockname()[1]

    def stop(self) -> None:
        if self._loop is None or self._loop.is_closed():
            return

        async def shutdown() -> None:
            assert self._server is not None
            self._server.close()
            for p in list(self._pairs):
                p.abort()
                for t in p.tasks:
                    t.cancel()
            await asyncio.sleep(0)

        self._call(shutdown())
        self._loop.call_soon_threadsafe(self._loop.stop)
        assert self._thread is not None
        self._thread.join(5)
        self._loop.close()

    def __enter__(self) -> FaultProxy:
        return self.start() if self._loop is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _call(self, coro: Any, timeout: float = 5.0) -> Any:
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    # ------------------------------------------------------------------ faults
    def trickle(self, on: bool = True, delay: float = 0.0) -> None:
        """Pass bytes one at a time, ``delay`` seconds apart (``False``: whole chunks again)."""
        self._trickle = on
        self._trickle_delay = delay

    def latency(self, seconds: float) -> None:
        """Delay every write by ``seconds`` (0: none)."""
        self._latency = seconds

    def drop(self, direction: str | None) -> None:
        """Discard the bytes of one direction (``"up"``, ``"down"``), or none (``None``)."""
        assert direction in (UP, DOWN, None)
        self._drop = direction

    def stall(self, seconds: float | None = None) -> None:
        """Stop forwarding both ways, until :meth:`resume` or for ``seconds``."""
        assert self._loop is not None and self._running is not None
        self._loop.call_soon_threadsafe(self._running.clear)
        if seconds is not None:
            self._loop.call_soon_threadsafe(self._loop.call_later, seconds, self._running.set)

    def resume(self) -> None:
        assert self._loop is not None and self._running is not None
        self._loop.call_soon_threadsafe(self._running.set)

    def heal(self) -> None:
        """Every fault off: no trickle, latency, drop, stall, pending cut or close_after."""
        self._trickle = False
        self._trickle_delay = 0.0
        self._latency = 0.0
        self._drop = None
        self._cut_next = None
        self._close_after = None
        self.resume()

    def cut(self) -> None:
        """Reset every open connection now."""
        async def go() -> None:
            for p in list(self._pairs):
                p.abort()
        self._call(go())

    def cut_mid_frame(self, direction: str = DOWN) -> None:
        """Forward half of the next chunk going ``direction``, then reset every connection."""
        assert direction in (UP, DOWN)
        self._cut_next = direction

    def close_after(self, pattern: bytes, direction: str = DOWN) -> None:
        self._close_after = (pattern, direction)

    def inject(self, data: bytes, direction: str = DOWN) -> None:
        """Write ``data`` into every open connection's ``direction`` at once."""
        async def go() -> None:
            for p in list(self._pairs):
                w = p.writers[direction]
                w.write(data)
                await w.drain()
        self._call(go())

    @property
    def open_connections(self) -> int:
        return len(self._pairs)

    # ------------------------------------------------------------------ pumping
    async def _accept(self, cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        self.accepted += 1
        try:
            sr, sw = await asyncio.open_connection(*self.target)
        except OSError:
            cw.transport.abort()
            return
        for w in (cw, sw):
            sock = w.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pair = _Pair(cr, cw, sr, sw)
        self._pairs.add(pair)
        pair.tasks = [asyncio.ensure_future(self._pump(pair, d)) for d in (UP, DOWN)]
        await asyncio.gather(*pair.tasks, return_exceptions=True)
        self._pairs.discard(pair)
        pair.abort()

    async def _pump(self, pair: _Pair, direction: str) -> None:
        assert self._running is not None
        reader, writer = pair.readers[direction], pair.writers[direction]
        try:
            while True:
                await self._running.wait()
                data = await reader.read(65536)
                if not data:
                    break
                self.bytes_in[direction] += len(data)
                seen = self.captured[direction]
                if len(seen) < 1 << 20:
                    seen += data
                await self._running.wait()  # a stall that began while we were reading
                if self._drop == direction:
                    continue
                if self._cut_next == direction and len(data) >= 2:
                    self._cut_next = None
                    self.bytes_out[direction] += len(data) // 2  # counted first: a peer
                    self.writes[direction] += 1                   # may look at once
                    writer.write(data[: len(data) // 2])
                    await writer.drain()
                    for p in list(self._pairs):
                        p.abort()
                    break
                if self._latency:
                    await asyncio.sleep(self._latency)
                if self._trickle:
                    for i in range(len(data)):
                        if i and self._trickle_delay:
                            await asyncio.sleep(self._trickle_delay)
                        self.writes[direction] += 1
                        self.bytes_out[direction] += 1
                        writer.write(data[i:i + 1])
                        await writer.drain()
                else:
                    self.writes[direction] += 1
                    self.bytes_out[direction] += len(data)
                    writer.write(data)
                    await writer.drain()
                after = self._close_after
                if after is not None and after[1] == direction and after[0] in data:
                    pair.abort()  # this connection only: right after what was forwarded
                    break
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            pair.abort()
