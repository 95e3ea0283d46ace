"""jetwire: a fast NATS and JetStream client.

``jetwire`` is the blocking API; ``jetwire.aio`` has the same names for asyncio.
The names load on first use, so importing a submodule (the pytest plugin in
``jetwire.testing``, say) does not load the client.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, List

from ._version import __version__ as __version__

if TYPE_CHECKING:
    from ._exports import *  # noqa: F403
    from ._sync.client import Client as Client
    from ._sync.client import Subscription as Subscription
    from ._sync.client import connect as connect


def _load() -> None:
    import importlib

    _exports = importlib.import_module("jetwire._exports")
    client = importlib.import_module("jetwire._sync.client")
    Client, Subscription, connect = client.Client, client.Subscription, client.connect
    g = globals()
    for name in _exports.__all__:
        g[name] = getattr(_exports, name)
    g.update(Client=Client, Subscription=Subscription, connect=connect)
    g["__all__"] = ["connect", "Client", "Subscription"] + list(_exports.__all__)


_SUBMODULES = ("micro",)  # ``import jetwire; jetwire.micro.add_service(...)`` works without importing it


def __getattr__(name: str) -> Any:
    if name.startswith("_") and name != "__all__":  # dunders, and submodules being imported
        raise AttributeError(name)
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f"jetwire.{name}")
    if "__all__" not in globals():
        _load()
    try:
        return globals()[name]
    except KeyError:
        if name in ("schemas", "events"):  # submodules: jetwire.events.parse(...) after a bare import jetwire
            import importlib

            return importlib.import_module(f"jetwire.{name}")
        raise AttributeError(f"module 'jetwire' has no attribute {name!r}") from None


def __dir__() -> List[str]:
    if "__all__" not in globals():
        _load()
    return sorted(globals())
