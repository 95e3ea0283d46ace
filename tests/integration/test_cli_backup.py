"""``jetwire stream backup`` / ``restore`` (also ``--all``) against a real nats-server,
in-process through click's ``CliRunner``: the files, the one-line summaries, the
refusals and their exit status."""
from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

from _cli import run  # tests/integration/_cli.py

import jetwire


def test_backup_and_restore_one_and_all_streams(nats_server_factory: Any, tmp_path: Path) -> None:
    url = nats_server_factory().url  # a private server: --all sees only these streams
    names = ["ORDERS", "EVENTS"]
    with jetwire.connect(url) as nc:
        js = nc.jetstream()
        for i, name in enumerate(names):
            js.create_stream(name=name, subjects=[f"{name}.>"], storage="file")
            for j in range(100 * (i + 1)):
                js.publish_async(f"{name}.x", b"m%d" % j)
            js.publish_async_complete(timeout=10)
        js.create_consumer("ORDERS", durable_name="D")

        one = tmp_path / "one"
        res = run("-s", url, "stream", "backup", "ORDERS", one, "--progress")
        assert res.exit_code == 0, res.output
        assert res.stdout.startswith(f"Backed up stream ORDERS to {one}: ") and "chunks in" in res.stdout
        assert sorted(os.listdir(one)) == ["backup.json", "stream.tar.s2"]

        res = run("-s", url, "stream", "restore", one)
        assert res.exit_code == 1 and res.stdout == ""
        assert "error: " in res.stderr and "exists" in res.stderr and len(res.stderr.splitlines()) == 1

        js.delete_stream("ORDERS")
        res = run("-s", url, "stream", "restore", one)
        assert res.exit_code == 0, res.output
        assert res.stdout.startswith(f"Restored stream ORDERS from {one}: 100 messages, ")
        assert "1 consumer in" in res.stdout
        assert js.stream_info("ORDERS").state.messages == 100

        every = tmp_path / "all"
        res = run("-s", url, "stream", "backup", "--all", every, "--no-progress")
        assert res.exit_code == 0, res.output
        for name in names:
            assert f"Backed up stream {name} to {every / name}: " in res.stdout
            assert sorted(os.listdir(every / name)) == ["backup.json", "stream.tar.s2"]
        assert res.stdout.rstrip().endswith("2 stream backups done")
        for name in names:
            js.delete_stream(name)
        res = run("-s", url, "stream", "restore", "--all", every)
        assert res.exit_code == 0, res.output
        assert res.stdout.rstrip().endswith("2 stream restores done")
        assert [js.stream_info(n).state.messages for n in names] == [100, 200]

        js.delete_stream("EVENTS")
        res = run("-s", url, "stream", "restore", every / "EVENTS", "--name", "EVENTS2")
        assert res.exit_code == 0, res.output
        assert res.stdout.startswith("Restored stream EVENTS2 from")
        assert js.stream_info("EVENTS2").state.messages == 200


def test_bad_usage_and_missing_backups(nats_url: str, tmp_path: Path) -> None:
    res = run("-s", nats_url, "stream", "backup", "--all", "a", "b")
    assert res.exit_code == 2 and "with --all give only DIR" in res.stderr
    res = run("-s", nats_url, "stream", "backup", "ONLYNAME")
    assert res.exit_code == 2 and "give NAME and DIR" in res.stderr
    res = run("-s", nats_url, "stream", "restore", tmp_path, "--all", "--name", "X")
    assert res.exit_code == 2
    res = run("-s", nats_url, "stream", "restore", tmp_path)
    assert res.exit_code == 1 and "backup.json is missing" in res.stderr
    res = run("-s", nats_url, "stream", "restore", "--all", tmp_path)
    assert res.exit_code == 1 and "no backups" in res.stderr
    res = run("-s", nats_url, "stream", "backup", f"NOPE{uuid.uuid4().hex[:6]}", tmp_path / "x")
    assert res.exit_code == 1 and "stream not found" in res.stderr
    # --timeout takes a duration, as every other --timeout of the command
    res = run("-s", nats_url, "stream", "backup", "--timeout", "5s", f"NOPE{uuid.uuid4().hex[:6]}", tmp_path / "y")
    assert res.exit_code == 1 and "stream not found" in res.stderr
    res = run("-s", nats_url, "stream", "restore", "--timeout", "soon", tmp_path)
    assert res.exit_code == 2 and "soon" in res.stderr
