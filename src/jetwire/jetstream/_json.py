"""The one JSON converter behind every JetStream model.

Models are plain dataclasses deriving from :class:`Model`. Their fields carry the
server's JSON names; the type hints (plus a little field metadata) tell the converter
how to translate each value:

* ``duration(...)`` fields are float seconds in Python and integer nanoseconds on the
  wire (``timedelta`` is accepted on construction);
* ``datetime`` fields are aware datetimes in Python and RFC 3339 strings with
  nanoseconds on the wire; Go's zero time ``0001-01-01T00:00:00Z`` reads as ``None``;
  sub-microsecond digits survive a round trip (see :class:`jetwire._units.NanoDatetime`;
  the duration and time conversions are those of :mod:`jetwire._units`);
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
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import MISSING, dataclass, field
from datetime import datetime, timedelta
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar, Self, TypeVar, Union, cast, get_args, get_origin, overload

import orjson

# durations and times: the one home of the units (jetwire._units)
from .._typing import JSONObject as JSONObject  # a decoded JSON object; models turn it into typed fields
from .._units import format_rfc3339, parse_rfc3339, seconds_to_ns
from ..errors import InvalidJSONError

if TYPE_CHECKING:
    from ..protocol.headers import Headers, HeadersInit

__all__ = [
    "JSONObject",
    "Model",
    "config_from_kwargs",
    "duration",
    "enum_value",
    "headers_to_json",
    "jfield",
    "unknown_fields",
]

_NS = 1_000_000_000
_META_KEY = "jetwire"


#: one field's converter: a wire value to its Python value, or back (``None``: identity)
_Conv = Callable[[Any], Any]
_Convs = tuple[_Conv | None, _Conv | None, _Conv | None]  # (from_wire, to_wire, coerce)

M = TypeVar("M", bound="Model")

# ---------------------------------------------------------------------------------
# durations given as a timedelta


def _dur_coerce(v: object) -> object:
    if isinstance(v, timedelta):
        return v.total_seconds()
    return v


# ---------------------------------------------------------------------------------
# field declarations


def jfield(default: Any = MISSING, *, default_factory: Any = MISSING, kind: str | None = None,
           json: str | None = None, always: bool = False, skip: bool = False,
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


def enum_value(v: object) -> object:
    """The wire string of an enum member (plain values pass through)."""
    return v.value if isinstance(v, Enum) else v


def _enum_parser(tp: type[Enum]) -> _Conv:
    lookup = {m.value: m for m in tp}  # its members by wire value

    def conv(v: Any) -> object:
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


def _b64_in(v: str | None) -> bytes:
    return base64.b64decode(v) if v else b""


def _b64_out(v: bytes | bytearray | memoryview) -> str:
    return base64.b64encode(bytes(v)).decode("ascii")


def _hdrs_in(v: str | None) -> Headers | None:
    if not v:
        return None
    raw = base64.b64decode(v)
    if not raw:
        return None
    from jetwire import _impl  # imported lazily: keeps model imports free of cycles

    return _impl.decode_headers(raw)


def _hdrs_out(v: HeadersInit | None) -> str | None:
    if not v:
        return None
    from jetwire import _impl

    return base64.b64encode(bytes(_impl.encode_headers(v))).decode("ascii")


def _headers_in(v: dict[str, list[str]] | None) -> Headers | None:
    if v is None:
        return None
    from jetwire.protocol.headers import Headers

    return Headers(v)


def _headers_coerce(v: HeadersInit) -> Headers:
    """A ``dict`` given for a ``headers`` field becomes ``Headers`` (what is handed back)."""
    from jetwire.protocol.headers import Headers

    return v if isinstance(v, Headers) else Headers(v)


def headers_to_json(h: Headers | Mapping[str, str | Iterable[str]]) -> dict[str, list[str]]:
    """``Headers`` or a ``dict[str, str | list[str]]`` to ``{"K": ["v", ...]}``."""
    out: dict[str, list[str]] = {}
    if isinstance(h, dict):
        for k, v in h.items():
            out[k] = [v] if isinstance(v, str) else list(v)
        return out
    get_all = cast("Headers", h).get_all
    for k in h:
        if k not in out:
            out[k] = list(get_all(k))
    return out


def _strip_optional(tp: object) -> object:
    if get_origin(tp) in (Union, types.UnionType):  # Optional[X] and X | None
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
        # e.g. Union[Enum, str]: use the first meaningful member
        for a in args:
            if isinstance(a, type) and issubclass(a, (Enum, Model)):
                return a
        return args[0]
    return tp


_JSON_KIND = {int: "an integer", str: "a string", bool: "true or false", float: "a number",
              list: "an array", dict: "an object"}


def _type_check(tp: type) -> _Conv:
    """A wire reader that only checks the JSON type (what Go's typed decoding refuses)."""
    want = _JSON_KIND[tp]
    if tp is float:
        def conv(v: Any) -> object:
            if type(v) is float or type(v) is int:
                return v
            raise TypeError(f"expected {want}, got {_json_kind(v)}")
    else:
        def conv(v: Any) -> object:
            if type(v) is tp:
                return v
            raise TypeError(f"expected {want}, got {_json_kind(v)}")
    return conv


def _invalid(cls: type, path: str, why: str) -> InvalidJSONError:
    where = f"{cls.__name__}.{path}" if path else cls.__name__
    return InvalidJSONError(f"invalid JSON for {where}: {why}", cls.__name__, path)


def _ns(v: Any) -> float:
    """A duration's nanoseconds as read (an integer; a float is let through)."""
    if type(v) is int or type(v) is float:
        return v
    raise TypeError(f"expected an integer (nanoseconds), got {_json_kind(v)}")


def _list(v: Any) -> list[Any]:
    if type(v) is list:
        return v
    raise TypeError(f"expected an array, got {_json_kind(v)}")


def _json_kind(v: object) -> str:
    for tp, name in _JSON_KIND.items():
        if type(v) is tp:
            return name
    return type(v).__name__


def _plain_type(tp: object) -> type | None:
    """``int``, ``str``, ``bool``, ``float``, ``list`` or ``dict`` when that (or it or
    ``None``) is the whole hint, so that its JSON type can be checked; else ``None``."""
    if get_origin(tp) in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) != 1:
            return None
        tp = args[0]
    base = get_origin(tp) or tp
    return base if base in _JSON_KIND else None


def _converters(tp: object, kind: str | None, negative_none: bool) -> _Convs:
    """(from_wire, to_wire, coerce) for one field; ``None`` entries mean identity (a
    plain ``int``, ``str``, ``bool``, ``float``, list or dict field's reader checks the
    JSON type)."""
    plain = _plain_type(tp) if kind is None else None
    tp = _strip_optional(tp)
    origin = get_origin(tp)
    if kind == "duration":
        if origin is list or tp is list:
            return (lambda v: [_ns(x) / _NS for x in _list(v)],
                    lambda v: [seconds_to_ns(x) for x in v],
                    lambda v: [_dur_coerce(x) for x in v])
        if negative_none:
            return (lambda v: None if _ns(v) < 0 else v / _NS, seconds_to_ns, _dur_coerce)
        return (lambda v: _ns(v) / _NS, seconds_to_ns, _dur_coerce)
    if kind == "b64":
        return (_b64_in, _b64_out, None)
    if kind == "hdrs_b64":
        return (_hdrs_in, _hdrs_out, None)
    if kind == "headers":
        return (_headers_in, headers_to_json, _headers_coerce)
    if tp is datetime:
        return (parse_rfc3339, format_rfc3339, None)
    if isinstance(tp, type) and issubclass(tp, Enum):
        conv = _enum_parser(tp)
        return (conv, enum_value, conv)
    if isinstance(tp, type) and issubclass(tp, Model):
        return (_nested_reader(tp), _model_out, _model_coercer(tp))
    if origin in (list, tuple) and get_args(tp):
        inner = _converters(get_args(tp)[0], None, False)
        fin, fout, fco = inner
        if fin is None and fout is None and fco is None:
            return (_type_check(list), None, None)
        if _plain_type(get_args(tp)[0]) is not None:  # a list of scalars: the list's type checked
            return (_type_check(list), None, None)
        return (
            (lambda v: [fin(x) if x is not None else None for x in v]) if fin else None,
            (lambda v: [fout(x) if x is not None else None for x in v]) if fout else None,
            (lambda v: [fco(x) for x in v]) if fco else None,
        )
    if origin is dict and len(get_args(tp)) == 2:
        vin, vout, vco = _converters(get_args(tp)[1], None, False)
        if (vin is None and vout is None and vco is None) or _plain_type(get_args(tp)[1]) is not None:
            return (_type_check(dict), None, None)
        return (
            (lambda v: {k: vin(x) if x is not None else None for k, x in v.items()}) if vin else None,
            (lambda v: {k: vout(x) if x is not None else None for k, x in v.items()}) if vout else None,
            (lambda v: {k: vco(x) for k, x in v.items()}) if vco else None,
        )
    if plain is not None:
        return (_type_check(plain), None, None)
    return (None, None, None)


def _empty_to_none(v: object) -> object:
    return None if _is_empty(v) else v


def _then_empty_to_none(fin: _Conv) -> _Conv:
    def conv(v: object) -> object:
        if _is_empty(v):
            return None
        v = fin(v)
        return None if _is_empty(v) else v

    return conv


def _is_model_type(hint: object) -> bool:
    tp = _strip_optional(hint)
    return isinstance(tp, type) and issubclass(tp, Model)


def _model_out(v: object) -> object:
    return v.to_json_dict() if isinstance(v, Model) else v


def _nested_reader(tp: type[Model]) -> _Conv:
    def conv(v: object) -> object:
        if type(v) is not dict:  # (a string is not parsed as JSON here)
            raise TypeError(f"expected an object, got {_json_kind(v)}")
        return tp.from_json(v)

    return conv


def _model_coercer(tp: type[Model]) -> _Conv:
    def conv(v: object) -> object:
        if isinstance(v, dict):
            return tp(**v)
        return v

    return conv


class _Plan:
    __slots__ = ("by_json", "coercers", "defaults", "factories", "fields", "names", "omit_defaults")

    def __init__(self, cls: type):
        hints = typing.get_type_hints(cls)
        self.fields: list[tuple[str, str, _Conv | None, object, bool]] = []  # (name, json, to_wire, default, always)
        self.by_json: dict[str, tuple[str, _Conv | None]] = {}  # json -> (name, from_wire)
        self.defaults: dict[str, object] = {}
        self.factories: list[tuple[str, Callable[[], object]]] = []
        self.coercers: list[tuple[str, _Conv]] = []
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
            hint: object = hints.get(f.name, object)
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
        cls._jw_plan = p  # type: ignore[attr-defined]
    return p


def _is_empty(v: object) -> bool:
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
    _extra: JSONObject = field(default_factory=dict, repr=False, compare=False, kw_only=True)

    def __post_init__(self) -> None:
        d = self.__dict__
        for name, conv in _plan(type(self)).coercers:
            v = d[name]
            if v is not None:
                d[name] = conv(v)
        if self._extra is None:
            self._extra = {}

    # -- reading --------------------------------------------------------------------
    @overload
    @classmethod
    def from_json(cls, data: None) -> None: ...

    @overload
    @classmethod
    def from_json(cls, data: JSONObject | bytes | bytearray | memoryview | str) -> Self: ...

    @classmethod
    def from_json(cls, data: JSONObject | bytes | bytearray | memoryview | str | None) -> Self | None:
        """Build from server JSON: a ``dict`` (or ``bytes``/``str`` of JSON).
        Returns ``None`` for ``None``. Unknown keys are kept in ``_extra``. JSON that
        does not fit (not an object, a field of the wrong type) raises
        :class:`~jetwire.errors.InvalidJSONError` naming the field."""
        if data is None:
            return None
        if isinstance(data, (bytes, bytearray, memoryview, str)):
            try:
                data = orjson.loads(data)
            except orjson.JSONDecodeError as exc:
                raise _invalid(cls, "", f"not JSON ({exc})") from None
            if not isinstance(data, dict):
                raise _invalid(cls, "", f"expected an object, got {_json_kind(data)}")
        elif not isinstance(data, dict):
            raise TypeError(f"{cls.__name__}.from_json expects a JSON object, got {type(data).__name__}")
        plan = _plan(cls)
        k = ""
        try:
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
        except InvalidJSONError as exc:  # from a nested model: its path within this one
            path = f"{k}.{exc.path}" if k and exc.path else k or exc.path
            raise _invalid(cls, path, str(exc).split(": ", 1)[-1]) from None
        except (ValueError, TypeError, AttributeError, KeyError, IndexError, OverflowError) as exc:
            raise _invalid(cls, k, str(exc) or type(exc).__name__) from None
        return obj

    @classmethod
    def _json_in(cls, data: JSONObject) -> JSONObject:
        """Hook: reshape wire JSON before the generic reader (default: unchanged)."""
        return data

    # -- writing --------------------------------------------------------------------
    def to_json_dict(self) -> JSONObject:
        """The server JSON of this value as a ``dict`` of JSON-ready values."""
        plan = _plan(type(self))
        omit = plan.omit_defaults
        src = self.__dict__
        out: JSONObject = {}
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

    def _json_out(self, d: JSONObject) -> JSONObject:
        """Hook: reshape the generic JSON before it is returned (default: unchanged)."""
        return d

    as_dict = to_json_dict

    def to_json(self) -> bytes:
        """The server JSON of this value, encoded with orjson."""
        return orjson.dumps(self.to_json_dict())

    def copy(self) -> Self:
        """A deep copy."""
        return copy.deepcopy(self)


# ---------------------------------------------------------------------------------
def unknown_fields(m: Model) -> JSONObject:
    """The JSON keys of ``m`` that are none of its fields (newer servers' fields), kept
    so that they go back to the server as they came; a live dict (changes stay)."""
    return m._extra


# create_x(config=None, **fields)


def config_from_kwargs(cls: type[M], config: M | JSONObject | None = None, /, **fields: Any) -> M:
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
