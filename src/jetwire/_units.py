"""One home for the units people and servers write: durations, sizes and RFC 3339 times.

* Durations: :func:`parse_duration` reads what a person types (``90``, ``1.5``,
  ``500ms``, ``1m30s``, ``1h2m3.5s``, ``7d``, a ``timedelta``) as float seconds; the CLI,
  the Spark options and the schedule checker (:func:`go_duration_seconds`, Go's own
  grammar, for what the server parses) share its one token grammar. Models keep float
  seconds and put integer nanoseconds on the wire (:func:`seconds_to_ns`,
  :func:`ns_to_seconds`).
* Sizes: :func:`parse_size` (``128``, ``1KB``, ``4MiB``: 1024-based, as the nats CLI).
* Times: :func:`parse_rfc3339` / :func:`format_rfc3339` (nanoseconds kept through
  :class:`NanoDatetime`), the models' converters; :func:`parse_time_input` for a time a
  person gives (an option, a flag: ISO 8601 or epoch milliseconds). The hot path has its
  own compiled reader of message times (``_impl.rfc3339_us``).

No I/O and no jetwire imports here.
"""
from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta, timezone
from typing import SupportsIndex

__all__ = [
    "NanoDatetime",
    "datetime_to_ns",
    "format_rfc3339",
    "go_duration_seconds",
    "ns_to_seconds",
    "parse_duration",
    "parse_rfc3339",
    "parse_size",
    "parse_time_input",
    "rfc3339_to_us",
    "seconds_to_ns",
    "wait_limit",
]

_UTC = UTC
_NS = 1_000_000_000

# ---------------------------------------------------------------------------------
# durations

# one duration token: a number (``1``, ``1.5``, ``1.``, ``.5``) and its unit
_DUR_TOKEN = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h|d|w|y)")
# the same token as a person may write it: spaces around the number and the unit
_DUR_TOKEN_LOOSE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*(ns|us|µs|μs|ms|s|m|h|d|w|y)")
_DUR_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0,
                "d": 86400.0, "w": 7 * 86400.0, "y": 365 * 86400.0}
_GO_UNITS = frozenset(("ns", "us", "µs", "μs", "ms", "s", "m", "h"))  # what Go's time.ParseDuration knows


def _sum_tokens(text: str, token: re.Pattern[str], go: bool) -> float | None:
    if not text:
        return None
    pos = 0
    total = 0.0
    while pos < len(text):
        m = token.match(text, pos)
        if m is None or (go and m.group(2) not in _GO_UNITS):
            return None
        total += float(m.group(1)) * _DUR_SECONDS[m.group(2)]
        pos = m.end()
    return total


def go_duration_seconds(text: str) -> float | None:
    """The seconds of a Go duration string exactly as Go parses it (``"1m30s"``,
    ``"1.5h"``, ``"500ms"``; no sign, no spaces, units ns to h), or None when ``text`` is
    not one (what the server reads, e.g. an ``@every`` schedule)."""
    return _sum_tokens(text, _DUR_TOKEN, go=True)


def parse_duration(value: object) -> float:
    """Float seconds from a duration a person gives: a number of seconds (``90``,
    ``1.5``, ``"90"``, ``"-1"``), a ``timedelta``, or Go-style text (``"500ms"``,
    ``"1m30s"``, ``"1h2m3.5s"``; also ``d``, ``w``, ``y``, any case, spaces between the
    parts). ``ValueError`` for anything else (a bool, NaN, ``"soon"``)."""
    if isinstance(value, bool):
        raise ValueError(f"not a duration: {value!r} (examples: 30s, 500ms, 1m30s, 1h, 7d)")
    if isinstance(value, (int, float)):
        secs = float(value)
    elif isinstance(value, timedelta):
        secs = value.total_seconds()
    else:
        s = str(value).strip().lower()
        try:
            secs = float(s)
        except ValueError:
            total = _sum_tokens(s, _DUR_TOKEN_LOOSE, go=False)
            if total is None:
                raise ValueError(f"not a duration: {value!r} (examples: 30s, 500ms, 1m30s, 1h, 7d)") from None
            secs = total
    if math.isnan(secs):
        raise ValueError(f"not a duration: {value!r}")
    return secs


def wait_limit(timeout: float | None) -> float | None:
    """A timeout as the waiting primitives take it: None and infinity wait as long as it
    takes (None), a NaN is a ``ValueError`` (it compares false with every time, so a
    wait on it would never end nor time out), any other number is kept."""
    if timeout is None:
        return None
    if timeout != timeout:
        raise ValueError("a timeout must be a number of seconds, not NaN")
    if timeout == math.inf:
        return None
    return timeout


def seconds_to_ns(v: float | int | timedelta) -> int:
    """Float (or int) seconds, or a ``timedelta``, to integer nanoseconds."""
    if isinstance(v, bool):
        raise TypeError("a duration must be a number of seconds, not a bool")
    if isinstance(v, int):
        return v * _NS
    if isinstance(v, float):
        if v.is_integer():
            return int(v) * _NS
        return round(v * 1e9)
    if isinstance(v, timedelta):
        return (v.days * 86400 + v.seconds) * _NS + v.microseconds * 1000
    raise TypeError(f"a duration must be float seconds or a timedelta, not {type(v).__name__}")


def ns_to_seconds(ns: int) -> float:
    """Integer nanoseconds to float seconds (correctly rounded)."""
    return ns / _NS


# ---------------------------------------------------------------------------------
# sizes

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.I)
_SIZE_MUL = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def parse_size(text: object) -> int:
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


# ---------------------------------------------------------------------------------
# times


class NanoDatetime(datetime):
    """An aware ``datetime`` that also remembers the nanoseconds below its microsecond.

    Servers stamp times with nanosecond precision; Python datetimes stop at
    microseconds. Times parsed from server JSON whose sub-microsecond digits are not
    zero are returned as this subclass so that writing them back (for example an
    ``opt_start_time`` in a consumer update) reproduces the exact server value.
    ``nanosecond`` is 0..999. Arithmetic and ``replace`` give back a value whose
    ``nanosecond`` is 0. Comparisons ignore ``nanosecond``.
    """

    nanosecond: int = 0

    @classmethod
    def from_datetime(cls, dt: datetime, nanosecond: int = 0) -> datetime:
        """``dt`` with ``nanosecond`` extra nanoseconds (a plain datetime when 0)."""
        if not nanosecond:
            return dt
        out = cls(dt.year, dt.month, dt.day, dt.hour, dt.minute, dt.second, dt.microsecond, dt.tzinfo, fold=dt.fold)
        out.nanosecond = nanosecond
        return out

    def _plain(self) -> datetime:
        return datetime(self.year, self.month, self.day, self.hour, self.minute, self.second, self.microsecond,
                        self.tzinfo, fold=self.fold)

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[object, tuple[datetime, int]]:
        return (NanoDatetime.from_datetime, (self._plain(), self.nanosecond))

    def __reduce__(self) -> tuple[object, tuple[datetime, int]]:
        return self.__reduce_ex__(2)

    def __repr__(self) -> str:  # shown as the plain datetime; see ``nanosecond``
        return repr(self._plain())

    def isoformat(self, sep: str = "T", timespec: str = "auto") -> str:
        if timespec == "nanoseconds" or (timespec == "auto" and self.nanosecond):
            base = self._plain().isoformat(sep, "microseconds")
            # insert the extra digits after the microseconds
            if self.tzinfo is not None:
                i = len(base) - 6 if base[-6] in "+-" else len(base)
                return f"{base[:i]}{self.nanosecond:03d}{base[i:]}"
            return f"{base}{self.nanosecond:03d}"
        return self._plain().isoformat(sep, timespec)

    def __str__(self) -> str:
        return self.isoformat(" ")


def datetime_to_ns(dt: datetime) -> int:
    """Nanoseconds since the Unix epoch (naive datetimes count as UTC)."""
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=_UTC)
    ns = getattr(dt, "nanosecond", 0)
    delta = dt - datetime(1970, 1, 1, tzinfo=_UTC)
    return (delta.days * 86400 + delta.seconds) * _NS + delta.microseconds * 1000 + ns


def _time_fallback(s: str, naive_local: bool = False) -> datetime:
    # Slow path for unusual layouts: let fromisoformat try, with the fraction cut to 6.
    t = s.strip()
    if t.endswith(("Z", "z")):
        t = t[:-1] + "+00:00"
    ns = 0
    dot = t.find(".")
    if dot != -1:
        end = dot + 1
        while end < len(t) and t[end].isdigit():
            end += 1
        frac = t[dot + 1:end]
        if len(frac) > 6:
            ns = int((frac + "000")[6:9])
            t = t[:dot + 7] + t[end:]
    dt = datetime.fromisoformat(t)
    if dt.tzinfo is None:
        dt = dt.astimezone() if naive_local else dt.replace(tzinfo=_UTC)
    return NanoDatetime.from_datetime(dt, ns)


def parse_rfc3339(s: str | None) -> datetime | None:
    """An RFC 3339 time (up to 9 fractional digits, ``Z`` or an offset) to an aware
    datetime, as the server writes them (other ISO 8601 layouts are read too; naive means
    UTC). Go's zero time and ``None``/empty give ``None``; ``ValueError`` otherwise."""
    if not s:
        return None
    if s.startswith("0001-01-01T00:00:00"):
        return None
    return _parse_time(s)


def _parse_time(s: str, naive_local: bool = False) -> datetime:
    n = len(s)
    try:
        if n < 20 or s[4] != "-" or s[7] != "-" or s[10] not in "Tt " or s[13] != ":" or s[16] != ":":
            raise ValueError
        last = s[-1]
        if last == "Z" or last == "z":
            tz = _UTC
            end = n - 1
        elif s[-6] in "+-" and s[-3] == ":":
            off = int(s[-5:-3]) * 3600 + int(s[-2:]) * 60
            tz = _UTC if off == 0 else timezone(timedelta(seconds=-off if s[-6] == "-" else off))
            end = n - 6
        else:
            raise ValueError
        us = ns = 0
        if end > 19:
            if s[19] != ".":
                raise ValueError
            frac = s[20:end]
            if not frac.isdigit() or not frac.isascii():
                raise ValueError
            if len(frac) < 9:
                frac = frac + "000000000"[len(frac):]
            us = int(frac[:6])
            ns = int(frac[6:9])
        elif end != 19:
            raise ValueError
        dt = datetime(int(s[0:4]), int(s[5:7]), int(s[8:10]), int(s[11:13]), int(s[14:16]), int(s[17:19]), us, tz)
    except (ValueError, IndexError):
        try:
            return _time_fallback(s, naive_local)
        except ValueError:
            raise ValueError(f"not an RFC 3339 time: {s!r}") from None
    if ns:
        out = NanoDatetime(dt.year, dt.month, dt.day, dt.hour, dt.minute, dt.second, us, tz)
        out.nanosecond = ns
        return out
    return dt


def format_rfc3339(dt: datetime, digits: int = 9) -> str:
    """An aware datetime to RFC 3339 in UTC with 9 fractional digits
    (``2024-01-02T03:04:05.123456789Z``), or 6 with ``digits=6``. Naive datetimes are
    taken as UTC."""
    if not isinstance(dt, datetime):
        raise TypeError(f"expected a datetime, got {type(dt).__name__}")
    ns = getattr(dt, "nanosecond", 0)
    u = dt if dt.tzinfo is None or dt.utcoffset() == timedelta(0) else dt.astimezone(_UTC)
    frac = f"{u.microsecond:06d}{ns:03d}" if digits == 9 else f"{u.microsecond:06d}"[:digits]
    return f"{u.year:04d}-{u.month:02d}-{u.day:02d}T{u.hour:02d}:{u.minute:02d}:{u.second:02d}.{frac}Z"


def parse_time_input(value: object, *, naive_local: bool = False) -> datetime:
    """An aware datetime from a time a person gives: a ``datetime``, epoch milliseconds
    (an integer or an integer string), or ISO 8601 / RFC 3339 text (``Z`` or an offset,
    up to 9 fractional digits, a space for the ``T``). A time without a zone is UTC, or
    local time with ``naive_local``. ``ValueError`` for anything else."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            return value.astimezone() if naive_local else value.replace(tzinfo=_UTC)
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return datetime.fromtimestamp(value / 1000.0, tz=_UTC)
    s = str(value).strip()
    if re.fullmatch(r"-?[0-9]+", s):
        return datetime.fromtimestamp(int(s) / 1000.0, tz=_UTC)
    if not s:
        raise ValueError(f"not a time: {value!r}")
    return _parse_time(s, naive_local)


def rfc3339_to_us(s: str) -> int | None:
    """Microseconds since the epoch (floored) of an RFC 3339 time in any layout
    :func:`parse_rfc3339` reads, or None when it is not one (the lenient twin of the hot
    path's ``_impl.rfc3339_us``)."""
    if not s:
        return None
    try:
        return datetime_to_ns(_parse_time(s)) // 1000
    except (ValueError, OverflowError):
        return None
