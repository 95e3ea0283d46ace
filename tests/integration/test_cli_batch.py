"""``jetwire stream publish`` against a real nats-server: one message with its ack, and
``--batch FILE`` (JSON lines) as one atomic batch: all stored in order, or, when the
server refuses it (a broken expectation, a stream without allow_atomic), nothing and a
one-line error naming the batch."""
from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path
from typing import Any

from _cli import run  # tests/integration/_cli.py

import jetwire


def uid(prefix: str = "T") -> str:
    return f"{prefix}{uuid.uuid4().hex[:10].upper()}"




def stderr_of(res: Any) -> str:
    try:
        return res.stderr
    except ValueError:
        return ""


def write_lines(path: Path, items: list) -> Path:
    path.write_text("\n".join(json.dumps(i) for i in items) + "\n\n")
    return path


def test_stream_publish_one_message(nats_url: str) -> None:
    name = uid("CLIPUB")
    with jetwire.connect(nats_url) as nc:
        js = nc.jetstream()
        js.create_stream(name=name, subjects=[f"{name}.>"], storage="memory")
        try:
            res = run("stream", "publish", f"{name}.a", "hello", "-H", "K:v", "--msg-id", "m1", "--json",
                      "-s", nats_url)
            assert res.exit_code == 0, (res.output, stderr_of(res))
            ack = json.loads(res.stdout)
            assert (ack["stream"], ack["seq"], ack.get("duplicate", False)) == (name, 1, False)
            res = run("stream", "publish", f"{name}.a", "hello", "--msg-id", "m1", "-s", nats_url)
            assert res.exit_code == 0 and "duplicate" in res.stdout
            m = js.stream(name).get_msg(1)
            assert (m.data, m.headers["K"], m.headers["Nats-Msg-Id"]) == (b"hello", "v", "m1")
            res = run("stream", "publish", "-s", nats_url)
            assert res.exit_code == 2
        finally:
            js.delete_stream(name)


def test_stream_publish_batch(nats_url: str, tmp_path: Path) -> None:
    name = uid("CLIBATCH")
    with jetwire.connect(nats_url) as nc:
        js = nc.jetstream()
        s = js.create_stream(name=name, subjects=[f"{name}.>"], storage="memory", allow_atomic=True)
        try:
            items = [
                {"subject": f"{name}.a", "data": "one", "headers": {"K": "v"}},
                {"subject": f"{name}.b", "data_b64": base64.b64encode(b"\x00\xfftwo").decode()},
                {"subject": f"{name}.c", "data": "three", "msg_id": "m3"},
                {"subject": f"{name}.d", "data": "four", "headers": {"L": ["1", "2"]}},
            ]
            res = run("stream", "publish", "--batch", write_lines(tmp_path / "ok.jsonl", items), "--json",
                      "-s", nats_url)
            assert res.exit_code == 0, (res.output, stderr_of(res))
            ack = json.loads(res.stdout)
            assert (ack["stream"], ack["first_seq"], ack["seq"], ack["count"]) == (name, 1, 4, 4)
            got = [s.get_msg(i) for i in range(1, 5)]
            assert [m.data for m in got] == [b"one", b"\x00\xfftwo", b"three", b"four"]
            assert got[0].headers["K"] == "v" and got[2].headers["Nats-Msg-Id"] == "m3"
            assert got[3].headers.get_all("L") == ["1", "2"]
            assert all(m.headers["Nats-Batch-Id"] == ack["batch_id"] for m in got)
            # standard input, text output
            res = run("stream", "publish", "--batch", "-", "-s", nats_url,
                      input="\n".join(json.dumps({"subject": f"{name}.e", "data": str(i)}) for i in range(3)))
            assert res.exit_code == 0, (res.output, stderr_of(res))
            assert "3 messages" in res.stdout and "sequences 5-7" in res.stdout
            # a broken expectation in the middle: nothing stored, one line naming the batch and why
            bad = [
                {"subject": f"{name}.x", "data": "1"},
                {"subject": f"{name}.y", "data": "2", "expected_last_subject_seq": 99},
                {"subject": f"{name}.z", "data": "3"},
            ]
            res = run("stream", "publish", "--batch", write_lines(tmp_path / "bad.jsonl", bad), "-s", nats_url)
            assert res.exit_code == 1
            err = stderr_of(res) or res.output
            assert "atomic batch" in err and "nothing stored" in err and "wrong last sequence" in err
            assert len(err.strip().splitlines()) == 1
            assert s.info().state.messages == 7
            # bad files: nothing sent
            for content, why in (("not json\n", "not a JSON object"), ('{"data": "x"}\n', "subject is required"),
                                 (json.dumps({"subject": f"{name}.a", "nope": 1}), "unknown field"), ("", "no messages")):
                f = tmp_path / "broken.jsonl"
                f.write_text(content)
                res = run("stream", "publish", "--batch", f, "-s", nats_url)
                assert res.exit_code == 1 and why in (stderr_of(res) or res.output), (content, res.output)
            res = run("stream", "publish", f"{name}.a", "--batch", tmp_path / "ok.jsonl", "-s", nats_url)
            assert res.exit_code == 2
            assert s.info().state.messages == 7
        finally:
            js.delete_stream(name)


def test_stream_publish_batch_needs_allow_atomic(nats_url: str, tmp_path: Path) -> None:
    name = uid("CLINOBATCH")
    with jetwire.connect(nats_url) as nc:
        js = nc.jetstream()
        s = js.create_stream(name=name, subjects=[f"{name}.>"], storage="memory")
        try:
            f = write_lines(tmp_path / "b.jsonl", [{"subject": f"{name}.a", "data": str(i)} for i in range(3)])
            res = run("stream", "publish", "--batch", f, "-s", nats_url)
            assert res.exit_code == 1
            assert "atomic publish is disabled" in (stderr_of(res) or res.output)
            assert s.info().state.messages == 0
        finally:
            js.delete_stream(name)
