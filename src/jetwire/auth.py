"""Credentials: nkey seeds and .creds files (JWT + seed), signing the server nonce."""
from __future__ import annotations

import base64
import os
import re
from typing import Optional, Tuple

from .errors import AuthorizationError

_CREDS_BLOCK = re.compile(
    r"\s*(?:(?:[-]{3,}[^\n]*[-]{3,}\n))(.+?)(?:\n\s*[-]{3,}[^\n]*[-]{3,}\n?)", re.DOTALL
)


def _read_text(value: str) -> str:
    if os.path.exists(value):
        with open(value, "r", encoding="utf-8") as fh:
            return fh.read()
    return value


def parse_creds(path: str) -> Tuple[str, bytes]:
    """Return (jwt, seed) from a .creds file."""
    try:
        text = open(path, "r", encoding="utf-8").read()
    except OSError as exc:
        raise AuthorizationError(f"cannot read credentials file {path!r}: {exc}") from exc
    blocks = [b.strip() for b in _CREDS_BLOCK.findall(text)]
    if len(blocks) < 2:
        raise AuthorizationError(f"credentials file {path!r} has no JWT and seed blocks")
    jwt, seed = blocks[0], blocks[1]
    return jwt, seed.encode()


def load_seed(nkey_seed: str) -> bytes:
    """A seed given inline (``SU...``) or as a path to a file holding it."""
    text = _read_text(nkey_seed).strip()
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("S") and len(line) >= 56:
            return line.encode()
    raise AuthorizationError("no nkey seed found")


def sign_nonce(seed: bytes, nonce: str) -> Tuple[str, str]:
    """Sign the server nonce; returns (signature b64url without padding, public key)."""
    try:
        import nkeys
    except ImportError as exc:  # pragma: no cover
        raise AuthorizationError("nkey authentication needs the 'nkeys' package") from exc
    try:
        kp = nkeys.from_seed(bytearray(seed))
    except Exception as exc:
        raise AuthorizationError(f"invalid nkey seed: {exc}") from exc
    sig = kp.sign(nonce.encode())
    pub = kp.public_key.decode()
    kp.wipe()
    return base64.urlsafe_b64encode(sig).decode().rstrip("="), pub


class Credentials:
    """What goes into CONNECT for the configured auth method."""

    def __init__(self, user: Optional[str] = None, password: Optional[str] = None, token: Optional[str] = None,
                 nkey_seed: Optional[str] = None, creds: Optional[str] = None) -> None:
        self.user = user
        self.password = password
        self.token = token
        self.nkey_seed = nkey_seed
        self.creds = creds

    def connect_fields(self, info: dict, url_user: Optional[str], url_password: Optional[str]) -> dict:
        out: dict = {}
        nonce = info.get("nonce")
        if self.creds:
            jwt, seed = parse_creds(self.creds)
            out["jwt"] = jwt
            if nonce:
                out["sig"], _ = sign_nonce(seed, nonce)
        elif self.nkey_seed:
            seed = load_seed(self.nkey_seed)
            if not nonce:
                raise AuthorizationError("server sent no nonce for nkey authentication")
            out["sig"], out["nkey"] = sign_nonce(seed, nonce)
        user = url_user if url_user is not None else self.user
        password = url_password if url_password is not None else self.password
        if user is not None and password is None and url_user is not None and self.token is None:
            # nats://token@host
            out["auth_token"] = user
        elif user is not None:
            out["user"] = user
            out["pass"] = password or ""
        if self.token is not None:
            out["auth_token"] = self.token
        return out
