"""jetwire for asyncio: the same names as ``jetwire``, with every network call awaitable.

Runs on uvloop when it is installed and the application uses it (see :func:`run`).
"""
from __future__ import annotations

from typing import Any, Awaitable

from .._exports import *  # noqa: F401,F403 - shared types and errors
from .._exports import __all__ as _shared_all
from . import micro as micro  # services (ADR-32): jetwire.aio.micro
from .client import Client, Subscription, connect


def run(main: Awaitable[Any]) -> Any:
    """Run a coroutine on uvloop when installed, else on the default asyncio loop."""
    try:
        import uvloop
    except ImportError:
        import asyncio

        return asyncio.run(main)  # type: ignore[arg-type]
    return uvloop.run(main)  # type: ignore[arg-type]


__all__ = ["connect", "Client", "Subscription", "run"] + list(_shared_all)
