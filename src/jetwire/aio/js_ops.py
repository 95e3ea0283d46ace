"""Account, cluster operations and advisories of a JetStream context (asyncio source;
``jetwire/_sync/js_ops.py`` is generated from it): ``account_info``, the RAFT leader
step-downs and peer removal of jsm.go, and the event streams of advisories and metrics.
:class:`~jetwire.aio.jetstream.JetStream` is made of this and the other managers."""
from __future__ import annotations

from collections.abc import Iterable

from .._typing import JSONObject
from ..errors import APIError, TimeoutError
from ..events import ADVISORY_SUBJECT, METRIC_SUBJECT
from ..jetstream.models import AccountInfo
from ..jetstream.ops import acknowledged, clustered_js, peer_remove_request, stepdown_request
from ..jetstream.validate import validate_consumer_name, validate_stream_name
from .events import EventStream
from .jsapi import DEFAULT_PREFIX, ContextBase


class Operations(ContextBase):
    """Account, cluster operations and advisories (a part of ``JetStream``)."""

    async def account_info(self) -> AccountInfo:
        """Usage and limits of the account (``JetStreamNotEnabledError`` without JetStream)."""
        resp = await self.api_request("INFO")
        resp.pop("type", None)
        info: AccountInfo = AccountInfo.from_json(resp)
        return info

    # -- cluster operations (jsm.go) ---------------------------------------------------
    async def stream_leader_stepdown(self, name: str, preferred: str | None = None) -> None:
        """Ask the leader of stream ``name``'s RAFT group to step down (jsm.go's
        ``Stream.LeaderStepDown``); ``preferred``: the server name that should lead next
        (else the server picks a current peer). Returns once the server acknowledged
        (the election follows); ``APIError`` otherwise (``StreamNotFoundError``; err_code
        10010 on a server that is not clustered; 10005 for a preferred server that is
        not a peer or already leads; code 408 for no answer in time). A stream of one
        replica has no other peer to lead: the server acknowledges and nothing changes
        (as with jsm.go)."""
        validate_stream_name(name)
        await self._acked(f"STREAM.LEADER.STEPDOWN.{name}", stepdown_request(preferred),
                          f"stream {name!r} leader step-down")

    async def consumer_leader_stepdown(self, stream: str, consumer: str, preferred: str | None = None) -> None:
        """Ask the leader of consumer ``consumer`` of ``stream`` to step down (jsm.go's
        ``Consumer.LeaderStepDown``); as :meth:`stream_leader_stepdown`
        (``ConsumerNotFoundError`` for a missing consumer)."""
        validate_stream_name(stream)
        validate_consumer_name(consumer)
        await self._acked(f"CONSUMER.LEADER.STEPDOWN.{stream}.{consumer}", stepdown_request(preferred),
                          f"consumer {consumer!r} leader step-down")

    async def remove_stream_peer(self, stream: str, peer: str) -> None:
        """Remove server ``peer`` (its name, or its peer id) from the replicas of
        ``stream`` (jsm.go's ``Stream.RemoveRAFTPeer``): the meta leader places a new
        replica elsewhere when it can. ``APIError`` when it is not a peer of the stream
        (err_code 10040), ``StreamNotFoundError``, 10010 unclustered."""
        validate_stream_name(stream)
        await self._acked(f"STREAM.PEER.REMOVE.{stream}", peer_remove_request(peer),
                          f"removal of peer {peer!r} from stream {stream!r}")

    async def meta_leader_stepdown(self, preferred: str | None = None) -> None:
        """Ask the JetStream meta leader to step down (jsm.go's ``MetaLeaderStandDown``);
        ``preferred``: the server that should lead next. Only users of the system
        account may: the server does not answer anyone else, which raises ``APIError``
        (code 408) after the context's timeout; on a server that runs JetStream
        unclustered ``APIError`` err_code 10010 at once, nothing sent."""
        body = stepdown_request(preferred)
        if self.api.prefix == DEFAULT_PREFIX and clustered_js(self.api.nc.server_info) is False:
            raise APIError(code=503, err_code=10010, description="JetStream clustering support required")
        await self._acked("META.LEADER.STEPDOWN", body, "meta leader step-down",
                          " (the server answers only users of the system account, and only while there is "
                          "a meta leader)")

    async def _acked(self, subject: str, body: JSONObject | None, what: str, why: str = "") -> None:
        """A cluster operation's request: returns once acknowledged, else an ``APIError``
        (no answer in time: code 408, as the contract has every cluster operation raise
        a typed ``APIError``; a step-down during an election may go unanswered)."""
        try:
            resp = await self.api_request(subject, body)
        except TimeoutError as exc:
            raise APIError(code=408, err_code=None, description=f"no answer to the {what}{why}") from exc
        acknowledged(resp, what)

    # -- advisories and metrics ------------------------------------------------------
    async def events(self, kinds: Iterable[str] | None = None) -> EventStream:
        """Parsed advisories and metrics (``$JS.EVENT.ADVISORY.>`` and ``$JS.EVENT.METRIC.>``)
        as an :class:`~jetwire.aio.events.EventStream`; ``kinds``: full type strings or
        their last token (``"api_audit"``). With a ``domain``, events of other domains are
        skipped. Subscribed (and flushed) when this returns."""
        es = EventStream(self.api.link, [ADVISORY_SUBJECT, METRIC_SUBJECT], kinds, self.api.domain)
        await self.api.nc.flush()
        return es

    async def consumer_ack_metrics(self, stream: str, consumer: str) -> EventStream:
        """The ack metrics (``ConsumerAckMetric``) of one consumer, which the server sends
        for the share of acks its ``sample_freq`` asks for."""
        validate_stream_name(stream)
        validate_consumer_name(consumer)
        es = EventStream(self.api.link, [f"$JS.EVENT.METRIC.CONSUMER.ACK.{stream}.{consumer}"], None, self.api.domain)
        await self.api.nc.flush()
        return es
