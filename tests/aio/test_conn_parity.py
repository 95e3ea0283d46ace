"""The last of nats.go's connection API, against real servers: ForceReconnect,
ReconnectToServer, StatusChanged (connection and subscription), Barrier, WebSocket
upgrade headers, SkipSubjectValidation, IgnoreDiscoveredServers, the TLS connection
state, subscription pending limits and PermissionErrOnSubscribe (asyncio source; the
blocking twin is generated)."""
from __future__ import annotations

import pytest

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims
from jetwire.testing.certs import client_ssl_context, make_tls_files, server_tls_config
from tests.aio._helpers import Collector, Errors, wait_until
from tests.aio.test_websocket import _Relay


class Statuses:
    """A status listener: every status it heard, in order."""

    def __init__(self) -> None:
        self.seen: list = []

    def __call__(self, status: str) -> None:
        self.seen.append(status)


# -- ForceReconnect ----------------------------------------------------------------------
async def test_force_reconnect_keeps_buffered_publishes_and_subscriptions(nats_server_factory):
    srv = nats_server_factory(jetstream=False)
    disconnected = prims.Signal()
    reconnected = prims.Signal()
    nc = await jetwire.connect(srv.url, disconnected_cb=disconnected.set, reconnected_cb=reconnected.set,
                               reconnect_time_wait=30)  # only a forced attempt can be this quick
    other = await jetwire.connect(srv.url)
    try:
        got = Collector(200)
        await nc.subscribe("force.x", cb=got)
        seen = await other.subscribe("force.y")
        await nc.flush()
        first_id = nc.client_id
        for i in range(100):  # queued, not yet written when force_reconnect is called
            await nc.publish("force.y", b"%d" % i)
        await nc.force_reconnect()
        for i in range(100, 200):  # published while reconnecting: the reconnect buffer
            await nc.publish("force.y", b"%d" % i)
        assert await disconnected.wait(5)
        assert await reconnected.wait(5)
        assert nc.is_connected and nc.stats["reconnects"] == 1
        assert nc.client_id != first_id  # a new connection
        assert [(await seen.next_msg(timeout=5)).data for _ in range(200)] == [b"%d" % i for i in range(200)]
        for i in range(200):  # the subscription was restored
            await other.publish("force.x", b"%d" % i)
        await other.flush()
        assert len(await got.wait(10)) == 200
    finally:
        await nc.close()
        await other.close()
    with pytest.raises(jetwire.ConnectionClosedError):
        await nc.force_reconnect()


async def test_force_reconnect_while_reconnecting_tries_at_once(fresh_nats_server):
    srv = fresh_nats_server
    reconnected = prims.Signal()
    nc = await jetwire.connect(srv.url, reconnect_time_wait=60, reconnect_jitter=0, max_reconnect_attempts=-1,
                               reconnected_cb=reconnected.set)
    try:
        srv.kill()
        assert await wait_until(lambda: nc.is_reconnecting, 10)  # its next attempt is a minute away
        srv.start()
        assert not await reconnected.wait(0.5)
        await nc.force_reconnect()
        assert await reconnected.wait(10)
        await nc.flush()
    finally:
        await nc.close()


# -- ReconnectToServer -------------------------------------------------------------------
async def test_reconnect_to_server_cb_chooses_the_server_and_the_delay(nats_server_factory):
    a = nats_server_factory(jetstream=False)
    b = nats_server_factory(jetstream=False)
    asked: list = []

    def choose(servers, info):
        asked.append((list(servers), info))
        return servers[1], 0.01  # always the second one of the list

    reconnected = prims.Signal()
    nc = await jetwire.connect([a.url, b.url], dont_randomize=True, reconnect_to_server_cb=choose,
                               reconnected_cb=reconnected.set)
    try:
        assert nc.connected_url == a.url
        a_id = nc.server_info["server_id"]
        await nc.force_reconnect()
        assert await reconnected.wait(10)
        assert nc.connected_url == b.url
        servers, info = asked[0]
        assert servers == [a.url, b.url]
        assert info["server_id"] == a_id  # the last INFO: the server it was connected to
        assert nc.server_info["server_id"] != a_id
    finally:
        await nc.close()


async def test_reconnect_to_server_cb_with_an_unknown_server_is_reported(nats_server_factory):
    srv = nats_server_factory(jetstream=False)
    errs = Errors()
    reconnected = prims.Signal()

    def choose(servers, info):
        return "nats://127.0.0.1:1", 0  # not in the pool

    nc = await jetwire.connect(srv.url, reconnect_to_server_cb=choose, error_cb=errs,
                               reconnected_cb=reconnected.set)
    try:
        await nc.force_reconnect()
        assert await reconnected.wait(10)  # the usual choice was used
        assert await wait_until(lambda: errs.errors, 5)
        assert isinstance(errs.errors[0], jetwire.NatsError)
        assert "not in the pool" in str(errs.errors[0])
    finally:
        await nc.close()


async def test_reconnect_to_server_cb_that_raises_is_reported(nats_server_factory):
    srv = nats_server_factory(jetstream=False)
    errs = Errors()
    reconnected = prims.Signal()

    def choose(servers, info):
        raise RuntimeError("no idea")

    nc = await jetwire.connect(srv.url, reconnect_to_server_cb=choose, error_cb=errs,
                               reconnected_cb=reconnected.set)
    try:
        await nc.force_reconnect()
        assert await reconnected.wait(10)
        assert await wait_until(lambda: errs.errors, 5)
        assert "no idea" in str(errs.errors[0])
    finally:
        await nc.close()


# -- StatusChanged -----------------------------------------------------------------------
async def test_connection_status_listener_sees_each_transition_once(nats_server_factory):
    srv = nats_server_factory(jetstream=False)
    nc = await jetwire.connect(srv.url)
    heard = Statuses()
    removed = Statuses()
    remove = nc.add_status_listener(heard)
    nc.add_status_listener(removed)()  # added, then removed at once
    await nc.force_reconnect()
    assert await wait_until(lambda: heard.seen[-1:] == [nc.status] == ["CONNECTED"], 10)
    assert heard.seen == ["DISCONNECTED", "RECONNECTING", "CONNECTED"]
    await nc.drain()
    assert await wait_until(lambda: heard.seen[-1:] == ["CLOSED"], 5)
    assert heard.seen[3:] == ["DRAINING_SUBS", "DRAINING_PUBS", "CLOSED"]
    assert removed.seen == []
    remove()
    remove()  # twice is harmless


async def test_no_status_after_close(nats_server_factory):
    srv = nats_server_factory(jetstream=False)
    nc = await jetwire.connect(srv.url)
    heard = Statuses()
    nc.add_status_listener(heard)
    await nc.close()
    srv.stop()
    await nc.close()
    assert await wait_until(lambda: heard.seen == ["CLOSED"], 5)
    with pytest.raises(jetwire.ConnectionClosedError):
        await nc.flush()
    assert heard.seen == ["CLOSED"]


async def test_subscription_status_listener(nats_url):
    nc = await jetwire.connect(nats_url, error_cb=Errors())
    try:
        sub = await nc.subscribe("substatus.x", pending_msgs_limit=5)
        heard = Statuses()
        sub.add_status_listener(heard)
        assert sub.status == "active"
        for i in range(10):
            await nc.publish("substatus.x", b"%d" % i)
        await nc.flush()
        assert await wait_until(lambda: heard.seen == ["slow_consumer"], 5)
        assert sub.status == "slow_consumer"
        for _ in range(5):
            await sub.next_msg(timeout=1)
        assert await wait_until(lambda: heard.seen == ["slow_consumer", "active"], 5)
        await sub.drain()
        assert await wait_until(lambda: heard.seen == ["slow_consumer", "active", "draining", "closed"], 5)

        other = await nc.subscribe("substatus.y")
        gone = Statuses()
        remove = other.add_status_listener(gone)
        await other.unsubscribe()
        assert await wait_until(lambda: gone.seen == ["closed"], 5)
        remove()

        last = await nc.subscribe("substatus.z", max_msgs=1)
        done = Statuses()
        last.add_status_listener(done)
        await nc.publish("substatus.z", b"only")
        assert (await last.next_msg(timeout=5)).data == b"only"
        assert await wait_until(lambda: done.seen == ["closed"], 5)  # auto-unsubscribed
    finally:
        await nc.close()


# -- Barrier -----------------------------------------------------------------------------
async def test_barrier_runs_after_the_callbacks_already_dispatched(nats_url):
    nc = await jetwire.connect(nats_url)
    try:
        handled: list = []
        release = prims.Signal()
        blocked = prims.Signal()

        async def slow(msg):
            await prims.sleep(0.02)
            handled.append(msg.data)

        async def blocker(msg):
            blocked.set()
            await release.wait(10)

        await nc.subscribe("barrier.slow", cb=slow)
        await nc.subscribe("barrier.block", cb=blocker)
        for i in range(5):
            await nc.publish("barrier.slow", b"%d" % i)
        await nc.flush()  # the five are here (dispatched) before the barrier
        ran: list = []
        done = prims.Signal()

        def fn():
            ran.append(list(handled))
            done.set()

        await nc.barrier(fn)
        # later messages are not waited for: neither these five nor a callback that blocks
        for i in range(5, 10):
            await nc.publish("barrier.slow", b"%d" % i)
        await nc.publish("barrier.block", b"x")
        await nc.flush()
        assert await blocked.wait(5)
        assert await done.wait(10)
        # the five dispatched before it were handled (fn runs on the runner that reaches
        # the last mark: usually the slow one, right after its fifth)
        assert len(ran) == 1 and ran[0][:5] == [b"%d" % i for i in range(5)]
        release.set()
        assert await wait_until(lambda: len(handled) == 10, 5)
        assert len(ran) == 1
    finally:
        await nc.close()
    with pytest.raises(jetwire.ConnectionClosedError):
        await nc.barrier(lambda: None)


async def test_barrier_without_callback_subscriptions_runs_soon(nats_url):
    nc = await jetwire.connect(nats_url)
    try:
        await nc.subscribe("barrier.none")  # no callback: not waited for
        done = prims.Signal()
        await nc.barrier(done.set)
        assert await done.wait(5)
        # a subscription being unsubscribed while its callback runs: the barrier still fires
        release = prims.Signal()
        started = prims.Signal()

        async def hold(msg):
            started.set()
            await release.wait(10)

        sub = await nc.subscribe("barrier.hold", cb=hold)
        await nc.publish("barrier.hold", b"1")
        await nc.publish("barrier.hold", b"2")
        assert await started.wait(5)
        fired = prims.Signal()
        await nc.barrier(fired.set)
        await sub.unsubscribe()
        assert not fired.is_set()
        release.set()
        assert await fired.wait(5)
    finally:
        await nc.close()


# -- WebSocket headers -------------------------------------------------------------------
async def test_ws_headers_reach_the_upgrade_request(nats_ws_server):
    relay = _Relay(nats_ws_server.ws_port)
    try:
        nc = await jetwire.connect(relay.url, ws_headers={"X-Team": "blue", "X-Multi": ["a", "b"]})
        try:
            await nc.flush()
            head = relay.heads[0]
            assert b"\r\nX-Team: blue\r\n" in head
            assert b"\r\nX-Multi: a\r\n" in head and b"\r\nX-Multi: b\r\n" in head
            assert "blue" not in repr(nc._core.opts)  # values may be credentials
        finally:
            await nc.close()

        asked: list = []

        def headers():
            asked.append(1)
            return {"Authorization": f"Bearer t{len(asked)}"}

        reconnected = prims.Signal()
        nc = await jetwire.connect(relay.url, ws_headers_cb=headers, reconnect_time_wait=0.05,
                                   reconnected_cb=reconnected.set)
        try:
            await nc.force_reconnect()
            assert await reconnected.wait(10)
            await nc.flush()
            assert b"\r\nAuthorization: Bearer t1\r\n" in relay.heads[1]
            assert b"\r\nAuthorization: Bearer t2\r\n" in relay.heads[2]  # asked on every connect
        finally:
            await nc.close()
    finally:
        relay.close()


async def test_bad_ws_headers_raise_before_connecting():
    with pytest.raises(ValueError):
        await jetwire.connect("ws://127.0.0.1:1", ws_headers={"Host": "elsewhere"})
    with pytest.raises(ValueError):
        await jetwire.connect("ws://127.0.0.1:1", ws_headers={"X-A": "1\r\nX-B: 2"})
    with pytest.raises(ValueError):
        await jetwire.connect("ws://127.0.0.1:1", ws_headers={"X-A": "1"}, ws_headers_cb=lambda: {})
    with pytest.raises(TypeError):
        await jetwire.connect("ws://127.0.0.1:1", ws_headers=["X-A: 1"])


# -- skip_subject_validation, ignore_discovered_servers -----------------------------------
async def test_skip_subject_validation(nats_url):
    nc = await jetwire.connect(nats_url)
    try:
        with pytest.raises(jetwire.BadSubjectError):
            await nc.subscribe("skip.*x")
        with pytest.raises(jetwire.BadSubjectError):
            await nc.publish("skip..x", b"")
    finally:
        await nc.close()
    errs = Errors()
    nc = await jetwire.connect(nats_url, skip_subject_validation=True, error_cb=errs)
    try:
        sub = await nc.subscribe("skip.*x")  # the server takes '*x' as a plain token
        await nc.publish("skip.*x", b"1")
        assert (await sub.next_msg(timeout=5)).data == b"1"
        await nc.publish("skip..x", b"2", headers={"A": "b"})  # left to the server
        await nc.publish("skip..x", b"3")
        await nc.flush()
        # what would break the protocol line is still refused
        with pytest.raises(jetwire.BadSubjectError):
            await nc.publish("skip x", b"")
        with pytest.raises(jetwire.BadSubjectError):
            await nc.subscribe("skip\tx")
        await nc.force_reconnect()  # restored as it was made
        await nc.flush()
        assert await wait_until(lambda: nc.is_connected, 10)
        await nc.publish("skip.*x", b"4")
        assert (await sub.next_msg(timeout=5)).data == b"4"
        assert nc.is_connected
    finally:
        await nc.close()


async def test_ignore_discovered_servers(nats_cluster_factory):
    cluster = nats_cluster_factory(2, jetstream=False)
    nc = await jetwire.connect(cluster[0].url)
    try:
        assert await wait_until(lambda: nc.discovered_servers, 10)
    finally:
        await nc.close()
    nc = await jetwire.connect(cluster[0].url, ignore_discovered_servers=True)
    try:
        await nc.flush()
        assert nc.server_info.get("connect_urls")  # announced, and left out
        assert nc.discovered_servers == [] and nc.servers == [cluster[0].url]
    finally:
        await nc.close()


# -- TLS connection state ----------------------------------------------------------------
async def test_tls_info(nats_server_factory, tmp_path, nats_url):
    files = make_tls_files(tmp_path)
    srv = nats_server_factory(tls=server_tls_config(files))
    nc = await jetwire.connect(srv.url, tls=client_ssl_context(files))
    try:
        info = nc.tls_info
        assert info is not None
        assert info["version"].startswith("TLS")
        assert isinstance(info["cipher"], str) and info["cipher"]
        assert info["peer_cert"]["subject"]  # verified: decoded
        assert isinstance(info["peer_cert_der"], bytes) and info["peer_cert_der"]
    finally:
        await nc.close()
    assert nc.tls_info is None
    plain = await jetwire.connect(nats_url)
    try:
        assert plain.tls_info is None
    finally:
        await plain.close()


# -- pending limits ----------------------------------------------------------------------
async def test_set_pending_limits(nats_url):
    nc = await jetwire.connect(nats_url, pending_msgs_limit=1000, pending_bytes_limit=-1, error_cb=Errors())
    try:
        sub = await nc.subscribe("plimits.x")
        assert sub.pending_limits == (1000, -1)
        sub.set_pending_limits(10, 1 << 20)
        assert sub.pending_limits == (10, 1 << 20)
        for i in range(20):
            await nc.publish("plimits.x", b"%d" % i)
        await nc.flush()
        assert sub.pending_msgs == 10 and sub.dropped == 10
        for bad in ((0, 1), (1, 0), ("10", 1), (1, 1.5), (True, 1)):
            with pytest.raises(ValueError):
                sub.set_pending_limits(*bad)
        assert sub.pending_limits == (10, 1 << 20)
        sub.set_pending_limits(-1, -1)
        assert sub.pending_limits == (-1, -1)
        await sub.unsubscribe()
        with pytest.raises(jetwire.SubscriptionClosedError):
            sub.set_pending_limits(5, 5)
        assert nc.is_connected
    finally:
        await nc.close()


# -- PermissionErrOnSubscribe --------------------------------------------------------------
_LIMITED = {"users": [{"user": "limited", "password": "pw",
                       "permissions": {"subscribe": {"allow": ["allowed.>", "_INBOX.>"]}}}]}


async def test_permission_err_on_subscribe(nats_server_factory):
    srv = nats_server_factory(auth=_LIMITED, jetstream=False)
    errs = Errors()
    nc = await jetwire.connect(srv.url, user="limited", password="pw", permission_err_on_subscribe=True,
                               error_cb=errs)
    try:
        denied = await nc.subscribe("denied.x")
        with pytest.raises(jetwire.PermissionViolationError) as info:
            await denied.next_msg(timeout=5)
        assert info.value.subject == "denied.x"
        assert isinstance(info.value, jetwire.PermissionsError)
        with pytest.raises(jetwire.PermissionViolationError):
            async for _ in denied:
                pass
        assert await wait_until(lambda: errs.errors, 5)
        assert isinstance(errs.errors[0], jetwire.PermissionViolationError)
        ok = await nc.subscribe("allowed.x")
        await nc.publish("allowed.x", b"yes")
        assert (await ok.next_msg(timeout=5)).data == b"yes"
        assert nc.is_connected
    finally:
        await nc.close()


async def test_permission_err_on_subscribe_off_only_reports(nats_server_factory):
    srv = nats_server_factory(auth=_LIMITED, jetstream=False)
    errs = Errors()
    nc = await jetwire.connect(srv.url, user="limited", password="pw", error_cb=errs)
    try:
        denied = await nc.subscribe("denied.y")
        assert await errs.signal.wait(5)
        assert isinstance(errs.errors[0], jetwire.PermissionsError)
        with pytest.raises(jetwire.TimeoutError):
            await denied.next_msg(timeout=0.2)
        assert nc.is_connected
    finally:
        await nc.close()
