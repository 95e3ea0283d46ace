"""Atomic batch publishing, ADR-50 (asyncio source; ``jetwire/_sync/batch.py`` is
generated from it). ``js.atomic_batch()`` makes an :class:`AtomicBatch`; the headers and
the reading of the answer are ``jetwire/jetstream/batch.py``."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import _impl
from ..errors import AtomicBatchError, NoRespondersError, NoStreamResponseError, TimeoutError
from ..jetstream.batch import batch_ack, batch_failed, batch_headers
from ..jetstream.models import BatchAck

if TYPE_CHECKING:
    from ..connection import interface as _api
    from ..protocol.headers import HeadersInit
    from .client import Client

__all__ = ["AtomicBatch"]

_encode_headers = _impl.encode_headers


class AtomicBatch:
    """One atomic batch (ADR-50; nats-server 2.12+, streams with ``allow_atomic=True``):
    every message added is stored, with consecutive sequences, when :meth:`commit`
    succeeds, or none is.

    ``add()`` sends its message at once (a plain publish carrying the batch headers;
    the server stages it); ``commit()`` sends the last one as a request and returns the
    :class:`~jetwire.BatchAck` (``stream``, ``seq`` of the last message, ``batch_id``,
    ``count``), or raises :class:`~jetwire.AtomicBatchError` (nothing stored) naming the
    batch and the reason: an expectation that does not hold (``.error`` is then the
    typed error, e.g. ``WrongLastSequenceError``), a stream without ``allow_atomic``, a
    duplicate ``msg_id``, more messages than the server allows (1000 by default), or no
    stream for the subject. Expectations are checked by the server at the commit,
    against the stream as it was before the batch; ``expected_last_seq`` only on the
    first message, ``expected_last_msg_id`` is not supported in batches. The server
    abandons a batch that sees no message for 10 seconds. A batch is used once: after
    ``commit()`` (or ``discard()``) another ``add``/``commit`` raises
    ``AtomicBatchError``."""

    def __init__(self, nc: Client, link: _api.Link, timeout: float, batch_id: str) -> None:
        self._nc = nc
        self._link = link
        self._timeout = timeout
        self._id = batch_id
        self._seq = 0
        self._closed = False

    def __repr__(self) -> str:
        return f"<AtomicBatch id={self._id!r} size={self._seq} closed={self._closed}>"

    @property
    def batch_id(self) -> str:
        """The batch's ``Nats-Batch-Id``."""
        return self._id

    @property
    def size(self) -> int:
        """How many messages were added (the commit's not counted)."""
        return self._seq

    @property
    def is_closed(self) -> bool:
        """Whether the batch was committed (or tried to be) or discarded."""
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise AtomicBatchError(description="the batch was already committed or discarded", batch_id=self._id)

    def add(self, subject: str, data: bytes | bytearray | memoryview = b"", headers: HeadersInit | None = None, *,
            msg_id: str | None = None,
            expected_stream: str | None = None, expected_last_seq: int | None = None,
            expected_last_subject_seq: int | None = None,
            expected_last_subject_seq_subject: str | None = None, ttl: float | None = None) -> Any:
        """Add a message to the batch: sent now, stored only by a successful commit.
        The options are :meth:`JetStream.publish`'s (checked here, before anything is
        sent). The result is ``nc.publish``'s: in the asyncio flavour an awaitable,
        already done unless the socket is congested (awaiting it is back-pressure; not
        awaiting it loses nothing); in the blocking flavour None."""
        self._check_open()
        hdrs = batch_headers(headers, self._id, self._seq + 1, False, msg_id, expected_stream, expected_last_seq,
                             expected_last_subject_seq, expected_last_subject_seq_subject, ttl)
        r = self._nc.publish(subject, data, headers=hdrs)  # raises before sending (bad subject, payload)
        self._seq += 1
        return r

    async def commit(self, subject: str, data: bytes | bytearray | memoryview = b"", headers: HeadersInit | None = None, *,
                     msg_id: str | None = None,
                     expected_stream: str | None = None, expected_last_seq: int | None = None,
                     expected_last_subject_seq: int | None = None,
                     expected_last_subject_seq_subject: str | None = None, ttl: float | None = None,
                     timeout: float | None = None) -> BatchAck:
        """Send the batch's last message and commit: the ``BatchAck`` once the server
        stored the whole batch, ``AtomicBatchError`` when it stored nothing (see the
        class), ``TimeoutError`` when no answer came within ``timeout`` (default: the
        context's; the batch may then have been stored or not)."""
        self._check_open()
        seq = self._seq + 1
        hdrs = batch_headers(headers, self._id, seq, True, msg_id, expected_stream, expected_last_seq,
                             expected_last_subject_seq, expected_last_subject_seq_subject, ttl)
        hdr = _encode_headers(hdrs)
        wait = self._timeout if timeout is None else timeout
        try:
            msg = await self._link.request_raw(subject, data, hdr, wait)
        except NoRespondersError:
            self._closed = True
            err = NoStreamResponseError(f"no stream answered the commit to {subject!r}")
            raise batch_failed(self._id, err) from err
        except TimeoutError:
            self._closed = True
            raise TimeoutError(f"no answer to the commit of atomic batch {self._id!r} within {wait}s "
                               "(it may or may not have been stored)") from None
        self._closed = True
        self._seq = seq
        return batch_ack(msg.data, self._id)

    def discard(self) -> None:
        """Give the batch up without committing: nothing of it is stored (the server
        drops what it staged once the batch has been idle for 10 seconds)."""
        self._closed = True
