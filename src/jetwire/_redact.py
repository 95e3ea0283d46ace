"""Keeping secrets out of text: the one place that decides how a password, token, nkey
seed, JWT or ``.creds`` text is shown in an error message, a log line or a repr.

A URL with a password is shown as ``nats://alice:***@host:4222``, one with a token (a
user and no password) as ``nats://***@host:4222``; an option holding a secret as
``'***'``; free text has URL credentials, seeds, JWTs and ``.creds`` blocks masked.
"""
from __future__ import annotations

import re
from typing import Any

MASK = "***"

#: connect() options whose value is a secret (never shown)
SECRET_OPTIONS = frozenset({"password", "token", "nkey_seed", "user_jwt", "creds"})

# scheme://userinfo@ up to the last '@' before whitespace or a quote (a password may hold
# '/' or '@'; a '@' in a path masks more than it must, never less)
_URL_CREDS = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^/@\s:'\"]*)(?P<colon>:?)[^\s'\"]*@")
# an nkey seed: S + the key type + 56 base32 characters
_SEED = re.compile(r"\bS[A-Z][A-Z2-7]{50,}\b")
# a JWT: three base64url parts, the first a JSON object ("eyJ")
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")
# the blocks of a .creds file
_BLOCK = re.compile(r"-{3,}\s*BEGIN[^\n]*?-{3,}.*?(?:-{3,}\s*END[^\n]*?-{3,}|\Z)", re.DOTALL)


# a comma between two URLs of a list: followed by the next one's scheme
_LIST_COMMA = re.compile(r",(?=\s*[A-Za-z][A-Za-z0-9+.-]*://)")


def redact_url(url: str) -> str:
    """``nats://user:secret@host`` -> ``nats://user:***@host``; ``nats://token@host`` ->
    ``nats://***@host``; a comma-separated list URL by URL (split only where a comma
    is followed by a scheme: a password may hold a comma); other text unchanged."""
    out = []
    for u in _LIST_COMMA.split(url):
        scheme, sep, rest = u.partition("://")
        at = _creds_end(rest) if sep else -1
        if at >= 0:
            cred, host = rest[:at], rest[at + 1:]
            user, colon, _pw = cred.partition(":")
            cred = f"{user}:{MASK}" if colon else MASK
            u = f"{scheme}://{cred}@{host}"
        out.append(u)
    return ",".join(out)


def _creds_end(rest: str) -> int:
    """Where the credentials of ``rest`` (a URL after its ``://``) end: the first '@'
    after which the host (up to a '/') holds no other '@'; -1 when there is none. A
    password may hold '/' or '@' (URL parsers then read a path or another host); a '@'
    in the path of a URL without credentials masks more than it must, never less."""
    at = rest.find("@")
    while at >= 0:
        if "@" not in rest[at + 1:].partition("/")[0]:
            return at
        at = rest.find("@", at + 1)
    return -1


def _url_sub(m: re.Match[str]) -> str:
    if m.group("colon"):
        return f"{m.group('scheme')}{m.group('user')}:{MASK}@"
    return f"{m.group('scheme')}{MASK}@"


def redact_text(text: str) -> str:
    """``text`` with URL credentials, ``.creds`` blocks, nkey seeds and JWTs masked."""
    if not text:
        return text
    text = _URL_CREDS.sub(_url_sub, text)
    text = _BLOCK.sub(MASK, text)
    text = _SEED.sub(MASK, text)
    return _JWT.sub(MASK, text)


def looks_secret(text: str) -> bool:
    """Whether ``text`` (a value meant to be a file path) holds what looks like a secret:
    several lines, a ``.creds`` block, a seed, a JWT or URL credentials."""
    return "\n" in text or "-----" in text or redact_text(text) != text


def shown(value: object) -> str:
    """How a value that may be a path or secret text is named in a message: the path's
    repr, or ``<text, not shown>``."""
    if isinstance(value, str) and not looks_secret(value):
        return repr(value)
    return "<text, not shown>"


def option_repr(name: str, value: Any) -> str:
    """``name=value`` for a repr of connect() options, secrets masked."""
    if value is None:
        return f"{name}=None"
    if name == "servers":
        if isinstance(value, str):
            return f"{name}={redact_url(value)!r}"
        return f"{name}={[redact_url(str(u)) for u in value]!r}"
    if name == "creds" and isinstance(value, str) and not looks_secret(value):
        return f"{name}={value!r}"  # a path
    if name == "creds" and isinstance(value, tuple):
        return f"{name}=({', '.join(shown(v) for v in value)})"
    if name in SECRET_OPTIONS:
        return f"{name}={MASK!r}"
    if name == "ws_headers" and hasattr(value, "keys"):  # values may be credentials (Authorization)
        return f"{name}={ {str(k): MASK for k in value}!r}"
    return f"{name}={value!r}"
