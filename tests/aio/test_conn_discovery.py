"""Connecting as nats.go does, against real servers: the servers a cluster announces take
the user info and TLS host name of the URL they were learned through and stay TLS once
TLS was asked for (nats.go's implicit servers, tlsName, Secure); the handshake has one
deadline however the server sends its INFO; option values nats.go refuses are typed errors
before anything is dialled, and the ones it gives a meaning (ping_interval=0,
reconnect_buffer_size=0) have it; tls_handshake_first implies TLS. (asyncio source; the
blocking twin is generated.)"""
from __future__ import annotations

import time

import pytest

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims
from jetwire.testing.certs import make_tls_files, server_tls_config
from tests.aio._helpers import wait_until
from tests.chaos.proxy import UP, FaultProxy


async def _fail_over(cluster, **kw):
    """Connect to ``cluster[0]`` (``url``: its URL as given, default its own), wait until
    the rest of the cluster is announced, kill ``cluster[0]``: the connection, once it
    is back on another server (it fails the test when it is not)."""
    url = kw.pop("url", cluster[0].url)
    reconnected = prims.Signal()
    closed = prims.Signal()
    errors: list = []
    nc = await jetwire.connect(url, reconnect_time_wait=0.05, reconnect_jitter=0, reconnect_jitter_tls=0,
                               max_reconnect_attempts=3, reconnected_cb=reconnected.set, closed_cb=closed.set,
                               reconnect_error_cb=errors.append, **kw)
    try:
        # every other server announced (a URL given by host name is announced again by IP,
        # which a count of discovered servers would take for another server's)
        others = [f":{srv.port}" for srv in cluster[1:]]
        assert await wait_until(lambda: all(any(u.endswith(p) for u in nc.discovered_servers) for p in others),
                                10), nc.servers
        cluster[0].kill()
        assert await reconnected.wait(15), f"not back (closed: {closed.is_set()}): {errors!r}"
        assert nc.is_connected, errors
        assert nc.connected_url != url
    except BaseException:
        await nc.close()
        raise
    return nc


# -- discovered servers: user info, TLS name, TLS ----------------------------------------
async def test_discovered_servers_take_the_credentials_of_the_url(nats_cluster_factory):
    cluster = nats_cluster_factory(2, jetstream=False, auth={"user": "alice", "password": "s3cret"})
    url = cluster[0].url.replace("nats://", "nats://alice:s3cret@")
    nc = await _fail_over(cluster, url=url)
    try:
        await nc.flush(5)
        # shown without them, as nats.go's DiscoveredServers
        assert all("alice" not in u and "s3cret" not in u for u in nc.discovered_servers)
        assert "s3cret" not in repr(nc.servers)
    finally:
        await nc.close()


async def test_a_server_that_leaves_the_cluster_leaves_the_pool(nats_cluster_factory):
    """As nats.go prunes its implicit servers: one the cluster stops announcing is no
    longer dialled; the URL the user gave stays, whatever the cluster says."""
    cluster = nats_cluster_factory(3, jetstream=False)
    gone = f"127.0.0.1:{cluster[2].port}"
    nc = await jetwire.connect(cluster[0].url)
    try:
        assert await wait_until(lambda: len(nc.discovered_servers) == 2, 10), nc.servers
        assert any(u.endswith(gone) for u in nc.discovered_servers)
        cluster[2].kill()  # the others announce the cluster without it
        assert await wait_until(lambda: not any(u.endswith(gone) for u in nc.servers), 10), nc.servers
        assert nc.discovered_servers == [f"nats://127.0.0.1:{cluster[1].port}"]
        assert cluster[0].url in nc.servers  # (the server the user named)
        await nc.flush(5)
    finally:
        await nc.close()


async def test_discovered_ip_servers_are_verified_against_the_urls_host_name(nats_cluster_factory, tmp_path):
    files = make_tls_files(tmp_path, hosts=("localhost",))  # no IP address in the certificate
    cluster = nats_cluster_factory(2, jetstream=False, tls=server_tls_config(files))
    nc = await _fail_over(cluster, url=f"tls://localhost:{cluster[0].port}", tls_ca_file=files["ca_file"])
    try:
        assert nc.connected_url.startswith("tls://127.0.0.1:")  # announced by IP
        assert nc.tls_info["server_hostname"] == "localhost"
        await nc.flush(5)
    finally:
        await nc.close()


async def test_discovered_servers_stay_tls_after_a_tls_url(nats_cluster_factory, tmp_path, monkeypatch):
    files = make_tls_files(tmp_path)
    # the CA comes from the default verify paths: no TLS option, only the tls:// scheme
    monkeypatch.setenv("SSL_CERT_FILE", files["ca_file"])
    cluster = nats_cluster_factory(2, jetstream=False, tls=server_tls_config(files), config="allow_non_tls: true\n")
    url = cluster[0].url.replace("nats://", "tls://")
    nc = await _fail_over(cluster, url=url)
    try:
        assert all(u.startswith("tls://") for u in nc.discovered_servers), nc.discovered_servers
        assert nc.connected_url.startswith("tls://")
        assert nc.tls_info is not None  # no silent downgrade to plain text
        await nc.flush(5)
    finally:
        await nc.close()


# -- the handshake's deadline --------------------------------------------------------------
async def test_connect_timeout_bounds_a_dribbled_info(proxy):
    proxy.trickle(True, delay=0.05)  # the server's INFO a byte at a time: each read is quick
    start = time.monotonic()
    with pytest.raises(jetwire.NoServersError) as info:
        await jetwire.connect(proxy.url, connect_timeout=0.5, allow_reconnect=False)
    took = time.monotonic() - start
    assert took < 2.5, f"connect() took {took:.1f}s with connect_timeout=0.5"
    assert "timed out" in str(info.value), str(info.value)
    assert str(info.value).rstrip()[-1] != ":"


async def test_connect_timeout_bounds_a_dribbled_websocket_upgrade(nats_ws_url):
    host, port = nats_ws_url.split("://", 1)[1].rsplit(":", 1)
    with FaultProxy(host, int(port)).start() as p:
        p.trickle(True, delay=0.05)  # the upgrade's answer and the INFO a byte at a time
        start = time.monotonic()
        with pytest.raises(jetwire.NoServersError) as info:
            await jetwire.connect(f"ws://{p.host}:{p.port}", connect_timeout=0.5, allow_reconnect=False)
        took = time.monotonic() - start
        assert took < 2.5, f"connect() took {took:.1f}s with connect_timeout=0.5"
        assert "timed out after 0.5s" in str(info.value), str(info.value)


# -- option values -----------------------------------------------------------------------
BAD_OPTIONS = [
    ({"ping_interval": -1}, ValueError),
    ({"ping_interval": float("nan")}, ValueError),
    ({"ping_interval": "5"}, TypeError),
    ({"flush_timeout": 0}, ValueError),
    ({"flush_timeout": -2.5}, ValueError),
    ({"connect_timeout": 0}, ValueError),
    ({"connect_timeout": float("nan")}, ValueError),
    ({"max_pings_outstanding": 0}, ValueError),
    ({"max_pings_outstanding": 1.5}, TypeError),
    ({"name": 42}, TypeError),
    ({"reconnect_buffer_size": "8MB"}, TypeError),
]


@pytest.mark.parametrize(("kw", "error"), BAD_OPTIONS, ids=[f"{k}={v!r}" for kw, _ in BAD_OPTIONS for k, v in kw.items()])
async def test_bad_option_values_raise_before_dialling(proxy, kw, error):
    with pytest.raises(error, match=next(iter(kw))):
        await jetwire.connect(proxy.url, **kw)
    assert proxy.accepted == 0  # nothing was dialled


async def test_ping_interval_zero_sends_no_pings(proxy):
    nc = await jetwire.connect(proxy.url, ping_interval=0.05, allow_reconnect=False)
    try:  # the timer's PINGs come while it is on
        assert await wait_until(lambda: proxy.captured[UP].count(b"PING\r\n") >= 3, 5)
    finally:
        await nc.close()
    proxy.captured[UP].clear()
    nc = await jetwire.connect(proxy.url, ping_interval=0, allow_reconnect=False)
    try:
        await prims.sleep(0.3)  # a window in which a timer would have sent several
        assert nc.is_connected
        pings = proxy.captured[UP].count(b"PING\r\n")
        assert pings == 1, f"{pings - 1} PINGs after the handshake's with ping_interval=0"
    finally:
        await nc.close()


async def test_reconnect_buffer_size_zero_is_the_default(nats_server_factory):
    srv = nats_server_factory(jetstream=False)
    disconnected = prims.Signal()
    reconnected = prims.Signal()
    nc = await jetwire.connect(srv.url, reconnect_buffer_size=0, reconnect_time_wait=0.05, max_reconnect_attempts=-1,
                               disconnected_cb=disconnected.set, reconnected_cb=reconnected.set)
    try:
        sub = await nc.subscribe("rbs.zero")
        await nc.flush(5)
        srv.stop()
        assert await disconnected.wait(10)
        await nc.publish("rbs.zero", b"kept")  # buffered (0 is nats.go's default 8 MB), not refused
        srv.start()
        assert await reconnected.wait(15)
        assert (await sub.next_msg(timeout=5)).data == b"kept"
    finally:
        await nc.close()


# -- tls_handshake_first implies TLS -----------------------------------------------------------
async def test_tls_handshake_first_alone_turns_tls_on(nats_server_factory, tmp_path, monkeypatch):
    plain = nats_server_factory(jetstream=False)
    with pytest.raises(jetwire.NoServersError):  # never plain text to a server without TLS
        await jetwire.connect(plain.url, tls_handshake_first=True, allow_reconnect=False, connect_timeout=2)
    files = make_tls_files(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", files["ca_file"])  # the default context trusts the test CA
    srv = nats_server_factory(jetstream=False, tls=server_tls_config(files, handshake_first=True))
    nc = await jetwire.connect(srv.url, tls_handshake_first=True, allow_reconnect=False, connect_timeout=2)
    try:
        assert srv.url.startswith("nats://")
        assert nc.tls_info is not None
        await nc.flush(5)
    finally:
        await nc.close()
