"""NATS wire protocol: parser, header codec, ack-subject metadata and encoder.

``Headers`` is shared by both implementations. Every other name (the metadata types
and ``parse_metadata`` included) resolves (lazily, to avoid an import cycle with
``jetwire._impl``) to the selected implementation: compiled ``jetwire._c`` or
``jetwire.protocol._pure``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import _pure
from .headers import Headers

# every name of the implementations (listed once, in ``_pure.__all__``) but the
# connection-core pieces, which stay internal (``jetwire._impl``)
_CORE_NAMES = {"Outbox", "DONE", "SubState", "Router", "AckMux", "AckFuture", "Lock", "WriteLock",
               "ack_columns", "rfc3339_us", "DirectRows", "DirectCollector",
               "AckRows", "AckCollector", "FrameSink", "recv_spin", "reader_idle", "spin_wait"}
_IMPL_NAMES = (frozenset(_pure.__all__) - _CORE_NAMES) | {"speedups_enabled", "implementations"}

# Headers and every name of _IMPL_NAMES (a test compares them)
__all__ = [
    "DEFAULT_MAX_PAYLOAD",
    "OP_ERR",
    "OP_FRAME_ERROR",
    "OP_INFO",
    "OP_OK",
    "OP_PING",
    "OP_PONG",
    "PING",
    "PONG",
    "Headers",
    "MsgBase",
    "MsgMetadata",
    "Parser",
    "SequencePair",
    "append_hpub",
    "append_pub",
    "append_sub",
    "append_unsub",
    "decode_headers",
    "encode_headers",
    "implementations",
    "parse_metadata",
    "parse_metadata_fields",
    "speedups_enabled",
    "validate_filter",
    "validate_subject",
]

if TYPE_CHECKING:  # type checkers see the pure twin's types (the compiled ones match them)
    from jetwire._impl import implementations, speedups_enabled

    from ._pure import (
        DEFAULT_MAX_PAYLOAD,
        OP_ERR,
        OP_FRAME_ERROR,
        OP_INFO,
        OP_OK,
        OP_PING,
        OP_PONG,
        PING,
        PONG,
        MsgBase,
        MsgMetadata,
        Parser,
        SequencePair,
        append_hpub,
        append_pub,
        append_sub,
        append_unsub,
        decode_headers,
        encode_headers,
        parse_metadata,
        parse_metadata_fields,
        validate_filter,
        validate_subject,
    )
else:  # at run time: the selected implementation's, on first use

    def __getattr__(name: str) -> Any:
        if name in _IMPL_NAMES:
            from jetwire import _impl

            value = getattr(_impl, name)
            globals()[name] = value
            return value
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _IMPL_NAMES)
