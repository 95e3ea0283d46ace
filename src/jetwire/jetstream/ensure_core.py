"""Templates and declarative management (in the spirit of jsm.go), shared by both
flavours; no I/O happens here.

* The templates ``DEFAULT_STREAM``, ``DEFAULT_WORK_QUEUE``, ``DEFAULT_CONSUMER`` and
  ``SAMPLED_DEFAULT_CONSUMER`` carry jsm.go's defaults. Any config (or a dict of its
  fields) is a template: :func:`stream_config` / :func:`consumer_config` copy it and
  apply overrides (an unknown field name raises ``TypeError``); the template itself is
  never changed.
* :func:`stream_drift` / :func:`consumer_drift` compare the config one wants with the
  one the server stored and say which fields differ and which of those the server
  cannot update (its rules: ``configUpdateCheck`` for streams,
  ``checkNewConsumerConfig`` for consumers). Values the server fills in when a config
  leaves them unset (a stream's ``duplicate_window`` and ``subjects``, a consumer's
  ``ack_wait``, ``max_deliver``, ``max_waiting``, ``max_ack_pending``, ...) and the
  server's own ``_nats.*`` metadata are not differences, so a config created from a
  template compares equal to what the server hands back.
* :func:`update_config` builds the update request of ``ensure_*``: the wanted config
  plus the stored values of what it leaves to the server (so an update changes only
  what differs).
"""
from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from ..errors import ConfigDriftError
from ._json import JSONObject, config_from_kwargs, unknown_fields
from .models import (
    AckPolicy,
    ConsumerConfig,
    DeliverPolicy,
    DiscardPolicy,
    ReplayPolicy,
    RetentionPolicy,
    StreamConfig,
)
from .validate import validate_consumer_name, validate_stream_name

__all__ = [
    "DEFAULT_CONSUMER",
    "DEFAULT_STREAM",
    "DEFAULT_WORK_QUEUE",
    "SAMPLED_DEFAULT_CONSUMER",
    "Drift",
    "check_drift",
    "consumer_config",
    "consumer_drift",
    "named_consumer_config",
    "stream_config",
    "stream_drift",
    "update_config",
]

_YEAR = 365 * 24 * 3600.0

DEFAULT_STREAM = StreamConfig(
    retention=RetentionPolicy.LIMITS, discard=DiscardPolicy.OLD, max_consumers=-1, max_msgs=-1,
    max_msgs_per_subject=-1, max_bytes=-1, max_age=_YEAR, max_msg_size=-1, num_replicas=1, no_ack=False,
)
"""jsm.go's ``DefaultStream``: limits retention, discard old, no limits but a maximum
age of one year, one replica, file storage; no subjects (the server then uses the name)."""

DEFAULT_WORK_QUEUE = StreamConfig(
    retention=RetentionPolicy.WORK_QUEUE, discard=DiscardPolicy.OLD, max_consumers=-1, max_msgs=-1,
    max_msgs_per_subject=-1, max_bytes=-1, max_age=_YEAR, max_msg_size=-1, num_replicas=1, no_ack=False,
)
"""jsm.go's ``DefaultWorkQueue``: ``DEFAULT_STREAM`` with work-queue retention."""

DEFAULT_CONSUMER = ConsumerConfig(
    deliver_policy=DeliverPolicy.ALL, ack_policy=AckPolicy.EXPLICIT, ack_wait=30.0,
    replay_policy=ReplayPolicy.INSTANT,
)
"""jsm.go's ``DefaultConsumer``: deliver all, explicit acks with a 30 s ack wait, instant replay."""

SAMPLED_DEFAULT_CONSUMER = ConsumerConfig(
    deliver_policy=DeliverPolicy.ALL, ack_policy=AckPolicy.EXPLICIT, ack_wait=30.0,
    replay_policy=ReplayPolicy.INSTANT, sample_freq="100%",
)
"""jsm.go's ``SampledDefaultConsumer``: ``DEFAULT_CONSUMER`` with every ack sampled
(``sample_freq="100%"``: the server publishes a consumer-ack metric for each)."""


# ---------------------------------------------------------------------------------
# configs from templates


def stream_config(name: str, template: StreamConfig | JSONObject | None,
                  overrides: Mapping[str, object]) -> StreamConfig:
    """A copy of ``template`` (a ``StreamConfig`` or a dict of its fields) with
    ``overrides`` applied and ``name`` set. ``TypeError`` for an unknown field."""
    if template is None:
        raise TypeError("template is required (e.g. DEFAULT_STREAM)")
    cfg = config_from_kwargs(StreamConfig, template, **overrides)
    cfg.name = validate_stream_name(name)
    return cfg


def consumer_config(template: ConsumerConfig | JSONObject | None, overrides: Mapping[str, object]) -> ConsumerConfig:
    """A copy of ``template`` (a ``ConsumerConfig`` or a dict of its fields) with
    ``overrides`` applied. ``TypeError`` for an unknown field."""
    if template is None:
        raise TypeError("template is required (e.g. DEFAULT_CONSUMER)")
    cfg = config_from_kwargs(ConsumerConfig, template, **overrides)
    if cfg.durable_name is not None:
        validate_consumer_name(cfg.durable_name)
    if cfg.name is not None:
        validate_consumer_name(cfg.name)
    return cfg


def named_consumer_config(name: str, template: ConsumerConfig | JSONObject | None,
                          overrides: Mapping[str, object]) -> ConsumerConfig:
    """:func:`consumer_config` for the consumer called ``name``: durable
    (``durable_name=name``) unless the config names it itself (``name`` or
    ``durable_name``, which must then be ``name``: ``ValueError`` otherwise)."""
    validate_consumer_name(name)
    cfg = consumer_config(template, overrides)
    if cfg.name is None and cfg.durable_name is None:
        cfg.durable_name = name
    for given in (cfg.name, cfg.durable_name):
        if given is not None and given != name:
            raise ValueError(f"the config names the consumer {given!r}, not {name!r}")
    return cfg


# ---------------------------------------------------------------------------------
# comparing


@dataclass
class Drift:
    """How a stored config differs from a wanted one: ``changes`` maps every differing
    field to ``(stored, wanted)`` (config values), ``fixed`` lists the differing fields
    the server cannot update (in the config's field order)."""

    changes: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    fixed: list[str] = field(default_factory=list)

    @property
    def equal(self) -> bool:
        return not self.changes

    @property
    def fields(self) -> list[str]:
        """Every differing field, in the config's field order."""
        return list(self.changes)


_Rule = Callable[[object, object], bool]  # (stored, wanted) wire values -> not updatable
_Config = TypeVar("_Config", StreamConfig, ConsumerConfig)


def _differs(stored: object, wanted: object) -> bool:
    return True


def _unset(flag_stored: object, flag_wanted: object) -> bool:
    return bool(flag_stored) and not flag_wanted


def _workqueue(stored: object, wanted: object) -> bool:
    wq = RetentionPolicy.WORK_QUEUE.value
    return wq in ((stored or "limits"), (wanted or "limits"))


def _mirror(stored: object, wanted: object) -> bool:
    return wanted is not None  # removing a mirror (promoting it) is allowed


def _pull_push(stored: object, wanted: object) -> bool:
    return not stored or not wanted


class _Kind:
    """What the server fills in and refuses to update, for one config type."""

    def __init__(self, kind: str, cls: type[StreamConfig | ConsumerConfig], filled: frozenset[str],
                 fixed: dict[str, _Rule], normalize_wanted: Callable[[JSONObject], None] | None = None) -> None:
        self.kind = kind
        self.cls = cls
        self.filled = filled
        self.fixed = fixed
        self.normalize_wanted = normalize_wanted
        self.names = [f.name for f in fields(cls) if f.init and f.name != "_extra"]


def _strip_server_metadata(d: JSONObject) -> None:
    meta = d.get("metadata")
    if meta:
        meta = {k: v for k, v in meta.items() if not k.startswith("_nats.")}
        if meta:
            d["metadata"] = meta
        else:
            del d["metadata"]


def _consumer_wanted(d: JSONObject) -> None:
    if "name" not in d and d.get("durable_name"):
        d["name"] = d["durable_name"]
    backoff = d.get("backoff")
    if backoff:
        d["ack_wait"] = backoff[0]  # the server's rule: a backoff overrides the ack wait


_STREAM = _Kind(
    "stream", StreamConfig,
    # left unset, the server picks: subjects (the name), the duplicate window (from max_age)
    frozenset({"subjects", "duplicate_window"}),
    {
        "name": _differs,
        "storage": _differs,
        "retention": _workqueue,
        "sealed": _unset,
        "deny_delete": _unset,
        "deny_purge": _unset,
        "mirror": _mirror,
        "allow_msg_ttl": _unset,
        "allow_msg_counter": _differs,
        "allow_msg_schedules": _unset,
        "persist_mode": _differs,
    },
)

_CONSUMER = _Kind(
    "consumer", ConsumerConfig,
    # left unset, the server picks these (from its defaults, its limits, the stream's
    # consumer limits, or a pause)
    frozenset({"name", "ack_wait", "max_deliver", "max_waiting", "max_ack_pending", "inactive_threshold",
               "max_batch", "max_expires", "max_bytes", "priority_timeout", "num_replicas", "pause_until"}),
    {
        "name": _differs,
        "durable_name": _differs,
        "deliver_policy": _differs,
        "opt_start_seq": _differs,
        "opt_start_time": _differs,
        "ack_policy": _differs,
        "replay_policy": _differs,
        "idle_heartbeat": _differs,
        "flow_control": _differs,
        "max_waiting": _differs,
        "mem_storage": _differs,
        "deliver_subject": _pull_push,
    },
    _consumer_wanted,
)


def _wire(cfg: StreamConfig | ConsumerConfig) -> JSONObject:
    d = cfg.to_json_dict()
    _strip_server_metadata(d)
    if d.get("persist_mode") == "default":
        del d["persist_mode"]
    return d


def _turned_on(k: _Kind, wanted: JSONObject) -> frozenset[str]:
    """The flags the server turns on by itself for what ``wanted`` (wire form) asks: a
    stream's rollup headers, for delete markers and for schedules."""
    if k is _STREAM and (wanted.get("subject_delete_marker_ttl") or wanted.get("allow_msg_schedules")):
        return frozenset({"allow_rollup_hdrs"})
    return frozenset()


def _drift(k: _Kind, wanted: StreamConfig | ConsumerConfig, stored: StreamConfig | ConsumerConfig) -> Drift:
    if not isinstance(wanted, k.cls) or not isinstance(stored, k.cls):
        raise TypeError(f"compare two {k.cls.__name__}s")
    a = _wire(wanted)
    if k.normalize_wanted is not None:
        k.normalize_wanted(a)
    b = _wire(stored)
    filled = set(k.filled)
    if k is _CONSUMER and a.get("ack_policy") == AckPolicy.FLOW_CONTROL.value:
        filled |= {"flow_control", "idle_heartbeat"}  # the server sets both for this policy
    turned_on = _turned_on(k, a)
    keys = list(k.names) + [x for x in unknown_fields(wanted) if x not in k.names]
    out = Drift()
    for key in keys:
        if key in filled and key not in a:
            continue
        if key in turned_on and not a.get(key):
            continue
        w, s = a.get(key), b.get(key)
        if w == s:
            continue
        out.changes[key] = (getattr(stored, key, None) if key in k.names else unknown_fields(stored).get(key),
                            getattr(wanted, key, None) if key in k.names else unknown_fields(wanted).get(key))
        rule = k.fixed.get(key)
        if rule is not None and rule(s, w):
            out.fixed.append(key)
    return out


def stream_drift(wanted: StreamConfig, stored: StreamConfig) -> Drift:
    """How the ``stored`` stream config differs from the ``wanted`` one (see :class:`Drift`)."""
    return _drift(_STREAM, wanted, stored)


def consumer_drift(wanted: ConsumerConfig, stored: ConsumerConfig) -> Drift:
    """How the ``stored`` consumer config differs from the ``wanted`` one (see :class:`Drift`)."""
    return _drift(_CONSUMER, wanted, stored)


def check_drift(kind: str, name: str, drift: Drift) -> bool:
    """Raise :class:`~jetwire.errors.ConfigDriftError` when ``drift`` has fields the
    server cannot update; otherwise whether an update is needed."""
    if drift.fixed:
        raise ConfigDriftError(kind, name, drift.fixed, drift.changes)
    return not drift.equal


def update_config(wanted: _Config, stored: StreamConfig | ConsumerConfig) -> _Config:
    """The config to send to update ``stored`` to ``wanted``: a copy of ``wanted`` that
    keeps the stored values of the fields ``wanted`` leaves to the server, and the
    stored fields this client does not know."""
    k = _STREAM if isinstance(wanted, StreamConfig) else _CONSUMER
    if not isinstance(stored, k.cls):
        raise TypeError(f"stored must be a {k.cls.__name__}")
    out = copy.deepcopy(wanted)
    for key in k.filled:
        if getattr(out, key) is None:
            setattr(out, key, copy.deepcopy(getattr(stored, key)))
    for key in _turned_on(k, _wire(wanted)):
        if not getattr(out, key):
            setattr(out, key, getattr(stored, key))
    kept = unknown_fields(out)
    for key, v in unknown_fields(stored).items():
        if key not in kept:
            kept[key] = copy.deepcopy(v)
    return out
