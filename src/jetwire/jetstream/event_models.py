"""Typed advisories and metrics: one dataclass per ``type`` the server publishes.

Field names are the wire names; times are aware datetimes and durations float seconds
(the :mod:`jetwire.jetstream._json` rules). Every event has ``type``, ``id`` and
``timestamp``; ``KIND`` is the short label of the one-line text rendering and
``summary()`` the rest of that line. Unknown fields from newer servers are kept in
``_extra``. :mod:`jetwire.schemas` builds the JSON Schemas of these types from these
classes, and :mod:`jetwire.events` parses and renders them. No I/O here.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar

from jetwire.jetstream._json import Model, duration, jfield
from jetwire.jetstream.models import HeadersOrNone, PeerInfo, StreamState

__all__ = [
    "EVENT_TYPES",
    "APIAuditAdvisory",
    "APILimitReachedAdvisory",
    "AccountConnectionsAdvisory",
    "ClientConnectAdvisory",
    "ClientDisconnectAdvisory",
    "ClientInfo",
    "ConsumerAckMetric",
    "ConsumerActionAdvisory",
    "ConsumerGroupPinnedAdvisory",
    "ConsumerGroupUnpinnedAdvisory",
    "ConsumerLeaderElectedAdvisory",
    "ConsumerPauseAdvisory",
    "ConsumerQuorumLostAdvisory",
    "DataStats",
    "DomainLeaderElectedAdvisory",
    "Event",
    "MaxDeliverAdvisory",
    "MetaRescueAdvisory",
    "MsgBytes",
    "NakAdvisory",
    "RestoreCompleteAdvisory",
    "RestoreCreateAdvisory",
    "ServerInfo",
    "ServerOutOfSpaceAdvisory",
    "ServerRemovedAdvisory",
    "ServiceLatencyMetric",
    "SnapshotCompleteAdvisory",
    "SnapshotCreateAdvisory",
    "StreamActionAdvisory",
    "StreamBatchAbandonedAdvisory",
    "StreamLeaderElectedAdvisory",
    "StreamQuorumLostAdvisory",
    "TerminatedAdvisory",
]

JS_ADVISORY = "io.nats.jetstream.advisory.v1."
JS_METRIC = "io.nats.jetstream.metric.v1."
SERVER_ADVISORY = "io.nats.server.advisory.v1."
SERVER_METRIC = "io.nats.server.metric.v1."


def _hms(t: datetime | None) -> str:
    """``HH:MM:SS`` in UTC (``--:--:--`` for no time)."""
    return "--:--:--" if t is None else t.astimezone(UTC).strftime("%H:%M:%S")


def _peers(replicas: Any) -> int:
    return len(replicas) if replicas else 0


# ---------------------------------------------------------------------------------
# nested types


@dataclass
class ClientInfo(Model):
    """The client behind an event (``client_info_v1``); ``rtt`` in seconds."""

    start: datetime | None = None
    stop: datetime | None = None
    host: str | None = None
    id: int | None = None
    acc: str = ""
    svc: str | None = None
    user: str | None = None
    name: str | None = None
    lang: str | None = None
    ver: str | None = None
    rtt: float | None = duration()
    server: str | None = None
    cluster: str | None = None
    alts: list[str] | None = None
    jwt: str | None = None
    issuer_key: str | None = None
    name_tag: str | None = None
    tags: list[str] | None = None
    kind: str | None = None
    client_type: str | None = None
    client_id: str | None = None
    nonce: str | None = None


@dataclass
class ServerInfo(Model):
    """The server that published an event (``server_info_v1``)."""

    name: str = ""
    host: str = ""
    id: str = ""
    cluster: str | None = None
    domain: str | None = None
    ver: str = ""
    tags: list[str] | None = None
    metadata: dict[str, str] | None = None
    seq: int = 0
    jetstream: bool = False
    time: datetime | None = None
    flags: int | None = None
    feature_flags: dict[str, bool] | None = None


@dataclass
class MsgBytes(Model):
    msgs: int = 0
    bytes: int = 0


@dataclass
class DataStats(Model):
    msgs: int = 0
    bytes: int = 0
    gateways: MsgBytes | None = None
    routes: MsgBytes | None = None
    leafs: MsgBytes | None = None


# ---------------------------------------------------------------------------------
# the base


@dataclass
class Event(Model):
    """An advisory or metric: ``type``, ``id``, ``timestamp`` (aware datetime)."""

    TYPE: ClassVar[str] = ""
    KIND: ClassVar[str] = ""
    REQUIRED: ClassVar[tuple[str, ...]] = ()  # wire fields every such event carries (besides type/id/timestamp)
    type: str = ""
    id: str = ""
    timestamp: datetime | None = None

    def kind(self) -> str:
        """The bracketed label of the one-line rendering (e.g. ``"Stream Create"``)."""
        return self.KIND

    def summary(self) -> str:
        """The one-line rendering after the label."""
        return ""


# ---------------------------------------------------------------------------------
# JetStream advisories


@dataclass
class APIAuditAdvisory(Event):
    TYPE: ClassVar[str] = JS_ADVISORY + "api_audit"
    KIND: ClassVar[str] = "JS API"
    REQUIRED: ClassVar[tuple[str, ...]] = ("server", "client", "subject", "response")
    server: str = ""
    client: ClientInfo | None = None
    subject: str = ""
    request: str | None = None
    response: str = ""
    domain: str | None = None

    def summary(self) -> str:
        c = self.client
        out = self.subject
        if c is not None and c.user:
            out += f" {c.user} @"
        if c is not None and c.acc:
            out += f" {c.acc}"
        return out


@dataclass
class APILimitReachedAdvisory(Event):
    TYPE: ClassVar[str] = JS_ADVISORY + "api_limit_reached"
    KIND: ClassVar[str] = "JS API Limit"
    REQUIRED: ClassVar[tuple[str, ...]] = ("server", "dropped")
    server: str = ""
    domain: str | None = None
    dropped: int = 0

    def summary(self) -> str:
        where = f" in domain {self.domain}" if self.domain else ""
        return f"{self.server}{where} discarded {self.dropped:,} messages"


@dataclass
class StreamActionAdvisory(Event):
    TYPE: ClassVar[str] = JS_ADVISORY + "stream_action"
    REQUIRED: ClassVar[tuple[str, ...]] = ("stream", "action")
    stream: str = ""
    action: str = ""
    template: str | None = None
    domain: str | None = None

    def kind(self) -> str:
        return f"Stream {self.action.title()}"

    def summary(self) -> str:
        return self.stream


@dataclass
class ConsumerActionAdvisory(Event):
    TYPE: ClassVar[str] = JS_ADVISORY + "consumer_action"
    REQUIRED: ClassVar[tuple[str, ...]] = ("stream", "action")
    stream: str = ""
    consumer: str = ""
    action: str = ""
    domain: str | None = None

    def kind(self) -> str:
        return f"Consumer {self.action.title()}"

    def summary(self) -> str:
        return f"{self.stream} > {self.consumer}"


@dataclass
class _Delivery(Event):
    REQUIRED: ClassVar[tuple[str, ...]] = ("stream", "consumer", "stream_seq", "deliveries")
    stream: str = ""
    consumer: str = ""
    consumer_seq: int | None = None
    stream_seq: int = 0
    deliveries: int = 0
    domain: str | None = None

    def summary(self) -> str:
        return f"{self.stream} ({self.stream_seq}) > {self.consumer}: {self.deliveries} deliveries"


@dataclass
class MaxDeliverAdvisory(_Delivery):
    TYPE: ClassVar[str] = JS_ADVISORY + "max_deliver"
    KIND: ClassVar[str] = "JS Max Deliveries"


@dataclass
class NakAdvisory(_Delivery):
    """A message was nak'ed. ``consumer_seq`` is an integer, as the server sends it
    (the published schema says string)."""

    TYPE: ClassVar[str] = JS_ADVISORY + "nak"
    KIND: ClassVar[str] = "JS Delivery NAKed"
    REQUIRED: ClassVar[tuple[str, ...]] = ("stream", "consumer", "consumer_seq", "stream_seq", "deliveries")


@dataclass
class TerminatedAdvisory(_Delivery):
    """A message was terminated (``term()``); ``reason`` as given to ``term(reason)``."""

    TYPE: ClassVar[str] = JS_ADVISORY + "terminated"
    KIND: ClassVar[str] = "JS Delivery Terminated"
    REQUIRED: ClassVar[tuple[str, ...]] = ("stream", "consumer", "consumer_seq", "stream_seq", "deliveries")
    reason: str | None = None

    def summary(self) -> str:
        return super().summary() + (f": {self.reason}" if self.reason else "")


@dataclass
class SnapshotCreateAdvisory(Event):
    TYPE: ClassVar[str] = JS_ADVISORY + "snapshot_create"
    KIND: ClassVar[str] = "Snapshot Create"
    REQUIRED: ClassVar[tuple[str, ...]] = ("stream", "client")  # 2.11+ servers send no blocks/block_size
    stream: str = ""
    blocks: int = 0
    block_size: int = 0
    state: StreamState | None = None
    client: ClientInfo | None = None
    domain: str | None = None

    def summary(self) -> str:
        return f"{self.stream} {self.blocks:,} blocks of {self.block_size:,} bytes"


@dataclass
class SnapshotCompleteAdvisory(Event):
    TYPE: ClassVar[str] = JS_ADVISORY + "snapshot_complete"
    KIND: ClassVar[str] = "Snapshot Complete"
    REQUIRED: ClassVar[tuple[str, ...]] = ("stream", "start", "end", "client")
    stream: str = ""
    start: datetime | None = None
    end: datetime | None = None
    client: ClientInfo | None = None
    domain: str | None = None

    def summary(self) -> str:
        return f"{self.stream} started {_hms(self.start)} ended {_hms(self.end)}"


@dataclass
class RestoreCreateAdvisory(Event):
    TYPE: ClassVar[str] = JS_ADVISORY + "restore_create"
    KIND: ClassVar[str] = "Restore Create"
    REQUIRED: ClassVar[tuple[str, ...]] = ("stream", "client")
    stream: str = ""
    client: ClientInfo | None = None
    domain: str | None = None

    def summary(self) -> str:
        return self.stream


@dataclass
class RestoreCompleteAdvisory(Event):
    TYPE: ClassVar[str] = JS_ADVISORY + "restore_complete"
    KIND: ClassVar[str] = "Restore Complete"
    REQUIRED: ClassVar[tuple[str, ...]] = ("stream", "start", "end", "bytes", "client")
    stream: str = ""
    start: datetime | None = None
    end: datetime | None = None
    bytes: int = 0
    client: ClientInfo | None = None
    domain: str | None = None

    def summary(self) -> str:
        return f"{self.stream} restored {self.bytes:,} bytes started {_hms(self.start)} ended {_hms(self.end)}"


@dataclass
class StreamLeaderElectedAdvisory(Event):
    TYPE: ClassVar[str] = JS_ADVISORY + "stream_leader_elected"
    KIND: ClassVar[str] = "RAFT"
    REQUIRED: ClassVar[tuple[str, ...]] = ("stream", "leader", "replicas")
    stream: str = ""
    leader: str = ""
    replicas: list[PeerInfo] | None = None
    domain: str | None = None
    account: str | None = None  # the copy the server sends to the system account names it

    def summary(self) -> str:
        return f"Stream {self.stream} elected {self.leader} of {_peers(self.replicas)} peers"


@dataclass
class StreamQuorumLostAdvisory(Event):
    TYPE: ClassVar[str] = JS_ADVISORY + "stream_quorum_lost"
    KIND: ClassVar[str] = "RAFT"
    REQUIRED: ClassVar[tuple[str, ...]] = ("stream", "replicas")
    stream: str = ""
    replicas: list[PeerInfo] | None = None
    domain: str | None = None
    account: str | None = None  # the copy the server sends to the system account names it

    def summary(self) -> str:
        return f"Stream {self.stream} lost quorum of {_peers(self.replicas)} peers"


@dataclass
class ConsumerLeaderElectedAdvisory(Event):
    TYPE: ClassVar[str] = JS_ADVISORY + "consumer_leader_elected"
    KIND: ClassVar[str] = "RAFT"
    REQUIRED: ClassVar[tuple[str, ...]] = ("stream", "consumer", "leader", "replicas")
    stream: str = ""
    consumer: str = ""
    leader: str = ""
    replicas: list[PeerInfo] | None = None
    domain: str | None = None
    account: str | None = None  # the copy the server sends to the system account names it

    def summary(self) -> str:
        return f"Consumer {self.stream} > {self.consumer} elected {self.leader} of {_peers(self.replicas)} peers"


@dataclass
class ConsumerQuorumLostAdvisory(Event):
    TYPE: ClassVar[str] = JS_ADVISORY + "consumer_quorum_lost"
    KIND: ClassVar[str] = "RAFT"
    REQUIRED: ClassVar[tuple[str, ...]] = ("stream", "consumer", "replicas")
    stream: str = ""
    consumer: str = ""
    replicas: list[PeerInfo] | None = None
    domain: str | None = None
    account: str | None = None  # the copy the server sends to the system account names it

    def summary(self) -> str:
        return f"Consumer {self.stream} > {self.consumer} lost quorum of {_peers(self.replicas)} peers"


@dataclass
class DomainLeaderElectedAdvisory(Event):
    TYPE: ClassVar[str] = JS_ADVISORY + "domain_leader_elected"
    KIND: ClassVar[str] = "RAFT"
    REQUIRED: ClassVar[tuple[str, ...]] = ("leader", "replicas", "cluster")
    leader: str = ""
    replicas: list[PeerInfo] | None = None
    cluster: str = ""
    domain: str | None = None

    def summary(self) -> str:
        return f"Domain leader elected {self.leader} in cluster {self.cluster} leader of {_peers(self.replicas)} peers"


@dataclass
class MetaRescueAdvisory(Event):
    TYPE: ClassVar[str] = JS_ADVISORY + "meta_rescue"
    KIND: ClassVar[str] = "RAFT"
    REQUIRED: ClassVar[tuple[str, ...]] = ("server", "prev_quorum", "new_quorum")
    server: str = ""
    server_id: str = ""
    prev_quorum: int = 0
    new_quorum: int = 0
    cluster: str = ""
    domain: str | None = None

    def summary(self) -> str:
        return (f"Meta group rescued by {self.server} in cluster {self.cluster}: quorum "
                f"{self.prev_quorum} -> {self.new_quorum}")


@dataclass
class ServerOutOfSpaceAdvisory(Event):
    TYPE: ClassVar[str] = JS_ADVISORY + "server_out_of_space"
    KIND: ClassVar[str] = "Out of Space"
    REQUIRED: ClassVar[tuple[str, ...]] = ("server", "server_id")
    stream: str | None = None
    server: str = ""
    server_id: str = ""
    cluster: str | None = None
    domain: str | None = None

    def summary(self) -> str:
        where = f" in cluster {self.cluster}" if self.cluster else ""
        return f"{self.server} ({self.server_id}){where} ran out of disk space"


@dataclass
class ServerRemovedAdvisory(Event):
    TYPE: ClassVar[str] = JS_ADVISORY + "server_removed"
    KIND: ClassVar[str] = "Server Removed"
    REQUIRED: ClassVar[tuple[str, ...]] = ("server", "server_id", "cluster")
    server: str = ""
    server_id: str = ""
    cluster: str = ""
    domain: str | None = None

    def summary(self) -> str:
        where = f" in cluster {self.cluster}" if self.cluster else ""
        return f"{self.server} ({self.server_id}){where} was removed"


@dataclass
class ConsumerPauseAdvisory(Event):
    TYPE: ClassVar[str] = JS_ADVISORY + "consumer_pause"
    KIND: ClassVar[str] = "Consumer Pause"
    REQUIRED: ClassVar[tuple[str, ...]] = ("stream", "consumer", "paused")
    stream: str = ""
    consumer: str = ""
    paused: bool = False
    pause_until: datetime | None = None
    domain: str | None = None

    def summary(self) -> str:
        until = f" until {self.pause_until.isoformat()}" if self.paused and self.pause_until else ""
        return f"Consumer: {self.stream} > {self.consumer} Paused: {str(self.paused).lower()}{until}"


@dataclass
class ConsumerGroupPinnedAdvisory(Event):
    TYPE: ClassVar[str] = JS_ADVISORY + "consumer_group_pinned"
    KIND: ClassVar[str] = "PINNED"
    REQUIRED: ClassVar[tuple[str, ...]] = ("stream", "consumer", "group", "pinned_id")
    account: str | None = None
    stream: str = ""
    consumer: str = ""
    domain: str | None = None
    group: str = ""
    pinned_id: str = ""

    def summary(self) -> str:
        return f"Consumer {self.stream} > {self.consumer} pinned client {self.pinned_id} for group {self.group}"


@dataclass
class ConsumerGroupUnpinnedAdvisory(Event):
    TYPE: ClassVar[str] = JS_ADVISORY + "consumer_group_unpinned"
    KIND: ClassVar[str] = "UNPINNED"
    REQUIRED: ClassVar[tuple[str, ...]] = ("stream", "consumer", "group", "reason")
    account: str | None = None
    stream: str = ""
    consumer: str = ""
    domain: str | None = None
    group: str = ""
    reason: str = ""

    def summary(self) -> str:
        return f"Consumer {self.stream} > {self.consumer} unpinned client for group {self.group}: {self.reason}"


@dataclass
class StreamBatchAbandonedAdvisory(Event):
    TYPE: ClassVar[str] = JS_ADVISORY + "stream_batch_abandoned"
    KIND: ClassVar[str] = "Batch Abandoned"
    REQUIRED: ClassVar[tuple[str, ...]] = ("stream", "batch", "reason")
    account: str | None = None
    stream: str = ""
    domain: str | None = None
    batch: str = ""
    reason: str = ""

    def summary(self) -> str:
        where = f" in domain {self.domain}" if self.domain else ""
        return f"{self.stream}{where} abandoned batch {self.batch}: {self.reason}"


# ---------------------------------------------------------------------------------
# JetStream metrics


@dataclass
class ConsumerAckMetric(Event):
    """A sampled ack (consumers with ``sample_freq``); ``ack_time`` in seconds."""

    TYPE: ClassVar[str] = JS_METRIC + "consumer_ack"
    KIND: ClassVar[str] = "JS Ack"
    REQUIRED: ClassVar[tuple[str, ...]] = ("stream", "consumer", "stream_seq", "consumer_seq", "ack_time",
                                           "deliveries")
    stream: str = ""
    consumer: str = ""
    consumer_seq: int = 0
    stream_seq: int = 0
    ack_time: float = duration(0.0)
    deliveries: int = 0
    domain: str | None = None

    def summary(self) -> str:
        return (f"{self.stream} ({self.stream_seq}) > {self.consumer} ({self.consumer_seq}): "
                f"{self.deliveries} deliveries in {self.ack_time * 1000:.3f}ms")


# ---------------------------------------------------------------------------------
# server advisories and metrics (system account)


@dataclass
class ClientConnectAdvisory(Event):
    TYPE: ClassVar[str] = SERVER_ADVISORY + "client_connect"
    KIND: ClassVar[str] = "Connection"
    REQUIRED: ClassVar[tuple[str, ...]] = ("server", "client")
    server: ServerInfo | None = None
    client: ClientInfo | None = None

    def summary(self) -> str:
        c = self.client or ClientInfo()
        user = f"user: {c.user} " if c.user else ""
        return f"{user}cid: {c.id} in account {c.acc}"


@dataclass
class ClientDisconnectAdvisory(Event):
    TYPE: ClassVar[str] = SERVER_ADVISORY + "client_disconnect"
    KIND: ClassVar[str] = "Disconnection"
    REQUIRED: ClassVar[tuple[str, ...]] = ("server", "client", "sent", "received", "reason")
    server: ServerInfo | None = None
    client: ClientInfo | None = None
    sent: DataStats | None = None
    received: DataStats | None = None
    reason: str = ""

    def summary(self) -> str:
        c = self.client or ClientInfo()
        user = f"user: {c.user} " if c.user else ""
        return f"{user}cid: {c.id} in account {c.acc}: {self.reason}"


@dataclass
class AccountConnectionsAdvisory(Event):
    TYPE: ClassVar[str] = SERVER_ADVISORY + "account_connections"
    KIND: ClassVar[str] = "Account"
    REQUIRED: ClassVar[tuple[str, ...]] = ("server", "acc", "conns", "leafnodes", "total_conns")
    server: ServerInfo | None = None
    acc: str = ""
    name: str | None = None
    conns: int = 0
    leafnodes: int = 0
    total_conns: int = 0
    num_subscriptions: int | None = None
    sent: DataStats | None = None
    received: DataStats | None = None
    slow_consumers: int | None = None

    def summary(self) -> str:
        server = self.server.name if self.server else ""
        return (f"{self.acc} Server: {server} Connections: {self.conns} Leaf Nodes: {self.leafnodes} "
                f"Slow: {self.slow_consumers or 0:,}")


@dataclass
class ServiceLatencyMetric(Event):
    """Latency of an exported service; ``service``, ``system``, ``total`` in seconds."""

    TYPE: ClassVar[str] = SERVER_METRIC + "service_latency"
    KIND: ClassVar[str] = "Svc Latency"
    REQUIRED: ClassVar[tuple[str, ...]] = ("status", "start", "service", "system", "total")
    requestor: ClientInfo | None = None
    responder: ClientInfo | None = None
    header: HeadersOrNone = jfield(None, kind="headers")
    status: int = 0
    error: str | None = None
    start: datetime | None = None
    service: float = duration(0.0)
    system: float = duration(0.0)
    total: float = duration(0.0)

    def summary(self) -> str:
        err = f"{self.error} " if self.error else ""
        return f"{err}system {self.system * 1000:.3f}ms service {self.service * 1000:.3f}ms total {self.total * 1000:.3f}ms"


EVENT_TYPES: dict[str, type[Event]] = {
    cls.TYPE: cls for cls in (
        APIAuditAdvisory, APILimitReachedAdvisory, StreamActionAdvisory, ConsumerActionAdvisory, MaxDeliverAdvisory,
        NakAdvisory, TerminatedAdvisory, SnapshotCreateAdvisory, SnapshotCompleteAdvisory, RestoreCreateAdvisory,
        RestoreCompleteAdvisory, StreamLeaderElectedAdvisory, StreamQuorumLostAdvisory, ConsumerLeaderElectedAdvisory,
        ConsumerQuorumLostAdvisory, DomainLeaderElectedAdvisory, MetaRescueAdvisory, ServerOutOfSpaceAdvisory,
        ServerRemovedAdvisory,
        ConsumerPauseAdvisory, ConsumerGroupPinnedAdvisory, ConsumerGroupUnpinnedAdvisory,
        StreamBatchAbandonedAdvisory, ConsumerAckMetric, ClientConnectAdvisory, ClientDisconnectAdvisory,
        AccountConnectionsAdvisory, ServiceLatencyMetric,
    )
}
"""Every typed event class by its ``type``."""
