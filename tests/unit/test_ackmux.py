"""AckMux: the per-ack path of the JetStream async-publish mux, for both implementations."""
from __future__ import annotations

import asyncio
import concurrent.futures as cf
import json

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jetwire.jetstream.models import PubAck
from jetwire.msg import Msg

PREFIX = "_INBOX.mux."


def make(impl, make_ack=PubAck.plain, lock=None):
    class Mux(impl.AckMux):
        __slots__ = ("others", "pops")

        def __init__(self) -> None:
            super().__init__(PREFIX, make_ack, lock)
            self.others: list = []
            self.pops = 0

        def _other(self, msg, token, entry):
            self.others.append((msg, token, entry))

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


def test_add_tokens_and_entries(impl):
    mux = make(impl)
    f = impl.AckFuture()
    t1 = mux.add(f, "s.x", None, b"d", 2, 0.25)
    t2 = mux.add(f, "s.y", b"NATS/1.0\r\n\r\n", b"e", -1, 1.0)
    assert (t1, t2) == ("1", "2") and mux._n == 2
    assert mux.pending == {"1": (f, "s.x", None, b"d", 2, 0.25), "2": (f, "s.y", b"NATS/1.0\r\n\r\n", b"e", -1, 1.0)}
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
    ((token, entry),) = mux.pending.items()
    assert sent == [("orders.new", b"x", PREFIX + token)]
    assert entry == (fut, "orders.new", None, b"x", 2, 0.25)
    mux.on_msg(Msg(PREFIX + token, b'{"stream":"S","seq":7}'))
    assert fut.result(0) == PubAck(stream="S", seq=7) and not mux.pending


def test_submit_forgets_the_entry_when_publish_raises(impl):
    mux = make(impl)

    def failing(subject, data, reply):
        raise ConnectionError("closed")

    mux.submit(impl.AckFuture(), "s", b"1", 2, 0.25, lambda *a: None)  # stays pending
    with pytest.raises(ConnectionError):
        mux.submit(impl.AckFuture(), "s", b"2", 2, 0.25, failing)
    assert [e[3] for e in mux.pending.values()] == [b"1"] and mux.pops == 0  # nobody waits
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
    entry = mux.pending[tok]
    msg = Msg(PREFIX + tok, data)
    mux.on_msg(msg)
    assert not fut.done() and not mux.pending
    assert mux.others == [(msg, tok, entry)]


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
