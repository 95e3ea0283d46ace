"""Bookkeeping of asynchronous JetStream publishes (sans-IO, shared by both flavours).

One :class:`PubAckMux` serves every ``publish_async`` on a connection. Each publish
gets a token; its reply subject is ``<prefix><token>`` where ``prefix`` is
``<inbox_prefix>.<nuid>.``, so ONE wildcard subscription ``<prefix>*`` receives every
ack. The driver (``jetwire.aio.jetstream`` and its generated blocking twin) owns the
subscription, the futures and the writing; this class only keeps:

* ``pending``: token -> the publish's future, whose record ``fut._pub`` is
  ``(subject, header_bytes_or_None, data, retries_left, retry_wait, deadline_or_None,
  on_fail_or_None)`` (``AckMux`` sets it; ``fut.msg`` is made from it). Its length is
  the number of acks in flight, which is what the publish window counts;
* stall waiters: futures of publishers waiting for room in the window. They are woken
  (all of them) once the window has drained to ``wake_at`` (a little hysteresis: waking
  a stalled publisher for every single freed slot would cost a thread/task switch per
  message); a waiter re-checks the window itself, so waking early or late is safe;
* completion waiters: futures of ``publish_async_complete()`` callers, woken when
  nothing is pending any more;
* ack deadlines (``AckMux``: each record holds its own, and one timer on the
  connection's scheduler, ``call_later``, is armed for the earliest): a publish still
  pending at its deadline is removed (its slot in the window freed, waiters woken), its
  future fails with ``TimeoutError`` (and reaches the context's
  ``publish_async_err_cb``), and a late ack for it is ignored.

:meth:`on_msg` runs straight from the reader (it is the subscription's direct
handler): it never blocks. It parses the ack into a
:class:`~jetwire.jetstream.models.PubAck` (an error answer becomes the typed
``APIError``) and resolves the future. A ``503`` (no responders, ADR-22) with retries
left keeps the publish pending and calls the driver's ``on_retry(token, retry_wait)``,
which re-sends the message after the wait; with no retries left the future fails with
``NoStreamResponseError``. When the connection is lost, :meth:`fail_sent` fails what
still awaits an ack (those acks can never come).

Threads (the blocking flavour): publishing threads add entries and waiters, the reader
pops them, the timer expires deadlines. Every change to ``pending``, the token counter
and the waiter lists is made under ``lock`` (a ``jetwire._impl.Lock``, taken from C by
the compiled ``AckMux``); futures are resolved outside it. ``PubAckMux(prefix,
lock=None)`` is for a single thread (asyncio).
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import nullcontext
from typing import Any, TypeVar

import orjson

from .. import _impl
from ..errors import JetStreamError, NoStreamResponseError, TimeoutError, api_error
from ..msg import Msg
from .models import PubAck

__all__ = ["CONTEXT_TIMEOUT", "AckFuture", "AioAckFuture", "PubAckMux", "acked_future_class"]

_from_ack = PubAck.from_json_bytes
_decode_headers = _impl.decode_headers
_plain = PubAck.plain
_loads = orjson.loads

#: a publish's future or a waiter's (blocking: concurrent.futures, aio: asyncio)
_Fut = Future[Any] | asyncio.Future[Any]
_F = TypeVar("_F", bound=_Fut)


class _ContextTimeout:
    """The default of ``publish_async(timeout=...)``: the JetStream context's
    ``publish_async_timeout`` (by default its ``timeout``); None given explicitly means
    no deadline. It compares equal to None, as ``publish``'s documented default does
    (no value of the call's own), but it is not None: the code tells them apart with
    ``is``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<the context's publish_async_timeout>"

    def __eq__(self, other: object) -> bool:
        return other is None or other is self

    def __hash__(self) -> int:
        return hash(None)


CONTEXT_TIMEOUT: Any = _ContextTimeout()

_monotonic = time.monotonic
# the mux's deadlines are on time.monotonic(); a loop timer may fire a little early
_EARLY = 0.001

_NO_LOCK = nullcontext()  # what ``with`` takes when the mux has no lock (one thread)


def _pub_msg(fut: AckFuture | AioAckFuture) -> Msg:
    """The message a publish future stands for (made on first use, from its record)."""
    pub = fut._pub
    hdr = pub[1]
    return Msg(pub[0], pub[2], None, None if hdr is None else _decode_headers(hdr))


class AckFuture(_impl.AckFuture):
    """The ``concurrent.futures.Future`` that blocking ``publish_async`` returns (the
    compiled or pure base is cheap to make and resolve), with ``msg``: what was sent.
    ``result()`` is the ``PubAck``."""

    # the record AckMux keeps on it (see the module docstring)
    _pub: Any = None

    @property
    def msg(self) -> Msg:
        """The ``Msg`` that was published (subject, data, headers with the msg id), to retry it."""
        return _pub_msg(self)


class AioAckFuture(asyncio.Future[PubAck]):
    """The ``asyncio.Future`` that aio ``publish_async`` returns, with ``msg``; awaited, it
    is the ``PubAck``."""

    __slots__ = ("_pub",)
    _pub: Any

    @property
    def msg(self) -> Msg:
        """The ``Msg`` that was published (subject, data, headers with the msg id), to retry it."""
        return _pub_msg(self)


def acked_future_class(base: type[_F], on_ack: Callable[[_F, PubAck], None]) -> type[_F]:
    """A subclass of the future class ``base`` whose ``set_result(ack)`` calls
    ``on_ack(fut, ack)`` once the future is resolved (a JetStream context's
    ``publish_async_ack_cb``). Every ack resolves its future through ``set_result``
    (the compiled mux too), so the contexts without the callback keep the plain class and
    pay nothing; a future already done or cancelled raises there, and reports nothing."""
    base_set_result = base.set_result

    class AckedFuture(base):  # type: ignore[valid-type,misc]  # a class made at run time
        __slots__ = ()

        def set_result(self, result: PubAck) -> None:
            base_set_result(self, result)
            on_ack(self, result)

    AckedFuture.__qualname__ = AckedFuture.__name__ = base.__name__
    return AckedFuture


def _resolve(fut: _Fut, value: object) -> None:
    try:
        if not fut.done():
            fut.set_result(value)
    except Exception:  # cancelled / resolved concurrently by another thread
        pass


def _fail(fut: _Fut, exc: BaseException) -> None:
    """Fail ``fut`` unless it is done; its publisher's ``on_fail(fut, exc)`` hook (the
    JetStream context's ``publish_async_err_cb``) is told when it has one."""
    try:
        if fut.done():
            return
        fut.set_exception(exc)
    except Exception:
        return
    pub = getattr(fut, "_pub", None)
    if pub is not None and pub[6] is not None:
        pub[6](fut, exc)


_NEW_LOCK: Any = object()


class PubAckMux(_impl.AckMux):
    """Token -> future map, window accounting and ack parsing for ``publish_async``.

    The per-ack path (``add``, ``on_msg`` for the usual ``{"stream":..,"seq":..}``
    answer) is the compiled ``AckMux`` (or its pure twin); every other answer comes to
    :meth:`_other`. ``lock``: a new ``jetwire._impl.Lock`` unless given (None: one
    thread uses the mux, asyncio)."""

    __slots__ = ("__weakref__", "call_later", "chain", "close_error", "closed", "on_retry", "sub")

    def __init__(self, prefix: str, lock: Any = _NEW_LOCK) -> None:
        if lock is _NEW_LOCK:
            lock = _impl.Lock()
        super().__init__(prefix, PubAck.plain, lock)  # prefix ends with "."
        self.closed = False
        self.close_error: BaseException | None = None
        self.sub: Any = None  # the driver's reply subscription
        self.chain: PubAckMux | None = None  # another mux registered on the same connection before us
        # set by the driver: on_retry(token, wait) schedules a re-send (never blocks)
        self.on_retry: Callable[[str, float], None] | None = None
        # set by the driver: the connection's call_later(delay, fn, *args) (the ack
        # deadlines' timer); None: nothing expires unless expire() is called
        self.call_later: Callable[..., object] | None = None

    # -- publishing side ---------------------------------------------------------------
    # add(fut, subject, hdr, data, retries, retry_wait, timeout, on_fail) -> token:
    # compiled (AckMux)

    def reply_of(self, token: str) -> str:
        return self.prefix + token

    def pending_parts(self, token: str) -> tuple[str, bytes | None, Any] | None:
        """``(subject, header_bytes_or_None, data)`` of a publish still awaiting its ack
        (to send it again), None when it is not pending."""
        fut = self.pending.get(token)
        if fut is None:
            return None
        rec = fut._pub
        return rec[0], rec[1], rec[2]

    def _pop(self, token: str) -> Any:
        """Remove and return the future of ``token`` (None when there is none)."""
        lock = self.lock
        if lock is None:
            return self.pending.pop(token, None)
        with lock:
            return self.pending.pop(token, None)

    def discard(self, token: str) -> None:
        """Forget a publish that could not be written (its future is failed by the caller)."""
        self._pop(token)
        self._after_pop()

    def fail(self, token: str, exc: BaseException) -> None:
        fut = self._pop(token)
        if fut is not None:
            _fail(fut, exc)
            self._after_pop()

    # -- ack deadlines (the records' deadlines and armed_at are AckMux's) ----------------
    def _arm(self, at: float) -> None:
        """Arm the deadlines' timer for ``at`` (called by AckMux, outside the lock)."""
        call_later = self.call_later
        if call_later is None or self.closed:
            return
        try:
            call_later(max(0.0, at - _monotonic()), self._fire, at)
        except Exception:  # the loop or scheduler is closing: fail_all fails everything
            pass

    def _fire(self, at: float) -> None:
        self.expire(_monotonic() + _EARLY, at)

    def _expired(self, futs: list[Any]) -> None:
        """Fail publishes whose ack did not come by their deadline (already removed)."""
        for fut in futs:
            _fail(fut, TimeoutError("no JetStream publish ack within the publish_async timeout "
                                         "(publish it again with the same msg_id)"))
        self._after_pop()

    def add_stall_waiter(self, fut: _Fut, wake_at: int) -> None:
        with self.lock or _NO_LOCK:
            waiters = self.stall_waiters
            if len(waiters) > 64:
                waiters[:] = [w for w in waiters if not w.done()]
            self.wake_at = wake_at
            waiters.append(fut)

    def add_complete_waiter(self, fut: _Fut) -> None:
        with self.lock or _NO_LOCK:
            waiters = self.complete_waiters
            if len(waiters) > 64:
                waiters[:] = [w for w in waiters if not w.done()]
            waiters.append(fut)

    # -- reader side (never blocks) ----------------------------------------------------
    # on_msg(msg), the subscription's direct handler: compiled (AckMux); it resolves the
    # usual answer itself and hands every other one (future already popped) to _other.
    def _other(self, msg: Msg, token: str, fut: Any) -> None:
        """Any reply but the usual ``{"stream":..,"seq":..}``. A no responders status with
        retries left keeps the publish pending and calls ``on_retry(token, wait)`` so the
        driver re-sends it after ``wait`` seconds."""
        data = msg.data
        if data:
            try:
                d = _loads(data)
            except Exception:
                d = None
            if type(d) is dict and len(d) == 2 and type(d.get("seq")) is int:
                stream = d.get("stream")
                if stream and type(stream) is str:
                    # {"seq":..,"stream":..} or spaced: the usual answer all the same
                    _resolve(fut, _plain(stream, d["seq"]))
                    if self.stall_waiters or self.complete_waiters:
                        self._after_pop()
                    return
            self._slow_ack(fut, data, d)
        else:
            h = msg.headers
            status = h.status if h is not None else None
            if status == "503":
                rec = fut._pub
                retries = rec[3]
                if retries != 0 and not self.closed and self.on_retry is not None:
                    with self.lock or _NO_LOCK:
                        fut._pub = (*rec[:3], retries - 1, *rec[4:])  # its deadline kept
                        self.pending[token] = fut
                    self.on_retry(token, rec[4])
                    return
                _fail(fut, NoStreamResponseError("no stream answered the publish (no responders)"))
            else:
                desc = (h.description if h is not None else None) or "empty publish ack"
                _fail(fut, api_error({"code": int(status) if status and status.isdigit() else None,
                                      "description": desc}))
        if self.stall_waiters or self.complete_waiters:
            self._after_pop()

    @staticmethod
    def _slow_ack(fut: _Fut, data: bytes, d: object) -> None:
        if type(d) is dict and "error" in d:
            err = d["error"]
            _fail(fut, api_error(err) if type(err) is dict else JetStreamError(f"publish failed: {err!r}"))
            return
        try:
            ack = _from_ack(data)  # (an answer that is no ack: InvalidJSONError)
        except JetStreamError as exc:
            _fail(fut, exc)
            return
        _resolve(fut, ack)

    def _after_pop(self) -> None:
        woken: list[_Fut] = []
        with self.lock or _NO_LOCK:
            n = len(self.pending)
            if self.stall_waiters and n <= self.wake_at:
                woken += self.stall_waiters
                self.stall_waiters = []
            if n == 0 and self.complete_waiters:
                woken += self.complete_waiters
                self.complete_waiters = []
        for w in woken:
            _resolve(w, True)

    # -- connection loss and closing ----------------------------------------------------
    def fail_sent(self, err: BaseException) -> None:
        """The connection was lost: no ack of a publish made before will ever come (the
        server may or may not have stored it). Fail every pending publish with ``err``
        (as nats.go does; one still in the reconnect buffer is sent after the reconnect
        all the same) and wake the waiters. Publishes made from now on go out when the
        connection is back and get their acks over the renewed subscription."""
        with self.lock or _NO_LOCK:  # publishes added from now on stay
            lost = list(self.pending.values())
            self.pending.clear()
        for fut in lost:
            _fail(fut, err)
        if lost:
            self._after_pop()

    def fail_all(self, err: BaseException) -> None:
        """The connection closed: fail every pending future and wake every waiter."""
        with self.lock or _NO_LOCK:
            self.closed = True
            self.close_error = err
            pending = self.pending
            self.pending = {}
            waiters = self.stall_waiters + self.complete_waiters
            self.stall_waiters = []
            self.complete_waiters = []
        self.disarm()
        for fut in pending.values():
            _fail(fut, err)
        for w in waiters:
            _resolve(w, True)
        if self.chain is not None:
            self.chain.fail_all(err)
