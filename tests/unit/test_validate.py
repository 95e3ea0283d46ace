"""Name, bucket and key validation (accept/reject tables)."""
from __future__ import annotations

import pytest

from jetwire.errors import InvalidBucketNameError, InvalidConsumerNameError, InvalidKeyError, InvalidStreamNameError
from jetwire.jetstream.validate import (
    is_valid_bucket_name,
    is_valid_key,
    is_valid_key_filter,
    is_valid_stream_name,
    validate_bucket_name,
    validate_consumer_name,
    validate_durable_name,
    validate_key,
    validate_key_filter,
    validate_stream_name,
)

GOOD_NAMES = ["ORDERS", "orders", "a", "KV_bucket", "OBJ_x", "with-dash_under", "ünïcode", "x" * 255, "a:b", "a=b",
              "tab$", "#1"]
BAD_NAMES = ["", "a.b", "a*", "a>", "a/b", "a\\b", "a b", " ", "a\tb", "a\nb", "a\rb", "a\x00b", "a\x7fb",
             "a\u200bb", "a\u00a0b", "x" * 256, "é" * 128, ".", ">", "*"]


@pytest.mark.parametrize("name", GOOD_NAMES)
def test_stream_and_consumer_names_ok(name):
    assert validate_stream_name(name) == name
    assert validate_consumer_name(name) == name
    assert validate_durable_name(name) == name
    assert is_valid_stream_name(name)


@pytest.mark.parametrize("name", BAD_NAMES)
def test_stream_and_consumer_names_rejected(name):
    with pytest.raises(InvalidStreamNameError):
        validate_stream_name(name)
    with pytest.raises(InvalidConsumerNameError):
        validate_consumer_name(name)
    assert not is_valid_stream_name(name)


@pytest.mark.parametrize("name", [None, 5, b"bytes"])
def test_names_must_be_str(name):
    with pytest.raises(InvalidStreamNameError):
        validate_stream_name(name)


def test_name_errors_are_value_errors():
    with pytest.raises(ValueError, match="'a.b'"):
        validate_stream_name("a.b")


@pytest.mark.parametrize("bucket", ["b", "Bucket_1", "my-bucket", "A1_b-2", "_", "-"])
def test_buckets_ok(bucket):
    assert validate_bucket_name(bucket) == bucket and is_valid_bucket_name(bucket)


@pytest.mark.parametrize("bucket", ["", "a.b", "a b", "a*", "a>", "a/b", "ké", "a\n", "a=b", None, 1])
def test_buckets_rejected(bucket):
    with pytest.raises(InvalidBucketNameError):
        validate_bucket_name(bucket)
    assert not is_valid_bucket_name(bucket)


GOOD_KEYS = ["k", "key", "a.b.c", "a-b_c/d=e", "A1", "=", "/", "_kv_reserved", "x" * 1000, "1.2.3"]
BAD_KEYS = ["", ".a", "a.", "a..b", ".", "a b", "a*", "a>", "*", ">", "a\n", "k\u00e9", "a:b", "a\\b", "a\tb",
            "a,b", None, 3]


@pytest.mark.parametrize("key", GOOD_KEYS)
def test_keys_ok(key):
    assert validate_key(key) == key and is_valid_key(key)


@pytest.mark.parametrize("key", BAD_KEYS)
def test_keys_rejected(key):
    with pytest.raises(InvalidKeyError):
        validate_key(key)
    assert not is_valid_key(key)


GOOD_FILTERS = ["k", "a.b", ">", "*", "a.*", "a.>", "a.*.c", "*.*", "a.*.>", "a-b/c=d.*"]
BAD_FILTERS = ["", ".>", "a.", ".a", "a..b", "a.>.b", "> ", "a b", "a\n", "a.>>", None]


@pytest.mark.parametrize("key", GOOD_FILTERS)
def test_key_filters_ok(key):
    assert validate_key_filter(key) == key and is_valid_key_filter(key)


@pytest.mark.parametrize("key", BAD_FILTERS)
def test_key_filters_rejected(key):
    with pytest.raises(InvalidKeyError):
        validate_key_filter(key)
    assert not is_valid_key_filter(key)
