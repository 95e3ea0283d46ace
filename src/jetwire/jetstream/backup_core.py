"""Stream backup and restore, the parts free of network I/O (``jetwire/aio/backup.py``
and its generated blocking twin move the bytes).

The wire protocol (``$JS.API.STREAM.SNAPSHOT`` / ``$JS.API.STREAM.RESTORE``):

* Snapshot: the request names a private ``deliver_subject``; the server answers with the
  stream's ``config`` and ``state``, then publishes the snapshot (an S2-compressed
  archive) there in chunks. Each chunk but the last carries a reply subject
  ``$JS.SNAPSHOT.ACK.<stream>.<id>.<size>.<index>``: answering it gives the server room
  in its window (flow control; a server waits a few seconds for acks, then gives up with
  ``408 No Flow Response``). The end is an empty message whose status is ``204``, or an
  error status (``408 No Interest``, ``500 <reason>``).
* Restore: the request carries ``config`` and ``state`` (``backup.json``); the answer
  names the subject to send the file to. Every chunk is a request answered by an empty
  message (or a JSON error); an empty chunk ends the upload and is answered by the
  stream-create response (the restored stream's info, or the error).

On disk a backup is the layout of ``nats stream backup``: ``backup.json`` (the snapshot
answer's ``config`` and ``state``) and ``stream.tar.s2`` (the bytes as the server sent
them). Here: the request and answer models, the file layout and ``backup.json``, chunk
bookkeeping (no chunk missing, none short) and :class:`S2Frames`, a walker of the S2
framing that counts uncompressed bytes (progress) and finds truncated or corrupt files
without decompressing them.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, BinaryIO

import orjson

from ..errors import JetStreamError, api_error
from ._json import JSONObject
from .validate import validate_stream_name

__all__ = ["SnapshotResult"]

BACKUP_JSON = "backup.json"
DATA_FILE = "stream.tar.s2"
PARTIAL_SUFFIX = ".partial"  # a file being written; never left looking complete

MIN_CHUNK_SIZE = 1024
MAX_CHUNK_SIZE = 1024 * 1024
RESTORE_CHUNK_SIZE = 128 * 1024


@dataclass(frozen=True)
class SnapshotResult:
    """What ``js.snapshot_stream()`` wrote: ``bytes`` of ``stream.tar.s2`` (as the server
    sent them), in ``chunks`` messages, in ``duration`` seconds."""

    bytes: int
    chunks: int
    duration: float


# ------------------------------------------------------------------------- layout


def backup_paths(directory: str | os.PathLike[str]) -> tuple[str, str]:
    """``(backup.json, stream.tar.s2)`` in ``directory``."""
    d = os.fspath(directory)
    return os.path.join(d, BACKUP_JSON), os.path.join(d, DATA_FILE)


def check_chunk_size(chunk_size: object) -> int:
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int):
        raise TypeError("chunk_size must be an int")
    if not MIN_CHUNK_SIZE <= chunk_size <= MAX_CHUNK_SIZE:
        raise ValueError(f"chunk_size must be {MIN_CHUNK_SIZE}..{MAX_CHUNK_SIZE} bytes, not {chunk_size}")
    return chunk_size


def snapshot_request(deliver_subject: str, chunk_size: int, check_msgs: bool) -> JSONObject:
    """The ``STREAM.SNAPSHOT`` request: consumers included, ``jsck`` when asked."""
    req: JSONObject = {"deliver_subject": deliver_subject, "chunk_size": chunk_size, "no_consumers": False}
    if check_msgs:
        req["jsck"] = True
    return req


def backup_json(resp: JSONObject) -> bytes:
    """``backup.json``: the snapshot answer's ``config`` and ``state``, as the server wrote
    them (unknown fields kept), indented like ``nats stream backup`` writes it."""
    meta = {"config": resp.get("config") or {}, "state": resp.get("state") or {}}
    return orjson.dumps(meta, option=orjson.OPT_INDENT_2)


def read_backup_json(data: bytes, where: str) -> JSONObject:
    """The ``config`` and ``state`` of a ``backup.json``; ``JetStreamError`` naming the
    problem when it is not one."""
    try:
        meta = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise JetStreamError(f"{where} is not valid JSON: {exc}") from None
    if type(meta) is not dict or type(meta.get("config")) is not dict or not meta["config"].get("name"):
        raise JetStreamError(f"{where} has no stream config (not a stream backup)")
    state = meta.get("state")
    if state is not None and type(state) is not dict:
        raise JetStreamError(f"{where} has a bad stream state")
    return meta


def restore_request(meta: JSONObject, name: str | None) -> tuple[str, JSONObject]:
    """``(stream name, STREAM.RESTORE request)``: the backed-up config and state, under
    ``name`` when given."""
    config = dict(meta["config"])
    if name is not None:
        config["name"] = name
    stream = validate_stream_name(config["name"])
    return stream, {"config": config, "state": meta.get("state") or {}}


# ------------------------------------------------------------------------- snapshot


def parse_ack_reply(reply: str) -> tuple[int, int]:
    """``(size, index)`` from a chunk's ack subject, ``(-1, -1)`` when it has another form."""
    head, _, index = reply.rpartition(".")
    _, _, size = head.rpartition(".")
    try:
        return int(size), int(index)
    except ValueError:
        return -1, -1


class SnapshotChunks:
    """Bookkeeping of one snapshot's chunks, in the order they are written: each one is
    the next (its index in the ack subject), as long as announced, and the stream ends
    with the 204 marker."""

    __slots__ = ("bytes", "chunks", "frames", "last_seen", "stream")

    def __init__(self, stream: str) -> None:
        self.stream = stream
        self.chunks = 0
        self.bytes = 0
        self.frames = S2Frames()
        self.last_seen = False  # a chunk without an ack subject: the last one

    def chunk(self, data: Any, reply: str | None) -> None:
        """Account for one chunk (raise ``JetStreamError`` when one is missing or short)."""
        n = len(data)
        if self.last_seen:
            raise JetStreamError(f"snapshot of {self.stream}: data after the last chunk")
        if reply:
            size, index = parse_ack_reply(reply)
            if index != -1:
                if index != self.chunks + 1:
                    raise JetStreamError(f"snapshot of {self.stream}: chunk {self.chunks + 1} is missing "
                                         f"(got chunk {index})")
                if size != n:
                    raise JetStreamError(f"snapshot of {self.stream}: chunk {index} has {n} bytes, "
                                         f"{size} announced")
        else:
            self.last_seen = True
        self.chunks += 1
        self.bytes += n
        try:
            self.frames.feed(data)
        except ValueError as exc:
            raise JetStreamError(f"snapshot of {self.stream}: {exc}") from None

    def end(self, status: str | None, description: str) -> None:
        """The empty end message: raise unless it says the snapshot is complete."""
        if status not in (None, "", "204"):
            raise JetStreamError(f"snapshot of {self.stream} failed: {status} {description}".rstrip())
        try:
            self.frames.finish()
        except ValueError as exc:
            raise JetStreamError(f"snapshot of {self.stream} is incomplete: {exc}") from None

    @property
    def uncompressed(self) -> int:
        return self.frames.uncompressed


# ------------------------------------------------------------------------- restore


def chunk_answer_error(data: bytes) -> JetStreamError | None:
    """The error in the answer to a restore chunk (empty: the chunk was taken)."""
    if not data:
        return None
    try:
        resp = orjson.loads(data)
    except orjson.JSONDecodeError:
        return JetStreamError(f"bad answer to a restore chunk: {bytes(data[:100])!r}")
    if type(resp) is dict and resp.get("error"):
        return api_error(resp["error"])
    return None


def final_answer(data: bytes) -> JSONObject:
    """The stream-create answer that ends a restore (raises its typed error)."""
    try:
        resp = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise JetStreamError(f"bad answer at the end of a restore: {bytes(data[:100])!r}") from None
    if type(resp) is not dict:
        raise JetStreamError(f"bad answer at the end of a restore: {bytes(data[:100])!r}")
    if resp.get("error"):
        raise api_error(resp["error"])
    resp.pop("type", None)
    return resp


def restored_problem(meta_state: JSONObject, state: Any) -> str | None:
    """Why a restored stream does not match its backup (None when it does): a stream
    ending before the backed-up last sequence lost its tail (a truncated archive)."""
    want = meta_state.get("last_seq") or 0
    got = getattr(state, "last_seq", 0) or 0
    if got < want:
        return f"the restored stream ends at sequence {got}, the backup at {want} (truncated backup)"
    return None


def scan_data_file(f: BinaryIO, size: int) -> int:
    """Walk the S2 framing of an open ``stream.tar.s2`` of ``size`` bytes, reading only
    frame headers; returns the uncompressed size. ``ValueError`` says what is wrong
    (truncated, not S2, a bad frame)."""
    w = S2Frames()
    pos = 0
    while True:
        k = w.skippable()
        if k:
            k = min(k, size - pos)
            if k <= 0:
                break
            f.seek(k, os.SEEK_CUR)
            w.skip(k)
            pos += k
            continue
        data = f.read(16)
        if not data:
            break
        w.feed(data)
        pos += len(data)
    w.finish()
    f.seek(0)
    return w.uncompressed


# ------------------------------------------------------------------------- S2 framing

_STREAM_IDS = (b"S2sTwO", b"sNaPpY")
_COMPRESSED, _UNCOMPRESSED, _PADDING, _STREAM_ID = 0x00, 0x01, 0xFE, 0xFF
_MAX_FRAME = 1 << 24


class S2Frames:
    """A walker of the S2 (Snappy-compatible) stream framing, fed any split of the
    bytes: frames are a 1-byte type and a 3-byte little-endian length; the stream
    starts with the identifier frame; compressed frames start with a CRC and the
    block's uncompressed length (a varint), uncompressed ones with a CRC. It counts
    the uncompressed bytes (``uncompressed``, ``progress()``) and raises
    ``ValueError`` on what no S2 stream holds; ``finish()`` raises when the stream
    stops inside a frame (truncated). Nothing is decompressed (the server checks the
    CRCs)."""

    __slots__ = ("_hdr", "_head", "_left", "_len", "_raw", "_started", "_type", "_want", "pos", "uncompressed")

    def __init__(self) -> None:
        self.pos = 0  # bytes walked
        self.uncompressed = 0  # uncompressed bytes of the frames walked
        self._hdr = b""  # a frame header still incomplete
        self._type = -1  # type of the frame being walked (-1: between frames)
        self._len = 0
        self._left = 0  # bytes of that frame still to come
        self._raw = 0  # its uncompressed size (0 until known)
        self._head = b""  # its first bytes, while they are still needed
        self._want = 0  # how many first bytes are needed
        self._started = False

    def progress(self) -> int:
        """Uncompressed bytes walked, the frame in progress counted pro rata."""
        if self._type < 0 or not self._raw or not self._len:
            return self.uncompressed
        return self.uncompressed + self._raw * (self._len - self._left) // self._len

    def skippable(self) -> int:
        """How many of the next bytes need no looking at (inside a frame's body)."""
        if self._type < 0 or len(self._head) < self._want:
            return 0
        return self._left

    def skip(self, n: int) -> None:
        """Pass ``n <= skippable()`` bytes without looking at them."""
        self.pos += n
        self._left -= n
        if not self._left:
            self._end_frame()

    def feed(self, data: Any) -> None:
        i = 0
        n = len(data)
        while i < n:
            if self._type < 0:
                need = 4 - len(self._hdr)
                self._hdr += bytes(data[i:i + need])
                took = min(need, n - i)
                i += took
                self.pos += took
                if len(self._hdr) == 4:
                    self._start_frame(self._hdr)
                    self._hdr = b""
                continue
            if len(self._head) < self._want:
                need = self._want - len(self._head)
                piece = bytes(data[i:i + need])
                self._head += piece
                i += len(piece)
                self.pos += len(piece)
                self._left -= len(piece)
                if len(self._head) == self._want:
                    self._read_head()
                if not self._left:
                    self._end_frame()
                continue
            take = min(self._left, n - i)
            i += take
            self.skip(take)

    def finish(self) -> None:
        """The stream ended here: raise ``ValueError`` unless it ended after a whole frame."""
        if not self._started:
            raise ValueError("empty: no S2 stream")
        if self._type >= 0 or self._hdr:
            raise ValueError(f"truncated: the data ends inside a frame at byte {self.pos}")

    def _start_frame(self, hdr: bytes) -> None:
        t = hdr[0]
        length = hdr[1] | hdr[2] << 8 | hdr[3] << 16
        at = self.pos - 4
        if not self._started and t != _STREAM_ID:
            raise ValueError("not an S2 stream (no stream identifier at the start)")
        if 0x02 <= t <= 0x7F:
            raise ValueError(f"corrupt: unknown frame type 0x{t:02x} at byte {at}")
        if t == _STREAM_ID:
            if length != 6:
                raise ValueError(f"corrupt: bad stream identifier at byte {at}")
            want = 6
        elif t == _COMPRESSED:
            if length < 5:
                raise ValueError(f"corrupt: frame of {length} bytes at byte {at}")
            want = min(length, 9)  # CRC and the uncompressed length (a varint of up to 5 bytes)
        elif t == _UNCOMPRESSED:
            if length < 4:
                raise ValueError(f"corrupt: frame of {length} bytes at byte {at}")
            want = 0
            self._raw = length - 4
        else:  # padding and skippable frames (the S2 index)
            want = 0
        self._type = t
        self._len = self._left = length
        self._head = b""
        self._want = want
        if not length:
            self._end_frame()

    def _read_head(self) -> None:
        head = self._head
        if self._type == _STREAM_ID:
            if head not in _STREAM_IDS:
                raise ValueError(f"not an S2 stream (stream identifier {head!r})")
            self._started = True
            return
        # compressed: 4 bytes of CRC, then the varint
        value = shift = 0
        for b in head[4:]:
            value |= (b & 0x7F) << shift
            if b < 0x80:
                if value > _MAX_FRAME:
                    raise ValueError(f"corrupt: a block of {value} bytes at byte {self.pos - len(head)}")
                self._raw = value
                return
            shift += 7
        raise ValueError(f"corrupt: bad block length at byte {self.pos - len(head)}")

    def _end_frame(self) -> None:
        self.uncompressed += self._raw
        self._type = -1
        self._raw = 0
        self._len = 0
        self._want = 0
        self._head = b""
