"""No import circle between the package's modules (tools/check_imports.py)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("check_imports", ROOT / "tools" / "check_imports.py")
assert _spec is not None and _spec.loader is not None
check_imports = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_imports)


def test_the_package_has_no_import_circle():
    top, local = check_imports.graph(check_imports._modules())
    assert check_imports.circles({m: top[m] | local[m] for m in top}) == []
    # the graph is real: the client imports the sans-IO core at module level
    assert "jetwire.connection.core" in top["jetwire.aio.client"]


def test_a_circle_is_found():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert check_imports.circles(edges) == [["a", "b", "c"]]


def test_imports_inside_functions_and_type_checking_are_not_edges(tmp_path):
    src = (
        "from typing import TYPE_CHECKING\n"
        "from . import b\n"
        "if TYPE_CHECKING:\n    from . import c\n"
        "def f():\n    from . import d\n"
    )
    mods = {"p.a": tmp_path / "a.py", "p.b": tmp_path / "b.py", "p.c": tmp_path / "c.py", "p.d": tmp_path / "d.py"}
    for name, p in mods.items():
        p.write_text(src if name == "p.a" else "")
    top, local = check_imports.graph(mods)
    assert top["p.a"] == {"p.b"}
    assert local["p.a"] == {"p.d"}
