"""Blocking byte mover: a socket, a reader thread feeding the core, sendall for writes."""
from __future__ import annotations

import select
import socket
import ssl
import struct
import threading
import time
from typing import Any, Callable, Dict, Optional

from .. import _impl
from ..connection.core import tls_state
from ..connection.hold import WriteHold
from ..errors import ProtocolError
from ..errors import TimeoutError as NatsTimeoutError

_INFO_LIMIT = 64 * 1024
_READ_SIZE = 256 * 1024


def handshake_timeout(host: str, port: int, timeout: float) -> str:
    """The text of the error when dialling, TLS and the server's INFO took longer than
    ``connect_timeout``."""
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return f"timed out after {timeout:g}s connecting to {where} (connect_timeout)"


def _time_left(deadline: float, host: str, port: int, timeout: float) -> float:
    """Seconds left until ``deadline``; the handshake's timeout error once it has come."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise NatsTimeoutError(handshake_timeout(host, port, timeout))
    return left


def _wrap_tls(tls: ssl.SSLContext, sock: socket.socket, server_hostname: str, deadline: float,
              host: str, port: int, timeout: float) -> ssl.SSLSocket:
    """``sock`` with its TLS handshake done by ``deadline`` (CPython's handshake keeps one
    deadline of the socket's timeout for all its reads and writes)."""
    sock.settimeout(_time_left(deadline, host, port, timeout))
    try:
        return tls.wrap_socket(sock, server_hostname=server_hostname)
    except TimeoutError:
        raise NatsTimeoutError(handshake_timeout(host, port, timeout)) from None


class Transport:
    """One TCP (optionally TLS) connection to a server. ``socket_factory(host, port,
    timeout)`` dials instead of the default: it returns a connected socket (e.g. through
    a proxy)."""

    def __init__(self, socket_factory: Optional[Callable[..., Any]] = None) -> None:
        self._socket_factory = socket_factory
        self.write_timeout: Optional[float] = None  # set by the Writer: a write deadline
        self._sock: Optional[socket.socket] = None
        self._send_lock = threading.Lock()
        self._reader: Optional[threading.Thread] = None
        self._tls = False
        # An OpenSSL connection must not be read and written by two threads at once:
        # with TLS the socket is non-blocking and every SSL call holds this lock.
        self._ssl_lock = threading.Lock()
        self.closed = False
        # poll_io: seconds the reader polls the socket (without the GIL) before sleeping in
        # recv, while data keeps coming within that time (0: never)
        self.read_poll = 0.0

    def open(self, host: str, port: int, timeout: float, tls: Optional[ssl.SSLContext],
             tls_first: bool, tls_hostname: Optional[str], need_tls: Callable[[bytes], bool]) -> bytes:
        """Connect and return the server's first line (INFO ...\\r\\n) plus anything after it.
        Dialling, TLS and the INFO line share one deadline, ``timeout`` seconds from now (as
        asyncio's ``wait_for``): a server that sends its INFO a byte at a time cannot hold
        the handshake longer."""
        deadline = time.monotonic() + timeout
        sock = self._dial(host, port, timeout, tls if tls_first else None, tls_hostname, deadline)
        self._sock = sock  # close() from another thread ends a handshake that hangs
        try:
            if self.closed:
                raise ConnectionError("closed during the handshake")
            head = bytearray()
            while b"\r\n" not in head:
                sock.settimeout(_time_left(deadline, host, port, timeout))
                try:
                    chunk = sock.recv(4096)
                except TimeoutError:  # socket.timeout: the deadline came
                    raise NatsTimeoutError(handshake_timeout(host, port, timeout)) from None
                if not chunk:
                    raise ConnectionError("connection closed by server")
                head += chunk
                if len(head) > _INFO_LIMIT:
                    raise ProtocolError(f"no INFO line from server: {bytes(head[:64])!r}")
            if not tls_first and need_tls(bytes(head)):
                if tls is None:  # the server requires TLS: the system's trust store (as nats.go)
                    tls = ssl.create_default_context()
                sock = _wrap_tls(tls, sock, tls_hostname or host, deadline, host, port, timeout)
                head = head[: head.index(b"\r\n") + 2]
            if self.closed:
                raise ConnectionError("closed during the handshake")
            sock.settimeout(timeout)
            self._sock = sock
            self._tls = isinstance(sock, ssl.SSLSocket)
            self._timeout = timeout
            return bytes(head)
        except BaseException:
            self.closed = True
            try:
                sock.close()
            except OSError:
                pass
            raise

    def _dial(self, host: str, port: int, timeout: float, tls: Optional[ssl.SSLContext],
              tls_hostname: Optional[str], deadline: Optional[float] = None) -> socket.socket:
        """A connected socket (TLS at once when ``tls`` is given) with ``timeout`` set;
        the TLS handshake ends by ``deadline`` (default: ``timeout`` from now)."""
        if deadline is None:
            deadline = time.monotonic() + timeout
        if self._socket_factory is not None:
            sock = self._socket_factory(host, port, timeout)
        else:
            sock = socket.create_connection((host, port), timeout=timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.settimeout(timeout)
            if tls is not None:
                sock = _wrap_tls(tls, sock, tls_hostname or host, deadline, host, port, timeout)
        except BaseException:
            try:
                sock.close()
            except OSError:
                pass
            raise
        return sock

    def start(self, on_data: Callable[[Any], None], on_lost: Callable[[Optional[BaseException]], None],
              rest: bytes) -> None:
        sock = self._sock
        assert sock is not None
        if self._tls:
            sock.setblocking(False)
            loop = self._read_loop_tls
        else:
            sock.settimeout(None)
            loop = self._read_loop
        if rest:
            on_data(rest)
        self._reader = threading.Thread(target=loop, args=(sock, on_data, on_lost),
                                        name="jetwire-reader", daemon=True)
        self._reader.start()

    def _read_loop(self, sock: socket.socket, on_data: Callable[[Any], None],
                   on_lost: Callable[[Optional[BaseException]], None]) -> None:
        err: Optional[BaseException] = None
        buf = bytearray(_READ_SIZE)  # one buffer for every read: no allocation per recv
        view = memoryview(buf)
        poll = self.read_poll
        # a poll reads the socket without the GIL for a while: it reads a duplicate of it,
        # whose descriptor no other socket can be given while this thread may still read it
        # after close() (close shuts the connection down first: the duplicate reads its end)
        try:
            rsock = sock.dup() if poll else sock
        except OSError as exc:  # closed before this thread began
            self._lost(sock, on_lost, exc)
            return
        recv_into = rsock.recv_into
        recv_poll = _impl.recv_spin
        idle = _impl.reader_idle  # (a waiter spinning for its reply lets this thread route first)
        polling = poll > 0
        try:
            while not self.closed:
                if not poll:
                    n = recv_into(buf)
                else:
                    # data came soon after the last read: poll for the next (no sleep, no
                    # wake-up of an idle core); when nothing comes in time, or the
                    # connection was quiet, sleep in recv, and poll again once data comes
                    # within the poll time
                    n = recv_poll(rsock, buf, poll, True) if polling else -1
                    if n < 0:
                        idle()
                        t0 = _mono()
                        n = recv_into(buf)
                        polling = _mono() - t0 < poll
                if not n:
                    break
                on_data(view[:n])
        except (OSError, ValueError) as exc:
            err = exc
        except BaseException as exc:  # ProtocolError from the core, or anything unexpected
            err = exc
        finally:
            if rsock is not sock:
                _impl.reader_idle()
                rsock.close()
        self._lost(sock, on_lost, err)

    def _read_loop_tls(self, sock: ssl.SSLSocket, on_data: Callable[[Any], None],
                       on_lost: Callable[[Optional[BaseException]], None]) -> None:
        """Like ``_read_loop`` for TLS: wait for readability outside the lock, read inside it."""
        err: Optional[BaseException] = None
        buf = bytearray(_READ_SIZE)
        view = memoryview(buf)
        lock = self._ssl_lock
        try:
            while not self.closed:
                with lock:
                    try:
                        n = sock.recv_into(buf)
                    except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
                        n = -1
                if n == 0:
                    break
                if n > 0:
                    on_data(view[:n])
                    continue
                select.select([sock], [], [], 1.0)
        except (OSError, ValueError) as exc:
            err = exc
        except BaseException as exc:
            err = exc
        self._lost(sock, on_lost, err)

    def _lost(self, sock: socket.socket, on_lost: Callable[[Optional[BaseException]], None],
              err: Optional[BaseException]) -> None:
        if not self.closed:
            self.closed = True
            try:
                sock.close()
            except OSError:
                pass
            on_lost(err)

    def set_write_timeout(self, seconds: Optional[float]) -> None:
        """A write that cannot hand its bytes to the kernel for ``seconds`` fails with
        ``TimeoutError`` (the server reads nothing: the connection is stuck)."""
        self.write_timeout = seconds
        sock = self._sock
        if sock is not None and not self._tls and seconds:
            _send_timeout(sock, seconds)

    def write(self, data: Any, timeout: Optional[float] = None) -> None:
        """Send all of ``data``; ``TimeoutError`` when the kernel takes none of it for
        ``write_timeout`` seconds, or for ``timeout`` when that is shorter (a caller
        with less time left: one that waited for another writer, close, drain)."""
        sock = self._sock
        if sock is None or self.closed:
            raise ConnectionError("not connected")
        limit = self.write_timeout
        short = timeout is not None and (not limit or timeout < limit)
        if short:
            limit = max(timeout, 0.001)  # type: ignore[type-var]
        with self._send_lock:
            if not self._tls:
                if short:
                    _send_timeout(sock, limit)  # type: ignore[arg-type]
                try:
                    sock.sendall(data)
                except BlockingIOError as exc:  # SO_SNDTIMEO ran out
                    raise NatsTimeoutError(f"write stalled for {limit}s") from exc
                finally:
                    if short:
                        try:
                            _send_timeout(sock, self.write_timeout or 0.0)
                        except OSError:  # closed meanwhile
                            pass
                return
            view = memoryview(data).cast("B")
            lock = self._ssl_lock
            deadline = None if not limit else time.monotonic() + limit
            while view:
                if self.closed:
                    raise ConnectionError("not connected")
                with lock:
                    try:
                        n = sock.send(view)
                    except (ssl.SSLWantWriteError, ssl.SSLWantReadError, BlockingIOError):
                        n = 0
                if n:
                    view = view[n:]
                    if deadline is not None:
                        deadline = time.monotonic() + limit  # type: ignore[operator]
                else:
                    now = time.monotonic()
                    if deadline is not None and now >= deadline:
                        raise NatsTimeoutError(f"write stalled for {limit}s")
                    select.select([], [sock], [], 1.0 if deadline is None else min(1.0, deadline - now))

    def drain(self) -> None:
        return None

    write_paused = False

    @property
    def tls_info(self) -> Optional[Dict[str, Any]]:
        """The TLS session (``connection.core.tls_state``), None without TLS."""
        sock = self._sock
        if not self._tls or sock is None or self.closed:
            return None
        with self._ssl_lock:  # one thread at a time in the OpenSSL connection
            return tls_state(sock)  # type: ignore[arg-type]  # an SSLSocket once TLS is on

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        sock = self._sock
        if sock is not None:
            try:
                if self._tls:
                    with self._ssl_lock:
                        sock.shutdown(socket.SHUT_RDWR)
                else:
                    sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                sock.close()
            except OSError:
                pass

    abort = close


def _send_timeout(sock: socket.socket, seconds: float) -> None:
    """SO_SNDTIMEO: a send() that hands nothing to the kernel for ``seconds`` fails (0: never)."""
    sec = int(seconds)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", sec, int((seconds - sec) * 1e6)))


FLUSH_THRESHOLD = 64 * 1024
# a publish finding the connection quiet this long (seconds since the last write) is
# sent by the publishing thread itself: no flusher wake-up for a lone message
QUIET = 20e-6
# and publishes within this long after such a one are sent at once too: a publisher that
# wakes from a sleep with two or three messages due sends them without a flusher wake-up
# (a handoff to another thread costs more than the write); a stream goes to the flusher
BURST = 30e-6
_clock = time.perf_counter
_current_thread = threading.current_thread


class _Local(threading.local):
    idle: Any = None  # see Writer.callback_thread (or _DEFER: see Writer.deferring_thread)


_DEFER = ("defer",)  # _Local.idle of a thread that never writes (truthy: not an idle callback thread)
_mono = time.monotonic


class Spinner:
    """The asyncio flavour's ``busy_poll`` (its loop polls while a reply is due). Here the
    reader thread wakes for a reply by itself: nothing polls, every hook is a no-op."""

    __slots__ = ()

    def __init__(self, budget: float, outstanding: Any, pongs: Any = (), linger: float = 0.0) -> None:
        pass

    def arm(self) -> None:
        pass

    def replied(self) -> None:
        pass


class Writer(WriteHold):
    """Moves the core's write buffer (``core.outbox``) to the socket from a flusher thread
    (or inline when large); ``hold`` (``WriteHold``) keeps a fetch's acks together.

    It wires the outbox's fast path: ``on_first`` wakes the flusher thread (or, when
    nothing was written for ``QUIET`` seconds, sends at once from the publishing thread:
    a lone message costs no thread handoff, a stream of them is batched by the flusher),
    ``on_full`` flushes inline at ``FLUSH_THRESHOLD`` bytes. ``lock`` guards Python-level appends to
    ``core.wbuf`` and every ``outbox.take()``; the pure outbox's ``publish`` takes it too,
    the compiled one needs no lock (each of its operations is atomic under the GIL).
    It is never held across a socket call; ``_send_lock`` is (it keeps writes in order).

    Write deadline (``write_timeout``, the client's ``flush_timeout``): a thread that
    needs to write waits for the thread writing at most that long, and its own write gets
    what is left of it; a write that hands nothing to the kernel for that long, or a wait
    that runs out, calls ``on_stuck`` (the client drops the connection, which wakes every
    thread blocked on the socket). A write that keeps making progress (a slow reader, the
    kernel's buffers filling) is not stuck: a ``publish`` waits at most ``write_timeout``
    after the kernel last took a byte.
    The scheduler's timer thread never writes or waits (``deferring_thread``).
    """

    def __init__(self, core: Any, write_timeout: Optional[float] = None,
                 on_stuck: Optional[Callable[[BaseException], None]] = None) -> None:
        self.write_timeout = write_timeout  # a write stuck this long fails the connection
        self.on_stuck = on_stuck
        self.core = core
        self.outbox = outbox = core.outbox
        self.tr: Optional[Transport] = None
        self.lock = _impl.WriteLock()  # guards every append to the outbox's buffer and outbox.take()
        self._send_lock = threading.Lock()  # keeps buffers in order on the wire
        self._ev = threading.Event()
        self._local = _Local()
        self._closed = False
        # when flush_now last wrote (perf_counter; set under _send_lock, read without it
        # by kick: a stale value only picks the other of two correct ways to send)
        self._last_write = 0.0
        self._burst_t0 = 0.0  # when a publish last found the connection quiet (see kick)
        outbox.threshold = FLUSH_THRESHOLD
        outbox.on_first = self.kick
        outbox.on_full = self.flush_now
        outbox.lock = self.lock
        self.init_hold()
        self._thread = threading.Thread(target=self._run, name="jetwire-flusher", daemon=True)
        self._thread.start()

    def set_transport(self, tr: Optional[Transport]) -> None:
        if tr is not None and self.write_timeout:
            tr.set_write_timeout(self.write_timeout)
        self.tr = tr

    def kick(self) -> None:
        tr = self.tr
        if tr is None:
            return
        if len(self.outbox.buf) >= FLUSH_THRESHOLD:
            self.flush_now()
        elif not self._ev.is_set():
            local = self._local
            idle = local.idle
            if idle is not None:
                if idle is _DEFER:  # the timer thread: the flusher writes
                    self._ev.set()
                    return
                if not idle:
                    # a callback thread whose subscription has nothing more queued (a
                    # responder, typically): send now rather than wake the flusher thread.
                    # Once per wake-up of that thread: more publishes from the same
                    # callbacks go through the flusher again.
                    local.idle = None
                    self.send_soon()
                    return
            now = _clock()
            quiet = now - self._last_write > QUIET
            if (quiet or now - self._burst_t0 < BURST) and tr._reader is not _current_thread():
                # a quiet connection, or a few publishes right after one that found it
                # quiet (a paced publisher catching up after a sleep): send now, from this
                # thread (never from the reader, which must not wait on a write while the
                # server may be waiting on it)
                if quiet:
                    self._burst_t0 = now
                self.send_soon()
                return
            self._ev.set()

    def callback_thread(self, pending: Any) -> None:
        """Called by a subscription's callback thread before each round of deliveries:
        its first publish while ``pending`` (the subscription's queue) is empty is sent
        at once from that thread."""
        self._local.idle = pending

    def deferring_thread(self) -> None:
        """The calling thread (the scheduler's timer thread) never writes to the socket or
        waits for a writer: what it queues is left to the flusher thread, so timers (the
        pings among them) stay on time while a write is stuck."""
        self._local.idle = _DEFER

    def send_later(self) -> None:
        """Leave what is queued to the flusher thread (never writes on the caller's)."""
        if self.tr is not None:
            self._ev.set()

    def flush_now(self, timeout: Optional[float] = None) -> None:
        """Send what is queued now, waiting for a thread that is writing. Bounded by the
        write deadline, or by ``timeout`` (close, drain): a wait that runs out the write
        deadline calls ``on_stuck``; a shorter ``timeout`` running out leaves the bytes
        queued."""
        if self._local.idle is _DEFER:
            self._ev.set()
            return
        lock = self._send_lock
        left: Optional[float] = timeout
        if not lock.acquire(False):
            limit = self.write_timeout if timeout is None else timeout
            if not limit or limit < 0:
                lock.acquire()
            else:
                t0 = _mono()
                if not lock.acquire(True, limit):
                    if self.write_timeout and limit >= self.write_timeout and self.on_stuck is not None:
                        self.on_stuck(NatsTimeoutError(f"write stalled for {limit}s: the server reads nothing"))
                    return
                waited = _mono() - t0
                if timeout is not None or waited > 0.001:  # less time left than a deadline
                    left = limit - waited
        try:
            self._write_locked(left)
        finally:
            lock.release()
        self.send_soon()  # what others queued meanwhile and left to this thread

    def send_soon(self) -> None:
        """Send what is queued now, unless another thread is writing: then leave it to
        that thread rather than wait for it (16 requesters on one connection: a fifth
        fewer context switches). Every writer looks at the buffer again after it lets go
        of the socket, so nothing left to it stays behind. Not for back-pressure: a full
        buffer waits in ``flush_now``."""
        lock = self._send_lock
        outbox = self.outbox
        while outbox.buf and lock.acquire(False):
            try:
                if not self._write_locked():
                    return  # no socket (reconnecting): the bytes wait for the next one
            finally:
                lock.release()

    def _write_locked(self, timeout: Optional[float] = None) -> bool:
        """Write what is queued (the caller holds ``_send_lock``), within ``timeout`` when
        given; False when there is no socket to write to."""
        tr = self.tr
        if tr is None or tr.closed:
            return False
        with self.lock:
            buf = self.outbox.take()
        if not buf:
            return True
        self._last_write = _clock()  # a write under way: not quiet
        try:
            if timeout is None:
                tr.write(buf)
            else:
                tr.write(buf, timeout)
            self._last_write = _clock()
        except NatsTimeoutError as exc:  # stuck: fail the connection (it reconnects)
            if self.on_stuck is not None:
                self.on_stuck(exc)
        except (OSError, ConnectionError, ValueError):
            pass  # the reader thread sees the loss and reconnects
        return True

    def _run(self) -> None:
        ev = self._ev
        while True:
            ev.wait()
            ev.clear()
            if self._closed:
                return
            self.flush_now()

    congested = False

    def drain(self, timeout: Optional[float] = None) -> None:
        return None

    def flushed(self, timeout: float) -> bool:
        """Whether what was written reached the kernel (writes block until it has: True)."""
        return True

    def after_publish(self) -> None:
        """What ``publish`` returns once its message is queued (the blocking flavour's
        writes block, so there is nothing to wait for)."""
        return None

    def close(self) -> None:
        self.release()
        self.tr = None
        self._closed = True
        self._ev.set()
