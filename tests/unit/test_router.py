"""Router and SubState: the receive hot path, for both implementations."""
from __future__ import annotations

import asyncio
import gc
import os
from collections import deque

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st


class Signal:
    def __init__(self) -> None:
        self.sets = 0

    def set(self) -> None:
        self.sets += 1


def make_sub(impl, client="client", pmsgs=1 << 62, pbytes=1 << 62, max_msgs=0, direct=None):
    sub = impl.SubState()
    sub._client = client
    sub._pending = deque()
    sub._signal = Signal()
    sub._pmsgs_limit = pmsgs
    sub._pbytes_limit = pbytes
    sub._max = max_msgs
    sub._direct = direct
    return sub


class Core:
    """What ConnectionCore gives the router: the subs dict and three callbacks, logged."""

    def __init__(self, impl, msg_cls) -> None:
        self.log: list = []
        self.subs: dict = {}
        self.router = impl.Router(impl.Parser(msg_cls), self.subs, self.log.append,
                                  lambda sub: self.log.append(("max", sub)), lambda sub: self.log.append(("slow", sub)))


def msg(sid, data=b"x", subject="s"):
    return b"MSG %s %d %d\r\n%s\r\n" % (subject.encode(), sid, len(data), data)


def test_defaults(impl):
    sub = impl.SubState()
    assert sub._client is None and sub._direct is None and sub._pending is None and sub._signal is None
    assert sub._lock is None
    assert sub.delivered == 0 and sub._max == 0 and sub._pending_bytes == 0 and sub._dropped == 0
    assert sub._pmsgs_limit == 0 and sub._pbytes_limit == 0 and sub._slow is False
    r = impl.Router(impl.Parser(), {})
    assert r.in_msgs == 0 and r.in_bytes == 0 and r.control is None
    with pytest.raises(TypeError):
        impl.Router(impl.Parser(), [])


def test_queue_and_counters(impl, msg_cls):
    c = Core(impl, msg_cls)
    a, b = make_sub(impl), make_sub(impl)
    c.subs.update({1: a, 2: b})
    c.router.feed(msg(1, b"one") + b"PING\r\n" + msg(2, b"two!") + msg(3, b"nobody") + msg(1, b"1b"))
    assert c.log == [(impl.OP_PING, None)]
    assert [m.data for m in a._pending] == [b"one", b"1b"] and [m.data for m in b._pending] == [b"two!"]
    assert a._pending_bytes == 5 and b._pending_bytes == 4
    assert a.delivered == 2 and b.delivered == 1
    assert c.router.in_msgs == 4 and c.router.in_bytes == 3 + 4 + 6 + 2  # unknown sids count too
    assert a._signal.sets == 1 and b._signal.sets == 1
    assert all(m._client is None for m in a._pending)  # bound only when handed out
    c.router.feed(msg(1, b"more"))
    assert a._signal.sets == 1  # the queue was not empty: no new wake-up
    a._pending.clear()
    a._pending_bytes = 0
    c.router.feed(msg(1) + msg(1))
    assert a._signal.sets == 2


def test_control_events_keep_stream_order(impl, msg_cls):
    sub = make_sub(impl)
    seen = []
    c = Core(impl, msg_cls)
    c.subs[1] = sub
    c.router.control = lambda ev: seen.append((ev, len(sub._pending)))
    c.router.feed(msg(1) + b"PONG\r\n" + msg(1) + msg(1) + b'INFO {"a":1}\r\n' + b"+OK\r\n" + b"-ERR 'x'\r\n")
    assert seen == [((impl.OP_PONG, None), 1), ((impl.OP_INFO, {"a": 1}), 3), ((impl.OP_OK, None), 3),
                    ((impl.OP_ERR, "x"), 3)]


def test_direct_handler(impl, msg_cls):
    got = []
    c = Core(impl, msg_cls)
    sub = make_sub(impl, client="the-client", direct=lambda m: got.append((m.data, m._client)), max_msgs=1)
    c.subs[7] = sub
    c.router.feed(msg(7, b"a") + msg(7, b"b"))
    # direct handlers get every message, bound, and ignore limits and max
    assert got == [(b"a", "the-client"), (b"b", "the-client")]
    assert sub.delivered == 2 and not sub._pending and sub._signal.sets == 0 and c.log == []


def test_auto_unsubscribe(impl, msg_cls):
    c = Core(impl, msg_cls)
    sub = make_sub(impl, max_msgs=2)
    c.subs[1] = sub
    c.router.feed(msg(1, b"1") + msg(1, b"2") + msg(1, b"3"))
    assert [m.data for m in sub._pending] == [b"1", b"2"]
    assert sub.delivered == 2 and c.log == [("max", sub)]  # once, at the last one
    c.router.feed(msg(1, b"4"))
    assert sub.delivered == 2 and len(sub._pending) == 2 and c.log == [("max", sub)]
    assert c.router.in_msgs == 4


def test_slow_consumer_limits(impl, msg_cls):
    c = Core(impl, msg_cls)
    by_count = make_sub(impl, pmsgs=2)
    by_bytes = make_sub(impl, pbytes=5)
    c.subs.update({1: by_count, 2: by_bytes})
    c.router.feed(msg(1) + msg(1) + msg(1) + msg(1) + msg(2, b"abc") + msg(2, b"de") + msg(2, b"f"))
    assert len(by_count._pending) == 2 and by_count._dropped == 2 and by_count._slow
    assert [m.data for m in by_bytes._pending] == [b"abc", b"de"] and by_bytes._dropped == 1 and by_bytes._slow
    assert c.log == [("slow", by_count), ("slow", by_bytes)]  # reported once each
    assert by_count.delivered == 4  # dropped messages count as delivered (like nats-py)
    by_count._slow = False
    c.router.feed(msg(1))
    assert c.log[-1] == ("slow", by_count) and by_count._dropped == 3


def test_exception_from_a_callback_propagates(impl, msg_cls):
    c = Core(impl, msg_cls)
    sub = make_sub(impl)
    boom = make_sub(impl, direct=lambda m: 1 / 0)
    c.subs.update({1: sub, 2: boom})
    with pytest.raises(ZeroDivisionError):
        c.router.feed(msg(1) + msg(2) + msg(1))
    assert len(sub._pending) == 1 and c.router.in_msgs == 0 and sub._signal.sets == 0
    c.router.feed(msg(1))  # the subscription touched before is signalled now
    assert len(sub._pending) == 2 and sub._signal.sets == 1 and c.router.in_msgs == 1


def test_route_checks_types(impl, msg_cls):
    r = impl.Router(impl.Parser(msg_cls), {1: object()}, None, None, None)
    with pytest.raises(TypeError):
        r.feed(msg(1))
    r = impl.Router(impl.Parser(msg_cls), {})
    with pytest.raises(TypeError):
        r.route([object()])
    with pytest.raises(TypeError):
        r.route((impl.OP_PING, None))


def test_next_binds_and_counts(impl, msg_cls):
    c = Core(impl, msg_cls)
    sub = make_sub(impl, client="cl")
    c.subs[1] = sub
    c.router.feed(msg(1, b"abc") + msg(1, b"de"))
    m = sub._next()
    assert m.data == b"abc" and m._client == "cl" and sub._pending_bytes == 2
    m = sub._next()
    assert m.data == b"de" and m._client == "cl" and sub._pending_bytes == 0
    assert sub._next() is None and sub._next() is None


@pytest.mark.compiled_only
def test_compiled_queued_messages_stay_untracked(all_impls):
    assert "compiled" in all_impls, "the compiled extension is not importable"
    impl = all_impls["compiled"]

    class Msg(impl.MsgBase):
        __slots__ = ()

    client = object()
    got = []
    sub = make_sub(impl, client=client)
    direct = make_sub(impl, client=client, direct=got.append)
    r = impl.Router(impl.Parser(Msg), {1: sub, 2: direct})
    r.feed(msg(1) + msg(2))
    assert not gc.is_tracked(sub._pending[0])  # only atomic fields while it waits
    assert got[0]._client is client and gc.is_tracked(got[0])
    m = sub._next()
    assert m._client is client and gc.is_tracked(m)


def test_deliver(impl, msg_cls):
    c = Core(impl, msg_cls)
    sub = make_sub(impl, client="cl")
    c.subs[1] = sub
    c.router.feed(b"".join(msg(1, b"%d" % i) for i in range(5)))
    seen, errors = [], []

    def cb(m):
        seen.append((m.data, m._client))
        if m.data == b"1":
            raise ValueError("cb failed")
        if m.data == b"3":
            return ("an awaitable", m.data)
        return 42 if m.data == b"2" else None  # a plain result is ignored

    class Awaitable:
        def __init__(self, v):
            self.v = v

        def __await__(self):
            return iter(())

    def cb2(m):
        r = cb(m)
        return Awaitable(r[1]) if isinstance(r, tuple) else r

    r = sub._deliver(cb2, errors.append)
    assert isinstance(r, Awaitable) and r.v == b"3"
    assert [d for d, _ in seen] == [b"0", b"1", b"2", b"3"] and all(cl == "cl" for _, cl in seen)
    assert [str(e) for e in errors] == ["cb failed"]
    assert len(sub._pending) == 1 and sub._pending_bytes == 1
    assert sub._deliver(cb2, errors.append) is None
    assert [d for d, _ in seen] == [b"0", b"1", b"2", b"3", b"4"]
    assert sub._deliver(cb2, errors.append) is None and sub._pending_bytes == 0

    def stop(m):
        raise KeyboardInterrupt  # not an Exception: propagates

    c.router.feed(msg(1) + msg(1))
    with pytest.raises(KeyboardInterrupt):
        sub._deliver(stop, errors.append)
    assert len(sub._pending) == 1


def test_deliver_with_coroutine_callbacks(impl, msg_cls):
    c = Core(impl, msg_cls)
    sub = make_sub(impl)
    c.subs[1] = sub
    c.router.feed(msg(1, b"a") + msg(1, b"b"))
    seen = []

    async def cb(m):
        await asyncio.sleep(0)
        seen.append(m.data)

    async def run():
        while True:
            r = sub._deliver(cb, seen.append)
            if r is None:
                return
            await r

    asyncio.run(run())
    assert seen == [b"a", b"b"]


# ------------------------------------------------------------------ differential
events = st.lists(st.one_of(
    st.tuples(st.integers(1, 4), st.binary(max_size=6)),
    st.sampled_from([b"PING\r\n", b"PONG\r\n", b"+OK\r\n"]),
), max_size=40)
sub_specs = st.lists(st.tuples(st.integers(0, 5), st.integers(0, 20), st.integers(0, 4), st.booleans()),
                     min_size=3, max_size=3)


def _run(impl, msg_cls, spec, evs, drain_every):
    log = []
    subs = {}
    for sid, (pmsgs, pbytes, mx, direct) in enumerate(spec, start=1):
        s = make_sub(impl, client="c", pmsgs=pmsgs or 1 << 62, pbytes=pbytes or 1 << 62, max_msgs=mx,
                     direct=(lambda m, sid=sid: log.append(("direct", sid, m.data, m._client))) if direct else None)
        subs[sid] = s

    def on_max(sub):
        log.append(("max", sub.delivered))
        for k, v in list(subs.items()):
            if v is sub:
                del subs[k]

    r = impl.Router(impl.Parser(msg_cls), subs, lambda ev: log.append(ev), on_max,
                    lambda sub: log.append(("slow", sub._dropped)))
    all_subs = dict(subs)
    for i, ev in enumerate(evs):
        r.feed(ev if isinstance(ev, bytes) else msg(ev[0], ev[1]))
        if drain_every and i % drain_every == 0:
            for sid, s in all_subs.items():
                m = s._next()
                if m is not None:
                    log.append(("next", sid, m.data, m._client))
    for sid, s in all_subs.items():
        log.append((sid, s.delivered, s._dropped, s._slow, s._pending_bytes, s._signal.sets,
                    [m.data for m in s._pending]))
    log.append((r.in_msgs, r.in_bytes))
    return log


PROFILE = settings.get_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@settings(PROFILE, max_examples=max(10, PROFILE.max_examples // 8))
@given(sub_specs, events, st.integers(0, 3))
def test_router_agree(all_impls, make_msg_cls, spec, evs, drain_every):
    outcomes = [_run(mod, make_msg_cls(mod), spec, evs, drain_every) for mod in all_impls.values()]
    assert all(o == outcomes[0] for o in outcomes), outcomes
