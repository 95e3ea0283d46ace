"""The default ack deadline of ``publish_async`` against a frozen server (SIGSTOP): every
future fails with ``TimeoutError`` after its deadline, the window frees, a late ack is
ignored and publishing resumes after SIGCONT (asyncio source; the blocking twin is
generated)."""
from __future__ import annotations

import time

import pytest

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims
from tests.aio._helpers import uniq, wait_until


async def result(fut, timeout: float = 5.0):
    """The value of a ``publish_async`` future (either flavour)."""
    return await prims.wait_future(fut, timeout)


async def stream(js) -> str:
    """A new memory stream on ``<prefix>.>``; returns the prefix (the name in lower case)."""
    name = uniq()
    await js.create_stream(name=name, subjects=[f"{name.lower()}.>"], storage="memory")
    return name.lower()


async def test_default_deadline_fails_futures_frees_the_window_and_ignores_late_acks(fresh_nats_server):
    srv = fresh_nats_server
    failed: list = []
    nc = await jetwire.connect(srv.url)
    try:
        # the default deadline is the context's timeout (what js.publish waits)
        js = nc.jetstream(timeout=0.5, publish_async_max_pending=50,
                          publish_async_err_cb=lambda msg, err: failed.append((msg.data, err)))
        p = await stream(js)
        assert (await result(await js.publish_async(f"{p}.x", b"first"))).seq == 1
        srv.freeze()
        try:
            t0 = time.monotonic()
            plain = [await js.publish_async(f"{p}.x", b"p%d" % i) for i in range(30)]  # the compiled path
            with_ids = [await js.publish_async(f"{p}.x", b"m%d" % i, msg_id=f"m{i}") for i in range(19)]
            unbounded = await js.publish_async(f"{p}.x", b"u", timeout=None)  # explicitly no deadline
            assert js.publish_async_pending() == 50  # the window is full
            # a full window frees at the deadline: this publish waits for room instead of
            # raising TooManyStalledMsgsError
            late = await js.publish_async(f"{p}.x", b"late", stall_wait=3.0)
            stalled = time.monotonic() - t0
            assert 0.45 <= stalled < 1.5, stalled
            assert await wait_until(lambda: all(f.done() for f in plain + with_ids), 1.5)
            elapsed = time.monotonic() - t0
            assert elapsed < 0.5 + 1.0, elapsed
            for f in plain + with_ids:
                with pytest.raises(jetwire.TimeoutError):
                    await result(f, 0)
            assert not unbounded.done() and not late.done()
            assert js.publish_async_pending() == 2  # the expired ones left the window
            assert await wait_until(lambda: len(failed) == 49, 5)
            assert sorted(d for d, _ in failed) == sorted([b"p%d" % i for i in range(30)] +
                                                          [b"m%d" % i for i in range(19)])
            assert all(isinstance(e, jetwire.TimeoutError) for _, e in failed)
            assert with_ids[3].msg.headers["Nats-Msg-Id"] == "m3"  # what to publish again
        finally:
            srv.thaw()
        # the server stores the backlog and answers it: the expired futures stay failed
        # (those late acks are ignored), the others resolve, publishing goes on
        assert (await result(unbounded)).seq == 51
        assert (await result(late)).seq == 52
        assert (await result(await js.publish_async(f"{p}.x", b"after"))).seq == 53
        await js.publish_async_complete(timeout=5)
        for f in plain + with_ids:
            assert isinstance(f.exception(), jetwire.TimeoutError)
        # publishing the timed-out ones again with their ids stores nothing twice
        again = [await js.publish_async(f.msg.subject, f.msg.data, msg_id=f.msg.headers["Nats-Msg-Id"])
                 for f in with_ids]
        acks = [await result(f) for f in again]
        assert all(a.duplicate for a in acks)
        assert js.publish_async_pending() == 0
        assert len(failed) == 49
    finally:
        await nc.close()


async def test_complete_returns_once_every_future_timed_out(fresh_nats_server):
    """``publish_async_complete()`` with no timeout returns once the deadlines passed."""
    srv = fresh_nats_server
    nc = await jetwire.connect(srv.url)
    try:
        js = nc.jetstream(publish_async_timeout=0.4)  # per context; timeout (5 s) stays for publish
        p = await stream(js)
        srv.freeze()
        try:
            t0 = time.monotonic()
            futs = [await js.publish_async(f"{p}.x", b"%d" % i) for i in range(100)]
            longer = await js.publish_async(f"{p}.x", b"longer", timeout=0.8)  # per call
            await js.publish_async_complete()
            elapsed = time.monotonic() - t0
            assert 0.75 <= elapsed < 0.8 + 1.0, elapsed
            assert all(isinstance(f.exception(), jetwire.TimeoutError) for f in [*futs, longer])
            assert js.publish_async_pending() == 0
        finally:
            srv.thaw()
        assert (await result(await js.publish_async(f"{p}.x", b"after"))).seq == 102
    finally:
        await nc.close()


async def test_no_deadline_per_context(fresh_nats_server):
    srv = fresh_nats_server
    nc = await jetwire.connect(srv.url)
    try:
        js = nc.jetstream(timeout=0.3, publish_async_timeout=None)
        p = await stream(js)
        srv.freeze()
        try:
            futs = [await js.publish_async(f"{p}.x", b"%d" % i) for i in range(5)]
            timed = await js.publish_async(f"{p}.x", b"t", timeout=0.3)
            assert await wait_until(timed.done, 2)
            assert isinstance(timed.exception(), jetwire.TimeoutError)
            await prims.sleep(0.5)  # well past the context's timeout: no deadline
            assert not any(f.done() for f in futs) and js.publish_async_pending() == 5
        finally:
            srv.thaw()
        assert [(await result(f)).seq for f in futs] == [1, 2, 3, 4, 5]
    finally:
        await nc.close()


async def test_bad_deadlines_raise_before_anything_is_sent(nats_url):
    nc = await jetwire.connect(nats_url)
    try:
        for bad in (0, -1, "5", True, float("nan")):
            with pytest.raises(jetwire.InvalidOptionError):
                nc.jetstream(publish_async_timeout=bad)
        js = nc.jetstream()
        name = uniq()
        p = name.lower()
        await js.create_stream(name=name, subjects=[f"{p}.>"], storage="memory")
        for bad in (0, -0.5, "1", float("nan")):
            with pytest.raises(jetwire.InvalidOptionError):
                await js.publish_async(f"{p}.x", b"x", timeout=bad)
        assert js.publish_async_pending() == 0
        f = await js.publish_async(f"{p}.x", b"ok", timeout=float("inf"))  # no deadline
        assert (await result(f)).seq == 1
        await js.delete_stream(name)
    finally:
        await nc.close()
