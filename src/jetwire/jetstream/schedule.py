"""Message schedules (ADR-51): the ``Nats-Schedule*`` headers of a publish and the check
of a schedule's spec before anything is sent (sans-IO, shared by both flavours).

A spec is one of (the forms nats-server 2.12+ accepts):

* ``"@at <RFC 3339 time>"``: once, at that time (``2030-01-01T00:00:00Z``, an offset
  ``+02:00`` or fractional seconds allowed; a time in the past fires at once). A
  ``datetime`` is accepted too (naive means UTC) and sent as ``@at`` in UTC;
* ``"@every <duration>"``: repeatedly, a Go duration of at least one second
  (``"1s"``, ``"1m30s"``, ``"1.5h"``); a ``timedelta`` is accepted too;
* a predefined schedule: ``@yearly`` (``@annually``), ``@monthly``, ``@weekly``,
  ``@daily`` (``@midnight``), ``@hourly``;
* a 6-field cron spec ``"<seconds> <minutes> <hours> <day of month> <month> <day of
  week>"``: each field ``*`` / ``?``, a number, a range ``a-b``, a step ``x/n``, or a
  comma-separated list of those; months and days of week also by their three-letter
  names (``jan``, ``mon``); days of week 0-6, 0 being Sunday.

The check follows the server's parser (the well-formed specs it accepts pass here, one
it refuses by its form is refused here, as ``InvalidOptionError``, a ``ValueError``;
spaces around the spec are refused too). What only the
server can judge (a date that never comes, such as February 30; the target being a
subject of the stream) comes back from the server as ``MsgScheduleInvalidError``.
"""
from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from .. import _impl
from .._units import go_duration_seconds  # Go's own duration grammar (the server parses it)
from ..errors import InvalidOptionError

__all__ = [
    "SCHEDULE_HDR",
    "SCHEDULE_TARGET_HDR",
    "SCHEDULE_TTL_HDR",
    "schedule_headers",
    "validate_schedule",
]

SCHEDULE_HDR = "Nats-Schedule"
SCHEDULE_TARGET_HDR = "Nats-Schedule-Target"
SCHEDULE_TTL_HDR = "Nats-Schedule-TTL"

PREDEFINED = frozenset(("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"))

# RFC 3339 as Go's time.RFC3339 parses it: date, "T", time, optional fraction, zone
_RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})\Z")

_MONTHS = {n: i for i, n in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct",
                                        "nov", "dec"), 1)}
_DAYS = {n: i for i, n in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
# (name, min, max, names) of the six cron fields, in order
_FIELDS: tuple[tuple[str, int, int, dict[str, int] | None], ...] = (
    ("seconds", 0, 59, None),
    ("minutes", 0, 59, None),
    ("hours", 0, 23, None),
    ("day of month", 1, 31, None),
    ("month", 1, 12, _MONTHS),
    ("day of week", 0, 6, _DAYS),
)


def _bad(spec: Any, why: str) -> InvalidOptionError:
    return InvalidOptionError(f"invalid schedule {spec!r}: {why} (expected '@at <RFC 3339 time>', "
                              "'@every <duration>', a predefined '@hourly'... or a 6-field cron spec)")


def _seconds_text(seconds: float) -> str:
    """A Go duration for ``seconds`` (whole seconds when it is whole)."""
    if seconds == int(seconds):
        return f"{int(seconds)}s"
    return f"{round(seconds * 1e9)}ns"


def _check_at(spec: str, when: str) -> None:
    m = _RFC3339.match(when)
    if m is None:
        raise _bad(spec, "@at needs an RFC 3339 time such as 2030-01-01T12:00:00Z")
    y, mo, d, h, mi, s = (int(m.group(i)) for i in range(1, 7))
    try:
        datetime(y, mo, d, h, mi, s)
    except ValueError as exc:
        raise _bad(spec, f"@at time out of range ({exc})") from None
    zone = m.group(8)
    if zone != "Z" and (int(zone[1:3]) > 23 or int(zone[4:6]) > 59):
        raise _bad(spec, "@at time zone offset out of range")


def _cron_value(spec: str, text: str, name: str, names: dict[str, int] | None) -> int:
    if names is not None and text.lower() in names:
        return names[text.lower()]
    if not text.isdigit() or not text.isascii():
        raise _bad(spec, f"{name}: {text!r} is not a number")
    return int(text)


def _check_cron_field(spec: str, field: str, name: str, lo: int, hi: int, names: dict[str, int] | None) -> None:
    parts = [p for p in field.split(",") if p]
    if not parts:
        raise _bad(spec, f"{name}: empty")
    for expr in parts:
        range_step = expr.split("/")
        if len(range_step) > 2:
            raise _bad(spec, f"{name}: too many slashes in {expr!r}")
        low_high = range_step[0].split("-")
        if low_high[0] in ("*", "?"):
            if len(low_high) != 1:
                raise _bad(spec, f"{name}: too many hyphens in {expr!r}")
            start, end = lo, hi
        else:
            if len(low_high) > 2:
                raise _bad(spec, f"{name}: too many hyphens in {expr!r}")
            start = _cron_value(spec, low_high[0], name, names)
            end = _cron_value(spec, low_high[1], name, names) if len(low_high) == 2 else start
            if len(range_step) == 2 and len(low_high) == 1:
                end = hi  # "n/step" means "n-max/step"
        if len(range_step) == 2:
            step = range_step[1]
            if not step.isdigit() or not step.isascii() or int(step) == 0:
                raise _bad(spec, f"{name}: the step of {expr!r} must be a positive number")
        if start < lo:
            raise _bad(spec, f"{name}: {start} is below {lo}")
        if end > hi:
            raise _bad(spec, f"{name}: {end} is above {hi}")
        if start > end:
            raise _bad(spec, f"{name}: range {expr!r} runs backwards")


def validate_schedule(schedule: Any) -> str:
    """The ``Nats-Schedule`` value of ``schedule`` (a spec string, a ``datetime`` for
    ``@at`` or a ``timedelta`` for ``@every``; see the module docstring), checked;
    ``InvalidOptionError`` (a ``ValueError``) when it is malformed, ``TypeError`` for
    another type."""
    if isinstance(schedule, datetime):
        when = schedule if schedule.tzinfo is not None else schedule.replace(tzinfo=UTC)
        when = when.astimezone(UTC)
        frac = f".{when.microsecond:06d}".rstrip("0") if when.microsecond else ""
        return f"@at {when.strftime('%Y-%m-%dT%H:%M:%S')}{frac}Z"
    if isinstance(schedule, timedelta):
        seconds = schedule.total_seconds()
        if not seconds >= 1:
            raise _bad(schedule, "@every needs an interval of at least 1 second")
        return f"@every {_seconds_text(seconds)}"
    if not isinstance(schedule, str):
        raise TypeError(f"schedule must be a str, datetime or timedelta, not {type(schedule).__name__}")
    spec = schedule
    if not spec or spec != spec.strip():
        raise _bad(spec, "empty or surrounded by spaces")
    if spec.startswith("@"):
        if spec in PREDEFINED:
            return spec
        if spec.startswith("@at "):
            _check_at(spec, spec[4:])
            return spec
        if spec.startswith("@every "):
            every = go_duration_seconds(spec[7:])
            if every is None:
                raise _bad(spec, "@every needs a Go duration such as 30s, 5m or 1h30m")
            if every < 1:
                raise _bad(spec, "@every needs an interval of at least 1 second")
            return spec
        raise _bad(spec, "unknown @ form")
    if "\r" in spec or "\n" in spec:
        raise _bad(spec, "control characters")
    fields = spec.split()
    if len(fields) != 6:
        raise _bad(spec, f"a cron spec has 6 fields (seconds first), not {len(fields)}")
    for field, (name, lo, hi, names) in zip(fields, _FIELDS, strict=False):
        _check_cron_field(spec, field, name, lo, hi, names)
    return spec


def ttl_header_value(ttl: object, name: str = "ttl") -> str:
    """The ``Nats-TTL`` value of a per-message TTL: ``ttl`` in seconds (a number or a
    ``timedelta``, at least 1; the server keeps whole seconds, so a fraction is
    dropped), or ``"never"`` (the message outlives the stream's ``max_age``). Raises
    ``ValueError``/``TypeError`` (naming the argument ``name``) for anything else."""
    if isinstance(ttl, str):
        if ttl.lower() == "never":
            return "never"
        raise ValueError(f"{name} must be seconds or 'never', not {ttl!r}")
    if isinstance(ttl, timedelta):
        ttl = ttl.total_seconds()
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, not {type(ttl).__name__}")
    if not ttl >= 1:  # (also NaN)
        raise ValueError(f"{name} must be at least 1 second, not {ttl!r}")
    if ttl == float("inf"):
        return "never"
    return f"{int(ttl)}s"


def schedule_headers(schedule: Any, target: str | None, ttl: Any = None) -> dict[str, str]:
    """The headers of a scheduled message: ``Nats-Schedule`` (``schedule`` checked by
    :func:`validate_schedule`), ``Nats-Schedule-Target`` (required: the subject the
    scheduled messages are stored under, a subject of the same stream) and, with
    ``ttl``, ``Nats-Schedule-TTL`` (the per-message TTL of each generated message:
    seconds, at least 1, or ``"never"``; the stream needs ``allow_msg_ttl``)."""

    spec = validate_schedule(schedule)
    if target is None:
        raise InvalidOptionError("a schedule needs schedule_target (the subject its messages are stored under)")
    if not isinstance(target, str):
        raise TypeError(f"schedule_target must be a str, not {type(target).__name__}")
    _impl.validate_subject(target)
    out = {SCHEDULE_HDR: spec, SCHEDULE_TARGET_HDR: target}
    if ttl is not None:
        out[SCHEDULE_TTL_HDR] = ttl_header_value(ttl, "schedule_ttl")
    return out
