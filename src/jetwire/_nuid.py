"""Unique ids for inboxes and object chunks (NUID-style: random prefix + sequence).

Every ``NUID`` draws a new random prefix and sequence in the child of an ``os.fork()``
(Spark's Python workers, ``multiprocessing``): otherwise the module-level ones would hand
the same ids (consumer names, inboxes) to parent and child.
"""
from __future__ import annotations

import os
import secrets
import weakref

_DIGITS = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_BASE = 62
_PRE_LEN = 12
_SEQ_LEN = 10
_MAX_SEQ = _BASE**_SEQ_LEN


class NUID:
    """Fast, unique-enough ids; not thread-locked (each holder owns one)."""

    __slots__ = ("__weakref__", "_inc", "_pre", "_seq")

    def __init__(self) -> None:
        self._reseed()
        _all.add(self)

    def _reseed(self) -> None:
        self._randomize_prefix()
        self._seq = secrets.randbelow(_MAX_SEQ)
        self._inc = 33 + secrets.randbelow(333)

    def _randomize_prefix(self) -> None:
        self._pre = "".join(chr(_DIGITS[b % _BASE]) for b in secrets.token_bytes(_PRE_LEN))

    def next(self) -> str:
        self._seq += self._inc
        if self._seq >= _MAX_SEQ:
            self._randomize_prefix()
            self._seq = secrets.randbelow(_MAX_SEQ // 2)
        n = self._seq
        out = []
        for _ in range(_SEQ_LEN):
            n, r = divmod(n, _BASE)
            out.append(chr(_DIGITS[r]))
        return self._pre + "".join(out)


_all: weakref.WeakSet[NUID] = weakref.WeakSet()


def _reseed_all() -> None:
    for nuid in list(_all):
        nuid._reseed()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reseed_all)

_global = NUID()


def next_nuid() -> str:
    return _global.next()
