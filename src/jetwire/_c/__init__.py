"""The compiled hot path (``ext/jetwire/_c/*.pyx``), one extension module per concept:
``msg`` (MsgBase), ``parser``, ``headers`` (codec), ``metadata`` (ack subjects),
``encoder`` (PUB/HPUB/SUB/UNSUB, the outbox, the writer's lock), ``router`` (SubState,
Router) and ``ackmux``. Their pure-Python twins are the modules of
``jetwire.protocol._pure``; ``jetwire._impl`` selects one side as a whole."""
from .ackmux import AckMux
from .encoder import DONE, Outbox, WriteLock, append_hpub, append_pub, append_sub, append_unsub, validate_subject
from .headers import decode_headers, encode_headers
from .metadata import parse_metadata_fields
from .msg import MsgBase
from .parser import DEFAULT_MAX_PAYLOAD, OP_ERR, OP_FRAME_ERROR, OP_INFO, OP_OK, OP_PING, OP_PONG, PING, PONG, Parser
from .router import Router, SubState

__all__ = [
    "OP_INFO", "OP_PING", "OP_PONG", "OP_OK", "OP_ERR", "OP_FRAME_ERROR", "PING", "PONG", "DEFAULT_MAX_PAYLOAD",
    "MsgBase", "Parser", "decode_headers", "encode_headers", "parse_metadata_fields", "validate_subject",
    "append_pub", "append_hpub", "append_sub", "append_unsub", "DONE", "Outbox", "WriteLock", "SubState",
    "Router", "AckMux",
]
