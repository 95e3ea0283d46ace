"""Shared test configuration.

The nats-server fixtures come from jetwire's pytest plugin, loaded through its
``pytest11`` entry point once jetwire is installed; when running from a source tree
without that (or with plugin autoloading disabled), register it here. ``nats_ws_url``
gives a shared server's ``ws://`` URL (tests over WebSocket).
"""
import pytest


def pytest_configure(config):
    import jetwire.testing.plugin as plugin

    if not config.pluginmanager.is_registered(plugin):
        config.pluginmanager.register(plugin, "jetwire")


@pytest.fixture(scope="session")
def nats_ws_server():
    """A JetStream server with its websocket listener too, shared by the session (the
    plugin's ``nats_server`` has none): for the tests that run over ``ws://``."""
    from jetwire.testing import NatsServer
    from jetwire.testing.plugin import _start

    server = _start(NatsServer(websocket=True), 10.0)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def nats_ws_url(nats_ws_server):
    """``ws://`` URL of the shared websocket server (brought back if a test stopped it)."""
    if nats_ws_server.frozen:
        nats_ws_server.thaw()
    if not nats_ws_server.running:
        nats_ws_server.start()
    return nats_ws_server.ws_url
