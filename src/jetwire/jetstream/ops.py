"""Sans-IO helpers of the JetStream operations beyond create/update/delete, shared by both
flavours: consumer reset (ResetConsumer, server 2.14+), jsm.go's cluster operations
(stream, consumer and meta leader step-downs, stream peer removal) and the version
checks against the connected server's INFO (the legacy consumer create subjects of
servers before 2.9). No I/O happens here."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import APIError, InvalidOptionError, JetStreamError
from ._json import JSONObject
from .manage import validate_filter_subjects
from .models import ConsumerConfig, ConsumerInfo

__all__ = [
    "acknowledged",
    "clustered_js",
    "legacy_consumer_create_subject",
    "peer_remove_request",
    "reset_info",
    "reset_request",
    "server_at_least",
    "server_version",
    "stepdown_request",
]


def server_version(info: Mapping[str, Any]) -> tuple[int, int, int] | None:
    """``(major, minor, patch)`` of a server INFO's ``version`` (``"2.10.4-beta"`` ->
    ``(2, 10, 4)``), or None when it has none or it cannot be read."""
    v = info.get("version")
    if not isinstance(v, str):
        return None
    parts = v.lstrip("v").split("-", 1)[0].split(".")
    try:
        nums = [int(p) for p in parts[:3]]
    except ValueError:
        return None
    if not nums:
        return None
    while len(nums) < 3:
        nums.append(0)
    return nums[0], nums[1], nums[2]


def server_at_least(info: Mapping[str, Any], major: int, minor: int, patch: int = 0) -> bool:
    """Whether the server of ``info`` is at least ``major.minor.patch`` (nats.go's
    ``serverMinVersion``); a version that cannot be read counts as new enough."""
    v = server_version(info)
    return v is None or v >= (major, minor, patch)


def legacy_consumer_create_subject(stream: str, cfg: ConsumerConfig | JSONObject) -> str:
    """The create subject for servers before 2.9 (as nats.go): a durable is made through
    ``CONSUMER.DURABLE.CREATE.<stream>.<durable>``, an ephemeral through
    ``CONSUMER.CREATE.<stream>`` (the server names it). The filters are checked here."""
    if isinstance(cfg, dict):
        one, many, durable = cfg.get("filter_subject"), cfg.get("filter_subjects"), cfg.get("durable_name")
    else:
        one, many, durable = cfg.filter_subject, cfg.filter_subjects, cfg.durable_name
    validate_filter_subjects([one, *(many or ())])
    if durable:
        return f"CONSUMER.DURABLE.CREATE.{stream}.{durable}"
    return f"CONSUMER.CREATE.{stream}"


def reset_request(seq: int | None) -> JSONObject | None:
    """The body of ``CONSUMER.RESET``: none (back to the ack floor + 1) or ``{"seq": n}``
    (n >= 1; the consumer's deliver policy may refuse it: ``APIError`` 10204)."""
    if seq is None:
        return None
    if isinstance(seq, bool) or not isinstance(seq, int) or seq < 1:
        raise InvalidOptionError(f"seq must be None or a stream sequence >= 1, not {seq!r}")
    return {"seq": seq}


def reset_info(resp: JSONObject) -> ConsumerInfo:
    """The consumer's info from a reset answer (the info's fields plus ``reset_seq``)."""
    resp.pop("type", None)
    resp.pop("reset_seq", None)
    if not resp.get("name"):
        raise APIError(code=None, err_code=None, description="consumer reset response is empty")
    return ConsumerInfo.from_json(resp)


def stepdown_request(preferred: str | None) -> JSONObject | None:
    """The body of a leader step-down: none (the server picks) or the placement naming
    the server that should lead (``{"placement": {"preferred": name}}``)."""
    if preferred is None:
        return None
    if not isinstance(preferred, str) or not preferred:
        raise InvalidOptionError(f"preferred must be None or a server name, not {preferred!r}")
    return {"placement": {"preferred": preferred}}


def peer_remove_request(peer: str) -> JSONObject:
    """The body of ``STREAM.PEER.REMOVE``: the server name (or peer id) to remove."""
    if not isinstance(peer, str) or not peer:
        raise InvalidOptionError(f"peer must be a server name, not {peer!r}")
    return {"peer": peer}


def acknowledged(resp: JSONObject, what: str) -> None:
    """An operation's answer without ``success: true`` (and without an error, which
    ``api_request`` already raised) is a failure too (as jsm.go)."""
    if not resp.get("success"):
        raise APIError(code=None, err_code=None, description=f"unknown error while requesting {what}")


def clustered_js(info: Mapping[str, Any]) -> bool | None:
    """From the connected server's INFO: False when it runs JetStream itself and is in no
    cluster (its own JetStream answers, unclustered), True when it is in a cluster, None
    when INFO cannot tell (no JetStream on that server: the requests go elsewhere)."""
    if info.get("cluster"):
        return True
    if info.get("jetstream"):
        return False
    return None


def check_supported(asked: object, got: object, what: str) -> None:
    """A feature the server dropped from the config it stored (an older server)."""
    if asked and not got:
        raise JetStreamError(f"the server does not support {what}")
