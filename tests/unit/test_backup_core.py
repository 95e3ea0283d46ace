"""The sans-IO parts of stream backup and restore: the S2 framing walker, chunk
bookkeeping, backup.json and the restore request."""
from __future__ import annotations

import io
import os

import pytest

import jetwire
from jetwire.jetstream.backup_core import (
    S2Frames,
    SnapshotChunks,
    backup_json,
    parse_ack_reply,
    read_backup_json,
    restore_request,
    scan_data_file,
)

HEAD = b"\xff\x06\x00\x00S2sTwO"


def s2_stream() -> bytes:
    body = os.urandom(3000)
    raw = bytes([1]) + (len(body) + 4).to_bytes(3, "little") + b"CRC!" + body
    # a compressed frame announcing 2000 bytes (varint 0xD0 0x0F)
    comp = bytes([0]) + (4 + 2 + 10).to_bytes(3, "little") + b"CRC!" + bytes([0xD0, 0x0F]) + b"0123456789"
    index = b"\x99\x02\x00\x00ix"  # a skippable frame (the S2 index)
    return HEAD + raw + comp + index


def test_s2_walker_counts_and_checks_any_split():
    stream = s2_stream()
    for split in (1, 3, 7, 4096):
        w = S2Frames()
        for i in range(0, len(stream), split):
            w.feed(stream[i:i + split])
        w.finish()
        assert w.uncompressed == 3000 + 2000 and w.pos == len(stream)
    w = S2Frames()
    w.feed(stream[:-1])
    with pytest.raises(ValueError, match="truncated"):
        w.finish()
    with pytest.raises(ValueError, match="unknown frame type"):
        S2Frames().feed(b"\xff\x06\x00\x00S2sTwO\x05\x00\x00\x00")


def test_s2_walker_progress_is_pro_rata_and_errors_name_the_problem():
    stream = s2_stream()
    w = S2Frames()
    w.feed(stream[:10 + 4 + 1504])  # half of the 3004-byte body of the raw frame
    assert w.uncompressed == 0 and 1490 < w.progress() < 1510
    for bad, problem in [(b"", "empty"), (b"\x00\x05\x00\x00abcde", "not an S2 stream"),
                         (b"\xff\x06\x00\x00sNaPpX", "not an S2 stream"),
                         (b"\xff\x07\x00\x00S2sTwO!", "bad stream identifier"),
                         (HEAD + b"\x00\x09\x00\x00CRC!\xff\xff\xff\xff\xff", "bad block length"),
                         (HEAD + b"\x00\x02\x00\x00ab", "frame of 2 bytes")]:
        with pytest.raises(ValueError, match=problem):
            w = S2Frames()
            w.feed(bad)
            w.finish()


def test_scan_data_file_reads_headers_only():
    stream = s2_stream()
    assert scan_data_file(io.BytesIO(stream), len(stream)) == 5000
    cut = stream[:-3]
    with pytest.raises(ValueError, match="truncated"):
        scan_data_file(io.BytesIO(cut), len(cut))


def test_snapshot_chunks_find_missing_short_and_failed_chunks():
    frames = s2_stream()
    book = SnapshotChunks("S")
    book.chunk(frames[:1000], "$JS.SNAPSHOT.ACK.S.abc.1000.1")
    book.chunk(frames[1000:], None)  # the last chunk has no ack subject
    book.end("204", "")
    assert (book.chunks, book.bytes, book.uncompressed) == (2, len(frames), 5000)
    book = SnapshotChunks("S")
    book.chunk(frames[:10], "$JS.SNAPSHOT.ACK.S.abc.10.1")
    with pytest.raises(jetwire.JetStreamError, match="chunk 2 is missing"):
        book.chunk(frames[10:20], "$JS.SNAPSHOT.ACK.S.abc.10.3")
    with pytest.raises(jetwire.JetStreamError, match="10 announced"):
        SnapshotChunks("S").chunk(frames[:9], "$JS.SNAPSHOT.ACK.S.abc.10.1")
    with pytest.raises(jetwire.JetStreamError, match="failed: 408 No Flow Response"):
        SnapshotChunks("S").end("408", "No Flow Response")
    book = SnapshotChunks("S")
    book.chunk(frames[:20], None)
    with pytest.raises(jetwire.JetStreamError, match="incomplete: truncated"):
        book.end("204", "")
    assert parse_ack_reply("$JS.SNAPSHOT.ACK.S.x.131072.17") == (131072, 17)
    assert parse_ack_reply("other") == (-1, -1)


def test_backup_json_and_restore_request():
    resp = {"type": "io.nats.jetstream.api.v1.stream_snapshot_response",
            "config": {"name": "S", "subjects": ["s.>"], "new_field": 1}, "state": {"messages": 3, "last_seq": 3}}
    data = backup_json(resp)
    assert data.startswith(b"{\n  ")
    meta = read_backup_json(data, "b/backup.json")
    assert meta == {"config": resp["config"], "state": resp["state"]}
    assert restore_request(meta, None) == ("S", meta)
    name, req = restore_request(meta, "T")
    assert name == "T" and req["config"]["name"] == "T" and req["config"]["new_field"] == 1
    assert meta["config"]["name"] == "S"
    with pytest.raises(jetwire.InvalidStreamNameError):
        restore_request(meta, "a b")
    with pytest.raises(jetwire.JetStreamError, match="b/backup.json is not valid JSON"):
        read_backup_json(b"{", "b/backup.json")
    with pytest.raises(jetwire.JetStreamError, match="not a stream backup"):
        read_backup_json(b'{"config": {}}', "b/backup.json")
