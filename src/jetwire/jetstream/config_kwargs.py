"""Keyword types of the config calls (``create_stream(**fields)``, ...): written by
tools/gen_config_kwargs.py from the config dataclasses. Do not edit.
"""
from __future__ import annotations

from datetime import datetime
from typing import TypedDict

from jetwire.jetstream._json import (
    JSONObject,
)
from jetwire.jetstream.models import (
    AckPolicy,
    DeliverPolicy,
    DiscardPolicy,
    PersistMode,
    Placement,
    PriorityPolicy,
    ReplayPolicy,
    RePublish,
    RetentionPolicy,
    StorageType,
    StoreCompression,
    StreamConsumerLimits,
    StreamSource,
    SubjectTransformConfig,
)


class StreamConfigFields(TypedDict, total=False):
    """The keyword fields of ``StreamConfig`` (every one optional)."""

    name: str | None
    description: str | None
    subjects: list[str] | None
    retention: RetentionPolicy | str
    max_consumers: int
    max_msgs: int
    max_bytes: int
    discard: DiscardPolicy | str
    discard_new_per_subject: bool
    max_age: float
    max_msgs_per_subject: int
    max_msg_size: int
    storage: StorageType | str
    num_replicas: int
    no_ack: bool
    template_owner: str | None
    duplicate_window: float | None
    placement: Placement | JSONObject | None
    mirror: StreamSource | JSONObject | None
    sources: list[StreamSource | JSONObject] | None
    sealed: bool
    deny_delete: bool
    deny_purge: bool
    allow_rollup_hdrs: bool
    allow_direct: bool
    mirror_direct: bool
    republish: RePublish | JSONObject | None
    subject_transform: SubjectTransformConfig | JSONObject | None
    compression: StoreCompression | str
    first_seq: int | None
    metadata: dict[str, str] | None
    consumer_limits: StreamConsumerLimits | JSONObject | None
    allow_msg_ttl: bool
    subject_delete_marker_ttl: float | None
    allow_msg_counter: bool
    allow_atomic: bool
    allow_msg_schedules: bool
    persist_mode: PersistMode | str | None
    allow_batched: bool


class ConsumerConfigFields(TypedDict, total=False):
    """The keyword fields of ``ConsumerConfig`` (every one optional)."""

    name: str | None
    durable_name: str | None
    description: str | None
    deliver_policy: DeliverPolicy | str
    opt_start_seq: int | None
    opt_start_time: datetime | None
    ack_policy: AckPolicy | str
    ack_wait: float | None
    max_deliver: int | None
    backoff: list[float] | None
    filter_subject: str | None
    filter_subjects: list[str] | None
    replay_policy: ReplayPolicy | str
    rate_limit_bps: int | None
    sample_freq: str | None
    max_waiting: int | None
    max_ack_pending: int | None
    flow_control: bool
    idle_heartbeat: float | None
    headers_only: bool
    max_batch: int | None
    max_expires: float | None
    max_bytes: int | None
    inactive_threshold: float | None
    num_replicas: int | None
    mem_storage: bool
    metadata: dict[str, str] | None
    deliver_subject: str | None
    deliver_group: str | None
    pause_until: datetime | None
    priority_policy: PriorityPolicy | str | None
    priority_groups: list[str] | None
    priority_timeout: float | None


class KeyValueConfigFields(TypedDict, total=False):
    """The keyword fields of ``KeyValueConfig`` (every one optional)."""

    bucket: str | None
    description: str | None
    max_value_size: int
    history: int
    ttl: float | None
    max_bytes: int
    storage: StorageType | str
    replicas: int
    placement: Placement | JSONObject | None
    republish: RePublish | JSONObject | None
    mirror: StreamSource | JSONObject | None
    sources: list[StreamSource | JSONObject] | None
    compression: bool
    limit_marker_ttl: float | None
    metadata: dict[str, str] | None


class ObjectStoreConfigFields(TypedDict, total=False):
    """The keyword fields of ``ObjectStoreConfig`` (every one optional)."""

    bucket: str | None
    description: str | None
    ttl: float | None
    max_bytes: int
    storage: StorageType | str
    replicas: int
    placement: Placement | JSONObject | None
    compression: bool
    metadata: dict[str, str] | None


__all__ = ["StreamConfigFields", "ConsumerConfigFields", "KeyValueConfigFields", "ObjectStoreConfigFields"]
