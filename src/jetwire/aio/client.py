"""The NATS client: the connection's driver for asyncio. This source is also the blocking
client: ``jetwire/_sync/client.py`` is generated from it by ``tools/gen_sync.py`` (never
edit the generated file).

The driver moves bytes between the flavour's transport and the sans-IO core
(:mod:`jetwire.connection.core`): ``_on_data`` feeds the core and acts on the events it
returns; publishing queues bytes in the core's outbox, which the writer sends. The layers
above (JetStream, stores, consumers, services, Spark, the CLI) use :class:`Link`
(``nc.link``), the narrow interface declared in :mod:`jetwire.connection.interface`.
"""
from __future__ import annotations

import functools
import inspect
import logging
import os
import random
import ssl
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence, Sized
from typing import (
    TYPE_CHECKING,
    Any,
    ParamSpec,
    TypeAlias,
    TypeVar,
    cast,
)

import orjson

from .. import _impl
from .._redact import redact_text
from .._typing import JSONObject
from .._units import wait_limit
from ..connection.core import (
    CLOSED,
    CONNECTED,
    CONNECTING,
    DISCONNECTED,
    DRAINING_PUBS,
    DRAINING_SUBS,
    PING,
    PONG,
    RECONNECTING,
    SUB_CLOSED,
    SUB_DRAINING,
    SUB_SLOW,
    ConnectionCore,
    InfoReceived,
    PingReceived,
    PongReceived,
    ServerError,
    SubscriptionBase,
    SubscriptionError,
    strip_pings,
)
from ..errors import (
    AuthorizationError,
    BadSubjectError,
    ConnectionClosedError,
    ConnectionLostError,
    DrainTimeoutError,
    MaxPayloadError,
    NatsError,
    NoRespondersError,
    NoServersError,
    PermissionViolationError,
    ProtocolError,
    ReconnectBufferFullError,
    SlowConsumerError,
    SubscriptionClosedError,
    TimeoutError,
    payload_size,
)
from ..jetstream.pubmux import CONTEXT_TIMEOUT
from ..msg import Msg
from ..options import Options, Server, io_poll_budget, make_options, unexpected_keyword, ws_header_list
from ..protocol.headers import HeadersInit
from . import _prims as prims
from ._transport import (
    Spinner,
    Transport,
    Writer,
)
from .iteration import MsgIteration

if TYPE_CHECKING:
    from ..connection import interface as _api
    from ..connection.interface import Cancellable, WakeSignal
    from .jetstream import JetStream

log = logging.getLogger("jetwire")

T = TypeVar("T")
_CB = TypeVar("_CB")

#: connect()'s ``error_cb``: called with an ``Exception``; in the asyncio flavour also with
#: a callback's own ``asyncio.CancelledError`` (a subscription's or a service handler's)
ErrorCallback: TypeAlias = Callable[[BaseException], object]  # aio-only
# sync-only: ErrorCallback: TypeAlias = Callable[[Exception], object]

# after the CONNECT could not be written, how long the reader may take to say why the
# server refused (a TLS alert, an -ERR) before the write's own error is raised
HANDSHAKE_REASON_WAIT = 1.0

_append_unsub = _impl.append_unsub
_encode_headers = _impl.encode_headers


class _MarkReached(Exception):
    """Raised by the subscription queue as it hands out a barrier mark (see ``_BarrierMark``)."""


class _Barrier:
    """``nc.barrier(fn)``: ``fn`` runs once each of ``n`` callback subscriptions has reached
    the mark queued behind the messages it held when the barrier was set."""

    __slots__ = ("fn", "lock", "n")

    def __init__(self, fn: Callable[[], object], n: int) -> None:
        self.fn = fn
        self.n = n
        self.lock = prims.write_lock()

    def count_down(self) -> bool:
        """One subscription got there; True for the last one (its caller runs ``fn``)."""
        with self.lock:
            self.n -= 1
            return self.n == 0


class _BarrierMark:
    """Queued behind a callback subscription's messages by ``nc.barrier()``. The queue
    hands it out like a message (``data`` empty), but it never reaches the callback:
    binding it to the connection (the queue sets ``_client`` on what it hands out, in
    the compiled code too) raises ``_MarkReached``, which ends that round of deliveries
    in ``Subscription._run_cb`` once every message before it was handled; nothing on
    the message path looks for marks. ``reach()`` counts once."""

    __slots__ = ("barrier", "done", "lock")
    data = b""

    def __init__(self, barrier: _Barrier) -> None:
        self.barrier = barrier
        self.done = False
        self.lock = prims.write_lock()

    @property
    def _client(self) -> None:
        return None

    @_client.setter
    def _client(self, value: object) -> None:
        raise _MarkReached(self)

    def reach(self) -> bool:
        """Count this mark (once): True when it completed its barrier."""
        with self.lock:
            if self.done:
                return False
            self.done = True
        return self.barrier.count_down()


class Subscription(SubscriptionBase, MsgIteration):
    """A subscription: ``next_msg()``, iteration, ``unsubscribe()``, ``drain()``,
    ``add_status_listener()``, ``set_pending_limits()``."""

    __slots__ = ()

    def add_status_listener(self, cb: Callable[[str], object]) -> Callable[[], None]:
        """``cb(status)`` (plain, or a coroutine function in aio; on the connection's
        callback dispatcher) on every change of ``sub.status``: ``"slow_consumer"`` when
        it starts dropping messages, ``"active"`` when that episode ends, ``"draining"``,
        ``"closed"`` (the last one). Returns a function that removes it."""
        if self._status_cbs is None:
            self._status_cbs = []
        return _register(self._status_cbs, cb)

    def _set_status(self, status: str) -> None:
        if status == self._status:
            return
        self._status = status
        cbs = self._status_cbs
        if cbs:
            self._client._dispatch_status(cbs, status)

    def _has_runner(self) -> bool:
        """A callback subscription (its messages go to its runner task/thread)."""
        return self._cb is not None and self._task is not None

    def _queue_mark(self, mark: _BarrierMark) -> bool:
        """Queue a barrier mark behind what is pending; False when the runner had ended
        already (the caller counts the mark itself; ``reach`` counts once)."""
        pending: deque[Any] = self._pending
        lock = self._lock
        if lock is None:
            pending.append(mark)
        else:
            with lock:
                pending.append(mark)
        self._signal.set()
        return not self._runner_done

    def _refuse(self, err: PermissionViolationError) -> None:
        """The server refused this subscription: ``next_msg()`` raises from now on."""
        self._perm_err = err
        self._signal.set()

    def _mark_closed(self) -> None:
        SubscriptionBase._mark_closed(self)
        self._set_status(SUB_CLOSED)

    def _end_slow_episode(self) -> None:
        SubscriptionBase._end_slow_episode(self)
        if not self._slow and self._status == SUB_SLOW:
            self._set_status("active")

    def discard_pending(self) -> None:
        """Drop the pending messages; barrier marks stay queued (the runner reaches them
        once a callback still running returns)."""
        marks = [m for m in self._pending if m.__class__ is _BarrierMark] if self._cb is not None else None  # type: ignore[comparison-overlap]
        SubscriptionBase.discard_pending(self)
        if marks:
            self._pending.extend(marks)
            self._signal.set()

    def __repr__(self) -> str:
        return f"<Subscription sid={self.sid} subject={self.subject!r} queue={self.queue!r}>"

    async def next_msg(self, timeout: float | None = 1.0) -> Msg:
        """The next message; ``TimeoutError`` after ``timeout`` seconds (None waits forever)."""
        if self._cb is not None:
            raise NatsError("next_msg() is not available on a subscription with a callback")
        signal = self._signal
        msg = self._take()
        if msg is not None:
            if self._pending:  # more for whoever else waits (threads sharing the subscription)
                signal.set()
            return msg
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            signal.clear()
            msg = self._take()
            if msg is not None:
                if self._pending:  # each waiter that takes one wakes the next
                    signal.set()
                return msg
            if self._perm_err is not None:  # the server refused it (permission_err_on_subscribe)
                signal.set()  # every waiter hears it
                raise PermissionViolationError(str(self._perm_err), self.subject, self.queue)
            if self._closed:
                signal.set()  # every waiter hears it
                if self._client.is_closed:
                    raise ConnectionClosedError("connection closed")
                raise SubscriptionClosedError("subscription closed")
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise TimeoutError("timed out waiting for a message")
            await signal.wait(remaining)

    async def _run_cb(self) -> None:
        try:
            await self._deliver_all()
        finally:
            self._runner_done = True  # marks queued from now on are counted by barrier()
            marks: list[Any] = [m for m in self._pending if m.__class__ is _BarrierMark]  # type: ignore[comparison-overlap]
            for m in marks:
                if m.reach():
                    self._client._sched.dispatch(m.barrier.fn)

    async def _deliver_all(self) -> None:
        cb = self._cb
        pending = self._pending
        signal = self._signal
        client = self._client
        writer = client._writer
        outbox = client._core.outbox
        report = client._report_error  # a failing callback must not stop delivery
        deliver = self._deliver  # cb(msg) for each pending message, in compiled code
        while True:
            signal.clear()
            # sync-only: writer.callback_thread(pending)
            while True:
                try:
                    r = deliver(cb, report)
                except _MarkReached as reached:  # a barrier's mark: what came before it was handled
                    mark = reached.args[0]
                    if mark.reach():
                        await client._call_cb(mark.barrier.fn)
                    continue
                if r is None:
                    break
                try:
                    await r  # the callback returned an awaitable
                except Exception as exc:
                    report(exc)
                # aio-only: begin
                # a CancelledError of the callback's own (it waited on something cancelled
                # elsewhere) is its error; this runner's cancellation ends it
                except prims.CancelledError as exc:
                    if prims.cancelling():
                        raise
                    report(exc)
                # aio-only: end
            if outbox.buf:
                writer.flush_now()  # the callbacks are done: send what they published
            if self._slow:
                self._end_slow_episode()
            if self._closed and not pending:
                return
            await signal.wait()

    async def unsubscribe(self, max_msgs: int = 0) -> None:
        """Stop now, or after ``max_msgs`` messages in total have been delivered."""
        client = self._client
        if self._closed:
            return
        if client.is_closed:
            raise ConnectionClosedError("connection closed")
        if max_msgs and self.delivered < max_msgs:
            self._max = max_msgs
            client._queue_unsub(self.sid, max_msgs)
            return
        client._drop_sub(self)

    async def drain(self, timeout: float | None = None) -> None:
        """Unsubscribe, let already-received messages be handled, then close."""
        client = self._client
        if self._closed:
            return
        client._queue_unsub(self.sid, 0)
        self._draining = True
        self._set_status(SUB_DRAINING)
        wait = client._core.opts.drain_timeout if timeout is None else timeout
        try:
            await client.flush(wait)
        except ConnectionClosedError:
            pass
        client._core.remove_sub(self, discard=False)
        if self._task is not None and not await prims.join(self._task, wait):
            raise DrainTimeoutError("subscription drain timed out")


class Client:
    """A connection to NATS. Make one with ``connect()``."""

    def __init__(self) -> None:
        self._core: ConnectionCore | None = None
        self._writer: Any = None
        self._transport: Transport | None = None
        self._ping_timer: Any = None
        self._sched: Any = None
        self._reconnector: Any = None  # the reconnect task/thread while one runs
        self._dialing: Transport | None = None  # the transport of a handshake under way
        self._lost_lock = prims.write_lock()  # one _on_lost per transport (reader, timer, writer)
        self._close_signal = prims.Signal()
        self._handshaking = False
        # the handshake's PING waiter, and the transport lost while it was under way (the
        # server may close right after its PONG: the handshake must not succeed then)
        self._handshake_fut: Any = None
        self._handshake_lost: Transport | None = None
        self._ever_connected = False
        self._user_closed = False  # close()/drain() was called (no_callbacks_after_close)
        # PING waiters, oldest first (None for the ping timer's PINGs)
        self._pongs: deque[_api.Waiter | None] = deque()
        # request/reply multiplexing over one wildcard inbox subscription
        self._resp_sub: Subscription | None = None
        self._resp_prefix = ""
        self._resp_prefix_len = 0
        self._resp_map: dict[str, Any] = {}
        self._resp_n = 0
        self._new_waiter: Callable[[], Any] = prims.new_waiter  # bound to the loop on connect
        self._new_signal: Callable[[], Any] = prims.Signal  # polls first with poll_io (blocking), from connect
        # what the layers above registered through the link
        self._on_reconnect: list[Callable[[], None]] = []
        self._on_lost_cbs: list[Callable[[BaseException], None]] = []
        self._on_close_cbs: list[Callable[[BaseException], None]] = []
        self._on_drain_cbs: list[Callable[[float], Any]] = []
        self._on_error_cbs: list[Callable[[BaseException], None]] = []
        self._shared: dict[str, Any] = {}
        self._status_cbs: list[Callable[[str], object]] = []  # add_status_listener
        # force_reconnect: the next reconnect attempt goes at once (the wait is woken)
        self._skip_wait = False
        self._reconnect_wake = prims.Signal()
        self.link = Link(self)

    # -- connecting ------------------------------------------------------------------
    async def _connect(self, opts: Options) -> None:
        core = ConnectionCore(opts)
        self._core = core
        core.on_status = self._on_status
        # sets the outbox's threshold, on_first/on_full and lock; flush_timeout is also the
        # write deadline (a stuck write fails the connection, as nats.go's FlusherTimeout)
        self._writer = Writer(core, opts.flush_timeout, self._on_stuck)
        # the timer thread (blocking) never writes: pings fall due while a write is stuck
        self._sched = prims.Scheduler(self._report_error, self._writer.deferring_thread)
        self._writer.timers = self._sched
        outbox = core.outbox
        outbox.slow = self._publish_slow
        outbox.ret = _impl.DONE  # aio-only
        # the common publish is one call into the outbox (see Client.publish)
        self.publish = outbox.publish  # type: ignore[method-assign]
        if opts.skip_subject_validation:  # what the outbox's checks refuse goes the lax way
            self._outbox_publish = outbox.publish
            self.publish = self._publish_unchecked  # type: ignore[method-assign]
        self._io_poll = io_poll_budget(opts)
        # asyncio: no loop look-up per request; blocking: with poll_io, a requester polls
        # for its reply before it sleeps
        self._new_waiter = prims.waiter_maker(self._io_poll)
        # blocking, with poll_io: a subscription's callback thread polls for its next
        # message before it sleeps (asyncio: plain signals)
        self._new_signal = prims.signal_maker(self._io_poll)
        # asyncio: the loop polls while a reply is due (busy_poll) and, with poll_io, after
        # I/O while traffic flows; blocking: no-ops (the reader thread polls: read_poll)
        self._spin = Spinner(opts.busy_poll, self._resp_map, self._pongs, self._io_poll)
        if self._io_poll:  # aio-only
            self._writer.on_write = self._spin.wrote  # aio-only
        core.status = CONNECTING
        last: BaseException | None = None
        auth_err: BaseException | None = None
        for srv in list(core.pool.servers):
            srv.last_attempt = time.monotonic()
            try:
                await self._connect_server(srv)
            except Exception as exc:
                last = exc
                if isinstance(exc, AuthorizationError):
                    auth_err = exc
                continue
            break
        if core.status == CONNECTED:
            self._ever_connected = True
            self._start_pings()
            if opts.connected_cb is not None:
                self._sched.dispatch(opts.connected_cb)
            return
        core.last_error = auth_err or last
        if opts.retry_on_failed_connect and opts.allow_reconnect:
            core.status = RECONNECTING
            self._start_pings()
            self._reconnector = prims.spawn(self._reconnect_loop, False)
            return
        core.status = CLOSED
        self._writer.close()
        self._sched.close()
        if auth_err is not None:
            raise auth_err
        tried = ", ".join(s.display for s in core.pool.servers)
        raise NoServersError(f"could not connect to any server ({tried}): {redact_text(str(last))}") from last

    async def _connect_server(self, srv: Server) -> None:
        core = self._core
        assert core is not None
        opts = core.opts
        if opts.tls_context_cb is not None:  # asked on every connect: rotated certificates apply
            ctx = await prims.call(opts.tls_context_cb)
        else:
            ctx = opts.ssl_context()
        if ctx is None and (srv.scheme in ("tls", "wss")):
            import ssl

            ctx = ssl.create_default_context()
        if srv.is_ws:  # NATS over WebSocket (TLS first when there is a context); loads wsproto
            from ..connection.ws import ws_path
            from ._ws import WsTransport

            if opts.ws_headers_cb is not None:  # asked on every connect
                headers = await prims.call(opts.ws_headers_cb)
                hdrs = ws_header_list(headers) if headers is not None else None
            else:
                hdrs = ws_header_list(opts.ws_headers) if opts.ws_headers is not None else None
            tr: Transport = WsTransport(opts.socket_factory, ws_path(srv.path, opts.ws_proxy_path, srv.query),
                                        opts.ws_compression, hdrs)
        else:
            tr = Transport(opts.socket_factory)
        fut: Any = None
        self._dialing = tr  # close() aborts it
        try:
            head = await tr.open(srv.host, srv.port, opts.connect_timeout, ctx, opts.tls_handshake_first,
                                 opts.tls_hostname or srv.tls_name, self._need_tls_for(srv, ctx))
        finally:
            self._dialing = None
        if core.status == CLOSED:
            tr.abort()
            raise ConnectionClosedError("connection closed")
        try:
            idx = head.find(b"\r\n")
            line = head[:idx]
            if line[:4].upper() != b"INFO":
                raise NatsError(f"expected INFO from server, got {line[:64]!r}")
            try:
                info = orjson.loads(line[5:])
            except orjson.JSONDecodeError as exc:
                raise ProtocolError(f"bad INFO from server: {line[:64]!r}") from exc
            core.parser.reset()
            core.process_info(info, initial=True)
            if not core.headers_ok:
                raise NatsError("server does not support headers")
            self._handshaking = True
            self._handshake_lost = None
            fut = self._handshake_fut = prims.new_future()
            self._pongs.appendleft(fut)
            answers = {}
            for key, cb, args in core.creds.callbacks(info):
                answers[key] = await prims.call(cb, *args)
            connect = core.connect_line(srv.user, srv.password, answers)
            # sync-only: tr.read_poll = self._io_poll
            tr.start(self._on_data, self._lost_handler(tr), head[idx + 2:])
            write_err: OSError | None = None
            try:
                tr.write(connect + PING)
            except OSError as exc:  # the reader may have seen why first (a TLS alert, an -ERR)
                write_err = exc
            try:
                # after a failed write the reader's reason comes at once, if there is one
                await prims.wait_future(fut, opts.connect_timeout if write_err is None else
                                        min(opts.connect_timeout, HANDSHAKE_REASON_WAIT))
            except TimeoutError:
                if write_err is not None:
                    raise write_err from None
                raise TimeoutError("timed out waiting for the server to accept CONNECT") from None
        except BaseException:
            self._handshaking = False
            self._handshake_fut = None
            if fut is not None:
                try:
                    self._pongs.remove(fut)
                except ValueError:
                    pass
            tr.abort()
            raise
        outbox = core.outbox
        with self._writer.lock:
            # the subscriptions go first, then what was published while disconnected (if
            # this connection is lost before they leave, the next one sends them again:
            # the server ignores a SUB whose sid it has)
            outbox.buf[:0] = core.resubscribe_bytes()
        # against _on_lost on the reader thread: the transport and CONNECTED come together,
        # so a loss is seen either here (the handshake fails) or as a connection's loss
        with self._lost_lock:
            self._handshaking = False
            self._handshake_fut = None
            lost = self._handshake_lost is tr or tr.closed
            self._handshake_lost = None
            if not lost:
                srv.did_connect = True
                srv.reconnects = 0
                core.pool.current = srv
                self._transport = tr
                if self._ever_connected:  # counted before anything buffered leaves: its answer may come first
                    core.reconnects += 1
                core.pings_out = 0
                core.status = CONNECTED
        if lost:  # the server answered the PING and closed: try the next one
            tr.abort()
            raise ConnectionClosedError("connection lost right after the handshake")
        self._writer.set_transport(tr)
        if self._transport is not tr:  # lost since (its _on_lost has taken it down)
            self._writer.set_transport(None)
            return
        self._writer.flush_now()

    def _start_pings(self) -> None:
        """The ping timer, every ``ping_interval`` seconds; none when it is 0 (pings off,
        as nats.go)."""
        core = self._core
        assert core is not None
        if core.opts.ping_interval > 0:
            self._ping_timer = self._sched.call_every(core.opts.ping_interval, self._on_ping_timer)

    def _need_tls_for(self, srv: Server, ctx: ssl.SSLContext | None) -> Callable[[bytes], bool]:
        """Whether the connection goes on in TLS, from the server's INFO: always when
        TLS is configured (``ProtocolError`` when the server offers none, as nats.go's
        "secure connection not available"); without it, when the server requires TLS
        (the transport then uses the system's trust store, as nats.go)."""
        def need(head: bytes) -> bool:
            line = head.split(b"\r\n", 1)[0]
            try:
                info = orjson.loads(line[5:])
            except orjson.JSONDecodeError:
                return ctx is not None
            if ctx is not None:
                if not isinstance(info, dict) or info.get("tls_required") or info.get("tls_available"):
                    return True
                raise ProtocolError(f"secure connection not available: {srv.display} offers no TLS "
                                    "(TLS was asked for by the URL's scheme or the TLS options)")
            return isinstance(info, dict) and bool(info.get("tls_required"))

        return need

    # -- reading ---------------------------------------------------------------------
    def _on_data(self, data: bytes) -> None:
        """The transport read ``data``: feed the core, then act on what it returns."""
        core = self._core
        assert core is not None
        try:
            events = core.receive_data(data)
        except Exception as exc:  # the stream can no longer be framed
            core.last_error = exc
            self._report_error(exc)
            if self._handshaking:
                self._fail_handshake(exc)
            else:
                tr = self._transport
                if tr is not None:
                    self._on_lost(tr, exc)
            return
        if events:
            self._handle_events(events)
        self._spin.heard()  # aio-only
        writer = self._writer  # aio-only
        if core.outbox.buf and not writer.holding:  # aio-only
            # what direct handlers queued for this read (service answers, acks) leaves  # aio-only
            # with it, one write, rather than on the next loop turn (unless held: hold)  # aio-only
            writer.flush_now()  # aio-only

    def _handle_events(self, events: list[Any]) -> None:
        core = self._core
        assert core is not None
        opts = core.opts
        for ev in events:
            kind = ev.__class__
            if kind is PingReceived:
                with self._writer.lock:
                    core.outbox.buf += PONG
                self._writer.kick()
            elif kind is PongReceived:
                if self._pongs:
                    fut = self._pongs.popleft()
                    if fut is not None and not fut.done():
                        self._spin.replied()
                        fut.set_result(True)
            elif kind is SubscriptionError:
                err = ev.error
                if err.__class__ is SlowConsumerError:
                    sub = core.subs.get(err.sid)
                    if isinstance(sub, Subscription):
                        sub._set_status(SUB_SLOW)
                self._report_error(err)
            elif kind is ServerError:
                if self._handshaking and self._pongs:
                    fut = self._pongs.popleft()
                    if fut is not None and not fut.done():
                        fut.set_exception(ev.error)
                    continue
                if ev.error.__class__ is PermissionViolationError and opts.permission_err_on_subscribe:
                    self._refused(ev.error)
                self._report_error(ev.error)
                if ev.fatal:
                    tr = self._transport
                    if tr is not None:
                        self._on_lost(tr, ev.error)
            elif kind is InfoReceived:
                if ev.discovered and opts.discovered_servers_cb is not None:
                    self._sched.dispatch(opts.discovered_servers_cb)
                if ev.lame_duck and opts.lame_duck_mode_cb is not None:
                    self._sched.dispatch(opts.lame_duck_mode_cb)

    def _refused(self, err: PermissionViolationError) -> None:
        """The server refused the subscription(s) to ``err.subject`` (and queue): their
        ``next_msg()`` raises it from now on."""
        core = self._core
        assert core is not None
        for sub in list(core.subs.values()):
            if sub.subject == err.subject and (err.queue is None or sub.queue == err.queue) \
                    and isinstance(sub, Subscription):
                sub._refuse(err)

    def _on_status(self, status: str) -> None:
        """``nc.status`` changed: tell the status listeners."""
        if self._status_cbs:
            self._dispatch_status(self._status_cbs, status)

    def _dispatch_status(self, cbs: list[Callable[[str], object]], status: str) -> None:
        sched = self._sched
        if sched is None or self._quiet():
            return
        for cb in list(cbs):
            sched.dispatch(cb, status)

    def _report_error(self, exc: BaseException) -> None:
        """Hand ``exc`` to ``error_cb`` (on the callback dispatcher), or log it."""
        core = self._core
        for listener in list(self._on_error_cbs):  # the layers above (a service's refused endpoint)
            try:
                listener(exc)
            except Exception:
                log.exception("jetwire: error listener %r failed", listener)
        if core is not None:
            core.last_error = exc
            cb = core.opts.error_cb
            if self._quiet():
                return
            if cb is not None and self._sched is not None:
                # through _call_cb: an error_cb that raises is logged, never handed its own
                # exception again (which would loop for ever)
                self._sched.dispatch(self._call_cb, cb, exc)
                return
        log.error("jetwire: %s", redact_text(str(exc)))

    def _report_reconnect_error(self, srv: Server, exc: BaseException) -> None:
        """A reconnect attempt to ``srv`` failed (and it was not fatal): to
        ``reconnect_error_cb``, else to ``error_cb``, else a warning in the log."""
        core = self._core
        assert core is not None
        opts = core.opts
        core.last_error = exc
        if self._quiet():
            return
        cb = opts.reconnect_error_cb or opts.error_cb
        if cb is not None:
            self._sched.dispatch(cb, exc)
        else:
            log.warning("jetwire: reconnecting to %s failed: %s", srv.display, redact_text(str(exc)))

    def _fail_handshake(self, exc: BaseException) -> None:
        """Fail the handshake's PING waiter only: a ``flush()`` made while reconnecting
        waits for the connection that comes back (its PING is in the reconnect buffer)."""
        fut = self._handshake_fut
        if fut is not None and not fut.done():
            try:
                self._pongs.remove(fut)
            except ValueError:
                pass
            fut.set_exception(exc)

    def _fail_pongs(self, exc: BaseException) -> None:
        pongs = self._pongs
        while pongs:
            fut = pongs.popleft()
            if fut is not None and not fut.done():
                fut.set_exception(exc)
        if self._core is not None:
            self._core.pings_out = 0

    def _on_stuck(self, exc: BaseException) -> None:
        """A write did not go through within ``flush_timeout``: drop the connection."""
        tr = self._transport
        if tr is not None:
            self._report_error(exc)
            self._on_lost(tr, exc)

    def _lost_handler(self, tr: Transport) -> Callable[[BaseException | None], None]:
        def lost(exc: BaseException | None) -> None:
            self._on_lost(tr, exc)

        return lost

    def _on_lost(self, tr: Transport, exc: BaseException | None) -> None:
        """The transport died (socket error, EOF, protocol error, stale connection)."""
        core = self._core
        if core is None:
            return
        with self._lost_lock:
            handshake = self._handshaking
            if handshake:
                self._handshake_lost = tr
            elif tr is not self._transport:
                return
            else:
                self._transport = None
        if handshake:
            self._fail_handshake(exc or ConnectionClosedError("connection lost during handshake"))
            return
        self._writer.set_transport(None)
        tr.abort()
        if core.status == CLOSED:
            return
        draining = core.status in (DRAINING_SUBS, DRAINING_PUBS)
        if not draining:
            core.status = DISCONNECTED  # then RECONNECTING, or CLOSED (as nats.go)
        # the PINGs still queued go with the waiters they belong to (under the writer's
        # lock, as _ping appends both): kept, each PONG on the next connection would
        # answer a later flush() before the server had what came before it (nats.go
        # drops its buffered PINGs too)
        with self._writer.lock:
            outbox = core.outbox
            if PING in outbox.buf:
                outbox.buf[:] = strip_pings(outbox.buf)
            waiters = list(self._pongs)
            self._pongs.clear()
        core.pings_out = 0
        lost_err = ConnectionClosedError("connection lost")
        for fut in waiters:
            if fut is not None and not fut.done():
                fut.set_exception(lost_err)
        lost = ConnectionLostError("connection lost")
        for cb in list(self._on_lost_cbs):  # e.g. the acks of what went out are lost with it
            try:
                cb(lost)
            except Exception as err:
                self._report_error(err)
        if core.opts.allow_reconnect and not draining and core.status == DISCONNECTED:
            core.status = RECONNECTING
            self._reconnector = prims.spawn(self._reconnect_loop, True)
        else:
            prims.spawn(self._close_after_loss)

    async def _close_after_loss(self) -> None:
        await self._close(flush=False)

    def _quiet(self) -> bool:
        """No more user callbacks: the user closed the connection and asked for that."""
        core = self._core
        return self._user_closed and core is not None and core.opts.no_callbacks_after_close

    async def _call_cb(self, cb: Callable[..., object], *args: object) -> None:
        """Call a user callback now (plain or coroutine function); an exception goes to
        ``error_cb`` (and is logged when it is ``error_cb`` that failed)."""
        if self._quiet():
            return
        try:
            await prims.call(cb, *args)
        except Exception as exc:
            if self._core is not None and cb is self._core.opts.error_cb:
                log.exception("jetwire: error callback %r failed", cb)
            else:
                self._report_error(exc)

    async def _reconnect_loop(self, was_connected: bool) -> None:
        core = self._core
        assert core is not None
        opts = core.opts
        if was_connected and opts.disconnected_cb is not None:
            await self._call_cb(opts.disconnected_cb)
        tries = 0
        passes = 0
        srv: Server | None
        while core.status == RECONNECTING:
            chosen = None
            if opts.reconnect_to_server_cb is not None:
                chosen = await self._server_chosen(opts.reconnect_to_server_cb)
            if chosen is not None:  # ReconnectToServer: its server, after its delay
                srv, delay = chosen
                core.pool.current = srv
                await self._reconnect_pause(delay)
            else:
                srv = core.pool.next_server(opts.max_reconnect_attempts)
                if srv is None:
                    break
                if opts.reconnect_delay_cb is not None:
                    if tries % max(1, len(core.pool)) == 0:  # a pass over the pool begins
                        passes += 1
                        await self._reconnect_pause(await self._asked_delay(opts.reconnect_delay_cb, passes))
                else:
                    jitter = opts.reconnect_jitter_tls if srv.scheme == "tls" or opts.wants_tls \
                        else opts.reconnect_jitter
                    wait = srv.last_attempt + opts.reconnect_time_wait - time.monotonic()
                    if srv.last_attempt and wait > 0:
                        await self._reconnect_pause(wait + random.uniform(0, jitter))
            self._skip_wait = False
            if core.status != RECONNECTING:
                return
            tries += 1
            srv.reconnects += 1
            srv.last_attempt = time.monotonic()
            try:
                await self._connect_server(srv)
            except Exception as exc:
                core.last_error = exc
                if isinstance(exc, AuthorizationError) and exc.from_server:  # not the client's own (a file)
                    if srv.last_auth_error == str(exc) and not opts.ignore_auth_error_abort:
                        # the same refusal twice in a row: retrying will not help (nats.go)
                        self._report_error(exc)
                        await self._close(flush=False)
                        core.last_error = exc
                        return
                    srv.last_auth_error = str(exc)
                else:
                    srv.last_auth_error = None
                self._report_reconnect_error(srv, exc)  # one report per failed attempt
                continue
            srv.last_auth_error = None
            if core.status == CONNECTED:
                if not was_connected and not self._ever_connected:  # retry_on_failed_connect
                    self._ever_connected = True
                    if opts.connected_cb is not None:
                        await self._call_cb(opts.connected_cb)
                    return
                for listener in list(self._on_reconnect):
                    try:
                        listener()
                    except Exception as exc:
                        self._report_error(exc)
                if opts.reconnected_cb is not None:
                    await self._call_cb(opts.reconnected_cb)
                return
            return  # lost again at once: that loss started a reconnect of its own (or it closed)
        if core.status == RECONNECTING:
            last = core.last_error
            core.last_error = NoServersError(f"reconnect attempts exhausted: {redact_text(str(last))}")
            await self._close(flush=False)

    async def _asked_delay(self, cb: Callable[..., object], passes: int) -> float:
        """``reconnect_delay_cb(passes)``: the pause in seconds before a pass over the
        pool; when it raises or answers something that is not a number >= 0, that is
        reported to ``error_cb`` and ``reconnect_time_wait`` is waited instead (the
        reconnecting goes on)."""
        core = self._core
        assert core is not None
        try:
            answer = await prims.call(cb, passes)
            delay = float(answer)
            if delay >= 0:
                return delay
            problem = f"returned {answer!r}, not a number of seconds >= 0"
        except Exception as exc:
            problem = f"failed: {redact_text(str(exc))}"
        self._report_error(NatsError(f"reconnect_delay_cb {problem}; waiting reconnect_time_wait instead"))
        return core.opts.reconnect_time_wait

    async def _server_chosen(self, cb: Callable[..., object]) -> tuple[Server, float] | None:
        """Ask ``reconnect_to_server_cb(servers, info)`` for (server, delay): the pool
        entry and the delay in seconds, or None (the usual rotation and delay then) when it
        raised or answered something that is not (one of ``nc.servers``, a delay >= 0):
        that is reported to ``error_cb``. A server out of reconnect attempts is not chosen."""
        core = self._core
        assert core is not None
        try:
            answer = await prims.call(cb, core.pool.urls(), dict(core.info))
            url, delay = answer
            delay = float(delay)
        except Exception as exc:
            self._report_error(NatsError(f"reconnect_to_server_cb failed: {redact_text(str(exc))}"))
            return None
        srv = core.pool.find(url) if isinstance(url, str) else None
        if srv is None or not delay >= 0:
            what = "a delay that is not a number of seconds >= 0" if srv is not None else \
                f"a server not in the pool ({redact_text(str(url))!r})"
            self._report_error(NatsError(f"reconnect_to_server_cb returned {what}; trying the next server instead"))
            return None
        limit = core.opts.max_reconnect_attempts
        if 0 <= limit <= srv.reconnects:
            return None
        return srv, delay

    async def _reconnect_pause(self, delay: float) -> None:
        """Wait ``delay`` seconds before the next attempt; ``close()`` and
        ``force_reconnect()`` end the wait."""
        if not delay > 0:
            return
        wake = self._reconnect_wake
        wake.clear()
        if self._skip_wait or self._close_signal.is_set():
            return
        await wake.wait(delay)

    def _on_ping_timer(self) -> None:
        core = self._core
        if core is None or core.status != CONNECTED:
            return
        stale = core.ping_tick()
        if stale is not None:
            core.last_error = stale
            self._report_error(stale)
            tr = self._transport
            if tr is not None:
                self._on_lost(tr, stale)
            return
        with self._writer.lock:
            core.outbox.buf += PING
            self._pongs.append(None)
        # never written from the timer (blocking: the flusher thread sends it), so the next
        # tick comes on time however long another thread's write is stuck
        self._writer.send_later()

    # -- publishing ------------------------------------------------------------------
    def publish(self, subject: str, data: bytes | bytearray | memoryview = b"", reply: str | None = None,
                headers: HeadersInit | None = None) -> Any:
        """Publish ``data`` to ``subject`` (optionally with a reply subject and headers).

        The message is queued when this is called, on every path; a bad subject, a
        payload over ``max_payload``, a closed connection or a full reconnect buffer
        raise here. In the asyncio flavour the result is an awaitable: already done, or,
        while the socket is congested, done once it drains (awaiting it is back-pressure;
        not awaiting it loses nothing). In the blocking flavour it returns None.

        A connected client answers ``publish`` with ``core.outbox.publish`` (an instance
        attribute set on connect): a message without headers, within ``max_payload``, on
        an uncongested connection is queued by one call into compiled code. Everything
        else (headers, disconnected, reconnecting, closed, congested) comes here."""
        self._append(subject, data, reply, headers)
        writer = self._writer
        writer.kick()
        return writer.after_publish()

    _publish_slow = publish

    def _publish_unchecked(self, subject: str, data: bytes | bytearray | memoryview = b"", reply: str | None = None,
                           headers: HeadersInit | None = None) -> Any:
        """``publish`` with ``skip_subject_validation``: the outbox's fast path, and what its
        subject checks refuse queued with only the protocol's own checks."""
        try:
            return self._outbox_publish(subject, data, reply, headers)
        except BadSubjectError:
            pass
        self._append(subject, data, reply, headers)  # falls back to the lax encoding
        writer = self._writer
        writer.kick()
        return writer.after_publish()

    def _append(self, subject: str, data: bytes | bytearray | memoryview, reply: str | None,
                headers: HeadersInit | None) -> None:
        """Check and queue one PUB/HPUB (``headers``: a mapping, or None)."""
        self._append_raw(subject, reply, None if headers is None else _encode_headers(headers), data)

    def _append_raw(self, subject: str, reply: str | None, hdr: bytes | None, data: bytes | bytearray | memoryview) -> None:
        """Check and queue one PUB (``hdr`` None) or HPUB (``hdr``: encoded headers)."""
        core = self._core
        if core is None:
            raise ConnectionClosedError("connection closed")
        outbox = core.outbox
        size = payload_size(data, hdr)  # bytes, not items (an array's); TypeError for a str, a list
        if size > outbox.max_payload:
            raise MaxPayloadError(f"message of {size} bytes exceeds max_payload {outbox.max_payload}")
        if core.status != CONNECTED:
            self._check_buffering(size)
        with self._writer.lock:
            try:
                if hdr is None:
                    outbox.append_pub(subject, reply, data)
                else:
                    outbox.append_hpub(subject, reply, hdr, data)
            except BadSubjectError:
                if not core.opts.skip_subject_validation:
                    raise
                core.append_pub_lax(subject, reply, hdr, data)

    def _check_buffering(self, size: int) -> None:
        core = self._core
        assert core is not None
        st = core.status
        if st == CLOSED:
            raise ConnectionClosedError("connection closed")
        if st in (RECONNECTING, CONNECTING):
            limit = core.opts.reconnect_buffer_size
            if limit < 0 or len(core.outbox.buf) + size > limit:
                raise ReconnectBufferFullError("reconnect buffer is full")

    def _try_publish(self, subject: str, reply: str | None, data: bytes) -> bool:
        """Queue a PUB only while connected (safe from the reader and timers)."""
        core = self._core
        if core is None or core.status != CONNECTED:
            return False
        writer = self._writer
        with writer.lock:
            core.outbox.append_pub(subject, reply, data)
        writer.kick()
        return True

    def _try_append_frames(self, frames: Any, count: int, payload_bytes: int) -> bool:
        """Queue pre-encoded PUB/HPUB frames only while connected (``Link.try_publish_frames``)."""
        core = self._core
        if core is None or core.status != CONNECTED:
            return False
        writer = self._writer
        with writer.lock:
            outbox = core.outbox
            buf = outbox.buf
            buf += memoryview(frames)
            outbox.out_msgs += count
            outbox.out_bytes += payload_bytes
        writer.kick()
        return True

    def publish_msg(self, msg: Msg) -> Any:
        """``publish(msg.subject, msg.data, msg.reply, msg.headers)``."""
        return self.publish(msg.subject, msg.data, msg.reply, msg.headers)

    # -- subscribing -----------------------------------------------------------------
    async def subscribe(self, subject: str, queue: str | None = None, cb: Callable[[Msg], object] | None = None,
                        max_msgs: int = 0, pending_msgs_limit: int | None = None,
                        pending_bytes_limit: int | None = None) -> Subscription:
        """Subscribe to ``subject`` (wildcards allowed), optionally in a queue group."""
        core = self._live_core()
        opts = core.opts
        return self._subscribe(subject, queue, cb, max_msgs,
                               opts.pending_msgs_limit if pending_msgs_limit is None else pending_msgs_limit,
                               opts.pending_bytes_limit if pending_bytes_limit is None else pending_bytes_limit,
                               None, None)

    def _live_core(self) -> ConnectionCore:
        core = self._core
        if core is None or core.status == CLOSED:
            raise ConnectionClosedError("connection closed")
        if core.status in (DRAINING_SUBS, DRAINING_PUBS):
            raise ConnectionClosedError("connection is draining")
        return core

    def _subscribe(self, subject: str, queue: str | None, cb: Callable[[Msg], object] | None, max_msgs: int,
                   pmsgs: int, pbytes: int, direct: Callable[[Msg], None] | None, wake: WakeSignal | None) -> Subscription:
        core = self._live_core()
        core.check_filter(subject, queue)  # nothing is sent for a SUB the server would refuse
        if queue == "":
            queue = None
        sid = core.next_sid()
        sub = Subscription(self, sid, subject, queue, cb, wake if wake is not None else self._new_signal(),
                           pmsgs, pbytes)
        sub._direct = direct
        sub._lock = prims.queue_lock()
        if max_msgs:
            sub._max = max_msgs
        core.add_sub(sub)
        with self._writer.lock:
            buf = core.outbox.buf
            core.append_sub(buf, subject, queue, sid)  # the encoder's, or lax (skip_subject_validation)
            if max_msgs:
                _append_unsub(buf, sid, max_msgs)
        if cb is not None:
            sub._task = prims.spawn(sub._run_cb, name=f"jetwire-sub-{sid}")
        self._writer.kick()  # aio-only
        # sync-only: self._writer.send_soon()  # (never waits for a stuck writer: a SUB is no back-pressure)
        return sub

    def _queue_unsub(self, sid: int, max_msgs: int) -> None:
        core = self._core
        assert core is not None
        with self._writer.lock:
            _append_unsub(core.outbox.buf, sid, max_msgs)
        self._writer.kick()  # aio-only
        # sync-only: self._writer.send_soon()  # (never waits for a stuck writer)

    def _drop_sub(self, sub: Subscription) -> None:
        """Drop ``sub`` at once without waiting (safe from the reader and timers)."""
        core = self._core
        if core is None or not core.remove_sub(sub):
            return
        if core.status != CLOSED:
            self._queue_unsub(sub.sid, 0)

    # -- request/reply ---------------------------------------------------------------
    def _resp_mux(self) -> str:
        """The shared inbox prefix of requests (its wildcard subscription made on first use)."""
        if self._resp_sub is None:
            core = self._live_core()
            prefix = core.new_inbox() + "."
            self._resp_prefix = prefix
            self._resp_prefix_len = len(prefix)
            self._resp_sub = self._subscribe(prefix + "*", None, None, 0, -1, -1, self._on_response, None)
        return self._resp_prefix

    def _on_response(self, msg: Msg) -> None:  # from the reader
        fut = self._resp_map.pop(msg.subject[self._resp_prefix_len:], None)
        if fut is None or fut.done():
            return
        self._spin.replied()
        h = msg.headers
        if h is not None and h.status == "503" and not msg.data:
            fut.set_exception(NoRespondersError("no responders for request"))
        else:
            fut.set_result(msg)

    def _start_request(self, subject: str, data: bytes | bytearray | memoryview, hdr: bytes | None) -> Any:
        """Queue a request and send it now: (token, the future its reply resolves)."""
        prefix = self._resp_prefix or self._resp_mux()
        self._resp_n += 1
        token = str(self._resp_n)
        fut = self._new_waiter()
        self._resp_map[token] = fut
        # asyncio: sent at the end of this loop turn, in one write with every other request
        # and reply queued in it (a write per request was a third of a busy requester's time);
        # blocking: sent now, from the caller's thread (or by the thread writing already)
        try:
            if hdr is None and prims.IS_ASYNC:
                self.publish(subject, data, prefix + token)  # one call into the outbox, which kicks
                self._spin.arm()
                return token, fut
            self._append_raw(subject, prefix + token, hdr, data)
        except BaseException:
            self._resp_map.pop(token, None)
            raise
        self._writer.kick()  # aio-only
        # sync-only: self._writer.send_soon()
        self._spin.arm()
        return token, fut

    async def _wait_reply(self, subject: str, token: str, fut: Any, timeout: float) -> Msg:
        try:
            return await prims.wait_future(fut, timeout)
        except TimeoutError:
            raise TimeoutError(f"request to {subject!r} timed out after {timeout}s") from None
        except NoRespondersError:
            raise NoRespondersError(f"no responders for request on {subject!r}") from None
        finally:
            self._resp_map.pop(token, None)

    async def request(self, subject: str, data: bytes | bytearray | memoryview = b"", timeout: float = 1.0,
                      headers: HeadersInit | None = None) -> Msg:
        """Send a request and wait for one reply (``NoRespondersError`` at once if nobody listens)."""
        wait_limit(timeout)  # a NaN raises before anything is sent
        token, fut = self._start_request(subject, data, None if headers is None else _encode_headers(headers))
        try:  # _wait_reply, inlined: one coroutine less per request
            return await prims.wait_future(fut, timeout)
        except TimeoutError:
            raise TimeoutError(f"request to {subject!r} timed out after {timeout}s") from None
        except NoRespondersError:
            raise NoRespondersError(f"no responders for request on {subject!r}") from None
        finally:
            self._resp_map.pop(token, None)

    def new_inbox(self) -> str:
        """A unique subject under the inbox prefix."""
        if self._core is None:
            raise ConnectionClosedError("connection closed")
        return self._core.new_inbox()

    # -- flush / rtt -----------------------------------------------------------------
    async def flush(self, timeout: float | None = None) -> None:
        """Send everything buffered and wait for the server to confirm (PING/PONG)."""
        core = self._core
        if core is None or core.status == CLOSED:
            raise ConnectionClosedError("connection closed")
        if timeout is None:
            timeout = core.opts.flush_timeout
        await self._flush(timeout, False)

    async def _flush(self, timeout: float, bounded: bool) -> None:
        """``flush``; ``bounded`` (drain): writing it counts against ``timeout`` too."""
        core = self._core
        assert core is not None
        fut = prims.new_future()
        if bounded:
            deadline = time.monotonic() + timeout
            self._ping(fut, timeout)
            timeout = max(0.001, deadline - time.monotonic())
        else:
            self._ping(fut)
        try:
            await prims.wait_future(fut, timeout)
        except TimeoutError:
            raise TimeoutError("flush timed out") from None

    def _ping(self, waiter: _api.Waiter, write_timeout: float | None = None) -> None:
        """Send a PING now; ``waiter`` (a future, or anything with its ``done``,
        ``set_result``, ``set_exception``) hears about its PONG. ``write_timeout``: the
        write's own bound (drain's time left; default the write deadline)."""
        core = self._core
        assert core is not None
        with self._writer.lock:
            core.outbox.buf += PING
            self._pongs.append(waiter)
        if write_timeout is None:
            self._writer.flush_now()  # aio-only
            # sync-only: self._writer.send_soon()  # (a thread writing takes it along: the waiter's own timeout bounds the wait)
        else:
            self._writer.flush_now(write_timeout)
        self._spin.arm()

    async def rtt(self) -> float:
        """Round-trip time to the server in seconds."""
        start = time.perf_counter()
        await self.flush()
        return time.perf_counter() - start

    # -- JetStream acks (used by Msg) --------------------------------------------------
    def _js_double_ack(self, msg: Msg, reply: str, payload: bytes, timeout: float | None) -> Any:
        """``msg.ack_sync()``: the ack goes out at call time (``reply``: its checked ack
        subject) and the result waits for the server's confirmation."""
        wait_limit(timeout)  # a NaN raises before anything is sent
        token, fut = self._start_request(reply, payload, None)
        return self._js_ack_confirmed(msg, reply, token, fut, 5.0 if timeout is None else timeout)

    async def _js_ack_confirmed(self, msg: Msg, reply: str, token: str, fut: Any, timeout: float) -> None:
        await self._wait_reply(reply, token, fut, timeout)
        msg._ackd = True

    # -- connection control (nats.go's ForceReconnect, Barrier, StatusChanged) ---------
    async def force_reconnect(self) -> None:
        """Drop the live connection and reconnect at once (nats.go's ForceReconnect):
        what is buffered is written first, and what is published meanwhile waits in the
        reconnect buffer; subscriptions are restored; ``disconnected_cb`` and
        ``reconnected_cb`` are called as for a lost connection. Returns once the
        reconnect has started. While a reconnect is under way its next attempt goes at
        once. ``ConnectionClosedError`` on a closed or draining connection; needs
        ``allow_reconnect`` (else the connection closes, as when it is lost)."""
        core = self._core
        if core is None or core.status == CLOSED:
            raise ConnectionClosedError("connection closed")
        if core.status in (DRAINING_SUBS, DRAINING_PUBS):
            raise ConnectionClosedError("connection is draining")
        self._skip_wait = True
        tr = self._transport
        if core.status != CONNECTED or tr is None:
            self._reconnect_wake.set()  # a reconnect under way: its next attempt now
            return
        timeout = core.opts.flush_timeout
        deadline = time.monotonic() + timeout
        self._writer.flush_now(timeout)  # what is buffered goes out on this connection
        await self._writer.flushed(max(0.0, deadline - time.monotonic()))
        if tr is self._transport:
            self._on_lost(tr, None)

    def barrier(self, fn: Callable[[], object]) -> Any:
        """Call ``fn()`` (plain, or a coroutine function in aio) once every message
        callback already dispatched has returned (nats.go's Barrier): a mark is queued
        behind the messages each callback subscription holds now, and ``fn`` runs on the
        subscription that reaches the last mark; messages that arrive later are not
        waited for. With no callback subscription ``fn`` runs on the callback
        dispatcher. Returns at once (in aio an awaitable that is already done);
        ``ConnectionClosedError`` on a closed connection."""
        core = self._core
        if core is None or core.status == CLOSED:
            raise ConnectionClosedError("connection closed")
        subs = [s for s in list(core.subs.values()) if isinstance(s, Subscription) and s._has_runner()]
        if not subs:
            self._sched.dispatch(fn)
            return _impl.DONE  # aio-only
            # sync-only: return None
        barrier = _Barrier(fn, len(subs))
        for sub in subs:
            mark = _BarrierMark(barrier)
            if not sub._queue_mark(mark) and mark.reach():  # its runner had ended: nothing to wait for
                self._sched.dispatch(fn)
        return _impl.DONE  # aio-only
        # sync-only: return None

    def add_status_listener(self, cb: Callable[[str], object]) -> Callable[[], None]:
        """``cb(status)`` (plain, or a coroutine function in aio; on the callback
        dispatcher, in order) on every change of ``nc.status`` from now on:
        ``"DISCONNECTED"``, ``"RECONNECTING"``, ``"CONNECTED"``, ``"DRAINING_SUBS"``,
        ``"DRAINING_PUBS"``, ``"CLOSED"`` (the last one; nothing after it, and nothing once
        closed by the user with ``no_callbacks_after_close``). Returns a function that
        removes it (nats.go's StatusChanged)."""
        return _register(self._status_cbs, cb)

    # -- draining / closing ----------------------------------------------------------
    async def drain(self, timeout: float | None = None) -> None:
        """Let everything received be handled, then close: ``consume()`` callbacks
        finish what was delivered (and ack it), services answer the requests they took,
        async publishes get their acks; then every subscription is unsubscribed and its
        pending messages handled, what was published is flushed, and the connection
        closes. ``DrainTimeoutError`` (the connection closed) when that takes longer than
        ``timeout`` (``drain_timeout``); a connection that is reconnecting is waited for
        first, within the same time."""
        core = self._core
        if core is None or core.status == CLOSED:
            return
        if timeout is None:
            timeout = core.opts.drain_timeout
        self._user_closed = True
        if core.status in (DRAINING_SUBS, DRAINING_PUBS):  # drained by another caller: wait for the close
            if not await self._close_signal.wait(timeout):
                await self._close(flush=False)
                raise DrainTimeoutError("drain timed out")
            return
        deadline = time.monotonic() + timeout
        if core.status != CONNECTED:  # reconnecting: what is buffered needs the connection back
            await self._wait_connected(deadline)
            if core.status == CLOSED:
                return
        core.status = DRAINING_SUBS
        try:
            await self._drain_steps(deadline)
        except BaseException:
            if core.status != CLOSED:  # cancelled midway: never left half-drained
                await self._close(flush=False)
            raise

    async def _drain_steps(self, deadline: float) -> None:
        """``drain()`` once the status is ``DRAINING_SUBS``: the layers, the subscriptions,
        the last flush and the close."""
        core = self._core
        assert core is not None
        # the layers above finish first, while the connection still carries everything:
        # consume() callbacks, service handlers, async publishes awaiting their acks
        for hook in list(self._on_drain_cbs):
            try:
                done = await hook(max(0.0, deadline - time.monotonic()))
            except Exception as exc:
                self._report_error(exc)
                done = True
            if not done:
                await self._close(flush=False)
                raise DrainTimeoutError("drain timed out waiting for consumers, services or async publish acks")
        subs = [s for s in core.subs.values() if s is not self._resp_sub]
        for sub in subs:
            if isinstance(sub, Subscription):
                sub._set_status(SUB_DRAINING)
        with self._writer.lock:
            for sub in subs:
                _append_unsub(core.outbox.buf, sub.sid, 0)
        try:
            if self._transport is not None:
                await self._flush(max(0.001, deadline - time.monotonic()), True)
            for sub in subs:
                core.remove_sub(sub, discard=False)
            for sub in subs:
                if sub._task is not None and not await prims.join(sub._task, max(0.0, deadline - time.monotonic())):
                    raise DrainTimeoutError("drain timed out waiting for callbacks")
            core.status = DRAINING_PUBS
            if self._transport is not None:
                await self._flush(max(0.001, deadline - time.monotonic()), True)
        except TimeoutError as exc:
            await self._close(flush=False)
            raise DrainTimeoutError("drain timed out") from exc
        except DrainTimeoutError:
            await self._close(flush=False)
            raise
        except ConnectionClosedError as exc:
            if time.monotonic() >= deadline:  # lost as its time ran out (a write stuck to the end)
                await self._close(flush=False)
                raise DrainTimeoutError("drain timed out") from exc
        await self._close(flush=True, timeout=max(0.001, deadline - time.monotonic()))

    async def _wait_connected(self, deadline: float) -> None:
        """Drain of a connection that is reconnecting: wait until it is back (or closed);
        at the deadline it is closed with ``DrainTimeoutError`` (what was buffered for it
        is not sent, and the error says so)."""
        core = self._core
        assert core is not None
        back = prims.Signal()
        removers = (_register(self._on_reconnect, back.set), _register(self._on_close_cbs, lambda _exc: back.set()))
        try:
            while core.status not in (CONNECTED, CLOSED):
                left = deadline - time.monotonic()
                if left <= 0:
                    pending = len(core.outbox.buf)
                    await self._close(flush=False)
                    raise DrainTimeoutError(
                        f"drain timed out: the connection was not back within the drain timeout "
                        f"({pending} buffered bytes not sent)")
                back.clear()
                if core.status in (CONNECTED, CLOSED):
                    break
                await back.wait(left)
        finally:
            for remove in removers:
                remove()

    async def close(self) -> None:
        """Flush what is buffered (best effort) and close the connection."""
        self._user_closed = True
        await self._close(flush=True)

    async def _close(self, flush: bool, timeout: float | None = None) -> None:
        """Close: what is buffered is flushed first when ``flush`` (within ``timeout``,
        ``flush_timeout`` by default); a transport that could not be flushed is aborted,
        and a reconnect or handshake under way ends (nothing is left running)."""
        core = self._core
        if core is None or core.status == CLOSED:
            return
        core.status = CLOSED
        self._close_signal.set()
        self._reconnect_wake.set()
        if self._ping_timer is not None:
            self._ping_timer.cancel()
        dialing = self._dialing
        if dialing is not None:  # a handshake under way would wait for connect_timeout
            dialing.abort()
            prims.cancel(self._reconnector)  # aio-only: it may not have a socket to abort yet
        with self._lost_lock:
            tr = self._transport
            self._transport = None
        flushed = False
        cancelled: BaseException | None = None
        if flush and tr is not None:
            if timeout is None:
                timeout = core.opts.flush_timeout
            deadline = time.monotonic() + timeout
            self._writer.flush_now(timeout)
            try:
                flushed = await self._writer.flushed(max(0.0, deadline - time.monotonic()))
            except BaseException as exc:  # cancelled: the teardown below still runs, then it is raised
                cancelled = exc
        self._writer.close()
        if tr is not None:
            if flushed:
                tr.close()
            else:
                tr.abort()
        err = ConnectionClosedError("connection closed")
        self._fail_pongs(err)
        for fut in list(self._resp_map.values()):
            if not fut.done():
                fut.set_exception(err)
        self._resp_map.clear()
        core.close_all_subs()
        for cb in list(self._on_close_cbs):
            try:
                cb(err)
            except Exception as exc:
                self._report_error(exc)
        if cancelled is not None:
            if core.opts.closed_cb is not None:
                prims.spawn(self._call_cb, core.opts.closed_cb)
            self._sched.close()
            raise cancelled
        if core.opts.closed_cb is not None:
            await self._call_cb(core.opts.closed_cb)
        self._sched.close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, exc_type: object, *exc: object) -> None:
        """Leaving the block drains (what was delivered is handled, then the connection
        closes); leaving it with an exception, or while not connected, closes at once."""
        core = self._core
        if exc_type is None and core is not None and core.status == CONNECTED:
            await self.drain()
        else:
            await self.close()

    # -- state -----------------------------------------------------------------------
    @property
    def is_connected(self) -> bool:
        return self._core is not None and self._core.status == CONNECTED

    @property
    def is_closed(self) -> bool:
        return self._core is None or self._core.status == CLOSED

    @property
    def is_reconnecting(self) -> bool:
        return self._core is not None and self._core.status == RECONNECTING

    @property
    def is_draining(self) -> bool:
        return self._core is not None and self._core.status in (DRAINING_SUBS, DRAINING_PUBS)

    @property
    def status(self) -> str:
        return self._core.status if self._core is not None else DISCONNECTED

    @property
    def connected_url(self) -> str | None:
        core = self._core
        if core is None or core.status != CONNECTED or core.pool.current is None:
            return None
        return core.pool.current.display

    @property
    def servers(self) -> list[str]:
        return self._core.pool.urls() if self._core is not None else []

    @property
    def discovered_servers(self) -> list[str]:
        return self._core.pool.urls(discovered_only=True) if self._core is not None else []

    @property
    def server_info(self) -> JSONObject:
        return dict(self._core.info) if self._core is not None else {}

    @property
    def max_payload(self) -> int:
        return self._core.max_payload if self._core is not None else 0

    @property
    def stats(self) -> dict[str, int]:
        return self._core.stats() if self._core is not None else {}

    @property
    def last_error(self) -> BaseException | None:
        return self._core.last_error if self._core is not None else None

    @property
    def tls_info(self) -> JSONObject | None:
        """The live TLS session while connected over TLS, else None: ``version``
        (``"TLSv1.3"``), ``cipher`` (its name), ``cipher_bits``, ``peer_cert`` (the
        server's certificate, decoded as ``ssl`` does; ``{}`` when it was not verified),
        ``peer_cert_der`` (its DER bytes), ``server_hostname``."""
        core = self._core
        tr = self._transport
        if core is None or tr is None or core.status != CONNECTED:
            return None
        return tr.tls_info

    @property
    def client_id(self) -> int | None:
        return self._core.info.get("client_id") if self._core is not None else None

    def jetstream(self, domain: str | None = None, api_prefix: str | None = None, timeout: float = 5.0,
                  publish_async_max_pending: int = 4000, trace_cb: Callable[..., object] | None = None,
                  publish_async_err_cb: Callable[..., object] | None = None,
                  validate: bool = False, publish_async_timeout: float | None = CONTEXT_TIMEOUT,
                  publish_async_ack_cb: Callable[..., object] | None = None) -> JetStream:
        """A JetStream context over this connection (options: see ``JetStream``;
        ``publish_async_timeout``: the default ack deadline of ``publish_async``, the
        context's ``timeout`` unless given, None for none; ``publish_async_ack_cb(ack)``:
        called for every acknowledged ``publish_async``)."""
        from .jetstream import JetStream

        return JetStream(self, domain=domain, api_prefix=api_prefix, timeout=timeout,
                         publish_async_max_pending=publish_async_max_pending, trace_cb=trace_cb,
                         publish_async_err_cb=publish_async_err_cb, validate=validate,
                         publish_async_timeout=publish_async_timeout, publish_async_ack_cb=publish_async_ack_cb)


class Link:
    """The connection's narrow interface for the layers above it (``nc.link``); the
    contract is :class:`jetwire.connection.interface.Link`."""

    __slots__ = ("_nc",)

    def __init__(self, nc: Client) -> None:
        self._nc = nc

    @property
    def client(self) -> Client:
        return self._nc

    @property
    def is_connected(self) -> bool:
        return self._nc.is_connected

    @property
    def is_closed(self) -> bool:
        return self._nc.is_closed

    @property
    def max_payload(self) -> int:
        return self._nc.max_payload

    @property
    def pending_limits(self) -> tuple[int, int]:
        opts = self._opts()
        return opts.pending_msgs_limit, opts.pending_bytes_limit

    @property
    def drain_timeout(self) -> float:
        return self._opts().drain_timeout

    def _opts(self) -> Options:
        core = self._nc._core
        return core.opts if core is not None else Options()

    def new_inbox(self) -> str:
        return self._nc.new_inbox()

    # -- sending -----------------------------------------------------------------------
    def publish_raw(self, subject: str, reply: str | None, headers: bytes | None, payload: bytes | bytearray | memoryview) -> None:
        nc = self._nc
        if headers is None:
            nc.publish(subject, payload, reply)  # connected: the outbox's compiled fast path
            return
        nc._append_raw(subject, reply, headers, payload)
        nc._writer.kick()

    def try_publish(self, subject: str, reply: str | None, payload: bytes) -> bool:
        return self._nc._try_publish(subject, reply, payload)

    def publish_request(self, subject: str, reply: str, payload: bytes) -> None:
        nc = self._nc
        nc._append_raw(subject, reply, None, payload)
        nc._writer.flush_now()  # aio-only
        # sync-only: nc._writer.send_soon()

    def try_publish_frames(self, frames: Any, count: int, payload_bytes: int) -> bool:
        return self._nc._try_append_frames(frames, count, payload_bytes)

    def double_ack(self, msg: Msg, reply: str, payload: bytes, timeout: float | None) -> Any:
        return self._nc._js_double_ack(msg, reply, payload, timeout)

    def request_nowait(self, subject: str, payload: bytes = b"") -> bool:
        nc = self._nc
        if not nc.is_connected:
            return False
        # the answer goes to a token of the shared inbox that nobody waits for
        return nc._try_publish(subject, nc._resp_mux() + "_", payload)

    def send_now(self) -> None:
        self._nc._writer.flush_now()  # aio-only
        # sync-only: self._nc._writer.send_soon()  # (a thread writing takes them along: no wait for it)

    def hold_writes(self, seconds: float) -> None:
        self._nc._writer.hold(seconds)

    def release_writes(self) -> None:
        self._nc._writer.release()

    def new_signal(self) -> Any:
        return self._nc._new_signal()

    def ping(self, waiter: _api.Waiter) -> bool:
        nc = self._nc
        if not nc.is_connected:
            return False
        nc._ping(waiter)
        return True

    def callback_thread(self, pending: Sized) -> None:
        return None  # aio-only
        # sync-only: self._nc._writer.callback_thread(pending)

    async def wait_writable(self, timeout: float | None = None) -> None:
        writer = self._nc._writer
        if writer is not None and writer.congested:
            await writer.drain(timeout)

    # -- receiving ---------------------------------------------------------------------
    def subscribe_direct(self, subject: str, handler: Callable[[Msg], None], queue: str | None = None,
                         wake: WakeSignal | None = None) -> Subscription:
        return self._nc._subscribe(subject, queue, None, 0, -1, -1, handler, wake)

    def unsubscribe(self, sub: _api.DirectSub) -> None:
        self._nc._drop_sub(cast(Subscription, sub))

    # -- request / reply ---------------------------------------------------------------
    async def request_raw(self, subject: str, payload: bytes | bytearray | memoryview, headers: bytes | None,
                          timeout: float) -> Msg:
        nc = self._nc
        wait_limit(timeout)  # a NaN raises before anything is sent
        token, fut = nc._start_request(subject, payload, headers)
        return await nc._wait_reply(subject, token, fut, timeout)

    # -- connection events -------------------------------------------------------------
    def on_reconnect(self, cb: Callable[[], None]) -> Callable[[], None]:
        return _register(self._nc._on_reconnect, cb)

    def on_lost(self, cb: Callable[[BaseException], None]) -> Callable[[], None]:
        return _register(self._nc._on_lost_cbs, cb)

    def on_close(self, cb: Callable[[BaseException], None]) -> Callable[[], None]:
        return _register(self._nc._on_close_cbs, cb)

    def on_drain(self, cb: Callable[[float], Any]) -> Callable[[], None]:
        return _register(self._nc._on_drain_cbs, cb)

    def on_error(self, cb: Callable[[BaseException], None]) -> Callable[[], None]:
        return _register(self._nc._on_error_cbs, cb)

    def shared(self, key: str, make: Callable[[], T]) -> T:
        shared = self._nc._shared
        obj = shared.get(key)
        if obj is None:
            obj = shared[key] = make()
        return obj

    # -- errors, timers, background work -----------------------------------------------
    def report_error(self, exc: BaseException) -> None:
        self._nc._report_error(exc)

    def dispatch(self, cb: Callable[..., object], *args: object) -> None:
        nc = self._nc
        sched = nc._sched
        if sched is not None and not nc._quiet():
            sched.dispatch(cb, *args)

    def call_later(self, delay: float, fn: Callable[..., object], *args: object) -> Cancellable:
        sched: prims.Scheduler = self._nc._sched
        return sched.call_later(delay, fn, *args)

    def call_every(self, interval: float, fn: Callable[[], object]) -> Cancellable:
        sched: prims.Scheduler = self._nc._sched
        return sched.call_every(interval, fn)

    def spawn(self, fn: Callable[..., Awaitable[object]], *args: object) -> object:  # aio-only
    # sync-only: def spawn(self, fn: Callable[..., object], *args: object) -> object:
        return prims.spawn(self._guarded, fn, *args)

    async def _guarded(self, fn: Callable[..., Awaitable[object]], *args: object) -> None:  # aio-only
    # sync-only: def _guarded(self, fn: Callable[..., object], *args: object) -> None:
        try:
            await fn(*args)
        except Exception as exc:
            self._nc._report_error(exc)


def _register(cbs: list[_CB], cb: _CB) -> Callable[[], None]:
    cbs.append(cb)

    def remove() -> None:
        try:
            cbs.remove(cb)
        except ValueError:
            pass

    return remove


_P = ParamSpec("_P")


def _suggest_options(func: Callable[_P, Coroutine[Any, Any, Client]]) -> Callable[_P, Coroutine[Any, Any, Client]]:  # aio-only
# sync-only: def _suggest_options(func: Callable[_P, Client]) -> Callable[_P, Client]:
    """``connect`` whose ``TypeError`` for a keyword that is not an option names the
    nearest one (``pasword=`` -> did you mean 'password'?)."""
    valid = frozenset(inspect.signature(func).parameters)

    @functools.wraps(func)
    async def checked(*args: _P.args, **kwargs: _P.kwargs) -> Client:
        for key in kwargs:
            if key not in valid:
                raise unexpected_keyword(func.__name__, key, valid)
        return await func(*args, **kwargs)

    return checked


# BEGIN connect(): generated by tools/gen_connect.py from jetwire.options.Options. Do not edit.
@_suggest_options
async def connect(
    servers: str | Sequence[str] | None = None,
    *,
    name: str | None = None,
    user: str | None = None,
    password: str | None = None,
    token: str | None = None,
    nkey_seed: str | bytes | os.PathLike[str] | None = None,
    creds: str | bytes | os.PathLike[str] | tuple[str, str] | None = None,
    token_cb: Callable[[], object] | None = None,
    user_cb: Callable[[], object] | None = None,
    user_jwt_cb: Callable[[], object] | None = None,
    signature_cb: Callable[[bytes], object] | None = None,
    nkey: str | None = None,
    user_jwt: str | None = None,
    tls: ssl.SSLContext | bool | None = None,
    tls_hostname: str | None = None,
    tls_handshake_first: bool = False,
    tls_ca_file: str | None = None,
    tls_cert_file: str | None = None,
    tls_key_file: str | None = None,
    tls_context_cb: Callable[[], object] | None = None,
    no_echo: bool = False,
    verbose: bool = False,
    pedantic: bool = False,
    connect_timeout: float = 2.0,
    ping_interval: float = 120.0,
    max_pings_outstanding: int = 2,
    allow_reconnect: bool = True,
    retry_on_failed_connect: bool = False,
    max_reconnect_attempts: int = 60,
    reconnect_time_wait: float = 2.0,
    reconnect_jitter: float = 0.1,
    reconnect_jitter_tls: float = 1.0,
    reconnect_buffer_size: int = 8 * 1024 * 1024,
    reconnect_delay_cb: Callable[[int], object] | None = None,
    reconnect_to_server_cb: Callable[[list[str], Any], object] | None = None,
    ignore_auth_error_abort: bool = False,
    no_callbacks_after_close: bool = False,
    socket_factory: Callable[[str, int, float], Any] | None = None,
    ws_proxy_path: str | None = None,
    ws_compression: bool = False,
    ws_headers: Mapping[str, str | bytes | Sequence[str | bytes]] | None = None,
    ws_headers_cb: Callable[[], object] | None = None,
    skip_subject_validation: bool = False,
    ignore_discovered_servers: bool = False,
    permission_err_on_subscribe: bool = False,
    dont_randomize: bool = False,
    inbox_prefix: str = "_INBOX",
    pending_msgs_limit: int = 512 * 1024,
    pending_bytes_limit: int = 128 * 1024 * 1024,
    drain_timeout: float = 30.0,
    flush_timeout: float = 10.0,
    busy_poll: float = 200e-6,
    poll_io: bool | None = None,
    max_control_line: int = 1048576,
    error_cb: ErrorCallback | None = None,
    disconnected_cb: Callable[[], object] | None = None,
    reconnected_cb: Callable[[], object] | None = None,
    closed_cb: Callable[[], object] | None = None,
    reconnect_error_cb: Callable[[Exception], object] | None = None,
    connected_cb: Callable[[], object] | None = None,
    discovered_servers_cb: Callable[[], object] | None = None,
    lame_duck_mode_cb: Callable[[], object] | None = None,
) -> Client:
    """Connect to NATS and return the connected client.

    Args:
        servers: a URL, a comma-separated string of URLs or a list of them (default
            ``nats://127.0.0.1:4222``).
        name (str | None, default None): The client's name, shown by the server (monitoring ``connz``).
        user (str | None, default None): User name (also taken from a ``nats://user:pass@host`` URL).
        password (str | None, default None): Password for ``user``.
        token (str | None, default None): Authentication token (also taken from a ``nats://token@host``
            URL).
        nkey_seed (str | bytes | os.PathLike[str] | None, default None): An nkey seed, or the path of a
            file holding one (``~`` and ``$VAR`` expanded).
        creds (str | bytes | os.PathLike[str] | tuple[str, str] | None, default None): A ``.creds``
            file's path (``~`` and ``$VAR`` expanded), its text (``str`` or ``bytes``), or a (jwt file,
            seed file) pair.
        token_cb (Callable[[], object] | None, default None): ``() -> token``, asked on every
            (re)connect (a coroutine function too, in the asyncio flavour).
        user_cb (Callable[[], object] | None, default None): ``() -> (user, password)``, asked on every
            (re)connect.
        user_jwt_cb (Callable[[], object] | None, default None): ``() -> user JWT``, asked on every
            (re)connect; needs ``signature_cb``.
        signature_cb (Callable[[bytes], object] | None, default None): ``(nonce) -> signature``: signs
            the server's nonce (the client never sees the seed).
        nkey (str | None, default None): The public nkey, used with ``signature_cb`` or ``nkey_seed``.
        user_jwt (str | None, default None): A user JWT as a string; needs ``nkey_seed``.
        tls (ssl.SSLContext | bool | None, default None): An ``ssl.SSLContext``, or True for the default
            context (``tls://`` URLs imply TLS).
        tls_hostname (str | None, default None): The name to verify the server's certificate against
            (default: the URL's host).
        tls_handshake_first (bool, default False): Start TLS before the server's INFO (servers with
            ``handshake_first``).
        tls_ca_file (str | None, default None): CA bundle that verifies the server's certificate.
        tls_cert_file (str | None, default None): Client certificate (mutual TLS).
        tls_key_file (str | None, default None): The client certificate's key; needs ``tls_cert_file``.
        tls_context_cb (Callable[[], object] | None, default None): ``() -> ssl.SSLContext``, asked on
            every connect (rotated certificates apply).
        no_echo (bool, default False): Do not receive the messages this connection publishes.
        verbose (bool, default False): Ask the server to acknowledge every protocol message (+OK).
        pedantic (bool, default False): Ask the server for strict protocol checks.
        connect_timeout (float, default 2.0): Seconds to open a connection and complete the handshake.
        ping_interval (float, default 120.0): Seconds between client PINGs.
        max_pings_outstanding (int, default 2): Unanswered PINGs before the connection counts as stale
            and is dropped (at least 1).
        allow_reconnect (bool, default True): Reconnect when the connection is lost.
        retry_on_failed_connect (bool, default False): When the first connect fails, return at once and
            keep trying in the background.
        max_reconnect_attempts (int, default 60): Reconnect attempts per server before it leaves the
            pool (-1: no limit).
        reconnect_time_wait (float, default 2.0): Seconds between two attempts on the same server.
        reconnect_jitter (float, default 0.1): Random extra seconds (at most) added to
            ``reconnect_time_wait``.
        reconnect_jitter_tls (float, default 1.0): The same for TLS connections.
        reconnect_buffer_size (int, default 8 * 1024 * 1024): Bytes of publishes kept while reconnecting
            (over it: ``ReconnectBufferFullError``).
        reconnect_delay_cb (Callable[[int], object] | None, default None): ``(passes) -> seconds``: the
            pause before each pass over the pool (replaces the wait and jitter).
        reconnect_to_server_cb (Callable[[list[str], Any], object] | None, default None): ``(servers,
            info) -> (server, delay)`` or None: picks each reconnect's server (nats.go's
            ReconnectToServer).
        ignore_auth_error_abort (bool, default False): Keep reconnecting after the same authorization
            error twice (default: close).
        no_callbacks_after_close (bool, default False): No callbacks (closed_cb, disconnected_cb, ...)
            once ``close()``/``drain()`` was called.
        socket_factory (Callable[[str, int, float], Any] | None, default None): ``(host, port, timeout)
            -> socket``: dials instead of the default (e.g. through a proxy).
        ws_proxy_path (str | None, default None): WebSocket: a path appended to each
            ``ws://``/``wss://`` URL's path.
        ws_compression (bool, default False): WebSocket: permessage-deflate when the server allows it.
        ws_headers (Mapping[str, str | bytes | Sequence[str | bytes]] | None, default None): WebSocket:
            HTTP headers of the upgrade request (name -> value or list of values).
        ws_headers_cb (Callable[[], object] | None, default None): WebSocket: ``() -> headers``, asked
            on every connect (instead of ``ws_headers``).
        skip_subject_validation (bool, default False): No client-side subject checks on publish and
            subscribe (the server still refuses what it cannot take).
        ignore_discovered_servers (bool, default False): Do not add the servers the cluster announces to
            the pool.
        permission_err_on_subscribe (bool, default False): A subscription the server refuses fails its
            ``next_msg()`` and iteration with ``PermissionViolationError``.
        dont_randomize (bool, default False): Try the servers in the order given (default: shuffled).
        inbox_prefix (str, default "_INBOX"): The prefix of reply subjects (``new_inbox()``, requests).
        pending_msgs_limit (int, default 512 * 1024): Messages a subscription may hold undelivered
            before it is a slow consumer.
        pending_bytes_limit (int, default 128 * 1024 * 1024): Bytes a subscription may hold undelivered
            before it is a slow consumer.
        drain_timeout (float, default 30.0): Seconds ``drain()`` may take before it raises
            ``DrainTimeoutError``.
        flush_timeout (float, default 10.0): Seconds ``flush()`` waits for the server's PONG by default.
        busy_poll (float, default 200e-6): Seconds the event loop (asyncio) polls for an expected reply
            instead of sleeping, and the longest poll of ``poll_io`` (0: off).
        poll_io (bool | None, default None): While traffic flows, keep polling the socket for up to
            ``busy_poll`` seconds after each read (and, asyncio, each write) instead of sleeping: None
            (default) where the process may use 4 or more CPUs, where a sleeping core's wake-up costs
            more than the poll.
        max_control_line (int, default 1048576): Longest protocol line accepted from the server, in
            bytes: a bound against a broken server, not the server's own ``max_control_line`` (its MSG
            lines add the sid and the reply subject to what was published, its INFO lists the cluster's
            URLs).
        error_cb (ErrorCallback | None, default None): ``(error)``: asynchronous errors (slow consumers,
            refused subscriptions, ...): an ``Exception``, in the asyncio flavour also a callback's own
            ``asyncio.CancelledError``.
        disconnected_cb (Callable[[], object] | None, default None): ``()``: the connection was lost.
        reconnected_cb (Callable[[], object] | None, default None): ``()``: the connection is back.
        closed_cb (Callable[[], object] | None, default None): ``()``: the connection is closed for
            good.
        reconnect_error_cb (Callable[[Exception], object] | None, default None): ``(error)``: a failed
            reconnect attempt (default: it goes to ``error_cb``).
        connected_cb (Callable[[], object] | None, default None): ``()``: the first connection is made
            (also a late one, with ``retry_on_failed_connect``).
        discovered_servers_cb (Callable[[], object] | None, default None): ``()``: the cluster announced
            new servers.
        lame_duck_mode_cb (Callable[[], object] | None, default None): ``()``: the server is entering
            lame duck mode (about to shut down).

    A keyword that is not an option raises ``TypeError`` naming the nearest one.
    """
    opts = make_options(servers, {
        'name': name,
        'user': user,
        'password': password,
        'token': token,
        'nkey_seed': nkey_seed,
        'creds': creds,
        'token_cb': token_cb,
        'user_cb': user_cb,
        'user_jwt_cb': user_jwt_cb,
        'signature_cb': signature_cb,
        'nkey': nkey,
        'user_jwt': user_jwt,
        'tls': tls,
        'tls_hostname': tls_hostname,
        'tls_handshake_first': tls_handshake_first,
        'tls_ca_file': tls_ca_file,
        'tls_cert_file': tls_cert_file,
        'tls_key_file': tls_key_file,
        'tls_context_cb': tls_context_cb,
        'no_echo': no_echo,
        'verbose': verbose,
        'pedantic': pedantic,
        'connect_timeout': connect_timeout,
        'ping_interval': ping_interval,
        'max_pings_outstanding': max_pings_outstanding,
        'allow_reconnect': allow_reconnect,
        'retry_on_failed_connect': retry_on_failed_connect,
        'max_reconnect_attempts': max_reconnect_attempts,
        'reconnect_time_wait': reconnect_time_wait,
        'reconnect_jitter': reconnect_jitter,
        'reconnect_jitter_tls': reconnect_jitter_tls,
        'reconnect_buffer_size': reconnect_buffer_size,
        'reconnect_delay_cb': reconnect_delay_cb,
        'reconnect_to_server_cb': reconnect_to_server_cb,
        'ignore_auth_error_abort': ignore_auth_error_abort,
        'no_callbacks_after_close': no_callbacks_after_close,
        'socket_factory': socket_factory,
        'ws_proxy_path': ws_proxy_path,
        'ws_compression': ws_compression,
        'ws_headers': ws_headers,
        'ws_headers_cb': ws_headers_cb,
        'skip_subject_validation': skip_subject_validation,
        'ignore_discovered_servers': ignore_discovered_servers,
        'permission_err_on_subscribe': permission_err_on_subscribe,
        'dont_randomize': dont_randomize,
        'inbox_prefix': inbox_prefix,
        'pending_msgs_limit': pending_msgs_limit,
        'pending_bytes_limit': pending_bytes_limit,
        'drain_timeout': drain_timeout,
        'flush_timeout': flush_timeout,
        'busy_poll': busy_poll,
        'poll_io': poll_io,
        'max_control_line': max_control_line,
        'error_cb': error_cb,
        'disconnected_cb': disconnected_cb,
        'reconnected_cb': reconnected_cb,
        'closed_cb': closed_cb,
        'reconnect_error_cb': reconnect_error_cb,
        'connected_cb': connected_cb,
        'discovered_servers_cb': discovered_servers_cb,
        'lame_duck_mode_cb': lame_duck_mode_cb,
    })
    nc = Client()
    await nc._connect(opts)
    return nc
# END connect()


if TYPE_CHECKING:  # this flavour implements the interfaces declared once (mypy checks it)
    from ..connection import interface as _api

    _prims_api: _api.PrimsAPI = prims

    def _conforms(tr: Transport, writer: Writer, link: Link, sched: prims.Scheduler) -> None:
        _tr: _api.TransportAPI = tr
        _writer: _api.WriterAPI = writer
        _link: _api.Link = link
        _sched: _api.SchedulerAPI = sched
