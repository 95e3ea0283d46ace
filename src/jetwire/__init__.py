"""jetwire: a fast NATS and JetStream client.

``jetwire`` is the blocking API; ``jetwire.aio`` has the same names for asyncio.
"""
from __future__ import annotations

from ._exports import *  # noqa: F401,F403
from ._exports import __all__ as _shared_all
from ._sync.client import Client, Subscription, connect
from ._version import __version__ as __version__

__all__ = ["connect", "Client", "Subscription"] + list(_shared_all)
