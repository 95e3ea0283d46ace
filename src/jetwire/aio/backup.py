"""Stream backup and restore (asyncio source; ``jetwire/_sync/backup.py`` is generated
from it): ``js.snapshot_stream()`` and ``js.restore_stream()``.

Snapshot: the chunks arrive on a private inbox whose *direct* handler (on the reader)
appends them to a deque and wakes the caller, who writes them (all that are queued at
once) to ``stream.tar.s2.partial``. The handler also answers a chunk's flow-control
reply on arrival while less than 8 MiB waits to be written, so the server keeps
sending while the caller writes; past that, the caller answers each chunk once it is
written. As the server never has more than its window (8 MiB by default) unanswered,
the deque never holds more than about 16 MiB, however large the stream and however
slow the disk. The files get their final names once the end marker came and every
chunk was accounted for; on any failure the partial file is removed (a previous
backup in the same directory stays as it was).

Restore: the file is read and sent one chunk at a time, each one waiting for the
server's answer on a private inbox (a lost connection or a silent server ends the wait
at once or after the context's timeout). When a restore fails after the server started
it, jetwire ends the upload and deletes the partial stream the server may have made; if
the server cannot be reached for that, a background job retries for a minute.

The sans-IO parts (request models, ``backup.json``, chunk bookkeeping, the S2 framing
walker) are in :mod:`jetwire.jetstream.backup_core`.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import (
    APIError,
    JetStreamError,
    StreamNameInUseError,
    StreamNotFoundError,
)
from ..jetstream.backup_core import (
    PARTIAL_SUFFIX,
    RESTORE_CHUNK_SIZE,
    SnapshotChunks,
    SnapshotResult,
    backup_json,
    backup_paths,
    check_chunk_size,
    chunk_answer_error,
    final_answer,
    read_backup_json,
    restore_request,
    restored_problem,
    scan_data_file,
    snapshot_request,
)
from ..jetstream.models import StreamInfo
from ..jetstream.validate import validate_stream_name
from ..msg import Msg
from . import _prims as prims
from .inbox import Inbox
from .jsapi import ContextBase
from .stream import stream_info_of

if TYPE_CHECKING:
    from ..connection import interface as _api

Progress = Callable[[int, int | None], object] | None

# how long a failed restore's partial stream is retried for deletion in the background
_CLEANUP_WINDOW = 60.0
# the last answer of a restore comes once the server has stored everything
_FINAL_WAIT_MIN = 60.0
_CLEANUPS = "jetstream.restore_cleanups"
# a snapshot's chunks are answered on arrival while less than this waits to be written
_EARLY_ACK = 8 * 1024 * 1024


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


class _Chunks(Inbox):
    """A snapshot's chunks, queued as ``(msg, reply still to answer)``. The reader
    answers a chunk's flow-control reply at once while less than ``_EARLY_ACK`` bytes
    wait to be written, so the server keeps sending while the caller writes; past that
    the caller answers once the chunk is written. At most ``_EARLY_ACK`` plus the
    server's window (8 MiB by default) is ever queued, however slow the disk."""

    __slots__ = ("received", "written")

    def __init__(self, link: _api.Link) -> None:
        self.received = 0  # bytes queued: changed by the reader only
        self.written = 0  # bytes written: changed by the caller only
        super().__init__(link)

    def _on_msg(self, msg: Msg) -> None:  # from the reader: never blocks
        reply = msg.reply
        if reply and self.received - self.written < _EARLY_ACK and self._link.try_publish(reply, None, b""):
            reply = None
        self.received += len(msg.data)
        self.q.append((msg, reply))
        self.signal.set()


# ------------------------------------------------------------------------- snapshot


async def snapshot_stream(js: ContextBase, name: str, dest: str | os.PathLike[str], chunk_size: int, check_msgs: bool,
                          progress: Progress) -> SnapshotResult:
    validate_stream_name(name)
    check_chunk_size(chunk_size)
    link = js.api.link
    timeout = js.api.timeout
    meta_path, data_path = backup_paths(dest)
    data_part = data_path + PARTIAL_SUFFIX
    meta_part = meta_path + PARTIAL_SUFFIX
    made = _missing_dirs(dest)  # made here: removed again when the snapshot fails
    os.makedirs(dest, exist_ok=True)
    f = open(data_part, "wb")  # noqa: SIM115 - closed below, on every path
    inbox: _Chunks | None = None
    start = prims.monotonic()
    try:
        inbox = _Chunks(link)
        resp = await js.api_request(f"STREAM.SNAPSHOT.{name}", snapshot_request(inbox.subject, chunk_size, check_msgs),
                                    timeout if not check_msgs else max(timeout, _FINAL_WAIT_MIN))
        total = (resp.get("state") or {}).get("bytes")
        book = SnapshotChunks(name)
        if progress is not None:
            await prims.call(progress, 0, total)
        what = f"snapshot of {name}"
        publish = link.publish_raw
        q = inbox.q
        end: Msg | None = None
        while end is None:
            await inbox.wait(timeout, what)
            batch: list[Any] = []
            replies: list[Any] = []
            size = 0
            while q:
                msg, reply = q.popleft()
                data = msg.data
                if not data:
                    end = msg
                    break
                book.chunk(data, msg.reply)
                batch.append(data)
                size += len(data)
                if reply:
                    replies.append(reply)
            if batch:
                f.writelines(batch)  # to the page cache: quick (a thread hop costs more)
                inbox.written += size
                for reply in replies:  # room for more chunks, now that these are written
                    publish(reply, None, None, b"")
                if progress is not None:
                    await prims.call(progress, book.frames.progress(), total)
        h = end.headers
        book.end(h.status if h is not None else None, (h.description or "") if h is not None else "")
        f.close()
        with open(meta_part, "wb") as mf:
            mf.write(backup_json(resp))
        os.replace(data_part, data_path)
        os.replace(meta_part, meta_path)
        return SnapshotResult(bytes=book.bytes, chunks=book.chunks, duration=prims.monotonic() - start)
    except BaseException:
        f.close()
        _remove(data_part)
        _remove(meta_part)
        for d in made:  # deepest first; a folder someone filled meanwhile stays
            try:
                os.rmdir(d)
            except OSError:
                break
        raise
    finally:
        if inbox is not None:
            inbox.close()  # the server sees no interest and stops


def _missing_dirs(dest: str | os.PathLike[str]) -> list[str]:
    """The folders of ``dest`` that do not exist yet, deepest first."""
    out = []
    d = os.path.abspath(dest)
    while not os.path.isdir(d):
        out.append(d)
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return out


# ------------------------------------------------------------------------- restore


async def restore_stream(js: ContextBase, src: str | os.PathLike[str], name: str | None, progress: Progress) -> StreamInfo:
    if name is not None:
        validate_stream_name(name)
    link = js.api.link
    timeout = js.api.timeout
    meta_path, data_path = backup_paths(src)
    try:
        with open(meta_path, "rb") as mf:
            meta = read_backup_json(mf.read(), meta_path)
    except FileNotFoundError:
        raise JetStreamError(f"{meta_path} is missing: not a stream backup") from None
    stream, req = restore_request(meta, name)
    try:
        f = open(data_path, "rb")  # noqa: SIM115 - closed below, on every path
    except FileNotFoundError:
        raise JetStreamError(f"{data_path} is missing") from None
    try:
        size = os.fstat(f.fileno()).st_size
        try:
            scan_data_file(f, size)
        except ValueError as exc:
            raise JetStreamError(f"{data_path} cannot be restored: {exc}") from None
        await _wait_cleanup(link, stream, timeout)
        try:
            await js.api_request(f"STREAM.INFO.{stream}")
        except StreamNotFoundError:
            pass
        else:
            raise StreamNameInUseError(code=400, err_code=10130,
                                       description=f"stream {stream} exists: restore refused")
        await _check_subjects(js, stream, req["config"])
        resp = await js.api_request(f"STREAM.RESTORE.{stream}", req)
        deliver = resp.get("deliver_subject")
        if not deliver:
            raise JetStreamError(f"bad answer to the restore request: {resp!r}")
        return await _upload(js, f, size, deliver, stream, meta, data_path, progress, timeout)
    finally:
        f.close()


async def _check_subjects(js: ContextBase, stream: str, config: Any) -> None:
    """The server checks subject overlaps only once all data is in: check first."""
    for subject in config.get("subjects") or ():
        resp = await js.api_request("STREAM.NAMES", {"subject": subject})
        others = [n for n in resp.get("streams") or () if n != stream]
        if others:
            raise APIError(code=400, err_code=10065,
                           description=f"subjects overlap with an existing stream: {subject!r} is in {others[0]}")


async def _send(link: _api.Link, answers: Inbox, subject: str, data: bytes, timeout: float, what: str) -> Msg:
    """One restore chunk, and the server's answer to it."""
    link.publish_request(subject, answers.subject, data)
    msg = await answers.take(timeout, what)
    h = msg.headers
    if h is not None and h.status:
        if h.status == "503":
            raise JetStreamError(f"{what}: the server is no longer taking the upload (it stalled or failed)")
        raise JetStreamError(f"{what}: the server answered {h.status} {h.description or ''}".rstrip())
    return msg


async def _upload(js: ContextBase, f: Any, size: int, deliver: str, stream: str, meta: Any, data_path: str,
                  progress: Progress, timeout: float) -> StreamInfo:
    link = js.api.link
    answers = Inbox(link)
    what = f"restore of {stream}"
    ended = False
    try:
        done = 0
        if progress is not None:
            await prims.call(progress, 0, size)
        read = f.read
        chunk_size = min(RESTORE_CHUNK_SIZE, link.max_payload)
        while True:
            chunk = read(chunk_size)
            if not chunk:
                break
            msg = await _send(link, answers, deliver, chunk, timeout, what)
            err = chunk_answer_error(msg.data)
            if err is not None:
                ended = True  # the server stopped the restore
                raise err
            done += len(chunk)
            if progress is not None:
                await prims.call(progress, done, size)
        ended = True
        msg = await _send(link, answers, deliver, b"", max(timeout * 10, _FINAL_WAIT_MIN), what)
        info = stream_info_of(final_answer(msg.data))
        problem = restored_problem(meta.get("state") or {}, info.state)
        if problem is not None:
            raise JetStreamError(f"{data_path}: {problem}")
        return info
    except APIError as exc:
        await _clean(js, answers, deliver, stream, ended, timeout)
        if type(exc) is APIError:  # the server's "restore failed: ...": name the file
            hint = ""
            if stream != meta["config"].get("name") and "names do not match" in exc.description:
                hint = " (this server cannot restore this backup under another name)"
            raise JetStreamError(f"could not restore {stream} from {data_path}: {exc.description}{hint}") from exc
        raise
    except Exception:
        await _clean(js, answers, deliver, stream, ended, timeout)
        raise
    except BaseException:  # cancelled or interrupted: clean up in the background
        _clean_later(js, stream)
        raise
    finally:
        answers.close()


async def _clean(js: ContextBase, answers: Inbox, deliver: str, stream: str, ended: bool, timeout: float) -> None:
    """End the upload so the server stops waiting for more, then delete the partial
    stream it made; the deletion is retried in the background when the server cannot be
    reached now."""
    link = js.api.link
    if not ended and link.is_connected:
        try:
            link.publish_raw(deliver, answers.subject, None, b"")  # its answer (an error) is not awaited
        except Exception:
            pass
    if link.is_connected and answers.lost is None:
        try:
            await js.api_request(f"STREAM.DELETE.{stream}", timeout=timeout)
            return
        except StreamNotFoundError:
            return
        except Exception:
            pass
    _clean_later(js, stream)


def _clean_later(js: ContextBase, stream: str) -> None:
    link = js.api.link
    if link.is_closed:
        return
    pending: dict[str, Any] = link.shared(_CLEANUPS, dict)
    if stream in pending:
        return
    done = prims.Signal()
    pending[stream] = done
    link.spawn(_delete_partial, js, stream, done)


async def _delete_partial(js: ContextBase, stream: str, done: Any) -> None:
    """Background: delete the partial stream of a failed restore once the server
    answers (it may be restarting); gives up after a minute, reporting to error_cb."""
    link = js.api.link
    deadline = prims.monotonic() + _CLEANUP_WINDOW
    try:
        while not link.is_closed:
            try:
                await js.api_request(f"STREAM.DELETE.{stream}", timeout=min(js.api.timeout, 5.0))
                return
            except StreamNotFoundError:
                return
            except Exception as exc:
                if prims.monotonic() >= deadline:
                    link.report_error(JetStreamError(
                        f"could not delete the partial stream {stream} left by a failed restore: {exc}"))
                    return
            await prims.sleep(0.25)
    finally:
        cleanups: dict[str, Any] = link.shared(_CLEANUPS, dict)
        cleanups.pop(stream, None)
        done.set()


async def _wait_cleanup(link: _api.Link, stream: str, timeout: float) -> None:
    """Let a background cleanup of an earlier failed restore of ``stream`` finish first."""
    pending: dict[str, Any] = link.shared(_CLEANUPS, dict)
    done = pending.get(stream)
    if done is not None:
        await done.wait(timeout)
