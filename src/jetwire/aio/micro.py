"""Services: the NATS service API (ADR-32, nats.go ``micro``), both flavours: the asyncio
source is also the blocking ``jetwire.micro`` (``jetwire/_sync/micro.py`` is generated
from it by ``tools/gen_sync.py``; never edit the generated file).

Everything without I/O (checks, subjects, queue groups, counters, the JSON documents,
the typed results) is :mod:`jetwire.micro_core`; this module moves requests.

Requests reach an endpoint through a direct subscription (``nc.link``): the reader puts
each one in the endpoint's backlog and wakes one of its workers, which runs the handler
(``concurrency`` workers at most per endpoint). In the asyncio flavour a worker is a
task and a handler may be a coroutine function: up to ``concurrency`` requests of one
endpoint are handled at once (default 256), the rest wait in arrival order. In the
blocking flavour a worker is a thread of the endpoint's small pool (``concurrency``,
default 4), started when needed. A worker handles what is in the backlog one after the other, so
a burst of requests costs one wake-up, not a task or thread each. The backlog (requests
received, not yet handled) has a subscription's pending limits (the connection's
``pending_msgs_limit`` / ``pending_bytes_limit``: 512Ki messages, 128 MiB by default), as
nats.go's endpoints are subscriptions with its defaults: past them a request is dropped
and the connection's ``error_cb`` hears a ``SlowConsumerError`` (once per episode).
"""
from __future__ import annotations

import sys
import threading
from collections import deque
from collections.abc import Callable
from inspect import isawaitable  # aio-only
from typing import TYPE_CHECKING, Any, Literal

import orjson

from .. import micro_core as core
from .._nuid import next_nuid
from .._units import wait_limit
from ..errors import (
    ConnectionClosedError,
    InvalidServiceConfigError,
    NatsError,
    PermissionViolationError,
    ServiceError,
    SlowConsumerError,
    payload_type_error,
)
from ..micro_core import EndpointInfo, EndpointStats, ServiceInfo, ServicePing, ServiceStats
from . import _prims as prims

if TYPE_CHECKING:
    import asyncio  # aio-only

    from ..connection import interface as _api
    from ..msg import Msg
    from ..protocol.headers import Headers, HeadersInit
    from .client import Client

__all__ = [
    "DEFAULT_CONCURRENCY",
    "DEFAULT_QUEUE_GROUP",
    "ERROR_CODE_HEADER",
    "ERROR_HEADER",
    "Endpoint",
    "EndpointInfo",
    "EndpointStats",
    "Group",
    "Request",
    "Service",
    "ServiceError",
    "ServiceInfo",
    "ServicePing",
    "ServiceStats",
    "add_service",
    "info",
    "ping",
    "request",
    "stats",
]

DEFAULT_QUEUE_GROUP = core.DEFAULT_QUEUE_GROUP
ERROR_HEADER = core.ERROR_HEADER
ERROR_CODE_HEADER = core.ERROR_CODE_HEADER
DEFAULT_CONCURRENCY = 256  # aio-only
# sync-only: DEFAULT_CONCURRENCY = 4

_now_ns = core.monotonic_ns


def _limit(n: int) -> int:
    """A pending limit; 0 or less: none."""
    return n if n > 0 else sys.maxsize




def _slow_consumer(link: _api.Link, subject: str, sid: int, dropped: int) -> None:
    """Tell ``error_cb`` (through the connection, as for any subscription) that requests
    to ``subject`` are being dropped."""
    link.report_error(SlowConsumerError(f"slow consumer on subject {subject!r}, messages dropped",
                                        subject=subject, sid=sid, dropped=dropped))


class Request:
    """One request to an endpoint: ``data``, ``headers``, ``subject``, ``reply``, and the
    ways to answer it. ``respond*`` queue the answer when called and return what
    ``nc.publish`` returns: in the asyncio flavour an awaitable that is done, or done
    once a congested socket drains (awaiting it is optional); in the blocking flavour
    None."""

    __slots__ = ("_ep", "_error", "_nc", "_responded", "_t0", "msg")

    def __init__(self, msg: Msg, nc: Client, ep: Endpoint | None = None) -> None:
        self.msg = msg
        self._nc = nc
        self._error: str | None = None
        self._responded = False
        self._ep = ep
        self._t0 = _now_ns()

    @property
    def data(self) -> bytes:
        return self.msg.data

    @property
    def headers(self) -> Headers | None:
        """The request's ``Headers``, or None."""
        return self.msg.headers

    @property
    def subject(self) -> str:
        return self.msg.subject

    @property
    def reply(self) -> str | None:
        return self.msg.reply

    def respond(self, data: bytes | bytearray | memoryview = b"", headers: HeadersInit | None = None) -> Any:
        """Answer with ``data`` (and ``headers``)."""
        reply = self.msg.reply
        if not reply:
            raise NatsError("the request has no reply subject")
        if type(data) is not bytes:  # refused before it counts as answered (a raising handler answers 500)
            try:
                memoryview(data).release()
            except TypeError:
                raise payload_type_error(data) from None
        ep = self._ep
        if self._responded or ep is None:
            r = self._nc.publish(reply, data) if headers is None else self._nc.publish(reply, data, headers=headers)
            self._responded = True
            return r
        # counted before the answer leaves (who gets it finds it counted), and taken back
        # when it cannot leave (MaxPayloadError, ...): the request is unanswered then, so
        # the handler's exception still answers it (500) and it counts once
        self._responded = True
        undo = ep._account(self)
        try:
            if headers is None:
                return self._nc.publish(reply, data)
            return self._nc.publish(reply, data, headers=headers)
        except BaseException:
            self._responded = False
            ep._unaccount(undo)
            raise

    def respond_json(self, obj: object, headers: HeadersInit | None = None) -> Any:
        """Answer with ``obj`` as JSON."""
        return self.respond(orjson.dumps(obj), headers)

    def respond_error(self, code: object, description: str, data: bytes | bytearray | memoryview = b"",
                      headers: HeadersInit | None = None) -> Any:
        """Answer with a service error (headers ``Nats-Service-Error-Code: code`` and
        ``Nats-Service-Error: description``); it counts as an error of the endpoint. Both
        are cleaned (CR/LF become spaces, trimmed) and cut to ``MAX_ERROR_TEXT``
        characters; one that is empty then raises ``InvalidServiceConfigError``."""
        code, description = core.service_error(code, description)
        hdrs = core.error_headers(code, description, headers)
        before, self._error = self._error, core.error_text(code, description)
        try:
            return self.respond(data, hdrs)
        except BaseException:
            self._error = before  # not sent: not this request's error
            raise

    def __repr__(self) -> str:
        return f"<Request subject={self.subject!r} reply={self.reply!r} data={self.data[:32]!r}>"


class _Workers:
    """At most ``limit`` workers (tasks / threads) running ``handle(msg)`` for the requests
    ``submit`` puts in the backlog (from the reader; never blocks). A worker takes items
    until the backlog is empty, then waits; a submit wakes an idle worker (or starts one)
    only when none is waking already, and a worker taking an item while more wait wakes the
    next: a burst costs a wake-up or two, however long it is.

    The backlog holds at most ``max_msgs`` requests and ``max_bytes`` bytes of payload (a
    subscription's pending limits): past them ``submit`` drops the request and, once per
    episode, calls ``on_slow(msg, dropped)``; the episode ends when the backlog is under
    half of both limits (as a subscription's)."""

    def __init__(self, handle: Callable[[Any], Any], limit: int, name: str, link: _api.Link,
                 on_slow: Callable[[Msg, int], None]) -> None:
        self._handle = handle
        self._link = link
        self._limit = max(1, int(limit))
        self._name = name
        self._on_slow = on_slow
        # taken from C by ``with`` (no Python frame: it is on every request); re-entrant
        self._lock = threading.RLock()
        self._backlog: deque[Msg] = deque()
        self._bytes = 0  # the payload bytes in the backlog
        # the backlog's limits: a subscription's (nats.go's endpoints are subscriptions with
        # its defaults; ``Link.subscribe_direct`` has none, so the workers keep them)
        msgs, nbytes = link.pending_limits
        self.max_msgs = _limit(msgs)
        self.max_bytes = _limit(nbytes)
        self.dropped = 0  # requests dropped past the limits
        self._slow = False  # dropping (reported once until the backlog is under half the limits)
        self._idle: list[prims.Signal] = []  # the signals of idle workers
        self._workers = 0
        self._waking = 0  # woken or started, not yet taking work
        self._busy = 0  # items being handled
        self._closing = False
        self._quiet = prims.Signal()  # set while nothing is waiting or being handled
        self._quiet.set()
        # what runs handlers (worker threads / tasks, aio's adopted tasks): a stop() or
        # drain() called from a handler must not wait for that handler
        self._runners: set[object] = set()

    def submit(self, item: Msg) -> None:
        size = len(item.data)
        with self._lock:
            backlog = self._backlog
            if len(backlog) >= self.max_msgs or self._bytes + size > self.max_bytes:
                self.dropped += 1
                if self._slow:
                    return
                self._slow = True
                dropped = self.dropped
                wake = None
            else:
                backlog.append(item)
                self._bytes += size
                self._quiet.clear()
                wake = self._wake_locked()
                dropped = 0
        if dropped:
            self._on_slow(item, dropped)
        elif wake is not None:
            self._start(wake)

    def _wake_locked(self) -> prims.Signal | Literal[True] | None:
        """When an item waits, there is room for it and no worker is on its way: an idle
        worker's signal to set, or True to start a worker; else None."""
        if self._waking or not self._backlog or self._busy >= self._limit:
            return None
        if self._idle:
            self._waking += 1
            return self._idle.pop()
        if self._workers < self._limit and not self._closing:
            self._workers += 1
            self._waking += 1
            return True
        return None

    def _start(self, wake: prims.Signal | Literal[True]) -> None:
        if wake is True:
            prims.spawn(self._work, prims.Signal(), name=self._name)
        else:
            wake.set()

    async def _work(self, sig: prims.Signal) -> None:
        lock = self._lock
        backlog = self._backlog
        handle = self._handle
        link = self._link
        me = prims.current()
        with lock:
            self._waking -= 1
            self._runners.add(me)
        ended = False
        try:
            await self._work_on(sig, lock, backlog, handle, link)
            ended = True
        finally:
            wake = None
            with lock:
                self._runners.discard(me)
                if not ended:  # its task was cancelled: the pool goes on without it
                    self._workers -= 1
                    wake = self._wake_locked()
                    if wake is None and not self._busy and not backlog:
                        self._quiet.set()
            if wake is not None:
                self._start(wake)

    async def _work_on(self, sig: prims.Signal, lock: Any, backlog: deque[Any], handle: Callable[[Any], Any],
                       link: _api.Link) -> None:
        while True:
            wake = None
            with lock:
                if backlog and self._busy < self._limit:
                    item = backlog.popleft()
                    self._bytes -= len(item.data)
                    if self._slow and len(backlog) < self.max_msgs // 2 and self._bytes < self.max_bytes // 2:
                        self._slow = False
                    self._busy += 1
                    wake = self._wake_locked()  # more wait and there is room: the next worker
                elif self._closing and not backlog:
                    self._workers -= 1
                    if not self._busy:
                        self._quiet.set()
                    return
                else:
                    item = None
                    if not self._busy and not backlog:
                        self._quiet.set()
                    sig.clear()
                    self._idle.append(sig)
            if item is None:
                try:
                    await sig.wait()
                except BaseException:
                    with lock:
                        if sig in self._idle:
                            self._idle.remove(sig)
                        else:  # woken as it was cancelled (_work wakes another)
                            self._waking -= 1
                    raise
                with lock:
                    self._waking -= 1
                continue
            if wake is not None:
                self._start(wake)
            link.callback_thread(backlog)  # blocking: an answer with nothing else waiting leaves at once
            try:
                await handle(item)
            finally:
                with lock:
                    self._busy -= 1

    @property
    def free(self) -> bool:
        """Nothing waits and fewer than ``limit`` are being handled."""
        return not self._backlog and self._busy < self._limit

    # aio-only: begin
    def adopt(self, task: asyncio.Task[object]) -> None:
        """Count a request whose handler, started eagerly, goes on as ``task``."""
        self._busy += 1
        self._quiet.clear()
        self._runners.add(task)
        task.add_done_callback(self._adopted_done)

    def _adopted_done(self, task: asyncio.Task[object]) -> None:
        self._runners.discard(task)
        self._busy -= 1
        wake = self._wake_locked()
        if wake is not None:
            self._start(wake)
        elif not self._busy and not self._backlog:
            self._quiet.set()
    # aio-only: end

    def runs_caller(self) -> bool:
        """Whether the caller is one of these handlers."""
        return prims.current() in self._runners

    async def join(self, timeout: float | None) -> bool:
        """Wait until nothing waits or is being handled (but the handler calling this: a
        stop() or drain() from a handler cannot wait for itself); False on timeout."""
        if not self.runs_caller():
            return await self._quiet.wait(timeout)
        with self._lock:  # the caller's request stops counting while it waits for the others
            self._busy -= 1
            if not self._busy and not self._backlog:
                self._quiet.set()
        try:
            return await self._quiet.wait(timeout)
        finally:
            with self._lock:
                self._busy += 1
                self._quiet.clear()

    def close(self) -> None:
        """Let the workers end once the backlog is empty."""
        with self._lock:
            self._closing = True
            idle, self._idle = self._idle, []
            self._waking += len(idle)
        for sig in idle:
            sig.set()

    @property
    def pending(self) -> int:
        return len(self._backlog) + self._busy


class Endpoint:
    """An endpoint of a service: where it listens (``name``, ``subject``, ``queue_group``,
    ``metadata``) and its counters (``num_requests``, ``num_errors``, ``last_error``,
    ``processing_time`` and ``average_processing_time`` in seconds). It is what a
    ``stats_handler`` is given. A request is counted as its answer is sent (its time up to
    then), so whoever received the answer finds it in the stats."""

    def __init__(self, svc: Service, ep: core.EndpointCore, handler: Callable[[Request], object],
                 concurrency: int) -> None:
        self._svc = svc
        self._core = ep
        self._handler = handler
        self._nc = svc._nc
        self._error_cb = svc._error_cb
        self._workers = _Workers(self._handle, concurrency, f"jetwire-micro-{svc.name}-{ep.name}", svc._link,
                                 self._slow_consumer)
        self._lock = self._workers._lock
        self._sub: _api.DirectSub | None = None

    name = property(lambda self: self._core.name)
    subject = property(lambda self: self._core.subject)
    queue_group = property(lambda self: self._core.queue_group)
    metadata = property(lambda self: dict(self._core.metadata))
    num_requests = property(lambda self: self._core.num_requests)
    num_errors = property(lambda self: self._core.num_errors)
    last_error = property(lambda self: self._core.last_error)
    processing_time = property(lambda self: self._core.processing_ns / 1e9)
    average_processing_time = property(lambda self: self.stats().average_processing_time)

    def info(self) -> EndpointInfo:
        return self._core.info()

    def stats(self) -> EndpointStats:
        with self._lock:
            return self._core.stats()

    def _start(self) -> None:
        ep = self._core
        on_msg = self._on_msg  # aio-only
        # sync-only: on_msg = self._workers.submit
        self._sub = self._svc._link.subscribe_direct(ep.subject, on_msg, queue=ep.queue_group or None)

    # aio-only: begin
    def _on_msg(self, msg: Msg) -> None:
        """From the reader: start the handler at once when there is room (up to its first
        wait, like an eager task: a handler that only responds costs no task and its answer
        leaves with this read's), else queue the request for a worker."""
        workers = self._workers
        if workers._backlog or workers._busy >= workers._limit:
            workers.submit(msg)
            return
        task = prims.eager_start(self._handle(msg))
        if task is not None:
            workers.adopt(task)
    # aio-only: end

    def _slow_consumer(self, msg: Msg, dropped: int) -> None:
        """From the reader: requests are being dropped past the backlog's limits."""
        _slow_consumer(self._svc._link, self._core.subject, msg.sid, dropped)

    def _account(self, req: Request) -> tuple[int, str | None, str]:
        """Count ``req``: its time so far and, when it answered with one, its error. What
        ``_unaccount`` needs to take it back."""
        dt = _now_ns() - req._t0
        ep = self._core
        error = req._error
        with self._lock:
            before = ep.last_error
            ep.num_requests += 1
            ep.processing_ns += dt
            if error is not None:
                ep.num_errors += 1
                ep.last_error = error
        return dt, error, before

    def _unaccount(self, counted: tuple[int, str | None, str]) -> None:
        """Take back what ``_account`` counted (its answer could not be sent)."""
        dt, error, before = counted
        ep = self._core
        with self._lock:  # (a reset() in between may have zeroed the counters already)
            ep.num_requests = max(0, ep.num_requests - 1)
            ep.processing_ns = max(0, ep.processing_ns - dt)
            if error is not None:
                ep.num_errors = max(0, ep.num_errors - 1)
                if ep.last_error == error:
                    ep.last_error = before

    async def _handle(self, msg: Msg) -> None:
        """Run the handler for one request. It is counted when it answers (the time up to
        the answer; an error answer counts an error), or when the handler returns without
        answering; a handler that raises answers a 500 (or its ``ServiceError``)."""
        req = Request(msg, self._nc, self)
        try:
            r = self._handler(req)
            if r is not None and isawaitable(r):  # aio-only
                await r  # aio-only
        except Exception as exc:
            await self._failed(req, msg, exc)
            return
        # aio-only: begin
        except prims.CancelledError as exc:  # the handler's own (it waited on something cancelled)
            if prims.cancelling():  # this task's: it ends
                raise
            await self._failed(req, msg, exc)
            return
        # aio-only: end
        if not req._responded:
            req._responded = True
            self._account(req)

    async def _failed(self, req: Request, msg: Msg, exc: BaseException) -> None:
        """The handler raised ``exc``: answer 500 (or its ``ServiceError``) unless it had
        answered, count the error, tell ``error_cb``."""
        code, desc = core.exception_answer(exc)  # cleaned and bounded
        error = core.error_text(code, desc)
        if not req._responded:
            req._error = error
            if msg.reply:
                try:
                    req.respond_error(code, desc)  # counted there
                except Exception as err:  # e.g. the connection closed
                    self._svc._link.report_error(err)
            if not req._responded:
                req._responded = True
                self._account(req)
        else:  # it raised after answering: counted already, now its error too
            with self._lock:
                self._core.num_errors += 1
                self._core.last_error = error
        if self._error_cb is not None:
            try:
                await prims.call(self._error_cb, exc)
            except Exception as err:
                self._svc._link.report_error(err)

    def __repr__(self) -> str:
        return f"<Endpoint {self.name!r} subject={self.subject!r} queue_group={self.queue_group!r}>"


class _EndpointAdder:
    """``add_endpoint`` and ``add_group`` of a service or a group."""

    _svc: Service
    _prefix: str
    _queue_group: str | None

    async def add_endpoint(self, name: str, handler: Callable[[Request], object], subject: str | None = None,
                           queue_group: str | None = None, metadata: dict[str, str] | None = None) -> Endpoint:
        """Add an endpoint listening on ``<prefix>.<subject or name>``. ``queue_group``:
        None inherits the group's or service's (default ``"q"``); ``""`` means none (every
        instance gets every request)."""
        return await self._svc._add(self._prefix, name, handler, subject, queue_group, self._queue_group, metadata)

    def add_group(self, name: str, queue_group: str | None = None) -> Group:
        """A group of endpoints under ``<prefix>.<name>`` (its queue group: None inherits,
        ``""`` none)."""
        core.check_group_name(name)
        qg = core.check_queue_group(queue_group)
        return Group(self._svc, core.join_subject(self._prefix, name),
                     qg if qg is not None else core.resolve_queue_group(None, self._queue_group))


class Group(_EndpointAdder):
    """Endpoints under a common subject prefix (``add_endpoint``, nested ``add_group``)."""

    def __init__(self, svc: Service, prefix: str, queue_group: str | None) -> None:
        self._svc = svc
        self._prefix = prefix
        self._queue_group = queue_group

    @property
    def prefix(self) -> str:
        return self._prefix

    @property
    def queue_group(self) -> str | None:
        return self._queue_group

    def __repr__(self) -> str:
        return f"<Group {self._prefix!r} queue_group={self._queue_group!r}>"


class Service(_EndpointAdder):
    """A running service (made by :func:`add_service`): ``add_endpoint``, ``add_group``,
    ``info()``, ``stats()``, ``reset()``, ``stop()``, ``stopped``, ``id``."""

    def __init__(self, nc: Client, sc: core.ServiceCore, error_cb: Callable[..., object] | None,
                 done_cb: Callable[..., object] | None, concurrency: int) -> None:
        self._nc = nc
        self._link = nc.link
        self._core = sc
        self._svc = self
        self._prefix = ""
        self._queue_group = sc.queue_group
        self._error_cb = error_cb
        self._done_cb = done_cb
        self._concurrency = concurrency
        self._endpoints: list[Endpoint] = []
        self._verb_subs: list[_api.DirectSub] = []
        self._verbs = _Workers(self._answer, 1, f"jetwire-micro-{sc.name}", self._link, self._verbs_slow)
        self._stopped = False
        self._stopping = False
        self._stop_done = prims.Signal()  # set once a stop() has finished
        self._remove_close_cb: Callable[[], None] | None = None
        self._remove_drain_cb: Callable[[], None] | None = None
        self._remove_error_cb: Callable[[], None] | None = None

    # -- identity ------------------------------------------------------------------------
    @property
    def id(self) -> str:
        return self._core.id

    @property
    def name(self) -> str:
        return self._core.name

    @property
    def version(self) -> str:
        return self._core.version

    @property
    def description(self) -> str:
        return self._core.description

    @property
    def metadata(self) -> dict[str, str]:
        return dict(self._core.metadata)

    @property
    def endpoints(self) -> list[Endpoint]:
        return list(self._endpoints)

    @property
    def stopped(self) -> bool:
        """True once ``stop()`` ran (or the connection closed)."""
        return self._stopped

    # -- endpoints -----------------------------------------------------------------------
    async def _add(self, prefix: str, name: str, handler: Callable[[Request], object], subject: str | None,
                   queue_group: str | None, parent_qg: str | None,
                   metadata: dict[str, str] | None) -> Endpoint:
        if not callable(handler):
            raise InvalidServiceConfigError("an endpoint needs a callable handler")
        ep = self._core.new_endpoint(prefix, name, subject, queue_group, parent_qg, metadata)
        if self._stopped or self._stopping:
            raise NatsError("the service is stopped")
        endpoint = Endpoint(self, ep, handler, self._concurrency)
        # listed before it subscribes: the server's refusal (_on_conn_error, from the
        # reader) may come back before _start() returns
        self._endpoints.append(endpoint)
        self._core.endpoints.append((ep, endpoint))
        try:
            endpoint._start()
        except BaseException:
            self._endpoints.remove(endpoint)
            self._core.endpoints.remove((ep, endpoint))
            raise
        await self._nc.flush()  # the server has the subscription when this returns
        return endpoint

    # -- monitoring ----------------------------------------------------------------------
    async def _start(self) -> None:
        sc = self._core
        link = self._link
        submit = self._verbs.submit
        for verb in core.VERBS:
            for subject in core.control_subjects(verb, sc.name, sc.id):
                self._verb_subs.append(link.subscribe_direct(subject, submit))
        self._remove_close_cb = link.on_close(self._on_close)
        # the connection's drain stops the service first: the requests it took are answered
        self._remove_drain_cb = link.on_drain(self._stop)
        self._remove_error_cb = link.on_error(self._on_conn_error)
        await self._nc.flush()

    def _verbs_slow(self, msg: Msg, dropped: int) -> None:
        """From the reader: discovery requests are being dropped (a flood of them)."""
        _slow_consumer(self._link, msg.subject, msg.sid, dropped)

    async def _answer(self, msg: Msg) -> None:
        """Answer one ``$SRV.<verb>[.name[.id]]`` request; a document that cannot be made or
        sent (over max_payload: a huge ``data``) is answered with a 500 service error."""
        reply = msg.reply
        if not reply:
            return
        verb = msg.subject.split(".", 2)[1]  # $SRV.<verb>...
        try:
            data = self._core.answer(verb, self.stats() if verb == "STATS" else None)
        except Exception as exc:
            self._link.report_error(exc)
            await self._answer_error(reply, exc)
            return
        try:
            await self._nc.publish(reply, data)
        except Exception as exc:
            self._link.report_error(exc)
            await self._answer_error(reply, exc)

    async def _answer_error(self, reply: str, exc: BaseException) -> None:
        code, desc = core.exception_answer(exc)
        try:
            await self._nc.publish(reply, b"", headers=core.error_headers(code, desc))
        except Exception as err:
            self._link.report_error(err)

    def _endpoint_locks(self) -> _Locks:
        return _Locks([e._lock for e in self._endpoints])

    def info(self) -> ServiceInfo:
        """The service and its endpoints (what ``$SRV.INFO`` answers)."""
        return self._core.info()

    def stats(self) -> ServiceStats:
        """Every endpoint's counters (what ``$SRV.STATS`` answers). The counters are read
        under the endpoints' locks, ``stats_handler`` is called after (a slow one delays
        no answer); one that raises or returns something that is not JSON gives that
        endpoint ``data`` None, and ``error_cb`` of the connection hears why."""
        with self._endpoint_locks():
            doc = self._core.counters()
        return self._core.add_data(doc, self._link.report_error)

    def ping(self) -> ServicePing:
        return self._core.ping()

    async def reset(self) -> None:
        """Zero every endpoint's counters; ``started`` becomes now."""
        with self._endpoint_locks():
            self._core.reset()

    # -- stopping ------------------------------------------------------------------------
    async def stop(self, timeout: float | None = None) -> None:
        """Drain the endpoints (no new requests are taken, those already received are
        answered), stop answering discovery, then call ``done_cb(service)``. It waits at
        most ``timeout`` seconds (default: the connection's ``drain_timeout``) for the
        requests already received."""
        await self._stop(timeout)

    async def _stop(self, timeout: float | None) -> bool:
        """``stop()``; whether every handler that was running finished within ``timeout``.
        A second caller waits for the first one's stop (up to ``timeout``), unless it is a
        handler of this service, which that stop waits for."""
        if self._stopped or self._stopping:
            if self._stopped or any(e._workers.runs_caller() for e in self._endpoints):
                return True
            return await self._stop_done.wait(self._link.drain_timeout if timeout is None else timeout)
        wait_limit(timeout)  # a NaN raises before anything stops
        self._stopping = True
        # one deadline for every step: each endpoint's drain and wait gets what is left
        # (by default the connection's drain_timeout)
        deadline = prims.monotonic() + (self._link.drain_timeout if timeout is None else timeout)

        def left() -> float:
            return max(0.0, deadline - prims.monotonic())

        first: BaseException | None = None
        finished = True
        try:
            try:
                for e in self._endpoints:
                    if e._sub is not None and e._sub.is_valid and not self._nc.is_closed:
                        try:
                            await e._sub.drain(max(0.001, left()))
                        except Exception as exc:
                            first = first or exc
                            self._link.unsubscribe(e._sub)
                for e in self._endpoints:
                    finished = await e._workers.join(left()) and finished
            finally:  # also when cancelled: nothing is left answering
                for e in self._endpoints:
                    if e._sub is not None and e._sub.is_valid:
                        self._link.unsubscribe(e._sub)
                    e._workers.close()
                for sub in self._verb_subs:
                    self._link.unsubscribe(sub)
                self._verbs.close()
                self._stopped = True
                for remove in (self._remove_close_cb, self._remove_drain_cb, self._remove_error_cb):
                    if remove is not None:
                        remove()
            if not self._nc.is_closed:
                try:  # the server has every UNSUB when stop() returns (within the deadline)
                    await self._nc.flush(max(0.001, left()))
                except NatsError:
                    pass
        except BaseException:  # cancelled: done_cb still runs, once, and later stop() calls return
            self._link.spawn(self._done)
            self._stop_done.set()
            raise
        try:
            await self._done()
        finally:
            self._stop_done.set()
        if first is not None and not isinstance(first, NatsError):
            raise first
        return finished

    def _on_conn_error(self, exc: BaseException) -> None:
        """An error the connection reported (never blocks): the server refusing the
        subscription of an endpoint (or of the discovery subjects) stops the service, as
        nats.go's micro does: the endpoint counts it as its error, ``error_cb`` hears it,
        then ``done_cb``."""
        if self._stopped or self._stopping or not isinstance(exc, PermissionViolationError):
            return
        ep = next((e for e in self._endpoints if e.subject == exc.subject), None)
        if ep is None and not any(sub.subject == exc.subject for sub in self._verb_subs):
            return
        if ep is not None:
            with ep._lock:
                ep._core.num_errors += 1
                ep._core.last_error = core.clip(str(exc))
        self._link.spawn(self._refused, exc)

    async def _refused(self, exc: BaseException) -> None:
        await self._stop(None)
        if self._error_cb is not None:
            try:
                await prims.call(self._error_cb, exc)
            except Exception as err:
                self._link.report_error(err)

    def _on_close(self, exc: BaseException) -> None:  # the connection closed for good
        if self._stopped:
            return
        self._stopped = True
        for remove in (self._remove_drain_cb, self._remove_error_cb):
            if remove is not None:
                remove()
        for e in self._endpoints:
            e._workers.close()
        self._verbs.close()
        if self._done_cb is not None:
            self._link.spawn(self._done)

    async def _done(self) -> None:
        if self._done_cb is not None:
            try:
                await prims.call(self._done_cb, self)
            except Exception as exc:
                self._link.report_error(exc)

    async def __aenter__(self) -> Service:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def __repr__(self) -> str:
        return f"<Service {self.name!r} {self.version} id={self.id}{' stopped' if self._stopped else ''}>"


class _Locks:
    """Hold several locks at once (the blocking flavour's endpoint counters)."""

    __slots__ = ("_locks",)

    def __init__(self, locks: list[Any]) -> None:
        self._locks = locks

    def __enter__(self) -> None:
        for lk in self._locks:
            lk.acquire()

    def __exit__(self, *exc: object) -> None:
        for lk in reversed(self._locks):
            lk.release()


async def add_service(nc: Client, name: str, version: str, description: str | None = None,
                      metadata: dict[str, str] | None = None, queue_group: str | None = DEFAULT_QUEUE_GROUP,
                      stats_handler: Callable[[Endpoint], object] | None = None,
                      error_cb: Callable[[BaseException], object] | None = None,  # aio-only
                      # sync-only: error_cb: Callable[[Exception], object] | None = None,
                      done_cb: Callable[[Service], object] | None = None,
                      concurrency: int | None = None) -> Service:
    """Start a service on connection ``nc``: it answers ``$SRV.PING|INFO|STATS`` (for all
    services, its name, its id) at once; add endpoints with ``add_endpoint``/``add_group``.

    ``name``: ``[A-Za-z0-9_-]+``; ``version``: semantic versioning 2.0 (both checked before
    anything is subscribed: ``InvalidServiceNameError`` / ``InvalidServiceVersionError``,
    ``ValueError``s). ``queue_group``: the endpoints' default (``"q"``; ``""``: no queue
    group, every instance gets every request). ``stats_handler(endpoint)`` (a plain function,
    also in aio: ``InvalidServiceConfigError`` for a coroutine function) gives each
    endpoint's ``data`` in ``$SRV.STATS`` (None when it raises or returns something that is
    not JSON; the connection's ``error_cb`` hears why). ``error_cb(exc)`` is told of every exception a handler raises (the
    request was answered with a 500 error; in the asyncio flavour also a handler's own
    ``asyncio.CancelledError``) and of a subscription the server refused. ``done_cb(service)`` is called once the
    service stopped. ``concurrency``: requests of one endpoint handled at once (in the
    asyncio flavour coroutine handlers in progress, default 256; in the blocking flavour
    the size of the endpoint's thread pool, default 4).

    In the asyncio flavour a handler starts at once, on the connection's reader, and runs
    there up to its first wait (as Python 3.12's eager tasks do); from then on it is a
    task. Before that first wait ``asyncio.current_task()`` is not its own: a handler that
    opens ``asyncio.timeout()`` first should yield once before (``asyncio.sleep(0)``).
    ``stop()`` waits for the requests in progress: a handler must not wait for it (it
    would wait for itself; call it from another task or thread instead)."""
    sc = core.ServiceCore(name, version, next_nuid(), description, metadata, queue_group, stats_handler)
    if concurrency is not None and (not isinstance(concurrency, int) or concurrency < 1):
        raise InvalidServiceConfigError("concurrency must be a positive int")
    svc = Service(nc, sc, error_cb, done_cb, concurrency or DEFAULT_CONCURRENCY)
    await svc._start()
    return svc


# ============================================================================ discovery client


async def _discover(nc: Client, verb: str, name: str | None, id: str | None,
                    timeout: float, max_results: int | None) -> list[Any]:
    subject = core.control_subject(verb, name, id)
    if max_results is not None and max_results < 1:
        raise ValueError("max_results must be >= 1")
    link = nc.link
    inbox = link.new_inbox()
    got: list[bytes] = []
    lock = prims.write_lock()
    done = prims.Signal()

    def on_msg(msg: Msg) -> None:  # from the reader
        h = msg.headers
        if h is not None and h.status == "503" and not msg.data:  # no responders: nobody will answer
            done.set()
            return
        with lock:
            got.append(msg.data)
            n = len(got)
        if max_results is not None and n >= max_results:
            done.set()

    closed: list[BaseException] = []

    def on_close(exc: BaseException) -> None:  # the connection closed: nothing more comes
        closed.append(exc)
        done.set()

    if link.is_closed:
        raise ConnectionClosedError("connection closed")
    sub = link.subscribe_direct(inbox, on_msg)
    remove = link.on_close(on_close)
    try:
        link.publish_request(subject, inbox, b"")  # (never waits for room: timeout bounds it all)
        await done.wait(timeout)
    finally:
        remove()
        link.unsubscribe(sub)
    if closed:
        raise closed[0]
    with lock:
        answers = list(got if max_results is None else got[:max_results])
    out = []
    for data in answers:
        try:
            out.append(core.parse_doc(verb, data))
        except (ValueError, TypeError) as exc:
            link.report_error(NatsError(f"unreadable answer to {subject}: {exc}"))
    return out


async def ping(nc: Client, name: str | None = None, id: str | None = None,
               timeout: float = 1.0, max_results: int | None = None) -> list[ServicePing]:
    """Every service (of ``name``; the instance ``id``) answering ``$SRV.PING`` within
    ``timeout`` seconds (or the first ``max_results``)."""
    return await _discover(nc, "PING", name, id, timeout, max_results)


async def info(nc: Client, name: str | None = None, id: str | None = None,
               timeout: float = 1.0, max_results: int | None = None) -> list[ServiceInfo]:
    """``ServiceInfo`` of every service answering ``$SRV.INFO`` within ``timeout``."""
    return await _discover(nc, "INFO", name, id, timeout, max_results)


async def stats(nc: Client, name: str | None = None, id: str | None = None,
                timeout: float = 1.0, max_results: int | None = None) -> list[ServiceStats]:
    """``ServiceStats`` of every service answering ``$SRV.STATS`` within ``timeout``."""
    return await _discover(nc, "STATS", name, id, timeout, max_results)


async def request(nc: Client, subject: str, data: bytes | bytearray | memoryview = b"", headers: HeadersInit | None = None,
                  timeout: float = 1.0) -> Msg:
    """Send a request to a service endpoint: the reply ``Msg``, or ``ServiceError(code,
    description)`` when the service answered with an error."""
    msg = await nc.request(subject, data, timeout=timeout, headers=headers)
    err = core.error_of(msg)
    if err is not None:
        raise err
    return msg

