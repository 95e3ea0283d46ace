"""The sans-IO async-publish bookkeeping (no server): PubAckMux and AckFuture."""
from __future__ import annotations

import concurrent.futures as cf
import threading
import time

import pytest

from jetwire import Headers, Msg
from jetwire.errors import (
    APIError,
    ConnectionClosedError,
    ConnectionLostError,
    JetStreamError,
    NoStreamResponseError,
    TimeoutError,
    WrongLastSequenceError,
)
from jetwire.jetstream.models import PubAck
from jetwire.jetstream.pubmux import AckFuture, PubAckMux

PREFIX = "_INBOX.abc."


def reply(token: str, data: bytes = b"", status: str | None = None, description: str | None = None) -> Msg:
    headers = None
    if status is not None:
        headers = Headers()
        headers.status = status
        headers.description = description
    return Msg(PREFIX + token, data, None, headers)


def add(mux: PubAckMux, retries: int = 2) -> tuple:
    fut = AckFuture()
    token = mux.add(fut, "s.x", None, b"data", retries, 0.25)
    return fut, token


def test_ack_resolves_future_and_window_counts():
    mux = PubAckMux(PREFIX)
    f1, t1 = add(mux)
    f2, t2 = add(mux)
    assert t1 != t2
    assert mux.reply_of(t1) == PREFIX + t1
    assert len(mux.pending) == 2
    mux.on_msg(reply(t2, b'{"stream":"S","seq":7}'))
    assert len(mux.pending) == 1
    ack = f2.result(0)
    assert isinstance(ack, PubAck)
    assert (ack.stream, ack.seq, ack.duplicate, ack.domain) == ("S", 7, False, None)
    mux.on_msg(reply(t1, b'{"stream":"S","seq":8,"duplicate":true,"domain":"hub"}'))
    ack = f1.result(0)
    assert (ack.seq, ack.duplicate, ack.domain) == (8, True, "hub")
    assert not mux.pending
    mux.on_msg(reply(t1, b'{"stream":"S","seq":8}'))  # unknown token: ignored


def test_error_answers_fail_with_typed_errors():
    mux = PubAckMux(PREFIX)
    f, t = add(mux)
    mux.on_msg(reply(t, b'{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 3"}}'))
    with pytest.raises(WrongLastSequenceError) as ei:
        f.result(0)
    assert ei.value.err_code == 10071
    f, t = add(mux)
    mux.on_msg(reply(t, b"not json"))
    with pytest.raises(JetStreamError):
        f.result(0)
    f, t = add(mux)
    mux.on_msg(reply(t, b'{"seq":1}'))
    with pytest.raises(JetStreamError):
        f.result(0)
    f, t = add(mux)
    mux.on_msg(reply(t, status="408", description="Request Timeout"))
    with pytest.raises(APIError) as ei:
        f.result(0)
    assert ei.value.code == 408


def test_no_responders_retries_then_fails():
    mux = PubAckMux(PREFIX)
    retried = []
    mux.on_retry = lambda token, wait: retried.append((token, wait))
    f, t = add(mux, retries=2)
    mux.on_msg(reply(t, status="503"))
    mux.on_msg(reply(t, status="503"))
    assert retried == [(t, 0.25), (t, 0.25)]
    assert not f.done()
    assert len(mux.pending) == 1
    assert mux.pending[t] is f and f._pub[:3] == ("s.x", None, b"data")
    mux.on_msg(reply(t, status="503"))
    with pytest.raises(NoStreamResponseError):
        f.result(0)
    assert not mux.pending
    f, t = add(mux, retries=0)
    mux.on_msg(reply(t, status="503"))
    with pytest.raises(NoStreamResponseError):
        f.result(0)
    assert len(retried) == 2


def test_a_retried_publish_keeps_its_deadline():
    mux = PubAckMux(PREFIX)
    mux.on_retry = lambda token, wait: None
    f = AckFuture()
    t = mux.add(f, "s.x", None, b"data", -1, 0.25, 1.0)  # retries for ever ...
    deadline = f._pub[5]
    mux.on_msg(reply(t, status="503"))
    assert mux.pending[t] is f and f._pub == ("s.x", None, b"data", -2, 0.25, deadline, None)
    assert mux.expire(deadline) == 1  # ... but not past its deadline
    with pytest.raises(TimeoutError):
        f.result(0)


def test_stall_waiters_wake_at_low_water_and_complete_waiters_when_empty():
    mux = PubAckMux(PREFIX)
    entries = [add(mux) for _ in range(4)]
    stall, done = cf.Future(), cf.Future()
    mux.add_stall_waiter(stall, 2)
    mux.add_complete_waiter(done)
    mux.on_msg(reply(entries[0][1], b'{"stream":"S","seq":1}'))
    assert not stall.done()  # 3 pending > 2
    mux.on_msg(reply(entries[1][1], b'{"stream":"S","seq":2}'))
    assert stall.result(0) is True
    assert not done.done()
    mux.on_msg(reply(entries[2][1], b'{"stream":"S","seq":3}'))
    mux.fail(entries[3][1], JetStreamError("gone"))
    assert done.result(0) is True
    with pytest.raises(JetStreamError):
        entries[3][0].result(0)


def test_deadlines_expire_fail_with_timeout_free_the_window_and_tell_the_hook():
    mux = PubAckMux(PREFIX)
    armed = []
    mux.call_later = lambda delay, fn, *args: armed.append((delay, fn, args))
    failed = []
    f1, f2 = AckFuture(), AckFuture()
    t0 = time.monotonic()
    t1 = mux.add(f1, "s.x", None, b"data", 2, 0.25, 10.0, lambda fut, exc: failed.append((fut, exc)))
    t2 = mux.add(f2, "s.x", None, b"data", 2, 0.25, 20.0)
    ((delay, _fire, (at,)),) = armed  # one timer, for the earliest deadline
    assert 9.9 < delay <= 10.0 and at == mux.armed_at == f1._pub[5] and t0 + 10 <= at
    stall, done = cf.Future(), cf.Future()
    mux.add_stall_waiter(stall, 1)
    mux.add_complete_waiter(done)
    assert mux.expire(t0 + 5.0) == 0 and not f1.done()
    assert mux.expire(at + 0.5, at) == 1  # the live timer: expires f1, arms the next one
    with pytest.raises(TimeoutError):
        f1.result(0)
    assert failed == [(f1, f1.exception())] and stall.result(0) is True and not done.done()
    assert list(mux.pending) == [t2] and len(armed) == 2 and armed[1][2][0] == mux.armed_at == f2._pub[5]
    mux.on_msg(reply(t1, b'{"stream":"S","seq":1}'))  # a late ack: ignored
    mux.on_msg(reply(t2, b'{"stream":"S","seq":2}'))
    assert f2.result(0).seq == 2 and done.result(0) is True
    assert mux.expire(t0 + 25.0, mux.armed_at) == 0 and mux.armed_at == float("inf")


def test_fail_all_forgets_the_timer():
    mux = PubAckMux(PREFIX)
    mux.call_later = lambda *a: None
    fut = AckFuture()
    mux.add(fut, "s.x", None, b"data", 2, 0.25, 5.0)
    mux.fail_all(ConnectionClosedError("closed"))
    assert not mux.pending and mux.armed_at == float("inf")
    with pytest.raises(ConnectionClosedError):
        fut.result(0)


def test_fail_all_fails_pending_wakes_waiters_and_follows_the_chain():
    first = PubAckMux(PREFIX)
    mux = PubAckMux("_INBOX.def.")
    mux.chain = first
    f0, _ = add(first)
    f1, _ = add(mux)
    stall = cf.Future()
    mux.add_stall_waiter(stall, 0)
    err = ConnectionClosedError("closed")
    mux.fail_all(err)
    assert mux.closed and first.closed
    with pytest.raises(ConnectionClosedError):
        f1.result(0)
    with pytest.raises(ConnectionClosedError):
        f0.result(0)
    assert stall.done()
    assert not mux.pending


def test_fail_sent_fails_what_awaits_an_ack_and_the_mux_goes_on():
    mux = PubAckMux(PREFIX)
    f1, t1 = add(mux)
    f2, _t2 = add(mux)
    done = cf.Future()
    mux.add_complete_waiter(done)
    mux.fail_sent(ConnectionLostError("lost"))
    for f in (f1, f2):
        with pytest.raises(ConnectionLostError):
            f.result(0)
    assert done.result(0) is True and not mux.pending and not mux.closed
    mux.on_msg(reply(t1, b'{"stream":"S","seq":1}'))  # a late ack is ignored
    f3, t3 = add(mux)  # published while reconnecting: acked over the renewed connection
    mux.on_msg(reply(t3, b'{"stream":"S","seq":2}'))
    assert f3.result(0).seq == 2


def test_ack_future_is_a_concurrent_future(impl):
    AckFuture = impl.AckFuture
    f = AckFuture()
    assert isinstance(f, cf.Future)
    assert not f.done()
    f.set_result(1)
    assert f.done() and f.result() == 1 and f.exception() is None
    with pytest.raises(cf.InvalidStateError):
        f.set_result(2)
    with pytest.raises(cf.InvalidStateError):
        f.set_exception(ValueError())
    f = AckFuture()
    f.set_exception(ValueError("x"))
    with pytest.raises(ValueError):
        f.result()
    got = []
    f = AckFuture()
    f.add_done_callback(lambda x: got.append(x.result()))
    f.set_result(5)
    f.add_done_callback(lambda x: got.append(x.result()))
    assert got == [5, 5]
    f = AckFuture()
    assert f.cancel() and f.cancelled()
    with pytest.raises(cf.InvalidStateError):
        f.set_result(1)
    with pytest.raises(cf.TimeoutError):
        AckFuture().result(0.01)
    assert "pending" in repr(AckFuture())


def test_ack_future_across_threads(impl):
    AckFuture = impl.AckFuture
    for i in range(2000):
        f = AckFuture()
        t = threading.Thread(target=f.set_result, args=(i,))
        t.start()
        assert f.result(5) == i
        t.join()
    futs = [AckFuture() for _ in range(200)]

    def setter():
        for i, f in enumerate(futs):
            f.set_result(i)

    threading.Thread(target=setter).start()
    assert sorted(f.result() for f in cf.as_completed(futs, timeout=5)) == list(range(200))
    futs = [AckFuture() for _ in range(200)]
    threading.Thread(target=setter).start()
    done, not_done = cf.wait(futs, timeout=5)
    assert len(done) == 200 and not not_done


def test_ack_future_races_its_condition(impl):
    """A reader resolving futures while other threads wait on them, add callbacks or
    cancel: each future ends resolved or cancelled, exactly once, and every waiter and
    callback sees that outcome."""
    AckFuture = impl.AckFuture
    n = 3000
    futs = [AckFuture() for _ in range(n)]
    called: list = []
    outcome: list = [None] * n

    def resolver():
        for i, f in enumerate(futs):
            try:
                f.set_result(i)
            except cf.InvalidStateError:
                pass

    def watcher():
        for i, f in enumerate(futs):
            if i % 3 == 0:
                f.add_done_callback(lambda x, i=i: called.append(i))
            elif i % 3 == 1:
                if f.cancel():
                    outcome[i] = "cancelled"
            else:
                outcome[i] = f.result(5)

    ts = [threading.Thread(target=resolver), threading.Thread(target=watcher)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert sorted(called) == list(range(0, n, 3))
    for i, f in enumerate(futs):
        assert f.done()
        if f.cancelled():
            assert outcome[i] == "cancelled"
        else:
            assert f.result(0) == i and outcome[i] in (None, i)
    assert cf.wait(futs, timeout=5).not_done == set()


def test_a_cancelled_ack_future_is_done_for_wait_and_as_completed(impl):
    """No executor runs an ack future: once cancelled it counts as done for
    ``concurrent.futures.wait`` and ``as_completed`` at once, also for a waiter that
    was already waiting when it was cancelled."""
    AckFuture = impl.AckFuture
    f, g = AckFuture(), AckFuture()
    assert f.cancel() and f.cancel()  # twice: still cancelled, nothing raised
    assert f.cancelled() and f.done()
    res = cf.wait([f], timeout=0)
    assert res.done == {f} and res.not_done == set()
    assert list(cf.as_completed([f], timeout=0)) == [f]

    t = threading.Timer(0.05, g.cancel)  # cancelled while wait() waits on it
    t.start()
    res = cf.wait([g], timeout=10)
    t.join()
    assert res.done == {g}
    with pytest.raises(cf.CancelledError):
        g.result(0)


def test_ack_future_is_resolved_through_set_result_by_the_mux(impl):
    """The mux resolves any future through its public set_result (never its internals)."""
    seen = []

    class Recording(impl.AckFuture):
        def set_result(self, result):
            seen.append(result)
            super().set_result(result)

    mux = PubAckMux(PREFIX)
    fut = Recording()
    token = mux.add(fut, "s.x", None, b"data", 2, 0.25)
    mux.on_msg(reply(token, b'{"stream":"S","seq":3}'))
    assert len(seen) == 1 and seen[0] == PubAck("S", 3) and fut.result(0) is seen[0]


def test_mux_lock_from_threads():
    """Publishing threads add, the reader acks, waiters come and go: the window drains
    to zero and every completion waiter is woken (the mux's lock is a real lock)."""
    mux = PubAckMux(PREFIX)
    assert mux.lock is not None and PubAckMux(PREFIX, lock=None).lock is None
    tokens: list = []
    futs: list = []
    lock = threading.Lock()

    def publisher():
        for _ in range(1500):
            fut = AckFuture()
            tok = mux.add(fut, "s", None, b"", 0, 0.0)
            with lock:
                tokens.append(tok)
                futs.append(fut)

    ts = [threading.Thread(target=publisher) for _ in range(3)]
    for t in ts:
        t.start()
    waiters = []
    acked = 0
    while acked < 4500:
        with lock:
            batch = tokens[acked:]
        for tok in batch:
            mux.on_msg(reply(tok, b'{"stream":"S","seq":1}'))
        acked += len(batch)
        if acked % 2:
            w = cf.Future()
            mux.add_complete_waiter(w)
            waiters.append(w)
    for t in ts:
        t.join()
    assert not mux.pending and len(set(tokens)) == 4500
    assert all(f.result(0).seq == 1 for f in futs)
    done = cf.Future()
    mux.add_complete_waiter(done)
    mux.discard("nothing")  # an empty window wakes completion waiters
    assert done.result(0) is True and all(w.done() for w in waiters)
