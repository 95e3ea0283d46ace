"""Every ```python block of README.md and docs/ runs against an embedded nats-server.

The rule (see tests/docs/snippets.py): each block is a complete program, run on its own
in a fresh namespace, temporary directory and server; ``nats://127.0.0.1:4222`` and
``ws://127.0.0.1:8080`` in it become that server's URLs. A block that raises fails its
test, named ``<page>:<line>``.
"""
from __future__ import annotations

import asyncio
import linecache
import os
import subprocess
import sys

import pytest

from jetwire.testing import NatsServer
from jetwire.testing.plugin import _start
from tests.docs.snippets import ROOT, URL, WS_URL, Snippet, collect, parse

SNIPPETS = collect()
RUNNABLE = [s for s in SNIPPETS if s.no_run is None]


# the plugin's fixtures, also where jetwire is not installed (a source checkout)
_CONFTEST = """
def pytest_configure(config):
    import jetwire.testing.plugin as plugin

    if not config.pluginmanager.is_registered(plugin):
        config.pluginmanager.register(plugin, "jetwire")
"""


def run_pytest_snippet(snippet: Snippet, workdir) -> None:
    """Run a ``<!-- pytest -->`` block as a test file (its own pytest process, the
    jetwire plugin's fixtures); every test in it must pass."""
    (workdir / "test_snippet.py").write_text(snippet.code, encoding="utf-8")
    (workdir / "conftest.py").write_text(_CONFTEST, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "--rootdir", str(workdir), "test_snippet.py"],
                          cwd=workdir, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{snippet.id}:\n{proc.stdout[-4000:]}{proc.stderr[-2000:]}"
    assert " passed" in proc.stdout, proc.stdout


def run_snippet(snippet: Snippet, workdir) -> None:
    """Run one block as ``python -c`` would, against a fresh server, in ``workdir``."""
    if snippet.pytest:
        return run_pytest_snippet(snippet, workdir)
    kwargs = dict(snippet.server)
    kwargs.setdefault("websocket", True)
    server = _start(NatsServer(**kwargs), 10.0)
    old = os.getcwd()
    try:
        os.chdir(workdir)
        code = snippet.code.replace(URL, server.url)
        if server.ws_url:
            code = code.replace(WS_URL, server.ws_url)
        linecache.cache[snippet.id] = (len(code), None, code.splitlines(True), snippet.id)  # tracebacks show the line
        compiled = compile(code, snippet.id, "exec")
        exec(compiled, {"__name__": "__main__", "__file__": str(snippet.path)})
    finally:
        os.chdir(old)
        server.stop()
        asyncio.set_event_loop(None)


@pytest.mark.parametrize("snippet", RUNNABLE, ids=[s.id for s in RUNNABLE])
def test_snippet_runs(snippet, tmp_path):
    run_snippet(snippet, tmp_path)


def test_snippets_found_and_exceptions_rare():
    """The collector sees the blocks (a broken collector must not pass by finding none),
    and every skipped block says why."""
    assert len(RUNNABLE) >= 50, len(RUNNABLE)
    pages = {s.path.name for s in RUNNABLE}
    assert "README.md" in pages and "getting-started.md" in pages
    skipped = [s for s in SNIPPETS if s.no_run is not None]
    assert all(s.no_run.strip() for s in skipped)
    assert len(skipped) <= len(SNIPPETS) // 4, [s.id for s in skipped]


def test_broken_snippet_fails(tmp_path):
    """A block that raises fails the run (the runner does not swallow errors), and the
    traceback names the page and line."""
    page = tmp_path / "page.md"
    page.write_text(
        "text\n\n"
        "=== \"Blocking\"\n\n"
        "    ```python\n"
        "    import jetwire\n\n"
        "    with jetwire.connect(\"nats://127.0.0.1:4222\") as nc:\n"
        "        nc.jetstream().stream(\"MISSING\")\n"
        "    ```\n"
    )
    (snippet,) = parse(page)
    snippet.path = ROOT / "docs" / "page.md"  # ids are relative to the checkout
    assert snippet.line == 5
    import jetwire

    with pytest.raises(jetwire.StreamNotFoundError) as info:
        run_snippet(snippet, tmp_path)
    assert any(entry.frame.code.raw.co_filename == "docs/page.md:5" for entry in info.traceback)


def test_markers(tmp_path):
    page = tmp_path / "m.md"
    page.write_text(
        "<!-- no-run: needs Java -->\n```python\nimport pyspark\n```\n\n"
        "<!-- server: {\"auth\": {\"token\": \"t0k\"}} -->\n```python\nx = 1\n```\n"
        "```bash\nls\n```\n"
    )
    a, b = parse(page)
    assert a.no_run == "needs Java" and b.no_run is None
    assert b.server == {"auth": {"token": "t0k"}}
