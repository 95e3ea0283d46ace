"""What every pure module shares (the twin of ``ext/jetwire/_c/common.pxi``)."""
from __future__ import annotations

from typing import Any

from ...errors import ProtocolError

OP_INFO = 1
OP_PING = 2
OP_PONG = 3
OP_OK = 4
OP_ERR = 5
OP_FRAME_ERROR = 6  # (OP_FRAME_ERROR, ProtocolError): one malformed message skipped, the stream goes on

PING = b"PING\r\n"
PONG = b"PONG\r\n"

DEFAULT_MAX_PAYLOAD = 1 << 30
DEFAULT_MAX_CONTROL_LINE = 1 << 20  # a bound against a broken server (see options.max_control_line)
_COMPACT_AT = 1 << 16
_MAX_DIGITS = 18

_EV_PING = (OP_PING, None)
_EV_PONG = (OP_PONG, None)
_EV_OK = (OP_OK, None)


def _summary(raw: Any) -> str:
    return repr(bytes(raw[:64])) + ("..." if len(raw) > 64 else "")


def _perr(what: str, raw: Any) -> ProtocolError:
    return ProtocolError(f"{what}: {_summary(raw)}")


def _frame_error(exc: ProtocolError, subject: str) -> ProtocolError:
    """The error of one malformed message, naming its subject."""
    return ProtocolError(f"{exc} in a message on subject {subject!r} (message skipped)", subject=subject)


