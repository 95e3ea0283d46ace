"""Throw-away TLS material for tests: a CA, a server certificate for loopback and a
client certificate, made with ``trustme`` (a test dependency of jetwire)."""

from __future__ import annotations

import os
import ssl
from types import ModuleType
from typing import Any

__all__ = ["client_ssl_context", "make_tls_files", "server_tls_config"]


def _trustme() -> ModuleType:
    try:
        import trustme
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "jetwire.testing.certs needs the 'trustme' package to make test certificates; "
            "install it with `pip install trustme` (or `pip install jetwire[test]`)"
        ) from exc
    return trustme


def make_tls_files(
    tmpdir: str | os.PathLike[str],
    *,
    hosts: tuple[str, ...] = ("127.0.0.1", "localhost", "::1"),
    client_identity: str = "client.jetwire.test",
) -> dict[str, str]:
    """Write a fresh CA, a server certificate valid for ``hosts`` and a client
    certificate into ``tmpdir``.

    Returns the paths as ``{"ca_file", "server_cert", "server_key", "client_cert",
    "client_key"}``.
    """
    trustme = _trustme()
    d = os.fspath(tmpdir)
    os.makedirs(d, exist_ok=True)
    ca = trustme.CA(organization_name="jetwire test CA")
    server = ca.issue_cert(*hosts)
    client = ca.issue_cert(client_identity)
    files = {
        "ca_file": os.path.join(d, "ca.pem"),
        "server_cert": os.path.join(d, "server-cert.pem"),
        "server_key": os.path.join(d, "server-key.pem"),
        "client_cert": os.path.join(d, "client-cert.pem"),
        "client_key": os.path.join(d, "client-key.pem"),
    }
    ca.cert_pem.write_to_path(files["ca_file"])
    with open(files["server_cert"], "wb") as f:
        for blob in server.cert_chain_pems:
            f.write(blob.bytes())
    server.private_key_pem.write_to_path(files["server_key"])
    with open(files["client_cert"], "wb") as f:
        for blob in client.cert_chain_pems:
            f.write(blob.bytes())
    client.private_key_pem.write_to_path(files["client_key"])
    return files


def server_tls_config(
    files: dict[str, str], *, verify: bool = False, handshake_first: bool = False, **extra: Any
) -> dict[str, Any]:
    """The ``tls=`` argument of :class:`~jetwire.testing.NatsServer` for ``files``.

    ``verify=True`` requires client certificates signed by the CA;
    ``handshake_first=True`` makes the server expect TLS before sending INFO.
    """
    cfg: dict[str, Any] = {"cert_file": files["server_cert"], "key_file": files["server_key"]}
    if verify or "ca_file" in extra:
        cfg["ca_file"] = files["ca_file"]
    if verify:
        cfg["verify"] = True
    if handshake_first:
        cfg["handshake_first"] = True
    cfg.update(extra)
    return cfg


def client_ssl_context(files: dict[str, str], *, client_cert: bool = False) -> ssl.SSLContext:
    """An ``ssl.SSLContext`` trusting the test CA, optionally presenting the client cert."""
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=files["ca_file"])
    if client_cert:
        ctx.load_cert_chain(files["client_cert"], files["client_key"])
    return ctx
