"""``connect()`` takes every option of ``jetwire.options.Options`` as a typed, documented
keyword-only parameter with the real default (both flavours), and a misspelt option is a
``TypeError`` naming the nearest one."""
from __future__ import annotations

import asyncio
import dataclasses
import inspect
import pydoc
import subprocess
import sys
from pathlib import Path

import pytest

import jetwire
import jetwire.aio
from jetwire.options import Options, make_options

ROOT = Path(__file__).resolve().parents[2]
FIELDS = [f for f in dataclasses.fields(Options) if f.name != "servers"]
CONNECTS = [pytest.param(jetwire.connect, id="blocking"), pytest.param(jetwire.aio.connect, id="asyncio")]


@pytest.mark.parametrize("connect", CONNECTS)
def test_the_signature_is_the_options_fields_with_their_defaults_and_types(connect):
    params = list(inspect.signature(connect).parameters.values())
    assert params[0].name == "servers"
    assert params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and params[0].default is None
    rest = params[1:]
    assert [p.name for p in rest] == [f.name for f in FIELDS]
    defaults = Options()
    for p, f in zip(rest, FIELDS, strict=False):
        assert p.kind is inspect.Parameter.KEYWORD_ONLY, p.name
        assert p.default == getattr(defaults, f.name), p.name
        assert p.annotation == f.type, p.name  # both are the annotation's text


@pytest.mark.parametrize("connect", CONNECTS)
def test_help_lists_every_option_with_its_type_and_meaning(connect):
    text = pydoc.render_doc(connect, renderer=pydoc.plaintext)
    for f in FIELDS:
        line = next((ln for ln in text.splitlines() if ln.strip().startswith(f"{f.name} (")), None)
        assert line is not None, f.name
        assert f.type in line and "): " in line, line
    assert "pedantic: 'bool' = False" in text and "**" not in text.splitlines()[2]  # the signature itself


def _call(connect, *args, **kwargs):
    r = connect(*args, **kwargs)
    return asyncio.run(r) if inspect.iscoroutine(r) else r


@pytest.mark.parametrize("connect", CONNECTS)
def test_a_misspelt_option_names_the_nearest_one(connect):
    with pytest.raises(TypeError, match=r"connect\(\) got an unexpected keyword argument 'pasword'; "
                                        r"did you mean 'password'\?"):
        _call(connect, "nats://127.0.0.1:1", pasword="x")
    with pytest.raises(TypeError, match=r"'reconect_time_wait'; did you mean 'reconnect_time_wait'\?"):
        _call(connect, reconect_time_wait=1)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'zzzzzz'$"):
        _call(connect, zzzzzz=1)
    with pytest.raises(TypeError, match="did you mean 'inbox_prefix'"):
        make_options(None, {"inbox_prefx": "_X"})


def test_the_generated_signature_is_up_to_date():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_connect.py"), "--check"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
