"""Shared test configuration.

The nats-server fixtures come from jetwire's pytest plugin, loaded through its
``pytest11`` entry point once jetwire is installed; when running from a source tree
without that (or with plugin autoloading disabled), register it here.
"""


def pytest_configure(config):
    import jetwire.testing.plugin as plugin

    if not config.pluginmanager.is_registered(plugin):
        config.pluginmanager.register(plugin, "jetwire")
