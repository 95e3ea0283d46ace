"""Sans-IO helpers of stream/consumer management and publishing, shared by both flavours:
request bodies, API subjects, JetStream publish headers, direct-get message decoding and
the consumer pause answer. No I/O happens here."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from .. import _impl
from .._nuid import NUID
from .._units import format_rfc3339, parse_rfc3339
from ..errors import APIError, BadRequestError, InvalidOptionError, JetStreamError, MsgNotFoundError
from ..protocol.headers import Headers, HeadersInit, check_value
from ._json import JSONObject, Model, duration
from .models import ConsumerConfig, RawStreamMsg
from .schedule import schedule_headers, ttl_header_value

if TYPE_CHECKING:
    from ..msg import Msg

__all__ = [
    "EXPECTED_LAST_MSG_ID_HDR",
    "EXPECTED_LAST_SEQ_HDR",
    "EXPECTED_LAST_SUBJ_SEQ_HDR",
    "EXPECTED_LAST_SUBJ_SEQ_SUBJ_HDR",
    "EXPECTED_STREAM_HDR",
    "MSG_ID_HDR",
    "MSG_INCR_HDR",
    "MSG_TTL_HDR",
    "BatchGet",
    "ConsumerPauseResponse",
    "consumer_create_request",
    "consumer_create_subject",
    "direct_msg",
    "generate_consumer_name",
    "incr_headers",
    "pause_request",
    "publish_headers",
    "purge_request",
    "ttl_header_value",
    "validate_filter_subjects",
    "validate_stream_subjects",
    "validate_subject_arg",
]

MSG_ID_HDR = "Nats-Msg-Id"
EXPECTED_STREAM_HDR = "Nats-Expected-Stream"
EXPECTED_LAST_SEQ_HDR = "Nats-Expected-Last-Sequence"
EXPECTED_LAST_SUBJ_SEQ_HDR = "Nats-Expected-Last-Subject-Sequence"
EXPECTED_LAST_SUBJ_SEQ_SUBJ_HDR = "Nats-Expected-Last-Subject-Sequence-Subject"
EXPECTED_LAST_MSG_ID_HDR = "Nats-Expected-Last-Msg-Id"
MSG_TTL_HDR = "Nats-TTL"  # per-message TTL (ADR-43): streams with allow_msg_ttl
MSG_INCR_HDR = "Nats-Incr"  # counter increment (ADR-49): streams with allow_msg_counter

# headers a direct get adds to the stored message (ADR-31); not part of the message
STREAM_HDR = "Nats-Stream"
SEQUENCE_HDR = "Nats-Sequence"
TIMESTAMP_HDR = "Nats-Time-Stamp"
SUBJECT_HDR = "Nats-Subject"
_DIRECT_HDRS = (STREAM_HDR, SEQUENCE_HDR, TIMESTAMP_HDR, SUBJECT_HDR, "Nats-Last-Sequence", "Nats-Num-Pending")


@dataclass
class ConsumerPauseResponse(Model):
    """Answer of ``pause_consumer``/``resume_consumer``: whether the consumer is paused,
    until when (aware datetime, ``None`` when resumed) and the seconds remaining."""

    paused: bool = False
    pause_until: datetime | None = None
    pause_remaining: float | None = duration()


def _uint(v: object, what: str) -> str:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ValueError(f"{what} must be a non-negative int, not {v!r}")
    return str(v)


def incr_headers(delta: object) -> dict[str, str]:
    """The headers of a counter increment (``Nats-Incr``: a signed decimal integer)."""
    if isinstance(delta, bool) or not isinstance(delta, int):
        raise TypeError(f"delta must be an int, not {type(delta).__name__}")
    return {MSG_INCR_HDR: f"{delta:+d}"}


def publish_headers(headers: HeadersInit | None, msg_id: str | None, expected_stream: str | None,
                    expected_last_seq: int | None, expected_last_subject_seq: int | None,
                    expected_last_msg_id: str | None, ttl: object = None, *,
                    expected_last_subject_seq_subject: str | None = None, schedule: object = None,
                    schedule_target: str | None = None, schedule_ttl: object = None) -> HeadersInit | None:
    """The headers of a JetStream publish: the user's ``headers`` (``Headers`` or a dict,
    never modified) plus the ``Nats-*`` expectation headers, the ``Nats-TTL`` of ``ttl``
    (see :func:`ttl_header_value`) and the ``Nats-Schedule*`` headers of ``schedule``
    (see :func:`jetwire.jetstream.schedule.schedule_headers`) that are not ``None`` (they
    replace a same-named user header). Returns ``headers`` itself when there is nothing
    to add. Everything is checked here, before anything is sent.

    ``expected_last_subject_seq_subject`` (nats.go's ``ExpectLastSequenceForSubject``)
    makes ``expected_last_subject_seq`` an expectation on the last message of that
    subject (a filter; wildcards allowed) instead of the published one's."""
    if msg_id is None and expected_stream is None and expected_last_seq is None \
            and expected_last_subject_seq is None and expected_last_msg_id is None and ttl is None \
            and expected_last_subject_seq_subject is None and schedule is None and schedule_target is None \
            and schedule_ttl is None:
        return headers
    extra: dict[str, str] = {}
    if msg_id is not None:
        check_value(msg_id)
        extra[MSG_ID_HDR] = msg_id
    if expected_stream is not None:
        check_value(expected_stream)
        extra[EXPECTED_STREAM_HDR] = expected_stream
    if expected_last_seq is not None:
        extra[EXPECTED_LAST_SEQ_HDR] = _uint(expected_last_seq, "expected_last_seq")
    if expected_last_subject_seq is not None:
        extra[EXPECTED_LAST_SUBJ_SEQ_HDR] = _uint(expected_last_subject_seq, "expected_last_subject_seq")
    if expected_last_subject_seq_subject is not None:
        if expected_last_subject_seq is None:
            raise ValueError("expected_last_subject_seq_subject needs expected_last_subject_seq")
        if not isinstance(expected_last_subject_seq_subject, str):
            raise TypeError("expected_last_subject_seq_subject must be a str, "
                            f"not {type(expected_last_subject_seq_subject).__name__}")
        _impl.validate_filter(expected_last_subject_seq_subject)
        extra[EXPECTED_LAST_SUBJ_SEQ_SUBJ_HDR] = expected_last_subject_seq_subject
    if expected_last_msg_id is not None:
        check_value(expected_last_msg_id)
        extra[EXPECTED_LAST_MSG_ID_HDR] = expected_last_msg_id
    if ttl is not None:
        extra[MSG_TTL_HDR] = ttl_header_value(ttl)
    if schedule is not None:
        extra.update(schedule_headers(schedule, schedule_target, schedule_ttl))
    elif schedule_target is not None or schedule_ttl is not None:
        raise ValueError("schedule_target and schedule_ttl need a schedule")
    if not headers:
        return extra
    h = Headers(headers)
    for k, v in extra.items():
        h[k] = v
    return h


def generate_consumer_name(nuid: NUID | None = None) -> str:
    """A random name for an ephemeral consumer (unique per NUID)."""
    return (nuid or NUID()).next()


def validate_filter_subjects(subjects: Iterable[str | None]) -> None:
    """Raise ``BadSubjectError`` unless every subject given can be subscribed to:
    consumer filters and stream subjects (wildcards only as whole tokens, ``>`` only
    last), checked before the request is sent. What is not a subject at all (None, "",
    a non-string, a string given where the list belongs) is left to the schema check
    (``validate=True``) or the server, which name the field."""
    if isinstance(subjects, (str, bytes)):
        return
    for subject in subjects:
        if isinstance(subject, str) and subject != "":
            _impl.validate_filter(subject)


def validate_subject_arg(subject: object, name: str = "subject") -> str:
    """A subject argument (wildcards as whole tokens): ``TypeError`` for a non-str,
    ``BadSubjectError`` for a bad subject (``""`` included), before anything is sent."""
    if not isinstance(subject, str):
        raise TypeError(f"{name} must be a str, not {type(subject).__name__}")
    _impl.validate_filter(subject)
    return subject


def validate_stream_subjects(subjects: Iterable[str | None], schema: bool = False) -> None:
    """``validate_filter_subjects`` for a stream's subjects, where ``""`` is not "none"
    but an empty subject (``BadSubjectError``), as the API contract has it; with
    ``schema`` (``validate=True``) an empty one is left to the schema check, which
    names the field (``SchemaValidationError``)."""
    if isinstance(subjects, (str, bytes)):
        return
    for subject in subjects:
        if isinstance(subject, str) and (subject or not schema):
            _impl.validate_filter(subject)


def consumer_create_subject(stream: str, name: str, cfg: ConsumerConfig | JSONObject) -> str:
    """``CONSUMER.CREATE.<stream>.<name>[.<filter>]`` (server 2.9+): the filter subject
    goes into the API subject when the config (a ``ConsumerConfig`` or its wire dict)
    has exactly one, in ``filter_subject`` (as nats.go does; the server checks that it
    matches the config). The filters are checked here (``BadSubjectError``)."""
    if isinstance(cfg, dict):
        one, many = cfg.get("filter_subject"), cfg.get("filter_subjects")
    else:
        one, many = cfg.filter_subject, cfg.filter_subjects
    validate_filter_subjects([one, *(many or ())])
    if one and not many:
        return f"CONSUMER.CREATE.{stream}.{name}.{one}"
    return f"CONSUMER.CREATE.{stream}.{name}"


def consumer_create_request(stream: str, cfg: ConsumerConfig, action: str) -> JSONObject:
    req: JSONObject = {"stream_name": stream, "config": cfg.to_json_dict()}
    if action:
        req["action"] = action
    return req


def purge_request(subject: str | None, sequence: int | None, keep: int | None) -> JSONObject:
    if sequence is not None and keep is not None:  # (nats.go: ErrInvalidOption)
        raise InvalidOptionError("purge: give sequence or keep, not both")
    req: JSONObject = {}
    if subject is not None:  # ("": a bad subject, never "everything")
        req["filter"] = validate_subject_arg(subject)
    if sequence is not None:
        _uint(sequence, "sequence")
        req["seq"] = sequence
    if keep is not None:
        _uint(keep, "keep")
        req["keep"] = keep
    return req


def pause_request(until: datetime | None) -> JSONObject:
    if until is None:
        return {}
    if not isinstance(until, datetime):
        raise TypeError(f"until must be a datetime, not {type(until).__name__}")
    return {"pause_until": format_rfc3339(until)}


def direct_msg(msg: Msg) -> RawStreamMsg:
    """Build a :class:`RawStreamMsg` from a direct-get reply (ADR-31): the stored
    message's subject, sequence and time come from the ``Nats-Subject``,
    ``Nats-Sequence`` and ``Nats-Time-Stamp`` headers, which (with ``Nats-Stream``) are
    removed so that ``headers`` holds what was published, as with ``STREAM.MSG.GET``.
    A ``404`` status raises :class:`MsgNotFoundError`."""
    h = msg.headers
    if h is None:
        raise JetStreamError("direct get: reply without headers")
    status = h.status
    if status is not None and not msg.data and SUBJECT_HDR not in h:
        desc = h.description or ""
        if status == "404":
            raise MsgNotFoundError(code=404, err_code=10037, description=desc or "message not found")
        if status == "408" or status == "400":
            raise BadRequestError(code=int(status), err_code=None, description=desc or "bad request")
        raise APIError(code=int(status) if status.isdigit() else None, err_code=None,
                       description=desc or "direct get failed")
    subject = h.get(SUBJECT_HDR)
    seq = h.get(SEQUENCE_HDR)
    if subject is None or seq is None:
        raise JetStreamError("direct get: reply lacks Nats-Subject/Nats-Sequence headers")
    ts = h.get(TIMESTAMP_HDR)
    rest = Headers(h)
    rest.status = rest.description = None
    for k in _DIRECT_HDRS:
        if k in rest:
            del rest[k]
    out = RawStreamMsg(subject=subject, seq=int(seq), data=bytes(msg.data), headers=rest if len(rest) else None,
                       time=parse_rfc3339(ts) if ts else None)
    return out


# -- batched direct get (ADR-31, server 2.11+) -------------------------------------------
_UP_TO_SEQ_HDR = "Nats-UpTo-Sequence"
_PENDING_HDR = "Nats-Num-Pending"
_LAST_SEQ_HDR = "Nats-Last-Sequence"


def _opt_uint(v: object, what: str, minimum: int = 0) -> int | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
        raise ValueError(f"{what} must be an int >= {minimum}, not {v!r}")
    return v


class BatchGet:
    """Paging of a batched direct get: the requests to send one after another, and the
    decoding of their replies (stored messages, then a ``204 EOB`` status whose
    ``Nats-Num-Pending`` tells whether more matches remain and ``Nats-Last-Sequence``
    where the next page starts).

    Range mode (``multi_last`` None): up to ``batch`` messages (None: all) from ``seq``
    (default 1) or ``start_time`` on, those whose subject matches ``subject`` when given.
    Last-per-subject mode: the last message of every subject matching one of
    ``multi_last``, as of ``up_to_seq`` / ``up_to_time`` (default: now), in stream
    order. Both page ``page`` messages at a time; ``max_bytes`` caps one page (the
    server's count) and ends the iteration at the first page it cut short."""

    __slots__ = (
        "_asked",
        "_first",
        "_got",
        "_pages",
        "done",
        "max_bytes",
        "multi_last",
        "next_seq",
        "page",
        "past_end",
        "remaining",
        "start_time",
        "subject",
        "up_to_seq",
        "up_to_time",
    )

    def __init__(self, batch: int | None = None, seq: int | None = None,
                 start_time: datetime | None = None, subject: str | None = None,
                 max_bytes: int | None = None, multi_last: Iterable[str] | None = None, up_to_seq: int | None = None,
                 up_to_time: datetime | None = None, page: int = 256) -> None:
        self.remaining = _opt_uint(batch, "batch", 1)
        self.max_bytes = _opt_uint(max_bytes, "max_bytes", 1)
        self.page = _opt_uint(page, "page", 1) or 1
        self.up_to_seq = _opt_uint(up_to_seq, "up_to_seq", 1)
        if seq is not None and start_time is not None:
            raise ValueError("give seq or start_time, not both")
        if start_time is not None and not isinstance(start_time, datetime):
            raise TypeError(f"start_time must be a datetime, not {type(start_time).__name__}")
        if up_to_time is not None and not isinstance(up_to_time, datetime):
            raise TypeError(f"up_to_time must be a datetime, not {type(up_to_time).__name__}")
        self.next_seq = _opt_uint(seq, "seq") or 1
        self.start_time = start_time
        if multi_last is None:
            if up_to_seq is not None or up_to_time is not None:
                raise ValueError("up_to_seq and up_to_time go with multi_last")
            if subject is not None and (not isinstance(subject, str) or not subject):
                raise ValueError(f"subject must be a non-empty subject, not {subject!r}")
            self.multi_last: list[str] | None = None
        else:
            if isinstance(multi_last, str) or not multi_last:
                raise ValueError("multi_last must be a non-empty list of subjects")
            multi_last = list(multi_last)
            for s in multi_last:
                if not isinstance(s, str) or not s:
                    raise ValueError(f"multi_last holds a bad subject: {s!r}")
            if subject is not None:
                raise ValueError("subject does not go with multi_last (list the subjects there)")
            if up_to_seq is not None and up_to_time is not None:
                raise ValueError("give up_to_seq or up_to_time, not both")
            self.multi_last = multi_last
        self.subject = subject
        self.up_to_time = up_to_time
        self.done = self.remaining == 0
        #: the first page found nothing as of an ``up_to_seq`` the caller gave: the server
        #: answers so when it is past the stream's last sequence (see :meth:`clamp_to`)
        self.past_end = False
        self._first = True
        self._asked = 0
        self._got = 0
        self._pages = 0

    def clamp_to(self, last_seq: int) -> bool:
        """After :attr:`past_end`: ask again as of ``last_seq`` (the stream's last
        sequence), which is what an ``up_to_seq`` beyond the end means; True when there
        is something to ask again (``up_to_seq`` was beyond ``last_seq``)."""
        if not self.past_end or self.up_to_seq is None or last_seq < 1 or self.up_to_seq <= last_seq:
            return False
        self.up_to_seq = last_seq
        self.past_end = self.done = False
        self._first = True
        self._pages = 0
        return True

    def next_request(self) -> JSONObject | None:
        """The body of the next page's request; None once the iteration is over."""
        if self.done:
            return None
        n = self.page if self.remaining is None else min(self.page, self.remaining)
        req: JSONObject = {"batch": n}
        first = self._first
        if self.multi_last is not None:
            req["multi_last"] = self.multi_last
            if self.up_to_seq is not None:
                req["up_to_seq"] = self.up_to_seq
            elif first and self.up_to_time is not None:
                req["up_to_time"] = format_rfc3339(self.up_to_time)
            if not first:
                req["seq"] = self.next_seq
            elif self.start_time is not None:
                req["start_time"] = format_rfc3339(self.start_time)
        else:
            if first and self.start_time is not None:
                req["start_time"] = format_rfc3339(self.start_time)
            else:
                req["seq"] = self.next_seq
            if self.subject is not None:
                req["next_by_subj"] = self.subject
        if self.max_bytes is not None:
            req["max_bytes"] = self.max_bytes
        self._first = False
        self._asked = n
        self._got = 0
        self._pages += 1
        return req

    def on_msg(self, msg: Msg) -> RawStreamMsg | None:
        """One reply of the current page: the stored message, or None when the page
        is over (``done`` tells whether another follows). Error statuses raise."""
        h = msg.headers
        status = h.status if h is not None else None
        if h is None or status is None or SEQUENCE_HDR in h:  # a stored message
            out = direct_msg(msg)
            self._got += 1
            self.next_seq = out.seq + 1
            if self.remaining is not None:
                self.remaining -= 1
            return out
        if status == "204":
            pending = h.get(_PENDING_HDR)
            last = h.get(_LAST_SEQ_HDR)
            up_to = h.get(_UP_TO_SEQ_HDR)
            if last and last.isdigit():
                self.next_seq = int(last) + 1
            if self.multi_last is not None and self.up_to_seq is None and up_to and up_to.isdigit():
                self.up_to_seq = int(up_to)  # every later page sees the same state
            if (not pending or pending == "0" or self.remaining == 0 or self._got == 0
                    or (self.max_bytes is not None and self._got < self._asked)):
                self.done = True
            return None
        if status == "404":  # nothing (more) matches
            self.done = True
            self.past_end = self.multi_last is not None and self.up_to_seq is not None and self._pages == 1
            return None
        self.done = True
        desc = h.description or ""
        if status == "503":
            raise APIError(code=503, err_code=None,
                           description="direct get: no responders (does the stream exist and allow direct?)")
        if status == "408" or status == "400":
            raise BadRequestError(code=int(status), err_code=None, description=desc or "bad request")
        raise APIError(code=int(status) if status.isdigit() else None, err_code=None,
                       description=desc or "batched direct get failed")
