"""Sans-IO side of tests/aio/test_conn_discovery.py: what a discovered server takes from
the URL it was learned through (nats.go's implicit servers: user info, tlsName, the TLS
scheme), and the option values make_options refuses or gives a meaning."""
from __future__ import annotations

import pytest

from jetwire.options import DEFAULT_RECONNECT_BUFFER_SIZE, ServerPool, make_options


def _learned(pool: ServerPool, urls: list[str], tls: bool = False):
    added = pool.add_discovered(urls, tls)
    return [s for s in pool.servers if s.display in added]


def test_discovered_servers_take_user_info_and_tls_name_from_the_server_in_use():
    pool = ServerPool(["nats://alice:s3cret@node0.example:4222", "nats://127.0.0.1:4300"], randomize=False)
    node0, other = pool.servers
    # the first connect: no current server yet, the one dialled last is the source
    other.last_attempt, node0.last_attempt = 1.0, 2.0
    a, b = _learned(pool, ["10.0.0.2:4222", "node2.example:4222"])
    assert (a.user, a.password, a.tls_name) == ("alice", "s3cret", "node0.example")
    assert (b.user, b.password, b.tls_name) == ("alice", "s3cret", None)  # a host name: its own
    assert a.display == "nats://10.0.0.2:4222" and a.scheme == "nats"  # shown without them
    # once connected (or reconnecting) the current one; chained through a discovered one
    # (a server announces the whole cluster each time)
    pool.current = a
    (c,) = _learned(pool, ["10.0.0.2:4222", "node2.example:4222", "10.0.0.3:4222"])
    assert (c.user, c.password, c.tls_name) == ("alice", "s3cret", "node0.example")
    # a source named by IP has no host name to give; user info of its own is kept
    pool.current = other
    (d,) = _learned(pool, ["10.0.0.2:4222", "node2.example:4222", "10.0.0.3:4222", "bob:pw@10.0.0.4:4222"])
    assert (d.user, d.password, d.tls_name) == ("bob", "pw", None)
    assert _learned(pool, ["10.0.0.2:4222", "node2.example:4222", "10.0.0.3:4222", "10.0.0.4:4222"]) == []  # known


def test_a_discovered_server_no_longer_announced_leaves_the_pool():
    pool = ServerPool(["nats://127.0.0.1:4222", "nats://127.0.0.1:4223"], randomize=False)
    given = list(pool.servers)
    pool.add_discovered(["127.0.0.1:4222", "127.0.0.1:4224", "127.0.0.1:4225", "127.0.0.1:4226"], False)
    a, b, _ = pool.servers[2:]
    pool.current = b  # in use: stays while it is, announced or not
    assert pool.add_discovered(["127.0.0.1:4222", "127.0.0.1:4224"], False) == []
    assert pool.servers == [*given, a, b]  # the given ones stay too, unannounced
    pool.add_discovered(["garbage:url:x"], False)  # nothing readable: nothing pruned
    assert pool.servers == [*given, a, b]
    pool.current = given[0]
    assert pool.add_discovered(["127.0.0.1:4226"], False) == ["nats://127.0.0.1:4226"]
    assert [s.port for s in pool.servers] == [4222, 4223, 4226]


def test_a_token_url_is_inherited_too():
    pool = ServerPool(["nats://t0k@localhost:4222"], randomize=False)
    pool.current = pool.servers[0]
    (srv,) = _learned(pool, ["127.0.0.1:4223"])
    assert (srv.user, srv.password, srv.tls_name) == ("t0k", None, "localhost")


@pytest.mark.parametrize(("urls", "tls", "scheme"), [
    (["tls://127.0.0.1:4222"], False, "tls"),  # asked for: kept, whatever INFO says
    (["nats://127.0.0.1:4222"], False, "nats"),
    (["nats://127.0.0.1:4222"], True, "tls"),  # the server requires it
    (["nats://127.0.0.1:4222", "tls://127.0.0.1:4223"], False, "tls"),
    (["wss://127.0.0.1:443"], False, "wss"),
    (["ws://127.0.0.1:80"], False, "ws"),
])
def test_discovered_scheme(urls, tls, scheme):
    pool = ServerPool(urls, randomize=False)
    (srv,) = _learned(pool, ["127.0.0.1:5000"], tls)
    assert srv.scheme == scheme


@pytest.mark.parametrize(("kw", "error", "text"), [
    ({"ping_interval": -1}, ValueError, r"ping_interval must be 0 \(no pings\) or a positive"),
    ({"ping_interval": float("nan")}, ValueError, "ping_interval"),
    ({"ping_interval": float("inf")}, ValueError, "ping_interval"),
    ({"ping_interval": True}, TypeError, "ping_interval"),
    ({"ping_interval": None}, TypeError, "ping_interval"),
    ({"connect_timeout": 0}, ValueError, "connect_timeout must be a positive number of seconds"),
    ({"connect_timeout": -1}, ValueError, "connect_timeout"),
    ({"flush_timeout": 0.0}, ValueError, "flush_timeout"),
    ({"flush_timeout": float("nan")}, ValueError, "flush_timeout"),
    ({"flush_timeout": "10"}, TypeError, "flush_timeout"),
    ({"max_pings_outstanding": 0}, ValueError, "max_pings_outstanding"),
    ({"max_pings_outstanding": -3}, ValueError, "max_pings_outstanding"),
    ({"max_pings_outstanding": 2.0}, TypeError, "max_pings_outstanding"),
    ({"name": 7}, TypeError, "name must be a str"),
    ({"name": b"svc"}, TypeError, "name"),
    ({"reconnect_buffer_size": 1.5}, TypeError, "reconnect_buffer_size"),
    ({"tls": False, "tls_handshake_first": True}, ValueError, "tls_handshake_first"),
])
def test_bad_option_values(kw, error, text):
    with pytest.raises(error, match=text):
        make_options(None, kw)


def test_option_values_with_a_meaning():
    assert make_options(None, {"ping_interval": 0}).ping_interval == 0  # no client PINGs
    assert make_options(None, {"ping_interval": 0.25, "connect_timeout": 1, "flush_timeout": 0.5}).ping_interval == 0.25
    assert make_options(None, {"reconnect_buffer_size": 0}).reconnect_buffer_size == DEFAULT_RECONNECT_BUFFER_SIZE
    assert make_options(None, {"reconnect_buffer_size": -1}).reconnect_buffer_size == -1  # no buffering
    assert make_options(None, {"name": None}).name is None
    first = make_options(None, {"tls_handshake_first": True})
    assert first.wants_tls and first.ssl_context() is not None  # implies TLS (nats.go)
    assert make_options(None, {}).ssl_context() is None
