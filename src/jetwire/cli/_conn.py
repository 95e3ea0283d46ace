"""Connection settings and value parsing shared by the CLI and its benchmark workers.

No click or rich here: benchmark worker processes import this module.
"""
from __future__ import annotations

import math
import os
import re
from datetime import datetime, timezone
from typing import Any, Dict, Optional

from .._redact import redact_url as redact_url  # re-exported: the CLI's one redaction helper

DEFAULT_URL = "nats://127.0.0.1:4222"

#: the connection settings a command line carries (all picklable, for worker processes)
CONN_KEYS = ("server", "user", "password", "token", "creds", "nkey", "tls_ca", "tls_cert", "tls_key")


def server_url(value: Optional[str]) -> str:
    """``--server`` value, else ``$NATS_URL``, else ``nats://127.0.0.1:4222``."""
    return value or os.environ.get("NATS_URL") or DEFAULT_URL


def connect_kwargs(conn: Dict[str, Any]) -> Dict[str, Any]:
    """``jetwire.connect`` keyword arguments from a dict of CLI connection settings
    (``server`` excluded); the TLS files are passed on (``connect()`` builds the context)."""
    kw: Dict[str, Any] = {}
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

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.I)
_SIZE_MUL = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def parse_size(text: Any) -> int:
    """``128``, ``1k``, ``1KB``, ``1KiB``, ``2.5MB`` -> bytes (1024-based, like the nats CLI).
    ``-1`` means unlimited where a limit is asked for."""
    if isinstance(text, int):
        return text
    s = str(text).strip()
    if s == "-1":
        return -1
    m = _SIZE_RE.match(s)
    if not m:
        raise ValueError(f"not a size: {text!r} (examples: 128, 1KB, 4MiB)")
    return int(float(m.group(1)) * _SIZE_MUL[m.group(2).lower()])


def human_bytes(n: float) -> str:
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover


# ------------------------------------------------------------------------- durations

_DUR_RE = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h|d|w|y)")
_DUR_MUL = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0,
            "d": 86400.0, "w": 7 * 86400.0, "y": 365 * 86400.0}


def parse_duration(text: Any) -> float:
    """``30``, ``1.5``, ``500ms``, ``1m30s``, ``2h``, ``7d`` -> seconds. Plain numbers are seconds."""
    if isinstance(text, (int, float)):
        return float(text)
    s = str(text).strip().lower()
    try:
        return float(s)
    except ValueError:
        pass
    pos = 0
    total = 0.0
    for m in _DUR_RE.finditer(s):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _DUR_MUL[m.group(2)]
        pos = m.end()
    if pos != len(s) or not s:
        raise ValueError(f"not a duration: {text!r} (examples: 30s, 500ms, 1h, 7d)")
    return total


def human_duration(seconds: Optional[float]) -> str:
    if seconds is None or seconds == 0:
        return "-"
    if seconds < 0:
        return "-" + human_duration(-seconds)
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    parts = []
    rest = int(round(seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if rest >= size:
            q, rest = divmod(rest, size)
            parts.append(f"{q}{unit}")
    return "".join(parts[:2]) or "0s"


def human_time(dt: Optional[datetime]) -> str:
    if dt is None:
        return "-"
    local = dt.astimezone()
    return local.strftime("%Y-%m-%d %H:%M:%S")


def ago(dt: Optional[datetime]) -> str:
    if dt is None:
        return "never"
    delta = (datetime.now(timezone.utc) - dt).total_seconds()
    return human_duration(max(0.0, delta)) + " ago" if delta >= 0.5 else "just now"


def comma(n: float) -> str:
    if isinstance(n, float) and not math.isfinite(n):
        return str(n)
    return f"{n:,.0f}"
