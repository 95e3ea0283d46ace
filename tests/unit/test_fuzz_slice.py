"""A short slice of the long parser fuzz run (tools/fuzz_parser.py, docs/fuzzing.md): the
compiled parser and its pure twin agree on 5000 seeded random cases. The documented
long run is the same command with ``--iterations 1000000``."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[2] / "tools" / "fuzz_parser.py"


@pytest.mark.compiled_only
def test_fuzz_slice_compiled_vs_pure(tmp_path):
    r = subprocess.run([sys.executable, "-X", "faulthandler", str(TOOL), "--iterations", "5000", "--seed", "16",
                        "--seconds", "300", "--out", str(tmp_path / "finding.txt")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "done: 5000 cases, no findings" in r.stdout
