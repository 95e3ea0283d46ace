"""asyncio byte mover: opens the socket (TLS included), reads INFO, feeds the core, writes buffers."""
from __future__ import annotations

import asyncio
import inspect
import ssl
import time
import weakref
from collections import deque
from collections.abc import Callable, Sized
from typing import Any

from .. import _impl
from .._typing import JSONObject
from ..connection.core import ConnectionCore, tls_state
from ..connection.hold import WriteHold
from ..errors import ProtocolError
from ..errors import TimeoutError as NatsTimeoutError
from ._prims import NO_LOCK

_DONE = _impl.DONE  # an awaitable that is already done

_INFO_LIMIT = 64 * 1024
_perf = time.perf_counter
_ALPHA = 0.125  # Spinner: weight of each new reply time in the moving average


def handshake_timeout(host: str, port: int, timeout: float) -> str:
    """The text of the error when dialling, TLS and the server's INFO took longer than
    ``connect_timeout``."""
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return f"timed out after {timeout:g}s connecting to {where} (connect_timeout)"


class _Proto(asyncio.Protocol):
    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.head = bytearray()
        self.head_fut: asyncio.Future[None] | None = None
        self.on_data: Callable[[bytes], None] | None = None
        self.on_lost: Callable[[BaseException | None], None] | None = None
        self.paused = False
        self.resume_fut: asyncio.Future[None] | None = None
        self.lost = False
        self.on_flow: Callable[[bool], None] | None = None  # told of pause/resume_writing

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        on_data = self.on_data
        if on_data is not None:
            on_data(data)
            return
        self.head += data
        fut = self.head_fut
        if fut is not None and not fut.done() and (b"\r\n" in self.head or len(self.head) > _INFO_LIMIT):
            fut.set_result(None)

    def connection_lost(self, exc: BaseException | None) -> None:
        self.lost = True
        fut = self.head_fut
        if fut is not None and not fut.done():
            fut.set_exception(ConnectionError("connection closed by server"))
        if self.resume_fut is not None and not self.resume_fut.done():
            self.resume_fut.set_result(None)
        if self.on_lost is not None:
            self.on_lost(exc)

    def pause_writing(self) -> None:
        self.paused = True
        if self.on_flow is not None:
            self.on_flow(True)

    def resume_writing(self) -> None:
        self.paused = False
        if self.on_flow is not None:
            self.on_flow(False)
        if self.resume_fut is not None and not self.resume_fut.done():
            self.resume_fut.set_result(None)

    def eof_received(self) -> bool:
        return False


class Transport:
    """One TCP (optionally TLS) connection to a server. ``socket_factory(host, port,
    timeout)`` (plain or coroutine function) dials instead of the default: it returns a
    connected socket (e.g. through a proxy)."""

    def __init__(self, socket_factory: Callable[..., Any] | None = None) -> None:
        self._socket_factory = socket_factory
        self._proto = _Proto()
        self._tr: asyncio.Transport | None = None
        self._loop = asyncio.get_running_loop()
        self._seen = 0  # how much of the protocol's head open() has returned
        self.closed = False

    async def open(self, host: str, port: int, timeout: float, tls: ssl.SSLContext | None,
                   tls_first: bool, tls_hostname: str | None,
                   need_tls: Callable[[bytes], bool]) -> bytes:
        """Connect and return the server's first line (INFO ...\\r\\n) plus anything after it."""
        loop = self._loop
        proto = self._proto
        proto.head_fut = loop.create_future()

        async def go() -> bytes:
            tr = await self._dial(host, port, timeout, tls if tls_first else None, tls_hostname)
            await proto.head_fut  # type: ignore[misc]
            head = bytes(proto.head)
            self._seen = len(head)  # what arrives after this, before start(), start() feeds
            if b"\r\n" not in head:
                raise ProtocolError(f"no INFO line from server: {head[:64]!r}")
            if not tls_first and need_tls(head):
                self._seen = 0  # the head is cleared: what arrives in TLS is new
                # without a context, the server requires TLS: the system's trust store (as nats.go)
                ctx = tls if tls is not None else ssl.create_default_context()
                proto.head.clear()
                newtr = await loop.start_tls(tr, proto, ctx, server_hostname=tls_hostname or host)
                proto.transport = newtr
                self._tr = newtr
            return head

        try:
            return await asyncio.wait_for(go(), timeout)
        except TimeoutError as exc:
            self.close()
            if str(exc):  # the socket's own (e.g. ETIMEDOUT): it says what it is
                raise
            # wait_for's has no text, and NoServersError shows the last attempt's
            raise NatsTimeoutError(handshake_timeout(host, port, timeout)) from None
        except BaseException:
            self.close()
            raise

    async def _dial(self, host: str, port: int, timeout: float, tls: ssl.SSLContext | None,
                    tls_hostname: str | None) -> asyncio.Transport:
        """Open the socket (TLS at once when ``tls`` is given); what arrives goes to the
        protocol (``_proto``)."""
        loop = self._loop
        proto = self._proto
        where: dict[str, Any] = {"host": host, "port": port}
        if self._socket_factory is not None:
            r = self._socket_factory(host, port, timeout)
            sock = await r if inspect.isawaitable(r) else r
            sock.setblocking(False)
            where = {"sock": sock}
        if tls is not None:
            tr, _ = await loop.create_connection(lambda: proto, ssl=tls,
                                                 server_hostname=tls_hostname or host, **where)
        else:
            tr, _ = await loop.create_connection(lambda: proto, **where)
        self._tr = tr
        return tr

    def start(self, on_data: Callable[[bytes], None], on_lost: Callable[[BaseException | None], None],
              rest: bytes) -> None:
        proto = self._proto
        # what came after the INFO while the client was answering it (an -ERR, a PING) is
        # in the head still: it goes first
        late = bytes(proto.head[self._seen:])
        proto.head.clear()
        proto.on_data = on_data
        proto.on_lost = on_lost
        if rest or late:
            on_data(rest + late)
        if proto.lost:
            on_lost(None)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        tr = self._tr
        if tr is None or self.closed:
            raise ConnectionError("not connected")
        self._put(tr, data)

    @staticmethod
    def _put(tr: asyncio.Transport, data: bytes | bytearray | memoryview) -> None:
        """Hand ``data`` to ``tr``. A handle that closed under us (the peer refused and
        hung up; uvloop says so with a ``RuntimeError``) is a ``ConnectionError``, as any
        other closed socket, so callers catch ``OSError`` alone."""
        try:
            tr.write(data)
        except RuntimeError as exc:
            raise ConnectionError(f"not connected: {exc}") from exc

    def drained(self) -> asyncio.Future[None]:
        """A future done once writing resumes (at once when it is not paused). Each
        caller gets its own while paused: cancelling one waiter cancels no other."""
        proto = self._proto
        fut = proto.resume_fut
        if fut is None or fut.done():
            fut = self._loop.create_future()
            if proto.paused and not proto.lost:
                proto.resume_fut = fut
            else:
                fut.set_result(None)
                return fut
        return asyncio.shield(fut)

    async def drain(self) -> None:
        proto = self._proto
        if proto.paused and not proto.lost:
            await self.drained()

    async def flushed(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds until everything written has reached the kernel
        (the transport's buffer is empty): False when it has not (a stalled path)."""
        tr = self._tr
        proto = self._proto
        if tr is None or proto.lost or tr.get_write_buffer_size() == 0:
            return True
        tr.set_write_buffer_limits(high=0)  # paused until empty, resumed when empty
        fut = self.drained()
        if fut.done():
            return True
        done, _ = await asyncio.wait((fut,), timeout=timeout)
        return bool(done)

    @property
    def write_paused(self) -> bool:
        return self._proto.paused

    @property
    def tls_info(self) -> JSONObject | None:
        """The TLS session (``connection.core.tls_state``), None without TLS."""
        tr = self._tr
        if tr is None or self.closed:
            return None
        return tls_state(tr.get_extra_info("ssl_object"))

    def set_flow_cb(self, cb: Callable[[bool], None] | None) -> None:
        """``cb(True)`` when writing pauses (the transport's buffer is full), ``cb(False)`` on resume."""
        self._proto.on_flow = cb

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._proto.on_data = None
        tr = self._tr
        if tr is not None:
            tr.close()

    def abort(self) -> None:
        self.closed = True
        self._proto.on_data = None
        tr = self._tr
        if tr is not None:
            tr.abort()


FLUSH_THRESHOLD = 64 * 1024


class Writer(WriteHold):
    """Moves the core's write buffer (``core.outbox``) to the transport once per loop turn
    (or at once when large); ``hold`` (``WriteHold``) keeps a fetch's acks together.

    It wires the outbox's fast path: ``on_first`` schedules one flush for the end of the
    loop turn, ``on_full`` flushes inline at ``FLUSH_THRESHOLD`` bytes, and
    ``outbox.congested`` follows the transport's pause/resume_writing so that a publish
    into a full transport takes the slow path (which waits for the drain).
    """

    def __init__(self, core: ConnectionCore, write_timeout: float | None = None,
                 on_stuck: Callable[[BaseException], None] | None = None) -> None:
        self.core = core
        self.outbox = outbox = core.outbox
        self.tr: Transport | None = None
        self.pending = False
        self.loop = asyncio.get_running_loop()
        self.lock = NO_LOCK
        # a transport that stays paused (the peer reads nothing) this long fails the connection
        self.write_timeout = write_timeout
        self.on_stuck = on_stuck
        self._stuck_timer: asyncio.TimerHandle | None = None
        outbox.threshold = FLUSH_THRESHOLD
        outbox.on_first = self.kick
        outbox.on_full = self.flush_now
        outbox.lock = None  # one thread: nothing to guard
        self.on_write: Callable[[], None] | None = None  # told after each write (Spinner.wrote)
        self.init_hold()

    def set_transport(self, tr: Transport | None) -> None:
        old = self.tr
        if old is not None and old is not tr:
            old.set_flow_cb(None)
            if self._stuck_timer is not None:
                self._stuck_timer.cancel()
                self._stuck_timer = None
        self.tr = tr
        if tr is None:
            self.outbox.congested = False
        else:
            tr.set_flow_cb(self._on_flow)
            self.outbox.congested = tr.write_paused

    def _on_flow(self, paused: bool) -> None:
        self.outbox.congested = paused
        timer = self._stuck_timer
        if timer is not None:
            timer.cancel()
            self._stuck_timer = None
        if paused and self.write_timeout and self.on_stuck is not None:
            self._stuck_timer = self.loop.call_later(self.write_timeout, self._stuck, self.tr)
        if not paused and self.outbox.buf:
            self.flush_now()  # what was held while paused

    def _stuck(self, tr: Transport | None) -> None:
        self._stuck_timer = None
        if tr is not None and tr is self.tr and tr.write_paused and self.on_stuck is not None:
            from ..errors import TimeoutError as NatsTimeoutError

            self.on_stuck(NatsTimeoutError(f"write stalled for {self.write_timeout}s: the server reads nothing"))

    def kick(self) -> None:
        """Bytes were appended: send them when the caller yields, or now if many."""
        if self.tr is None:
            return
        if len(self.outbox.buf) >= FLUSH_THRESHOLD:
            self.flush_now()
        elif not self.pending:
            self.pending = True
            self.loop.call_soon(self._on_turn)

    def _on_turn(self) -> None:
        self.pending = False
        self.flush_now()

    def flush_now(self, timeout: float | None = None) -> None:
        """Write what is queued to the transport (which never blocks). While the transport
        is paused (the server reads slower than we write) the bytes stay in the outbox
        and leave when it resumes: a connection lost meanwhile loses only what the
        transport holds (about its high-water mark), the outbox is sent again after the
        reconnect, as nats.go keeps its buffer. ``timeout`` (close, drain: their time
        is bounded) writes anyway."""
        tr = self.tr
        if tr is None or tr.closed or (timeout is None and tr.write_paused):
            return
        buf = self.outbox.take()
        if not buf:
            return
        try:
            tr.write(buf)
        except OSError:  # a closed handle (Transport._put), a dead socket
            pass
        on_write = self.on_write
        if on_write is not None:
            on_write()

    send_soon = flush_now  # one thread: nobody else can be writing
    send_later = kick  # at the end of the loop turn

    def deferring_thread(self) -> None:
        """One thread here: nothing to mark (the blocking flavour's timer thread)."""
        return None

    @property
    def congested(self) -> bool:
        tr = self.tr
        return tr is not None and tr.write_paused

    async def drain(self, timeout: float | None = None) -> None:
        """Return once the transport takes more bytes, or after ``timeout`` seconds."""
        tr = self.tr
        if tr is None:
            return
        if timeout is None:
            await tr.drain()
            return
        try:
            await asyncio.wait_for(tr.drain(), timeout)  # (each waiter's own shielded future)
        except TimeoutError:
            pass

    async def flushed(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for what was written to reach the kernel; False
        when it did not (closing: the transport is then aborted, not left to linger)."""
        tr = self.tr
        return True if tr is None else await tr.flushed(timeout)

    def after_publish(self) -> Any:
        """What ``publish`` returns once its message is queued: an awaitable that is
        already done, or, while the transport is congested, one done when it drains
        (the message is queued either way; awaiting it is back-pressure)."""
        tr = self.tr
        if tr is not None and tr.write_paused:
            return tr.drained()
        return _DONE

    def close(self) -> None:
        self.release()
        self.set_transport(None)  # and the stuck timer with it


class _LoopIO:
    """What the connections of one event loop last did (``Spinner``'s ``poll_io``)."""

    __slots__ = ("echo", "last_write")

    def __init__(self) -> None:
        self.last_write = 0.0
        self.echo = False  # the last read came within the poll time of a write


_LOOP_IO: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopIO] = weakref.WeakKeyDictionary()


class Spinner:
    """Keeps the event loop polling instead of sleeping while a request (or a flush's
    PING) awaits a reply that is due within ``budget`` seconds (``busy_poll``).

    A loop that sleeps in ``epoll_wait`` is woken by the kernel when the reply arrives,
    and on a VM that wake-up of an idle CPU costs tens of microseconds on each side of
    a round trip. While requests are outstanding the spinner reschedules itself with
    ``call_soon``, so the loop polls its sockets without blocking; it stops when no
    request is outstanding or ``budget`` seconds after the last one went out.

    It is adaptive: ``avg`` follows the connection's reply times (a moving average,
    each sample capped at 4x the budget), and while replies take longer than the
    budget the loop is not kept awake at all, so slow responders cost no CPU, however
    many requests are in flight. A reply's time is measured from the oldest request
    still awaiting one (``sent``, send times in order; exact when replies come in
    order), and forgotten once none is outstanding. ``budget`` 0 turns it off.
    """

    REMEMBER = 1024  # send times kept at most (requests that time out leave theirs)

    __slots__ = ("_loop", "avg", "budget", "cap", "io", "last_read", "linger", "outstanding", "pongs", "running",
                 "sent", "until")

    def __init__(self, budget: float, outstanding: dict[str, Any], pongs: Sized = (), linger: float = 0.0) -> None:
        self.budget = budget
        self.cap = 4 * budget  # the largest reply-time sample counted
        self.outstanding = outstanding  # token -> future of the requests awaiting replies
        self.pongs = pongs  # the PINGs awaiting their PONG (flush, rtt, the ping timer's)
        self.avg = 0.0  # moving average of reply times (0: none seen yet)
        self.sent: deque[float] = deque(maxlen=self.REMEMBER)  # send times, oldest first
        self.until = 0.0
        self.running = False
        self._loop: asyncio.AbstractEventLoop | None = None
        # poll_io: after I/O while traffic flows, poll for ``linger`` seconds more (0: never)
        self.linger = linger
        self.last_read = 0.0
        self.io: _LoopIO | None = None  # what every connection of this loop last did

    def _get_loop(self) -> asyncio.AbstractEventLoop:
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        return loop

    def _loop_io(self) -> _LoopIO:
        loop = self._get_loop()
        io = _LOOP_IO.get(loop)
        if io is None:
            io = _LOOP_IO[loop] = _LoopIO()
        self.io = io
        return io

    def heard(self) -> None:
        """Bytes were read: poll on while reads come within ``linger`` of each other or of
        a write on any connection of this loop (a stream, replies, a paced publisher's
        messages coming back to its subscriber)."""
        linger = self.linger
        if not linger:
            return
        io = self.io or self._loop_io()
        now = _perf()
        io.echo = echo = now - io.last_write < linger
        if echo or now - self.last_read < linger:
            self._poll_until(now + linger)
        self.last_read = now

    def wrote(self) -> None:
        """Bytes were written: poll for what answers them when the loop's last read came
        within ``linger`` of a write."""
        linger = self.linger
        if not linger:
            return
        io = self.io or self._loop_io()
        now = _perf()
        io.last_write = now
        if io.echo:
            self._poll_until(now + linger)

    def _poll_until(self, until: float) -> None:
        if until > self.until:
            self.until = until
        if not self.running:
            self.running = True
            self._get_loop().call_soon(self._tick)

    def should_spin(self) -> bool:
        """Replies usually come within the budget (or none has been seen yet)."""
        return self.budget > 0 and self.avg <= self.budget

    def arm(self) -> None:
        """A request went out: poll for its reply for up to ``budget`` seconds."""
        budget = self.budget
        if budget <= 0:
            return
        now = _perf()
        self.sent.append(now)
        if self.avg > budget:
            return
        self._poll_until(now + budget)

    def replied(self) -> None:
        """A reply arrived (and its request is no longer outstanding): fold the time since
        the oldest request went out into the average."""
        sent = self.sent
        if sent:
            sample = _perf() - sent.popleft()
            if sample > self.cap:
                sample = self.cap
            self.avg += (sample - self.avg) * _ALPHA
            if not self.outstanding and not self.pongs:
                sent.clear()  # what is left belongs to requests that timed out

    def _tick(self) -> None:
        if (self.outstanding or self.pongs or self.linger) and _perf() < self.until:
            self._loop.call_soon(self._tick)  # type: ignore[union-attr]
        else:
            self.running = False
