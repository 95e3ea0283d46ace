"""Pull consumers (asyncio source; ``jetwire/_sync/consumer.py`` is generated from it).

How messages move (ADR-37): every fetch and every ``consume()``/``messages()`` owns one
reply subscription whose *direct* handler runs in the connection's reader for each
message. The handler does almost nothing: bump an activity counter (heartbeats), drop
idle heartbeats, append the rest to a deque and set a signal (one wake-up per read
batch). Everything that decides (pending counts, refill thresholds, status codes,
heartbeat deadlines, ordered-consumer sequences) is the sans-IO code of
:mod:`jetwire.jetstream.pull`, run by whoever takes messages off the deque: the
iterating user (fetch, ``messages()``) or the one task/thread of ``consume()``.
"""
from __future__ import annotations

import heapq
import inspect
import logging
import time
import weakref
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import _impl
from .._typing import JSONObject
from .._units import wait_limit
from ..errors import (
    ConnectionClosedError,
    ConsumerDeletedError,
    ConsumerNotFoundError,
    InvalidOptionError,
    MsgIteratorClosedError,
    NoHeartbeatError,
    NoRespondersError,
    StreamNotFoundError,
    TimeoutError,
)
from ..jetstream.models import ConsumerInfo
from ..jetstream.pull import (
    ACK_HOLD,
    BATCH_BYTES_ONLY,
    DEFAULT_MAX_MESSAGES,
    GONE_ERRORS,
    PIN_ID_HDR,
    RESET_DELAY,
    S_END,
    S_FLOW_CONTROL,
    S_HEARTBEAT,
    S_NO_RESPONDERS,
    S_PENDING,
    S_PIN_RESET,
    S_RESET,
    S_TERMINAL,
    S_WARN,
    ConsumeOptions,
    HeartbeatMonitor,
    PullState,
    classify_status,
    consume_options,
    fetch_heartbeat,
    gone_error,
    msg_size,
    oversize_error,
    parse_pending,
    priority_fields,
    pull_request,
    status_error,
)
from ..msg import Msg
from . import _prims as prims

if TYPE_CHECKING:
    from ..connection import interface as _api
    from ..protocol.headers import Headers
    from .jetstream import JetStream

log = logging.getLogger("jetwire")

_INF = float("inf")
_monotonic = time.monotonic
_isawaitable = inspect.isawaitable

# a one-off pull that the server never ends (frozen or gone) is given up this long after
# its expiry
_FETCH_GRACE = 1.0
# a no-wait pull (no expiry) that the server neither fills nor ends (max_ack_pending
# reached, say) is given up after this long, or the API timeout when shorter: as
# nats.go's FetchNoWait (expires + 1 s, without expires)
NO_WAIT_GIVE_UP = 1.0
# a fetch waits this long for its first answer (a message, or the 503 of a pull nobody
# listens to) before it sends a PING to learn that the server took the pull (_confirm)
CONFIRM_PING_AFTER = 0.005


def _reply_sub(link: _api.Link, handler: Callable[[Msg], None], signal: _api.WakeSignal) -> _api.DirectSub:
    """A new inbox subscription whose messages go straight to ``handler`` (from the reader).
    The subscription wakes ``signal`` when it is closed (connection closed included)."""
    return link.subscribe_direct(link.new_inbox(), handler, wake=signal)


def _two_arg(cb: Callable[..., object]) -> bool:
    """An error callback written ``cb(ctx, err)`` rather than ``cb(err)``."""
    try:
        params = inspect.signature(cb).parameters.values()
    except (TypeError, ValueError):
        return False
    n = 0
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty:
            n += 1
        elif p.kind == p.VAR_POSITIONAL:
            return False
    return n >= 2


# ---------------------------------------------------------------------------------
# fetch


class MessageBatch:
    """The answer to one pull request: iterate it for its messages (asynchronously in the
    asyncio flavour).

    Messages are yielded as they arrive; iteration ends when the batch is complete, the
    request expired (``max_wait``), the byte limit was reached, or on an error, which is
    then in :attr:`error` (``None`` when the batch simply ended). When the consumer or
    its stream no longer exists, iteration raises that error (``ConsumerNotFoundError``,
    ``ConsumerDeletedError``, ``StreamNotFoundError``) after the messages that came
    before it: never an empty batch that ends silently.
    """

    __slots__ = (
        "__weakref__",
        "_accept",
        "_batch",
        "_bytes",
        "_count",
        "_deadline",
        "_done",
        "_hb",
        "_link",
        "_max_bytes",
        "_owner",
        "_pins",
        "_q",
        "_signal",
        "_statuses",
        "_sub",
        "_where",
        "error",
    )

    def __init__(self, link: _api.Link, batch: int, max_bytes: int, timeout: float, heartbeat: float,
                 accept: Callable[[Msg], bool] | None = None, where: str = "") -> None:
        self._link = link
        self._q: deque[Msg] = deque()
        self._signal: prims.Signal = link.new_signal()
        self._sub: _api.DirectSub | None = None
        self._batch = batch
        self._max_bytes = max_bytes
        self._count = 0
        self._bytes = 0
        self._done = False
        self.error: BaseException | None = None
        self._statuses = 0  # status messages seen (heartbeats); with _count: the activity count
        now = _monotonic()
        self._deadline = now + timeout
        self._hb = HeartbeatMonitor(heartbeat, now) if heartbeat else None
        self._accept = accept
        # the consumer handle of a plain pull (None: ordered): after a 503 (nobody took the
        # pull) it tells a vanished consumer/stream from JetStream being away, and iteration
        # raises what is gone
        self._owner: Consumer | None = None
        self._where = where  # "consumer 'C' of stream 'S'", for error messages
        # the consumer handle keeping the pin id (pulls of a priority group), else None
        self._pins: Consumer | None = None

    def __repr__(self) -> str:
        return f"<MessageBatch received={self._count} done={self._done} error={self.error!r}>"

    @property
    def done(self) -> bool:
        """No more messages will arrive (some may still wait to be iterated)."""
        return self._done

    # -- reader side -----------------------------------------------------------------
    def _on_msg(self, msg: Msg) -> None:
        # once per message on the reader: the common case (no headers) in as few steps as
        # possible
        if self._done:
            return
        if msg.headers is not None and not self._on_headers(msg):
            return
        q = self._q
        q.append(msg)
        count = self._count = self._count + 1
        if self._max_bytes:
            self._bytes += msg_size(msg)
            if self._bytes >= self._max_bytes:
                self._finish(None)
                return
        if count >= self._batch:
            self._finish(None)
            return
        if len(q) == 1:
            # the queue was empty: the consumer may be waiting. While it holds more, the
            # consumer takes them before it waits (``_wait`` looks at the queue after
            # clearing the signal), so one wake-up per read, not per message.
            self._signal.set()

    def _on_headers(self, msg: Msg) -> bool:
        """A message with headers: a status (heartbeat, end of the pull, error) is
        handled here and not queued (False); a message keeps its pin id noted."""
        h = msg.headers
        assert h is not None
        if not msg.data:
            st = h.status
            if st is not None:
                self._statuses += 1
                if st == "100":
                    return False
                if st == "423" and self._pins is not None:
                    self._pins._clear_pin()
                self._finish(status_error(st, h.description, self._where))
                return False
        if self._pins is not None:
            self._pins._note_pin(h)
        return True

    def _finish(self, err: BaseException | None) -> None:
        if self._done:
            return
        if err is not None and self.error is None:
            self.error = err
        self._done = True
        sub = self._sub
        if sub is not None:
            self._link.unsubscribe(sub)
        self._signal.set()

    # -- user side -------------------------------------------------------------------
    def __aiter__(self) -> MessageBatch:
        return self

    async def __anext__(self) -> Msg:
        q = self._q
        while True:
            if q:
                msg = q.popleft()
                accept = self._accept
                if accept is None or accept(msg):
                    return msg
                # an ordered consumer saw a gap: the batch ends here
                self._finish(None)
                q.clear()
                raise StopAsyncIteration
            if self._done:
                self._link.release_writes()  # the acks held while it came (see _wait)
                owner = self._owner
                if owner is not None:
                    err = self.error
                    if isinstance(err, NoRespondersError):
                        err = self.error = await owner._explain_no_responders(err)
                        if isinstance(err, NoRespondersError):
                            self._owner = None  # both exist: JetStream was away (asked once)
                    if isinstance(err, GONE_ERRORS):
                        raise err
                raise StopAsyncIteration
            try:
                await self._wait()
            except BaseException:
                # the iterating caller was cancelled (interrupted): end the pull now, or its
                # inbox would stay subscribed and the server would keep sending it what
                # later pulls should get (lost until ack_wait). What already came stays
                # to be iterated
                self._abandon(False)
                raise

    async def _wait(self) -> None:
        signal = self._signal
        signal.clear()
        if self._q or self._done:
            return
        now = _monotonic()
        sub = self._sub
        if sub is not None and not sub.is_valid:
            self._finish(ConnectionClosedError("connection closed"))
            return
        remaining = self._deadline - now
        if remaining <= 0:
            self._finish(None)  # the server never ended the request: give up quietly
            return
        # acks made while more of the batch is coming leave together (at most ACK_HOLD
        # later, or when the batch ends), not in one small write per read
        self._link.hold_writes(ACK_HOLD)
        hb = self._hb
        if hb is not None:
            if hb.check(now, self._count + self._statuses, self._link.is_connected):
                self._finish(NoHeartbeatError("no heartbeat received for the pull request"))
                return
            w = hb.wait_time(now)
            if w is not None and w < remaining:
                remaining = w + 0.001
        await signal.wait(remaining)

    def _stop(self) -> None:
        """Abandon the batch (no more messages)."""
        self._finish(None)
        self._q.clear()

    def _abandon(self, drop: bool = True) -> None:
        """Whoever waited for the batch was cancelled (interrupted): end it now. Its inbox
        is unsubscribed, so the server drops the pull (nobody listens for it) and what
        comes next goes to a later pull; the acks held meanwhile leave now. ``drop``: the
        messages not yet read are dropped too (nobody will read them)."""
        if drop:
            self._stop()
        else:
            self._finish(None)
        self._link.release_writes()


class _BatchDeadlines:
    """The deadlines of one connection's fetches, with one connection timer for all of
    them (``link.call_later``): a batch still running at its deadline (``max_wait`` +
    ``_FETCH_GRACE``) is finished then, iterated or not, as nats.go's fetch does with a
    timer. Without it a batch nobody iterates ends only when the server answers its pull;
    a pull the server lost (restarted, a leader change) would keep its inbox subscribed
    for ever, and subscribed again on every reconnect.

    A fetch pushes ``(deadline, n, weakref(batch))`` on a heap; the timer is armed for the
    earliest deadline. The weak reference keeps nothing alive (a batch dropped unread
    still ends: its subscription's handler holds it), and the records of batches already
    finished go early, not at their deadline: from the top of the heap before each push,
    when the timer fires, and by compacting the heap when it reaches twice what was
    running at the last compaction (so records grow with the fetches running, not with
    rate x max_wait; the blocking flavour's timer heap keeps a cancelled timer until its
    time, which a timer per fetch would pile up)."""

    __slots__ = ("__weakref__", "_armed_at", "_heap", "_limit", "_link", "_lock", "_n", "_timer")

    def __init__(self, link: _api.Link) -> None:
        self._link = link
        self._lock = prims.write_lock()  # blocking flavour: user threads and the timer thread
        self._heap: list[tuple[float, int, weakref.ref[MessageBatch]]] = []
        self._n = 0
        self._limit = _COMPACT_MIN
        self._timer: _api.Cancellable | None = None
        self._armed_at = _INF

    def add(self, mb: MessageBatch) -> None:
        deadline = mb._deadline
        with self._lock:
            heap = self._heap
            while heap and _over(heap[0][2]):
                heapq.heappop(heap)
            if len(heap) >= self._limit:
                live = [e for e in heap if not _over(e[2])]
                heapq.heapify(live)
                self._heap = heap = live
                self._limit = max(_COMPACT_MIN, 2 * len(live))
            self._n += 1
            heapq.heappush(heap, (deadline, self._n, weakref.ref(mb)))
            if deadline < self._armed_at:
                self._arm(deadline)

    def _arm(self, deadline: float) -> None:
        """(With the lock held.)"""
        timer = self._timer
        if timer is not None:
            timer.cancel()
        try:
            self._timer = self._link.call_later(max(deadline - _monotonic(), 0.0), _fire_deadlines,
                                                weakref.ref(self))
        except Exception:  # the connection is gone: its batches end with it
            self._timer = None
            self._armed_at = _INF
            return
        self._armed_at = deadline

    def fire(self) -> None:
        expired = []
        with self._lock:
            self._timer = None
            self._armed_at = _INF
            now = _monotonic() + 0.001  # a timer may fire a little early
            heap = self._heap
            while heap:
                deadline, _, ref = heap[0]
                mb = ref()
                if mb is not None and not mb._done:
                    if deadline > now:
                        break
                    expired.append(mb)
                heapq.heappop(heap)
            if heap:
                self._arm(heap[0][0])
        for mb in expired:
            mb._finish(None)  # (unsubscribes; what came stays to be iterated)


# a connection's fetch-deadline heap is compacted (finished batches dropped) when it
# reaches this many records, and then again at twice what is still running
_COMPACT_MIN = 64


def _over(ref: weakref.ref[MessageBatch]) -> bool:
    mb = ref()
    return mb is None or mb._done


def _fire_deadlines(ref: weakref.ref[_BatchDeadlines]) -> None:
    dl = ref()
    if dl is not None:
        dl.fire()


def _new_deadlines(link: _api.Link) -> Callable[[], _BatchDeadlines]:
    return lambda: _BatchDeadlines(link)


class _Taken:
    """Waits for the PONG of the PING sent after a fetch's pull (``link.ping``): answered
    from the reader (or failed when the connection is lost), it wakes the batch's signal."""

    __slots__ = ("_signal", "fired")

    def __init__(self, signal: _api.WakeSignal) -> None:
        self._signal = signal
        self.fired = False

    def done(self) -> bool:
        return self.fired

    def set_result(self, _value: object) -> None:
        self.fired = True
        self._signal.set()

    def set_exception(self, _exc: BaseException) -> None:
        self.set_result(None)


# ---------------------------------------------------------------------------------
# the consumer handle


class Consumer:
    """A pull consumer of a stream: ``fetch``, ``fetch_bytes``, ``fetch_no_wait``, ``next``,
    ``consume``, ``messages``, ``info``, ``cached_info``.

    Priority groups (ADR-42, server 2.11+): on a consumer created with
    ``priority_groups`` and ``priority_policy``, every pull names its ``group=``;
    ``min_pending=``/``min_ack_pending=`` make an ``overflow`` pull wait until the
    consumer has that many messages pending / awaiting acks; ``priority=`` (0-9, lower
    first) orders pulls of a ``prioritized`` consumer (2.12+). With ``pinned_client``
    the server delivers to one pinned client at a time: this handle keeps the pin id
    the server sends (``Nats-Pin-Id``) in :attr:`pin_id` and sends it with every pull;
    a 423 status (the pin moved) clears it and the next pull goes without one.
    """

    def __init__(self, js: JetStream, stream: str, info: ConsumerInfo) -> None:
        self._js = js
        self._stream = stream
        self._name = info.name
        self._info = info
        self._link = js.api.link
        self._next_subject = f"{js.api.prefix}.CONSUMER.MSG.NEXT.{stream}.{self._name}"
        self._where = f"consumer {self._name!r} of stream {stream!r}"
        self._pin_lock = prims.write_lock()  # the reader notes pin ids, pulls read them
        self._pin_id: str | None = None

    @property
    def name(self) -> str:
        return self._name

    @property
    def stream(self) -> str:
        return self._stream

    def cached_info(self) -> ConsumerInfo:
        """The info from the last lookup (no request)."""
        return self._info

    async def info(self) -> ConsumerInfo:
        """Fresh info from the server (``ConsumerNotFoundError`` when it is gone)."""
        resp = await self._js.api_request(f"CONSUMER.INFO.{self._stream}.{self._name}")
        resp.pop("type", None)
        self._info = ConsumerInfo.from_json(resp)
        return self._info

    def __repr__(self) -> str:
        return f"<Consumer stream={self._stream!r} name={self._name!r}>"

    def _target(self) -> Consumer:
        return self

    # -- priority groups -------------------------------------------------------------
    @property
    def pin_id(self) -> str | None:
        """The pin id of a ``pinned_client`` priority group this handle holds (from the
        ``Nats-Pin-Id`` header of what it was delivered), sent with every pull; None
        when not pinned."""
        with self._pin_lock:
            return self._pin_id

    def _note_pin(self, h: Headers) -> None:
        """A delivered message's headers (from the reader): keep its pin id."""
        pid = h.get(PIN_ID_HDR)
        if pid:
            with self._pin_lock:
                self._pin_id = pid

    def _clear_pin(self) -> None:
        """A pull was refused with 423 (from the reader): the pin moved elsewhere."""
        with self._pin_lock:
            self._pin_id = None

    def _priority(self, group: str | None, min_pending: int | None, min_ack_pending: int | None,
                  priority: int | None) -> JSONObject | None:
        """The checked priority-group fields of a pull (None for a consumer without groups)."""
        return priority_fields(self.cached_info().config.priority_groups, group, min_pending, min_ack_pending,
                               priority)

    # -- one-off pulls ---------------------------------------------------------------
    async def fetch(self, batch: int, max_wait: float = 30.0, heartbeat: float | None = None,
                    group: str | None = None, min_pending: int | None = None,
                    min_ack_pending: int | None = None, priority: int | None = None) -> MessageBatch:
        """Pull up to ``batch`` messages, waiting at most ``max_wait`` seconds for them.

        Returns a :class:`MessageBatch` that yields messages as they arrive.
        ``heartbeat`` (seconds) asks for idle heartbeats; by default pulls of 10 s or more
        use 5 s. Missing heartbeats end the batch with ``NoHeartbeatError``.
        ``group``, ``min_pending``, ``min_ack_pending``, ``priority``: priority groups
        (see :class:`Consumer`; ``InvalidOptionError`` when they do not fit the
        consumer); a pull refused because the pin moved ends with ``PinIdMismatchError``.
        Returns once the pull has its first answer, or, when none came within a few
        milliseconds, once a round trip shows the server took it; when nobody takes it
        because the consumer or its stream no longer exists, raises
        ``ConsumerNotFoundError`` (a ``ConsumerGoneError``, also a
        ``ConsumerDeletedError``) or ``StreamNotFoundError`` instead; an error known only
        later is raised by iterating the batch.
        """
        prio = self._priority(group, min_pending, min_ack_pending, priority)
        return await self._fetch(batch, 0, max_wait, heartbeat, False, None, prio, True)

    async def fetch_bytes(self, max_bytes: int, max_wait: float = 30.0, heartbeat: float | None = None,
                          group: str | None = None, min_pending: int | None = None,
                          min_ack_pending: int | None = None, priority: int | None = None) -> MessageBatch:
        """Pull messages until about ``max_bytes`` (subject + reply + headers + data) arrived
        (priority-group options and errors as :meth:`fetch`)."""
        if max_bytes <= 0:
            raise InvalidOptionError("max_bytes must be positive")
        prio = self._priority(group, min_pending, min_ack_pending, priority)
        return await self._fetch(BATCH_BYTES_ONLY, max_bytes, max_wait, heartbeat, False, None, prio, True)

    async def fetch_no_wait(self, batch: int, group: str | None = None, min_pending: int | None = None,
                            min_ack_pending: int | None = None, priority: int | None = None) -> MessageBatch:
        """Pull up to ``batch`` messages that are available now; an empty stream ends at once
        (priority-group options and errors as :meth:`fetch`). A pull the server neither
        fills nor ends (e.g. ``max_ack_pending`` reached) ends quietly with what came
        after at most 1 s (``NO_WAIT_GIVE_UP``; the API timeout when shorter)."""
        prio = self._priority(group, min_pending, min_ack_pending, priority)
        return await self._fetch(batch, 0, None, None, True, None, prio, True)

    async def _fetch(self, batch: int, max_bytes: int, max_wait: float | None, heartbeat: float | None,
                     no_wait: bool, accept: Callable[[Msg], bool] | None,
                     prio: JSONObject | None = None, confirm: bool = False, what: str = "max_wait") -> MessageBatch:
        if batch < 1:
            raise InvalidOptionError("batch must be at least 1")
        pin = self.pin_id if prio is not None else None
        api_timeout = self._js.api.timeout
        if no_wait:
            hb = 0.0
            body = pull_request(batch, 0.0, True, max_bytes, 0.0, prio, pin)
            timeout = min(api_timeout, NO_WAIT_GIVE_UP)
        else:
            if max_wait is None or not 0 < max_wait < _INF:  # (NaN too)
                raise InvalidOptionError(f"{what} must be a finite number of seconds > 0, not {max_wait!r}")
            hb = fetch_heartbeat(max_wait, heartbeat)
            body = pull_request(batch, max_wait, False, max_bytes, hb, prio, pin)
            timeout = max_wait + _FETCH_GRACE
        link = self._link
        mb = MessageBatch(link, batch, max_bytes, timeout, hb, accept, self._where)
        if prio is not None:
            mb._pins = self
        if accept is None:  # (an ordered consumer recreates its consumer instead)
            mb._owner = self
        sub = _reply_sub(link, mb._on_msg, mb._signal)
        mb._sub = sub
        try:
            # the whole batch waits for this pull: it leaves now, from this thread (with any
            # acks held meanwhile), not after a hand-off to the flusher or the loop's turn,
            # and never waits for room (a stuck publisher's): the batch has its own deadline
            link.publish_request(self._next_subject, sub.subject, body)
        except BaseException:
            link.unsubscribe(sub)
            raise
        # the batch ends at its deadline even when nobody iterates it (_BatchDeadlines)
        link.shared("jetstream.fetch_deadlines", _new_deadlines(link)).add(mb)
        try:
            await link.wait_writable(timeout)
            if confirm:
                await self._confirm(mb, min(timeout, api_timeout))
        except BaseException:
            # cancelled (interrupted) before the batch was handed out, or the consumer is
            # gone: nobody will read it, and the pull must not keep taking messages
            mb._abandon()
            raise
        link.hold_writes(ACK_HOLD)  # the acks of what comes leave together (see MessageBatch._wait)
        return mb

    async def _confirm(self, mb: MessageBatch, timeout: float) -> None:
        """After sending a fetch's pull: wait until the server has taken it or the first
        answer arrived, and raise the error of a vanished consumer or stream now, when
        nothing came before it. A pull nobody listens to is answered 503 at once, and one
        with messages waiting gets its first soon after: only when nothing came within
        ``CONFIRM_PING_AFTER`` does a PING follow the pull (its PONG says the server took
        it), so a busy fetch loop costs the server no PING and PONG per pull. Not
        connected, or no answer in time: the batch reports what happens instead."""
        signal = mb._signal
        q = mb._q
        deadline = _monotonic() + timeout
        taken = _Taken(signal)
        pinged = False
        first = min(deadline, _monotonic() + CONFIRM_PING_AFTER)
        while not (q or mb._done or taken.fired):
            signal.clear()
            if q or mb._done or taken.fired:
                break
            now = _monotonic()
            if not pinged and now >= first:
                pinged = True
                if not self._link.ping(taken):
                    break
                continue
            remaining = (deadline if pinged else first) - now
            if pinged and remaining <= 0:
                break
            await signal.wait(max(remaining, 0.0))
        if mb._done and not mb._q:
            err = mb.error
            if isinstance(err, NoRespondersError):
                err = mb.error = await self._explain_no_responders(err)
                if isinstance(err, NoRespondersError):
                    mb._owner = None  # both exist (asked once): the batch ends with it
            if isinstance(err, GONE_ERRORS):
                raise err

    async def _explain_no_responders(self, err: BaseException) -> BaseException:
        """Nobody took a pull (503): look the consumer up once and return what is gone
        (``ConsumerGoneError``, ``StreamNotFoundError``, naming both), else ``err``
        (both exist: JetStream is not answering, e.g. during a leader election)."""
        try:
            await self.info()
        except (ConsumerNotFoundError, StreamNotFoundError) as exc:
            return gone_error(exc, self._stream, self._name) or err
        except Exception:
            return err
        return err

    async def next(self, timeout: float = 30.0, heartbeat: float | None = None, group: str | None = None,
                   min_pending: int | None = None, min_ack_pending: int | None = None,
                   priority: int | None = None) -> Msg:
        """The next message; ``TimeoutError`` when none arrives within ``timeout`` seconds
        (priority-group options as :meth:`fetch`); ``ConsumerNotFoundError``,
        ``ConsumerDeletedError`` or ``StreamNotFoundError`` when the consumer or its
        stream no longer exists."""
        prio = self._priority(group, min_pending, min_ack_pending, priority)
        mb = await self._fetch(1, 0, timeout, heartbeat, False, None, prio, what="timeout")
        try:
            async for msg in mb:
                return msg
        except BaseException:
            mb._abandon()  # cancelled (interrupted): the pull ends with the call (see _fetch)
            raise
        if mb.error is not None:
            raise mb.error
        raise TimeoutError(f"no message from consumer {self._name!r} within {timeout}s")

    # -- continuous pulls ------------------------------------------------------------
    async def consume(self, cb: Callable[[Msg], object], max_messages: int | None = DEFAULT_MAX_MESSAGES,
                      max_bytes: int | None = None, expires: float = 30.0,
                      threshold_messages: int | None = None, threshold_bytes: int | None = None,
                      heartbeat: float | None = None, error_cb: Callable[..., object] | None = None,
                      stop_after: int | None = None, group: str | None = None,
                      min_pending: int | None = None, min_ack_pending: int | None = None,
                      priority: int | None = None) -> ConsumeContext:
        """Call ``cb(msg)`` for every message, pulling continuously (ADR-37).

        ``max_messages`` (default 500) or ``max_bytes`` (not both; with ``max_bytes`` the
        default ``max_messages`` does not count) bound what is asked for at a time; new pulls go out when pending drops below ``threshold_messages``
        / ``threshold_bytes`` (default half). Pulls expire after ``expires`` seconds
        (at least 1); idle heartbeats every ``heartbeat`` seconds (default expires/2,
        0.5-30 s). ``error_cb(err)`` hears about missed heartbeats
        (``NoHeartbeatError``, the pull is re-issued), server warnings, a next message
        larger than ``max_bytes`` (``PullStatusError`` 409, once until something is
        delivered; pulls go out again about once a second meanwhile) and terminal
        errors, after which consuming stops and the context is closed: the consumer or its
        stream no longer exists (``ConsumerNotFoundError``, ``ConsumerDeletedError``,
        ``StreamNotFoundError``; a pull nobody answers is checked with one lookup), ....
        ``stop_after`` stops after that many messages. Callbacks run one at a time, in
        order, on one task (aio) or thread (blocking). ``group``, ``min_pending``,
        ``min_ack_pending``, ``priority``: priority groups (see :class:`Consumer`); a
        pull refused because the pin moved (``PinIdMismatchError`` to ``error_cb``) is
        sent again without the pin id.
        """
        prio = self._priority(group, min_pending, min_ack_pending, priority)
        opts = consume_options(max_messages, max_bytes, expires, threshold_messages, threshold_bytes,
                               heartbeat, stop_after, ordered=self._ordered_flag())
        ctx = ConsumeContext(self, opts, cb, error_cb, prio)
        ctx._begin()
        return ctx

    async def messages(self, max_messages: int | None = DEFAULT_MAX_MESSAGES, max_bytes: int | None = None,
                       expires: float = 30.0, heartbeat: float | None = None,
                       threshold_messages: int | None = None,
                       threshold_bytes: int | None = None, err_on_missing_heartbeat: bool = True,
                       group: str | None = None, min_pending: int | None = None,
                       min_ack_pending: int | None = None, priority: int | None = None) -> MessagesContext:
        """A continuous pull to iterate (asynchronously in the asyncio flavour) or call
        ``next()`` on.

        Same pull settings (priority-group options included) as :meth:`consume`.
        ``next()`` raises ``NoHeartbeatError`` when heartbeats stop (the pull is
        re-issued and iteration may go on; with ``err_on_missing_heartbeat=False`` it
        is re-issued quietly and ``next()`` keeps waiting), the 409 of a next message
        larger than ``max_bytes`` (once, as :meth:`consume` reports it) and the terminal
        errors of :meth:`consume`.
        """
        prio = self._priority(group, min_pending, min_ack_pending, priority)
        opts = consume_options(max_messages, max_bytes, expires, threshold_messages, threshold_bytes,
                               heartbeat, None, ordered=self._ordered_flag())
        ctx = MessagesContext(self, opts, prio)
        ctx._hb_errors = bool(err_on_missing_heartbeat)
        ctx._begin()
        return ctx

    # -- the hooks an ordered consumer (ordered.py) overrides; the pull machinery below
    # calls them only on a consumer whose _ordered_flag() is true
    def _ordered_flag(self) -> bool:
        return False

    def _accept(self, msg: Msg) -> bool | None:
        """Whether ``msg`` is the next in order (None: not a data message; False: a gap)."""
        return True

    async def _recreate(self, sleep: Callable[[float], object] | None = None) -> None:
        """Replace the consumer by a new one (after a gap, a lost consumer, a reconnect)."""
        raise NotImplementedError

    def _ctx_done(self, ctx: Any) -> None:
        """A consume()/messages() context of this consumer finished."""


def abandon(batch: MessageBatch, unread: bool = False) -> bool:
    """Stop ``batch`` when it is still running, or (``unread``) when it holds messages
    not yet read (its messages are dropped); whether it did."""
    if batch._done and not (unread and batch._q):
        return False
    batch._stop()
    return True


# ---------------------------------------------------------------------------------
# continuous pulls


class _Pulling:
    """The machinery shared by ConsumeContext and MessagesContext (and ordered consumers)."""

    _report_warnings = True
    _hb_errors = True  # missed heartbeats are reported (messages(err_on_missing_heartbeat=False): not)

    def __init__(self, owner: Any, opts: ConsumeOptions, prio: JSONObject | None = None) -> None:
        self._owner = owner
        self._ordered = owner if owner._ordered_flag() else None
        self._link = owner._js.api.link
        self._opts = opts
        self._st = PullState(opts)
        self._st.priority = prio
        # the consumer handle keeping the pin id (pulls of a priority group), else None
        self._pins: Consumer | None = owner._target() if prio is not None else None
        self._q: deque[Msg] = deque()
        self._signal: prims.Signal = self._link.new_signal()
        self._seen = 0
        self._sub: _api.DirectSub | None = None
        self._subject = ""
        self._inbox = ""
        self._stopped = False
        self._draining = False
        self._finished = False
        self._reconnected = False
        self._need_reset = False  # ordered: recreate the consumer; others: check it after a 503
        self._no_responders: BaseException | None = None
        self._terminal: BaseException | None = None
        self._errors: list[BaseException] = []
        self._hb = HeartbeatMonitor(opts.heartbeat, _monotonic())
        self._listener: Callable[[], None] | None = None
        self._closer: Callable[[], None] | None = None
        self._conn_closed = False  # the connection closed: nothing more is handed out
        # no pull goes out before this time (monotonic; 0: none held): every pull was refused
        # because the next message is larger than max_bytes (PullState.oversized)
        self._hold_until = 0.0
        self._oversize = False  # that was reported, and nothing delivered since

    # -- setup -----------------------------------------------------------------------
    def _begin(self) -> None:
        self._listener = self._link.on_reconnect(self._on_reconnect)
        self._closer = self._link.on_close(self._on_close)
        self._start_sub()

    def _start_sub(self) -> None:
        """Subscribe a fresh inbox and send a full pull (start, and after an ordered reset)."""
        target = self._owner._target()
        self._subject = target._next_subject
        sub = _reply_sub(self._link, self._on_msg, self._signal)
        self._sub = sub
        self._inbox = sub.subject
        self._st.clear_pending()
        self._hb.reset(_monotonic(), self._seen)
        self._pull()

    def _on_reconnect(self) -> None:  # from the client's reconnect path: never blocks
        self._reconnected = True
        self._signal.set()

    def _on_close(self, _exc: BaseException) -> None:
        """The connection closed (from whichever thread or task closed it, maybe the
        user's callback): what is buffered is not handed out (it could not be acked),
        and a waiter wakes at once, even one that was busy when it happened."""
        if self._terminal is None:
            self._terminal = ConnectionClosedError("connection closed")
        self._conn_closed = True
        self._signal.set()

    # -- reader side -----------------------------------------------------------------
    def _on_msg(self, msg: Msg) -> None:
        self._seen += 1
        h = msg.headers
        if h is not None:
            if not msg.data and h.status == "100":
                return
            pins = self._pins
            if pins is not None:
                if h.status == "423":
                    pins._clear_pin()
                else:
                    pins._note_pin(h)
        self._q.append(msg)
        self._signal.set()

    # -- plain state handling (no waiting) -------------------------------------------
    def _pull(self) -> None:
        if self._stopped or self._draining or self._finished:
            return
        if self._hold_until:
            if _monotonic() < self._hold_until:
                return  # _check pulls once the pause is over
            self._hold_until = 0.0
        st = self._st
        r = st.next_pull()
        if r is None:
            return
        batch, nbytes = r
        link = self._link
        pins = self._pins
        if link.try_publish(self._subject, self._inbox,
                            st.request(batch, nbytes, None if pins is None else pins.pin_id)):
            # send it now: the caller goes on handing out buffered messages without yielding,
            # and the server should be refilling meanwhile
            link.send_now()
        else:
            # not connected: the reconnect re-pulls; let a later check try again meanwhile
            st.pending_msgs -= batch
            st.pending_bytes -= nbytes

    def _process(self, msg: Msg) -> Msg | None:
        """Account for one entry of the deque; the message for the user, or None."""
        h = msg.headers
        if h is None or msg.data or h.status is None:
            ordered = self._ordered
            if ordered is not None:
                ok = ordered._accept(msg)
                if not ok:
                    if ok is not None:  # a gap: recreate the consumer
                        self._need_reset = True
                    return None
            st = self._st
            st.pending_msgs -= 1
            st.delivered += 1
            if st.max_bytes:
                self._oversize = False
                st.pending_bytes -= msg_size(msg)
                if st.pending_msgs < st.threshold_messages or st.pending_bytes < st.threshold_bytes:
                    self._pull()
            elif st.pending_msgs < st.threshold_messages:
                self._pull()
            return msg
        self._on_status(h)
        return None

    def _on_status(self, h: Any) -> None:
        kind = classify_status(h.status, h.description)
        st = self._st
        if kind in (S_END, S_PENDING):
            n, b = parse_pending(h)
            st.on_status_pending(n, b)
            if kind == S_PENDING and st.oversized(b):
                # the next message is larger than max_bytes: every pull would be refused at
                # once. Say so once (until something is delivered) and pull again after a
                # pause, not in a busy loop
                if not self._oversize:
                    self._oversize = True
                    where = self._owner._target()._where
                    self._errors.append(oversize_error(h.status, h.description, where, st.max_bytes))
                self._hold_until = _monotonic() + st.oversize_retry()
                return
            self._pull()
            return
        if kind in (S_HEARTBEAT, S_FLOW_CONTROL):
            return
        err = status_error(h.status, h.description, self._owner._target()._where)
        if err is None:
            return
        if kind == S_NO_RESPONDERS:
            # nobody took the pull: the consumer was deleted, or JetStream is away. An
            # ordered consumer recreates its consumer at once; a durable one is checked
            # (ConsumerDeletedError, or a warning and a new pull after a pause)
            st.clear_pending()
            self._need_reset = True
            self._no_responders = err
            return
        if kind == S_TERMINAL:
            if self._ordered is not None and isinstance(err, ConsumerDeletedError):
                self._warn(err)
                self._need_reset = True
                return
            self._terminal = err
            return
        if kind in (S_RESET, S_PIN_RESET):  # (423: the reader forgot the pin id)
            st.clear_pending()
            self._warn(err)
            self._pull()
            return
        if kind == S_WARN:
            n, b = parse_pending(h)
            if n or b:
                st.on_status_pending(n, b)
        self._warn(err)

    def _warn(self, err: BaseException) -> None:
        if self._report_warnings:
            self._errors.append(err)

    def _check(self, now: float) -> None:
        """After a wake-up: reconnects, a closed connection, missed heartbeats."""
        nc = self._link
        hb = self._hb
        if self._reconnected:
            self._reconnected = False
            hb.resume(now)
            hb.reset(now, self._seen)
            if self._ordered is not None:
                self._need_reset = True
            else:
                self._st.clear_pending()
                self._pull()
        if nc.is_closed:
            if self._terminal is None:
                self._terminal = ConnectionClosedError("connection closed")
            return
        if self._hold_until and now >= self._hold_until:
            self._pull()  # the pause after oversized pulls is over
        if hb.check(now, self._seen, nc.is_connected):
            err = NoHeartbeatError(f"no heartbeat from consumer {self._owner._target()._name!r} "
                                   f"for {hb.window:g}s")
            self._st.clear_pending()
            if self._ordered is not None:
                self._need_reset = True
                self._warn(err)
            else:
                if self._hb_errors:
                    self._errors.append(err)
                self._pull()

    async def _idle(self, limit: float | None) -> None:
        """Wait for messages or events (at most ``limit`` seconds), then check timers."""
        signal = self._signal
        signal.clear()
        if self._q or self._stopped or self._need_reset or self._conn_closed:
            return
        if self._reconnected:  # noted while the caller was busy (e.g. in a callback)
            self._check(_monotonic())
            return
        now = _monotonic()
        wait = self._hb.wait_time(now)
        if wait is not None:
            wait += 0.001
        hold = self._hold_until
        if hold and (wait is None or hold - now < wait):
            wait = max(hold - now, 0.0) + 0.001
        if limit is not None and (wait is None or limit < wait):
            wait = limit
        await signal.wait(wait)
        self._check(_monotonic())

    async def _reset(self, timeout: float | None = None) -> None:
        """Ordered consumers: drop the current consumer and pull from a new one (within
        ``timeout``, a ``next()``'s time left: past it ``TimeoutError``, and the next call
        goes on with the reset). Others (after a 503): find out whether the consumer is
        gone."""
        self._need_reset = False
        if self._ordered is None:
            await self._recheck()
            return
        sub = self._sub
        if sub is not None:
            self._link.unsubscribe(sub)
            self._sub = None
        self._q.clear()
        try:
            await self._ordered._recreate(self._interruptible_sleep,
                                          None if timeout is None else _monotonic() + timeout)
        except TimeoutError:
            if not self._stopped:
                self._need_reset = True  # not in time for this next(): the next one goes on
            raise
        except Exception as exc:
            if not self._stopped:
                self._terminal = exc
            return
        if self._stopped or self._draining or self._finished:
            if self._finished:  # ended meanwhile (stop() from elsewhere): what was just made goes too
                self._ordered._ctx_done(self)
            return
        self._start_sub()

    async def _recheck(self) -> None:
        err = self._no_responders or NoRespondersError("no responders for the pull")
        self._no_responders = None
        target = self._owner._target()
        err = await target._explain_no_responders(err)
        if isinstance(err, GONE_ERRORS):
            self._terminal = err
            return
        self._warn(err)
        if await self._interruptible_sleep(RESET_DELAY) and not self._draining:
            self._pull()

    async def _interruptible_sleep(self, seconds: float) -> bool:
        """Backoff between reset attempts; False when stopped meanwhile."""
        if self._stopped:
            return False
        self._signal.clear()
        await self._signal.wait(seconds)
        return not self._stopped

    def _close_sub(self) -> None:
        sub = self._sub
        if sub is not None:
            self._link.unsubscribe(sub)

    def _finish(self) -> None:
        if self._finished:
            return
        self._finished = True
        self._close_sub()
        self._q.clear()
        for remove in (self._listener, self._closer):
            if remove is not None:
                remove()
        self._listener = self._closer = None
        ordered = self._ordered
        if ordered is not None:
            ordered._ctx_done(self)

    # -- common controls ---------------------------------------------------------------
    def stop(self) -> None:
        """Stop at once: no more messages are handed out (not a coroutine)."""
        if self._stopped:
            return
        self._stopped = True
        self._close_sub()
        self._q.clear()
        self._signal.set()

    @property
    def delivered(self) -> int:
        """Messages handed to the user so far."""
        return self._st.delivered


class ConsumeContext(_Pulling):
    """A running ``consume()``: ``stop()``, ``drain()``, ``closed()``."""

    def __init__(self, owner: Any, opts: ConsumeOptions, cb: Callable[[Msg], object],
                 error_cb: Callable[..., object] | None, prio: JSONObject | None = None) -> None:
        if cb is None:
            raise InvalidOptionError("consume() needs a callback")
        super().__init__(owner, opts, prio)
        self._cb = cb
        self._error_cb = error_cb
        self._error_cb2 = error_cb is not None and _two_arg(error_cb)
        self._task: Any = None
        self._undrain: Callable[[], None] | None = None

    def _begin(self) -> None:
        super()._begin()
        self._task = prims.spawn(self._run, name="jetwire-consume")
        # the connection's drain lets the callback finish what was delivered (and ack it)
        self._undrain = self._link.on_drain(self._drain)

    def _finish(self) -> None:
        super()._finish()
        undrain = self._undrain
        if undrain is not None:
            self._undrain = None
            undrain()

    def __repr__(self) -> str:
        return f"<ConsumeContext consumer={self._owner._target()._name!r} delivered={self._st.delivered}>"

    async def _report(self, err: BaseException) -> None:
        cb = self._error_cb
        if cb is None:
            log.warning("jetwire: consume of %r: %s", self._owner._target()._name, err)
            return
        try:
            if self._error_cb2:
                await prims.call(cb, self, err)
            else:
                await prims.call(cb, err)
        except Exception:
            log.exception("jetwire: consume error callback failed")

    async def _run(self) -> None:
        q = self._q
        st = self._st
        cb = self._cb
        process = self._process
        pull = self._pull
        # _process's common case, inlined: a plain message of an unordered consume
        # without a byte limit (same accounting, same refill point)
        plain = self._ordered is None and not st.max_bytes
        try:
            while True:
                while q:
                    if self._stopped or self._conn_closed:
                        break
                    msg = q.popleft()
                    if plain and msg.headers is None:
                        st.pending_msgs -= 1
                        st.delivered += 1
                        if st.pending_msgs < st.threshold_messages:
                            pull()
                    else:
                        taken = process(msg)
                        if taken is None:
                            if self._errors or self._terminal is not None or self._need_reset:
                                break
                            continue
                        msg = taken
                    try:
                        r = cb(msg)
                        if r is not None and _isawaitable(r):  # aio-only
                            await r  # aio-only
                    except Exception as exc:  # a failing callback must not stop consuming
                        await self._report(exc)
                    # aio-only: begin
                    # a CancelledError of the callback's own (it awaited something cancelled
                    # elsewhere) is its error like any other; this task's cancellation ends it
                    except prims.CancelledError as exc:
                        if prims.cancelling():
                            raise
                        await self._report(exc)
                    # aio-only: end
                    if st.stop_after and st.delivered >= st.stop_after:
                        self.stop()
                while self._errors:
                    await self._report(self._errors.pop(0))
                if self._stopped:
                    return
                if self._terminal is not None:
                    err = self._terminal
                    if not isinstance(err, ConnectionClosedError):
                        await self._report(err)
                    return
                if self._need_reset and not self._draining:
                    await self._reset()
                    continue
                if q and not self._conn_closed:
                    continue
                if self._draining:
                    return
                await self._idle(None)
        finally:
            self._finish()

    async def drain(self, timeout: float | None = None) -> None:
        """Stop pulling, hand out what is buffered, then close (waits for that)."""
        await self._drain(timeout)

    async def _drain(self, timeout: float | None) -> bool:
        """``drain()``; whether consuming ended within ``timeout`` (True from the
        callback itself: it ends once the callback returns)."""
        if not self._stopped and not self._draining:
            self._draining = True
            self._close_sub()
            self._signal.set()
        return await prims.join(self._task, timeout)

    async def closed(self, timeout: float | None = None) -> bool:
        """Wait until consuming ended (stopped, drained, ``stop_after``, terminal error);
        False if still running after ``timeout`` seconds."""
        return await prims.join(self._task, timeout)

    @property
    def is_closed(self) -> bool:
        return self._finished


class MessagesContext(_Pulling):
    """A running ``messages()``: ``next(timeout=None)``, iteration, ``stop()``, ``drain()``."""

    _report_warnings = False

    def __repr__(self) -> str:
        return f"<MessagesContext consumer={self._owner._target()._name!r} delivered={self._st.delivered}>"

    async def next(self, timeout: float | None = None) -> Msg:
        """The next message (waiting up to ``timeout`` seconds, None = forever).

        Raises ``TimeoutError``, ``NoHeartbeatError`` (the pull was re-issued; calling
        again goes on), terminal errors such as ``ConsumerNotFoundError``,
        ``ConsumerDeletedError`` or ``StreamNotFoundError`` (the consumer or stream is gone), and
        ``MsgIteratorClosedError`` once stopped or drained."""
        q = self._q
        timeout = wait_limit(timeout)  # infinity: as long as it takes; NaN: ValueError
        deadline = None if timeout is None else _monotonic() + timeout
        while True:
            if self._stopped or self._finished:
                self._finish()
                drained = self._draining and not self._stopped
                raise MsgIteratorClosedError(f"messages() context is {'drained' if drained else 'closed'}")
            while q and not self._conn_closed:
                msg = self._process(q.popleft())
                if msg is not None:
                    if self._draining and not q:
                        self._finish()  # drained: that was the last one buffered
                    return msg
                if self._errors or self._terminal is not None or self._need_reset:
                    break
            if self._terminal is not None:
                err = self._terminal
                self._finish()
                raise err
            if self._errors:
                err = self._errors.pop(0)
                raise err
            if self._need_reset and not self._draining:
                await self._reset(None if deadline is None else max(0.0, deadline - _monotonic()))
                continue
            if q and not self._conn_closed:
                continue
            if self._draining:
                self._finish()
                raise MsgIteratorClosedError("messages() context is drained")
            remaining = None
            if deadline is not None:
                remaining = deadline - _monotonic()
                if remaining <= 0:
                    raise TimeoutError("no message within the timeout")
            await self._idle(remaining)

    def __aiter__(self) -> MessagesContext:
        return self

    async def __anext__(self) -> Msg:
        try:
            return await self.next()
        except MsgIteratorClosedError:
            raise StopAsyncIteration from None

    def stop(self) -> None:
        """Stop at once; buffered messages are dropped (not a coroutine)."""
        super().stop()
        self._finish()

    async def drain(self) -> None:
        """Stop pulling; ``next()`` still returns what is buffered, then the context closes
        (at once when nothing is buffered)."""
        if not self._stopped and not self._draining:
            self._draining = True
            self._close_sub()
            # nothing is pulled again: a reconnect is no longer this context's business
            listener = self._listener
            if listener is not None:
                self._listener = None
                listener()
            if not self._q:
                self._finish()  # (its close hook goes; the ordered consumer's consumer too)
            self._signal.set()

    @property
    def is_closed(self) -> bool:
        return self._finished


parse_fields = _impl.parse_metadata_fields  # an ack subject's metadata as a tuple
