"""The push-consumer machinery (asyncio source; ``jetwire/_sync/push_core.py`` is
generated from it): one :class:`PushCore` runs every push consumer of the client, the
plain and ordered subscriptions of nats.go's legacy ``js.subscribe`` (``push.py``), the
new API's ``PushConsumer.consume()`` (``push_consumer.py``) and the ordered consumers
behind KV and object-store watchers and object reads (:class:`Watcher`; ``kv.py``,
``objects.py``).

The deliver subject's *direct* handler runs in the connection's reader and only hands
each message to the sans-IO :class:`~jetwire.jetstream.push.PushState`, which decides:
data goes to a deque (ordered: only the next in order; a gap recreates the consumer),
a flow-control request is answered once the reader took everything that arrived
before it (memory stays bounded by the server's window), a heartbeat carrying
``Nats-Consumer-Stalled`` is answered at once (ADR-9, ADR-15), and watchers get their
end-of-initial-values marker (:data:`MARKER`). Missed idle heartbeats (3 intervals) are
noticed by a timer. An ordered consumer (ADR-17) is recreated in the background, from
the stream sequence after the last one delivered, on gaps, missed heartbeats, other
status messages (409 consumer deleted) and reconnects.
"""
from __future__ import annotations

import asyncio  # aio-only
import logging
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, Self, TypeVar

from .._typing import JSONObject
from ..errors import (
    APIError,
    ConnectionClosedError,
    JetStreamError,
    NoHeartbeatError,
    StreamNotFoundError,
    TimeoutError,
)
from ..jetstream.manage import consumer_create_subject
from ..jetstream.pull import RESET_DELAY, RESET_DELAY_MAX, HeartbeatMonitor
from ..jetstream.push import (
    DEFAULT_PUSH_HEARTBEAT,
    MISSED_HEARTBEATS,
    PUSH_DATA,
    PUSH_FLOW_CONTROL,
    PUSH_GAP,
    PUSH_STATUS,
    PushState,
    push_consumer_config,
)
from ..msg import Msg
from . import _prims as prims

if TYPE_CHECKING:
    from collections.abc import Coroutine  # aio-only

    from ..connection import interface as _api
    from ..protocol.headers import Headers
    from .jetstream import JetStream

__all__ = ["END", "MARKER", "PushCore", "Watcher", "halt", "initial_values", "listen", "next_raw", "orphan", "started"]

log = logging.getLogger("jetwire")

MARKER = object()  # end of the initial values, in a push consumer's queue
END = object()  # the push consumer was stopped (or its subscription ended)

P = TypeVar("P", bound="PushCore")
T = TypeVar("T")  # aio-only
Item = TypeVar("Item")  # what a Watcher yields


# ---------------------------------------------------------------------------------
# the machinery


async def started(pc: P) -> P:
    """``pc`` (a :class:`PushCore` made with a ``spec``) with its first consumer
    made: how kv.py and objects.py start their watchers and readers."""
    await pc._start()
    return pc


async def next_raw(pc: PushCore, timeout: float | None = None) -> Any:
    """The next delivery of ``pc``: a ``Msg``, ``MARKER`` or ``END`` (see
    :meth:`PushCore._next_raw`)."""
    return await pc._next_raw(timeout)


def listen(pc: PushCore, deliver_subject: str, queue: str | None) -> None:
    """Subscribe ``pc``'s deliver subject (a plain consumer made or bound by
    ``push.subscribe``), before its consumer exists, so nothing is missed."""
    pc._listen(deliver_subject, queue, pc._on_msg)


def halt(pc: PushCore) -> None:
    """Stop ``pc`` without deleting its consumer (``push.subscribe`` when making the
    consumer failed)."""
    pc._halt()


async def initial_values(w: Watcher[Item]) -> AsyncIterator[Item]:
    """A watcher's initial values, up to its ``None`` marker (the listings of KV and object
    stores); ``ConnectionClosedError`` when it ends before the marker (a partial list
    would pass for the whole). The watcher is stopped after."""
    try:
        while True:
            item = await w.next(None)
            if item is None:
                return
            yield item
    except StopAsyncIteration:  # never stopped here: only the connection can end it
        raise ConnectionClosedError("the watch ended before its initial values were complete") from None
    finally:
        w.stop()


# aio-only: begin
async def made_or_undone(coro: Coroutine[Any, Any, T], undo: Callable[[], None]) -> T:
    """``await coro``, a request that makes something on the server (a consumer). When the
    caller is cancelled while it waits, its ``CancelledError`` comes at once but the request
    goes on in its own task, and once it has been answered (anything but the server's
    refusal) ``undo()`` is called: what it made must not outlive a caller that never
    learned of it."""
    task = asyncio.ensure_future(coro)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        def done(t: asyncio.Future[T]) -> None:
            if not t.cancelled() and isinstance(t.exception(), APIError):
                return  # refused: nothing was made
            try:
                undo()
            except Exception:
                pass

        task.add_done_callback(done)
        raise
# aio-only: end


def orphan(pc: PushCore) -> None:
    """Nobody will read ``pc`` any more (its owner was garbage-collected without being
    closed): it stops itself at its next delivery or heartbeat check. Only sets a flag,
    so it is safe from a finalizer, whatever thread it runs on and whatever lock that
    thread holds."""
    pc._orphaned = True


class PushCore:
    """One push consumer as the client sees it.

    ``spec`` None: a plain consumer made (or bound) by someone else; :meth:`_listen`
    subscribes its deliver subject. Otherwise an ordered, ephemeral consumer on
    ``stream`` made here from ``spec`` (the keyword arguments of
    :func:`~jetwire.jetstream.push.push_consumer_config`: ``filter_subjects``,
    ``deliver_policy``, ...) by :meth:`_start`, delivered to a fresh inbox, and
    recreated whenever it breaks. ``marker``: queue ``MARKER`` once the initial
    values (what was pending when the consumer was made) have arrived; ``initial``
    False: there are none, the marker comes first.

    ``_next_raw()`` returns the next delivered ``Msg``, ``MARKER`` or ``END`` once
    stopped; ``_lost`` tells an ``END`` that came because the subscription ended under
    it (the connection closed, or is draining) from one after :meth:`stop`. :meth:`stop`
    is not a coroutine: it unsubscribes at once and asks the server to delete a consumer
    made here without waiting.
    """

    _report_status = False  # report status messages other than 100 to the error callback

    def __init__(self, js: JetStream, stream: str, heartbeat: float = DEFAULT_PUSH_HEARTBEAT,
                 spec: JSONObject | None = None, initial: bool = True, marker: bool = True) -> None:
        self._js = js
        self._link = js.api.link
        self._stream = stream
        self._heartbeat = heartbeat
        self._spec = spec
        self._state = PushState(initial, ordered=spec is not None, marker=marker)
        self._queue: deque[Any] = deque()
        self._signal = prims.Signal()
        self._lock = prims.write_lock()
        self._closed = False
        self._draining = False
        self._lost = False  # ended because the subscription did (connection closed or draining)
        self._orphaned = False  # see orphan()
        self._error: BaseException | None = None
        self._sub: Any = None
        self._serial = 0
        self._consumer = ""
        self._owned = spec is not None  # the consumer was made here: delete it when done
        self._resetting = False
        self._seen = 0  # everything received (heartbeats included): the activity count
        self._timer: _api.Cancellable | None = None
        self._unlisten: Callable[[], None] | None = None
        self._monitor: HeartbeatMonitor | None = None
        if self._state.take_marker():  # no initial values: the marker comes first
            self._queue.append(MARKER)

    # -- life ------------------------------------------------------------------------
    def _listen(self, deliver_subject: str, queue: str | None, handler: Callable[[Msg], None]) -> None:
        """Subscribe the deliver subject (before the consumer exists, so nothing is missed)."""
        # closing the subscription (or the connection) wakes the reader
        self._sub = self._link.subscribe_direct(deliver_subject, handler, queue, wake=self._signal)

    def _begin(self) -> None:
        """The consumer exists: watch its heartbeats and the connection's reconnects."""
        if self._heartbeat > 0:
            now = prims.monotonic()
            mon = HeartbeatMonitor(self._heartbeat, now, MISSED_HEARTBEATS)
            mon.reset(now, self._seen)
            self._monitor = mon
            self._timer = self._link.call_every(self._heartbeat, self._check)
        self._unlisten = self._link.on_reconnect(self._on_reconnect)

    async def _start(self) -> None:
        """An ordered consumer: make the first one, then watch it."""
        try:
            await self._create(True)
        except BaseException:
            self.stop()
            raise
        if not self._closed:
            self._begin()

    async def _create(self, first: bool) -> None:
        js = self._js
        state = self._state
        with self._lock:
            serial = state.new_consumer()
            self._serial = serial

        def on_msg(msg: Msg, _serial: int = serial) -> None:
            if _serial == self._serial:  # not a straggler of a consumer already replaced
                self._on_msg(msg)

        self._listen(self._link.new_inbox(), None, on_msg)
        name = js.api.new_name()
        assert self._spec is not None
        cfg = push_consumer_config(self._sub.subject, state.cursor, name=name, heartbeat=self._heartbeat,
                                   **self._spec)
        # named before it is asked for: a stop() while the request is under way (a cancelled
        # watch, a timeout) deletes it (a delete of a consumer never made is harmless)
        self._consumer = name
        subject = consumer_create_subject(self._stream, name, cfg)
        body: JSONObject = {"stream_name": self._stream, "config": cfg}
        try:
            resp = await made_or_undone(js.api_request(subject, body), lambda: self._abandoned(name))  # aio-only
            # sync-only: resp = js.api_request(subject, body)
        except APIError:  # refused: there is nothing to delete
            if self._consumer == name:
                self._consumer = ""
            raise
        if self._closed or self._draining:  # stopped while the consumer was being made
            self._consumer = name  # its delete may have overtaken the create: once more, now it exists
            self._drop_consumer()
            return
        if first:  # what was pending at creation: when the initial values are complete
            delivered = (resp.get("delivered") or {}).get("consumer_seq") or 0
            with self._lock:
                state.on_created(resp.get("num_pending") or 0, delivered)
                due = state.take_marker()
                if due:
                    self._queue.append(MARKER)
            if due:
                self._signal.set()

    # aio-only: begin
    def _abandoned(self, name: str) -> None:
        """The create of consumer ``name``, whose caller was cancelled, was answered: delete
        the consumer unless it is still the one this push consumer runs on."""
        if self._closed or self._consumer != name:
            if self._consumer == name:
                self._consumer = ""
            self._js.api.request_nowait(f"CONSUMER.DELETE.{self._stream}.{name}")
    # aio-only: end

    def stop(self) -> None:
        """Stop: iteration ends once what was already received is taken; a consumer
        made here is deleted (without waiting)."""
        if self._closed:
            return
        self._halt()
        self._drop_consumer()

    def _halt(self) -> None:
        """Closed: no more messages, timers or reconnect handling (safe to repeat)."""
        self._closed = True
        timer = self._timer
        if timer is not None:
            timer.cancel()
            self._timer = None
        unlisten = self._unlisten
        if unlisten is not None:
            unlisten()
            self._unlisten = None
        sub = self._sub
        if sub is not None:
            self._link.unsubscribe(sub)
        self._signal.set()

    def _drop_consumer(self) -> None:
        """Unsubscribe and ask the server to delete a consumer made here (without waiting)."""
        link = self._link
        sub = self._sub
        if sub is not None:
            link.unsubscribe(sub)
        name = self._consumer
        if not name or not self._owned:
            return
        self._consumer = ""
        self._js.api.request_nowait(f"CONSUMER.DELETE.{self._stream}.{name}")

    # -- from the reader (never blocks) ------------------------------------------------
    def _on_msg(self, msg: Msg) -> None:
        if self._closed:
            return
        if self._orphaned:
            self.stop()
            return
        self._seen += 1
        state = self._state
        h = msg.headers
        if h is not None and h.status is not None:
            self._on_status(h, msg.reply)
            return
        with self._lock:
            kind = state.on_data(msg.reply)[0]
            if kind == PUSH_DATA:
                self._queue.append(msg)
                if state.marker_due and state.take_marker():
                    self._queue.append(MARKER)
        if kind == PUSH_DATA:
            self._signal.set()
        elif kind == PUSH_GAP:
            self._request_reset()

    def _on_status(self, h: Headers, reply: str | None) -> None:
        link = self._link
        state = self._state
        answer = None
        with self._lock:
            kind = state.on_status(h, reply)
            if kind == PUSH_FLOW_CONTROL:
                answer = state.fc_ready()
        if kind == PUSH_FLOW_CONTROL:
            if answer:
                link.try_publish(answer, None, b"")
            return
        if kind == PUSH_STATUS:  # consumer deleted, ...
            self._other_status(h)
        else:  # an idle heartbeat (that may show a gap, or complete the initial values)
            stalled = state.stalled_reply(h)
            if stalled:
                link.try_publish(stalled, None, b"")
            if kind != PUSH_GAP:
                with self._lock:
                    marker = state.take_marker()
                    if marker:
                        self._queue.append(MARKER)
                if marker:
                    self._signal.set()
                return
        if self._spec is not None:
            self._request_reset()

    def _other_status(self, h: Headers) -> None:
        """A status other than heartbeats and flow control (from the reader)."""
        if self._report_status:
            self._report(JetStreamError(f"push consumer {self._consumer!r}: {h.status} {h.description or ''}".rstrip()))

    def _report(self, exc: BaseException) -> None:
        """Tell the user about a problem (the connection's ``error_cb``; never blocks)."""
        self._link.report_error(exc)

    # -- heartbeats, reconnects and recreation (ADR-15, ADR-17) --------------------------
    def _check(self) -> None:  # timer
        if self._orphaned:
            self.stop()
            return
        mon = self._monitor
        if mon is None or self._closed or self._resetting:
            return
        link = self._link
        if link.is_closed:
            return
        if mon.check(prims.monotonic(), self._seen, link.is_connected):
            if self._spec is not None:
                self._request_reset()
            else:
                self._report(NoHeartbeatError(f"no heartbeat from push consumer {self._consumer!r}"))

    def _on_reconnect(self) -> None:  # from the client's reconnect path: never blocks
        mon = self._monitor
        if mon is not None:
            now = prims.monotonic()
            mon.resume(now)
            mon.reset(now, self._seen)
        if self._spec is not None:
            self._request_reset()

    def _request_reset(self) -> None:
        with self._lock:  # the reader, the timer and a reconnect may all ask at once
            if self._closed or self._draining or self._resetting:
                return
            self._resetting = True
        self._link.spawn(self._reset)

    async def _reset(self) -> None:
        wait = RESET_DELAY
        try:
            while not self._closed and not self._draining:
                if self._link.is_closed:
                    self._lost = True
                    self.stop()
                    return
                self._drop_consumer()
                try:
                    await self._create(False)
                    if self._monitor is not None:
                        self._monitor.reset(prims.monotonic(), self._seen)
                    return
                except StreamNotFoundError as exc:  # the stream is gone: nothing to wait for
                    self._fail(exc)
                    return
                except Exception as exc:
                    log.debug("jetwire: recreating the ordered push consumer failed: %s", exc)
                await prims.sleep(wait)
                wait = min(wait * 2, RESET_DELAY_MAX)
        finally:
            self._resetting = False
            self._signal.set()

    def _fail(self, exc: BaseException) -> None:
        self._error = exc
        self.stop()

    # -- for the reader ----------------------------------------------------------------
    def _sub_ended(self) -> bool:
        """The subscription is gone and no reset is replacing it: closed under us (the
        connection closed or is draining) or by :meth:`stop`."""
        sub = self._sub
        if sub is None:
            return True
        if not sub._closed or self._resetting:
            return False
        # closed, and no reset under way now: the one that closed it (if any) is over, so
        # the subscription is still ours unless that reset already made a new one
        return sub is self._sub

    async def _next_raw(self, timeout: float | None = None) -> Any:
        """The next message, ``MARKER`` or ``END``; ``TimeoutError`` after ``timeout``
        seconds without one (None waits as long as it takes). Taking a message may
        answer a flow-control request that waited for it."""
        queue = self._queue
        signal = self._signal
        deadline = None
        while True:
            if queue:
                item = queue.popleft()
                if item is not MARKER:
                    with self._lock:
                        reply = self._state.consumed()
                    if reply:
                        self._link.try_publish(reply, None, b"")
                return item
            if self._closed or self._sub_ended():
                if self._error is not None:
                    err, self._error = self._error, None
                    raise err
                # _closed is set before stop() unsubscribes: still False here, the
                # subscription ended under us (the connection closed, or is draining)
                if not self._closed:
                    self._lost = True
                    if self._link.is_closed:
                        self.stop()
                return END
            if timeout is not None:
                now = prims.monotonic()
                if deadline is None:
                    deadline = now + timeout
                elif now >= deadline:
                    raise TimeoutError(f"nothing received in {timeout}s")
            signal.clear()
            # what set the signal between the checks above and clear() is lost with it:
            # look again at everything that sets it (a delivery, stop(), the subscription
            # closing with the connection, a reset ending)
            if queue or self._closed or self._sub_ended():
                continue
            await signal.wait(None if deadline is None else max(0.0, deadline - prims.monotonic()))


# ---------------------------------------------------------------------------------
# watchers (KV and object stores)


class Watcher(PushCore, Generic[Item]):
    """An ordered push consumer on ``stream`` filtered to ``filters`` whose items (of type
    ``Item``) are decoded by :meth:`_item`: first the initial values, then ``None``
    exactly once, then live updates until :meth:`stop`."""

    def __init__(self, js: JetStream, stream: str, filters: Sequence[str], deliver_policy: str,
                 opt_start_seq: int | None = None, headers_only: bool = False, initial: bool = True,
                 heartbeat: float = DEFAULT_PUSH_HEARTBEAT) -> None:
        self._filters = list(filters)
        super().__init__(js, stream, heartbeat, {"filter_subjects": self._filters, "deliver_policy": deliver_policy,
                                                 "opt_start_seq": opt_start_seq, "headers_only": headers_only},
                         initial)
        self._marker_sent = False

    def _item(self, msg: Msg) -> Item | None:
        """What a delivery yields; None skips it."""
        raise NotImplementedError

    async def next(self, timeout: float | None = None) -> Item | None:
        """The next item (or the ``None`` marker); ``TimeoutError`` after ``timeout``
        seconds; ``StopAsyncIteration`` (``StopIteration`` blocking) once stopped;
        ``ConnectionClosedError`` once the connection closed (or began draining) under
        it, when what arrived before is taken."""
        while True:
            raw = await self._next_raw(timeout)
            if raw is END:
                if self._lost:
                    raise ConnectionClosedError("connection closed")
                raise StopAsyncIteration
            if raw is MARKER:
                if self._marker_sent:
                    continue
                self._marker_sent = True
                return None
            item = self._item(raw)
            if item is not None:
                return item

    updates = next

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Item | None:
        return await self.next(None)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.stop()
