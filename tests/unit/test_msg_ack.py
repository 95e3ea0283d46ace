"""Fire-and-forget acks (``MsgBase.ack`` / ``_ack``, compiled and pure twins): the checks
and what goes to the connection's ``publish``. Server-side behaviour is in
tests/aio/test_js_acks.py."""
from __future__ import annotations

from typing import Any

import pytest

from jetwire.errors import MsgAlreadyAckedError, NatsError, NotJSMessageError

ACK_SUBJECT = "$JS.ACK.S.C.1.5.7.1700000000000000000.0"


class Conn:
    """What a message is bound to, as far as acks go: ``publish(subject, payload)``."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes]] = []

    def publish(self, subject: str, payload: bytes) -> Any:
        self.sent.append((subject, payload))
        return ("published", len(self.sent))


def bound(msg_cls: Any, reply: Any = ACK_SUBJECT) -> tuple[Any, Conn]:
    m = msg_cls("orders.1", b"x", reply=reply)
    conn = Conn()
    m._client = conn
    return m, conn


def test_ack_publishes_to_the_ack_subject_once(msg_cls: Any) -> None:
    m, conn = bound(msg_cls)
    assert m.ack() == ("published", 1)  # what publish returned (an awaitable in aio)
    assert conn.sent == [(ACK_SUBJECT, b"+ACK")]
    assert m._ackd
    with pytest.raises(MsgAlreadyAckedError):
        m.ack()
    with pytest.raises(MsgAlreadyAckedError):
        m._ack(b"-NAK", True)
    assert conn.sent == [(ACK_SUBJECT, b"+ACK")]


def test_progress_is_not_terminal(msg_cls: Any) -> None:
    m, conn = bound(msg_cls)
    m._ack(b"+WPI", False)
    m._ack(b"+WPI", False)
    assert not m._ackd
    m._ack(b"+TERM", True)
    assert conn.sent == [(ACK_SUBJECT, b"+WPI"), (ACK_SUBJECT, b"+WPI"), (ACK_SUBJECT, b"+TERM")]
    with pytest.raises(MsgAlreadyAckedError):
        m._ack(b"+WPI", False)


@pytest.mark.parametrize("reply", [None, "", "_INBOX.abc", "$JS.API.STREAM.INFO.S"])
def test_only_jetstream_messages_are_acked(msg_cls: Any, reply: Any) -> None:
    m, conn = bound(msg_cls, reply)
    with pytest.raises(NotJSMessageError):
        m.ack()
    with pytest.raises(NotJSMessageError):
        m._ack_subject()
    assert conn.sent == [] and not m._ackd


def test_an_unbound_message_says_so(msg_cls: Any) -> None:
    m = msg_cls("orders.1", b"x", reply=ACK_SUBJECT)
    with pytest.raises(NatsError, match="not bound"):
        m.ack()
    assert not m._ackd


def test_a_failing_publish_leaves_the_message_unacked(msg_cls: Any) -> None:
    m, conn = bound(msg_cls)

    def refuse(subject: str, payload: bytes) -> None:
        raise NatsError("connection closed")

    conn.publish = refuse  # type: ignore[method-assign]
    with pytest.raises(NatsError, match="closed"):
        m.ack()
    assert not m._ackd  # it may be acked again once the connection is back
