"""Services: the NATS service API (ADR-32, nats.go ``micro``) for the blocking client.

``jetwire.micro`` is ``jetwire._sync.micro``, generated from :mod:`jetwire.aio.micro` (the
asyncio flavour, same names); the sans-IO part is :mod:`jetwire.micro_core`.
"""
from ._sync.micro import *  # noqa: F401,F403
from ._sync.micro import __all__ as __all__  # noqa: F401
