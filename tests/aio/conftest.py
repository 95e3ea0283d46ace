"""asyncio tests: coroutine test functions run on uvloop (plain asyncio when it is missing)."""
from __future__ import annotations

import asyncio
import inspect

import pytest

try:
    import uvloop
except ImportError:  # pragma: no cover
    uvloop = None


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function):
    fn = pyfuncitem.obj
    if not inspect.iscoroutinefunction(fn):
        return None
    argnames = pyfuncitem._fixtureinfo.argnames
    kwargs = {name: pyfuncitem.funcargs[name] for name in argnames}
    if uvloop is not None:
        uvloop.run(fn(**kwargs))
    else:
        asyncio.run(fn(**kwargs))
    return True
