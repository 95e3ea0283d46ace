"""AckMux: the per-ack path of the JetStream async-publish mux, for both implementations."""
from __future__ import annotations

import asyncio
import concurrent.futures as cf
import gc
import json
import time

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jetwire.jetstream.models import PubAck
from jetwire.msg import Msg

PREFIX = "_INBOX.mux."


def make(impl, make_ack=PubAck.plain, lock=None):
    class Mux(impl.AckMux):
        __slots__ = ("arms", "expired", "others", "pops")

        def __init__(self) -> None:
            super().__init__(PREFIX, make_ack, lock)
            self.others: list = []
            self.pops = 0
            self.arms: list = []
            self.expired: list = []

        def _arm(self, at):
            self.arms.append(at)

        def _expired(self, futs):
            self.expired.extend(futs)

        def _other(self, msg, token, fut):
            self.others.append((msg, token, fut))

        def _after_pop(self):
            self.pops += 1

    return Mux()


def plain_reference(data: bytes):
    """What the fast path must accept: exactly the compact two-key answer, as orjson reads it."""
    try:
        d = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if type(d) is not dict or list(d) != ["stream", "seq"]:
        return None
    if type(d["stream"]) is not str or not d["stream"] or type(d["seq"]) is not int:
        return None
    if not 0 <= d["seq"] < 10 ** 18 or "\\" in data.decode("utf-8"):
        return None
    if data != b'{"stream":' + json.dumps(d["stream"], ensure_ascii=False).encode() + b',"seq":' \
            + str(d["seq"]).encode() + b"}":
        return None
    return d["stream"], d["seq"]


def test_add_tokens_and_records(impl):
    mux = make(impl)
    f, g = impl.AckFuture(), impl.AckFuture()
    t1 = mux.add(f, "s.x", None, b"d", 2, 0.25)
    t2 = mux.add(g, "s.y", b"NATS/1.0\r\n\r\n", b"e", -1, 1.0, None, print)
    assert (t1, t2) == ("1", "2") and mux._n == 2
    assert mux.pending == {"1": f, "2": g}
    assert f._pub == ("s.x", None, b"d", 2, 0.25, None, None)
    assert g._pub == ("s.y", b"NATS/1.0\r\n\r\n", b"e", -1, 1.0, None, print)
    assert mux.prefix == PREFIX and mux._plen == len(PREFIX)
    assert mux.stall_waiters == [] and mux.complete_waiters == [] and mux.wake_at == 0
    with pytest.raises(TypeError):
        impl.AckMux(b"x.")


@pytest.mark.parametrize("kind", ["lazy", "lazy_conditioned", "concurrent", "asyncio"])
def test_plain_ack_resolves(impl, kind):
    mux = make(impl)
    loop = asyncio.new_event_loop() if kind == "asyncio" else None
    try:
        fut = {"lazy": impl.AckFuture, "lazy_conditioned": impl.AckFuture, "concurrent": cf.Future,
               "asyncio": lambda: loop.create_future()}[kind]()
        if kind == "lazy_conditioned":
            fut._condition  # someone made the condition: set_result must take it
            seen = []
            fut.add_done_callback(seen.append)
        tok = mux.add(fut, "s", None, b"", 2, 0.25)
        mux.on_msg(Msg(PREFIX + tok, b'{"stream":"S\xc3\xa9","seq":42}'))
        assert fut.done() and not mux.pending and mux.pops == 0 and not mux.others
        ack = fut.result()
        assert type(ack) is PubAck and ack == PubAck.from_json_bytes(b'{"stream":"S\xc3\xa9","seq":42}')
        assert ack.__dict__ == {"stream": "S\u00e9", "seq": 42, "duplicate": False, "domain": None, "batch": None,
                                "count": None, "val": None, "_extra": {}}
        if kind == "lazy_conditioned":
            assert seen == [fut]
    finally:
        if loop is not None:
            loop.close()


@pytest.mark.parametrize("locked", [False, True])
def test_done_or_cancelled_future_and_unknown_token(impl, locked):
    mux = make(impl, lock=impl.Lock() if locked else None)
    f1, f2 = impl.AckFuture(), cf.Future()
    f1.set_result("first")
    f2.cancel()
    t1 = mux.add(f1, "s", None, b"", 2, 0.25)
    t2 = mux.add(f2, "s", None, b"", 2, 0.25)
    mux.on_msg(Msg(PREFIX + t1, b'{"stream":"S","seq":1}'))
    mux.on_msg(Msg(PREFIX + t2, b'{"stream":"S","seq":2}'))
    mux.on_msg(Msg(PREFIX + "99", b'{"stream":"S","seq":3}'))
    assert f1.result() == "first" and f2.cancelled() and not mux.pending and not mux.others


def test_waiters_call_after_pop(impl):
    mux = make(impl)
    fut = impl.AckFuture()
    mux.stall_waiters.append(object())
    tok = mux.add(fut, "s", None, b"", 2, 0.25)
    mux.on_msg(Msg(PREFIX + tok, b'{"stream":"S","seq":1}'))
    assert mux.pops == 1
    mux.stall_waiters.clear()
    mux.complete_waiters.append(object())
    tok = mux.add(impl.AckFuture(), "s", None, b"", 2, 0.25)
    mux.on_msg(Msg(PREFIX + tok, b'{"stream":"S","seq":1}'))
    assert mux.pops == 2


def test_submit_registers_then_publishes_with_the_token_reply(impl):
    mux = make(impl)
    sent = []

    def publish(subject, data, reply):
        sent.append((subject, data, reply))
        return "result"

    fut = impl.AckFuture()
    assert mux.submit(fut, "orders.new", b"x", 2, 0.25, publish) == "result"
    ((token, pending),) = mux.pending.items()
    assert sent == [("orders.new", b"x", PREFIX + token)]
    assert pending is fut and fut._pub == ("orders.new", None, b"x", 2, 0.25, None, None)
    mux.on_msg(Msg(PREFIX + token, b'{"stream":"S","seq":7}'))
    assert fut.result(0) == PubAck(stream="S", seq=7) and not mux.pending


def test_a_pending_publish_leaves_the_cycle_collector_one_object(impl):
    """The record a pending publish keeps on its future holds atomic values, so after a
    collection only the future is tracked (a record holding the future was tracked for
    as long as the publish was pending, and moved to the older generations with it)."""
    mux = make(impl)
    futs = [impl.AckFuture() for _ in range(3)]
    mux.submit(futs[0], "s", b"x", 2, 0.25, lambda *a: None, 5.0)
    mux.add(futs[1], "s", b"NATS/1.0\r\n\r\n", b"y", 2, 0.25)
    mux.add(futs[2], "s", None, b"z", 2, 0.25, None, lambda fut, exc: None)
    gc.collect()
    assert not gc.is_tracked(futs[0]._pub) and not gc.is_tracked(futs[1]._pub)
    assert gc.is_tracked(futs[2]._pub)  # it holds the error callback
    assert list(mux.pending.values()) == futs


def test_submit_forgets_the_entry_when_publish_raises(impl):
    mux = make(impl)

    def failing(subject, data, reply):
        raise ConnectionError("closed")

    mux.submit(impl.AckFuture(), "s", b"1", 2, 0.25, lambda *a: None)  # stays pending
    with pytest.raises(ConnectionError):
        mux.submit(impl.AckFuture(), "s", b"2", 2, 0.25, failing)
    assert [f._pub[2] for f in mux.pending.values()] == [b"1"] and mux.pops == 0  # nobody waits
    mux.stall_waiters.append(object())
    mux.wake_at = 1
    with pytest.raises(ConnectionError):
        mux.submit(impl.AckFuture(), "s", b"3", 2, 0.25, failing)
    assert len(mux.pending) == 1 and mux.pops == 1  # the stall waiter is due


def test_after_pop_only_when_a_waiter_is_due(impl):
    """No Python call per ack while the window stays above the stall waiters' low water
    mark, or while acks are still pending for a completion waiter."""
    mux = make(impl)
    toks = [mux.add(impl.AckFuture(), "s", None, b"", 2, 0.25) for _ in range(4)]
    mux.stall_waiters.append(object())
    mux.wake_at = 2
    mux.on_msg(Msg(PREFIX + toks[0], b'{"stream":"S","seq":1}'))
    assert mux.pops == 0  # 3 pending > 2
    mux.on_msg(Msg(PREFIX + toks[1], b'{"stream":"S","seq":2}'))
    assert mux.pops == 1  # 2 pending
    mux.stall_waiters.clear()
    mux.complete_waiters.append(object())
    mux.on_msg(Msg(PREFIX + toks[2], b'{"stream":"S","seq":3}'))
    assert mux.pops == 1  # one still pending
    mux.on_msg(Msg(PREFIX + toks[3], b'{"stream":"S","seq":4}'))
    assert mux.pops == 2


@pytest.mark.parametrize("data", [
    b"", b'{"seq":1,"stream":"S"}', b'{"stream":"S","seq":1,"domain":"d"}', b'{"stream":"","seq":1}',
    b'{"stream":"S","seq":01}', b'{"stream":"S","seq":-1}', b'{"stream":"S","seq":1.0}', b'{"stream":"S","seq":}',
    b'{"stream":"a\\"b","seq":1}', b'{"stream":"\xff","seq":1}', b'{"stream":"S", "seq":1}', b'{"stream":"S","seq":1} ',
    b'{"stream":"S","seq":1234567890123456789}', b'{"error":{"code":400}}', b'{"stream":"a\tb","seq":1}',
])
def test_other_answers_go_to_other(impl, data):
    mux = make(impl)
    fut = impl.AckFuture()
    tok = mux.add(fut, "s", None, b"", 2, 0.25)
    msg = Msg(PREFIX + tok, data)
    mux.on_msg(msg)
    assert not fut.done() and not mux.pending
    assert mux.others == [(msg, tok, fut)]


def test_no_make_ack_sends_everything_to_other(impl):
    mux = make(impl, make_ack=None)
    tok = mux.add(impl.AckFuture(), "s", None, b"", 2, 0.25)
    mux.on_msg(Msg(PREFIX + tok, b'{"stream":"S","seq":1}'))
    assert len(mux.others) == 1


_names = st.text(min_size=1, max_size=12)
_bodies = st.one_of(
    st.builds(lambda s, n: b'{"stream":' + json.dumps(s, ensure_ascii=False).encode("utf-8", "surrogatepass")
              + b',"seq":' + str(n).encode() + b"}", _names, st.integers(0, 10 ** 19)),
    st.binary(max_size=40).map(lambda b: b'{"stream":"' + b),
    st.binary(max_size=40),
)


@settings(max_examples=500, deadline=None)
@given(_bodies)
def test_fast_path_matches_reference(data):
    from jetwire import _impl

    expected = plain_reference(data) if _is_utf8(data) else None
    for impl in _impl.implementations().values():
        mux = make(impl)
        fut = cf.Future()
        tok = mux.add(fut, "s", None, b"", 2, 0.25)
        mux.on_msg(Msg(PREFIX + tok, data))
        if expected is None:
            assert not fut.done() and len(mux.others) == 1, (impl.__name__, data)
        else:
            ack = fut.result(0)
            assert (ack.stream, ack.seq) == expected and ack == PubAck.from_json_bytes(data), (impl.__name__, data)


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def test_make_ack_is_called_with_stream_and_seq(impl):
    """``make_ack`` builds the ack (a class such as PubAck, or a factory): the mux never
    fills an object's fields itself."""
    calls = []
    mux = make(impl, make_ack=lambda stream, seq: calls.append((stream, seq)) or ("ack", stream, seq))
    fut = cf.Future()
    tok = mux.add(fut, "s", None, b"", 2, 0.25)
    mux.on_msg(Msg(PREFIX + tok, b'{"stream":"S","seq":9}'))
    assert calls == [("S", 9)] and fut.result(0) == ("ack", "S", 9)
    mux = make(impl, make_ack=PubAck)  # the class itself: its constructor
    fut = cf.Future()
    tok = mux.add(fut, "s", None, b"", 2, 0.25)
    mux.on_msg(Msg(PREFIX + tok, b'{"stream":"S","seq":9}'))
    assert fut.result(0) == PubAck.plain("S", 9) == PubAck("S", 9)


def test_lock_is_released(impl):
    lock = impl.Lock()
    mux = make(impl, lock=lock)
    tok = mux.add(impl.AckFuture(), "s", None, b"", 2, 0.25)
    assert not lock.locked() and mux.lock is lock
    mux.stall_waiters.append(object())
    mux.on_msg(Msg(PREFIX + tok, b'{"stream":"S","seq":1}'))
    tok = mux.add(impl.AckFuture(), "s", None, b"", 2, 0.25)
    mux.on_msg(Msg(PREFIX + tok, b"other"))
    assert not lock.locked() and mux.pops == 1 and len(mux.others) == 1


# --- ack deadlines ------------------------------------------------------------------
INF = float("inf")


def test_deadlines_live_in_the_records_with_one_timer(impl):
    mux = make(impl)
    assert mux.armed_at == INF
    t0 = time.monotonic()
    assert mux.submit(impl.AckFuture(), "s", b"1", 2, 0.25, lambda *a: None, 5.0) is None
    mux.submit(impl.AckFuture(), "s", b"2", 2, 0.25, lambda *a: None, 5.0)
    t1 = time.monotonic()
    d1, d2 = (f._pub[5] for f in mux.pending.values())
    assert list(mux.pending) == ["1", "2"] and t0 + 5 <= d1 <= d2 <= t1 + 5
    assert mux.arms == [d1] and mux.armed_at == d1  # armed once, for the earliest
    tok = mux.add(impl.AckFuture(), "s", None, b"3", 2, 0.25, 1.0)  # a shorter timeout: armed earlier
    assert tok == "3" and len(mux.arms) == 2 and mux.arms[1] == mux.armed_at == mux.pending["3"]._pub[5] < d1
    mux.add(impl.AckFuture(), "s", None, b"4", 2, 0.25)  # no deadline
    mux.submit(impl.AckFuture(), "s", b"5", 2, 0.25, lambda *a: None, None)
    assert mux.pending["4"]._pub[5] is None and mux.pending["5"]._pub[5] is None and len(mux.arms) == 2


@pytest.mark.parametrize("locked", [False, True])
def test_expire_fails_what_is_pending_frees_it_and_ignores_a_late_ack(impl, locked):
    lock = impl.Lock() if locked else None
    mux = make(impl, lock=lock)
    futs = [impl.AckFuture() for _ in range(4)]
    t0 = time.monotonic()
    for i, f in enumerate(futs):
        mux.submit(f, "s", b"%d" % i, 2, 0.25, lambda *a: None, 2.0 if i < 3 else None)
    at = mux.armed_at
    mux.on_msg(Msg(PREFIX + "2", b'{"stream":"S","seq":2}'))  # answered in time
    assert mux.expire(t0 + 1.0, at) == 0 and not mux.expired  # nothing due yet (a timer fired early) ...
    assert mux.armed_at == mux.pending["1"]._pub[5] == at and mux.arms == [at, at]  # ... re-arms
    assert mux.expire(time.monotonic() + 2.0, at) == 2
    assert mux.expired == [futs[0], futs[2]] and [f._pub[2] for f in mux.expired] == [b"0", b"2"]
    assert list(mux.pending) == ["4"]  # the window is freed
    assert mux.armed_at == INF and mux.arms == [at, at]  # nothing left to time
    assert not futs[0].done()  # failing the futures is the subclass's (_expired)
    mux.on_msg(Msg(PREFIX + "1", b'{"stream":"S","seq":1}'))  # late acks: ignored
    mux.on_msg(Msg(PREFIX + "3", b'{"stream":"S","seq":3}'))
    assert not futs[0].done() and not futs[2].done() and not mux.others and mux.pops == 0
    assert futs[1].result(0).seq == 2
    if lock is not None:
        assert not lock.locked()


def test_the_live_timer_rearms_for_the_earliest_deadline_stale_ones_do_not(impl):
    mux = make(impl)
    t0 = time.monotonic()
    mux.add(impl.AckFuture(), "s", None, b"", 2, 0.25, 1.0)
    first = mux.armed_at
    mux.add(impl.AckFuture(), "s", None, b"", 2, 0.25, 10.0)
    mux.add(impl.AckFuture(), "s", None, b"", 2, 0.25, 0.5)  # earlier: a new live timer
    live = mux.armed_at
    assert mux.arms == [first, live] and live < first
    assert mux.expire(first + 0.001, first) == 2  # the stale timer expires what is due ...
    assert mux.armed_at == live and mux.arms == [first, live]  # ... and arms nothing
    assert mux.expire(live, live) == 0  # the live one: the next deadline is the 10 s one
    nxt = mux.pending["2"]._pub[5]
    assert mux.armed_at == nxt and mux.arms[-1] == nxt and t0 + 10 <= nxt
    # a deadline that is (nearly) due re-arms at least the grain later: publishes made
    # microseconds apart expire together
    mux.add(impl.AckFuture(), "s", None, b"", 2, 0.25, 10.0)
    assert mux.expire(nxt, nxt) == 1
    assert list(mux.pending) == ["4"]
    assert mux.armed_at == max(mux.pending["4"]._pub[5], nxt + 0.02) and mux.arms[-1] == mux.armed_at
    mux.on_msg(Msg(PREFIX + "4", b'{"stream":"S","seq":4}'))
    assert mux.expire(mux.armed_at, mux.armed_at) == 0 and mux.armed_at == INF  # nothing pending: no timer
    tok = mux.add(impl.AckFuture(), "s", None, b"", 2, 0.25, 3.0)  # a new deadline arms a new timer
    assert mux.arms[-1] == mux.armed_at == mux.pending[tok]._pub[5]
    mux.disarm()
    assert mux.armed_at == INF and list(mux.pending) == [tok]


def test_submit_with_a_deadline_that_fails_to_publish(impl):
    mux = make(impl)

    def failing(subject, data, reply):
        raise ConnectionError("closed")

    with pytest.raises(ConnectionError):
        mux.submit(impl.AckFuture(), "s", b"1", 2, 0.25, failing, 1.0)
    assert not mux.pending and len(mux.arms) == 1  # the timer finds nothing
    assert mux.expire(time.monotonic() + 2, mux.armed_at) == 0 and not mux.expired and mux.armed_at == INF
    with pytest.raises(TypeError):
        mux.submit(impl.AckFuture(), "s", b"2", 2, 0.25, lambda *a: None, "soon")
    assert not mux.pending  # a bad timeout registers nothing


def test_expiry_twins_agree():
    """The same publishes, acks and timer calls give the same outcome in both twins."""
    from jetwire import _impl

    outcomes = []
    for impl in _impl.implementations().values():
        mux = make(impl)
        base = time.monotonic()
        for i in range(30):
            mux.add(impl.AckFuture(), "s", None, b"%d" % i, 2, 0.25, (0.5, 1.0, None)[i % 3])
        for tok in ("2", "3", "7", "8", "20", "29"):
            mux.on_msg(Msg(PREFIX + tok, b'{"stream":"S","seq":1}'))
        counts = [mux.expire(base + dt) for dt in (0.2, 0.75, 1.5)]
        outcomes.append((counts, list(mux.pending), [f._pub[2] for f in mux.expired]))
    assert all(o == outcomes[0] for o in outcomes)
    counts, pending, _expired = outcomes[0]
    assert counts == [0, 9, 6]
    assert pending == [str(i + 1) for i in range(30) if i % 3 == 2 and i + 1 != 3]  # those without a deadline
