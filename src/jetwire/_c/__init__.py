"""The compiled hot path (``ext/jetwire/_c/*.pyx``), one extension module per concept:
``msg`` (MsgBase), ``parser``, ``headers`` (codec), ``metadata`` (ack subjects),
``encoder`` (PUB/HPUB/SUB/UNSUB, the outbox), ``router`` (SubState, Router), ``ackmux``
(AckMux, AckFuture), ``lock`` (Lock, WriteLock: the same) and ``columns`` (messages to
column buffers for bulk readers). They share C-level types
and functions through ``.pxd`` files (``cimport``: no Python attribute lookups between
them on the hot path). Their pure-Python twins are the modules of
``jetwire.protocol._pure``; ``jetwire._impl`` selects one side as a whole (importing
this package fails when any of the extensions is not built)."""
from .ackmux import AckFuture, AckMux
from .columns import AckCollector, AckRows, DirectCollector, DirectRows, ack_columns, rfc3339_us
from .encoder import DONE, Outbox, append_hpub, append_pub, append_sub, append_unsub, validate_filter, validate_subject
from .headers import decode_headers, encode_headers
from .lock import Lock, WriteLock, reader_idle, recv_spin, spin_wait
from .metadata import MsgMetadata, SequencePair, parse_metadata, parse_metadata_fields
from .msg import FrameSink, MsgBase
from .parser import DEFAULT_MAX_PAYLOAD, OP_ERR, OP_FRAME_ERROR, OP_INFO, OP_OK, OP_PING, OP_PONG, PING, PONG, Parser
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
