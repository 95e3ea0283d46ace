"""Connection settings and value parsing shared by the CLI and its benchmark workers.

No click or rich here: benchmark worker processes import this module.
"""
from __future__ import annotations

import math
import os
from datetime import UTC, datetime
from typing import Any

from .._redact import redact_url as redact_url  # re-exported: the CLI's one redaction helper

DEFAULT_URL = "nats://127.0.0.1:4222"

#: the connection settings a command line carries (all picklable, for worker processes)
CONN_KEYS = ("server", "user", "password", "token", "creds", "nkey", "tls_ca", "tls_cert", "tls_key")

#: a command's connection settings: ``CONN_KEYS`` -> the value given (a URL, a name, a
#: secret or a file path), or None where it was not given
ConnSettings = dict[str, str | None]


def server_url(value: str | None) -> str:
    """``--server`` value, else ``$NATS_URL``, else ``nats://127.0.0.1:4222``."""
    return value or os.environ.get("NATS_URL") or DEFAULT_URL


def connect_kwargs(conn: ConnSettings) -> dict[str, Any]:
    """``jetwire.connect`` keyword arguments from a dict of CLI connection settings
    (``server`` excluded); the TLS files are passed on (``connect()`` builds the context)."""
    kw: dict[str, Any] = {}
    if conn.get("user"):
        kw["user"] = conn["user"]
    if conn.get("password"):
        kw["password"] = conn["password"]
    if conn.get("token"):
        kw["token"] = conn["token"]
    if conn.get("creds"):
        kw["creds"] = conn["creds"]
    if conn.get("nkey"):
        kw["nkey_seed"] = conn["nkey"]
    ca, cert, key = conn.get("tls_ca"), conn.get("tls_cert"), conn.get("tls_key")
    if ca or cert or key:
        if (cert is None) != (key is None):
            raise ValueError("--tls-cert and --tls-key go together")
        # connect() builds the TLS context from its files (options.Options.ssl_context)
        kw["tls"] = True
        if ca:
            kw["tls_ca_file"] = ca
        if cert:
            kw["tls_cert_file"] = cert
            kw["tls_key_file"] = key
    return kw


# ------------------------------------------------------------------------- sizes
# (parsing: jetwire._units.parse_size)

def human_bytes(n: float) -> str:
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover


# ------------------------------------------------------------------------- durations
# (parsing: jetwire._units.parse_duration)

def human_duration(seconds: float | None) -> str:
    if seconds is None or seconds == 0:
        return "-"
    if seconds < 0:
        return "-" + human_duration(-seconds)
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    parts = []
    rest = round(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if rest >= size:
            q, rest = divmod(rest, size)
            parts.append(f"{q}{unit}")
    return "".join(parts[:2]) or "0s"


def human_time(dt: datetime | None) -> str:
    if dt is None:
        return "-"
    local = dt.astimezone()
    return local.strftime("%Y-%m-%d %H:%M:%S")


def ago(dt: datetime | None) -> str:
    if dt is None:
        return "never"
    delta = (datetime.now(UTC) - dt).total_seconds()
    return human_duration(max(0.0, delta)) + " ago" if delta >= 0.5 else "just now"


def comma(n: float) -> str:
    if isinstance(n, float) and not math.isfinite(n):
        return str(n)
    return f"{n:,.0f}"
