"""Fixtures for the protocol unit tests: every test runs against both implementations.

``impl`` yields the pure-Python twin and the compiled ``jetwire._c`` package. The
compiled one must be importable: a missing extension FAILS the tests rather than
skipping them, unless ``JETWIRE_PURE=1`` asks for a pure-only run.

Hypothesis profiles (pick with ``HYPOTHESIS_PROFILE=<name>``; default ``ci``):
``dev`` (quick), ``ci`` (2000 examples for the main differential test) and ``fuzz``
(200000). They are registered here but applied only by the protocol tests that ask
for them (``settings.get_profile(...)``), so other test modules keep their own settings.
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings

from jetwire import _impl

_COMMON = dict(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
settings.register_profile("dev", max_examples=200, **_COMMON)
settings.register_profile("ci", max_examples=2000, **_COMMON)
settings.register_profile("fuzz", max_examples=200_000, **_COMMON)


IMPL_NAMES = ["pure"] if _impl.force_pure() else ["pure", "compiled"]


def get_impl(name: str):
    mods = _impl.implementations()
    if name not in mods:
        pytest.fail(
            "the compiled extension jetwire._c is not importable: build it with "
            "`python setup.py build_ext --inplace` (or run with JETWIRE_PURE=1 for a pure-only run)",
            pytrace=False,
        )
    return mods[name]


@pytest.fixture(params=IMPL_NAMES)
def impl(request):
    """The implementation module under test (``jetwire.protocol._pure`` or ``jetwire._c``)."""
    return get_impl(request.param)


@pytest.fixture
def all_impls():
    """Every implementation under test, by name (both unless ``JETWIRE_PURE=1``)."""
    return {name: get_impl(name) for name in IMPL_NAMES}


_msg_classes: dict = {}


def _msg_class(mod):
    cls = _msg_classes.get(mod.__name__)
    if cls is None:

        class TMsg(mod.MsgBase):
            __slots__ = ()

        cls = _msg_classes[mod.__name__] = TMsg
    return cls


@pytest.fixture
def msg_cls(impl):
    """A ``Msg``-like Python subclass (``__slots__ = ()``) of ``impl.MsgBase``."""
    return _msg_class(impl)


@pytest.fixture
def make_msg_cls():
    """Function: implementation module -> its ``Msg``-like subclass."""
    return _msg_class
