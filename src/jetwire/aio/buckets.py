"""Bucket management shared by key-value and object stores (asyncio source;
``jetwire/_sync/buckets.py`` is generated from it).

A bucket is a stream named ``<prefix><bucket>``; create, update, create-or-update, bind,
delete, names and list are the same requests for both kinds, told apart by a
:class:`BucketKind`: the stream-name prefix and the subject filter that lists them, the
config class and its stream-config builder, the handle class, the status class, and
what a bound stream must look like. ``kv.py`` and ``objects.py`` each define one
(``KV_BUCKETS``, ``OBJ_BUCKETS``); the JetStream context's facades call them.
"""
from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .._typing import JSONObject
from ..errors import BucketNotFoundError, StreamNameInUseError, StreamNotFoundError
from ..jetstream._json import Model, config_from_kwargs
from ..jetstream.ensure_core import stream_drift
from ..jetstream.models import StreamConfig, StreamInfo
from ..jetstream.validate import validate_bucket_name

if TYPE_CHECKING:
    from .jetstream import JetStream
    from .stream import Stream

H = TypeVar("H")  # the handle class
C = TypeVar("C", bound=Model)  # the bucket config class
S = TypeVar("S")  # the status class


def _not_found(bucket: object) -> BucketNotFoundError:
    return BucketNotFoundError(f"bucket {bucket!r} not found")


class BucketKind(Generic[H, C, S]):
    """One kind of bucket (see the module docstring).

    ``stream_config(js, cfg)``: the stream config of a bucket config (checks it; may
    ask the server, awaited in aio); ``handle(js, stream, bucket)``: the bucket's
    handle; ``status(info, bucket)``: its status; ``check(info, bucket)``: raises when a
    stream of the right name is no bucket of this kind; ``upgradable``: the fields in
    which a bucket made by an older client may differ and ``create`` brings up to date
    (nats.go's CreateKeyValue: a key-value bucket's discard policy and direct get)."""

    def __init__(self, stream_prefix: str, list_subject: str, config_cls: type[C],
                 stream_config: Callable[[JetStream, C], Awaitable[StreamConfig]],  # aio-only
                 # sync-only: stream_config: Callable[[JetStream, C], StreamConfig],
                 handle: Callable[[JetStream, Stream, str], H],
                 status: Callable[[StreamInfo, str], S],
                 check: Callable[[StreamInfo, str], None] | None = None,
                 upgradable: frozenset[str] = frozenset()) -> None:
        self.stream_prefix = stream_prefix
        self.list_subject = list_subject
        self.config_cls = config_cls
        self.stream_config = stream_config
        self.handle = handle
        self.status = status
        self.check = check
        self.upgradable = upgradable

    def stream_name(self, bucket: str) -> str:
        return self.stream_prefix + bucket

    async def _configs(self, js: JetStream, config: C | JSONObject | None,
                       fields: Mapping[str, object]) -> tuple[Any, StreamConfig]:
        cfg = config_from_kwargs(self.config_cls, config, **fields)
        return cfg, await self.stream_config(js, cfg)

    async def create(self, js: JetStream, config: C | JSONObject | None, fields: Mapping[str, object]) -> H:
        cfg, scfg = await self._configs(js, config, fields)
        try:
            stream = await js.create_stream(scfg)
        except StreamNameInUseError as exc:
            if not self.upgradable:
                raise
            stream = await self._upgrade(js, scfg, exc)
        return self.handle(js, stream, cfg.bucket)

    async def _upgrade(self, js: JetStream, scfg: StreamConfig, refused: StreamNameInUseError) -> Stream:
        """The bucket exists with another config: one made by an older client that differs
        only in what this kind may bring up to date is updated, else ``refused`` raises."""
        try:
            stored = (await js.stream_info(scfg.name or "")).config
        except StreamNotFoundError:
            raise refused from None
        changes = set(stream_drift(scfg, stored).changes)
        if not changes or not changes <= self.upgradable:
            raise refused
        return await js.update_stream(scfg)

    async def update(self, js: JetStream, config: C | JSONObject | None, fields: Mapping[str, object]) -> H:
        cfg, scfg = await self._configs(js, config, fields)
        try:
            stream = await js.update_stream(scfg)
        except StreamNotFoundError:
            raise _not_found(cfg.bucket) from None
        return self.handle(js, stream, cfg.bucket)

    async def create_or_update(self, js: JetStream, config: C | JSONObject | None,
                               fields: Mapping[str, object]) -> H:
        cfg, scfg = await self._configs(js, config, fields)
        return self.handle(js, await js.create_or_update_stream(scfg), cfg.bucket)

    async def bind(self, js: JetStream, bucket: str) -> H:
        validate_bucket_name(bucket)
        try:
            stream = await js.stream(self.stream_name(bucket))
        except StreamNotFoundError:
            raise _not_found(bucket) from None
        if self.check is not None:
            self.check(stream.cached_info(), bucket)
        return self.handle(js, stream, bucket)

    async def delete(self, js: JetStream, bucket: str) -> bool:
        validate_bucket_name(bucket)
        try:
            return bool(await js.delete_stream(self.stream_name(bucket)))
        except StreamNotFoundError:
            raise _not_found(bucket) from None

    async def names(self, js: JetStream) -> AsyncIterator[str]:
        prefix = self.stream_prefix
        async for name in js.stream_names(subject=self.list_subject):
            if name.startswith(prefix):
                yield name[len(prefix):]

    async def statuses(self, js: JetStream) -> AsyncIterator[S]:
        prefix = self.stream_prefix
        async for info in js.list_streams(subject=self.list_subject):
            name = info.config.name or ""
            if name.startswith(prefix):
                yield self.status(info, name[len(prefix):])
