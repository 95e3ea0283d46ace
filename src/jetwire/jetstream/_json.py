"""The one JSON converter behind every JetStream model.

Models are plain dataclasses deriving from :class:`Model`. Their fields carry the
server's JSON names; the type hints (plus a little field metadata) tell the converter
how to translate each value:

* ``duration(...)`` fields are float seconds in Python and integer nanoseconds on the
  wire (``timedelta`` is accepted on construction);
* ``datetime`` fields are aware datetimes in Python and RFC 3339 strings with
  nanoseconds on the wire; Go's zero time ``0001-01-01T00:00:00Z`` reads as ``None``;
  sub-microsecond digits survive a round trip (see :class:`NanoDatetime`);
* ``Enum`` fields hold members of ``str`` enums; plain strings are accepted and unknown
  strings from a newer server are kept as plain ``str``;
* nested models, lists of models and ``dict[str, Model]`` recurse;
* ``b64`` fields are ``bytes`` in Python and base64 on the wire, ``hdrs_b64`` fields are
  :class:`~jetwire.protocol.headers.Headers` in Python and a base64 header block on the
  wire, ``headers`` fields are ``Headers`` in Python and ``{"K": ["v", ...]}`` on the
  wire.

Unknown JSON keys land in the model's ``_extra`` dict (excluded from ``repr``/``==``)
and are written back by :meth:`Model.to_json_dict`, so configs from newer servers
round-trip.

Config-like models (``_omit_defaults = True``) leave out of their JSON every field that
is ``None``, falsy (``False``, ``0``, ``""``, empty containers) or equal to its declared
default, unless the field is marked ``always``. The server decodes into Go structs, so
an absent field and a zero/default one mean the same thing to it; leaving them out lets
the server apply its defaults (e.g. a duplicate window derived from ``max_age``), the
way nats.go's ``omitempty`` does. For the same reason, an empty value read into a
config field whose default is ``None`` (``""``, ``0``, ``[]``, ``{}``) reads as
``None``. Info-like models only leave out ``None``.

No I/O happens here.
"""
from __future__ import annotations

import base64
import copy
import dataclasses
import difflib
import typing
from dataclasses import MISSING, dataclass, field
from datetime import datetime, timedelta, timezone
from enum import Enum
from typing import Any, Callable, ClassVar, Optional, Union, get_args, get_origin

import orjson

__all__ = [
    "Model",
    "NanoDatetime",
    "duration",
    "jfield",
    "parse_time",
    "format_time",
    "ns_to_seconds",
    "seconds_to_ns",
    "datetime_to_ns",
    "config_from_kwargs",
    "enum_value",
    "headers_to_json",
]

_UTC = timezone.utc
_NS = 1_000_000_000
_META_KEY = "jetwire"

# ---------------------------------------------------------------------------------
# durations


def seconds_to_ns(v: Union[float, int, timedelta]) -> int:
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


def _dur_coerce(v: Any) -> Any:
    if isinstance(v, timedelta):
        return v.total_seconds()
    return v


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

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (NanoDatetime.from_datetime, (self._plain(), self.nanosecond))

    def __reduce__(self) -> Any:
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


def _time_fallback(s: str) -> Optional[datetime]:
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
        dt = dt.replace(tzinfo=_UTC)
    return NanoDatetime.from_datetime(dt, ns)


def parse_time(s: Optional[str]) -> Optional[datetime]:
    """An RFC 3339 time (up to 9 fractional digits, ``Z`` or an offset) to an aware
    datetime. Go's zero time and ``None``/empty give ``None``."""
    if not s:
        return None
    if s.startswith("0001-01-01T00:00:00"):
        return None
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
            return _time_fallback(s)
        except ValueError:
            raise ValueError(f"not an RFC 3339 time: {s!r}") from None
    if ns:
        out = NanoDatetime(dt.year, dt.month, dt.day, dt.hour, dt.minute, dt.second, us, tz)
        out.nanosecond = ns
        return out
    return dt


def format_time(dt: datetime) -> str:
    """An aware datetime to RFC 3339 in UTC with 9 fractional digits
    (``2024-01-02T03:04:05.123456789Z``). Naive datetimes are taken as UTC."""
    if not isinstance(dt, datetime):
        raise TypeError(f"expected a datetime, got {type(dt).__name__}")
    ns = getattr(dt, "nanosecond", 0)
    if dt.tzinfo is None:
        u = dt
    elif dt.utcoffset() == timedelta(0):
        u = dt
    else:
        u = dt.astimezone(_UTC)
    return (f"{u.year:04d}-{u.month:02d}-{u.day:02d}T{u.hour:02d}:{u.minute:02d}:{u.second:02d}"
            f".{u.microsecond:06d}{ns:03d}Z")


# ---------------------------------------------------------------------------------
# field declarations


def jfield(default: Any = MISSING, *, default_factory: Any = MISSING, kind: Optional[str] = None,
           json: Optional[str] = None, always: bool = False, skip: bool = False,
           negative_none: bool = False, **kw: Any) -> Any:
    """A dataclass field with converter metadata.

    ``kind``: ``"duration"``, ``"b64"``, ``"hdrs_b64"`` or ``"headers"`` (other kinds
    come from the type hint); ``json``: the wire name when it differs from the field
    name; ``always``: emit even when equal to the default; ``skip``: never on the wire;
    ``negative_none``: a negative wire value reads as ``None``.
    """
    meta = {"kind": kind, "json": json, "always": always, "skip": skip, "negative_none": negative_none}
    return field(default=default, default_factory=default_factory, metadata={_META_KEY: meta}, **kw)


def duration(default: Any = None, **kw: Any) -> Any:
    """A duration field: float seconds in Python, integer nanoseconds on the wire."""
    return jfield(default, kind="duration", **kw)


# ---------------------------------------------------------------------------------
# conversion plans


def enum_value(v: Any) -> Any:
    """The wire string of an enum member (plain values pass through)."""
    return v.value if isinstance(v, Enum) else v


def _enum_parser(tp: type) -> Callable[[Any], Any]:
    lookup = tp._value2member_map_  # type: ignore[attr-defined]

    def conv(v: Any) -> Any:
        m = lookup.get(v)
        if m is not None:
            return m
        if isinstance(v, tp):
            return v
        try:
            return tp(v)  # _missing_ aliases
        except (ValueError, TypeError):
            return v  # unknown value from a newer server: keep the plain string

    return conv


def _b64_in(v: Any) -> bytes:
    return base64.b64decode(v) if v else b""


def _b64_out(v: Any) -> str:
    return base64.b64encode(bytes(v)).decode("ascii")


def _hdrs_in(v: Any) -> Any:
    if not v:
        return None
    raw = base64.b64decode(v)
    if not raw:
        return None
    from jetwire import _impl  # imported lazily: keeps model imports free of cycles

    return _impl.decode_headers(raw)


def _hdrs_out(v: Any) -> Optional[str]:
    if not v:
        return None
    from jetwire import _impl

    return base64.b64encode(bytes(_impl.encode_headers(v))).decode("ascii")


def _headers_in(v: Any) -> Any:
    if v is None:
        return None
    from jetwire.protocol.headers import Headers

    return Headers(v)


def _headers_coerce(v: Any) -> Any:
    """A ``dict`` given for a ``headers`` field becomes ``Headers`` (what is handed back)."""
    from jetwire.protocol.headers import Headers

    return v if isinstance(v, Headers) else Headers(v)


def headers_to_json(h: Any) -> dict:
    """``Headers`` or a ``dict[str, str | list[str]]`` to ``{"K": ["v", ...]}``."""
    out: dict[str, list[str]] = {}
    if isinstance(h, dict):
        for k, v in h.items():
            out[k] = [v] if isinstance(v, str) else list(v)
        return out
    get_all = h.get_all
    for k in h:
        if k not in out:
            out[k] = list(get_all(k))
    return out


def _strip_optional(tp: Any) -> Any:
    if get_origin(tp) is Union:
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
        # e.g. Union[Enum, str]: use the first meaningful member
        for a in args:
            if isinstance(a, type) and issubclass(a, (Enum, Model)):
                return a
        return args[0]
    return tp


def _converters(tp: Any, kind: Optional[str], negative_none: bool) -> tuple:
    """(from_wire, to_wire, coerce) for one field; ``None`` entries mean identity."""
    tp = _strip_optional(tp)
    origin = get_origin(tp)
    if kind == "duration":
        if origin in (list, typing.List) or tp is list:
            return (lambda v: [x / _NS for x in v],
                    lambda v: [seconds_to_ns(x) for x in v],
                    lambda v: [_dur_coerce(x) for x in v])
        if negative_none:
            return (lambda v: None if v < 0 else v / _NS, seconds_to_ns, _dur_coerce)
        return (ns_to_seconds, seconds_to_ns, _dur_coerce)
    if kind == "b64":
        return (_b64_in, _b64_out, None)
    if kind == "hdrs_b64":
        return (_hdrs_in, _hdrs_out, None)
    if kind == "headers":
        return (_headers_in, headers_to_json, _headers_coerce)
    if tp is datetime:
        return (parse_time, format_time, None)
    if isinstance(tp, type) and issubclass(tp, Enum):
        conv = _enum_parser(tp)
        return (conv, enum_value, conv)
    if isinstance(tp, type) and issubclass(tp, Model):
        return (tp.from_json, _model_out, _model_coercer(tp))
    if origin in (list, tuple) and get_args(tp):
        inner = _converters(get_args(tp)[0], None, False)
        fin, fout, fco = inner
        if fin is None and fout is None and fco is None:
            return (None, None, None)
        return (
            (lambda v: [fin(x) if x is not None else None for x in v]) if fin else None,
            (lambda v: [fout(x) if x is not None else None for x in v]) if fout else None,
            (lambda v: [fco(x) for x in v]) if fco else None,
        )
    if origin is dict and len(get_args(tp)) == 2:
        fin, fout, fco = _converters(get_args(tp)[1], None, False)
        if fin is None and fout is None and fco is None:
            return (None, None, None)
        return (
            (lambda v: {k: fin(x) if x is not None else None for k, x in v.items()}) if fin else None,
            (lambda v: {k: fout(x) if x is not None else None for k, x in v.items()}) if fout else None,
            (lambda v: {k: fco(x) for k, x in v.items()}) if fco else None,
        )
    return (None, None, None)


def _empty_to_none(v: Any) -> Any:
    return None if _is_empty(v) else v


def _then_empty_to_none(fin: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def conv(v: Any) -> Any:
        if _is_empty(v):
            return None
        v = fin(v)
        return None if _is_empty(v) else v

    return conv


def _is_model_type(hint: Any) -> bool:
    tp = _strip_optional(hint)
    return isinstance(tp, type) and issubclass(tp, Model)


def _model_out(v: Any) -> Any:
    return v.to_json_dict() if isinstance(v, Model) else v


def _model_coercer(tp: type) -> Callable[[Any], Any]:
    def conv(v: Any) -> Any:
        if isinstance(v, dict):
            return tp(**v)
        return v

    return conv


class _Plan:
    __slots__ = ("fields", "by_json", "defaults", "factories", "omit_defaults", "coercers", "names")

    def __init__(self, cls: type):
        hints = typing.get_type_hints(cls)
        self.fields: list[tuple] = []      # (name, json, to_wire, default, always)
        self.by_json: dict[str, tuple] = {}  # json -> (name, from_wire)
        self.defaults: dict[str, Any] = {}
        self.factories: list[tuple[str, Callable[[], Any]]] = []
        self.coercers: list[tuple[str, Callable[[Any], Any]]] = []
        self.names: set[str] = set()
        self.omit_defaults = bool(getattr(cls, "_omit_defaults", False))
        for f in dataclasses.fields(cls):
            if f.name == "_extra":
                self.factories.append((f.name, dict))
                continue
            self.names.add(f.name)
            meta = f.metadata.get(_META_KEY, {})
            if f.default is not MISSING:
                self.defaults[f.name] = f.default
                default = f.default
            elif f.default_factory is not MISSING:
                self.factories.append((f.name, f.default_factory))
                default = MISSING
            else:
                self.defaults[f.name] = None
                default = MISSING
            hint = hints.get(f.name, Any)
            fin, fout, fco = _converters(hint, meta.get("kind"), meta.get("negative_none", False))
            if self.omit_defaults and f.default is None and not _is_model_type(hint):
                # To the server an empty value ("", 0, [], {}) and an absent one are the
                # same; such fields are not written, so read them back as None too.
                fin = _empty_to_none if fin is None else _then_empty_to_none(fin)
            if fco is not None:
                self.coercers.append((f.name, fco))
            if meta.get("skip"):
                continue
            jname = meta.get("json") or f.name
            self.fields.append((f.name, jname, fout, default, meta.get("always", False)))
            self.by_json[jname] = (f.name, fin)


def _plan(cls: type) -> _Plan:
    p = cls.__dict__.get("_jw_plan")
    if p is None:
        p = _Plan(cls)
        setattr(cls, "_jw_plan", p)
    return p


def _is_empty(v: Any) -> bool:
    if v is False or v == "":
        return True
    if type(v) in (int, float):
        return v == 0
    if isinstance(v, (list, dict, tuple)):
        return not v
    return False


# ---------------------------------------------------------------------------------
# the base class


@dataclass
class Model:
    """Base of JetStream JSON models: ``from_json`` / ``to_json_dict`` / ``to_json``."""

    _omit_defaults: ClassVar[bool] = False
    _extra: dict = field(default_factory=dict, repr=False, compare=False, kw_only=True)

    def __post_init__(self) -> None:
        d = self.__dict__
        for name, conv in _plan(type(self)).coercers:
            v = d[name]
            if v is not None:
                d[name] = conv(v)
        if self._extra is None:
            self._extra = {}

    # -- reading --------------------------------------------------------------------
    @classmethod
    def from_json(cls, data: Any) -> Any:
        """Build from server JSON: a ``dict`` (or ``bytes``/``str`` of JSON).
        Returns ``None`` for ``None``. Unknown keys are kept in ``_extra``."""
        if data is None:
            return None
        if isinstance(data, (bytes, bytearray, memoryview, str)):
            data = orjson.loads(data)
        if not isinstance(data, dict):
            raise TypeError(f"{cls.__name__}.from_json expects a JSON object, got {type(data).__name__}")
        plan = _plan(cls)
        data = cls._json_in(data)
        obj = object.__new__(cls)
        d = obj.__dict__
        d.update(plan.defaults)
        for name, fac in plan.factories:
            d[name] = fac()
        extra = d["_extra"]
        by_json = plan.by_json
        for k, v in data.items():
            f = by_json.get(k)
            if f is None:
                extra[k] = v
            elif v is None or f[1] is None:
                d[f[0]] = v
            else:
                d[f[0]] = f[1](v)
        return obj

    @classmethod
    def _json_in(cls, data: dict) -> dict:
        """Hook: reshape wire JSON before the generic reader (default: unchanged)."""
        return data

    # -- writing --------------------------------------------------------------------
    def to_json_dict(self) -> dict:
        """The server JSON of this value as a ``dict`` of JSON-ready values."""
        plan = _plan(type(self))
        omit = plan.omit_defaults
        src = self.__dict__
        out: dict[str, Any] = {}
        for name, jname, fout, default, always in plan.fields:
            v = src[name]
            if v is None:
                continue
            if omit and not always and (_is_empty(v) or (default is not MISSING and v == default)):
                continue
            if fout is not None:
                v = fout(v)
                if v is None or (omit and not always and (v == {} or v == [])):
                    continue
            out[jname] = v
        extra = self._extra
        if extra:
            for k, v in extra.items():
                if k not in out:
                    out[k] = v
        return self._json_out(out)

    def _json_out(self, d: dict) -> dict:
        """Hook: reshape the generic JSON before it is returned (default: unchanged)."""
        return d

    as_dict = to_json_dict

    def to_json(self) -> bytes:
        """The server JSON of this value, encoded with orjson."""
        return orjson.dumps(self.to_json_dict())

    def copy(self) -> Any:
        """A deep copy."""
        return copy.deepcopy(self)


# ---------------------------------------------------------------------------------
# create_x(config=None, **fields)


def config_from_kwargs(cls: type, config: Any = None, /, **fields: Any) -> Any:
    """Implement the ``create_x(config=None, **fields)`` calling pattern.

    With no ``config`` it is ``cls(**fields)``. With a ``config`` (an instance of
    ``cls`` or a ``dict`` of field values) the keyword fields override a deep copy of
    it; the caller's object is never changed. An unknown keyword raises ``TypeError``
    naming the valid fields.
    """
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
    valid = [f.name for f in dataclasses.fields(cls) if f.init and f.name != "_extra"]
    unknown = [k for k in fields if k not in valid]
    if isinstance(config, dict):
        unknown += [k for k in config if k not in valid and k != "_extra"]
    if unknown:
        near = difflib.get_close_matches(unknown[0], valid, n=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        raise TypeError(
            f"{cls.__name__} has no field{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(repr(k) for k in unknown)}{hint} (valid fields are: {', '.join(valid)})"
        )
    if config is None:
        return cls(**fields)
    if isinstance(config, dict):
        return cls(**{**copy.deepcopy(config), **fields})
    if not isinstance(config, cls):
        raise TypeError(f"config must be a {cls.__name__} (or a dict), not {type(config).__name__}")
    base = copy.deepcopy(config)
    if not fields:
        return base
    return dataclasses.replace(base, **fields)
