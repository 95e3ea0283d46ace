"""TLS and credentials at their edges, against real servers: a refusal during the
handshake is reported with its reason, a server that requires TLS is met with TLS (the
system's trust store), TLS asked for from a server without it fails clearly, ``.creds``
files with CRLF line ends, paths with ``~`` and ``$VAR``, an nkey against a server that
asks for none, a ws URL's query, the TLS files on a given context, and a credentials
file missing while reconnecting (the client's own error never ends the connection).
(asyncio source; the blocking twin is generated.)"""
from __future__ import annotations

import os
import pathlib
import ssl

import pytest

import jetwire.aio as jetwire
from jetwire.aio import _prims as prims
from jetwire.testing.auth import make_operator_auth, new_nkey
from jetwire.testing.certs import client_ssl_context, make_tls_files, server_tls_config
from tests.chaos.proxy import UP, FaultProxy


async def _round_trip(nc) -> None:
    sub = await nc.subscribe("edge.x")
    await nc.publish("edge.x", b"ok")
    assert (await sub.next_msg(timeout=5)).data == b"ok"


def _chain(exc: BaseException | None) -> str:
    parts = []
    while exc is not None:
        parts.append(f"{type(exc).__name__}: {exc}")
        exc = exc.__cause__ or exc.__context__
    return " <- ".join(parts)


async def test_a_refusal_during_the_handshake_is_reported_with_its_reason(nats_server_factory, tmp_path):
    files = make_tls_files(tmp_path)
    srv = nats_server_factory(tls=server_tls_config(files, verify=True))  # a client certificate is required
    for _ in range(3):  # the reader and the CONNECT's write race: every time, the server's reason
        with pytest.raises(jetwire.NoServersError) as err:
            await jetwire.connect(srv.url, tls_ca_file=files["ca_file"], allow_reconnect=False, connect_timeout=5)
        text = _chain(err.value).lower()
        assert "certificate" in text or "alert" in text, text
        assert "not connected" not in text and "bad file descriptor" not in text, text


async def test_max_connections_refusal_names_the_servers_reason(nats_server_factory):
    srv = nats_server_factory(jetstream=False, config="max_connections: 1")
    first = await jetwire.connect(srv.url)
    try:
        for _ in range(3):
            with pytest.raises(jetwire.NoServersError) as err:
                await jetwire.connect(srv.url, allow_reconnect=False, connect_timeout=5)
            assert "maximum connections exceeded" in _chain(err.value), _chain(err.value)
    finally:
        await first.close()


async def test_a_server_requiring_tls_is_met_with_the_systems_trust_store(nats_server_factory, tmp_path, monkeypatch):
    files = make_tls_files(tmp_path)
    srv = nats_server_factory(tls=server_tls_config(files))
    assert srv.url.startswith("nats://")
    with pytest.raises(jetwire.NoServersError):  # the test CA is nobody's trust store yet
        await jetwire.connect(srv.url, allow_reconnect=False, connect_timeout=5)
    monkeypatch.setenv("SSL_CERT_FILE", files["ca_file"])  # as a public CA would be trusted
    nc = await jetwire.connect(srv.url, allow_reconnect=False, connect_timeout=5)
    try:
        await _round_trip(nc)
    finally:
        await nc.close()


async def test_tls_asked_of_a_server_without_it_says_so(nats_server_factory):
    srv = nats_server_factory(jetstream=False)
    for kwargs in ({"servers": srv.url.replace("nats://", "tls://")}, {"servers": srv.url, "tls": True}):
        with pytest.raises(jetwire.NoServersError) as err:
            await jetwire.connect(allow_reconnect=False, connect_timeout=5, **kwargs)
        assert isinstance(err.value.__cause__, jetwire.ProtocolError)
        assert "secure connection not available" in str(err.value)


async def test_tls_files_add_to_a_given_context(nats_server_factory, tmp_path):
    files = make_tls_files(tmp_path)
    srv = nats_server_factory(tls=server_tls_config(files))
    bare = ssl.create_default_context()  # does not trust the test CA
    nc = await jetwire.connect(srv.url, tls=bare, tls_ca_file=files["ca_file"], allow_reconnect=False)
    try:
        await _round_trip(nc)
    finally:
        await nc.close()
    with pytest.raises(ValueError, match="tls_context_cb"):
        await jetwire.connect(srv.url, tls_context_cb=lambda: client_ssl_context(files), tls_ca_file=files["ca_file"])


async def test_creds_with_crlf_line_ends_and_expanded_paths(nats_server_factory, tmp_path, monkeypatch):
    op = make_operator_auth()
    srv = nats_server_factory(jetstream=False, config=op.config)
    text = op.creds.replace("\r\n", "\n").replace("\n", "\r\n")  # written on Windows
    assert "\r\n" in text
    nc = await jetwire.connect(srv.url, creds=text.encode(), allow_reconnect=False)
    await nc.close()
    home = tmp_path / "home"
    home.mkdir()
    (home / "u.creds").write_bytes(text.encode())
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("JW_CREDS_DIR", str(home))
    for path in ("~/u.creds", "$JW_CREDS_DIR/u.creds"):
        nc = await jetwire.connect(srv.url, creds=path, allow_reconnect=False)
        await _round_trip(nc)
        await nc.close()


async def test_nkey_seed_as_a_path_and_against_a_server_asking_for_none(nats_server_factory, tmp_path):
    user = new_nkey("user")
    seed_file = pathlib.Path(user.write_seed(tmp_path / "user.nk"))
    plain = nats_server_factory(jetstream=False)
    # no nonce: the server asks for no nkey, and the client sends none (nats.go signs an empty one)
    nc = await jetwire.connect(plain.url, nkey_seed=seed_file, allow_reconnect=False)
    await _round_trip(nc)
    await nc.close()
    nc = await jetwire.connect(plain.url, nkey=user.public_key, signature_cb=user.sign, allow_reconnect=False)
    await nc.close()
    missing = tmp_path / "nope.nk"
    with pytest.raises(jetwire.AuthorizationError, match="nope.nk"):
        await jetwire.connect(plain.url, nkey_seed=str(missing), allow_reconnect=False)
    with pytest.raises(TypeError, match="nkey_seed"):
        await jetwire.connect(plain.url, nkey_seed=12345)


async def test_a_ws_urls_query_goes_with_the_upgrade_request(nats_server_factory):
    srv = nats_server_factory(jetstream=False, websocket=True)
    with FaultProxy("127.0.0.1", srv.ws_port).start() as proxy:
        url = f"ws://127.0.0.1:{proxy.port}/nats?auth=abc&x=1"
        nc = await jetwire.connect(url, allow_reconnect=False, connect_timeout=5)
        try:
            await _round_trip(nc)
            assert "auth=abc" not in nc.connected_url  # the query may carry a token: never shown
        finally:
            await nc.close()
        request_line = bytes(proxy.captured[UP]).split(b"\r\n", 1)[0]
        assert request_line == b"GET /nats?auth=abc&x=1 HTTP/1.1", request_line


async def test_a_credentials_file_missing_while_reconnecting_does_not_end_the_connection(nats_server_factory,
                                                                                        tmp_path):
    op = make_operator_auth()
    srv = nats_server_factory(jetstream=False, config=op.config)
    path = op.write_creds(tmp_path / "rot.creds")
    reconnected, failed_twice = prims.Signal(), prims.Signal()
    errors: list[BaseException] = []

    def on_reconnect_error(exc: BaseException) -> None:
        errors.append(exc)
        if len(errors) >= 2:
            failed_twice.set()

    nc = await jetwire.connect(srv.url, creds=path, reconnect_time_wait=0.05, max_reconnect_attempts=-1,
                               reconnected_cb=reconnected.set, reconnect_error_cb=on_reconnect_error)
    try:
        os.rename(path, f"{path}.tmp")  # a rotation under way
        srv.restart()
        assert await failed_twice.wait(20)  # the same client-side error, twice in a row
        assert all("cannot read credentials file" in str(e) for e in errors[:2]), errors
        assert not nc.is_closed
        os.rename(f"{path}.tmp", path)
        assert await reconnected.wait(20)
        await _round_trip(nc)
    finally:
        await nc.close()
