"""Credentials never leak, and failed reconnect attempts are heard, against real servers:
``creds=`` as the text of a ``.creds`` file (str or bytes); no password, token, nkey
seed or JWT in any error message, ``error_cb`` report, log record or repr, on every
auth path; URLs with credentials shown as ``nats://alice:***@host``; every failed
reconnect attempt reaches ``reconnect_error_cb`` (else ``error_cb``), one report per
attempt. (asyncio source; the blocking twin is generated.)"""
from __future__ import annotations

import logging
import pathlib
import socket

import pytest

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims
from jetwire.options import make_options
from jetwire.testing.auth import format_creds, make_operator_auth, new_nkey, nkey_user_auth
from tests.aio._helpers import Errors, wait_until


def _closed_port() -> int:
    """A local port nothing listens on (connecting is refused at once)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _texts(exc: BaseException) -> list:
    """What an error shows: its message and repr, and those of what it was raised from."""
    out: list = []
    seen: set = set()
    e = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        out += [str(e), repr(e)]
        e = e.__cause__ or e.__context__
    return out


def _assert_clean(texts, secrets) -> None:
    for text in texts:
        for secret in secrets:
            assert secret not in text, f"a secret is shown in {text!r}"


async def _round_trip(nc, subject: str = "sec.x") -> None:
    sub = await nc.subscribe(subject)
    await nc.publish(subject, b"ok")
    assert (await sub.next_msg(timeout=5)).data == b"ok"


async def test_creds_given_as_text_str_or_bytes(nats_server_factory, tmp_path):
    op = make_operator_auth()
    srv = nats_server_factory(jetstream=False, config=op.config)
    path = op.write_creds(tmp_path / "user.creds")
    for creds in (op.creds, op.creds.encode(), path, pathlib.Path(path)):
        nc = await jetwire.connect(srv.url, creds=creds)
        try:
            await _round_trip(nc)
        finally:
            await nc.close()


async def test_bad_credentials_never_show_the_seed_or_jwt(nats_server_factory, caplog):
    caplog.set_level(logging.DEBUG)
    op = make_operator_auth()
    srv = nats_server_factory(jetstream=False, config=op.config)
    stranger = new_nkey("user")
    bad_seed = "SU" + "A" * 56  # the shape of a seed, not a valid one
    secrets = [op.user.seed, stranger.seed, op.user_jwt, bad_seed]
    errors = Errors()
    cases = [
        format_creds(op.user_jwt, stranger.seed),  # the server refuses the signature
        format_creds(op.user_jwt, stranger.seed).encode(),
        format_creds(op.user_jwt, bad_seed),  # not a seed at all
        op.creds.split("************************* IMPORTANT")[0],  # the JWT block alone
        op.user.seed,  # a seed where a path or creds text belongs
    ]
    for creds in cases:
        with pytest.raises(jetwire.AuthorizationError) as info:
            await jetwire.connect(srv.url, creds=creds, allow_reconnect=False, error_cb=errors)
        _assert_clean(_texts(info.value), secrets)
    # a path that is not there is named (a path is no secret)
    with pytest.raises(jetwire.AuthorizationError, match="no-such.creds"):
        await jetwire.connect(srv.url, creds="/nonexistent/no-such.creds", allow_reconnect=False)
    # the tuple form: a JWT and seed given as text where files belong
    with pytest.raises(jetwire.AuthorizationError) as info:
        await jetwire.connect(srv.url, creds=(op.user_jwt, op.user.seed), allow_reconnect=False)
    _assert_clean(_texts(info.value), secrets)
    # user_jwt and nkey_seed given as strings, with the wrong seed
    with pytest.raises(jetwire.AuthorizationError) as info:
        await jetwire.connect(srv.url, user_jwt=op.user_jwt, nkey_seed=bad_seed, allow_reconnect=False)
    _assert_clean(_texts(info.value), secrets)

    # nkey users: a stranger's seed is refused, a malformed one never leaves the client
    user = new_nkey("user")
    nsrv = nats_server_factory(auth=nkey_user_auth(user))
    for seed in (stranger.seed, bad_seed, "not a seed at all"):
        with pytest.raises(jetwire.AuthorizationError) as info:
            await jetwire.connect(nsrv.url, nkey_seed=seed, allow_reconnect=False, error_cb=errors)
        _assert_clean(_texts(info.value), [*secrets, user.seed])
    reports = [t for e in errors.errors for t in _texts(e)]
    _assert_clean(reports, secrets)
    _assert_clean([r.getMessage() for r in caplog.records], secrets)

    # the options' repr masks them all
    opts = make_options(srv.url, {"creds": op.creds, "error_cb": errors})
    _assert_clean([repr(opts)], secrets)
    opts = make_options(srv.url, {"user_jwt": op.user_jwt, "nkey_seed": op.user.seed})
    _assert_clean([repr(opts)], secrets)


async def test_urls_with_passwords_and_tokens_are_shown_masked(nats_server_factory, caplog):
    caplog.set_level(logging.DEBUG)
    port = _closed_port()
    with pytest.raises(jetwire.NoServersError) as info:
        await jetwire.connect(f"nats://alice:pw-s3cret@127.0.0.1:{port}", allow_reconnect=False)
    assert f"nats://alice:***@127.0.0.1:{port}" in str(info.value)
    _assert_clean(_texts(info.value), ["pw-s3cret"])
    with pytest.raises(jetwire.NoServersError) as info:
        await jetwire.connect(f"nats://tok-s3cret@127.0.0.1:{port}", allow_reconnect=False)
    assert f"nats://***@127.0.0.1:{port}" in str(info.value)
    _assert_clean(_texts(info.value), ["tok-s3cret"])
    with pytest.raises(ValueError) as verr:
        await jetwire.connect("nats://alice:pw-s3cret@127.0.0.1:notaport")
    _assert_clean(_texts(verr.value), ["pw-s3cret"])

    usrv = nats_server_factory(auth={"user": "alice", "password": "pw-s3cret"})
    url = f"nats://alice:pw-s3cret@127.0.0.1:{usrv.port}"
    errors = Errors()
    nc = await jetwire.connect(url, error_cb=errors)
    try:
        await _round_trip(nc)
        masked = f"nats://alice:***@127.0.0.1:{usrv.port}"
        assert nc.connected_url == masked
        assert nc.servers == [masked]
        _assert_clean([repr(nc), repr(make_options(url, {"password": "pw-s3cret"}))], ["pw-s3cret"])
    finally:
        await nc.close()

    # a refused token or password is not shown either (errors, error_cb, logs, repr)
    tsrv = nats_server_factory(auth={"token": "good-t0ken"})
    for kw in ({"token": "bad-t0ken"}, {"token_cb": lambda: "bad-t0ken"}, {"user": "alice", "password": "bad-t0ken"}):
        with pytest.raises(jetwire.AuthorizationError) as ainfo:
            await jetwire.connect(tsrv.url, allow_reconnect=False, error_cb=errors, **kw)
        _assert_clean(_texts(ainfo.value), ["bad-t0ken", "good-t0ken"])
        _assert_clean([repr(make_options(tsrv.url, kw))], ["bad-t0ken"])
    with pytest.raises(jetwire.AuthorizationError) as ainfo:
        await jetwire.connect(f"nats://bad-t0ken@127.0.0.1:{tsrv.port}", allow_reconnect=False)
    _assert_clean(_texts(ainfo.value), ["bad-t0ken"])
    _assert_clean([t for e in errors.errors for t in _texts(e)], ["pw-s3cret", "bad-t0ken", "good-t0ken"])
    _assert_clean([r.getMessage() for r in caplog.records], ["pw-s3cret", "bad-t0ken", "good-t0ken"])


async def test_without_callbacks_failed_reconnects_are_logged_without_secrets(nats_server_factory, caplog):
    caplog.set_level(logging.DEBUG)
    # refused connections: one warning per attempt, naming the server with its password masked
    usrv = nats_server_factory(auth={"user": "alice", "password": "pw-s3cret"})
    closed = prims.Signal()
    nc = await jetwire.connect(f"nats://alice:pw-s3cret@127.0.0.1:{usrv.port}", max_reconnect_attempts=3,
                               reconnect_time_wait=0.05, closed_cb=closed.set)
    await _round_trip(nc)
    usrv.kill()
    assert await closed.wait(20)
    logged = [r.getMessage() for r in caplog.records if r.name == "jetwire"]
    assert sum(f"nats://alice:***@127.0.0.1:{usrv.port}" in m for m in logged) == 3, logged
    _assert_clean(logged, ["pw-s3cret"])

    # a token revoked while disconnected: the refusals go to the log, without the token
    caplog.clear()
    tokens = ["good-t0ken"]
    srv = nats_server_factory(auth={"token": "good-t0ken"})
    closed = prims.Signal()
    nc = await jetwire.connect(srv.url, token_cb=lambda: tokens[0], reconnect_time_wait=0.05,
                               max_reconnect_attempts=-1, closed_cb=closed.set)
    await _round_trip(nc)
    tokens[0] = "revoked-t0ken"
    srv.restart()
    assert await closed.wait(20)
    assert isinstance(nc.last_error, jetwire.AuthorizationError)
    logged = [r.getMessage() for r in caplog.records if r.name == "jetwire"]
    assert logged  # the refusals were heard
    _assert_clean(logged + _texts(nc.last_error), ["revoked-t0ken", "good-t0ken"])


async def test_each_failed_reconnect_attempt_reaches_reconnect_error_cb(fresh_nats_server):
    srv = fresh_nats_server
    attempts = 4
    for use_reconnect_cb in (True, False):
        if not srv.running:
            srv.start()
        reported: list = []
        errors = Errors()
        closed = prims.Signal()
        kw = {"reconnect_error_cb": reported.append} if use_reconnect_cb else {}
        nc = await jetwire.connect(srv.url, max_reconnect_attempts=attempts, reconnect_time_wait=0.05,
                                   error_cb=errors, closed_cb=closed.set, **kw)
        await _round_trip(nc)
        srv.kill()  # every attempt is refused
        assert await closed.wait(20)
        assert isinstance(nc.last_error, jetwire.NoServersError)
        heard = reported if use_reconnect_cb else errors.errors
        # the reports are dispatched: wait until the last one has been called
        assert await wait_until(lambda: len(heard) >= attempts, 5), heard
        assert len(heard) == attempts, heard  # one report per attempt
        assert all(isinstance(e, Exception) and not isinstance(e, jetwire.AuthorizationError) for e in heard)
        if use_reconnect_cb:
            assert errors.errors == []  # not twice

    # a first connect that reaches no server raises, and reports nothing
    errors = Errors()
    reported = []
    with pytest.raises(jetwire.NoServersError):
        await jetwire.connect(f"nats://127.0.0.1:{_closed_port()}", error_cb=errors,
                              reconnect_error_cb=reported.append)
    assert errors.errors == [] and reported == []
