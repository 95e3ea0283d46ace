"""Wire models of the NATS service API documents (ADR-32, ``io.nats.micro.v1.*``):
the ``$SRV.PING|INFO|STATS`` answers. Durations are float seconds (nanoseconds on the
wire), ``started`` an aware datetime. :mod:`jetwire.schemas` builds the micro schemas
from these classes. No I/O here.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar, Dict, Optional

from jetwire.jetstream._json import Model, duration

__all__ = ["PingResponse", "InfoResponse", "StatsResponse", "EndpointInfoWire", "EndpointStatsWire"]

MICRO = "io.nats.micro.v1."


@dataclass
class PingResponse(Model):
    TYPE: ClassVar[str] = MICRO + "ping_response"
    type: str = TYPE
    name: str = ""
    id: str = ""
    version: str = ""
    metadata: Optional[Dict[str, str]] = None


@dataclass
class EndpointInfoWire(Model):
    name: str = ""
    subject: str = ""
    queue_group: Optional[str] = None
    metadata: Optional[Dict[str, str]] = None


@dataclass
class InfoResponse(PingResponse):
    TYPE: ClassVar[str] = MICRO + "info_response"
    type: str = TYPE
    description: str = ""
    endpoints: list[EndpointInfoWire] = field(default_factory=list)


@dataclass
class EndpointStatsWire(Model):
    name: str = ""
    subject: str = ""
    queue_group: Optional[str] = None
    num_requests: int = 0
    num_errors: int = 0
    last_error: str = ""
    processing_time: float = duration(0.0)
    average_processing_time: float = duration(0.0)
    data: Any = None


@dataclass
class StatsResponse(PingResponse):
    TYPE: ClassVar[str] = MICRO + "stats_response"
    type: str = TYPE
    started: Optional[datetime] = None
    endpoints: list[EndpointStatsWire] = field(default_factory=list)
