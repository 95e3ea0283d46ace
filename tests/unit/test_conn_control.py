"""Sans-IO pieces of the connection-control options: WebSocket header checks, matching
a reconnect_to_server_cb answer to the pool, the lax subject encoding of
skip_subject_validation, refused subscriptions typed from their -ERR, TLS state."""
from __future__ import annotations

import pytest

from jetwire.connection.core import ConnectionCore, lax_wire
from jetwire.errors import BadSubjectError, PermissionsError, PermissionViolationError
from jetwire.options import ServerPool, make_options, ws_header_list


def test_ws_header_list():
    assert ws_header_list({"X-A": "1", "X-B": ["2", b"3"]}) == [(b"X-A", b"1"), (b"X-B", b"2"), (b"X-B", b"3")]
    for bad in ({"Host": "x"}, {"sec-websocket-key": "x"}, {"X A": "1"}, {"": "1"}, {"X-A": "1\r\n"},
                {"X-A": "a\nb"}, {"X-\u00e9": "1"}):
        with pytest.raises(ValueError):
            ws_header_list(bad)
    with pytest.raises(TypeError):
        ws_header_list([("X-A", "1")])
    with pytest.raises(TypeError):
        ws_header_list({"X-A": 1})


def test_pool_find_matches_what_nc_servers_shows():
    pool = ServerPool(["nats://alice:s3cret@127.0.0.1:4222", "127.0.0.1:4223"], randomize=False)
    a, b = pool.servers
    assert pool.find("nats://alice:***@127.0.0.1:4222") is a  # as nc.servers shows it
    assert pool.find("nats://127.0.0.1:4222") is a
    assert pool.find("nats://127.0.0.1:4223") is b
    assert pool.find("127.0.0.1:4223") is b
    assert pool.find("nats://127.0.0.1:1") is None
    assert pool.find("ftp://x") is None


def test_lax_wire_keeps_only_the_framing_checks():
    assert lax_wire("a..b") == b"a..b"
    assert lax_wire("a.*b.>.c") == b"a.*b.>.c"
    for bad in ("a b", "a\tb", "", "a\r\n", None):
        with pytest.raises(BadSubjectError) as info:
            lax_wire(bad, "reply")
        assert "queue" not in str(info.value)


def test_skip_subject_validation_sub_and_pub_lines():
    core = ConnectionCore(make_options(None, {"skip_subject_validation": True}))
    buf = bytearray()
    core.check_filter("a.*b", "q")
    core.append_sub(buf, "a.*b", "q", 7)
    assert bytes(buf) == b"SUB a.*b q 7\r\n"
    with pytest.raises(BadSubjectError):
        core.check_filter("a b", None)
    core.append_pub_lax("a..b", "r", None, b"xy")
    core.append_pub_lax("a..b", None, b"NATS/1.0\r\n\r\n", memoryview(b"z"))
    assert bytes(core.outbox.buf) == b"PUB a..b r 2\r\nxy\r\nHPUB a..b 12 13\r\nNATS/1.0\r\n\r\nz\r\n"
    assert core.outbox.out_msgs == 2 and core.outbox.out_bytes == 3
    strict = ConnectionCore(make_options(None, {}))
    with pytest.raises(BadSubjectError):
        strict.check_filter("a.*b", None)


def test_refused_subscription_is_typed_with_its_subject():
    core = ConnectionCore(make_options(None, {}))
    ev = core.server_error('Permissions Violation for Subscription to "foo.>" using queue "q"')
    assert not ev.fatal and isinstance(ev.error, PermissionViolationError)
    assert (ev.error.subject, ev.error.queue) == ("foo.>", "q")
    ev = core.server_error('Permissions Violation for Subscription to "bar"')
    assert (ev.error.subject, ev.error.queue) == ("bar", None)
    ev = core.server_error('Permissions Violation for Publish to "bar"')
    assert type(ev.error) is PermissionsError and not ev.fatal


def test_ignore_discovered_servers():
    core = ConnectionCore(make_options("nats://127.0.0.1:4222", {"ignore_discovered_servers": True}))
    core.process_info({"connect_urls": ["127.0.0.1:5222"]}, initial=True)
    assert core.pool.urls() == ["nats://127.0.0.1:4222"]
    core = ConnectionCore(make_options("nats://127.0.0.1:4222", {}))
    core.process_info({"connect_urls": ["127.0.0.1:5222"]}, initial=True)
    assert core.pool.urls(discovered_only=True) == ["nats://127.0.0.1:5222"]


def test_ws_header_values_never_shown():
    text = repr(make_options("ws://127.0.0.1:80", {"ws_headers": {"Authorization": "Bearer s3cret"}}))
    assert "s3cret" not in text and "Authorization" in text


def test_strip_pings_keeps_every_other_command_byte_for_byte():
    import random

    from jetwire import _impl
    from jetwire.connection.core import strip_pings

    rnd = random.Random(7)
    for _ in range(300):
        with_pings, without = bytearray(), bytearray()
        for _ in range(rnd.randint(0, 30)):
            kind = rnd.choice(["pub", "hpub", "sub", "unsub", "ping", "pong"])
            part = bytearray()
            data = rnd.choice([b"", b"PING\r\n", b"x" * rnd.randint(0, 40), b"\r\nPING\r\n\r\n"])
            if kind == "pub":
                _impl.append_pub(part, "a.b", rnd.choice([None, "r.1"]), data)
            elif kind == "hpub":
                _impl.append_hpub(part, "a.b", rnd.choice([None, "r.1"]), b"NATS/1.0\r\nK: PING\r\n\r\n", data)
            elif kind == "sub":
                _impl.append_sub(part, "a.*", rnd.choice([None, "q"]), rnd.randint(1, 99))
            elif kind == "unsub":
                part += b"UNSUB 5 10\r\n"
            elif kind == "pong":
                part += b"PONG\r\n"
            with_pings += b"PING\r\n" if kind == "ping" else part
            without += part
        assert strip_pings(with_pings) == without
