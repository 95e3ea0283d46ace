"""No module of the package reaches into another module's private names (tools/check_private.py)."""
from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("check_private", ROOT / "tools" / "check_private.py")
assert _spec is not None and _spec.loader is not None
check_private = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_private)


def test_no_new_private_reach_ins():
    bad = check_private.new_reach_ins(ROOT / "src" / "jetwire")
    assert bad == [], "another module's private name used (fix it, or allow it in tools/check_private.py): " + \
        ", ".join(f"{f}:{line} .{attr}" for f, line, attr in bad)


def test_jetstream_layer_has_none():
    """The JetStream context's modules and the handles it makes use the internal API
    object (``js.api``) openly: no reach-in at all, allowed or not."""
    hits = [h for h in check_private.reach_ins(ROOT / "src" / "jetwire") if h[0].startswith("jetwire/aio/")]
    assert [(f, attr) for f, _, attr in hits] == []


def test_allow_list_is_not_stale():
    """Every allowed access still exists (a fixed one leaves the list)."""
    found = {(f, attr) for f, _, attr in check_private.reach_ins(ROOT / "src" / "jetwire")}
    assert set(check_private.ALLOWED) <= found


def test_the_check_finds_a_reach_in(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "a.py").write_text(textwrap.dedent("""
        class A:
            def __init__(self):
                self._mine = 1

            def f(self, other):
                return self._mine + other._theirs + other._mine
    """))
    assert check_private.reach_ins(pkg) == [("pkg/a.py", 7, "_theirs")]
    assert check_private.new_reach_ins(pkg) == [("pkg/a.py", 7, "_theirs")]
