"""The suite's coroutine-test runner (tests/conftest.py): a hung coroutine test fails
within its timeout instead of stopping the run (pytest-timeout's SIGALRM cannot interrupt
an event loop waiting in C)."""
from __future__ import annotations

import asyncio
import time

import pytest

from tests.conftest import _bounded


def test_a_hung_coroutine_is_cancelled_and_fails_within_its_limit():
    cleaned = []

    async def hangs():
        try:
            await asyncio.Event().wait()
        finally:
            cleaned.append(True)  # its cleanup runs: connections get closed

    t0 = time.monotonic()
    with pytest.raises(pytest.fail.Exception, match="did not finish within"):
        asyncio.run(_bounded(hangs(), 0.2, "probe"))
    assert time.monotonic() - t0 < 5
    assert cleaned == [True]


def test_a_finished_coroutine_passes_and_its_error_is_raised():
    async def ok():
        return 1

    async def boom():
        raise ValueError("x")

    asyncio.run(_bounded(ok(), 5, "ok"))
    asyncio.run(_bounded(ok(), 0, "unbounded"))
    with pytest.raises(ValueError):
        asyncio.run(_bounded(boom(), 5, "boom"))
