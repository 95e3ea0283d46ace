"""The public modules list their names literally (``__all__`` and explicit imports, what
type checkers read), and those lists are the names the modules have at run time."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import jetwire
import jetwire._exports as exports
import jetwire._sync.micro as sync_micro
import jetwire.aio
import jetwire.aio.micro as aio_micro
import jetwire.errors as errors
import jetwire.micro
import jetwire.protocol as protocol

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "jetwire"


def _literal_all(path: Path) -> list:
    """The module's ``__all__``, which must be a literal list of strings."""
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"{path}: no literal __all__")


def test_the_generated_export_lists_are_up_to_date():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_exports.py"), "--check"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_errors_all_is_every_exception_class_and_the_helpers():
    classes = [n for n, v in vars(errors).items()
               if isinstance(v, type) and issubclass(v, Exception) and v.__module__ == errors.__name__]
    assert errors.__all__ == [*classes, "api_error", "ERR_CODES"]
    assert _literal_all(SRC / "errors.py") == errors.__all__


def test_both_flavours_export_the_shared_names_and_their_client():
    shared = exports.__all__
    assert _literal_all(SRC / "_exports.py") == shared
    assert len(set(shared)) == len(shared)
    for mod in ("jetstream.models", "jetstream.kv_models", "jetstream.obj_models", "jetstream.backup_core",
                "micro_core"):
        assert set(_literal_all(SRC / (mod.replace(".", "/") + ".py"))) <= set(shared), mod
    assert set(errors.__all__) - {"api_error", "ERR_CODES"} <= set(shared)
    handles = list(jetwire._HANDLES)
    assert jetwire._HANDLES == jetwire.aio._HANDLES
    assert jetwire.__all__ == ["connect", "Client", "Subscription", *handles, *shared]
    assert jetwire.aio.__all__ == ["connect", "Client", "Subscription", "run", *handles, *shared]
    for name in shared:
        assert getattr(jetwire, name) is getattr(exports, name) is getattr(jetwire.aio, name), name
    from jetwire._sync import client as sync_client
    from jetwire.aio import client as aio_client

    for name in ("connect", "Client", "Subscription"):
        assert getattr(jetwire, name) is getattr(sync_client, name)
        assert getattr(jetwire.aio, name) is getattr(aio_client, name)
    ns: dict = {}
    exec("from jetwire import *", ns)
    assert set(jetwire.__all__) <= set(ns)
    ns = {}
    exec("from jetwire.aio import *", ns)
    assert set(jetwire.aio.__all__) <= set(ns)


# the handle classes each flavour exports (for annotations): name -> its module
HANDLES = {
    "JetStream": "jetstream", "Stream": "stream", "Consumer": "consumer", "MessageBatch": "consumer",
    "ConsumeContext": "consumer", "MessagesContext": "consumer", "OrderedConsumer": "ordered",
    "PushConsumer": "push_consumer", "AtomicBatch": "batch", "KeyValue": "kv", "KeyWatcher": "kv",
    "ObjectStore": "objects", "ObjectResult": "objects", "ObjectWatcher": "objects", "EventStream": "events",
}


def test_each_flavour_exports_its_own_handle_classes():
    import importlib

    assert jetwire._HANDLES == jetwire.aio._HANDLES == HANDLES
    for name, module in HANDLES.items():
        blocking = getattr(importlib.import_module(f"jetwire._sync.{module}"), name)
        aio = getattr(importlib.import_module(f"jetwire.aio.{module}"), name)
        assert getattr(jetwire, name) is blocking, name
        assert getattr(jetwire.aio, name) is aio, name
        assert blocking is not aio and isinstance(blocking, type) and isinstance(aio, type), name
    # the literal imports type checkers read name the same classes
    for path, prefix in ((SRC / "__init__.py", "._sync."), (SRC / "aio" / "__init__.py", ".")):
        tree = ast.parse(path.read_text())
        seen = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                for alias in node.names:
                    if alias.name in HANDLES:
                        seen[alias.name] = "." + node.module
        assert seen == {n: prefix + m for n, m in HANDLES.items()}, path


def test_the_handle_classes_load_on_first_use():
    """Importing ``jetwire`` or ``jetwire.aio`` (or using the client) loads no handle module;
    naming a handle class loads its own module."""
    mods = sorted({f"jetwire.aio.{m}" for m in HANDLES.values()} | {f"jetwire._sync.{m}" for m in HANDLES.values()})
    code = ("import sys, jetwire, jetwire.aio; jetwire.Client; jetwire.Msg; jetwire.aio.Client; "
            f"print([m for m in {mods!r} if m in sys.modules])")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
    for flavour in ("jetwire", "jetwire.aio"):
        code = (f"import sys, {flavour}; cls = {flavour}.KeyValue; "
                "print(cls.__module__, 'jetwire.aio.jetstream' in sys.modules, 'jetwire._sync.jetstream' in sys.modules)")
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        kv = "jetwire.aio.kv" if flavour == "jetwire.aio" else "jetwire._sync.kv"
        assert r.stdout.split() == [kv, "False", "False"]


def test_jetwire_answers_only_its_names():
    import pytest

    with pytest.raises(AttributeError):
        jetwire.no_such_name
    assert jetwire.micro is jetwire.micro  # a submodule, on first use
    assert set(jetwire.__all__) <= set(dir(jetwire))
    with pytest.raises(AttributeError):
        jetwire.aio.no_such_name
    assert set(jetwire.aio.__all__) <= set(dir(jetwire.aio))


def test_the_other_public_lists_match_their_modules():
    assert set(protocol.__all__) == {"Headers"} | set(protocol._IMPL_NAMES)
    for name in protocol.__all__:
        assert getattr(protocol, name) is not None
    assert jetwire.micro.__all__ == aio_micro.__all__ == sync_micro.__all__
    for name in jetwire.micro.__all__:
        assert getattr(jetwire.micro, name) is getattr(sync_micro, name)
    # jetwire.spark needs pyspark: compared from the source
    spark_all = _literal_all(SRC / "spark" / "__init__.py")
    assert spark_all == sorted(["CommitLogError", "DataLossError", "OptionError", "register", *_literal_all(SRC / "spark" / "source.py")])


def test_module_getattr_is_hidden_from_type_checkers():
    """A module ``__getattr__`` would make every misspelt name ``Any`` for a type checker:
    those that load names lazily are defined only when not ``TYPE_CHECKING``."""
    for path in (SRC / "__init__.py", SRC / "aio" / "__init__.py", SRC / "testing" / "__init__.py",
                 SRC / "protocol" / "__init__.py"):
        tree = ast.parse(path.read_text())
        top = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "__getattr__"]
        assert not top, path


def test_impl_lists_the_implementations_names():
    import jetwire._impl as impl
    from jetwire.protocol import _pure

    assert sorted(impl.__all__) == sorted(["IMPLEMENTATION", "speedups_enabled", "implementations", "force_pure", *_pure.__all__])
    for name in impl.__all__:
        assert hasattr(impl, name), name
