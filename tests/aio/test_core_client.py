"""Core NATS client against a real nats-server (asyncio source; the blocking twin is generated).

Every test runs twice: over TCP and over WebSocket (the ``transport`` fixture). The
server fixtures below hand out servers with a websocket listener for the ``ws`` run, and
``url_for(server)`` is the URL to use for the run's transport."""
from __future__ import annotations

import os
import socket
import threading

import pytest
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, BytesMessage, Request

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims
from jetwire.testing.auth import make_operator_auth, new_nkey, nkey_user_auth
from jetwire.testing.certs import client_ssl_context, make_tls_files, server_tls_config
from tests.aio._helpers import Collector, Errors


@pytest.fixture(params=["tcp", "ws"])
def transport(request):
    """The module runs over TCP and over WebSocket."""
    return request.param


@pytest.fixture
def nats_url(request, transport):
    """The shared server's URL for this run's transport."""
    return request.getfixturevalue("nats_ws_url" if transport == "ws" else "nats_url")


@pytest.fixture
def nats_tcp_url(request, transport):
    """The TCP URL of the server behind ``nats_url`` (for raw-socket peers)."""
    if transport == "ws":
        request.getfixturevalue("nats_ws_url")  # brought back if a test stopped it
        return request.getfixturevalue("nats_ws_server").url
    return request.getfixturevalue("nats_url")


def _ws_block(kwargs):
    tls = kwargs.get("tls")
    if not tls:
        return True
    return {"tls": {k: v for k, v in tls.items() if k != "handshake_first"}}


@pytest.fixture
def nats_server_factory(nats_server_factory, transport):
    """Servers with a websocket listener (TLS like the client port) for the ws run."""
    if transport == "tcp":
        return nats_server_factory
    return lambda **kw: nats_server_factory(websocket=_ws_block(kw), **kw)


@pytest.fixture
def nats_cluster_factory(nats_cluster_factory, transport):
    if transport == "tcp":
        return nats_cluster_factory
    return lambda n=3, **kw: nats_cluster_factory(n, websocket=True, **kw)


@pytest.fixture
def fresh_nats_server(nats_server_factory):
    """A private server for this run's transport."""
    return nats_server_factory()


@pytest.fixture
def url_for(transport):
    """``url_for(server)``: the server's URL for this run's transport."""
    return (lambda srv: srv.ws_url) if transport == "ws" else (lambda srv: srv.url)


@pytest.fixture
def scheme(transport):
    """URL scheme of this run's transport: (plain, TLS)."""
    return ("ws", "wss") if transport == "ws" else ("nats", "tls")


async def test_roundtrip_exact_bytes(nats_url):
    nc = await jetwire.connect(nats_url)
    try:
        sub = await nc.subscribe("rt.bytes")
        await nc.flush()
        payloads = [b"", b"\r\n", b"MSG x 1 2\r\nab\r\n", bytes(range(256)) * 3, os.urandom(1024 * 1024)]
        for p in payloads:
            await nc.publish("rt.bytes", p)
        for p in payloads:
            msg = await sub.next_msg(timeout=5)
            assert msg.data == p
            assert msg.subject == "rt.bytes"
            assert msg.reply is None
            assert msg.headers is None
    finally:
        await nc.close()


async def test_headers_repeated_keys_and_non_ascii(nats_url):
    nc = await jetwire.connect(nats_url)
    try:
        sub = await nc.subscribe("rt.hdr")
        await nc.flush()
        h = jetwire.Headers()
        h.add("X-Multi", "one")
        h.add("X-Multi", "two")
        h["X-Unicode"] = "héllo wörld ✓"
        h["X-Colon"] = "a:b:c"
        await nc.publish("rt.hdr", b"body", headers=h)
        await nc.publish("rt.hdr", b"", headers={"K": ["v1", "v2"], "Single": "s"})
        m1 = await sub.next_msg(timeout=5)
        assert m1.data == b"body"
        assert m1.headers.get_all("X-Multi") == ["one", "two"]
        assert m1.headers["X-Unicode"] == "héllo wörld ✓"
        assert m1.headers["X-Colon"] == "a:b:c"
        m2 = await sub.next_msg(timeout=5)
        assert m2.data == b""
        assert m2.headers.get_all("K") == ["v1", "v2"]
        assert m2.headers["Single"] == "s"
        assert len(m2.headers) == 2
    finally:
        await nc.close()


async def test_invalid_header_key_raises_before_sending(nats_url):
    nc = await jetwire.connect(nats_url)
    try:
        with pytest.raises((ValueError, jetwire.NatsError)):
            await nc.publish("rt.badhdr", b"x", headers={"bad key": "v"})
        assert nc.stats["out_msgs"] == 0
        await nc.flush()
        assert nc.is_connected
    finally:
        await nc.close()


async def test_queue_groups_deliver_each_message_once(nats_url):
    nc = await jetwire.connect(nats_url)
    try:
        total = 200
        seen = Collector(total)
        a = await nc.subscribe("q.work", queue="workers", cb=seen)
        b = await nc.subscribe("q.work", queue="workers", cb=seen)
        await nc.flush()
        for i in range(total):
            await nc.publish("q.work", str(i).encode())
        msgs = await seen.wait()
        await nc.flush()
        assert sorted(int(m.data) for m in msgs) == list(range(total))
        assert a.delivered + b.delivered == total
        assert a.delivered > 0 and b.delivered > 0
        assert a.queue == "workers"
    finally:
        await nc.close()


async def test_wildcards(nats_url):
    nc = await jetwire.connect(nats_url)
    try:
        star = await nc.subscribe("w.*.end")
        full = await nc.subscribe("w.>")
        await nc.flush()
        await nc.publish("w.a.end", b"1")
        await nc.publish("w.a.b.end", b"2")
        m = await star.next_msg(timeout=5)
        assert m.subject == "w.a.end"
        got = [(await full.next_msg(timeout=5)).subject for _ in range(2)]
        assert got == ["w.a.end", "w.a.b.end"]
        with pytest.raises(jetwire.TimeoutError):
            await star.next_msg(timeout=0.2)
    finally:
        await nc.close()


async def test_request_reply_and_respond(nats_url):
    nc = await jetwire.connect(nats_url)
    nc2 = await jetwire.connect(nats_url)
    try:
        async def handler(msg):
            await msg.respond(b"echo:" + msg.data, headers={"X-From": "responder"})

        await nc2.subscribe("svc.echo", cb=handler)
        await nc2.flush()
        for i in range(20):
            resp = await nc.request("svc.echo", str(i).encode(), timeout=5)
            assert resp.data == b"echo:" + str(i).encode()
            assert resp.headers["X-From"] == "responder"
    finally:
        await nc.close()
        await nc2.close()


async def test_request_timeout_and_no_responders(nats_url):
    nc = await jetwire.connect(nats_url)
    try:
        with pytest.raises(jetwire.NoRespondersError, match="nobody.listens"):  # the error names the subject
            await nc.request("nobody.listens", b"x", timeout=5)
        # a subscriber that never answers: a timeout, which is also a builtin TimeoutError
        await nc.subscribe("silent.svc")
        await nc.flush()
        with pytest.raises(TimeoutError):
            await nc.request("silent.svc", b"x", timeout=0.2)
        with pytest.raises(jetwire.TimeoutError):
            await nc.request("silent.svc", b"x", timeout=0.2)
        assert nc.is_connected
    finally:
        await nc.close()


async def test_auto_unsubscribe(nats_url):
    nc = await jetwire.connect(nats_url)
    try:
        sub = await nc.subscribe("auto.unsub", max_msgs=3)
        sub2 = await nc.subscribe("auto.unsub2")
        await sub2.unsubscribe(max_msgs=2)
        await nc.flush()
        for i in range(10):
            await nc.publish("auto.unsub", b"%d" % i)
            await nc.publish("auto.unsub2", b"%d" % i)
        await nc.flush()
        got = [(await sub.next_msg(timeout=5)).data for _ in range(3)]
        assert got == [b"0", b"1", b"2"]
        with pytest.raises(jetwire.NatsError):
            await sub.next_msg(timeout=0.5)
        got2 = [(await sub2.next_msg(timeout=5)).data for _ in range(2)]
        assert got2 == [b"0", b"1"]
        with pytest.raises(jetwire.NatsError):
            await sub2.next_msg(timeout=0.5)
        assert sub.delivered == 3
    finally:
        await nc.close()


async def test_iteration_ends_on_unsubscribe(nats_url):
    nc = await jetwire.connect(nats_url)
    try:
        sub = await nc.subscribe("iter.x", max_msgs=5)
        await nc.flush()
        for i in range(5):
            await nc.publish("iter.x", b"%d" % i)
        got = []
        async for msg in sub:
            got.append(msg.data)
        assert got == [b"0", b"1", b"2", b"3", b"4"]
    finally:
        await nc.close()


async def test_subscription_drain_handles_pending(nats_url):
    nc = await jetwire.connect(nats_url)
    try:
        handled = []
        gate = prims.Signal()

        async def slow(msg):
            if not handled:
                await gate.wait(5)
            handled.append(msg.data)

        sub = await nc.subscribe("drain.sub", cb=slow)
        await nc.flush()
        for i in range(50):
            await nc.publish("drain.sub", b"%d" % i)
        await nc.flush()
        gate.set()
        await sub.drain()
        assert len(handled) == 50
        await nc.publish("drain.sub", b"late")
        await nc.flush()
        assert len(handled) == 50
        assert nc.is_connected
    finally:
        await nc.close()


async def test_connection_drain_closes(nats_url):
    closed = prims.Signal()
    nc = await jetwire.connect(nats_url, closed_cb=closed.set)
    pub = await jetwire.connect(nats_url)
    try:
        got = Collector(100)
        await nc.subscribe("drain.conn", cb=got)
        await nc.flush()
        for _i in range(100):
            await pub.publish("drain.conn", b"x")
        await pub.flush()
        await got.wait()
        await nc.drain()
        assert nc.is_closed
        assert await closed.wait(5)
        with pytest.raises(jetwire.ConnectionClosedError):
            await nc.publish("drain.conn", b"x")
    finally:
        await pub.close()
        await nc.close()


async def test_max_payload_and_bad_subjects(nats_url):
    nc = await jetwire.connect(nats_url)
    try:
        assert nc.max_payload == nc.server_info["max_payload"]
        with pytest.raises(jetwire.MaxPayloadError):
            await nc.publish("too.big", b"x" * (nc.max_payload + 1))
        with pytest.raises(jetwire.MaxPayloadError):
            await nc.publish("too.big", b"x" * (nc.max_payload - 5), headers={"K": "some value"})
        for bad in ["", "a b", "a\tb", "a\r\nb", "a\x00b", "a..b"]:
            with pytest.raises(jetwire.BadSubjectError):
                await nc.publish(bad, b"x")
        with pytest.raises(jetwire.BadSubjectError):
            await nc.subscribe("has space")
        with pytest.raises(jetwire.BadSubjectError):
            await nc.request("", b"x")
        assert nc.stats["out_msgs"] == 0
        sub = await nc.subscribe("still.ok")
        await nc.publish("still.ok", b"fine")
        assert (await sub.next_msg(timeout=5)).data == b"fine"
    finally:
        await nc.close()


async def test_flush_rtt_stats_and_inbox(nats_url, scheme):
    nc = await jetwire.connect(nats_url, name="stats-test")
    try:
        sub = await nc.subscribe("st.x")
        await nc.publish("st.x", b"12345")
        await sub.next_msg(timeout=5)
        rtt = await nc.rtt()
        assert isinstance(rtt, float) and 0 < rtt < 5
        st = nc.stats
        assert st["out_msgs"] == 1 and st["out_bytes"] == 5
        assert st["in_msgs"] == 1 and st["in_bytes"] == 5
        a, b = nc.new_inbox(), nc.new_inbox()
        assert a != b and a.startswith("_INBOX.")
        assert nc.connected_url.endswith(str(nats_url.rsplit(":", 1)[1]))
        assert nc.connected_url.startswith(f"{scheme[0]}://")  # ws:// keeps its scheme
    finally:
        await nc.close()
    assert nc.is_closed
    with pytest.raises(jetwire.ConnectionClosedError):
        await nc.flush()


async def test_publish_fast_and_slow_paths_keep_order(nats_url):
    nc = await jetwire.connect(nats_url)
    try:
        assert nc.max_payload == nc.server_info["max_payload"]
        sub = await nc.subscribe("fp.x")
        await nc.flush()
        await nc.publish("fp.x", b"1")
        await nc.publish("fp.x", b"2", headers={"K": "v"})  # slow path
        await nc.publish("fp.x", bytearray(b"3"), "fp.reply")
        await nc.publish("fp.x", memoryview(b"x4x")[1:2])
        nc.publish("fp.x", b"5")  # queued even when the result is not awaited
        await nc.publish_msg(jetwire.Msg("fp.x", b"6"))
        got = [await sub.next_msg(timeout=5) for _ in range(6)]
        assert [m.data for m in got] == [b"1", b"2", b"3", b"4", b"5", b"6"]
        assert got[1].headers["K"] == "v" and got[2].reply == "fp.reply"
        assert nc.stats["out_msgs"] == 6 and nc.stats["out_bytes"] == 6
        with pytest.raises(jetwire.BadSubjectError):
            await nc.publish("fp x", b"bad")
        with pytest.raises(TypeError):
            await nc.publish("fp.x", "text")
        assert nc.stats["out_msgs"] == 6
    finally:
        await nc.close()
    with pytest.raises(jetwire.ConnectionClosedError):
        await nc.publish("fp.x", b"closed")


async def test_context_manager_flushes_on_close(nats_url):
    nc2 = await jetwire.connect(nats_url)
    sub = await nc2.subscribe("cm.x")
    await nc2.flush()
    async with await jetwire.connect(nats_url) as nc:
        for i in range(1000):
            await nc.publish("cm.x", b"%d" % i)
    assert nc.is_closed
    last = None
    for _ in range(1000):
        last = await sub.next_msg(timeout=5)
    assert last.data == b"999"
    await nc2.close()


async def test_no_echo(nats_url):
    nc = await jetwire.connect(nats_url, no_echo=True)
    other = await jetwire.connect(nats_url)
    try:
        sub = await nc.subscribe("echo.x")
        await nc.flush()
        await nc.publish("echo.x", b"mine")
        await other.publish("echo.x", b"theirs")
        await other.flush()
        assert (await sub.next_msg(timeout=5)).data == b"theirs"
    finally:
        await nc.close()
        await other.close()


async def test_no_servers_error(scheme):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(jetwire.NoServersError):
        await jetwire.connect(f"{scheme[0]}://127.0.0.1:{port}", connect_timeout=1)


async def test_user_password_and_token_auth(nats_server_factory, url_for, scheme):
    srv = nats_server_factory(auth={"user": "alice", "password": "s3cret"})
    nc = await jetwire.connect(url_for(srv), user="alice", password="s3cret")
    assert nc.is_connected
    await nc.close()
    host = url_for(srv).split("//")[1]
    nc = await jetwire.connect(f"{scheme[0]}://alice:s3cret@{host}")
    assert nc.is_connected
    await nc.close()
    with pytest.raises(jetwire.AuthorizationError):
        await jetwire.connect(url_for(srv), user="alice", password="wrong", allow_reconnect=False)

    tsrv = nats_server_factory(auth={"token": "tok123"})
    nc = await jetwire.connect(url_for(tsrv), token="tok123")
    await nc.flush()
    await nc.close()
    thost = url_for(tsrv).split("//")[1]
    nc = await jetwire.connect(f"{scheme[0]}://tok123@{thost}")
    await nc.flush()
    await nc.close()
    with pytest.raises(jetwire.AuthorizationError):
        await jetwire.connect(url_for(tsrv), token="nope")


async def test_nkey_auth(nats_server_factory, url_for, tmp_path):
    user = new_nkey("user")
    srv = nats_server_factory(auth=nkey_user_auth(user))
    nc = await jetwire.connect(url_for(srv), nkey_seed=user.seed)
    await nc.flush()
    await nc.close()
    path = user.write_seed(tmp_path / "user.nk")
    nc = await jetwire.connect(url_for(srv), nkey_seed=str(path))
    await nc.flush()
    await nc.close()
    stranger = new_nkey("user")
    with pytest.raises(jetwire.AuthorizationError):
        await jetwire.connect(url_for(srv), nkey_seed=stranger.seed)


async def test_creds_auth(nats_server_factory, url_for, tmp_path):
    op = make_operator_auth()
    srv = nats_server_factory(jetstream=False, config=op.config)
    creds = op.write_creds(tmp_path / "user.creds")
    nc = await jetwire.connect(url_for(srv), creds=creds)
    sub = await nc.subscribe("creds.x")
    await nc.publish("creds.x", b"ok")
    assert (await sub.next_msg(timeout=5)).data == b"ok"
    await nc.close()
    other = make_operator_auth()
    bad = other.write_creds(tmp_path / "other.creds")
    with pytest.raises(jetwire.AuthorizationError):
        await jetwire.connect(url_for(srv), creds=bad)


async def test_tls_with_client_certificates(nats_server_factory, url_for, scheme, tmp_path):
    files = make_tls_files(tmp_path)
    srv = nats_server_factory(tls=server_tls_config(files, verify=True))
    ctx = client_ssl_context(files, client_cert=True)
    nc = await jetwire.connect(url_for(srv), tls=ctx)
    sub = await nc.subscribe("tls.x")
    await nc.publish("tls.x", b"secret")
    assert (await sub.next_msg(timeout=5)).data == b"secret"
    await nc.close()
    host = url_for(srv).split("//")[1]
    nc = await jetwire.connect(f"{scheme[1]}://{host}", tls=ctx)
    assert nc.connected_url.startswith(f"{scheme[1]}://")
    await nc.flush()
    await nc.close()
    with pytest.raises(Exception):
        await jetwire.connect(url_for(srv), tls=client_ssl_context(files, client_cert=False), allow_reconnect=False)


async def test_tls_handshake_first(nats_server_factory, url_for, tmp_path):
    files = make_tls_files(tmp_path)
    srv = nats_server_factory(tls=server_tls_config(files, handshake_first=True))
    nc = await jetwire.connect(url_for(srv), tls=client_ssl_context(files), tls_handshake_first=True)
    await nc.flush()
    assert nc.server_info.get("tls_required") or nc.server_info.get("tls_available") or True
    resp_sub = await nc.subscribe("tlsf.x")
    await nc.publish("tlsf.x", b"1")
    assert (await resp_sub.next_msg(timeout=5)).data == b"1"
    await nc.close()


async def test_permissions_violation_reaches_error_cb(nats_server_factory, url_for):
    srv = nats_server_factory(auth={"users": [
        {"user": "limited", "password": "pw", "permissions": {"publish": {"deny": ["forbidden.>"]},
                                                              "subscribe": {"allow": ["allowed.>", "_INBOX.>"]}}}]})
    errs = Errors()
    nc = await jetwire.connect(url_for(srv), user="limited", password="pw", error_cb=errs)
    try:
        await nc.publish("forbidden.x", b"no")
        await nc.flush()
        assert await errs.signal.wait(5)
        assert isinstance(errs.errors[0], jetwire.PermissionsError)
        assert "forbidden.x" in str(errs.errors[0])
        sub = await nc.subscribe("allowed.x")
        await nc.publish("allowed.x", b"yes")
        assert (await sub.next_msg(timeout=5)).data == b"yes"
        assert nc.is_connected
    finally:
        await nc.close()


async def test_lines_longer_than_the_servers_own_limit_are_read(nats_server_factory, url_for):
    """The server's max_control_line (4096) bounds what clients send; what it sends back
    is longer: a MSG line adds the sid (and a JetStream delivery its ack subject), a -ERR
    quotes the subject. Such lines are read, not taken for a broken server."""
    srv = nats_server_factory(auth={"users": [
        {"user": "u", "password": "pw", "permissions": {"publish": {"deny": ["forbidden.>"]}}}]})
    errs = Errors()
    nc = await jetwire.connect(url_for(srv), user="u", password="pw", error_cb=errs)
    try:
        subject = "long." + "x" * 4085  # its PUB line is 4096 bytes: the server's limit
        sub = await nc.subscribe(subject)
        await nc.publish(subject, b"core")
        assert (await sub.next_msg(timeout=5)).data == b"core"  # a MSG line over 4096 bytes

        js = nc.jetstream()
        await js.create_stream(name="LONG", subjects=["long.>"])
        stored = "long." + "y" * 4000
        ack = await js.publish(stored, b"js")
        cons = await js.create_consumer("LONG", durable_name="c", filter_subject=stored)
        (msg,) = [m async for m in await cons.fetch(1, max_wait=5)]
        assert (msg.subject, msg.data, msg.metadata.sequence.stream) == (stored, b"js", ack.seq)
        await msg.ack_sync()

        await nc.publish("forbidden." + "z" * 4080, b"no")  # its -ERR line is over 4096 bytes
        await nc.flush()
        assert await errs.signal.wait(5)
        assert isinstance(errs.errors[0], jetwire.PermissionsError)
        assert nc.is_connected and nc.stats["reconnects"] == 0
    finally:
        await nc.close()


async def test_slow_consumer_drops_and_reports_once(nats_url):
    errs = Errors()
    nc = await jetwire.connect(nats_url, error_cb=errs)
    try:
        sub = await nc.subscribe("slow.x", pending_msgs_limit=10)
        await nc.flush()
        for i in range(100):
            await nc.publish("slow.x", b"%d" % i)
        await nc.flush()
        assert await errs.signal.wait(5)
        slow = [e for e in errs.errors if isinstance(e, jetwire.SlowConsumerError)]
        assert len(slow) == 1
        assert sub.pending_msgs == 10
        assert sub.dropped == 90
        got = [(await sub.next_msg(timeout=1)).data for _ in range(10)]
        assert got == [b"%d" % i for i in range(10)]
        await nc.publish("slow.x", b"after")
        assert (await sub.next_msg(timeout=5)).data == b"after"
        assert nc.is_connected
    finally:
        await nc.close()


async def test_reconnect_after_server_restart_keeps_subscriptions(fresh_nats_server, url_for):
    srv = fresh_nats_server
    disconnected = prims.Signal()
    reconnected = prims.Signal()
    nc = await jetwire.connect(url_for(srv), reconnect_time_wait=0.1, max_reconnect_attempts=-1,
                               disconnected_cb=disconnected.set, reconnected_cb=reconnected.set)
    try:
        got = Collector(2)
        await nc.subscribe("rc.x", cb=got)
        await nc.flush()
        await nc.publish("rc.x", b"before")
        await nc.flush()
        srv.kill()
        assert await disconnected.wait(10)
        await nc.publish("rc.x", b"buffered")  # sits in the reconnect buffer
        srv.start()
        assert await reconnected.wait(20)
        await nc.flush(timeout=5)
        msgs = await got.wait(10)
        assert [m.data for m in msgs] == [b"before", b"buffered"]
        assert nc.stats["reconnects"] == 1
        assert nc.is_connected
    finally:
        await nc.close()


async def test_request_made_while_reconnecting_goes_out_when_back(fresh_nats_server, url_for):
    """Its bytes wait in the reconnect buffer and leave on the new connection; the caller
    waits for the answer (the server's own, so no responder can be late), and while no
    server is there a request's timeout holds (the caller waits, it does not spin)."""
    srv = fresh_nats_server
    disconnected = prims.Signal()
    nc = await jetwire.connect(url_for(srv), reconnect_time_wait=0.1, max_reconnect_attempts=-1,
                               disconnected_cb=disconnected.set)
    try:
        srv.kill()
        assert await disconnected.wait(10)
        got: list = []

        async def ask(timeout: float) -> None:
            try:
                got.append(await nc.request("$JS.API.INFO", b"", timeout=timeout))
            except jetwire.TimeoutError as exc:
                got.append(exc)

        task = prims.spawn(ask, 0.3)
        assert await prims.join(task, 10), "a request with the server away did not time out"
        assert isinstance(got.pop(), jetwire.TimeoutError)
        assert nc.is_reconnecting
        task = prims.spawn(ask, 20)
        srv.start()
        assert await prims.join(task, 25), "the request did not come back"
        assert b'"type":"io.nats.jetstream.api.v1.account_info_response"' in got[0].data
        assert nc.stats["reconnects"] == 1
    finally:
        await nc.close()


async def test_cluster_discovery(nats_cluster_factory, url_for, scheme):
    cluster = nats_cluster_factory(3)
    found = prims.Signal()
    first = cluster.servers[0]
    nc = await jetwire.connect(url_for(first), discovered_servers_cb=found.set)
    try:
        if len(nc.servers) < 3:  # connect_urls may reach us in a later INFO
            assert await found.wait(10)
        urls = set(nc.servers)
        assert len(urls) >= 3, urls
        # the URLs of this transport (over WebSocket the servers' websocket ports)
        assert {url_for(s) for s in cluster.servers} <= urls
        assert all(u.startswith(f"{scheme[0]}://") for u in urls)
        # the connection moves to another node when its server goes away
        reconnected = prims.Signal()
        nc2 = await jetwire.connect(url_for(first), reconnected_cb=reconnected.set, reconnect_time_wait=0.1)
        sub = await nc2.subscribe("cl.x")
        await nc2.flush()
        first.stop()
        assert await reconnected.wait(20)
        assert nc2.connected_url != url_for(first)
        assert nc2.connected_url in {url_for(s) for s in cluster.servers[1:]}
        await nc.close()
        nc3 = await jetwire.connect(url_for(cluster.servers[1]))
        # nc2's renewed interest reaches the other node over the route a moment later:
        # publish until one arrives (a message sent before that is dropped by design)
        got = None
        for _ in range(50):
            await nc3.publish("cl.x", b"routed")
            await nc3.flush()
            try:
                got = await sub.next_msg(timeout=0.2)
                break
            except jetwire.TimeoutError:
                continue
        assert got is not None and got.data == b"routed"
        await nc3.close()
        await nc2.close()
    finally:
        await nc.close()


def _garbage_server(payload: bytes, ws: bool = False):
    """A fake server (plain, or WebSocket with ``ws``) that sends ``payload`` after the handshake."""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)
    port = ls.getsockname()[1]

    def serve():
        conn, _ = ls.accept()
        wsc = WSConnection(ConnectionType.SERVER) if ws else None

        def send(data):
            conn.sendall(wsc.send(BytesMessage(data=data)) if wsc is not None else data)

        def read():  # the NATS bytes of one read; None at EOF
            data = conn.recv(4096)
            if not data or wsc is None:
                return data or None
            wsc.receive_data(data)
            out = b""
            for ev in wsc.events():
                if isinstance(ev, Request):
                    conn.sendall(wsc.send(AcceptConnection()))
                elif isinstance(ev, BytesMessage):
                    out += ev.data
            return out

        try:
            if wsc is not None:
                while wsc.connection is None:
                    if read() is None:
                        return
            send(b'INFO {"server_id":"fake","max_payload":1048576,"headers":true,"proto":1}\r\n')
            buf = b""
            while b"PING\r\n" not in buf:
                data = read()
                if data is None:
                    return
                buf += data
            send(b"PONG\r\n")
            send(payload)
            conn.recv(4096)
        except OSError:
            pass
        finally:
            conn.close()
            ls.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return port, t


async def test_garbage_from_server_is_a_protocol_error(tmp_path, transport, scheme):
    port, t = _garbage_server(b"THIS IS NOT NATS\r\n", ws=transport == "ws")
    errs = Errors()
    closed = prims.Signal()
    nc = await jetwire.connect(f"{scheme[0]}://127.0.0.1:{port}", error_cb=errs, allow_reconnect=False,
                               closed_cb=closed.set)
    assert await errs.signal.wait(5)
    assert isinstance(errs.errors[0], jetwire.ProtocolError)
    assert await closed.wait(5)
    assert nc.is_closed
    t.join(5)


async def test_bad_msg_length_is_a_protocol_error(transport, scheme):
    port, t = _garbage_server(b"MSG foo 1 notanumber\r\n", ws=transport == "ws")
    errs = Errors()
    nc = await jetwire.connect(f"{scheme[0]}://127.0.0.1:{port}", error_cb=errs, allow_reconnect=False)
    assert await errs.signal.wait(5)
    assert isinstance(errs.errors[0], jetwire.ProtocolError)
    await nc.close()
    t.join(5)


# ======================================================================================
# Bytes another client may send (issue 11): a separate block, kept at the end of the file.
# A plain socket speaking PUB/HPUB to the real server stands in for another client.


class _RawPeer:
    """A bare protocol peer on a blocking socket (small, bounded exchanges)."""

    def __init__(self, url: str) -> None:
        host, port = url.split("//")[1].rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.buf = b""
        self.read_until(b"\r\n")  # INFO
        self.sock.sendall(b'CONNECT {"verbose":false,"pedantic":false,"headers":true}\r\n')

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def sync(self) -> None:
        """The server has processed everything sent so far."""
        self.send(b"PING\r\n")
        self.read_until(b"PONG\r\n")

    def read_until(self, marker: bytes) -> bytes:
        while marker not in self.buf:
            chunk = self.sock.recv(65536)
            assert chunk, "the server closed the raw connection"
            self.buf += chunk
        head, _, self.buf = self.buf.partition(marker)
        return head + marker


async def _peer_reads(peer: _RawPeer, marker: bytes) -> bytes:
    """Read from the raw peer while the client keeps running (asyncio: off the loop)."""
    import asyncio  # aio-only
    return await asyncio.get_running_loop().run_in_executor(None, peer.read_until, marker)  # aio-only
    # sync-only: return peer.read_until(marker)


async def test_foreign_bytes_arrive_exactly_and_answers_send_them_back(nats_url, nats_tcp_url):
    from tests.aio._helpers import uniq

    def raw(text: str) -> bytes:  # the bytes a str stands for
        return text.encode("utf-8", "surrogateescape")

    errs = Errors()
    nc = await jetwire.connect(nats_url, error_cb=errs)
    peer = _RawPeer(nats_tcp_url)
    p = uniq("fbc").lower().encode()
    hdr = b"NATS/1.0\r\nX-\xe9t\xe9: \xff\xfe caf\xe9\r\nPlain: ok\r\n\r\n"
    bad = b"NATS/1.0\r\nno colon in this line\r\n\r\n"
    reply = p + b".reply.\xff\xfe.caf\xe9"
    try:
        sub = await nc.subscribe(p.decode() + ".in.>")
        await nc.flush()
        peer.send(b"SUB %s 1\r\n" % reply)
        peer.send(b"PUB %s.in.first 1\r\na\r\n" % p)
        peer.send(b"PUB %s.in.\xff\xfe.caf\xe9 %s 1\r\nb\r\n" % (p, reply))
        peer.send(b"HPUB %s.in.h\xe9 %d %d\r\n%sc\r\n" % (p, len(hdr), len(hdr) + 1, hdr))
        peer.send(b"HPUB %s.in.bad %d %d\r\n%sx\r\n" % (p, len(bad), len(bad) + 1, bad))  # skipped, reported
        peer.send(b"PUB %s.in.last 1\r\nd\r\n" % p)
        peer.sync()
        got = [await sub.next_msg(timeout=5) for _ in range(4)]
        assert [m.data for m in got] == [b"a", b"b", b"c", b"d"]
        assert [raw(m.subject) for m in got] == [p + b".in.first", p + b".in.\xff\xfe.caf\xe9", p + b".in.h\xe9",
                                                 p + b".in.last"]
        assert raw(got[1].reply) == reply and got[0].reply is None
        assert [(raw(k), raw(v)) for k, v in got[2].headers.items()] == [(b"X-\xe9t\xe9", b"\xff\xfe caf\xe9"),
                                                                          (b"Plain", b"ok")]
        err = await errs.wait_for(jetwire.ProtocolError)
        assert raw(err.subject) == p + b".in.bad"
        # the answer goes to exactly the reply bytes received
        await got[1].respond(b"answer")
        assert (await _peer_reads(peer, b"answer\r\n")).endswith(b"MSG %s 1 6\r\nanswer\r\n" % reply)
        # re-publishing what was received sends the same subject and header bytes
        peer.send(b"SUB %s.out.> 2\r\n" % p)
        peer.sync()
        await nc.publish(p.decode() + ".out" + got[2].subject[len(p) + 3:], got[2].data, headers=got[2].headers)
        assert (await _peer_reads(peer, b"c\r\n")).endswith(
            b"HMSG %s.out.h\xe9 2 %d %d\r\n%sc\r\n" % (p, len(hdr), len(hdr) + 1, hdr))
        assert nc.is_connected and nc.stats["reconnects"] == 0
        assert [e for e in errs.errors if e is not err] == []
    finally:
        peer.sock.close()
        await nc.close()
