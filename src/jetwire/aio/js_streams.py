"""The stream manager of a JetStream context (asyncio source; ``jetwire/_sync/js_streams.py``
is generated from it): create, update, look up, list and delete streams, and the jsm.go
style templates and declarative ``ensure_stream`` (nats.go's ``jetstream.StreamManager``).
:class:`~jetwire.aio.jetstream.JetStream` is made of this and the other managers."""
from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Unpack, cast

from .. import _impl
from .._typing import JSONObject
from ..errors import StreamNameInUseError, StreamNotFoundError
from ..jetstream._json import config_from_kwargs
from ..jetstream.config_kwargs import StreamConfigFields
from ..jetstream.ensure_core import DEFAULT_STREAM, check_drift, stream_config, stream_drift, update_config
from ..jetstream.manage import validate_stream_subjects
from ..jetstream.models import StreamConfig, StreamInfo
from ..jetstream.ops import check_supported
from ..jetstream.validate import validate_stream_name
from .jsapi import ContextBase
from .stream import Stream, stream_info_of

if TYPE_CHECKING:
    from .jetstream import JetStream


class StreamManager(ContextBase):
    """Streams (a part of ``JetStream``)."""

    def _checked_stream(self, cfg: StreamConfig, resp: JSONObject) -> Stream:
        info = stream_info_of(resp)
        got = info.config
        check_supported(cfg.allow_msg_ttl, got.allow_msg_ttl, "per-message TTLs (allow_msg_ttl: 2.11+)")
        check_supported(cfg.allow_msg_counter, got.allow_msg_counter, "counters (allow_msg_counter: 2.12+)")
        return Stream(cast("JetStream", self), info)

    async def create_stream(self, config: StreamConfig | JSONObject | None = None,
                            **fields: Unpack[StreamConfigFields]) -> Stream:
        """Create a stream from a ``StreamConfig`` (or a dict) and/or its fields.
        Creating a stream that exists with the same config returns it; with another
        config it raises ``StreamNameInUseError``."""
        cfg = config_from_kwargs(StreamConfig, config, **fields)
        name = validate_stream_name(cfg.name)
        validate_stream_subjects(cfg.subjects or (), self.api.validate)
        resp = await self.api_request(f"STREAM.CREATE.{name}", cfg.to_json_dict())
        return self._checked_stream(cfg, resp)

    async def update_stream(self, config: StreamConfig | JSONObject | None = None,
                            **fields: Unpack[StreamConfigFields]) -> Stream:
        """Update a stream's config (``StreamNotFoundError`` when it does not exist)."""
        cfg = config_from_kwargs(StreamConfig, config, **fields)
        name = validate_stream_name(cfg.name)
        validate_stream_subjects(cfg.subjects or (), self.api.validate)
        resp = await self.api_request(f"STREAM.UPDATE.{name}", cfg.to_json_dict())
        return self._checked_stream(cfg, resp)

    async def create_or_update_stream(self, config: StreamConfig | JSONObject | None = None,
                                      **fields: Unpack[StreamConfigFields]) -> Stream:
        """Update the stream, or create it when it does not exist."""
        cfg = config_from_kwargs(StreamConfig, config, **fields)
        try:
            return await self.update_stream(cfg)
        except StreamNotFoundError:
            return await self.create_stream(cfg)

    async def stream(self, name: str) -> Stream:
        """Look a stream up now (``StreamNotFoundError`` when it does not exist)."""
        validate_stream_name(name)
        resp = await self.api_request(f"STREAM.INFO.{name}")
        return Stream(cast("JetStream", self), stream_info_of(resp))

    async def stream_info(self, name: str, subjects_filter: str | None = None,
                          deleted_details: bool = False) -> StreamInfo:
        """Shortcut for ``(await js.stream(name)).info(...)``."""
        validate_stream_name(name)
        s = Stream(cast("JetStream", self), StreamInfo(config=StreamConfig(name=name)))
        return await s.info(subjects_filter, deleted_details)

    async def delete_stream(self, name: str) -> bool:
        """Delete a stream and its consumers (``StreamNotFoundError`` when missing)."""
        validate_stream_name(name)
        await self.api_request(f"STREAM.DELETE.{name}")
        return True

    async def list_streams(self, subject: str | None = None) -> AsyncIterator[StreamInfo]:
        """Info of every stream (only those with subjects matching ``subject`` when
        given); requested page by page while iterating."""
        async for d in self.api_pages("STREAM.LIST", "streams", {"subject": subject} if subject else None):
            yield StreamInfo.from_json(d)

    async def stream_names(self, subject: str | None = None) -> AsyncIterator[str]:
        """Name of every stream (only those with subjects matching ``subject`` when
        given); requested page by page while iterating."""
        async for d in self.api_pages("STREAM.NAMES", "streams", {"subject": subject} if subject else None):
            yield d

    async def stream_name_by_subject(self, subject: str) -> str:
        """The name of the stream that stores ``subject`` (``StreamNotFoundError`` when none)."""
        _impl.validate_filter(subject)
        resp = await self.api_request("STREAM.NAMES", {"subject": subject})
        names = resp.get("streams") or []
        if not names:
            raise StreamNotFoundError(code=404, err_code=10059, description=f"no stream matches subject {subject!r}")
        name: str = names[0]
        return name

    # -- templates and declarative management (jsm.go style) ----------------------------
    async def create_stream_from_default(self, name: str, template: StreamConfig | JSONObject, **overrides: object) -> Stream:
        """Create stream ``name`` from ``template`` (any ``StreamConfig``, e.g.
        ``DEFAULT_STREAM``, or a dict of its fields) with ``overrides`` (config field
        names; an unknown one raises ``TypeError`` before any request)."""
        return await self.create_stream(stream_config(name, template, overrides))

    async def load_or_create_stream(self, name: str, template: StreamConfig | JSONObject = DEFAULT_STREAM, **overrides: object) -> Stream:
        """The stream ``name`` as it is, or, when it does not exist, created from
        ``template`` and ``overrides`` (jsm.go's ``LoadOrNewStreamFromDefault``: an
        existing stream is never compared nor changed)."""
        cfg = stream_config(name, template, overrides)
        try:
            return await self.stream(name)
        except StreamNotFoundError:
            pass
        try:
            return await self.create_stream(cfg)
        except StreamNameInUseError:  # created by someone else meanwhile
            return await self.stream(name)

    async def ensure_stream(self, name: str, template: StreamConfig | JSONObject = DEFAULT_STREAM, **overrides: object) -> Stream:
        """Make stream ``name`` have the config of ``template`` and ``overrides``: create
        it when missing, update it when it differs only in fields the server can update,
        return it unchanged when equal (values the server fills in for unset fields do
        not count). Raises ``ConfigDriftError`` (``.fields``) when it differs in fields
        that cannot be updated (storage, retention to/from work queue, ...)."""
        cfg = stream_config(name, template, overrides)
        try:
            s = await self.stream(name)
        except StreamNotFoundError:
            try:
                return await self.create_stream(cfg)
            except StreamNameInUseError:  # created by someone else meanwhile: compare
                s = await self.stream(name)
        stored = s.cached_info().config
        if not check_drift("stream", name, stream_drift(cfg, stored)):
            return s
        return await self.update_stream(update_config(cfg, stored))
