"""Name and key validation (ADR-6, nats.go ``jetstream``). Each validator returns the
value unchanged when it is valid and raises a typed ``ValueError`` subclass otherwise,
so bad input fails before anything is sent.

Rules, compatible with nats.go:

* stream and consumer (durable) names: not empty, at most 255 bytes (UTF-8), no
  ``. * > / \\``, no whitespace, no control or other non-printable characters;
* bucket names: ``^[a-zA-Z0-9_-]+$``;
* keys: ``^[-/_=.a-zA-Z0-9]+$`` with no leading or trailing ``.`` and no ``..``.
  Keys starting with ``_kv`` are reserved by ADR-6 but, like nats.go, not rejected;
* key filters (watch/list): the key rules plus ``*`` tokens and a trailing ``>`` token
  (whole tokens: ``a.*.c`` and ``a.>``, not ``a*`` or ``a.b>``);
* object names: any non-empty string (they are base64-encoded into subjects).
"""
from __future__ import annotations

import re
from typing import cast

from jetwire import _impl
from jetwire.errors import (
    BadObjectMetaError,
    BadSubjectError,
    InvalidBucketNameError,
    InvalidConsumerNameError,
    InvalidKeyError,
    InvalidOptionError,
    InvalidStreamNameError,
)

__all__ = [
    "MAX_NAME_LEN",
    "is_valid_bucket_name",
    "is_valid_key",
    "is_valid_key_filter",
    "is_valid_stream_name",
    "validate_bucket_name",
    "validate_consumer_name",
    "validate_domain",
    "validate_durable_name",
    "validate_key",
    "validate_key_filter",
    "validate_object_name",
    "validate_seconds",
    "validate_stream_name",
]

MAX_NAME_LEN = 255


def validate_seconds(value: object, name: str, none: bool = False) -> None:
    """A timeout given to JetStream: a number of seconds > 0 (or None, with ``none``);
    ``InvalidOptionError`` naming ``name`` otherwise."""
    if none and value is None:
        return
    if type(value) is bool or not isinstance(value, (int, float)) or not value > 0:
        what = "None or a number of seconds > 0" if none else "a number of seconds > 0"
        raise InvalidOptionError(f"{name} must be {what}, not {value!r}")

_BAD_NAME = re.compile(r"[.*>/\\\s]")
_BUCKET = re.compile(r"[a-zA-Z0-9_-]+")
_KEY = re.compile(r"[-/_=.a-zA-Z0-9]+")
_KEY_FILTER = re.compile(r"[-/_=.a-zA-Z0-9*]*>?")


def _name_problem(name: object) -> str:
    if not isinstance(name, str):
        return f"must be a str, not {type(name).__name__}"
    if not name:
        return "must not be empty"
    m = _BAD_NAME.search(name)
    if m is not None:
        return f"must not contain {m.group()!r}"
    if not name.isprintable():
        return "must not contain control or non-printable characters"
    if len(name) > MAX_NAME_LEN or len(name.encode("utf-8")) > MAX_NAME_LEN:
        return f"must be at most {MAX_NAME_LEN} bytes long"
    return ""


def validate_stream_name(name: object) -> str:
    """Return ``name`` or raise :class:`~jetwire.errors.InvalidStreamNameError`."""
    problem = _name_problem(name)
    if problem:
        raise InvalidStreamNameError(f"invalid stream name {name!r}: {problem}")
    return cast(str, name)  # _name_problem: a str


def validate_domain(domain: object) -> str:
    """Return ``domain`` (a JetStream domain: one subject token, named as streams are) or
    raise ``ValueError``."""
    problem = _name_problem(domain)
    if problem:
        raise ValueError(f"invalid domain {domain!r}: {problem}")
    return cast(str, domain)  # _name_problem: a str


def validate_consumer_name(name: object) -> str:
    """Return ``name`` or raise :class:`~jetwire.errors.InvalidConsumerNameError`."""
    problem = _name_problem(name)
    if problem:
        raise InvalidConsumerNameError(f"invalid consumer name {name!r}: {problem}")
    return cast(str, name)  # _name_problem: a str


validate_durable_name = validate_consumer_name


def is_valid_stream_name(name: object) -> bool:
    return not _name_problem(name)


def validate_bucket_name(bucket: str) -> str:
    """Return ``bucket`` or raise :class:`~jetwire.errors.InvalidBucketNameError`."""
    if not isinstance(bucket, str) or _BUCKET.fullmatch(bucket) is None:
        raise InvalidBucketNameError(f"invalid bucket name {bucket!r}: only A-Z, a-z, 0-9, '_' and '-' are allowed")
    return bucket


def is_valid_bucket_name(bucket: object) -> bool:
    return isinstance(bucket, str) and _BUCKET.fullmatch(bucket) is not None


def _dots_ok(key: str) -> bool:
    return key[0] != "." and key[-1] != "." and ".." not in key


def is_valid_key(key: object) -> bool:
    return isinstance(key, str) and bool(key) and _dots_ok(key) and _KEY.fullmatch(key) is not None


def validate_key(key: str) -> str:
    """Return ``key`` or raise :class:`~jetwire.errors.InvalidKeyError`."""
    if not is_valid_key(key):
        raise InvalidKeyError(f"invalid key {key!r}")
    return key


def is_valid_key_filter(key: object) -> bool:
    if not (isinstance(key, str) and key and _dots_ok(key) and _KEY_FILTER.fullmatch(key) is not None):
        return False
    if "*" in key or ">" in key:  # wildcards as the subject's whole tokens ('a*', 'a.b>' are not)
        try:
            _impl.validate_filter(key)
        except BadSubjectError:
            return False
    return True


def validate_key_filter(key: str) -> str:
    """Return ``key`` (a key or a pattern with ``*`` and a trailing ``>``) or raise
    :class:`~jetwire.errors.InvalidKeyError`."""
    if not is_valid_key_filter(key):
        raise InvalidKeyError(f"invalid key filter {key!r}")
    return key


def validate_object_name(name: str) -> str:
    """Return ``name`` or raise :class:`~jetwire.errors.BadObjectMetaError` when it is
    not a non-empty string."""
    if not isinstance(name, str) or not name:
        raise BadObjectMetaError("object name is required")
    return name
