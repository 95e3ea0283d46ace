"""Credentials: nkey seeds and .creds files (JWT + seed), signing the server nonce."""
from __future__ import annotations

import base64
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._redact import looks_secret, shown
from .errors import AuthorizationError

if TYPE_CHECKING:
    from ._typing import JSONObject
    from .options import Options

_CREDS_MARK = re.compile(rb"-{3,}\s*BEGIN [^\n]*JWT")


def is_creds_text(value: object) -> bool:
    """Whether ``value`` (str or bytes) is the text of a ``.creds`` file rather than a path."""
    if isinstance(value, str):
        value = value.encode("utf-8", "replace")
    return isinstance(value, (bytes, bytearray)) and _CREDS_MARK.search(value) is not None


def expand_path(path: str) -> str:
    """A file path as a shell would read it: ``~`` and ``$VAR`` expanded (as nats.go's
    credentials paths)."""
    return os.path.expanduser(os.path.expandvars(path))


def _read_text(value: str | bytes | os.PathLike[str]) -> str:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    try:
        value = os.fsdecode(os.fspath(value))
    except TypeError:
        raise AuthorizationError(f"expected a str, bytes or a path, not {type(value).__name__}") from None
    if not looks_secret(value):
        path = expand_path(value)
        if os.path.exists(path):
            try:
                with open(path, encoding="utf-8") as fh:
                    return fh.read()
            except OSError as exc:
                raise AuthorizationError(f"cannot read {shown(path)}: {exc.strerror or type(exc).__name__}") from None
    return value


def _read_bytes(source: str | bytes | bytearray | os.PathLike[str], what: str) -> bytearray:
    """The bytes of a file (``source`` a path), or of ``source`` itself when it is the
    file's text (bytes, or a str holding a ``.creds`` block). Errors never show text
    that looks like a secret (see ``_redact.shown``)."""
    if isinstance(source, (bytes, bytearray)):
        return bytearray(source)
    if isinstance(source, str) and is_creds_text(source):
        return bytearray(source.encode("utf-8"))
    try:
        path = os.fspath(source)
    except TypeError:
        raise AuthorizationError(f"{what}: expected a path or the file's text, not {type(source).__name__}") from None
    if isinstance(path, str) and looks_secret(path):
        raise AuthorizationError(f"{what} <text, not shown> is neither a readable file nor the text of a .creds file "
                                 "(no '-----BEGIN NATS USER JWT-----' block)")
    if isinstance(path, str):
        path = expand_path(path)
    try:
        with open(path, "rb") as fh:
            return bytearray(fh.read())
    except OSError as exc:
        raise AuthorizationError(f"cannot read {what} file {shown(os.fsdecode(path))}: "
                                 f"{exc.strerror or type(exc).__name__}") from None


def _wipe(buf: bytearray) -> None:
    for i in range(len(buf)):
        buf[i] = 0


def _blocks(text: bytearray) -> list[bytearray]:
    """The ``-----BEGIN ...-----`` delimited blocks of a credentials file (or the whole
    text, stripped, when it has none)."""
    found = [text[m.start(1):m.end(1)].strip() for m in _CREDS_BLOCK_B.finditer(text)]
    return found or [text.strip()]


_CREDS_BLOCK_B = re.compile(  # line ends \n or \r\n (a file written on Windows), as nkeys reads them
    rb"\s*(?:(?:[-]{3,}[^\r\n]*[-]{3,}\r?\n))(.+?)(?:\r?\n\s*[-]{3,}[^\r\n]*[-]{3,}\r?\n?)", re.DOTALL
)


def parse_creds(creds: str | bytes | bytearray | os.PathLike[str]) -> tuple[str, bytearray]:
    """Return (jwt, seed) from a .creds file (a path) or its text (str or bytes); wipe
    the seed once used."""
    raw = _read_bytes(creds, "credentials")
    try:
        blocks = _blocks(raw)
    finally:
        _wipe(raw)
    if len(blocks) < 2:
        name = "credentials text" if isinstance(creds, (bytes, bytearray)) or is_creds_text(creds) \
            else f"credentials file {shown(os.fsdecode(os.fspath(creds)))}"
        raise AuthorizationError(f"{name} has no JWT and seed blocks")
    return blocks[0].decode(), blocks[1]


def parse_creds_pair(jwt_file: str, seed_file: str) -> tuple[str, bytearray]:
    """(jwt, seed) from a JWT file and a seed file (either may be in .creds format)."""
    raw = _read_bytes(jwt_file, "JWT")
    jwt = _blocks(raw)[0].decode()
    _wipe(raw)
    raw = _read_bytes(seed_file, "seed")
    try:
        seed = next((b for b in _blocks(raw) if b.startswith(b"S")), None)
    finally:
        _wipe(raw)
    if seed is None:
        raise AuthorizationError(f"no nkey seed in {shown(seed_file)}")
    return jwt, seed


def load_seed(nkey_seed: str | bytes | os.PathLike[str]) -> bytearray:
    """A seed given inline (``SU...``) or as a path to a file holding it."""
    text = _read_text(nkey_seed).strip()
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("S") and len(line) >= 56:
            return bytearray(line.encode())
    text = "" if isinstance(nkey_seed, (bytes, bytearray)) else os.fsdecode(os.fspath(nkey_seed))
    if looks_secret(text) or not any(c in text for c in "/\\.~$"):
        # not recognisably a path: it may be a seed cut short or mistyped, never shown
        raise AuthorizationError("no nkey seed found: nkey_seed <text, not shown> is neither a seed nor a "
                                 "readable file holding one")
    raise AuthorizationError(f"no nkey seed found: nkey_seed {shown(text)} is neither a seed nor a readable "
                             "file holding one")


def sign_nonce(seed: bytearray, nonce: str) -> tuple[str, str]:
    """Sign the server nonce, then wipe ``seed``; returns (signature b64url without
    padding, public key)."""
    try:
        import nkeys
    except ImportError as exc:  # pragma: no cover
        raise AuthorizationError("nkey authentication needs the 'nkeys' package") from exc
    try:
        try:
            kp = nkeys.from_seed(seed)
        except Exception as exc:  # the message of a decoding error may quote the seed
            raise AuthorizationError(f"invalid nkey seed ({type(exc).__name__})") from None
        sig = kp.sign(nonce.encode())
        pub = kp.public_key.decode()
        kp.wipe()
    finally:
        _wipe(seed)
    return b64url(sig), pub


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


class Credentials:
    """What goes into CONNECT for the configured auth method.

    Callbacks (``token_cb``, ``user_cb``, ``user_jwt_cb``, ``signature_cb``) are not
    called here: :meth:`callbacks` says which to call for a server's INFO, the driver
    calls them (plain or coroutine functions), and :meth:`connect_fields` takes their
    answers."""

    def __init__(self, opts: Options) -> None:
        self.opts = opts

    def callbacks(self, info: JSONObject) -> list[tuple[str, Callable[..., object], tuple[bytes, ...]]]:
        o = self.opts
        nonce = info.get("nonce")
        out: list[tuple[str, Callable[..., object], tuple[bytes, ...]]] = []
        if o.token_cb is not None:
            out.append(("token", o.token_cb, ()))
        if o.user_cb is not None:
            out.append(("user", o.user_cb, ()))
        if o.user_jwt_cb is not None:
            out.append(("jwt", o.user_jwt_cb, ()))
        if o.signature_cb is not None and nonce and (o.user_jwt_cb is not None or o.nkey is not None):
            out.append(("sig", o.signature_cb, (nonce.encode(),)))
        return out

    def connect_fields(self, info: JSONObject, url_user: str | None, url_password: str | None,
                       answers: dict[str, Any] | None = None) -> dict[str, str]:
        o = self.opts
        answers = answers or {}
        out: dict[str, str] = {}
        nonce = info.get("nonce")
        if "jwt" in answers:  # UserJWT: the callbacks sign, the client never sees the seed
            out["jwt"] = _text(answers["jwt"], "user_jwt_cb")
            if "sig" in answers:
                out["sig"] = _signature(answers["sig"])
        elif o.nkey is not None and o.signature_cb is not None:
            if nonce:  # no nonce: the server asks for no nkey (it has none configured)
                out["nkey"] = o.nkey
                out["sig"] = _signature(answers.get("sig"))
        elif o.creds or o.user_jwt is not None:
            if o.user_jwt is not None:
                assert o.nkey_seed is not None  # make_options refuses user_jwt without it
                jwt, seed = o.user_jwt, load_seed(o.nkey_seed)
            elif isinstance(o.creds, tuple):
                jwt, seed = parse_creds_pair(*o.creds)
            else:
                assert o.creds is not None  # the branch is taken for creds when user_jwt is None
                jwt, seed = parse_creds(o.creds)
            out["jwt"] = jwt
            if nonce:
                out["sig"], _ = sign_nonce(seed, nonce)
            else:
                _wipe(seed)
        elif o.nkey_seed:
            seed = load_seed(o.nkey_seed)
            if not nonce:  # the server asks for no nkey (it has none configured)
                _wipe(seed)
            else:
                out["sig"], out["nkey"] = sign_nonce(seed, nonce)
        user = url_user if url_user is not None else o.user
        password = url_password if url_password is not None else o.password
        if "user" in answers:
            try:
                user, password = answers["user"]
            except (TypeError, ValueError):
                raise AuthorizationError("user_cb must return (user, password)") from None
        token = o.token
        if "token" in answers:
            token = _text(answers["token"], "token_cb")
        if user is not None and password is None and url_user is not None and token is None:
            # nats://token@host
            out["auth_token"] = user
        elif user is not None:
            out["user"] = user
            out["pass"] = password or ""
        if token is not None:
            out["auth_token"] = token
        return out


def _text(value: object, what: str) -> str:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode()
    if not isinstance(value, str) or not value:
        raise AuthorizationError(f"{what} returned {type(value).__name__}, not a non-empty str")
    return value


def _signature(sig: object) -> str:
    if not isinstance(sig, (bytes, bytearray)) or not sig:
        raise AuthorizationError("signature_cb must return the raw signature bytes of the nonce")
    return b64url(bytes(sig))
