"""Server-side authentication set-ups for tests: nkey users and a decentralised
(operator / account / user JWT) chain with a ``.creds`` file.

Keys come from the ``nkeys`` package; JWTs are built and signed here (header
``{"typ":"JWT","alg":"ed25519-nkey"}``, base64url without padding, ed25519 signature
of ``header.payload`` by the issuer's key), which is all the server needs.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

import nkeys

__all__ = [
    "NKey",
    "OperatorAuth",
    "decode_jwt_claims",
    "encode_jwt",
    "format_creds",
    "make_operator_auth",
    "new_nkey",
    "nkey_user_auth",
]

_PREFIXES = {
    "operator": nkeys.PREFIX_BYTE_OPERATOR,
    "account": nkeys.PREFIX_BYTE_ACCOUNT,
    "user": nkeys.PREFIX_BYTE_USER,
    "server": nkeys.PREFIX_BYTE_SERVER,
    "cluster": nkeys.PREFIX_BYTE_CLUSTER,
}


@dataclass(frozen=True)
class NKey:
    """An nkey: ``seed`` (``S..``) and ``public_key`` (``O..``/``A..``/``U..``), as str."""

    seed: str
    public_key: str

    def sign(self, data: bytes) -> bytes:
        """Raw ed25519 signature of ``data``."""
        sig: bytes = nkeys.from_seed(self.seed.encode()).sign(data)
        return sig

    def write_seed(self, path: str | os.PathLike[str]) -> str:
        """Write the seed to ``path`` (mode 0600) and return the path."""
        p = os.fspath(path)
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(self.seed + "\n")
        return p


def new_nkey(kind: str = "user") -> NKey:
    """A fresh random nkey of ``kind``: operator, account, user, server or cluster."""
    try:
        prefix = _PREFIXES[kind]
    except KeyError:
        raise ValueError(f"unknown nkey kind {kind!r}; expected one of {sorted(_PREFIXES)}") from None
    seed = nkeys.encode_seed(os.urandom(32), prefix)
    kp = nkeys.from_seed(bytearray(seed))
    return NKey(seed=seed.decode(), public_key=kp.public_key.decode())


def nkey_user_auth(*users: NKey) -> dict[str, Any]:
    """The ``auth=`` argument of ``NatsServer`` admitting the given nkey users."""
    return {"users": [{"nkey": u.public_key} for u in users]}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


_JWT_HEADER = _b64(json.dumps({"typ": "JWT", "alg": "ed25519-nkey"}, separators=(",", ":")).encode())


def encode_jwt(claims: dict[str, Any], issuer: NKey) -> str:
    """Sign ``claims`` with ``issuer``; ``jti``, ``iat`` and ``iss`` are filled in."""
    body = dict(claims)
    body.setdefault("iat", int(time.time()))
    body["iss"] = issuer.public_key
    body["jti"] = ""
    digest = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).digest()
    body["jti"] = base64.b32encode(digest).decode().rstrip("=")
    payload = _b64(json.dumps(body, separators=(",", ":")).encode())
    signing_input = f"{_JWT_HEADER}.{payload}"
    return f"{signing_input}.{_b64(issuer.sign(signing_input.encode()))}"


def decode_jwt_claims(token: str) -> dict[str, Any]:
    """The claims of a JWT (the signature is not checked)."""
    payload = token.split(".")[1]
    claims: dict[str, Any] = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return claims


def format_creds(user_jwt: str, user_seed: str) -> str:
    """A ``.creds`` file's text for a user JWT and seed."""
    return (
        "-----BEGIN NATS USER JWT-----\n"
        f"{user_jwt}\n"
        "------END NATS USER JWT------\n\n"
        "************************* IMPORTANT *************************\n"
        "NKEY Seed printed below can be used to sign and prove identity.\n"
        "NKEYs are sensitive and should be treated as secrets.\n\n"
        "-----BEGIN USER NKEY SEED-----\n"
        f"{user_seed}\n"
        "------END USER NKEY SEED------\n\n"
        "*************************************************************\n"
    )


_UNLIMITED = {"subs": -1, "data": -1, "payload": -1}


@dataclass
class OperatorAuth:
    """A decentralised-auth set-up: an operator, a system account, an application
    account and users of it.

    ``config`` is the server configuration text (``operator``, ``system_account``,
    ``resolver: MEMORY`` and ``resolver_preload``); pass it as ``NatsServer(config=...)``.
    """

    operator: NKey
    operator_jwt: str
    system_account: NKey
    system_account_jwt: str
    account: NKey
    account_jwt: str
    user: NKey
    user_jwt: str
    accounts: dict[str, str] = field(default_factory=dict)

    @property
    def config(self) -> str:
        preload = {self.system_account.public_key: self.system_account_jwt, self.account.public_key: self.account_jwt}
        preload.update(self.accounts)
        lines = "".join(f"  {k}: {v}\n" for k, v in preload.items())
        return (
            f"operator: {self.operator_jwt}\n"
            f"system_account: {self.system_account.public_key}\n"
            "resolver: MEMORY\n"
            f"resolver_preload: {{\n{lines}}}\n"
        )

    @property
    def creds(self) -> str:
        """The ``.creds`` text of the default user."""
        return format_creds(self.user_jwt, self.user.seed)

    def issue_user(
        self, name: str = "user", *, permissions: dict[str, Any] | None = None, account: NKey | None = None
    ) -> tuple[str, NKey]:
        """A new user of ``account`` (the application account by default): ``(jwt, keys)``.

        ``permissions`` may hold ``pub``/``sub`` mappings (``{"allow": [...], "deny": [...]}``).
        """
        issuer = account or self.account
        user = new_nkey("user")
        nats: dict[str, Any] = {"pub": {}, "sub": {}, **_UNLIMITED, "type": "user", "version": 2}
        if permissions:
            nats.update(permissions)
        token = encode_jwt({"sub": user.public_key, "name": name, "nats": nats}, issuer)
        return token, user

    def write_creds(self, path: str | os.PathLike[str], user_jwt: str | None = None, user: NKey | None = None) -> str:
        """Write a ``.creds`` file (the default user unless given) with mode 0600."""
        p = os.fspath(path)
        text = format_creds(user_jwt or self.user_jwt, (user or self.user).seed)
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        return p


def _account_jwt(name: str, account: NKey, operator: NKey, jetstream: bool) -> str:
    limits: dict[str, Any] = {
        **_UNLIMITED,
        "imports": -1,
        "exports": -1,
        "wildcards": True,
        "conn": -1,
        "leaf": -1,
    }
    if jetstream:
        limits.update({"mem_storage": -1, "disk_storage": -1, "streams": -1, "consumer": -1})
    nats = {
        "limits": limits,
        "default_permissions": {"pub": {}, "sub": {}},
        "type": "account",
        "version": 2,
    }
    return encode_jwt({"sub": account.public_key, "name": name, "nats": nats}, operator)


def make_operator_auth(name: str = "jetwire", *, jetstream: bool = False) -> OperatorAuth:
    """Generate operator, system account, account (``name``) and a user, with JWTs.

    ``jetstream=True`` gives the application account unlimited JetStream, for servers
    started with JetStream enabled.
    """
    operator = new_nkey("operator")
    system = new_nkey("account")
    account = new_nkey("account")
    operator_jwt = encode_jwt(
        {
            "sub": operator.public_key,
            "name": name,
            "nats": {"type": "operator", "version": 2, "system_account": system.public_key},
        },
        operator,
    )
    system_jwt = _account_jwt("SYS", system, operator, jetstream=False)
    account_jwt = _account_jwt(name, account, operator, jetstream=jetstream)
    setup = OperatorAuth(
        operator=operator,
        operator_jwt=operator_jwt,
        system_account=system,
        system_account_jwt=system_jwt,
        account=account,
        account_jwt=account_jwt,
        user=account,  # replaced just below
        user_jwt="",
    )
    setup.user_jwt, setup.user = setup.issue_user(f"{name}-user")
    return setup
