"""The connection's interfaces, declared once (this is the asyncio source;
``interface_sync.py`` is generated from it by ``tools/gen_sync.py`` for the blocking
flavour: never edit that file).

``Link`` is the one narrow interface that every layer above the connection uses
(JetStream, key-value and object stores, push and pull consumers, services, Spark, the
CLI): ``nc.link``. Nothing above the connection touches the core, the writer or its
buffers. ``TransportAPI``, ``WriterAPI`` and ``PrimsAPI`` are what each flavour's
hand-written ``_transport.py`` and ``_prims.py`` implement (the asyncio flavour with
asyncio, the blocking flavour with threads and blocking sockets); the client is written
once against them.

Methods that are ``async`` in ``interface.py`` are coroutines in the asyncio flavour and
blocking calls in the blocking flavour (``interface_sync.py``). Handlers and callbacks marked "from the reader" run on the connection's
reader (the event loop, or the blocking flavour's reader thread): they must never block
or wait.
"""
from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable, Sized
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from .._typing import JSONObject

if TYPE_CHECKING:
    from ..aio.client import Client  # aio-only

    # sync-only: from .._sync.client import Client
    from ..msg import Msg

T = TypeVar("T")


class Cancellable(Protocol):
    """A scheduled call or timer: ``cancel()`` stops it (safe to repeat)."""

    def cancel(self) -> None: ...


class Waiter(Protocol):
    """What a PING waits with: a future, or anything with its ``done``, ``set_result``
    and ``set_exception``."""

    def done(self) -> bool: ...

    def set_result(self, result: Any, /) -> None: ...

    def set_exception(self, exception: BaseException, /) -> None: ...


class WakeSignal(Protocol):
    """A level-triggered wake-up flag (``prims.Signal``)."""

    def set(self) -> None: ...

    def clear(self) -> None: ...

    def is_set(self) -> bool: ...


class DirectSub(Protocol):
    """A subscription whose messages go straight to a handler (see ``Link.subscribe_direct``)."""

    sid: int
    subject: str

    @property
    def is_valid(self) -> bool: ...

    async def drain(self, timeout: float | None = None) -> None:
        """Stop taking new messages (UNSUB sent), let the handler see what the server sent
        before that (a PING/PONG round trip), then close."""


class Link(Protocol):
    """What the layers above the connection may use of it.

    Sending never blocks: ``publish_raw`` queues bytes in the connection's write buffer
    (sent at the end of the loop turn, by the blocking flavour's flusher, or at once with
    ``send_now``). Receiving goes through direct subscriptions whose handler is called
    from the reader for every message. Errors go to the user's ``error_cb`` through
    ``report_error``; timers and background jobs are the connection's own (one timer and
    one callback dispatcher per connection in the blocking flavour), and an exception in
    one of them goes to ``error_cb`` too.
    """

    # -- state -------------------------------------------------------------------------
    @property
    def client(self) -> Client:
        """The public client (``request``, ``flush``, ``subscribe``, ...)."""

    @property
    def is_connected(self) -> bool: ...

    @property
    def is_closed(self) -> bool: ...

    @property
    def max_payload(self) -> int: ...

    @property
    def pending_limits(self) -> tuple[int, int]:
        """A subscription's default pending limits (``connect()``'s ``pending_msgs_limit``,
        ``pending_bytes_limit``; 0 or less: none)."""

    @property
    def drain_timeout(self) -> float:
        """``connect()``'s ``drain_timeout``: how long a drain (of the connection, or of
        what a layer holds, e.g. a service's stop) may take by default."""

    def new_inbox(self) -> str:
        """A unique subject under the connection's inbox prefix."""

    # -- sending -----------------------------------------------------------------------
    def publish_raw(self, subject: str, reply: str | None, headers: bytes | None, payload: bytes | bytearray | memoryview) -> None:
        """Queue one PUB (``headers`` None) or HPUB (``headers``: an encoded header block).

        While reconnecting the message waits in the reconnect buffer. Raises
        ``ConnectionClosedError``, ``ReconnectBufferFullError`` or ``MaxPayloadError``
        (nothing queued then). Never blocks; safe from the reader."""

    def try_publish(self, subject: str, reply: str | None, payload: bytes) -> bool:
        """Queue a PUB only while connected (pull requests, flow-control answers): False,
        and nothing queued, otherwise. Never blocks; safe from the reader."""

    def try_publish_frames(self, frames: Any, count: int, payload_bytes: int) -> bool:
        """Queue ``count`` complete PUB/HPUB frames encoded by the caller (a bytes-like
        object; the caller has checked subjects and ``max_payload``), counted as ``count``
        messages of ``payload_bytes`` bytes in all, only while connected: False, and
        nothing queued, otherwise. Never blocks; safe from the reader. (Bulk publishers
        that encode a whole window at once, e.g. the Spark writer from Arrow buffers.)"""

    def request_nowait(self, subject: str, payload: bytes = b"") -> bool:
        """Send a request whose answer nobody waits for (e.g. delete a consumer on the
        way out). Only while connected; never blocks."""

    def double_ack(self, msg: Msg, reply: str, payload: bytes, timeout: float | None) -> Any:
        """``msg.ack_sync()``: ``payload`` goes to ``reply`` (the message's checked ack
        subject) at call time; the result (aio: an awaitable) waits for the server's
        confirmation, then marks ``msg`` acknowledged."""

    def publish_request(self, subject: str, reply: str, payload: bytes) -> None:
        """Queue a PUB whose answer the caller waits for with a timeout of its own (a pull,
        a discovery or restore request) and send it now, never waiting for room or for
        another writer (publish back-pressure is for publishers): the blocking flavour
        writes it from this thread or leaves it to the thread writing."""

    def send_now(self) -> None:
        """Hand what is queued to the socket now rather than at the end of the turn (the
        blocking flavour: unless another thread is writing, which takes it along; the
        caller's own timeout then bounds its wait for an answer, not a write deadline)."""

    def hold_writes(self, seconds: float) -> None:
        """Let plain publishes (acks) queue for up to ``seconds`` and leave in one write;
        requests, PINGs and ``send_now`` still send at once, taking the held bytes along."""

    def release_writes(self) -> None:
        """End ``hold_writes``: what was held leaves now."""

    def new_signal(self) -> Any:
        """A wake-up flag for a consumer's waits (a ``prims.Signal``; the blocking flavour's
        waiter polls before it sleeps where the connection polls, ``poll_io``)."""

    def ping(self, waiter: Waiter) -> bool:
        """Send a PING now, after everything queued: the server has processed all that
        went before once its PONG is back. ``waiter`` (``done()``, ``set_result(v)``,
        ``set_exception(e)``, like a future) is answered from the reader when the PONG
        arrives, or failed when the connection is lost. False, nothing sent, when not
        connected. Never blocks."""

    def callback_thread(self, pending: Sized) -> None:
        """The calling thread runs user callbacks fed from ``pending`` (a sized queue):
        while that is empty, its first publish is sent at once from this thread rather
        than by the flusher thread (blocking flavour; nothing to do in asyncio)."""

    async def wait_writable(self, timeout: float | None = None) -> None:
        """Return once the transport takes more bytes, or after ``timeout`` seconds
        (asyncio back-pressure; at once in the blocking flavour, whose writes block)."""

    # -- receiving ---------------------------------------------------------------------
    def subscribe_direct(self, subject: str, handler: Callable[[Msg], None], queue: str | None = None,
                         wake: WakeSignal | None = None) -> DirectSub:
        """Subscribe ``subject``; ``handler(msg)`` is called from the reader for every
        message (no queue, no pending limits). ``wake`` is set when the subscription is
        closed (by ``unsubscribe`` or the connection closing). Re-subscribed on reconnect."""

    def unsubscribe(self, sub: DirectSub) -> None:
        """Stop ``sub`` at once (UNSUB queued). Never blocks; safe from the reader."""

    # -- request / reply ---------------------------------------------------------------
    async def request_raw(self, subject: str, payload: bytes | bytearray | memoryview, headers: bytes | None,
                          timeout: float) -> Msg:
        """One request over the connection's shared inbox: the reply ``Msg``;
        ``NoRespondersError`` or ``TimeoutError``."""

    # -- connection events -------------------------------------------------------------
    def on_reconnect(self, cb: Callable[[], None]) -> Callable[[], None]:
        """``cb()`` after every reconnect (before ``reconnected_cb``; never blocks).
        Returns a function that removes it."""

    def on_lost(self, cb: Callable[[BaseException], None]) -> Callable[[], None]:
        """``cb(exc)`` when the connection is lost (it will try to reconnect)."""

    def on_close(self, cb: Callable[[BaseException], None]) -> Callable[[], None]:
        """``cb(exc)`` once, when the connection closes for good."""

    def on_error(self, cb: Callable[[BaseException], None]) -> Callable[[], None]:
        """``cb(exc)`` for every asynchronous error the connection reports (what
        ``error_cb`` hears: a refused subscription, a slow consumer, ...), before
        ``error_cb``; from whichever thread or task reports it: never blocks. Returns a
        function that removes it."""

    def on_drain(self, cb: Callable[[float], Awaitable[bool]]) -> Callable[[], None]:
        """``await cb(timeout)`` when the connection drains, before its subscriptions
        are unsubscribed, while it still carries everything: the layer finishes what it
        has (a ``consume()`` hands out what it holds, a service answers the requests it
        took, async publishes get their acks) within ``timeout`` seconds and returns
        whether it did. Returns a function that removes it."""

    def shared(self, key: str, make: Callable[[], T]) -> T:
        """One object per connection and ``key`` (made by ``make()`` on first use), e.g.
        the asynchronous-publish ack mux that every JetStream context shares."""

    # -- errors, timers, background work -----------------------------------------------
    def report_error(self, exc: BaseException) -> None:
        """Hand ``exc`` to the user's ``error_cb`` (on the callback dispatcher)."""

    def dispatch(self, cb: Callable[..., object], *args: object) -> None:
        """Call the user's callback ``cb(*args)`` (plain, or a coroutine function in
        aio) on the callback dispatcher, in order with the connection's other callbacks;
        nothing once the user closed the connection with ``no_callbacks_after_close``.
        An exception it raises goes to ``error_cb``."""

    def call_later(self, delay: float, fn: Callable[..., object], *args: object) -> Cancellable:
        """Call plain ``fn(*args)`` once after ``delay`` seconds on the connection's timer."""

    def call_every(self, interval: float, fn: Callable[[], object]) -> Cancellable:
        """Call plain ``fn()`` every ``interval`` seconds on the connection's timer."""

    def spawn(self, fn: Callable[..., Awaitable[object]], *args: object) -> object:  # aio-only
    # sync-only: def spawn(self, fn: Callable[..., object], *args: object) -> object:
        """Run ``fn(*args)`` (a coroutine function in aio) in the background: a task, or
        a thread in the blocking flavour (for rare, long jobs such as recreating a
        consumer). An exception goes to ``error_cb``."""


class TransportAPI(Protocol):
    """One connection to one server: each flavour's ``_transport.Transport``."""

    closed: bool

    async def open(self, host: str, port: int, timeout: float, tls: ssl.SSLContext | None,
                   tls_first: bool, tls_hostname: str | None,
                   need_tls: Callable[[bytes], bool]) -> bytes:
        """Connect (TLS as asked or as the server requires) and return the first bytes read
        (the INFO line and anything after it)."""

    def start(self, on_data: Callable[[bytes], None], on_lost: Callable[[BaseException | None], None],
              rest: bytes) -> None:
        """Start reading: ``on_data(bytes)`` for every read, ``on_lost(exc)`` once at the end."""

    def write(self, data: bytes | bytearray | memoryview) -> None: ...

    async def drain(self) -> None: ...

    @property
    def write_paused(self) -> bool: ...

    @property
    def tls_info(self) -> JSONObject | None:
        """The live TLS session (``version``, ``cipher``, ``peer_cert``, ...), None without TLS."""

    def close(self) -> None: ...

    def abort(self) -> None: ...


class WriterAPI(Protocol):
    """Moves the core's write buffer to the transport: each flavour's ``_transport.Writer``."""

    lock: Any

    def set_transport(self, tr: Any) -> None:
        """The transport to write to (its own flavour's), or None while disconnected."""

    def kick(self) -> None:
        """Bytes were queued: send them soon (end of turn / flusher), or now when many."""

    def flush_now(self, timeout: float | None = None) -> None:
        """Send what is queued now; blocking: waits for another writer within the write
        deadline (or ``timeout``), and a wait or write that runs it out fails the connection."""

    def send_soon(self) -> None:
        """``flush_now``, or, while another thread writes, leave the bytes to it."""

    def hold(self, seconds: float) -> None:
        """Let fast-path publishes (a fetch's acks) wait up to ``seconds`` to leave together."""

    def release(self) -> None:
        """End ``hold``: what it kept leaves now."""

    def send_later(self) -> None:
        """Leave what is queued to the writer's own turn or thread (timers: never blocks)."""

    def deferring_thread(self) -> None:
        """The calling thread never writes (blocking: the scheduler's timer thread)."""

    @property
    def congested(self) -> bool: ...

    async def drain(self, timeout: float | None = None) -> None:
        """Return once the transport takes more bytes, or after ``timeout`` seconds."""

    async def flushed(self, timeout: float) -> bool:
        """Whether what was written reached the kernel within ``timeout`` (closing)."""

    def close(self) -> None: ...


class SchedulerAPI(Protocol):
    """One connection's timers and callback dispatcher (``prims.Scheduler``)."""

    def call_later(self, delay: float, fn: Callable[..., object], *args: object) -> Cancellable: ...

    def call_every(self, interval: float, fn: Callable[[], object]) -> Cancellable: ...

    def dispatch(self, cb: Callable[..., object], *args: object) -> None:
        """Run user callback ``cb(*args)`` (plain, or a coroutine function in aio) in order
        with the connection's other callbacks; errors go to the scheduler's error hook."""

    def close(self) -> None: ...


class PrimsAPI(Protocol):
    """The waiting primitives of one flavour (module ``_prims``)."""

    IS_ASYNC: bool

    def new_future(self) -> Any: ...

    def future_maker(self, cls: Any = None) -> Callable[[], Any]:
        """``new_future`` (futures of class ``cls`` if given) bound to the running loop
        (asyncio: no loop look-up per future)."""

    def new_waiter(self) -> Any: ...

    def waiter_maker(self, spin: float = 0.0) -> Callable[[], Any]:
        """What makes a request's reply waiter (asyncio: bound to the running loop;
        blocking: one that polls for ``spin`` seconds before it sleeps, ``poll_io``)."""

    async def wait_future(self, fut: Any, timeout: float | None) -> Any: ...

    def Signal(self) -> WakeSignal: ...

    def signal_maker(self, spin: float = 0.0) -> Callable[[], WakeSignal]:
        """What makes a subscription's wake-up flag (blocking: one whose waiter polls for
        ``spin`` seconds before it sleeps, ``poll_io``)."""

    def Scheduler(self, on_error: Callable[[BaseException], None]) -> SchedulerAPI: ...

    def write_lock(self) -> Any: ...

    def queue_lock(self) -> Any:
        """The lock a subscription's queue needs between reader and consumer (None: one thread)."""

    async def sleep(self, seconds: float) -> None: ...

    def spawn(self, fn: Callable[..., Any], *args: object, name: str | None = None) -> Any: ...

    async def join(self, task: Any, timeout: float | None = None) -> bool: ...

    def current(self) -> object:
        """What runs the caller: its task (asyncio) or thread (blocking)."""

    async def call(self, cb: Callable[..., object], *args: object) -> Any: ...

    def monotonic(self) -> float: ...
