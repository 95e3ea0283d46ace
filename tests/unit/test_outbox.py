"""Outbox: the write buffer and its publish fast path, for both implementations."""
from __future__ import annotations

import array
import asyncio
import inspect
import threading

import pytest

from jetwire.errors import BadSubjectError


class Recorder:
    """Collects calls of the outbox callbacks (``slow`` answers with a marker tuple)."""

    def __init__(self) -> None:
        self.calls: list = []

    def slow(self, subject, data, reply, headers):
        self.calls.append(("slow", subject, data, reply, headers))
        return ("slow-result", subject)

    def first(self) -> None:
        self.calls.append(("first",))

    def full(self) -> None:
        self.calls.append(("full",))


def make(impl, threshold=1 << 16, max_payload=1 << 20, connected=True, ret=None, lock=None):
    rec = Recorder()
    ob = impl.Outbox(slow=rec.slow, max_payload=max_payload, threshold=threshold, on_first=rec.first,
                     on_full=rec.full, ret=ret, lock=lock)
    ob.connected = connected
    return ob, rec


def test_defaults(impl):
    ob = impl.Outbox()
    assert ob.buf == bytearray() and type(ob.buf) is bytearray
    assert ob.connected is False and ob.congested is False
    assert ob.out_msgs == 0 and ob.out_bytes == 0
    assert ob.threshold == 65536 and ob.max_payload == impl.DEFAULT_MAX_PAYLOAD
    assert ob.on_first is None and ob.on_full is None and ob.slow is None and ob.ret is None and ob.lock is None


def test_fast_path_bytes_exact(impl):
    ob, rec = make(impl)
    assert ob.publish("foo.bar", b"hello") is None
    assert ob.publish("foo", b"", "_INBOX.x.1") is None
    assert ob.publish("a", b"x", "") is None  # an empty reply means none
    assert ob.publish("café.ü", b"\r\n", reply="ré") is None
    want = bytearray()
    impl.append_pub(want, "foo.bar", None, b"hello")
    impl.append_pub(want, "foo", "_INBOX.x.1", b"")
    impl.append_pub(want, "a", "", b"x")
    impl.append_pub(want, "café.ü", "ré", b"\r\n")
    assert ob.buf == want
    assert ob.buf.startswith(b"PUB foo.bar 5\r\nhello\r\nPUB foo _INBOX.x.1 0\r\n\r\nPUB a 1\r\nx\r\n")
    assert ob.out_msgs == 4 and ob.out_bytes == 5 + 0 + 1 + 2
    assert rec.calls == [("first",)]


def test_fast_path_buffer_types(impl):
    ob, rec = make(impl)
    for data in (bytearray(b"ab\r\ncd"), memoryview(b"ab\r\ncd"), memoryview(b"xxab\r\ncdxx")[2:-2]):
        ob.publish("s", data)
    assert ob.buf == b"PUB s 6\r\nab\r\ncd\r\n" * 3
    ints = array.array("i", [1, 2])  # counted and sent as bytes, like the encoder does
    ob.publish("s", memoryview(ints))
    assert ob.buf.endswith(b"PUB s %d\r\n%s\r\n" % (ints.itemsize * 2, ints.tobytes()))
    assert ob.out_msgs == 4 and ob.out_bytes == 18 + ints.itemsize * 2
    assert [c[0] for c in rec.calls] == ["first"]


def test_a_strided_view_is_refused_in_the_same_words(impl):
    """Both implementations, every way in: a view that is not one block of memory."""
    ob, _ = make(impl)
    strided = memoryview(b"abcdef")[::2]
    calls = [lambda: ob.publish("s", strided), lambda: ob.append_pub("s", None, strided),
             lambda: impl.append_pub(bytearray(), "s", None, strided),
             lambda: impl.append_hpub(bytearray(), "s", None, b"NATS/1.0\r\n\r\n", strided)]
    for call in calls:
        with pytest.raises(BufferError, match="^data must be a C-contiguous buffer$"):
            call()
    assert ob.buf == bytearray() and ob.out_msgs == 0


def test_keyword_arguments(impl):
    ob, _rec = make(impl)
    ob.publish(subject="k", data=b"1", reply="r", headers=None)
    ob.publish("k", reply="r")
    assert ob.buf == b"PUB k r 1\r\n1\r\nPUB k r 0\r\n\r\n"


def test_on_first_only_when_buffer_was_empty(impl):
    ob, rec = make(impl)
    ob.publish("a", b"1")
    ob.publish("a", b"2")
    assert rec.calls == [("first",)]
    assert ob.take() == b"PUB a 1\r\n1\r\nPUB a 1\r\n2\r\n"
    ob.publish("a", b"3")
    assert rec.calls == [("first",), ("first",)]
    ob.buf += b"PING\r\n"  # something else made it non-empty: no on_first for the next append
    ob.take()
    ob.buf += b"PONG\r\n"
    ob.publish("a", b"4")
    assert rec.calls == [("first",), ("first",)]


def test_on_full_at_threshold(impl):
    frame = len(b"PUB a 1\r\nx\r\n")  # 12 bytes
    ob, rec = make(impl, threshold=3 * frame)
    ob.publish("a", b"x")
    ob.publish("a", b"x")
    assert rec.calls == [("first",)]
    ob.publish("a", b"x")  # reaches the threshold exactly
    assert rec.calls == [("first",), ("full",)]
    ob.publish("a", b"x")
    assert rec.calls == [("first",), ("full",), ("full",)]
    ob.take()
    ob.publish("a", b"y" * 100)  # empty -> over the threshold in one append: on_full only
    assert rec.calls == [("first",), ("full",), ("full",), ("full",)]


def test_callbacks_none_are_skipped(impl):
    ob = impl.Outbox(threshold=1)
    ob.connected = True
    ob.publish("a", b"x")
    assert ob.out_msgs == 1


def test_callbacks_see_the_appended_bytes(impl):
    seen = []
    ob = impl.Outbox(threshold=20)
    ob.on_first = lambda: seen.append(("first", bytes(ob.buf)))
    ob.on_full = lambda: seen.append(("full", ob.take()))
    ob.connected = True
    ob.publish("a", b"x")
    ob.publish("a", b"y")
    assert seen == [("first", b"PUB a 1\r\nx\r\n"), ("full", b"PUB a 1\r\nx\r\nPUB a 1\r\ny\r\n")]
    assert ob.buf == b""


@pytest.mark.parametrize("case", ["headers", "empty-headers", "too-large", "disconnected", "congested", "str-data",
                                  "bytes-subclass", "none-data", "int-data"])
def test_slow_path_routing(impl, case):
    ob, rec = make(impl, max_payload=4)
    subject, data, reply, headers = "s", b"1234", "r", None
    if case == "headers":
        headers = {"K": "v"}
    elif case == "empty-headers":
        headers = {}
    elif case == "too-large":
        data = b"12345"
    elif case == "disconnected":
        ob.connected = False
    elif case == "congested":
        ob.congested = True
    elif case == "str-data":
        data = "text"
    elif case == "bytes-subclass":
        data = type("B", (bytes,), {})(b"12")
    elif case == "none-data":
        data = None
    elif case == "int-data":
        data = 3
    assert ob.publish(subject, data, reply, headers) == ("slow-result", "s")
    assert rec.calls == [("slow", subject, data, reply, headers)]
    assert ob.buf == b"" and ob.out_msgs == 0 and ob.out_bytes == 0


def test_max_payload_boundary(impl):
    ob, rec = make(impl, max_payload=4)
    ob.publish("s", b"1234")
    ob.publish("s", bytearray(b"1234"))
    ob.publish("s", memoryview(b"12345")[1:])
    assert ob.out_msgs == 3 and [c[0] for c in rec.calls] == ["first"]
    ob.publish("s", bytearray(b"12345"))
    ob.publish("s", memoryview(b"12345"))
    assert [c[0] for c in rec.calls] == ["first", "slow", "slow"]
    ob.max_payload = 0
    ob.publish("s", b"")
    assert ob.out_msgs == 4
    ob.publish("s", b"1")
    assert rec.calls[-1][0] == "slow"


@pytest.mark.parametrize("subject, reply", [
    ("", None), ("a b", None), ("a..b", None), (".a", None), ("a.", None), ("a\tb", None), ("a\u00a0b", None),
    ("\ud800", None), (None, None), (b"bytes", None), (5, None),
    ("ok", "bad reply"), ("ok", "r..x"), ("ok", 7), ("ok", b"r"),
])
def test_bad_subject_leaves_buffer_untouched(impl, subject, reply):
    for data in (b"x", bytearray(b"x"), memoryview(b"x")):
        ob, rec = make(impl)
        ob.buf += b"PUB keep 0\r\n\r\n"
        with pytest.raises(BadSubjectError):
            ob.publish(subject, data, reply)
        assert ob.buf == b"PUB keep 0\r\n\r\n"
        assert ob.out_msgs == 0 and ob.out_bytes == 0 and rec.calls == []


def test_bad_buffers_raise_before_touching_buf(impl):
    ob, _rec = make(impl)
    with pytest.raises(BufferError):
        ob.publish("s", memoryview(b"abcdef")[::2])
    with pytest.raises(BufferError):
        ob.publish("s", ob.buf)
    ob.publish("s", b"x")
    with pytest.raises(BufferError):
        ob.publish("s", ob.buf)
    with pytest.raises(BufferError):
        ob.append_pub("s", None, ob.buf)
    with pytest.raises(BufferError):
        ob.append_hpub("s", None, b"NATS/1.0\r\n\r\n", ob.buf)
    assert ob.buf == b"PUB s 1\r\nx\r\n" and ob.out_msgs == 1


def test_take(impl):
    ob, _rec = make(impl)
    empty = ob.buf
    assert ob.take() == b"" and type(ob.take()) is bytes
    assert ob.buf is empty  # nothing to hand over: the buffer stays
    ob.publish("a", b"1")
    first = ob.buf
    got = ob.take()
    assert got is first and got == b"PUB a 1\r\n1\r\n"
    assert ob.buf == b"" and ob.buf is not first and type(ob.buf) is bytearray
    ob.publish("a", b"2")
    assert got == b"PUB a 1\r\n1\r\n"  # what was taken does not change
    assert ob.take() == b"PUB a 1\r\n2\r\n"


def test_buf_setter(impl):
    ob, rec = make(impl)
    mine = bytearray(b"PING\r\n")
    ob.buf = mine
    assert ob.buf is mine
    ob.publish("a", b"")
    assert mine == b"PING\r\nPUB a 0\r\n\r\n"
    assert rec.calls == []  # not empty before the append
    for bad in (b"bytes", None, "str", memoryview(b"")):
        with pytest.raises(TypeError):
            ob.buf = bad
    assert ob.buf is mine


def test_attributes_are_writable(impl):
    ob, rec = make(impl)
    ob.out_msgs = 10
    ob.out_bytes = 20
    ob.publish("a", b"xyz")
    assert ob.out_msgs == 11 and ob.out_bytes == 23
    ob.threshold = 0
    ob.publish("a", b"")
    assert rec.calls[-1] == ("full",)
    sentinel = object()
    ob.ret = sentinel
    assert ob.publish("a", b"") is sentinel


def test_append_pub_and_hpub_count(impl):
    ob, rec = make(impl, connected=False, max_payload=1)
    ob.append_pub("a", "r", b"hello")  # no connected / max_payload checks, no callbacks
    hdr = impl.encode_headers({"K": "v"})
    ob.append_hpub("b", None, hdr, memoryview(b"data"))
    want = bytearray()
    impl.append_pub(want, "a", "r", b"hello")
    impl.append_hpub(want, "b", None, hdr, b"data")
    assert ob.buf == want
    assert ob.out_msgs == 2 and ob.out_bytes == 9  # data only, like the client's counters
    assert rec.calls == []
    with pytest.raises(BadSubjectError):
        ob.append_pub("a b", None, b"x")
    with pytest.raises(BadSubjectError):
        ob.append_hpub("a", "r r", hdr, b"x")
    with pytest.raises(TypeError):
        ob.append_pub("a", None, "text")
    assert ob.buf == want and ob.out_msgs == 2


def test_done_is_awaitable(impl):
    done = impl.DONE
    assert inspect.isawaitable(done)
    assert repr(done) == "DONE"
    it = done.__await__()
    with pytest.raises(StopIteration):
        next(it)

    async def main():
        assert await done is None
        assert await done is None  # a singleton: awaiting it again is fine
        assert await asyncio.ensure_future(done) is None
        assert await asyncio.gather(done, done) == [None, None]

    asyncio.run(main())


def test_await_publish_with_done(impl):
    ob, rec = make(impl, ret=impl.DONE)

    async def slow(subject, data, reply, headers):
        await asyncio.sleep(0)
        rec.calls.append(("slow-coro", subject))

    ob.slow = slow

    async def main():
        assert await ob.publish("a", b"1") is None
        assert await ob.publish("a", b"2", headers={"K": "v"}) is None  # the slow coroutine, awaited
        ob.connected = False
        assert await ob.publish("a", b"3") is None

    asyncio.run(main())
    assert ob.buf == b"PUB a 1\r\n1\r\n" and ob.out_msgs == 1
    assert rec.calls == [("first",), ("slow-coro", "a"), ("slow-coro", "a")]


class CountingLock:
    """A lock recording how often it was entered (and whether it is held)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.entered = 0

    def __enter__(self):
        self._lock.acquire()
        self.entered += 1

    def __exit__(self, *exc):
        self._lock.release()

    def locked(self) -> bool:
        return self._lock.locked()


@pytest.mark.parametrize("kind", ["counting", "impl"])
def test_publish_holds_the_lock_and_calls_back_outside_it(impl, kind):
    """Both implementations hold ``lock`` from reading ``buf`` to counting: their own
    ``Lock`` (taken from C by the compiled outbox) or any other lock (``with lock``)."""
    lock = CountingLock() if kind == "counting" else impl.Lock()
    held = []
    seen = []

    def first():
        held.append(("first", lock.locked()))

    def full():
        held.append(("full", lock.locked()))

    ob = impl.Outbox(threshold=30, lock=lock, on_first=first, on_full=full)
    assert ob.lock is lock
    ob.connected = True
    ob.publish("a", b"x")
    ob.publish("a", b"x")
    ob.publish("a", bytearray(b"x"))
    assert held == [("first", False), ("full", False)] and not lock.locked()
    with pytest.raises(BadSubjectError):
        ob.publish("a b", b"x")  # validated under the lock, released on the error
    assert not lock.locked()
    with pytest.raises(BufferError):
        ob.publish("a", ob.buf)
    assert not lock.locked()
    ob.slow = lambda *args: seen.append(lock.locked()) or "slow"
    assert ob.publish("a", b"x", headers={}) == "slow"  # the slow path does its own locking
    assert seen == [False]
    if kind == "counting":
        assert lock.entered == 5
    ob.lock = None
    ob.publish("a", b"x")  # no lock: one thread
    assert ob.lock is None and ob.out_msgs == 4


def test_lock(impl):
    """``Lock`` behaves like ``threading.Lock`` (non-reentrant, any thread may release)."""
    lock = impl.Lock()
    assert not lock.locked()
    assert lock.acquire() is True and lock.locked()
    assert lock.acquire(False) is False
    assert lock.acquire(True, 0.01) is False
    lock.release()
    assert not lock.locked()
    with pytest.raises(RuntimeError):
        lock.release()
    with lock:
        assert lock.locked()
    assert lock.acquire(timeout=0) is True
    got = []
    t = threading.Thread(target=lambda: got.append(lock.acquire(True, 5)))
    t.start()
    lock.release()  # the waiting thread gets it
    t.join()
    assert got == [True] and lock.locked()
    t = threading.Thread(target=lock.release)  # released by another thread
    t.start()
    t.join()
    assert not lock.locked()
    with pytest.raises(ValueError):
        lock.acquire(False, 1)


def test_write_lock_is_a_lock(impl):
    lock = impl.WriteLock()
    with lock:
        assert lock.locked()
        assert lock.acquire(False) is False
    assert not lock.locked()
    assert lock.acquire() is True
    lock.release()
    ob = impl.Outbox(lock=lock)
    ob.connected = True
    ob.publish("a", b"x")
    assert not lock.locked() and ob.buf == b"PUB a 1\r\nx\r\n"


@pytest.mark.parametrize("kind", ["threading", "impl"])
def test_threads_lose_nothing(impl, kind):
    """Publishers on several threads, a taker holding the writer's lock: every frame arrives once."""
    writer_lock = threading.Lock() if kind == "threading" else impl.WriteLock()
    ob = impl.Outbox(threshold=4096, lock=writer_lock)
    ob.connected = True
    taken = []

    def flush():
        with writer_lock:
            got = ob.take()
        if got:
            taken.append(bytes(got))

    ob.on_full = flush
    n, threads = 5000, 3
    stop = threading.Event()

    def publisher(k):
        for i in range(n):
            ob.publish("t.%d" % k, b"%d" % i)

    def python_appender():
        for i in range(n):
            with writer_lock:
                impl.append_pub(ob.buf, "p", None, b"%d" % i)

    def taker():
        while not stop.is_set():
            flush()

    ts = [threading.Thread(target=publisher, args=(k,)) for k in range(threads)]
    ts.append(threading.Thread(target=python_appender))
    tk = threading.Thread(target=taker)
    tk.start()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    stop.set()
    tk.join()
    flush()
    wire = b"".join(taken)
    for k in range(threads):
        want = b"".join(b"PUB t.%d %d\r\n%d\r\n" % (k, len(b"%d" % i), i) for i in range(n))
        got = b"".join(f for f in _frames(wire) if f.startswith(b"PUB t.%d " % k))
        assert got == want
    assert b"".join(f for f in _frames(wire) if f.startswith(b"PUB p ")) == b"".join(
        b"PUB p %d\r\n%d\r\n" % (len(b"%d" % i), i) for i in range(n))
    assert ob.out_msgs == threads * n


def _frames(wire: bytes):
    pos = 0
    while pos < len(wire):
        eol = wire.index(b"\r\n", pos)
        size = int(wire[pos:eol].split()[-1])
        end = eol + 2 + size + 2
        yield wire[pos:end]
        pos = end


# ------------------------------------------------------------- wired to the writers
class FakeCore:
    def __init__(self, impl) -> None:
        self.outbox = impl.Outbox(slow=lambda *a: ("slow", *a))
        self.outbox.connected = True


class FakeTransport:
    def __init__(self) -> None:
        self.writes: list = []
        self.closed = False
        self._reader = None  # the blocking transport's reader thread (never writes inline)
        self.write_paused = False
        self.flow_cb = None
        self.wrote = threading.Event()

    def set_flow_cb(self, cb) -> None:
        self.flow_cb = cb

    def write(self, data) -> None:
        self.writes.append(bytes(data))
        self.wrote.set()


def test_asyncio_writer_drives_the_outbox(impl):
    from jetwire.aio._transport import FLUSH_THRESHOLD, Writer

    async def main():
        core = FakeCore(impl)
        ob = core.outbox
        w = Writer(core)
        assert ob.threshold == FLUSH_THRESHOLD and ob.lock is None
        tr = FakeTransport()
        w.set_transport(tr)
        assert tr.flow_cb is not None and not ob.congested
        ob.publish("a", b"1")
        ob.publish("a", b"2")
        assert tr.writes == []  # sent at the end of the loop turn, in one write
        await asyncio.sleep(0)
        assert tr.writes == [b"PUB a 1\r\n1\r\nPUB a 1\r\n2\r\n"]
        big = b"x" * FLUSH_THRESHOLD
        ob.publish("a", big)  # reaches the threshold: written at once
        assert len(tr.writes) == 2 and tr.writes[1].endswith(big + b"\r\n")
        tr.flow_cb(True)  # pause_writing
        assert ob.congested
        assert ob.publish("a", b"3")[0] == "slow"
        tr.flow_cb(False)  # resume_writing
        assert not ob.congested and ob.publish("a", b"3") is None
        w.set_transport(None)
        assert tr.flow_cb is None and not ob.congested
        await asyncio.sleep(0)
        assert ob.buf == b"PUB a 1\r\n3\r\n"  # no transport: kept for the reconnect

    asyncio.run(main())


def test_blocking_writer_drives_the_outbox(impl):
    from jetwire._sync._transport import FLUSH_THRESHOLD, Writer

    core = FakeCore(impl)
    ob = core.outbox
    w = Writer(core)
    try:
        assert ob.threshold == FLUSH_THRESHOLD and ob.lock is w.lock
        tr = FakeTransport()
        w.set_transport(tr)
        ob.publish("a", b"1")  # a quiet connection: sent by this thread (else the flusher's)
        assert tr.wrote.wait(5)
        for _ in range(100):
            if not ob.buf:
                break
            threading.Event().wait(0.01)
        assert b"".join(tr.writes) == b"PUB a 1\r\n1\r\n"
        big = b"x" * FLUSH_THRESHOLD
        ob.publish("a", big)  # flushed inline by the publishing thread
        assert b"".join(tr.writes).endswith(big + b"\r\n") and ob.buf == b""
    finally:
        w.close()
