"""Keyword types of the config calls (``create_stream(**fields)``, ...): written by
tools/gen_config_kwargs.py from the config dataclasses. Do not edit.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any, Optional, TypedDict, Union

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

    name: Optional[str]
    description: Optional[str]
    subjects: Optional[list[str]]
    retention: Union[RetentionPolicy, str]
    max_consumers: int
    max_msgs: int
    max_bytes: int
    discard: Union[DiscardPolicy, str]
    discard_new_per_subject: bool
    max_age: float
    max_msgs_per_subject: int
    max_msg_size: int
    storage: Union[StorageType, str]
    num_replicas: int
    no_ack: bool
    template_owner: Optional[str]
    duplicate_window: Optional[float]
    placement: Optional[Union[Placement, dict[str, Any]]]
    mirror: Optional[Union[StreamSource, dict[str, Any]]]
    sources: Optional[list[Union[StreamSource, dict[str, Any]]]]
    sealed: bool
    deny_delete: bool
    deny_purge: bool
    allow_rollup_hdrs: bool
    allow_direct: bool
    mirror_direct: bool
    republish: Optional[Union[RePublish, dict[str, Any]]]
    subject_transform: Optional[Union[SubjectTransformConfig, dict[str, Any]]]
    compression: Union[StoreCompression, str]
    first_seq: Optional[int]
    metadata: Optional[dict[str, str]]
    consumer_limits: Optional[Union[StreamConsumerLimits, dict[str, Any]]]
    allow_msg_ttl: bool
    subject_delete_marker_ttl: Optional[float]
    allow_msg_counter: bool
    allow_atomic: bool
    allow_msg_schedules: bool
    persist_mode: Optional[Union[PersistMode, str]]
    allow_batched: bool


class ConsumerConfigFields(TypedDict, total=False):
    """The keyword fields of ``ConsumerConfig`` (every one optional)."""

    name: Optional[str]
    durable_name: Optional[str]
    description: Optional[str]
    deliver_policy: Union[DeliverPolicy, str]
    opt_start_seq: Optional[int]
    opt_start_time: Optional[datetime]
    ack_policy: Union[AckPolicy, str]
    ack_wait: Optional[float]
    max_deliver: Optional[int]
    backoff: Optional[list[float]]
    filter_subject: Optional[str]
    filter_subjects: Optional[list[str]]
    replay_policy: Union[ReplayPolicy, str]
    rate_limit_bps: Optional[int]
    sample_freq: Optional[str]
    max_waiting: Optional[int]
    max_ack_pending: Optional[int]
    flow_control: bool
    idle_heartbeat: Optional[float]
    headers_only: bool
    max_batch: Optional[int]
    max_expires: Optional[float]
    max_bytes: Optional[int]
    inactive_threshold: Optional[float]
    num_replicas: Optional[int]
    mem_storage: bool
    metadata: Optional[dict[str, str]]
    deliver_subject: Optional[str]
    deliver_group: Optional[str]
    pause_until: Optional[datetime]
    priority_policy: Optional[Union[PriorityPolicy, str]]
    priority_groups: Optional[list[str]]
    priority_timeout: Optional[float]


class KeyValueConfigFields(TypedDict, total=False):
    """The keyword fields of ``KeyValueConfig`` (every one optional)."""

    bucket: Optional[str]
    description: Optional[str]
    max_value_size: int
    history: int
    ttl: Optional[float]
    max_bytes: int
    storage: Union[StorageType, str]
    replicas: int
    placement: Optional[Union[Placement, dict[str, Any]]]
    republish: Optional[Union[RePublish, dict[str, Any]]]
    mirror: Optional[Union[StreamSource, dict[str, Any]]]
    sources: Optional[list[Union[StreamSource, dict[str, Any]]]]
    compression: bool
    limit_marker_ttl: Optional[float]
    metadata: Optional[dict[str, str]]


class ObjectStoreConfigFields(TypedDict, total=False):
    """The keyword fields of ``ObjectStoreConfig`` (every one optional)."""

    bucket: Optional[str]
    description: Optional[str]
    ttl: Optional[float]
    max_bytes: int
    storage: Union[StorageType, str]
    replicas: int
    placement: Optional[Union[Placement, dict[str, Any]]]
    compression: bool
    metadata: Optional[dict[str, str]]


__all__ = ["StreamConfigFields", "ConsumerConfigFields", "KeyValueConfigFields", "ObjectStoreConfigFields"]
