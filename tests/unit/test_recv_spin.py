"""``recv_spin`` (the blocking reader's poll, ``poll_io``), compiled and pure, on a socket
pair: what it reads, how it says nothing came, the peer's close and a closed socket."""
from __future__ import annotations

import socket
import threading
import time
from types import ModuleType

import pytest

from jetwire import _impl

IMPLS = sorted(_impl.implementations().items())

@pytest.fixture(params=[m for _, m in IMPLS], ids=[n for n, _ in IMPLS])
def impl(request: pytest.FixtureRequest) -> ModuleType:
    return request.param  # type: ignore[no-any-return]

def test_reads_what_is_there(impl: ModuleType) -> None:
    a, b = socket.socketpair()
    with a, b:
        buf = bytearray(16)
        b.sendall(b"hello")
        assert impl.recv_spin(a, buf, 1.0) == 5
        assert bytes(buf[:5]) == b"hello"
        b.sendall(b"x" * 40)  # more than the buffer: the rest waits for the next read
        assert impl.recv_spin(a, buf, 1.0) == 16
        assert impl.recv_spin(a, buf, 1.0) == 16
        assert impl.recv_spin(a, buf, 1.0) == 8

def test_nothing_within_the_poll_time_is_minus_one(impl: ModuleType) -> None:
    a, b = socket.socketpair()
    with a, b:
        buf = bytearray(16)
        t0 = time.monotonic()
        assert impl.recv_spin(a, buf, 0.02) == -1
        assert time.monotonic() - t0 >= 0.019
        assert a.gettimeout() is None  # the socket stays in blocking mode for recv_into

def test_data_arriving_during_the_poll_is_read(impl: ModuleType) -> None:
    a, b = socket.socketpair()
    with a, b:
        buf = bytearray(16)
        timer = threading.Timer(0.05, b.sendall, (b"late",))
        timer.start()
        try:
            assert impl.recv_spin(a, buf, 5.0) == 4
        finally:
            timer.join()
        assert bytes(buf[:4]) == b"late"

def test_the_peer_closing_reads_zero(impl: ModuleType) -> None:
    a, b = socket.socketpair()
    with a:
        b.close()
        assert impl.recv_spin(a, bytearray(16), 1.0) == 0

def test_a_shut_down_socket_reads_zero(impl: ModuleType) -> None:
    a, b = socket.socketpair()
    with a, b:
        a.shutdown(socket.SHUT_RDWR)
        assert impl.recv_spin(a, bytearray(16), 1.0) == 0

def test_a_closed_socket_raises_oserror(impl: ModuleType) -> None:
    a, b = socket.socketpair()
    with b:
        a.close()
        with pytest.raises(OSError):
            impl.recv_spin(a, bytearray(16), 0.01)


def test_spin_wait_takes_a_lock_freed_within_the_time(impl: ModuleType) -> None:
    lock = impl.Lock()
    lock.acquire()
    timer = threading.Timer(0.05, lock.release)
    timer.start()
    try:
        assert impl.spin_wait(lock, 5.0, 0.001) is True
    finally:
        timer.join()
    assert lock.locked()  # taken by the wait
    lock.release()


def test_spin_wait_gives_up_after_the_time(impl: ModuleType) -> None:
    lock = impl.Lock()
    lock.acquire()
    t0 = time.monotonic()
    assert impl.spin_wait(lock, 0.02) is False
    assert time.monotonic() - t0 >= 0.019
    assert lock.locked()  # still the holder's
    lock.release()
    assert impl.spin_wait(lock, 0.02) is True  # free: taken at once


def test_a_reader_between_polls_delays_spin_wait_at_most_settle(impl: ModuleType) -> None:
    """A reader that read data and has not polled again counts as routing; the waiter
    gives it up to ``settle`` seconds, then goes on; ``reader_idle`` ends the count."""
    a, b = socket.socketpair()
    with a, b:
        b.sendall(b"x")
        assert impl.recv_spin(a, bytearray(8), 1.0, True) == 1  # this thread: a busy reader
        lock = impl.Lock()
        t0 = time.monotonic()
        assert impl.spin_wait(lock, 1.0, 0.05) is True
        waited = time.monotonic() - t0
        lock.release()
        impl.reader_idle()
        t1 = time.monotonic()
        assert impl.spin_wait(lock, 1.0, 0.05) is True
        assert time.monotonic() - t1 < 0.04
        if impl is _impl.implementations().get("compiled"):
            assert waited >= 0.045  # the compiled twin waited for the reader
