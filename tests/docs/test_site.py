"""The documentation site builds with ``mkdocs build --strict`` (no broken link, nav
entry or docstring reference), and its API reference names every public name."""
from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.snippets import ROOT

PUBLIC_MODULES = ["jetwire", "jetwire.aio", "jetwire.micro", "jetwire.aio.micro", "jetwire.events",
                  "jetwire.schemas", "jetwire.testing"]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])))
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f", str(ROOT / "mkdocs.yml"),
                           "-d", str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def test_site_builds_strict(site):
    assert (site / "index.html").is_file()
    assert (site / "guide" / "getting-started" / "index.html").is_file()
    assert (site / "guide" / "coming-from-nats-py" / "index.html").is_file()
    assert (site / "reference" / "jetwire" / "index.html").is_file()


def test_reference_names_every_public_name(site):
    """Each name a public module exports is an anchored entry of the API reference
    (mkdocstrings' ids are the dotted paths of where a name is defined)."""
    ids = set()
    for page in (site / "reference").rglob("*.html"):
        ids |= set(re.findall(r'id="([^"]+)"', page.read_text(encoding="utf-8")))
    documented = {i.rsplit(".", 1)[-1] for i in ids if "." in i}
    missing = {}
    for name in PUBLIC_MODULES:
        mod = importlib.import_module(name)
        gone = sorted(n for n in mod.__all__ if n not in documented)
        if gone:
            missing[name] = gone
    assert not missing, missing


def test_nav_lists_every_page():
    """mkdocs --strict warns about pages left out of the nav (validation.omitted_files),
    and the nav names the guide pages the issue asks for."""
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in ["getting-started", "connecting", "core", "jetstream", "kv", "object-store", "services",
                 "management", "backup", "websocket", "cli", "spark", "testing", "tuning", "errors",
                 "coming-from-nats-py"]:
        assert f"guide/{page}.md" in nav, page
