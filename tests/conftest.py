"""Shared test configuration.

The nats-server fixtures come from jetwire's pytest plugin, loaded through its
``pytest11`` entry point once jetwire is installed; when running from a source tree
without that (or with plugin autoloading disabled), register it here. ``nats_ws_url``
gives a shared server's ``ws://`` URL (tests over WebSocket).

Coroutine test functions run on uvloop (plain asyncio when it is missing), bounded by the
test's timeout (pytest-timeout's ``timeout`` ini value or marker): its SIGALRM cannot
interrupt an event loop waiting in C, so a hung coroutine test is cancelled here, its
tasks' stacks printed, and it fails instead of stopping the whole run.
"""
import asyncio
import inspect
import sys

import pytest

try:
    import uvloop
except ImportError:  # pragma: no cover
    uvloop = None


def _limit(item: pytest.Function) -> float:
    marker = item.get_closest_marker("timeout")
    if marker is not None and marker.args:
        value = float(marker.args[0])
    else:
        try:
            value = float(item.config.getini("timeout") or 0)
        except ValueError:  # pytest-timeout missing: no ini value of that name
            value = 0.0
    return value * 0.95 if value > 0 else 0.0  # before pytest-timeout's own, when it can fire


async def _bounded(coro, limit: float, name: str) -> None:
    task = asyncio.ensure_future(coro)
    if limit <= 0:
        await task
        return
    done, _ = await asyncio.wait({task}, timeout=limit)
    if task in done:
        task.result()
        return
    print(f"\n{name} still running after {limit:.0f}s; its tasks:", file=sys.stderr)
    for t in asyncio.all_tasks():
        if t is not asyncio.current_task():
            t.print_stack(file=sys.stderr)
    task.cancel()
    try:
        await task
    except BaseException:  # the cancellation, or what the test's cleanup raised
        pass
    pytest.fail(f"{name} did not finish within {limit:.0f}s (a hang?); its tasks' stacks are above")


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function):
    fn = pyfuncitem.obj
    if not inspect.iscoroutinefunction(fn):
        return None
    kwargs = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    run = uvloop.run if uvloop is not None else asyncio.run
    run(_bounded(fn(**kwargs), _limit(pyfuncitem), pyfuncitem.nodeid))
    return True


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


@pytest.fixture
def proxy(nats_server):
    """The fault proxy (``tests/chaos/proxy.py``) in front of the session's nats-server
    (brought back if a test stopped it)."""
    from tests.chaos.proxy import FaultProxy

    if not nats_server.running:
        nats_server.start()
    with FaultProxy(nats_server.host, nats_server.port).start() as p:
        yield p
