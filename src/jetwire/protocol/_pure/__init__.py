"""Pure-Python twin of the compiled ``jetwire._c`` package, one module per concept like it
(``msg``, ``parser``, ``headers``, ``metadata``, ``encoder``, ``router``, ``ackmux``,
``lock``, ``columns``).

Every function and class here behaves exactly like its compiled counterpart in
``ext/jetwire/_c/``; the differential tests in ``tests/unit`` hold both to that. When
changing a rule, change both files and the tests together.

Wire rules shared by both implementations:

* A control line ends with CRLF and may be at most ``max_control_line`` bytes long
  (CRLF excluded). Arguments are separated by runs of ASCII whitespace (space, tab,
  and also VT, FF, CR and LF inside the line). Operation names are case-insensitive
  and must start the line.
* ``MSG <subject> <sid> [reply] <size>`` and
  ``HMSG <subject> <sid> [reply] <hdr_len> <total_len>``: sid and sizes are 1-18
  ASCII digits, ``hdr_len <= total_len <= max_payload``. The frame must end in CRLF.
* Framing errors are checked in this order: control line, operation, arguments; then
  the parser waits for the whole frame; then the trailing CRLF. They raise
  ``ProtocolError`` (whose ``events`` are the events parsed before the bad frame).
* Within a well-framed HMSG, a malformed header block skips that one message: the event
  ``(OP_FRAME_ERROR, ProtocolError)`` (naming the message's ``subject``) takes its place
  and parsing goes on. Text is bytes-faithful: what is not UTF-8 is kept as surrogate
  escapes, and the encoder sends those bytes back.

Threads: state two threads change (the outbox's buffer and counters, a subscription's
queue, the ack mux's tokens and waiters) is changed under its lock when one is set (the
blocking flavour); the asyncio flavour sets none. See ``lock.py``.
"""
from __future__ import annotations

from .ackmux import AckFuture, AckMux
from .columns import AckCollector, AckRows, DirectCollector, DirectRows, ack_columns, rfc3339_us
from .common import DEFAULT_MAX_PAYLOAD, OP_ERR, OP_FRAME_ERROR, OP_INFO, OP_OK, OP_PING, OP_PONG, PING, PONG
from .encoder import (
    DONE,
    Outbox,
    WriteLock,
    append_hpub,
    append_pub,
    append_sub,
    append_unsub,
    validate_filter,
    validate_subject,
)
from .headers import decode_headers, encode_headers
from .lock import Lock, reader_idle, recv_spin, spin_wait
from .metadata import MsgMetadata, SequencePair, parse_metadata, parse_metadata_fields
from .msg import FrameSink, MsgBase
from .parser import Parser
from .router import Router, SubState

__all__ = [
    "DEFAULT_MAX_PAYLOAD",
    "DONE",
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
    "parse_metadata",
    "parse_metadata_fields",
    "reader_idle",
    "recv_spin",
    "rfc3339_us",
    "spin_wait",
    "validate_filter",
    "validate_subject",
]

