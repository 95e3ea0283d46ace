"""Selects the protocol implementation: compiled ``jetwire._c`` or the pure twin.

The compiled module is used unless ``JETWIRE_PURE=1`` is set or it cannot be imported;
``jetwire.protocol._pure`` is the fallback. Both expose the same names, re-exported
here at module level. ``implementations()`` returns every importable implementation so
tests can run the same checks against each.
"""
from __future__ import annotations

import os
from types import ModuleType
from typing import TYPE_CHECKING

from jetwire.protocol import _pure

# this module's names, then every name of the implementations (_pure.__all__; a test compares
# them): literal, so that type checkers see the names imported below as exported
__all__ = [
    "DEFAULT_MAX_PAYLOAD",
    "DONE",
    "IMPLEMENTATION",
    "OP_ERR",
    "OP_FRAME_ERROR",
    "OP_INFO",
    "OP_OK",
    "OP_PING",
    "OP_PONG",
    "PING",
    "PONG",
    "AckCollector",
    "AckFuture",
    "AckMux",
    "AckRows",
    "DirectCollector",
    "DirectRows",
    "FrameSink",
    "Lock",
    "MsgBase",
    "MsgMetadata",
    "Outbox",
    "Parser",
    "Router",
    "SequencePair",
    "SubState",
    "WriteLock",
    "ack_columns",
    "append_hpub",
    "append_pub",
    "append_sub",
    "append_unsub",
    "decode_headers",
    "encode_headers",
    "force_pure",
    "implementations",
    "parse_metadata",
    "parse_metadata_fields",
    "reader_idle",
    "recv_spin",
    "rfc3339_us",
    "speedups_enabled",
    "spin_wait",
    "validate_filter",
    "validate_subject",
]


def force_pure() -> bool:
    """True when the environment asks for the pure-Python implementation (``JETWIRE_PURE=1``)."""
    return os.environ.get("JETWIRE_PURE", "").strip().lower() not in ("", "0", "false", "no")


def _load_compiled() -> ModuleType | None:
    try:
        from jetwire import _c
    except ImportError:
        return None
    return _c


_compiled = _load_compiled()
_mod: ModuleType = _pure if (_compiled is None or force_pure()) else _compiled

IMPLEMENTATION = "compiled" if _mod is _compiled else "pure"


def speedups_enabled() -> bool:
    """True when the compiled implementation is in use."""
    return _mod is _compiled


def implementations() -> dict[str, ModuleType]:
    """Every importable implementation by name: ``{"pure": ..., "compiled": ...}``."""
    found: dict[str, ModuleType] = {"pure": _pure}
    if _compiled is not None:
        found["compiled"] = _compiled
    return found


if TYPE_CHECKING:  # type checkers see the pure twin's types (the compiled ones match them)
    from jetwire.protocol._pure import (
        DEFAULT_MAX_PAYLOAD,
        DONE,
        OP_ERR,
        OP_FRAME_ERROR,
        OP_INFO,
        OP_OK,
        OP_PING,
        OP_PONG,
        PING,
        PONG,
        AckCollector,
        AckFuture,
        AckMux,
        AckRows,
        DirectCollector,
        DirectRows,
        FrameSink,
        Lock,
        MsgBase,
        MsgMetadata,
        Outbox,
        Parser,
        Router,
        SequencePair,
        SubState,
        WriteLock,
        ack_columns,
        append_hpub,
        append_pub,
        append_sub,
        append_unsub,
        decode_headers,
        encode_headers,
        parse_metadata,
        parse_metadata_fields,
        reader_idle,
        recv_spin,
        rfc3339_us,
        spin_wait,
        validate_filter,
        validate_subject,
    )
else:
    OP_INFO = _mod.OP_INFO
    OP_PING = _mod.OP_PING
    OP_PONG = _mod.OP_PONG
    OP_OK = _mod.OP_OK
    OP_ERR = _mod.OP_ERR
    OP_FRAME_ERROR = _mod.OP_FRAME_ERROR
    PING = _mod.PING
    PONG = _mod.PONG
    DEFAULT_MAX_PAYLOAD = _mod.DEFAULT_MAX_PAYLOAD
    MsgBase = _mod.MsgBase
    FrameSink = _mod.FrameSink
    Parser = _mod.Parser
    decode_headers = _mod.decode_headers
    encode_headers = _mod.encode_headers
    parse_metadata_fields = _mod.parse_metadata_fields
    parse_metadata = _mod.parse_metadata
    MsgMetadata = _mod.MsgMetadata
    SequencePair = _mod.SequencePair
    ack_columns = _mod.ack_columns
    rfc3339_us = _mod.rfc3339_us
    DirectRows = _mod.DirectRows
    AckRows = _mod.AckRows
    AckCollector = _mod.AckCollector
    DirectCollector = _mod.DirectCollector
    validate_subject = _mod.validate_subject
    validate_filter = _mod.validate_filter
    append_pub = _mod.append_pub
    append_hpub = _mod.append_hpub
    append_sub = _mod.append_sub
    append_unsub = _mod.append_unsub
    Outbox = _mod.Outbox
    WriteLock = _mod.WriteLock
    DONE = _mod.DONE
    SubState = _mod.SubState
    Router = _mod.Router
    AckMux = _mod.AckMux
    AckFuture = _mod.AckFuture
    Lock = _mod.Lock
    recv_spin = _mod.recv_spin
    reader_idle = _mod.reader_idle
    spin_wait = _mod.spin_wait
