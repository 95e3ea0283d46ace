"""Collect the ```python blocks of README.md, PYPI.md (the package's long description) and docs/**/*.md (used by test_snippets.py).

The rule, also told to writers in docs/contributing-docs.md:

* every fenced ``python`` block (also one indented inside a ``=== "tab"``) is a complete
  program and runs on its own: a fresh namespace (``__name__ == "__main__"``), a fresh
  temporary working directory and a fresh embedded nats-server (JetStream and a
  WebSocket listener on), so no two blocks share streams, buckets or files;
* in the block, ``nats://127.0.0.1:4222`` is replaced by that server's URL and
  ``ws://127.0.0.1:8080`` by its WebSocket URL;
* ``<!-- server: {JSON} -->`` on the line(s) just before a block passes keyword
  arguments to :class:`jetwire.testing.NatsServer` (e.g. an ``auth`` block);
* ``<!-- pytest -->`` just before a block runs it as a pytest test file instead (it
  defines ``test_*`` functions using the ``nats_url``/``nats_server_factory``/...
  fixtures of ``jetwire[testing]``); every test in it must pass;
* ``<!-- no-run: why -->`` just before a block skips it (collected, not run), and
  ``<!-- no-run-page: why -->`` anywhere in a page skips all of its blocks: only for what
  the test machine cannot do (Spark needs Java, a remote service, TLS files);
  the reason is required.
"""
from __future__ import annotations

import json
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
URL = "nats://127.0.0.1:4222"
WS_URL = "ws://127.0.0.1:8080"

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<ticks>`{3,})(?P<info>[^`\n]*)$")
_SERVER = re.compile(r"^\s*<!--\s*server:\s*(?P<json>.*?)\s*-->\s*$")
_NO_RUN = re.compile(r"^\s*<!--\s*no-run:\s*(?P<why>\S.*?)\s*-->\s*$")
_PYTEST = re.compile(r"^\s*<!--\s*pytest\s*-->\s*$")
_NO_RUN_PAGE = re.compile(r"<!--\s*no-run-page:\s*(?P<why>\S.*?)\s*-->")


@dataclass
class Snippet:
    path: Path
    line: int  # 1-based line of the opening fence
    code: str
    server: dict[str, Any] = field(default_factory=dict)
    no_run: str | None = None
    pytest: bool = False

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT).as_posix()}:{self.line}"


def pages() -> list[Path]:
    return [ROOT / "README.md", ROOT / "PYPI.md", *sorted((ROOT / "docs").rglob("*.md"))]


def parse(path: Path) -> list[Snippet]:
    """The python blocks of one markdown file, with their markers."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    page_m = _NO_RUN_PAGE.search(text)
    page_no_run = page_m.group("why") if page_m else None
    out: list[Snippet] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, ticks, info = m.group("indent"), m.group("ticks"), m.group("info").strip()
        start = i
        i += 1
        body: list[str] = []
        while i < len(lines):
            close = lines[i]
            if close.strip() == ticks and close.startswith(indent):
                break
            body.append(close)
            i += 1
        i += 1
        lang = info.split()[0] if info else ""
        if lang not in ("python", "py"):
            continue
        server: dict[str, Any] = {}
        no_run = page_no_run
        as_pytest = False
        j = start - 1
        while j >= 0 and lines[j].strip():  # the comment lines right above the fence
            sm = _SERVER.match(lines[j])
            nm = _NO_RUN.match(lines[j])
            if sm:
                server = json.loads(sm.group("json"))
            elif _PYTEST.match(lines[j]):
                as_pytest = True
            elif nm:
                no_run = nm.group("why")
            elif not lines[j].strip().startswith("<!--"):
                break
            j -= 1
        if "no-run" in info.split():
            no_run = no_run or "marked no-run"
        code = textwrap.dedent("\n".join(body)) + "\n"
        out.append(Snippet(path, start + 1, code, server, no_run, as_pytest))
    return out


def collect() -> list[Snippet]:
    return [s for p in pages() for s in parse(p)]
