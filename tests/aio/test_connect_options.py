"""Connection options of nats.go beyond the basics, against real servers: auth callbacks
(TokenHandler, UserInfo callback, UserJWT, Nkey), credentials as a file pair or strings,
TLS files and a TLS context callback asked on every connect, custom reconnect delays,
the connected callback, giving up on a repeated authorization error, no callbacks after
close, a write deadline and a custom dialer. (asyncio source; the blocking twin is
generated.)"""
from __future__ import annotations

import socket

import pytest

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims
from jetwire.testing.auth import make_operator_auth, new_nkey, nkey_user_auth
from jetwire.testing.certs import client_ssl_context, make_tls_files, server_tls_config
from tests.aio._helpers import Errors, wait_until


async def _round_trip(nc, subject: str = "opt.x") -> None:
    sub = await nc.subscribe(subject)
    await nc.publish(subject, b"ok")
    assert (await sub.next_msg(timeout=5)).data == b"ok"


async def test_token_and_user_callbacks(nats_server_factory):
    asked = []

    def token_cb():
        asked.append("token")
        return "tok123"

    tsrv = nats_server_factory(auth={"token": "tok123"})
    nc = await jetwire.connect(tsrv.url, token_cb=token_cb)
    await _round_trip(nc)
    await nc.close()
    assert asked == ["token"]
    with pytest.raises(jetwire.AuthorizationError):
        await jetwire.connect(tsrv.url, token_cb=lambda: "wrong", allow_reconnect=False)

    usrv = nats_server_factory(auth={"user": "alice", "password": "s3cret"})
    nc = await jetwire.connect(usrv.url, user_cb=lambda: ("alice", "s3cret"))
    await _round_trip(nc)
    await nc.close()
    with pytest.raises(jetwire.AuthorizationError):
        await jetwire.connect(usrv.url, user_cb=lambda: ("alice", "nope"), allow_reconnect=False)


async def test_nkey_with_signature_callback_never_sees_the_seed(nats_server_factory):
    user = new_nkey("user")
    srv = nats_server_factory(auth=nkey_user_auth(user))
    nonces = []

    def sign(nonce: bytes) -> bytes:
        nonces.append(nonce)
        return user.sign(nonce)

    nc = await jetwire.connect(srv.url, nkey=user.public_key, signature_cb=sign)
    await _round_trip(nc)
    await nc.close()
    assert len(nonces) == 1 and nonces[0]
    stranger = new_nkey("user")
    with pytest.raises(jetwire.AuthorizationError):
        await jetwire.connect(srv.url, nkey=user.public_key, signature_cb=stranger.sign, allow_reconnect=False)


async def test_user_jwt_callbacks_and_credential_forms(nats_server_factory, tmp_path):
    op = make_operator_auth()
    srv = nats_server_factory(jetstream=False, config=op.config)
    # UserJWT: the JWT from one callback, the nonce signed by another
    nc = await jetwire.connect(srv.url, user_jwt_cb=lambda: op.user_jwt, signature_cb=op.user.sign)
    await _round_trip(nc)
    await nc.close()
    # UserJWTAndSeed: both as strings
    nc = await jetwire.connect(srv.url, user_jwt=op.user_jwt, nkey_seed=op.user.seed)
    await _round_trip(nc)
    await nc.close()
    # UserCredentials with two files: the JWT and the seed
    jwt_file = tmp_path / "user.jwt"
    jwt_file.write_text(op.user_jwt)
    seed_file = op.user.write_seed(tmp_path / "user.nk")
    nc = await jetwire.connect(srv.url, creds=(str(jwt_file), str(seed_file)))
    await _round_trip(nc)
    await nc.close()
    # a signature of the wrong key is refused
    with pytest.raises(jetwire.AuthorizationError):
        await jetwire.connect(srv.url, user_jwt_cb=lambda: op.user_jwt, signature_cb=new_nkey("user").sign,
                              allow_reconnect=False)


async def test_auth_options_that_cannot_work_raise_before_connecting():
    with pytest.raises(ValueError):
        await jetwire.connect("nats://127.0.0.1:1", user_jwt_cb=lambda: "x")  # no signature_cb
    with pytest.raises(ValueError):
        await jetwire.connect("nats://127.0.0.1:1", nkey="UABC")  # nothing to sign with
    with pytest.raises(ValueError):
        await jetwire.connect("nats://127.0.0.1:1", token="a", token_cb=lambda: "b")
    with pytest.raises(ValueError):
        await jetwire.connect("nats://127.0.0.1:1", user_jwt="x")  # no seed
    with pytest.raises(ValueError):
        await jetwire.connect("nats://127.0.0.1:1", creds=("only-one",))


async def test_tls_files_and_a_context_callback_asked_on_every_connect(nats_server_factory, tmp_path):
    files = make_tls_files(tmp_path)
    srv = nats_server_factory(tls=server_tls_config(files, verify=True))
    nc = await jetwire.connect(srv.url, tls_ca_file=files["ca_file"], tls_cert_file=files["client_cert"],
                               tls_key_file=files["client_key"])
    await _round_trip(nc)
    await nc.close()

    asked = []

    def context():
        asked.append(1)
        return client_ssl_context(files, client_cert=True)

    reconnected = prims.Signal()
    nc = await jetwire.connect(srv.url, tls_context_cb=context, reconnect_time_wait=0.1,
                               max_reconnect_attempts=-1, reconnected_cb=reconnected.set)
    try:
        await _round_trip(nc)
        assert len(asked) == 1
        srv.restart()
        assert await reconnected.wait(20)
        await _round_trip(nc, "opt.y")
        assert len(asked) >= 2  # asked again on the reconnect: rotated certificates apply
    finally:
        await nc.close()


async def test_reconnect_delay_callback_and_connected_callback(fresh_nats_server):
    srv = fresh_nats_server
    connected = prims.Signal()
    reconnected = prims.Signal()
    delays: list = []

    def delay(attempts: int) -> float:
        delays.append(attempts)
        return 0.05

    nc = await jetwire.connect(srv.url, reconnect_delay_cb=delay, max_reconnect_attempts=-1,
                               connected_cb=connected.set, reconnected_cb=reconnected.set)
    try:
        assert await connected.wait(5)
        srv.kill()
        assert await wait_until(lambda: len(delays) >= 3, 10)  # asked once per pass over the pool
        srv.start()
        assert await reconnected.wait(20)
        assert delays[:3] == [1, 2, 3]
        await _round_trip(nc)
    finally:
        await nc.close()


async def test_a_reconnect_delay_callback_that_fails_is_reported_and_reconnecting_goes_on(fresh_nats_server):
    srv = fresh_nats_server
    reconnected = prims.Signal()
    errors = Errors()
    asked: list = []

    def delay(passes: int) -> float:
        asked.append(passes)
        if passes == 1:
            raise RuntimeError("no delay for you")
        return -1.0  # not a pause either

    nc = await jetwire.connect(srv.url, reconnect_delay_cb=delay, reconnect_time_wait=0.05, max_reconnect_attempts=-1,
                               reconnected_cb=reconnected.set, error_cb=errors)
    try:
        srv.kill()
        failed = await errors.wait_for(jetwire.NatsError)
        assert "reconnect_delay_cb failed: no delay for you" in str(failed)
        assert await wait_until(lambda: len(asked) >= 2, 10)
        srv.start()
        assert await reconnected.wait(20)  # it kept trying, with reconnect_time_wait
        assert any("reconnect_delay_cb returned -1.0, not a number" in str(e) for e in errors.errors)
        await _round_trip(nc)
    finally:
        await nc.close()


async def test_an_error_callback_that_raises_is_logged_once_and_not_called_again(nats_url, caplog):
    calls: list = []
    first = prims.Signal()

    def error_cb(err: Exception) -> None:
        calls.append(err)
        first.set()
        raise RuntimeError("error_cb is broken")

    def cb(msg) -> None:
        raise ValueError("a failing message callback")

    nc = await jetwire.connect(nats_url, error_cb=error_cb)
    try:
        await nc.subscribe("broken.cb", cb=cb)
        await nc.publish("broken.cb", b"x")
        assert await first.wait(5)
        assert await wait_until(lambda: any("error callback" in r.getMessage() and "failed" in r.getMessage()
                                            for r in caplog.records), 5)
        for _ in range(3):  # the dispatcher had time to call it again, were it to
            await nc.flush(5)
        assert [type(e) for e in calls] == [ValueError]
    finally:
        await nc.close()


async def test_connected_callback_after_a_failed_first_connect(fresh_nats_server):
    srv = fresh_nats_server
    srv.kill()
    connected = prims.Signal()
    reconnected: list = []
    nc = await jetwire.connect(srv.url, retry_on_failed_connect=True, reconnect_time_wait=0.05,
                               max_reconnect_attempts=-1, connected_cb=connected.set,
                               reconnected_cb=lambda: reconnected.append(1))
    try:
        assert not nc.is_connected
        srv.start()
        assert await connected.wait(20)
        assert reconnected == []
        await _round_trip(nc)
    finally:
        await nc.close()


async def test_same_authorization_error_twice_closes_unless_told_otherwise(nats_server_factory):
    tokens = ["good"]
    srv = nats_server_factory(auth={"token": "good"})
    errors = Errors()
    closed = prims.Signal()
    nc = await jetwire.connect(srv.url, token_cb=lambda: tokens[0], reconnect_time_wait=0.05,
                               max_reconnect_attempts=-1, error_cb=errors, closed_cb=closed.set)
    await _round_trip(nc)
    tokens[0] = "revoked"
    srv.restart()  # every reconnect is refused with the same error
    assert await closed.wait(20), errors.errors
    assert nc.is_closed
    assert isinstance(nc.last_error, jetwire.AuthorizationError)

    # with ignore_auth_error_abort the client keeps trying, and gets in once the token is good
    tokens[0] = "good"
    reconnected = prims.Signal()
    nc = await jetwire.connect(srv.url, token_cb=lambda: tokens[0], reconnect_time_wait=0.05,
                               max_reconnect_attempts=-1, ignore_auth_error_abort=True,
                               error_cb=errors, reconnected_cb=reconnected.set)
    try:
        tokens[0] = "revoked"
        errors.errors.clear()
        srv.restart()
        assert await wait_until(lambda: sum(isinstance(e, jetwire.AuthorizationError)
                                            for e in errors.errors) >= 3, 20)
        assert not nc.is_closed
        tokens[0] = "good"
        assert await reconnected.wait(20)
        await _round_trip(nc)
    finally:
        await nc.close()


async def test_no_callbacks_after_close(nats_url):
    calls: list = []
    nc = await jetwire.connect(nats_url, no_callbacks_after_close=True,
                               closed_cb=lambda: calls.append("closed"),
                               disconnected_cb=lambda: calls.append("disconnected"))
    await nc.close()
    other = await jetwire.connect(nats_url, closed_cb=lambda: calls.append("other closed"))
    await other.close()
    assert calls == ["other closed"]


async def test_a_stuck_write_fails_the_connection(fresh_nats_server):
    srv = fresh_nats_server
    errors = Errors()
    disconnected = prims.Signal()
    reconnected = prims.Signal()
    nc = await jetwire.connect(srv.url, flush_timeout=1.0, reconnect_time_wait=0.1, max_reconnect_attempts=-1,
                               error_cb=errors, disconnected_cb=disconnected.set, reconnected_cb=reconnected.set,
                               ping_interval=600)
    try:
        srv.freeze()  # the server reads nothing: the socket buffers fill, then writes stall
        chunk = b"x" * 60_000
        for _ in range(2000):  # ~120 MB: far more than the socket buffers hold
            if disconnected.is_set():
                break
            try:
                nc.publish("stuck.x", chunk)
            except jetwire.ReconnectBufferFullError:
                break
            await prims.sleep(0)
        assert await disconnected.wait(15), "a stuck write did not fail the connection"
        # error_cb runs on the callback dispatcher, disconnected_cb on the reconnecting
        # thread/task: the two may come in either order
        assert await wait_until(lambda: any(isinstance(e, jetwire.TimeoutError) for e in errors.errors), 10), \
            errors.errors
        srv.thaw()
        assert await reconnected.wait(20)
    finally:
        await nc.close()


async def test_socket_factory_dials_the_connection(nats_url):
    host, port = nats_url.split("//")[1].rsplit(":", 1)
    dialed = []

    def dial(h, p, timeout):
        dialed.append((h, p))
        return socket.create_connection((h, p), timeout=timeout)

    nc = await jetwire.connect("nats://example.invalid:4222", socket_factory=lambda h, p, t: dial(host, int(port), t))
    try:
        await _round_trip(nc)
        assert dialed == [(host, int(port))]
    finally:
        await nc.close()
