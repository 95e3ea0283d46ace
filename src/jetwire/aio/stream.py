"""A handle on one stream (asyncio source; ``jetwire/_sync/stream.py`` is generated from it)."""
from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Unpack

from .. import _impl
from .._typing import JSONObject
from ..errors import APIError, InvalidOptionError, NoRespondersError
from ..jetstream.config_kwargs import ConsumerConfigFields
from ..jetstream.ensure_core import DEFAULT_CONSUMER
from ..jetstream.manage import BatchGet, ConsumerPauseResponse, direct_msg, purge_request, validate_subject_arg
from ..jetstream.models import ConsumerConfig, ConsumerInfo, RawStreamMsg, StreamInfo
from .consumer import Consumer
from .inbox import Inbox
from .ordered import OrderedConsumer

if TYPE_CHECKING:
    from .jetstream import JetStream

_PAGE_KEYS = ("type", "total", "offset", "limit")
_validate_filter = _impl.validate_filter  # subjects with wildcards (whole tokens)


def stream_info_of(resp: JSONObject) -> StreamInfo:
    """The ``StreamInfo`` of an API answer (its paging fields dropped)."""
    for k in _PAGE_KEYS:
        resp.pop(k, None)
    info: StreamInfo = StreamInfo.from_json(resp)
    return info


class Stream:
    """A stream: ``info()``, ``cached_info()``, ``purge()``, message get/delete and the
    consumer manager (``create_consumer()``, ``consumer()``, ``list_consumers()``, ...).

    Made by ``js.create_stream()``, ``js.update_stream()`` or ``js.stream(name)``.
    """

    def __init__(self, js: JetStream, info: StreamInfo) -> None:
        self._js = js
        self._info = info
        self._name: str = info.config.name or ""

    def __repr__(self) -> str:
        return f"<Stream name={self._name!r}>"

    @property
    def name(self) -> str:
        return self._name

    def cached_info(self) -> StreamInfo:
        """The info from the last lookup (no request)."""
        return self._info

    async def info(self, subjects_filter: str | None = None, deleted_details: bool = False) -> StreamInfo:
        """Fresh stream info. ``subjects_filter`` (e.g. ``">"``) fills
        ``state.subjects`` with per-subject counts, fetched page by page and merged;
        ``deleted_details`` fills ``state.deleted`` with the deleted sequences."""
        js = self._js
        subject = f"STREAM.INFO.{self._name}"
        req: JSONObject = {}
        if subjects_filter is not None:
            validate_subject_arg(subjects_filter, "subjects_filter")
            req["subjects_filter"] = subjects_filter
        if deleted_details:
            req["deleted_details"] = True
        merged: dict[str, int] | None = None
        info: StreamInfo | None = None
        offset = 0
        while True:
            if offset:
                req["offset"] = offset
            resp = await js.api_request(subject, req or None)
            total = resp.get("total") or 0
            info = stream_info_of(resp)
            page = info.state.subjects
            if not subjects_filter:
                break
            if page:
                if merged is None:
                    merged = dict(page)
                else:
                    merged.update(page)
            got = len(merged) if merged else 0
            if not page or got >= total:
                break
            offset = got
        if merged is not None:
            info.state.subjects = merged
        self._info = info
        return info

    async def purge(self, subject: str | None = None, sequence: int | None = None,
                    keep: int | None = None) -> int:
        """Remove messages: all, those on ``subject`` (wildcards allowed), those below
        ``sequence``, or all but the last ``keep``. Returns the number purged."""
        req = purge_request(subject, sequence, keep)
        resp = await self._js.api_request(f"STREAM.PURGE.{self._name}", req or None)
        return int(resp.get("purged", 0))

    # -- messages --------------------------------------------------------------------
    async def get_msg(self, seq: int, direct: bool = False, next_by_subject: str | None = None) -> RawStreamMsg:
        """The message stored at ``seq`` (``MsgNotFoundError`` when there is none).
        With ``next_by_subject`` (a subject, wildcards allowed): the first message at
        or after ``seq`` stored on a matching subject (nats.go's ``DirectGetNext`` /
        ``next_by_subj``). Uses direct get when ``direct`` is true or the stream has
        ``allow_direct``."""
        if isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
            raise InvalidOptionError(f"seq must be a non-negative int, not {seq!r}")
        if next_by_subject is None:
            return await self._get({"seq": seq}, None, direct)
        validate_subject_arg(next_by_subject, "next_by_subject")
        return await self._get({"seq": seq, "next_by_subj": next_by_subject}, None, direct)

    async def get_last_msg_for_subject(self, subject: str, direct: bool = False) -> RawStreamMsg:
        """The last message stored on ``subject`` (``MsgNotFoundError`` when none;
        ``BadSubjectError`` for one that is not a subject, before anything is sent)."""
        validate_subject_arg(subject, "subject")
        return await self._get({"last_by_subj": subject}, subject, direct)

    async def _get(self, req: JSONObject, last_subject: str | None, direct: bool) -> RawStreamMsg:
        js = self._js
        if direct or self._info.config.allow_direct:
            api = js.api
            if last_subject is not None:
                subject, data = api.prepare(f"DIRECT.GET.{self._name}.{last_subject}", None)
            else:
                subject, data = api.prepare(f"DIRECT.GET.{self._name}", req)
            try:
                msg = await api.request_msg(subject, data)
            except NoRespondersError as exc:
                raise APIError(code=503, err_code=None,
                               description="direct get: no responders (does the stream allow direct?)") from exc
            return direct_msg(msg)
        resp = await js.api_request(f"STREAM.MSG.GET.{self._name}", req)
        raw: RawStreamMsg = RawStreamMsg.from_json(resp)
        return raw

    async def get_msgs(self, batch: int | None = None, seq: int | None = None,
                       start_time: datetime | None = None, subject: str | None = None,
                       max_bytes: int | None = None, multi_last: Sequence[str] | None = None,
                       up_to_seq: int | None = None, up_to_time: datetime | None = None,
                       page: int = 256) -> AsyncIterator[RawStreamMsg]:
        """Many messages by batched direct get (ADR-31; server 2.11+, a stream with
        ``allow_direct``), ``page`` per request, in stream order, no consumer made.

        Range: up to ``batch`` messages (None: to the end) from ``seq`` (default 1) or
        ``start_time`` on, only those on subjects matching ``subject`` when given.
        Last per subject: with ``multi_last=[subjects]`` (wildcards allowed), the last
        message of each matching subject as of ``up_to_seq`` / ``up_to_time`` (default:
        when the first page is served; later pages see the same state; an ``up_to_seq``
        past the stream's end means its end). ``max_bytes``
        caps each page (the server's count of stored bytes); the iteration ends at the
        first page it cut short. Nothing matching: an empty iteration. A stream without
        direct get (or missing): ``APIError`` (503); a bad request: ``BadRequestError``."""
        state = BatchGet(batch, seq, start_time, subject, max_bytes, multi_last, up_to_seq, up_to_time, page)
        for s in ([subject] if subject is not None else state.multi_last or ()):
            _validate_filter(s)
        api = self._js.api
        link = api.link
        timeout = api.timeout
        trace = api.trace_cb is not None
        inbox = Inbox(link)
        try:
            while True:
                req = state.next_request()
                if req is None:
                    return
                get_subject, data = api.prepare(f"DIRECT.GET.{self._name}", req)
                if trace:
                    await api.trace(get_subject, data)
                link.publish_raw(get_subject, inbox.subject, None, data)
                while True:
                    reply = await inbox.take(timeout, "batched direct get")
                    if trace:
                        await api.trace(reply.subject, bytes(reply.data))
                    out = state.on_msg(reply)
                    if out is None:
                        if state.past_end:  # nothing as of an up_to_seq past the end: as of the end
                            state.clamp_to((await self.info()).state.last_seq)
                        break
                    yield out
        finally:
            inbox.close()

    async def delete_msg(self, seq: int) -> bool:
        """Mark the message at ``seq`` deleted (without overwriting its data)."""
        await self._js.api_request(f"STREAM.MSG.DELETE.{self._name}", {"seq": seq, "no_erase": True})
        return True

    async def secure_delete_msg(self, seq: int) -> bool:
        """Delete the message at ``seq`` and overwrite its data on disk."""
        await self._js.api_request(f"STREAM.MSG.DELETE.{self._name}", {"seq": seq})
        return True

    # -- consumers -------------------------------------------------------------------
    async def create_consumer(self, config: ConsumerConfig | JSONObject | None = None,
                              **fields: Unpack[ConsumerConfigFields]) -> Consumer:
        """Create a consumer (see ``JetStream.create_consumer``)."""
        return await self._js.create_consumer(self._name, config, **fields)

    async def update_consumer(self, config: ConsumerConfig | JSONObject | None = None,
                              **fields: Unpack[ConsumerConfigFields]) -> Consumer:
        """Update an existing consumer (``ConsumerDoesNotExistError`` when missing)."""
        return await self._js.update_consumer(self._name, config, **fields)

    async def create_or_update_consumer(self, config: ConsumerConfig | JSONObject | None = None,
                                        **fields: Unpack[ConsumerConfigFields]) -> Consumer:
        """Create the consumer, or update it when it exists."""
        return await self._js.create_or_update_consumer(self._name, config, **fields)

    async def consumer(self, name: str) -> Consumer:
        """Look the consumer up (``ConsumerNotFoundError`` when missing)."""
        return await self._js.consumer(self._name, name)

    async def delete_consumer(self, name: str) -> bool:
        return await self._js.delete_consumer(self._name, name)

    async def list_consumers(self) -> AsyncIterator[ConsumerInfo]:
        """Every consumer's info (paged under the hood)."""
        async for ci in self._js.list_consumers(self._name):
            yield ci

    async def consumer_names(self) -> AsyncIterator[str]:
        """Every consumer's name (paged under the hood)."""
        async for name in self._js.consumer_names(self._name):
            yield name

    async def unpin_consumer(self, name: str, group: str) -> None:
        """Unpin the pinned client of a priority group (see ``JetStream.unpin_consumer``)."""
        await self._js.unpin_consumer(self._name, name, group)

    async def pause_consumer(self, name: str, until: datetime) -> ConsumerPauseResponse:
        return await self._js.pause_consumer(self._name, name, until)

    async def resume_consumer(self, name: str) -> ConsumerPauseResponse:
        return await self._js.resume_consumer(self._name, name)

    async def create_consumer_from_default(self, template: ConsumerConfig | JSONObject, **overrides: object) -> Consumer:
        """Create a consumer from a template (see ``JetStream.create_consumer_from_default``)."""
        return await self._js.create_consumer_from_default(self._name, template, **overrides)

    async def load_or_create_consumer(self, name: str, template: ConsumerConfig | JSONObject = DEFAULT_CONSUMER,
                                      **overrides: object) -> Consumer:
        """Load consumer ``name``, or create it from a template (see ``JetStream.load_or_create_consumer``)."""
        return await self._js.load_or_create_consumer(self._name, name, template, **overrides)

    async def ensure_consumer(self, name: str, template: ConsumerConfig | JSONObject = DEFAULT_CONSUMER, **overrides: object) -> Consumer:
        """Create, update or check consumer ``name`` (see ``JetStream.ensure_consumer``)."""
        return await self._js.ensure_consumer(self._name, name, template, **overrides)

    async def ordered_consumer(self, filter_subjects: str | Sequence[str] | None = None,
                               **options: Any) -> OrderedConsumer:
        """An ordered consumer on this stream (see ``JetStream.ordered_consumer``)."""
        return await self._js.ordered_consumer(self._name, filter_subjects, **options)
