"""Key-value and object-store models: stream config mapping, entries, status, ObjectInfo JSON."""
from __future__ import annotations

import base64
import hashlib
from datetime import UTC, datetime

import orjson
import pytest

from jetwire.errors import BadObjectMetaError, HistoryTooLargeError, InvalidBucketNameError
from jetwire.jetstream.kv_models import (
    KeyValueConfig,
    KeyValueEntry,
    KeyValueOp,
    KeyValueStatus,
    kv_bucket_from_stream,
    kv_stream_config,
    kv_stream_name,
    kv_subject_prefix,
)
from jetwire.jetstream.models import (
    DiscardPolicy,
    ExternalStream,
    Placement,
    RePublish,
    StorageType,
    StoreCompression,
    StreamInfo,
    StreamSource,
    SubjectTransformConfig,
)
from jetwire.jetstream.obj_models import (
    ObjectInfo,
    ObjectLink,
    ObjectMeta,
    ObjectStoreConfig,
    ObjectStoreStatus,
    encode_object_name,
    obj_chunk_subject,
    obj_digest,
    obj_meta_subject,
    obj_stream_config,
)
from jetwire.jetstream.validate import validate_object_name

UTC = UTC

# ---------------------------------------------------------------------------------
# KV: bucket -> stream


def test_kv_minimal_bucket():
    sc = kv_stream_config(KeyValueConfig(bucket="profiles"))
    assert sc.name == "KV_profiles" and sc.subjects == ["$KV.profiles.>"]
    assert sc.max_msgs_per_subject == 1 and sc.discard is DiscardPolicy.NEW
    assert sc.allow_rollup_hdrs and sc.deny_delete and sc.allow_direct and not sc.mirror_direct
    assert sc.duplicate_window == 120.0 and sc.max_age == 0.0
    assert sc.max_bytes == -1 and sc.max_msg_size == -1 and sc.max_msgs == -1 and sc.max_consumers == -1
    assert sc.storage is StorageType.FILE and sc.num_replicas == 1
    assert sc.compression is StoreCompression.NONE
    assert not sc.allow_msg_ttl and sc.subject_delete_marker_ttl is None
    assert sc.to_json_dict() == {
        "name": "KV_profiles", "subjects": ["$KV.profiles.>"], "discard": "new", "max_msgs_per_subject": 1,
        "duplicate_window": 120_000_000_000, "deny_delete": True, "allow_rollup_hdrs": True, "allow_direct": True}


def test_kv_full_bucket():
    cfg = KeyValueConfig(bucket="b", description="d", max_value_size=1024, history=10, ttl=60.0, max_bytes=1 << 20,
                         storage="memory", replicas=3, placement=Placement(cluster="c"),
                         republish=RePublish(src=">", dest="r.>"), compression=True, limit_marker_ttl=5.0,
                         metadata={"k": "v"})
    sc = kv_stream_config(cfg)
    assert sc.description == "d" and sc.max_msg_size == 1024 and sc.max_msgs_per_subject == 10
    assert sc.max_age == 60.0 and sc.duplicate_window == 60.0  # min(ttl, 2m)
    assert sc.max_bytes == 1 << 20 and sc.storage is StorageType.MEMORY and sc.num_replicas == 3
    assert sc.placement == Placement(cluster="c") and sc.placement is not cfg.placement
    assert sc.republish == RePublish(src=">", dest="r.>")
    assert sc.compression is StoreCompression.S2
    assert sc.allow_msg_ttl is True and sc.subject_delete_marker_ttl == 5.0
    assert sc.metadata == {"k": "v"}
    d = sc.to_json_dict()
    assert d["max_age"] == 60_000_000_000 and d["duplicate_window"] == 60_000_000_000
    assert d["subject_delete_marker_ttl"] == 5_000_000_000 and d["compression"] == "s2"
    assert kv_stream_config(KeyValueConfig(bucket="b", ttl=3600)).duplicate_window == 120.0


@pytest.mark.parametrize("history", [1, 2, 64])
def test_kv_history_ok(history):
    assert kv_stream_config(KeyValueConfig(bucket="b", history=history)).max_msgs_per_subject == history


def test_kv_history_zero_means_default():
    assert kv_stream_config(KeyValueConfig(bucket="b", history=0)).max_msgs_per_subject == 1


@pytest.mark.parametrize("history", [65, 100, -1])
def test_kv_history_too_large(history):
    with pytest.raises(HistoryTooLargeError):
        kv_stream_config(KeyValueConfig(bucket="b", history=history))


@pytest.mark.parametrize("bucket", ["", "a.b", "a b", "a*", "a>", None, "ké"])
def test_kv_bad_bucket(bucket):
    with pytest.raises(InvalidBucketNameError):
        kv_stream_config(KeyValueConfig(bucket=bucket))


def test_kv_mirror():
    cfg = KeyValueConfig(bucket="copy", mirror=StreamSource(name="origin", domain="hub"))
    sc = kv_stream_config(cfg)
    assert sc.mirror.name == "KV_origin" and sc.mirror_direct is True and sc.subjects is None
    assert cfg.mirror.name == "origin"  # the caller's config is not changed
    assert sc.to_json_dict()["mirror"] == {"name": "KV_origin", "external": {"api": "$JS.hub.API"}}
    assert kv_stream_config(KeyValueConfig(bucket="c", mirror=StreamSource(name="KV_o"))).mirror.name == "KV_o"


def test_kv_sources():
    cfg = KeyValueConfig(bucket="agg", sources=[
        StreamSource(name="a"),
        StreamSource(name="KV_b"),
        StreamSource(name="agg", external=ExternalStream(api="$JS.leaf.API")),
        StreamSource(name="RAW", subject_transforms=[SubjectTransformConfig("raw.>", "$KV.agg.>")]),
    ])
    sc = kv_stream_config(cfg)
    assert sc.subjects == ["$KV.agg.>"]
    s = sc.sources
    assert s[0].name == "KV_a" and s[0].subject_transforms == [SubjectTransformConfig("$KV.a.>", "$KV.agg.>")]
    assert s[1].name == "KV_b" and s[1].subject_transforms == [SubjectTransformConfig("$KV.b.>", "$KV.agg.>")]
    # same bucket name in another domain: no transform needed
    assert s[2].name == "KV_agg" and s[2].subject_transforms is None
    assert s[3].name == "RAW" and s[3].subject_transforms == [SubjectTransformConfig("raw.>", "$KV.agg.>")]
    assert cfg.sources[0].name == "a" and cfg.sources[0].subject_transforms is None


def test_kv_names():
    assert kv_stream_name("b") == "KV_b" and kv_subject_prefix("b") == "$KV.b."
    assert kv_bucket_from_stream("KV_b") == "b"


def test_kv_config_from_kwargs_style():
    cfg = KeyValueConfig(bucket="b", storage="memory", ttl=1.5)
    assert cfg.storage is StorageType.MEMORY
    assert cfg.to_json_dict() == {"bucket": "b", "ttl": 1_500_000_000, "storage": "memory"}
    assert KeyValueConfig.from_json(cfg.to_json_dict()) == cfg


# ---------------------------------------------------------------------------------
# KV entries and status


def test_kv_entry():
    t = datetime(2024, 1, 2, tzinfo=UTC)
    e = KeyValueEntry("b", "k", b"v", 3, t)
    assert e.operation is KeyValueOp.PUT and e.delta == 0
    d = KeyValueEntry(bucket="b", key="k", value=b"", revision=4, created=t, delta=1, operation="DEL")
    assert d.operation is KeyValueOp.DEL and d.operation == "DEL"
    assert KeyValueOp("PURGE") is KeyValueOp.PURGE and str(KeyValueOp.PUT) == "PUT"


def kv_stream_info() -> StreamInfo:
    return StreamInfo.from_json({
        "config": {"name": "KV_b", "subjects": ["$KV.b.>"], "retention": "limits", "max_consumers": -1,
                   "max_msgs": -1, "max_bytes": -1, "max_age": 3600000000000, "max_msgs_per_subject": 5,
                   "max_msg_size": 4096, "discard": "new", "storage": "memory", "num_replicas": 3,
                   "duplicate_window": 120000000000, "compression": "s2", "allow_direct": True,
                   "mirror_direct": False, "deny_delete": True, "allow_rollup_hdrs": True, "allow_msg_ttl": True,
                   "subject_delete_marker_ttl": 5000000000, "description": "bucket b",
                   "metadata": {"x": "y"}, "consumer_limits": {}},
        "created": "2024-01-02T03:04:05.123456789Z",
        "state": {"messages": 12, "bytes": 3456, "first_seq": 1, "first_ts": "2024-01-02T03:04:05Z",
                  "last_seq": 12, "last_ts": "2024-01-02T03:04:06Z", "consumer_count": 0},
        "ts": "2024-01-02T03:04:07Z",
    })


def test_kv_status():
    info = kv_stream_info()
    st = KeyValueStatus(info)
    assert st.bucket == "b" and st.values == 12 and st.history == 5 and st.ttl == 3600.0
    assert st.bytes == 3456 and st.size == 3456 and st.backing_store == "JetStream"
    assert st.is_compressed is True and st.limit_marker_ttl == 5.0 and st.stream_info is info
    assert st.metadata == {"x": "y"} and st.description == "bucket b"
    assert st.storage is StorageType.MEMORY and st.replicas == 3
    cfg = st.config
    assert (cfg.bucket, cfg.history, cfg.ttl, cfg.max_value_size, cfg.replicas, cfg.compression) == (
        "b", 5, 3600.0, 4096, 3, True)
    assert kv_stream_config(cfg).to_json_dict()["max_msgs_per_subject"] == 5
    assert "bucket='b'" in repr(st)
    assert KeyValueStatus(info, bucket="other").bucket == "other"


# ---------------------------------------------------------------------------------
# object store: bucket -> stream


def test_obj_stream_config():
    sc = obj_stream_config(ObjectStoreConfig(bucket="files"))
    assert sc.to_json_dict() == {
        "name": "OBJ_files", "subjects": ["$O.files.C.>", "$O.files.M.>"], "discard": "new",
        "allow_rollup_hdrs": True, "allow_direct": True}
    sc = obj_stream_config(ObjectStoreConfig(bucket="f", description="d", ttl=10.5, max_bytes=100, storage="memory",
                                             replicas=3, placement=Placement(tags=["t"]), compression=True,
                                             metadata={"a": "b"}))
    assert sc.max_age == 10.5 and sc.max_bytes == 100 and sc.storage is StorageType.MEMORY
    assert sc.num_replicas == 3 and sc.placement.tags == ["t"] and sc.compression is StoreCompression.S2
    assert sc.metadata == {"a": "b"} and sc.description == "d"
    assert sc.to_json_dict()["max_age"] == 10_500_000_000
    with pytest.raises(InvalidBucketNameError):
        obj_stream_config(ObjectStoreConfig(bucket="no.dots"))


def test_obj_subjects_and_digest():
    assert obj_chunk_subject("b", "NUID") == "$O.b.C.NUID"
    assert obj_meta_subject("b", "dir/file.txt") == "$O.b.M." + base64.urlsafe_b64encode(b"dir/file.txt").decode()
    assert encode_object_name("a") == "YQ=="
    d = obj_digest(hashlib.sha256(b"hello").digest())
    assert d == "SHA-256=LPJNul-wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ="


# ---------------------------------------------------------------------------------
# ObjectInfo JSON (nats.go layout)


def object_info_json() -> dict:
    return {
        "name": "report.pdf",
        "description": "quarterly",
        "headers": {"Content-Type": ["application/pdf"], "X-Tag": ["a", "b"]},
        "metadata": {"owner": "me"},
        "options": {"max_chunk_size": 131072},
        "bucket": "files",
        "nuid": "Wk4M5v9DQxNoAaGbYxBT0q",
        "size": 400000,
        "mtime": "2024-01-02T03:04:05.123456789Z",
        "chunks": 4,
        "digest": "SHA-256=LPJNul-wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ=",
    }


def test_object_info_from_json():
    info = ObjectInfo.from_json(object_info_json())
    assert info.name == "report.pdf" and info.description == "quarterly" and info.metadata == {"owner": "me"}
    assert info.headers["Content-Type"] == "application/pdf" and info.headers.get_all("X-Tag") == ["a", "b"]
    assert type(info.headers).__name__ == "Headers"
    assert info.max_chunk_size == 131072 and info.link is None and info.deleted is False
    assert info.bucket == "files" and info.size == 400000 and info.chunks == 4
    assert info.mtime == datetime(2024, 1, 2, 3, 4, 5, 123456, UTC) and info.mtime.nanosecond == 789
    assert info.digest.startswith("SHA-256=")
    assert info.to_json_dict() == object_info_json()
    assert isinstance(info, ObjectMeta) and info.meta == ObjectMeta(
        "report.pdf", "quarterly", info.headers, {"owner": "me"}, 131072)


def test_object_info_link_and_deleted_layout():
    info = ObjectInfo(name="lnk", bucket="files", nuid="N1", mtime=datetime(2024, 1, 2, tzinfo=UTC),
                      link=ObjectLink(bucket="other", name="target"), deleted=True)
    d = info.to_json_dict()
    assert d == {"name": "lnk", "bucket": "files", "nuid": "N1", "size": 0,
                 "mtime": "2024-01-02T00:00:00.000000000Z", "chunks": 0, "deleted": True,
                 "options": {"link": {"bucket": "other", "name": "target"}}}
    back = ObjectInfo.from_json(orjson.loads(orjson.dumps(d)))
    assert back == info and back.is_link and back.link == ObjectLink("other", "target")
    bucket_link = ObjectInfo(name="dir", bucket="files", link=ObjectLink("other"))
    assert bucket_link.to_json_dict()["options"] == {"link": {"bucket": "other"}}


def test_object_info_unknown_fields_and_options_survive():
    raw = {"name": "x", "bucket": "b", "nuid": "n", "size": 1, "mtime": "2024-01-02T03:04:05Z", "chunks": 1,
           "digest": "SHA-256=abc", "options": {"max_chunk_size": 10, "compress": "zstd"}, "new_field": [1]}
    info = ObjectInfo.from_json(raw)
    assert info.max_chunk_size == 10 and info._extra == {"options": {"compress": "zstd"}, "new_field": [1]}
    out = info.to_json_dict()
    assert out["options"] == {"compress": "zstd", "max_chunk_size": 10} and out["new_field"] == [1]
    assert ObjectInfo.from_json(out) == info


def test_object_meta_json_and_dict_headers():
    meta = ObjectMeta("a.txt", headers={"K": "v", "M": ["1", "2"]}, max_chunk_size=1024)
    assert meta.to_json_dict() == {"name": "a.txt", "headers": {"K": ["v"], "M": ["1", "2"]},
                                   "options": {"max_chunk_size": 1024}}
    assert ObjectMeta("b").to_json_dict() == {"name": "b"}


def test_object_name_validation():
    assert validate_object_name("any name/with.dots") == "any name/with.dots"
    for bad in ("", None, 3):
        with pytest.raises(BadObjectMetaError):
            validate_object_name(bad)


def test_object_store_status():
    info = StreamInfo.from_json({
        "config": {"name": "OBJ_files", "subjects": ["$O.files.C.>", "$O.files.M.>"], "max_age": 60000000000,
                   "storage": "file", "num_replicas": 1, "sealed": True, "compression": "s2",
                   "description": "my files", "metadata": {"m": "1"}},
        "created": "2024-01-02T03:04:05Z",
        "state": {"messages": 3, "bytes": 999, "first_seq": 1, "last_seq": 3, "consumer_count": 0},
    })
    st = ObjectStoreStatus(info)
    assert st.bucket == "files" and st.description == "my files" and st.ttl == 60.0
    assert st.storage is StorageType.FILE and st.replicas == 1 and st.sealed is True
    assert st.size == 999 and st.backing_store == "JetStream" and st.metadata == {"m": "1"}
    assert st.is_compressed is True and st.stream_info is info
    assert "files" in repr(st)
