"""Write the keyword types of the config calls from the config dataclasses.

    PYTHONPATH=src python tools/gen_config_kwargs.py          # rewrite src/jetwire/jetstream/config_kwargs.py
    PYTHONPATH=src python tools/gen_config_kwargs.py --check  # exit 1 if it is out of date

``create_stream(config=None, **fields)`` and its kin take the fields of a config
dataclass as keywords. For a type checker to see them, each dataclass gets a
``TypedDict`` (``total=False``) of the same fields, used as ``**fields:
Unpack[StreamConfigFields]``. A field's type is its annotation, widened to what the
call accepts at run time: an enum field also takes its wire string
(``retention="workqueue"``), a nested config also takes a dict
(``placement={"cluster": "east"}``). The dataclasses stay the one list of fields.
"""
from __future__ import annotations

import argparse
import dataclasses
import enum
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "src" / "jetwire" / "jetstream" / "config_kwargs.py"

# (TypedDict name, module, dataclass)
CONFIGS = [
    ("StreamConfigFields", "jetwire.jetstream.models", "StreamConfig"),
    ("ConsumerConfigFields", "jetwire.jetstream.models", "ConsumerConfig"),
    ("KeyValueConfigFields", "jetwire.jetstream.kv_models", "KeyValueConfig"),
    ("ObjectStoreConfigFields", "jetwire.jetstream.obj_models", "ObjectStoreConfig"),
]


def _fields(module: str, name: str) -> tuple[type, list[tuple[str, str]]]:
    import importlib

    mod = importlib.import_module(module)
    cls = getattr(mod, name)
    out = []
    for f in dataclasses.fields(cls):
        if not f.init or f.name.startswith("_"):
            continue
        out.append((f.name, f.type if isinstance(f.type, str) else f.type.__name__))
    return mod, out


def _widen(annotation: str, mod: object, names: set) -> str:
    """``annotation`` with every enum ``E`` as ``E | str`` and every nested config
    ``C`` as ``C | JSONObject`` (its JSON dict); ``names`` collects what must be imported."""

    def repl(m: re.Match[str]) -> str:
        word = m.group(0)
        obj = getattr(mod, word, None)
        if isinstance(obj, type) and issubclass(obj, enum.Enum):
            names.add((obj.__module__, word))
            return f"{word} | str"
        if isinstance(obj, type) and dataclasses.is_dataclass(obj):
            names.add((obj.__module__, word))
            names.add(("jetwire.jetstream._json", "JSONObject"))
            return f"{word} | JSONObject"
        if word == "datetime":
            names.add(("datetime", word))
        return word

    return re.sub(r"\b[A-Za-z_][A-Za-z0-9_]*\b", repl, annotation)


def render() -> str:
    names: set = set()
    classes = []
    for td, module, name in CONFIGS:
        mod, fields = _fields(module, name)
        lines = [f"class {td}(TypedDict, total=False):",
                 f'    """The keyword fields of ``{name}`` (every one optional)."""', ""]
        lines += [f"    {fname}: {_widen(ann, mod, names)}" for fname, ann in fields]
        classes.append("\n".join(lines))
    imports: dict = {}
    for module, word in sorted(names):
        imports.setdefault(module, []).append(word)
    head = ['"""Keyword types of the config calls (``create_stream(**fields)``, ...): written by',
            "tools/gen_config_kwargs.py from the config dataclasses. Do not edit.", '"""',
            "from __future__ import annotations", ""]
    if imports.pop("datetime", None):
        head.append("from datetime import datetime")
    head += ["from typing import TypedDict", ""]
    for module in sorted(imports):  # first-party, one name a line (the import order ruff keeps)
        head.append(f"from {module} import (")
        head += [f"    {n}," for n in sorted(imports[module], key=str.lower)]
        head.append(")")
    head.append("")
    names_all = ", ".join(f'"{td}"' for td, _, _ in CONFIGS)
    body = "\n\n\n".join(classes)
    return "\n".join(head) + "\n\n" + body + f"\n\n\n__all__ = [{names_all}]\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when the file is out of date")
    args = ap.parse_args()
    text = render()
    old = TARGET.read_text() if TARGET.exists() else ""
    if args.check:
        if old != text:
            print(f"out of date: {TARGET.relative_to(ROOT)}\nrun: PYTHONPATH=src python tools/gen_config_kwargs.py")
            return 1
        return 0
    if old != text:
        TARGET.write_text(text)
        print(f"wrote {TARGET.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
