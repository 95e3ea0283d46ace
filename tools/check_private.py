#!/usr/bin/env python3
"""No module reaches into another module's private names.

Lists every attribute access ``obj._name`` (``obj`` not ``self``, ``cls`` or ``super()``;
dunders apart) in the hand-written sources of the package where ``_name`` is not
defined in the same file (as a function, class, assigned attribute or name, or an
import): a reach into another module's privates. Generated and compiled twins are
skipped. The few accesses that remain on purpose are in :data:`ALLOWED`, each with its
reason; anything else fails (``tests/unit/test_private_access.py`` runs this in CI).

    python tools/check_private.py [SRC_DIR]   # default: src/jetwire; exit 1 on a new one
    python tools/check_private.py --list      # every access, allowed ones too
"""
from __future__ import annotations

import ast
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIP = re.compile(r"/(_sync|_c)/|interface_sync\.py$|rows_sync\.py$|workers_sync\.py$")

# (file relative to the package's parent, attribute): why it stays (none now)
ALLOWED: dict[tuple[str, str], str] = {}


def _defined(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(n.name)
        elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store):
            names.add(n.attr)
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            names.add(n.id)
        elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
            names.add(n.target.id)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                names.add((a.asname or a.name).split(".")[0])
    return names


def reach_ins(src: Path) -> list[tuple[str, int, str]]:
    """Every ``(file, line, attribute)`` reaching into another module's private name."""
    hits: list[tuple[str, int, str]] = []
    base = src.resolve().parent
    for dp, _, fs in os.walk(src):
        for f in sorted(fs):
            p = os.path.join(dp, f)
            if not f.endswith(".py") or SKIP.search(p.replace(os.sep, "/")):
                continue
            tree = ast.parse(Path(p).read_text(encoding="utf-8"), p)
            defined = _defined(tree)
            rel = Path(p).resolve().relative_to(base).as_posix()
            for n in ast.walk(tree):
                if not isinstance(n, ast.Attribute) or not n.attr.startswith("_") or n.attr.startswith("__"):
                    continue
                v = n.value
                if isinstance(v, ast.Name) and v.id in ("self", "cls"):
                    continue
                if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "super":
                    continue
                if n.attr in defined:
                    continue
                hits.append((rel, n.lineno, n.attr))
    return sorted(hits)


def new_reach_ins(src: Path) -> list[tuple[str, int, str]]:
    """The reach-ins that the allow-list does not name."""
    return [h for h in reach_ins(src) if (h[0], h[2]) not in ALLOWED]


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    src = Path(args[0]) if args else ROOT / "src" / "jetwire"
    if "--list" in argv:
        for rel, line, attr in reach_ins(src):
            print(f"{rel}:{line}: .{attr}" + ("  (allowed)" if (rel, attr) in ALLOWED else ""))
    bad = new_reach_ins(src)
    for rel, line, attr in bad:
        print(f"{rel}:{line}: .{attr} is another module's private name", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
