"""``Headers``: the one multi-valued header mapping shared by both protocol implementations.

Semantics follow NATS ADR-4 and nats.go's ``nats.Header``: keys are case-preserving and
case-sensitive, a key may carry several values (one wire line each, order kept), and
the ``NATS/1.0 <status> <description>`` line of a status message is exposed as
``status`` / ``description``.

Text is bytes-faithful: header names and values are ``str``; bytes that are not UTF-8
are kept as surrogate escapes, so ``value.encode("utf-8", "surrogateescape")`` gives back
exactly what was received (and is what goes on the wire when it is published again).
Values (and names) may also be given as ``bytes``: they are sent unchanged.

Internals: ``_d`` is a plain ``dict[str, list[str]]`` in insertion order and never holds
an empty list; ``status`` and ``description`` are plain attributes (``None`` when
absent). The decoders (compiled and pure) build instances with :func:`_make`, which
skips ``__init__`` and all validation because the wire parser has already checked
every key and value.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TypeVar, Union, overload

from ..errors import BadHeaderError

__all__ = ["Headers", "HeadersInit", "as_text", "check_key", "check_value"]

HeadersInit = Union["Headers", Mapping[str, str | list[str] | tuple[str, ...]], Iterable[tuple[str, str]]]

_T = TypeVar("_T")


@overload
def as_text(value: bytes | bytearray | memoryview) -> str: ...


@overload
def as_text(value: _T) -> _T | str: ...


def as_text(value: object) -> object:
    """``bytes`` as ``str`` with surrogate escapes (lossless); anything else unchanged."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "surrogateescape")
    return value


def check_key(key: object) -> None:
    """Raise ``BadHeaderError`` unless ``key`` is a header name: no ':', no whitespace or
    control characters (bytes that are not UTF-8, kept as surrogate escapes, are allowed)."""
    if (
        not isinstance(key, str)
        or not key
        or ":" in key
        or (not (key.isascii() and key.isprintable() and " " not in key)
        and any(c.isspace() or ord(c) < 33 or ord(c) == 127 for c in key))
    ):
        raise BadHeaderError(f"invalid header key {key!r}: no ':', whitespace or control characters")


def check_value(value: object) -> None:
    """Raise ``BadHeaderError`` unless ``value`` is a str (or bytes) without CR or LF."""
    if not isinstance(value, str):
        if isinstance(value, (bytes, bytearray)):
            if b"\r" in value or b"\n" in value:
                raise BadHeaderError(f"header value {value!r} contains CR or LF")
            return
        raise BadHeaderError(f"header values must be str or bytes, not {type(value).__name__}")
    if "\r" in value or "\n" in value:
        raise BadHeaderError(f"header value {value!r} contains CR or LF")


def _values_of(key: str, value: Any) -> list[str]:
    if isinstance(value, (str, bytes, bytearray)):
        check_value(value)
        return [as_text(value)]
    if isinstance(value, (list, tuple)):
        for v in value:
            check_value(v)
        return [as_text(v) for v in value]
    raise BadHeaderError(f"header {key!r}: value must be a str or a list of str, not {type(value).__name__}")


class Headers:
    """A multi-valued, case-sensitive ``str -> str`` mapping (like nats.go's ``nats.Header``).

    * ``h["K"]`` is the first value (``KeyError`` when missing), ``h.get_all("K")`` every value.
    * ``h.add("K", v)`` appends a value, ``h["K"] = v`` replaces all values, ``del h["K"]``.
    * Iteration, ``keys()`` and ``len()`` see distinct keys in insertion order.
    * ``items()`` and ``values()`` yield one entry per value, in wire order, so
      ``Headers(h.items()) == h``.
    * ``status`` / ``description`` hold the status line of a status message
      (``NATS/1.0 503 No Responders`` gives ``"503"`` and ``"No Responders"``).
    * ``==`` compares with another ``Headers`` (keys, values, status and description) or
      with a plain ``dict`` whose values are ``str`` or lists of ``str`` (status ignored).
    """

    __slots__ = ("_d", "description", "status")

    def __init__(self, init: HeadersInit | None = None, /) -> None:
        self._d: dict[str, list[str]] = {}
        self.status: str | None = None
        self.description: str | None = None
        if init is None:
            return
        if isinstance(init, Headers):
            self._d = {k: list(v) for k, v in init._d.items()}
            self.status = init.status
            self.description = init.description
            return
        d = self._d
        if isinstance(init, Mapping):
            for k, v in init.items():
                k = as_text(k)
                check_key(k)
                values = _values_of(k, v)
                if values:
                    if k in d:
                        d[k].extend(values)
                    else:
                        d[k] = values
            return
        if isinstance(init, (str, bytes, bytearray)):
            raise BadHeaderError(f"cannot build Headers from {type(init).__name__}")
        for pair in init:
            try:
                if isinstance(pair, (str, bytes, bytearray)):
                    raise TypeError
                k, v = pair
            except (TypeError, ValueError):
                raise BadHeaderError(f"expected (key, value) pairs, got {pair!r}") from None
            self.add(k, v)

    # -- reading ---------------------------------------------------------------------
    def __getitem__(self, key: str) -> str:
        return self._d[key][0]

    @overload
    def get(self, key: str) -> str | None: ...

    @overload
    def get(self, key: str, default: _T) -> str | _T: ...

    def get(self, key: str, default: object = None) -> object:
        """The first value of ``key``, or ``default``."""
        values = self._d.get(key)
        return values[0] if values else default

    def get_all(self, key: str) -> list[str]:
        """Every value of ``key`` in order (``[]`` when missing)."""
        values = self._d.get(key)
        return list(values) if values else []

    def __contains__(self, key: object) -> bool:
        return key in self._d

    def __iter__(self) -> Iterator[str]:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __bool__(self) -> bool:
        return bool(self._d) or self.status is not None

    def keys(self) -> list[str]:
        """Distinct keys in insertion order."""
        return list(self._d)

    def values(self) -> list[str]:
        """Every value, one entry per wire line."""
        return [v for vs in self._d.values() for v in vs]

    def items(self) -> list[tuple[str, str]]:
        """Every ``(key, value)`` pair, one entry per wire line (repeated keys repeat)."""
        return [(k, v) for k, vs in self._d.items() for v in vs]

    def to_dict(self) -> dict[str, list[str]]:
        """A plain ``dict[str, list[str]]`` copy."""
        return {k: list(v) for k, v in self._d.items()}

    # -- writing ---------------------------------------------------------------------
    def add(self, key: str, value: str) -> None:
        """Append ``value`` to the values of ``key``."""
        key = as_text(key)
        check_key(key)
        check_value(value)
        value = as_text(value)
        values = self._d.get(key)
        if values is None:
            self._d[key] = [value]
        else:
            values.append(value)

    def __setitem__(self, key: str, value: str | list[str]) -> None:
        key = as_text(key)
        check_key(key)
        values = _values_of(key, value)
        if values:
            self._d[key] = values
        else:
            self._d.pop(key, None)

    def __delitem__(self, key: str) -> None:
        del self._d[key]

    @overload
    def pop(self, key: str) -> str: ...

    @overload
    def pop(self, key: str, default: _T, /) -> str | _T: ...

    def pop(self, key: str, *default: Any) -> Any:
        """Remove ``key`` and return its first value (or ``default``)."""
        values = self._d.pop(key, None)
        if values is None:
            if default:
                return default[0]
            raise KeyError(key)
        return values[0]

    def copy(self) -> Headers:
        return Headers(self)

    __copy__ = copy

    # -- comparison and display ------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if isinstance(other, Headers):
            return self._d == other._d and self.status == other.status and self.description == other.description
        if isinstance(other, dict):
            if len(other) != len(self._d):
                return False
            for k, v in other.items():
                mine = self._d.get(k)
                if mine is None:
                    return False
                if isinstance(v, str):
                    if len(mine) != 1 or mine[0] != v:
                        return False
                elif isinstance(v, (list, tuple)):
                    if mine != list(v):
                        return False
                else:
                    return False
            return True
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        extra = ""
        if self.status is not None:
            extra = f", status={self.status!r}"
            if self.description is not None:
                extra += f", description={self.description!r}"
        return f"Headers({self._d!r}{extra})"


_new = object.__new__


def _make(d: dict[str, list[str]], status: str | None = None, description: str | None = None) -> Headers:
    """Fast internal constructor for decoders: takes ownership of ``d``, no validation."""
    h = _new(Headers)
    h._d = d
    h.status = status
    h.description = description
    return h
