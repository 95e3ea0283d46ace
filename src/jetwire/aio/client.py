"""The NATS client. This asyncio source is also the blocking client: ``jetwire/_sync/client.py``
is generated from it by ``tools/gen_sync.py`` (never edit the generated file)."""
from __future__ import annotations

import logging
import random
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

import orjson

from .. import _impl
from ..core import (
    ACT_DISCOVERED,
    ACT_ERROR,
    ACT_FATAL,
    ACT_LDM,
    ACT_PONG,
    CLOSED,
    CONNECTED,
    CONNECTING,
    DISCONNECTED,
    DRAINING_PUBS,
    DRAINING_SUBS,
    PING,
    PONG,
    RECONNECTING,
    ConnectionCore,
    SubscriptionBase,
)
from ..errors import (
    AuthorizationError,
    BadSubjectError,
    ConnectionClosedError,
    ConnectionLostError,
    DrainTimeoutError,
    MaxPayloadError,
    MsgAlreadyAckedError,
    NatsError,
    NoServersError,
    NotJSMessageError,
    ReconnectBufferFullError,
    SubscriptionClosedError,
    TimeoutError,
)
from ..msg import Msg
from ..options import Options, Server, make_options
from . import _prims as prims
from ._transport import Transport, Writer

log = logging.getLogger("jetwire")

_append_sub = _impl.append_sub
_append_unsub = _impl.append_unsub
_encode_headers = _impl.encode_headers
_DONE = _impl.DONE  # what the asyncio publish fast path returns


class Subscription(SubscriptionBase):
    """A subscription: ``next_msg()``, iteration, ``unsubscribe()``, ``drain()``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<Subscription sid={self.sid} subject={self.subject!r} queue={self.queue!r}>"

    async def next_msg(self, timeout: Optional[float] = 1.0) -> Msg:
        """The next message; ``TimeoutError`` after ``timeout`` seconds (None waits forever)."""
        if self._cb is not None:
            raise NatsError("next_msg() is not available on a subscription with a callback")
        msg = self._take()
        if msg is not None:
            return msg
        deadline = None if timeout is None else time.monotonic() + timeout
        signal = self._signal
        while True:
            signal.clear()
            msg = self._take()
            if msg is not None:
                return msg
            if self._closed:
                if self._core.status == CLOSED:
                    raise ConnectionClosedError("connection closed")
                raise SubscriptionClosedError("subscription closed")
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise TimeoutError("timed out waiting for a message")
            await signal.wait(remaining)

    def __aiter__(self) -> "Subscription":
        return self

    async def __anext__(self) -> Msg:
        try:
            return await self.next_msg(None)
        except (SubscriptionClosedError, ConnectionClosedError):
            raise StopAsyncIteration from None

    async def _run_cb(self) -> None:
        cb = self._cb
        pending = self._pending
        signal = self._signal
        client = self._core.client
        outbox = self._core.outbox
        report = client._report_error  # a failing callback must not stop delivery
        deliver = self._deliver  # cb(msg) for each pending message, in compiled code
        while True:
            signal.clear()
            # sync-only: client._writer.callback_thread(pending)
            while True:
                r = deliver(cb, report)
                if r is None:
                    break
                try:
                    await r  # the callback returned an awaitable
                except Exception as exc:
                    report(exc)
            if outbox.buf:
                client._writer.flush_now()  # the callbacks are done: send what they published
            if self._slow and len(pending) < self._pmsgs_limit // 2:
                self._slow = False
            if self._closed and not pending:
                return
            await signal.wait()

    async def unsubscribe(self, max_msgs: int = 0) -> None:
        """Stop now, or after ``max_msgs`` messages in total have been delivered."""
        core = self._core
        client = core.client
        if self._closed:
            return
        if core.status == CLOSED:
            raise ConnectionClosedError("connection closed")
        if max_msgs and self.delivered < max_msgs:
            self._max = max_msgs
            with client._writer.lock:
                _append_unsub(core.wbuf, self.sid, max_msgs)
            client._writer.kick()
            return
        core.subs.pop(self.sid, None)
        self._pending.clear()
        self._pending_bytes = 0
        self._mark_closed()
        with client._writer.lock:
            _append_unsub(core.wbuf, self.sid, 0)
        client._writer.kick()

    async def drain(self, timeout: Optional[float] = None) -> None:
        """Unsubscribe, let already-received messages be handled, then close."""
        core = self._core
        client = core.client
        if self._closed:
            return
        with client._writer.lock:
            _append_unsub(core.wbuf, self.sid, 0)
        self._draining = True
        try:
            await client.flush(timeout or core.opts.drain_timeout)
        except ConnectionClosedError:
            pass
        core.subs.pop(self.sid, None)
        self._mark_closed()
        if self._task is not None:
            if not await prims.join(self._task, timeout or core.opts.drain_timeout):
                raise DrainTimeoutError("subscription drain timed out")


class Client:
    """A connection to NATS. Make one with ``connect()``."""

    def __init__(self) -> None:
        self._core: Optional[ConnectionCore] = None
        self._writer: Any = None
        self._transport: Optional[Transport] = None
        self._ping_timer: Any = None
        self._close_signal = prims.Signal()
        self._reconnect_task: Any = None
        self._js_pub_mux: Any = None
        # plain callables run (on the loop / reconnect thread) right after each reconnect;
        # they must not block (JetStream consumers use them to re-pull)
        self._reconnect_listeners: List[Callable[[], None]] = []

    # -- connecting ------------------------------------------------------------------
    async def _connect(self, opts: Options) -> None:
        core = ConnectionCore(opts, self)
        self._core = core
        self._writer = Writer(core)  # sets the outbox's threshold, on_first/on_full and lock
        outbox = core.outbox
        outbox.slow = self._publish_slow
        outbox.ret = _impl.DONE  # aio-only
        # the common publish is one call into the outbox (see Client.publish)
        self.publish = outbox.publish
        core.status = CONNECTING
        last: Optional[BaseException] = None
        auth_err: Optional[BaseException] = None
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
            self._ping_timer = prims.Timer(opts.ping_interval, self._on_ping_timer)
            return
        core.last_error = auth_err or last
        if opts.retry_on_failed_connect and opts.allow_reconnect:
            core.status = RECONNECTING
            self._ping_timer = prims.Timer(opts.ping_interval, self._on_ping_timer)
            self._reconnect_task = prims.spawn(self._reconnect_loop, False)
            return
        core.status = CLOSED
        self._writer.close()
        if auth_err is not None:
            raise auth_err
        raise NoServersError(f"could not connect to any server: {last}") from last

    async def _connect_server(self, srv: Server) -> None:
        core = self._core
        assert core is not None
        opts = core.opts
        ctx = opts.ssl_context()
        if ctx is None and (srv.scheme == "tls"):
            import ssl

            ctx = ssl.create_default_context()
        tr = Transport()
        fut: Any = None
        head = await tr.open(srv.host, srv.port, opts.connect_timeout, ctx, opts.tls_handshake_first,
                             opts.tls_hostname, self._need_tls_for(srv, ctx))
        try:
            idx = head.find(b"\r\n")
            line = head[:idx]
            if line[:4].upper() != b"INFO":
                raise NatsError(f"expected INFO from server, got {line[:64]!r}")
            try:
                info = orjson.loads(line[5:])
            except orjson.JSONDecodeError as exc:
                from ..errors import ProtocolError

                raise ProtocolError(f"bad INFO from server: {line[:64]!r}") from exc
            core.parser.reset()
            core.process_info(info, initial=True)
            if not core.headers_ok:
                raise NatsError("server does not support headers")
            core.handshaking = True
            fut = prims.new_future()
            core.pongs.appendleft(fut)
            connect = core.connect_line(srv.user, srv.password)
            tr.start(self._on_data, lambda exc, _tr=tr: self._on_lost(_tr, exc), head[idx + 2:])
            tr.write(connect + PING)
            try:
                await prims.wait_future(fut, opts.connect_timeout)
            except TimeoutError:
                raise TimeoutError("timed out waiting for the server to accept CONNECT") from None
        except BaseException:
            core.handshaking = False
            if fut is not None:
                try:
                    core.pongs.remove(fut)
                except ValueError:
                    pass
            tr.abort()
            raise
        core.handshaking = False
        srv.did_connect = True
        srv.reconnects = 0
        core.pool.current = srv
        self._transport = tr
        self._connected_url = srv.url
        with self._writer.lock:
            # the subscriptions go first, then what was published while disconnected
            core.wbuf[:0] = core.resubscribe_bytes()
        core.status = CONNECTED
        core.pings_out = 0
        self._writer.set_transport(tr)
        self._writer.flush_now()

    def _need_tls_for(self, srv: Server, ctx: Any) -> Callable[[bytes], bool]:
        def need(head: bytes) -> bool:
            if ctx is not None:
                return True
            line = head.split(b"\r\n", 1)[0]
            try:
                info = orjson.loads(line[5:])
            except orjson.JSONDecodeError:
                return False
            return bool(info.get("tls_required"))

        return need

    # -- reading ---------------------------------------------------------------------
    def _on_data(self, data: bytes) -> None:
        core = self._core
        try:
            core.feed(data)  # type: ignore[union-attr]
        except Exception as exc:
            core.last_error = exc  # type: ignore[union-attr]
            tr = self._transport
            if tr is not None:
                self._report_error(exc)
                self._on_lost(tr, exc)
            else:
                core.fail_pongs(exc)  # type: ignore[union-attr]
            return
        if core.actions:  # type: ignore[union-attr]
            self._handle_actions()

    def _handle_actions(self) -> None:
        core = self._core
        assert core is not None
        opts = core.opts
        for kind, arg in core.take_actions():
            if kind == ACT_PONG:
                with self._writer.lock:
                    core.wbuf += PONG
                self._writer.kick()
            elif kind == ACT_ERROR:
                self._report_error(arg)
            elif kind == ACT_DISCOVERED:
                if opts.discovered_servers_cb is not None:
                    prims.spawn_soon(self._call_cb, opts.discovered_servers_cb)
            elif kind == ACT_LDM:
                if opts.lame_duck_mode_cb is not None:
                    prims.spawn_soon(self._call_cb, opts.lame_duck_mode_cb)
            elif kind == ACT_FATAL:
                core.last_error = arg
                self._report_error(arg)
                tr = self._transport
                if tr is not None:
                    self._on_lost(tr, arg)

    def _report_error(self, exc: BaseException) -> None:
        core = self._core
        if core is not None:
            core.last_error = exc
            cb = core.opts.error_cb
            if cb is not None:
                prims.spawn_soon(self._call_cb, cb, exc)
                return
        log.error("jetwire: %s", exc)

    async def _call_cb(self, cb: Callable[..., Any], *args: Any) -> None:
        try:
            await prims.call(cb, *args)
        except Exception:
            log.exception("jetwire: callback %r failed", cb)

    def _on_lost(self, tr: Transport, exc: Optional[BaseException]) -> None:
        """The transport died (socket error, EOF, protocol error, stale connection)."""
        core = self._core
        if core is None:
            return
        if core.handshaking:
            core.fail_pongs(exc or ConnectionClosedError("connection lost during handshake"))
            return
        if tr is not self._transport:
            return
        self._transport = None
        self._writer.set_transport(None)
        tr.abort()
        if core.status == CLOSED:
            return
        core.fail_pongs(ConnectionClosedError("connection lost"))
        mux = self._js_pub_mux
        if mux is not None:  # the acks of what went out on this connection are lost with it
            mux.fail_sent(ConnectionLostError("connection lost before the JetStream publish ack arrived"))
        if core.opts.allow_reconnect and core.status not in (DRAINING_SUBS, DRAINING_PUBS):
            core.status = RECONNECTING
            prims.spawn_soon(self._reconnect_loop, True)
        else:
            prims.spawn_soon(self._close_after_loss)

    async def _close_after_loss(self) -> None:
        await self._close(flush=False)

    async def _reconnect_loop(self, was_connected: bool) -> None:
        core = self._core
        assert core is not None
        opts = core.opts
        if was_connected and opts.disconnected_cb is not None:
            await self._call_cb(opts.disconnected_cb)
        while core.status == RECONNECTING:
            srv = core.pool.next_server(opts.max_reconnect_attempts)
            if srv is None:
                break
            jitter = opts.reconnect_jitter_tls if srv.scheme == "tls" or opts.tls else opts.reconnect_jitter
            wait = srv.last_attempt + opts.reconnect_time_wait - time.monotonic()
            if srv.last_attempt and wait > 0:
                await self._close_signal.wait(wait + random.uniform(0, jitter))
                if core.status != RECONNECTING:
                    return
            srv.reconnects += 1
            srv.last_attempt = time.monotonic()
            try:
                await self._connect_server(srv)
            except Exception as exc:
                core.last_error = exc
                if isinstance(exc, AuthorizationError):
                    self._report_error(exc)
                continue
            if core.status == CONNECTED:
                core.reconnects += 1
                for listener in list(self._reconnect_listeners):
                    try:
                        listener()
                    except Exception:
                        log.exception("jetwire: reconnect listener %r failed", listener)
                if opts.reconnected_cb is not None:
                    await self._call_cb(opts.reconnected_cb)
                return
        if core.status == RECONNECTING:
            last = core.last_error
            core.last_error = NoServersError(f"reconnect attempts exhausted: {last}")
            await self._close(flush=False)

    def _on_ping_timer(self) -> None:
        core = self._core
        if core is None or core.status != CONNECTED:
            return
        send, stale = core.ping_tick()
        if stale is not None:
            core.last_error = stale
            self._report_error(stale)
            tr = self._transport
            if tr is not None:
                self._on_lost(tr, stale)
            return
        if send:
            with self._writer.lock:
                core.wbuf += PING
                core.pongs.append(None)
            self._writer.flush_now()

    # -- publishing ------------------------------------------------------------------
    def _check_publish(self, size: int) -> None:
        core = self._core
        st = core.status  # type: ignore[union-attr]
        if st == CLOSED:
            raise ConnectionClosedError("connection closed")
        if st == RECONNECTING or st == CONNECTING:
            limit = core.opts.reconnect_buffer_size  # type: ignore[union-attr]
            if limit < 0 or len(core.wbuf) + size > limit:  # type: ignore[union-attr]
                raise ReconnectBufferFullError("reconnect buffer is full")

    async def publish(self, subject: str, data: bytes = b"", reply: Optional[str] = None,
                      headers: Any = None) -> None:
        """Publish ``data`` to ``subject`` (optionally with a reply subject and headers).

        A connected client answers ``publish`` with ``core.outbox.publish`` (an instance
        attribute set on connect): while connected and not congested, a message without
        headers of at most ``max_payload`` bytes is queued in one call into compiled code
        (in ``jetwire.aio`` it returns an already-finished awaitable, so the message is
        queued even if the result is never awaited). Everything else -- headers,
        too-large payloads, disconnected, reconnecting, closed, a congested transport --
        comes here: this method is that slow path.
        """
        self._append(subject, data, reply, headers)
        writer = self._writer
        writer.kick()
        if writer.congested:
            await writer.drain()

    _publish_slow = publish

    def _append(self, subject: str, data: bytes, reply: Optional[str], headers: Any) -> None:
        """Check and queue one PUB/HPUB in the write buffer (sent by the caller's kick/flush)."""
        core = self._core
        if core.status != CONNECTED:  # type: ignore[union-attr]
            self._check_publish(len(data))
        outbox = core.outbox  # type: ignore[union-attr]
        if headers is None:
            if len(data) > outbox.max_payload:
                raise MaxPayloadError(f"message of {len(data)} bytes exceeds max_payload {outbox.max_payload}")
            with self._writer.lock:
                outbox.append_pub(subject, reply, data)
        else:
            hdr = _encode_headers(headers)
            if len(hdr) + len(data) > outbox.max_payload:
                raise MaxPayloadError(
                    f"message of {len(hdr) + len(data)} bytes exceeds max_payload {outbox.max_payload}")
            with self._writer.lock:
                outbox.append_hpub(subject, reply, hdr, data)

    def _publish_nowait(self, subject: str, data: bytes, reply: Optional[str] = None) -> bool:
        """Queue a PUB without waiting (safe from the reader and timers). Only while
        connected: returns False (nothing queued) otherwise."""
        core = self._core
        if core is None or core.status != CONNECTED:
            return False
        writer = self._writer
        with writer.lock:
            core.outbox.append_pub(subject, reply, data)
        writer.kick()
        return True

    async def publish_msg(self, msg: Msg) -> None:
        await self.publish(msg.subject, msg.data, msg.reply, msg.headers)

    # -- subscribing -----------------------------------------------------------------
    async def subscribe(self, subject: str, queue: Optional[str] = None, cb: Optional[Callable[..., Any]] = None,
                        max_msgs: int = 0, pending_msgs_limit: Optional[int] = None,
                        pending_bytes_limit: Optional[int] = None) -> Subscription:
        """Subscribe to ``subject`` (wildcards allowed), optionally in a queue group."""
        return self._subscribe(subject, queue, cb, max_msgs, pending_msgs_limit, pending_bytes_limit)

    def _subscribe(self, subject: str, queue: Optional[str], cb: Optional[Callable[..., Any]], max_msgs: int,
                   pending_msgs_limit: Optional[int], pending_bytes_limit: Optional[int],
                   direct: Optional[Callable[[Msg], None]] = None) -> Subscription:
        core = self._core
        assert core is not None
        if core.status == CLOSED:
            raise ConnectionClosedError("connection closed")
        if core.status in (DRAINING_SUBS, DRAINING_PUBS):
            raise ConnectionClosedError("connection is draining")
        _impl.validate_subject(subject)
        if queue is not None and queue != "":
            _impl.validate_subject(queue)
        else:
            queue = None
        opts = core.opts
        sid = core.next_sid()
        sub = Subscription(core, sid, subject, queue, cb, prims.Signal(),
                           opts.pending_msgs_limit if pending_msgs_limit is None else pending_msgs_limit,
                           opts.pending_bytes_limit if pending_bytes_limit is None else pending_bytes_limit)
        if sub._pmsgs_limit <= 0:
            sub._pmsgs_limit = 1 << 62
        if sub._pbytes_limit <= 0:
            sub._pbytes_limit = 1 << 62
        sub._direct = direct
        if max_msgs:
            sub._max = max_msgs
        core.subs[sid] = sub
        with self._writer.lock:
            _append_sub(core.wbuf, subject, queue, sid)
            if max_msgs:
                _append_unsub(core.wbuf, sid, max_msgs)
        if cb is not None:
            sub._task = prims.spawn(sub._run_cb, name=f"jetwire-sub-{sid}")
        self._writer.kick()
        return sub

    def _unsubscribe_nowait(self, sub: Subscription) -> None:
        """Drop ``sub`` at once without waiting (safe from the reader and timers)."""
        core = self._core
        if core is None or sub._closed:
            return
        core.subs.pop(sub.sid, None)
        sub._pending.clear()
        sub._pending_bytes = 0
        sub._mark_closed()
        if core.status == CLOSED:
            return
        with self._writer.lock:
            _append_unsub(core.wbuf, sub.sid, 0)
        self._writer.kick()

    # -- request/reply ---------------------------------------------------------------
    def _ensure_resp_mux(self) -> None:
        core = self._core
        assert core is not None
        if core.resp_sub is not None:
            return
        prefix = core.new_inbox() + "."
        core.set_resp_prefix(prefix)
        sub = self._subscribe(prefix + "*", None, None, 0, -1, -1)
        core.setup_resp_mux(sub)

    async def request(self, subject: str, data: bytes = b"", timeout: float = 1.0, headers: Any = None) -> Msg:
        """Send a request and wait for one reply (``NoRespondersError`` at once if nobody listens)."""
        core = self._core
        assert core is not None
        if core.resp_sub is None:
            self._ensure_resp_mux()
        token = core.next_resp_token()
        fut = prims.new_waiter()
        core.resp_map[token] = fut
        try:
            self._append(subject, data, core.resp_prefix + token, headers)
            self._writer.flush_now()  # a request waits: send now, not on the next turn
            return await prims.wait_future(fut, timeout)
        except TimeoutError:
            raise TimeoutError(f"request to {subject!r} timed out after {timeout}s") from None
        finally:
            core.resp_map.pop(token, None)

    def new_inbox(self) -> str:
        """A unique subject under the inbox prefix."""
        return self._core.new_inbox()  # type: ignore[union-attr]

    # -- flush / rtt -----------------------------------------------------------------
    async def flush(self, timeout: Optional[float] = None) -> None:
        """Send everything buffered and wait for the server to confirm (PING/PONG)."""
        core = self._core
        assert core is not None
        if core.status == CLOSED:
            raise ConnectionClosedError("connection closed")
        if timeout is None:
            timeout = core.opts.flush_timeout
        fut = prims.new_future()
        with self._writer.lock:
            core.wbuf += PING
            core.pongs.append(fut)
        self._writer.flush_now()
        try:
            await prims.wait_future(fut, timeout)
        except TimeoutError:
            raise TimeoutError("flush timed out") from None

    async def rtt(self) -> float:
        """Round-trip time to the server in seconds."""
        start = time.perf_counter()
        await self.flush()
        return time.perf_counter() - start

    # -- JetStream acks (used by Msg) --------------------------------------------------
    def _js_ack(self, msg: Msg, payload: bytes, terminal: bool, sync: bool, timeout: Optional[float]) -> Any:
        """Send an ack (``sync``: and wait for the server's confirmation). Returns what an
        asyncio caller awaits; a fire-and-forget ack queued by the publish fast path is
        already done (no coroutine per ack)."""
        if msg._ackd:
            raise MsgAlreadyAckedError("message was already acknowledged")
        reply = msg.reply
        if not reply or not reply.startswith("$JS.ACK."):
            raise NotJSMessageError("message is not a JetStream message")
        if sync:
            return self._js_ack_confirmed(msg, reply, payload, terminal, timeout)
        r = self.publish(reply, payload)
        if r is None or r is _DONE:  # queued (the blocking publish always returns None)
            if terminal:
                msg._ackd = True
            return r
        return self._js_ack_after(msg, r, terminal)  # the slow path: acked once it went through

    async def _js_ack_confirmed(self, msg: Msg, reply: str, payload: bytes, terminal: bool,
                                timeout: Optional[float]) -> None:
        await self.request(reply, payload, timeout or 5.0)
        if terminal:
            msg._ackd = True

    async def _js_ack_after(self, msg: Msg, sending: Any, terminal: bool) -> None:
        await sending
        if terminal:
            msg._ackd = True

    # -- draining / closing ----------------------------------------------------------
    async def drain(self, timeout: Optional[float] = None) -> None:
        """Unsubscribe everything, let pending messages be handled, flush, close."""
        core = self._core
        assert core is not None
        if core.status == CLOSED:
            return
        if timeout is None:
            timeout = core.opts.drain_timeout
        if core.status in (DRAINING_SUBS, DRAINING_PUBS):  # drained by another caller: wait for the close
            if not await self._close_signal.wait(timeout):
                raise DrainTimeoutError("drain timed out")
            return
        deadline = time.monotonic() + timeout
        core.status = DRAINING_SUBS
        subs = [s for s in core.subs.values() if s is not core.resp_sub]
        with self._writer.lock:
            for sub in subs:
                _append_unsub(core.wbuf, sub.sid, 0)
        try:
            if self._transport is not None:
                await self.flush(max(0.001, deadline - time.monotonic()))
            for sub in subs:
                core.subs.pop(sub.sid, None)
                sub._mark_closed()
            for sub in subs:
                if sub._task is not None:
                    if not await prims.join(sub._task, max(0.0, deadline - time.monotonic())):
                        raise DrainTimeoutError("drain timed out waiting for callbacks")
            core.status = DRAINING_PUBS
            if self._transport is not None:
                await self.flush(max(0.001, deadline - time.monotonic()))
        except TimeoutError as exc:
            await self._close(flush=False)
            raise DrainTimeoutError("drain timed out") from exc
        except DrainTimeoutError:
            await self._close(flush=False)
            raise
        except ConnectionClosedError:
            pass
        await self._close(flush=True)

    async def close(self) -> None:
        """Flush what is buffered (best effort) and close the connection."""
        await self._close(flush=True)

    async def _close(self, flush: bool) -> None:
        core = self._core
        if core is None or core.status == CLOSED:
            return
        core.status = CLOSED
        self._close_signal.set()
        if self._ping_timer is not None:
            self._ping_timer.cancel()
        tr = self._transport
        self._transport = None
        if flush and tr is not None:
            self._writer.flush_now()
            await self._writer.drain()
        self._writer.close()
        if tr is not None:
            tr.close()
        err = ConnectionClosedError("connection closed")
        core.fail_pongs(err)
        for fut in list(core.resp_map.values()):
            if not fut.done():
                fut.set_exception(err)
        core.resp_map.clear()
        subs = list(core.subs.values())
        core.subs.clear()
        for sub in subs:
            sub._mark_closed()
        if self._js_pub_mux is not None:
            self._js_pub_mux.fail_all(err)
        if core.opts.closed_cb is not None:
            await self._call_cb(core.opts.closed_cb)

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc: Any) -> None:
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
    def connected_url(self) -> Optional[str]:
        core = self._core
        if core is None or core.status != CONNECTED or core.pool.current is None:
            return None
        return core.pool.current.url

    @property
    def servers(self) -> List[str]:
        return self._core.pool.urls() if self._core is not None else []

    @property
    def discovered_servers(self) -> List[str]:
        return self._core.pool.urls(discovered_only=True) if self._core is not None else []

    @property
    def server_info(self) -> Dict[str, Any]:
        return dict(self._core.info) if self._core is not None else {}

    @property
    def max_payload(self) -> int:
        return self._core.max_payload if self._core is not None else 0

    @property
    def stats(self) -> Dict[str, int]:
        return self._core.stats() if self._core is not None else {}

    @property
    def last_error(self) -> Optional[BaseException]:
        return self._core.last_error if self._core is not None else None

    @property
    def client_id(self) -> Optional[int]:
        return self._core.info.get("client_id") if self._core is not None else None

    def jetstream(self, domain: Optional[str] = None, api_prefix: Optional[str] = None, timeout: float = 5.0,
                  publish_async_max_pending: int = 4000) -> Any:
        """A JetStream context over this connection."""
        from .jetstream import JetStream

        return JetStream(self, domain=domain, api_prefix=api_prefix, timeout=timeout,
                         publish_async_max_pending=publish_async_max_pending)


async def connect(servers: Union[str, Sequence[str], None] = None, **options: Any) -> Client:
    """Connect to NATS. ``servers`` is a URL, a comma-separated string or a list of URLs."""
    opts = make_options(servers, options)
    nc = Client()
    await nc._connect(opts)
    return nc
