#!/usr/bin/env python3
"""No import circle between the package's modules.

Builds the graph of the imports in ``src/jetwire`` -- module-level ones and those inside
functions (a late import that closes a circle still ties the two modules together; it
only hides the circle from Python) -- and fails when a strongly connected component has
more than one module. Imports under ``if TYPE_CHECKING:`` never run and are left out, and
so is the edge from a submodule to its own package, which Python is importing already.

    python tools/check_imports.py            # exit 1 and the circles, if any
    python tools/check_imports.py --local    # also list the imports inside functions
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"


def _modules() -> dict[str, Path]:
    mods = {}
    for p in sorted((SRC / "jetwire").rglob("*.py")):
        name = ".".join(p.relative_to(SRC).with_suffix("").parts)
        mods[name.removesuffix(".__init__")] = p
    return mods


def _target(mod: str, is_pkg: bool, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    parts = mod.split(".") if is_pkg else mod.split(".")[:-1]
    parts = parts[: len(parts) - (level - 1)]
    return ".".join(parts + ([name] if name else []))


def graph(mods: dict[str, Path]) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    top: dict[str, set[str]] = {m: set() for m in mods}
    local: dict[str, set[str]] = {m: set() for m in mods}

    def visit(m: str, is_pkg: bool, node: ast.AST, in_def: bool) -> None:
        for ch in ast.iter_child_nodes(node):
            if isinstance(ch, ast.If) and "TYPE_CHECKING" in ast.unparse(ch.test):
                continue
            if isinstance(ch, ast.Import | ast.ImportFrom):
                if isinstance(ch, ast.Import):
                    names = [a.name for a in ch.names]
                else:
                    base = _target(m, is_pkg, ch.level, ch.module)
                    names = [base] + [f"{base}.{a.name}" for a in ch.names]
                for n in names:
                    # a submodule importing its own package: that package is already importing
                    if n in mods and n != m and not m.startswith(n + "."):
                        (local if in_def else top)[m].add(n)
            visit(m, is_pkg, ch, in_def or isinstance(ch, ast.FunctionDef | ast.AsyncFunctionDef))

    for m, p in mods.items():
        visit(m, p.name == "__init__.py", ast.parse(p.read_text(), str(p)), False)
    return top, local


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in sorted(edges):
        if v not in index:
            strong(v)
    return out


def main(argv: list[str]) -> int:
    top, local = graph(_modules())
    found = circles({m: top[m] | local[m] for m in top})
    for comp in found:
        print("import circle: " + " -> ".join(comp))
    if "--local" in argv:
        for m in sorted(local):
            if local[m]:
                print(f"{m} imports inside functions: {', '.join(sorted(local[m]))}")
    if found:
        return 1
    print(f"no import circle among {len(top)} modules")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
