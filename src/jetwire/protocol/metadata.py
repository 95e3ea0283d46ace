"""JetStream message metadata parsed from the ``$JS.ACK...`` reply subject.

``SequencePair``, ``MsgMetadata`` and ``parse_metadata`` are those of the selected
implementation (``jetwire._impl``): compiled in ``jetwire._c.metadata``, or the pure
twin ``jetwire.protocol._pure.metadata``. They resolve on first use (this module is
imported while ``jetwire._impl`` itself may still be loading).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["MsgMetadata", "SequencePair", "parse_metadata"]

if TYPE_CHECKING:  # type checkers see the pure twin's types (the compiled ones match them)
    from ._pure.metadata import MsgMetadata, SequencePair, parse_metadata
else:

    def __getattr__(name: str) -> Any:
        if name in __all__:
            from jetwire import _impl

            value = getattr(_impl, name)
            globals()[name] = value
            return value
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
