"""The blocking flavour's generator (tools/gen_sync.py): its line and block markers."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("gen_sync", ROOT / "tools" / "gen_sync.py")
assert _spec is not None and _spec.loader is not None
gen_sync = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen_sync)


def body(text: str) -> str:
    return gen_sync.convert(text, "x.py").split("\n", 1)[1]


def test_line_markers_and_async_words():
    src = (
        "import asyncio  # aio-only\n"
        "# sync-only: import threading\n"
        "async def f():\n"
        "    await g()\n"
    )
    assert body(src) == "import threading\ndef f():\n    g()\n"


def test_blocks():
    src = (
        "class A:\n"
        "    # aio-only: begin\n"
        "    def adopt(self, task):\n"
        "\n"
        "        task.add_done_callback(print)\n"
        "    # aio-only: end\n"
        "    # sync-only: begin\n"
        "    # def submit(self, msg):\n"
        "    #     self.q.put(msg)\n"
        "    # sync-only: end\n"
        "    x = 1\n"
    )
    assert body(src) == "class A:\n    def submit(self, msg):\n        self.q.put(msg)\n    x = 1\n"


@pytest.mark.parametrize("src", [
    "# aio-only: begin\nx = 1\n",  # never ended
    "x = 1\n# aio-only: end\n",  # ended, never begun
    "# aio-only: begin\n# sync-only: end\n",  # mismatched kinds
    "# sync-only: begin\nx = 1\n# sync-only: end\n",  # not commented
])
def test_unmatched_or_malformed_blocks_fail(src):
    with pytest.raises(SystemExit, match="x.py"):
        gen_sync.convert(src, "x.py")
