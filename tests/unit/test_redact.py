"""The one redaction helper: URLs, free text, option reprs, and .creds text recognised."""
from __future__ import annotations

from jetwire._redact import looks_secret, option_repr, redact_text, redact_url, shown
from jetwire.auth import is_creds_text, parse_creds
from jetwire.testing.auth import format_creds, make_operator_auth

SEED = "SUAMLK2ZNL35WSMW37E7UD4VZ7ELPKW7DHC3BWBSD2GCZ7IUQQXZIORRBU"


def test_urls():
    assert redact_url("nats://alice:s3cret@h:4222") == "nats://alice:***@h:4222"
    assert redact_url("nats://t0k@h:4222") == "nats://***@h:4222"
    assert redact_url("nats://h:4222") == "nats://h:4222"
    assert redact_url("ws://a:b@[::1]:80/p@th") == "ws://a:***@[::1]:80/p@th"
    assert redact_url("nats://a:b@h1,nats://c@h2") == "nats://a:***@h1,nats://***@h2"
    # a password holding '/' or '@' (URL parsers read a path or a second host in it)
    assert redact_url("nats://alice:pa/ss@h:1") == "nats://alice:***@h:1"
    assert redact_url("nats://alice:p@ss@h:1/x@y") == "nats://alice:***@h:1/x@y"
    assert redact_url("nats://t/k@h") == "nats://***@h"


def test_text():
    op = make_operator_auth()
    text = f"x nats://alice:s3cret@h:1 y {SEED} {op.user_jwt} {op.creds}"
    out = redact_text(text)
    for secret in ("s3cret", SEED, op.user_jwt, op.user.seed):
        assert secret not in out
    assert "nats://alice:***@h:1" in out
    assert redact_text("connection refused to 127.0.0.1:4222") == "connection refused to 127.0.0.1:4222"
    assert redact_text("bad port in 'nats://alice:pa/ss@h:1'") == "bad port in 'nats://alice:***@h:1'"
    assert redact_text("to nats://alice:p@ss@h:1 failed") == "to nats://alice:***@h:1 failed"


def test_a_url_whose_password_holds_a_slash_is_masked_in_connect_errors():
    import pytest

    import jetwire

    with pytest.raises(ValueError) as err:
        jetwire.connect("nats://alice:pa/ss@127.0.0.1:1", connect_timeout=0.5)
    assert "pa/ss" not in str(err.value) and "alice:***@" in str(err.value)


def test_paths_and_options():
    assert shown("/etc/nats/user.creds") == "'/etc/nats/user.creds'"
    assert shown(SEED) == "<text, not shown>" and looks_secret("a\nb")
    assert option_repr("password", "pw") == "password='***'"
    assert option_repr("creds", "/x.creds") == "creds='/x.creds'"
    assert option_repr("creds", b"bytes") == "creds='***'"
    assert option_repr("servers", ["nats://a:b@h"]) == "servers=['nats://a:***@h']"


def test_creds_text_is_recognised_and_parsed():
    op = make_operator_auth()
    text = format_creds(op.user_jwt, op.user.seed)
    assert is_creds_text(text) and is_creds_text(text.encode()) and not is_creds_text("/x/y.creds")
    for value in (text, text.encode()):
        jwt, seed = parse_creds(value)
        assert jwt == op.user_jwt and bytes(seed) == op.user.seed.encode()


def test_a_password_or_token_holding_a_comma_is_masked():
    assert redact_url("nats://alice:pa,ss@127.0.0.1:4222") == "nats://alice:***@127.0.0.1:4222"
    assert redact_url("nats://to,ken@h:1") == "nats://***@h:1"
    # a list is still split URL by URL (a comma before a scheme)
    assert redact_url("nats://a:b@h1:1,nats://c:d,e@h2:2") == "nats://a:***@h1:1,nats://c:***@h2:2"
    assert option_repr("servers", ["nats://alice:pa,ss@h:1"]) == "servers=['nats://alice:***@h:1']"


def test_a_seed_cut_short_is_never_shown():
    import pytest

    from jetwire.auth import load_seed
    from jetwire.errors import AuthorizationError
    from jetwire.testing.auth import new_nkey

    seed = new_nkey("user").seed
    for bad in (seed[:50], seed.lower()):
        with pytest.raises(AuthorizationError) as err:
            load_seed(bad)
        assert bad[:8] not in str(err.value) and "<text, not shown>" in str(err.value)
    with pytest.raises(AuthorizationError, match="missing.nk"):  # a path is named
        load_seed("/nowhere/missing.nk")
