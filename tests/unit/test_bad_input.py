"""Bad input caught before anything is sent, for both implementations: subscription and
filter subjects (wildcards only as whole tokens, ``>`` only last), payloads that are not
bytes-like (one ``TypeError`` text naming the argument and the types it takes), and which
server ``-ERR`` ends the connection."""
from __future__ import annotations

import re

import pytest

from jetwire.connection.core import ConnectionCore
from jetwire.errors import (
    AuthorizationError,
    BadSubjectError,
    InvalidKeyError,
    InvalidServiceConfigError,
    MaxSubscriptionsError,
    PermissionsError,
    ProtocolError,
    StaleConnectionError,
    payload_type_error,
)
from jetwire.jetstream.manage import consumer_create_subject, validate_filter_subjects
from jetwire.jetstream.models import ConsumerConfig
from jetwire.jetstream.validate import validate_key_filter
from jetwire.micro_core import check_subject
from jetwire.options import make_options

MISPLACED = ["foo.>.bar", "foo.*bar", "foo.b>", "*foo.bar", ">.foo", "a>", "*a", ">>", "**", "a.>.>", "a.b*.c",
             "a.*>", ">*", "a.>.*"]
WHOLE = ["foo", "foo.*.bar", "foo.>", "*", ">", "*.*.>", "a.*", "$JS.>", "_INBOX.abc.*", "日本.*", "a-b.*"]
DATA_TEXT = re.compile(r"^data must be bytes, bytearray or memoryview, not (int|float|NoneType|object|str|list)$")
BAD_DATA = [5, 1.5, None, object(), "text", [1, 2]]


@pytest.mark.parametrize("subject", MISPLACED)
def test_misplaced_wildcards_are_refused_for_subscribing_and_publishing(impl, subject):
    with pytest.raises(BadSubjectError, match="wildcard that is not a whole token"):
        impl.validate_filter(subject)
    with pytest.raises(BadSubjectError, match="wildcard that is not a whole token"):
        impl.validate_subject(subject)
    buf = bytearray(b"keep")
    with pytest.raises(BadSubjectError):
        impl.append_sub(buf, subject, None, 1)
    with pytest.raises(BadSubjectError):
        impl.append_sub(buf, subject, "q", 1)
    with pytest.raises(BadSubjectError):
        impl.append_pub(buf, subject, None, b"x")
    with pytest.raises(BadSubjectError):
        impl.append_hpub(buf, subject, None, b"NATS/1.0\r\n\r\n", b"x")
    outbox = impl.Outbox()
    outbox.connected = True  # the compiled fast path
    for _ in range(2):  # the second time past the outbox's subject cache
        with pytest.raises(BadSubjectError):
            outbox.publish(subject, b"x")
        with pytest.raises(BadSubjectError):
            outbox.append_pub(subject, None, b"x")
    assert buf == b"keep" and outbox.buf == b"" and outbox.out_msgs == 0


def test_a_reply_subject_is_sent_as_it_came(impl):
    """Replies are not checked for wildcards: a requester's reply subject (another
    client's) is answered whatever its tokens look like."""
    buf = bytearray()
    impl.append_pub(buf, "s", "_INBOX.a*b", b"x")
    assert buf == b"PUB s _INBOX.a*b 1\r\nx\r\n"


@pytest.mark.parametrize("subject", WHOLE)
def test_whole_token_wildcards_are_fine(impl, subject):
    assert impl.validate_filter(subject) is None
    buf = bytearray()
    impl.append_sub(buf, subject, None, 7)
    assert buf == b"SUB %s 7\r\n" % subject.encode()
    impl.validate_subject(subject)  # a publish to one is the server's to refuse (pedantic)


def test_filter_keeps_the_subject_rules_and_checks_the_queue(impl):
    for bad in ("", "a b", "a..b", ".a", "a.", "a\x00", None, 5):
        with pytest.raises(BadSubjectError):
            impl.validate_filter(bad)
    for queue in ("a b", "q\t", "\x00", "q\u3000", 5):
        with pytest.raises(BadSubjectError):
            impl.validate_filter("a", queue)
    impl.validate_filter("a", None)
    impl.validate_filter("a", "")  # no queue
    impl.validate_filter("a", "workers.v1")


def test_misplaced_wildcard_in_surrogate_escaped_subject(impl):
    subject = b"\xff.a*".decode("utf-8", "surrogateescape")
    with pytest.raises(BadSubjectError):
        impl.validate_filter(subject)
    impl.validate_filter(b"\xff.*".decode("utf-8", "surrogateescape"))


def test_both_implementations_agree(all_impls):
    for subject in MISPLACED + WHOLE + ["a b", "a..b", ""]:
        results = set()
        for mod in all_impls.values():
            for check in (mod.validate_filter, mod.validate_subject):
                try:
                    check(subject)
                    results.add("ok")
                except BadSubjectError as exc:
                    results.add(str(exc))
        assert len(results) == 1, (subject, results)


@pytest.mark.parametrize("data", BAD_DATA, ids=lambda d: type(d).__name__)
def test_payload_that_is_not_bytes_like(impl, data):
    buf = bytearray(b"keep")
    with pytest.raises(TypeError, match=DATA_TEXT):
        impl.append_pub(buf, "s", None, data)
    with pytest.raises(TypeError, match=DATA_TEXT):
        impl.append_hpub(buf, "s", None, b"NATS/1.0\r\n\r\n", data)
    outbox = impl.Outbox()
    with pytest.raises(TypeError, match=DATA_TEXT):
        outbox.append_pub("s", None, data)
    with pytest.raises(TypeError, match=DATA_TEXT):
        outbox.append_hpub("s", None, b"NATS/1.0\r\n\r\n", data)
    assert buf == b"keep" and outbox.buf == b"" and outbox.out_msgs == 0


@pytest.mark.parametrize("data", BAD_DATA, ids=lambda d: type(d).__name__)
def test_message_built_by_hand_needs_bytes_like_data(msg_cls, data):
    with pytest.raises(TypeError, match=DATA_TEXT):
        msg_cls("s", data)
    assert msg_cls("s", bytearray(b"ab")).data == b"ab"
    assert msg_cls("s", memoryview(b"abcd")[::2]).data == b"ac"


def test_one_payload_error_text():
    assert str(payload_type_error(5)) == "data must be bytes, bytearray or memoryview, not int"
    assert str(payload_type_error(None, "value", "str")) == "value must be bytes, bytearray, memoryview or str, not NoneType"


def test_jetstream_filters_and_key_filters():
    for bad in MISPLACED:
        with pytest.raises(BadSubjectError):
            consumer_create_subject("S", "c", ConsumerConfig(filter_subject=bad))
        with pytest.raises(BadSubjectError):
            consumer_create_subject("S", "c", {"filter_subjects": ["ok", bad]})
        with pytest.raises(BadSubjectError):
            validate_filter_subjects([None, "ok.>", bad])
        with pytest.raises(InvalidServiceConfigError):
            check_subject(bad)
    assert consumer_create_subject("S", "c", ConsumerConfig(filter_subject="a.*")) == "CONSUMER.CREATE.S.c.a.*"
    validate_filter_subjects([None, "", "a.*", "b.>"])
    for bad in ("a*", "a.b>", "*a.b", "a.*b", "**"):
        with pytest.raises(InvalidKeyError):
            validate_key_filter(bad)


def test_inbox_prefix_without_wildcards():
    for prefix in ("_I.>", "_I.*", "a*", "a b", "", "a..b"):
        with pytest.raises(BadSubjectError):
            make_options(None, {"inbox_prefix": prefix})
    assert make_options(None, {"inbox_prefix": "_MY.inbox"}).inbox_prefix == "_MY.inbox"


KEEP = [  # nats-server answers these and goes on
    ("Invalid Subject", BadSubjectError),
    ("Invalid Publish Subject", BadSubjectError),
    ("Invalid Subscription", BadSubjectError),
    ("maximum subscriptions exceeded", MaxSubscriptionsError),
    ('Permissions Violation for Subscription to "x"', PermissionsError),
    ('Permissions Violation for Publish to "x"', PermissionsError),
]
END = [  # nats-server closes the connection after these
    ("Authorization Violation", AuthorizationError),
    ("User Authentication Expired", AuthorizationError),
    ("Stale Connection", StaleConnectionError),
    ("Maximum Payload Violation", ProtocolError),
    ("maximum connections exceeded", ProtocolError),
    ("Unknown Protocol Operation", ProtocolError),
    ("Secure Connection - TLS Required", ProtocolError),
    ("Parser Error", ProtocolError),
    ("Invalid Client Protocol", ProtocolError),
]


def test_which_server_errors_end_the_connection():
    core = ConnectionCore(make_options(None, {}))
    for text, cls in KEEP:
        ev = core.server_error(text)
        assert isinstance(ev.error, cls) and not ev.fatal, text
        assert text in str(ev.error)
        assert core.last_error is None
    for text, cls in END:
        ev = core.server_error(text)
        assert isinstance(ev.error, cls) and ev.fatal, text
