"""Publishing of a JetStream context (asyncio source; ``jetwire/_sync/js_publish.py`` is
generated from it): ``publish`` (a request that waits for the ack), ``publish_async``
(acks resolved through ONE wildcard reply subscription per connection, handled straight
from the reader by the sans-IO :class:`~jetwire.jetstream.pubmux.PubAckMux`: no
subscription, task or thread per message), atomic batches and counters (nats.go's
``jetstream.Publisher``). :class:`~jetwire.aio.jetstream.JetStream` is made of this and
the other managers."""
from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import _impl
from ..errors import (
    ConnectionClosedError,
    InvalidOptionError,
    JetStreamError,
    MaxPayloadError,
    NoRespondersError,
    NoStreamResponseError,
    TimeoutError,
    TooManyStalledMsgsError,
    payload_size,
    payload_type_error,
)
from ..jetstream.manage import incr_headers, publish_headers
from ..jetstream.models import PubAck
from ..jetstream.pubmux import (  # noqa: F401 - one future per flavour
    CONTEXT_TIMEOUT,
    AckFuture,
    AioAckFuture,
    PubAckMux,
    acked_future_class,
)
from ..jetstream.validate import validate_seconds
from ..msg import Msg
from . import _prims as prims
from .batch import AtomicBatch
from .jsapi import ContextBase

if TYPE_CHECKING:
    from datetime import datetime, timedelta

    from ..protocol.headers import HeadersInit

_encode_headers = _impl.encode_headers
_from_ack = PubAck.from_json_bytes
_new_future = AioAckFuture  # aio-only
# sync-only: _new_future = AckFuture  # a concurrent.futures.Future that is cheap to make and resolve


async def _acks_in(mux: PubAckMux, timeout: float | None) -> bool:
    """Wait until none of ``mux``'s publishes awaits its ack (each has it, or failed);
    False when some still do after ``timeout`` seconds (None: as long as it takes)."""
    deadline = None if timeout is None else prims.monotonic() + timeout
    while mux.pending:
        remaining = None
        if deadline is not None:
            remaining = deadline - prims.monotonic()
            if remaining <= 0:
                return False
        fut = prims.new_future()
        mux.add_complete_waiter(fut)
        if not mux.pending:
            break
        try:
            await prims.wait_future(fut, remaining)
        except Exception:  # timed out (checked above) or resolved concurrently
            pass
    return True


def _ack_timeout(value: object, name: str) -> float | None:
    """An async-publish ack timeout: None (no deadline; also for infinity) or seconds > 0."""
    validate_seconds(value, name, none=True)
    if value is None:
        return None
    value = float(value)  # type: ignore[arg-type]  # (checked: a number)
    return None if value == float("inf") else value


def _none() -> None:
    return None


def _parse_ack(data: bytes) -> PubAck:
    """The ack in a publish's answer: its ``APIError``, or ``InvalidJSONError`` for an
    answer that is not an ack."""
    return _from_ack(data)


def _positional(cb: Callable[..., object]) -> int:
    """How many positional arguments ``cb`` takes (-1: any number, or unknown)."""
    try:
        params = inspect.signature(cb).parameters.values()
    except (TypeError, ValueError):
        return -1
    n = 0
    for p in params:
        if p.kind is p.VAR_POSITIONAL:
            return -1
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            n += 1
    return n


def _takes_three(cb: Callable[..., object]) -> bool:
    """Whether ``cb`` takes nats.go's ``(js, msg, err)`` (else ``(msg, err)``)."""
    try:
        params = inspect.signature(cb).parameters.values()
    except (TypeError, ValueError):
        return True
    n = 0
    for p in params:
        if p.kind is p.VAR_POSITIONAL:
            return True
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            n += 1
    return n >= 3


class Publisher(ContextBase):
    """Publishing (a part of ``JetStream``; its state is set by :meth:`_init_publishing`)."""

    def _init_publishing(self, publish_async_max_pending: int, publish_async_timeout: float | None,
                         publish_async_err_cb: Callable[..., object] | None,
                         publish_async_ack_cb: Callable[..., object] | None) -> None:
        if publish_async_max_pending < 1:
            raise InvalidOptionError("publish_async_max_pending must be at least 1")
        api = self.api
        self._link = api.link
        self._max_pending = publish_async_max_pending
        if publish_async_timeout is CONTEXT_TIMEOUT:
            publish_async_timeout = api.timeout
        self._ack_timeout = _ack_timeout(publish_async_timeout, "publish_async_timeout")
        self._mux: PubAckMux | None = None
        self._publish = api.nc.publish  # the outbox's compiled fast path once connected
        # what publish_async returns: a future of the connection's loop (made without
        # looking the loop up per message; set on first use) / an AckFuture, cheap to
        # make and resolve
        if publish_async_ack_cb is not None and not callable(publish_async_ack_cb):
            raise TypeError("publish_async_ack_cb must be callable")
        self._ack_cb = publish_async_ack_cb
        self._ack_cb_args = 0 if publish_async_ack_cb is None else _positional(publish_async_ack_cb)
        # with publish_async_ack_cb: futures whose set_result reports the ack (the
        # others keep the plain class: nothing more per publish)
        self._future_cls = _new_future if publish_async_ack_cb is None else \
            acked_future_class(_new_future, self._async_acked)
        self._make_future: Any = None  # aio-only
        # sync-only: self._make_future = self._future_cls
        if publish_async_err_cb is not None and not callable(publish_async_err_cb):
            raise TypeError("publish_async_err_cb must be callable")
        self._err_cb = publish_async_err_cb
        self._err_cb_js = publish_async_err_cb is not None and _takes_three(publish_async_err_cb)
        self._on_fail = None if publish_async_err_cb is None else self._async_failed

    def _async_acked(self, fut: Any, ack: PubAck) -> None:
        """An async publish of this context was acknowledged: tell ``publish_async_ack_cb``
        (from the reader; through the callback dispatcher)."""
        n = self._ack_cb_args
        if n == 3:
            self._link.dispatch(self._ack_cb, self, fut.msg, ack)  # type: ignore[arg-type]  # set: _on_ack
        elif n == 2:
            self._link.dispatch(self._ack_cb, fut.msg, ack)  # type: ignore[arg-type]
        else:
            self._link.dispatch(self._ack_cb, ack)  # type: ignore[arg-type]

    def _async_failed(self, fut: Any, exc: BaseException) -> None:
        """An async publish of this context failed: tell ``publish_async_err_cb``."""
        if self._err_cb_js:
            self._link.dispatch(self._err_cb, self, fut.msg, exc)  # type: ignore[arg-type]  # set: _on_fail
        else:
            self._link.dispatch(self._err_cb, fut.msg, exc)  # type: ignore[arg-type]

    async def publish(self, subject: str, data: bytes | bytearray | memoryview = b"", headers: HeadersInit | None = None,
                      msg_id: str | None = None,
                      expected_stream: str | None = None, expected_last_seq: int | None = None,
                      expected_last_subject_seq: int | None = None, expected_last_msg_id: str | None = None,
                      timeout: float | None = None, retry_attempts: int = 2, retry_wait: float = 0.25,
                      ttl: float | None = None, expected_last_subject_seq_subject: str | None = None,
                      schedule: str | datetime | timedelta | None = None, schedule_target: str | None = None,
                      schedule_ttl: float | str | None = None) -> PubAck:
        """Publish to a stream and wait for its ack.

        The ``expected_*`` arguments make the stream refuse the message unless they hold
        (``WrongLastSequenceError``, ``WrongLastMsgIdError``, ``StreamWrongExpectedError``);
        ``msg_id`` de-duplicates (``PubAck.duplicate``). When no stream answers, the
        publish is retried ``retry_attempts`` times ``retry_wait`` seconds apart
        (ADR-22; a negative count retries without limit), then
        ``NoStreamResponseError`` is raised. ``timeout`` (default: the context's)
        bounds each attempt's wait for the ack. ``ttl`` (seconds, at least 1, or
        ``"never"``; sent as ``Nats-TTL``) removes the message that long after it was
        stored: the stream needs ``allow_msg_ttl`` (else ``MsgTTLDisabledError``).

        ``expected_last_subject_seq_subject`` (nats.go's ``ExpectLastSequenceForSubject``):
        ``expected_last_subject_seq`` is then checked against the last message of that
        subject (or filter) instead of the published one's.

        ``schedule`` makes the message a schedule (ADR-51; the stream needs
        ``allow_msg_schedules``, else ``MsgSchedulesDisabledError``): ``"@at <RFC 3339
        time>"`` (or a ``datetime``), ``"@every <duration>"`` (at least ``1s``; or a
        ``timedelta``), ``@hourly``/``@daily``/... or a 6-field cron spec (seconds
        first); the stream stores a copy of it under ``schedule_target`` (required; a
        subject of the same stream, not the schedule's own) at those times, with the
        per-message TTL ``schedule_ttl`` when given (the stream needs ``allow_msg_ttl``).
        The last message on a subject is its schedule, so give each schedule its own
        subject. A malformed spec raises ``InvalidOptionError`` (a ``ValueError``)
        before anything is sent; one the server refuses, ``MsgScheduleInvalidError``."""
        hdrs = publish_headers(headers, msg_id, expected_stream, expected_last_seq, expected_last_subject_seq,
                               expected_last_msg_id, ttl,
                               expected_last_subject_seq_subject=expected_last_subject_seq_subject,
                               schedule=schedule, schedule_target=schedule_target, schedule_ttl=schedule_ttl)
        hdr = None if hdrs is None else _encode_headers(hdrs)
        if timeout is None:
            timeout = self.api.timeout
        request = self._link.request_raw
        attempt = 0
        while True:
            try:
                msg = await request(subject, data, hdr, timeout)
                break
            except NoRespondersError:
                if 0 <= retry_attempts <= attempt:
                    raise NoStreamResponseError(f"no stream answered the publish to {subject!r}") from None
                attempt += 1
                await prims.sleep(retry_wait)
        return _parse_ack(msg.data)

    async def publish_msg(self, msg: Msg, **options: Any) -> PubAck:
        """``publish(msg.subject, msg.data, msg.headers, **options)``."""
        return await self.publish(msg.subject, msg.data, msg.headers, **options)

    def atomic_batch(self, timeout: float | None = None) -> AtomicBatch:
        """A new atomic batch (ADR-50; server 2.12+, streams with ``allow_atomic=True``):
        ``b.add(subject, data, headers=None, **options)`` for each message but the last,
        then ``b.commit(subject, data, headers=None, **options) -> BatchAck`` (awaited in
        the asyncio flavour): all of it is stored, or nothing and ``AtomicBatchError`` is raised (see
        :class:`~jetwire.aio.batch.AtomicBatch`). ``timeout``: the commit's wait for its
        answer (default: the context's). Nothing is sent until the first ``add``."""
        if timeout is not None:
            validate_seconds(timeout, "timeout")
        return AtomicBatch(self.api.nc, self._link, timeout or self.api.timeout, self.api.nuid.next())

    async def incr(self, subject: str, delta: int = 1, timeout: float | None = None) -> int:
        """Add ``delta`` (any int, negative or 0 too) to the counter stored on ``subject``
        of a stream with ``allow_msg_counter`` (server 2.12+; ``Nats-Incr`` header, no
        payload) and return its new value, from the ack. A stream without counters
        raises ``MsgCounterDisabledError``."""
        ack = await self.publish(subject, b"", headers=incr_headers(delta), timeout=timeout)
        if ack.val is None:
            raise JetStreamError(f"stream {ack.stream!r} sent no counter value: does it allow counters?")
        try:
            return int(ack.val)
        except ValueError:
            raise JetStreamError(f"stream {ack.stream!r} sent a bad counter value {ack.val!r}") from None

    def _pub_mux(self) -> PubAckMux:
        """The connection's async-publish mux (one per connection, shared by every
        context), made with its reply subscription on first use."""
        link = self._link
        if link.is_closed:
            raise ConnectionClosedError("connection closed")
        mux = link.shared("jetstream.pubmux", self._new_mux)
        if mux.closed:
            raise ConnectionClosedError("connection closed")
        self._mux = mux
        return mux

    def _new_mux(self) -> PubAckMux:
        link = self._link
        mux = PubAckMux(link.new_inbox() + ".", lock=None)  # aio-only: one thread
        # sync-only: mux = PubAckMux(link.new_inbox() + ".")

        def resend(token: str) -> None:
            """Publish a pending message again (after no responders; on the timer)."""
            parts = mux.pending_parts(token)
            if parts is None or mux.closed:
                return
            subject, hdr, data = parts
            try:
                link.publish_raw(subject, mux.reply_of(token), hdr, data)
            except Exception as exc:
                mux.fail(token, exc)

        def on_retry(token: str, wait: float) -> None:  # from the reader: never blocks
            link.call_later(wait, resend, token)

        mux.on_retry = on_retry
        mux.call_later = link.call_later  # the ack deadlines' one timer
        mux.sub = link.subscribe_direct(mux.prefix + "*", mux.on_msg)
        link.on_lost(mux.fail_sent)  # the acks of what went out are lost with the connection
        link.on_close(mux.fail_all)

        async def acks_before_drain(timeout: float) -> bool:
            # the connection drains: the acks of what was published come in before the
            # ack subscription goes (a publish that was stored gets its ack)
            return await _acks_in(mux, timeout)

        link.on_drain(acks_before_drain)
        return mux

    async def _stall(self, mux: PubAckMux, stall_wait: float) -> None:
        """Wait up to ``stall_wait`` seconds for room in the window."""
        max_pending = self._max_pending
        # woken once a sixteenth of the window is free: publishes go out in small
        # batches while the window stays nearly full
        wake_at = max_pending - max(1, max_pending // 16)
        deadline = prims.monotonic() + stall_wait
        # blocking: what this publisher queued goes out now, from this thread, rather than
        # after a hand-off to the flusher (asyncio: the loop's turn sends it as this waits)
        # sync-only: self._link.send_now()
        while len(mux.pending) >= max_pending:
            if mux.closed:
                raise ConnectionClosedError("connection closed")
            remaining = deadline - prims.monotonic()
            if remaining <= 0:
                raise TooManyStalledMsgsError(
                    f"{len(mux.pending)} async publishes awaiting acks; no room after {stall_wait}s")
            fut = prims.new_future()
            mux.add_stall_waiter(fut, wake_at)
            if len(mux.pending) < max_pending:
                break
            try:
                await prims.wait_future(fut, remaining)
            except Exception:  # timed out (checked above) or resolved concurrently
                pass

    async def publish_async(self, subject: str, data: bytes | bytearray | memoryview = b"",
                            headers: HeadersInit | None = None, msg_id: str | None = None,
                            expected_stream: str | None = None, expected_last_seq: int | None = None,
                            expected_last_subject_seq: int | None = None,
                            expected_last_msg_id: str | None = None, timeout: float | None = CONTEXT_TIMEOUT,
                            retry_attempts: int = 2, retry_wait: float = 0.25, stall_wait: float = 0.2,
                            ttl: float | None = None) -> AioAckFuture:  # aio-only
                            # sync-only: ttl: float | None = None) -> AckFuture:
        """Publish without waiting for the ack; returns a future resolving to the
        ``PubAck`` (or failing with the typed error, ``NoStreamResponseError`` after the
        no-responders retries, ``ConnectionClosedError`` when the connection closes,
        ``ConnectionLostError`` when it is lost before the ack, or ``TimeoutError`` when
        no ack came within ``timeout``).

        ``timeout``: the ack deadline in seconds; by default the context's
        ``publish_async_timeout`` (its ``timeout``, 5 s, unless set), None for no
        deadline. A future still pending at its deadline fails with ``TimeoutError``
        (also handed to ``publish_async_err_cb``), its slot in the window is freed and a
        late ack for it is ignored, so every future resolves in bounded time (a stream
        leader lost with acks in flight never answers them, and the connection to a
        surviving server does not fail them).

        At most ``publish_async_max_pending`` acks are awaited at once (counted over
        every context of the connection, which share one reply subscription); a
        publish that finds the window full waits up to ``stall_wait`` seconds for room,
        then raises ``TooManyStalledMsgsError``. When the connection is lost, every
        publish still awaiting its ack fails with ``ConnectionLostError``; publishes
        made while reconnecting go out once the connection is back and get their acks.

        A failed publish (a timeout, a lost connection) may or may not have been
        stored: give every message a ``msg_id`` and publish the failed ones again with
        the same id (``fut.msg`` is what was sent); the stream's duplicate window drops a
        copy it has already stored. ``ttl``: a per-message TTL, as in :meth:`publish`.
        ``data`` that is not ``bytes`` (a ``bytearray``, a ``memoryview``) is copied:
        changing it afterwards changes neither a retry nor ``fut.msg``."""
        if data.__class__ is not bytes:  # a buffer the caller may change: a retry and fut.msg keep a copy
            try:
                data = memoryview(data).tobytes()
            except TypeError:
                raise payload_type_error(data) from None
        mux = self._mux
        if mux is not None and headers is None and timeout is CONTEXT_TIMEOUT and msg_id is None and ttl is None \
                and expected_stream is None and expected_last_seq is None and expected_last_subject_seq is None \
                and expected_last_msg_id is None and not mux.closed and len(mux.pending) < self._max_pending:
            # the common case: no headers, room in the window; the PUB goes through the
            # client's publish (the outbox's compiled fast path; it checks max_payload)
            make = self._make_future
            if make is None:  # aio-only
                make = self._make_future = prims.future_maker(self._future_cls)  # aio-only
            fut: AioAckFuture = make()  # aio-only
            # sync-only: fut: AckFuture = make()
            # registered (with its ack deadline, its record on the future) and published
            # in one compiled call (removed again if publish raises)
            # aio: what publish returns is done, or (congested) done once the socket drains
            r = mux.submit(fut, subject, data, retry_attempts, retry_wait, self._publish, self._ack_timeout,  # aio-only
                           self._on_fail)  # aio-only
            await r  # aio-only
            # sync-only: mux.submit(fut, subject, data, retry_attempts, retry_wait, self._publish, self._ack_timeout,
            # sync-only:            self._on_fail)
            return fut
        timeout = self._ack_timeout if timeout is CONTEXT_TIMEOUT else _ack_timeout(timeout, "timeout")
        if mux is None or mux.closed:
            mux = self._pub_mux()
        if len(mux.pending) >= self._max_pending:
            await self._stall(mux, stall_wait)
        if msg_id is not None or expected_stream is not None or expected_last_seq is not None \
                or expected_last_subject_seq is not None or expected_last_msg_id is not None or ttl is not None:
            headers = publish_headers(headers, msg_id, expected_stream, expected_last_seq,
                                      expected_last_subject_seq, expected_last_msg_id, ttl)
        hdr = None if headers is None else _encode_headers(headers)
        size = payload_size(data, hdr)  # bytes, not items (an array's); TypeError for a str, a list
        link = self._link
        if size > link.max_payload:
            raise MaxPayloadError(f"message of {size} bytes exceeds max_payload {link.max_payload}")
        make = self._make_future
        if make is None:  # aio-only
            make = self._make_future = prims.future_maker(self._future_cls)  # aio-only
        fut = make()
        token = mux.add(fut, subject, hdr, data, retry_attempts, retry_wait, timeout, self._on_fail)
        try:
            link.publish_raw(subject, mux.prefix + token, hdr, data)
        except BaseException:
            mux.discard(token)
            raise
        await link.wait_writable()
        return fut

    async def publish_msg_async(self, msg: Msg, **options: Any) -> AioAckFuture:  # aio-only
    # sync-only: def publish_msg_async(self, msg: Msg, **options: Any) -> AckFuture:
        """``publish_async(msg.subject, msg.data, msg.headers, **options)``."""
        return await self.publish_async(msg.subject, msg.data, msg.headers, **options)

    def _current_mux(self) -> PubAckMux | None:
        mux = self._mux
        if mux is None:
            mux = self._link.shared("jetstream.pubmux", _none)
        return mux

    def publish_async_pending(self) -> int:
        """How many async publishes on this connection wait for their ack."""
        mux = self._current_mux()
        return len(mux.pending) if mux is not None else 0

    async def publish_async_complete(self, timeout: float | None = None) -> None:
        """Wait until every async publish has its ack or failed; ``TimeoutError`` after
        ``timeout`` seconds (None waits as long as it takes: at most until the last
        deadline of the publishes made with one)."""
        mux = self._current_mux()
        if mux is not None and not await _acks_in(mux, timeout):
            raise TimeoutError(f"{len(mux.pending)} async publishes still wait for their ack")
