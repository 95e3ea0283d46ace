"""Option parsing for the ``jetstream`` data source.

Spark hands a data source its options as strings (keys case-insensitive). Everything
here turns them into plain Python values once, on the driver, so that what gets
pickled to the executors is a small dict of strings, ints, floats and bools. The
connection itself (and any ``ssl.SSLContext``) is only ever built inside a task.
"""
from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Literal

from .. import _units
from .._redact import option_repr

__all__ = [
    "OptionError",
    "ReadOptions",
    "WriteOptions",
    "check_option_names",
    "connect_kwargs",
    "lower_options",
    "parse_bool",
    "parse_duration",
]

DEFAULT_SERVERS = "nats://127.0.0.1:4222"
DEFAULT_FETCH_BATCH = 20_000
DEFAULT_FETCH_MAX_BYTES = 8 * 1024 * 1024
MAX_FETCH_BYTES = 1024 * 1024 * 1024  # a fetch's columns are held with 32-bit offsets
DEFAULT_FETCH_TIMEOUT = 10.0
DEFAULT_MAX_PER_PARTITION = 50_000
DEFAULT_MAX_PENDING_ACKS = 512
DEFAULT_ACK_TIMEOUT = 30.0


class OptionError(ValueError):
    """A ``jetstream`` data source option is missing or invalid."""


#: where options are given: spark.read, spark.readStream, df.write, df.writeStream
Kind = Literal["read", "readStream", "write", "writeStream"]

_KIND_TEXT: dict[str, str] = {
    "read": "a batch read (spark.read)",
    "readStream": "a streaming read (spark.readStream)",
    "write": "a batch write (df.write)",
    "writeStream": "a streaming write (df.writeStream)",
}

# every option name as documented (docs/guide/spark.md), by where it applies; the
# connection's are shared by readers and writers
_CONNECT_NAMES = ("servers", "user", "password", "token", "creds", "nkeySeed", "tls", "tlsCa", "tlsCert", "tlsKey",
                  "tlsHostname", "tlsHandshakeFirst", "connectTimeout", "name", "domain", "apiPrefix")
_READ_NAMES = ("stream", "subject", "numPartitions", "maxMessagesPerPartition", "fetchBatch", "fetchMaxBytes",
               "fetchTimeout", "readMode")
_BATCH_READ_NAMES = ("startSequence", "endSequence", "startTime")
_STREAM_READ_NAMES = ("startingOffsets", "startingTimestamp", "maxMessagesPerTrigger", "failOnDataLoss")
_WRITE_NAMES = ("subject", "maxPendingAcks", "ackTimeout", "msgIdColumn", "msgIdPrefix", "stream", "expectedStream")
_STREAM_WRITE_NAMES = ("commitBucket",)
# what Spark itself adds to a streaming sink's options (DataStreamWriter: the checkpoint
# option and queryName(); checked on Spark 4.3). A path is only ever the caller's own
# load(path) / save(path) / start(path), refused below: a stream is not a path.
_SPARK_STREAM_WRITE_NAMES = ("checkpointLocation", "queryName")

_NAMES: dict[str, tuple[str, ...]] = {
    "read": _CONNECT_NAMES + _READ_NAMES + _BATCH_READ_NAMES,
    "readStream": _CONNECT_NAMES + _READ_NAMES + _STREAM_READ_NAMES,
    "write": _CONNECT_NAMES + _WRITE_NAMES,
    "writeStream": _CONNECT_NAMES + _WRITE_NAMES + _STREAM_WRITE_NAMES + _SPARK_STREAM_WRITE_NAMES,
}
_CANONICAL = {n.lower(): n for names in _NAMES.values() for n in names}

# other sources' names for what this one calls otherwise (Kafka's): the did-you-mean
_ALIASES: dict[str, dict[str, str]] = {
    "read": {"endingoffsets": "endSequence"},
    "readStream": {"endingoffsets": "startingOffsets"},
}
for _k in _NAMES:
    _ALIASES.setdefault(_k, {}).update({"kafka.bootstrap.servers": "servers", "subscribe": "stream",
                                        "topic": "subject"})

# why an option of another kind does not apply here
_WHY: dict[tuple[str, str], str] = {
    ("read", "readStream"): "a batch read is bounded by startSequence, endSequence and startTime",
    ("readStream", "read"): "a streaming read starts at startingOffsets or startingTimestamp and has no end",
    ("write", "writeStream"): "a batch write has no micro-batch ids to commit; use msgIdColumn to make a "
                              "re-run idempotent",
}


def _unknown(keys: list[str], allowed: set[str], aliases: Mapping[str, str], where: str,
             known: Mapping[str, str] | set[str] = _CANONICAL) -> None:
    """Refuse the first of ``keys`` not in ``known``, naming the nearest of ``allowed``."""
    unknown = [k for k in keys if k not in known]
    if not unknown:
        return
    key = unknown[0]
    near = aliases.get(key) or next(iter(difflib.get_close_matches(key, sorted(allowed), n=1)), None)
    hint = f"; did you mean {_CANONICAL.get(near.lower(), near)!r}?" if near else ""
    more = f" (also unknown: {', '.join(repr(k) for k in unknown[1:])})" if unknown[1:] else ""
    raise OptionError(f"unknown option {key!r} for {where}{more}{hint} (the options are listed in "
                      "docs/guide/spark.md)")


def check_option_names(options: Mapping[str, Any], kind: Kind) -> None:
    """Refuse an option this source does not know (naming the nearest known one) or one
    that belongs to another kind of read or write (e.g. ``endSequence`` on a streaming
    read, Kafka's ``startingOffsets`` on a batch read): silently ignoring it would read
    or write something else than what was asked."""
    where = _KIND_TEXT[kind]
    allowed = {n.lower() for n in _NAMES[kind]}
    keys = sorted(str(k).lower() for k in options)
    if "path" in keys or "paths" in keys:
        raise OptionError(f"{where} with format('jetstream') takes no path (load(path), save(path) or "
                          "start(path)): name the stream with option('stream', ...)"
                          + ("" if kind.startswith("read") else " and give each row a 'subject' column or "
                             "set option('subject', ...)"))
    _unknown(keys, allowed, _ALIASES[kind], where)
    for key in keys:
        if key in allowed:
            continue
        name = _CANONICAL[key]
        home = next(k for k in _NAMES if k != kind and key in {n.lower() for n in _NAMES[k]})
        if name == "commitBucket":
            raise OptionError(f"option 'commitBucket' is for streaming writes (writeStream): {_WHY[(kind, home)]}")
        why = _WHY.get((kind, home)) or f"it has no meaning for {where.split(' (')[0]}"
        raise OptionError(f"option {name!r} is for {_KIND_TEXT[home]}, not {where}: {why}")


def _check_names(o: dict[str, str], kind: Kind | None, kinds: tuple[Kind, Kind]) -> None:
    """``check_option_names`` for ``kind``; without one, only unknown names (those of
    neither of ``kinds``) are refused."""
    if kind is None:
        allowed = {n.lower() for k in kinds for n in _NAMES[k]}
        _unknown(sorted(o), allowed, {}, "a reader" if kinds[0] == "read" else "a writer", allowed)
        return
    if kind not in kinds:
        raise ValueError(f"kind must be one of {kinds}, not {kind!r}")
    check_option_names(o, kind)


def lower_options(options: Mapping[str, Any] | None) -> dict[str, str]:
    """A plain ``dict`` with lower-cased keys (Spark's own options are case-insensitive)."""
    out: dict[str, str] = {}
    if options:
        for k, v in dict(options).items():
            if v is None:
                continue
            out[str(k).lower()] = v if isinstance(v, str) else str(v)
    return out


def parse_bool(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    s = str(value).strip().lower()
    if s in ("true", "1", "yes", "on"):
        return True
    if s in ("false", "0", "no", "off", ""):
        return False
    raise OptionError(f"option {name!r} must be true or false, not {value!r}")


def parse_int(value: Any, name: str, minimum: int | None = None) -> int:
    try:
        n = int(str(value).strip().replace("_", ""))
    except ValueError:
        raise OptionError(f"option {name!r} must be an integer, not {value!r}") from None
    if minimum is not None and n < minimum:
        raise OptionError(f"option {name!r} must be at least {minimum}, not {n}")
    return n


def parse_size_option(value: Any, name: str, maximum: int) -> int:
    """Bytes (1 to ``maximum``) from option ``name``'s size: ``"8388608"``, ``"8MiB"``,
    ``"512k"`` (the one grammar, ``_units.parse_size``)."""
    try:
        n = _units.parse_size(value)
    except ValueError:
        raise OptionError(f"option {name!r} must be a size in bytes (for example 8MiB), not {value!r}") from None
    if not 1 <= n <= maximum:
        raise OptionError(f"option {name!r} must be between 1 byte and {maximum} bytes, not {value!r}")
    return n


def parse_duration(value: Any, name: str) -> float:
    """Seconds (positive) from option ``name``'s duration: ``"2.5"``, ``"2.5s"``,
    ``"500ms"``, ``"1m30s"``, ``"1h"`` (the one grammar, ``_units.parse_duration``)."""
    try:
        secs = _units.parse_duration(value)
    except ValueError:
        raise OptionError(f"option {name!r} must be a duration such as 10, 10s, 500ms or 1m30s, "
                          f"not {value!r}") from None
    if not 0 < secs < math.inf:
        raise OptionError(f"option {name!r} must be positive, not {value!r}")
    return secs


def _connect_options(o: dict[str, str]) -> dict[str, Any]:
    """The connection part of the options, validated, as plain picklable values."""
    c: dict[str, Any] = {"servers": o.get("servers") or DEFAULT_SERVERS}
    for key in ("user", "password", "token", "creds", "tlsca", "tlscert", "tlskey", "tlshostname", "domain",
                "apiprefix"):
        if o.get(key):
            c[key] = o[key]
    if o.get("nkeyseed"):
        c["nkeyseed"] = o["nkeyseed"]
    if "tls" in o:
        c["tls"] = parse_bool(o["tls"], "tls")
    if "tlshandshakefirst" in o:
        c["tlshandshakefirst"] = parse_bool(o["tlshandshakefirst"], "tlsHandshakeFirst")
    if "connecttimeout" in o:
        c["connecttimeout"] = parse_duration(o["connecttimeout"], "connectTimeout")
    c["name"] = o.get("name") or "jetwire-spark"
    if c.get("domain") and c.get("apiprefix"):
        raise OptionError("give option 'domain' or 'apiPrefix', not both")
    if ("tlscert" in c) != ("tlskey" in c):
        raise OptionError("options 'tlsCert' and 'tlsKey' go together")
    return c


def connect_kwargs(c: Mapping[str, Any]) -> dict[str, Any]:
    """``jetwire.connect()`` keyword arguments from parsed connection options (called in
    the task; TLS goes as files, ``connect()`` builds the context)."""
    kw: dict[str, Any] = {"servers": c["servers"], "name": c.get("name") or "jetwire-spark"}
    for src, dst in (("user", "user"), ("password", "password"), ("token", "token"), ("creds", "creds"),
                     ("nkeyseed", "nkey_seed"), ("tlshostname", "tls_hostname")):
        if c.get(src):
            kw[dst] = c[src]
    if c.get("connecttimeout"):
        kw["connect_timeout"] = float(c["connecttimeout"])
    if c.get("tlshandshakefirst"):
        kw["tls_handshake_first"] = True
    if c.get("tls") or c.get("tlsca") or c.get("tlscert"):
        # connect() builds the TLS context from its files (options.Options.ssl_context)
        kw["tls"] = True
        if c.get("tlsca"):
            kw["tls_ca_file"] = c["tlsca"]
        if c.get("tlscert"):
            kw["tls_cert_file"] = c["tlscert"]
            kw["tls_key_file"] = c["tlskey"]
    return kw


def jetstream_kwargs(c: Mapping[str, Any]) -> dict[str, Any]:
    kw: dict[str, Any] = {}
    if c.get("domain"):
        kw["domain"] = c["domain"]
    elif c.get("apiprefix"):
        kw["api_prefix"] = c["apiprefix"]
    return kw


# the options whose values are secrets, by their names in jetwire.connect()
_SECRET_AS = {"nkeyseed": "nkey_seed", "password": "password", "token": "token", "creds": "creds"}


def _shown(values: Mapping[str, Any]) -> str:
    """``key=value, ...`` of a dict of options, secrets masked (servers: URL credentials)."""
    return ", ".join(option_repr(_SECRET_AS.get(k, k), v) for k, v in values.items())


class _Options:
    """The repr of parsed options: no password, token, seed or credentials in it."""

    raw: dict[str, str]
    conn: dict[str, Any]

    def __repr__(self) -> str:
        shown = {k: v for k, v in vars(self).items() if k not in ("raw", "conn")}
        return f"{type(self).__name__}({_shown(shown)}, conn={{{_shown(self.conn)}}})"


def _stream_name(o: dict[str, str]) -> str:
    name = (o.get("stream") or "").strip()
    if not name:
        raise OptionError("option 'stream' is required: .option(\"stream\", \"<stream name>\")")
    from ..jetstream.validate import validate_stream_name

    try:
        validate_stream_name(name)
    except Exception as exc:
        raise OptionError(f"option 'stream': {exc}") from None
    return name


class ReadOptions(_Options):
    """Parsed reader options (batch and streaming). Plain values only: it is pickled.
    ``kind`` (``read`` or ``readStream``) refuses the options of the other kind; without
    it any reader option is taken (an unknown name is always refused)."""

    def __init__(self, options: Mapping[str, Any] | None, kind: Kind | None = None) -> None:
        o = lower_options(options)
        _check_names(o, kind, ("read", "readStream"))
        self.raw = o
        self.conn = _connect_options(o)
        self.stream = _stream_name(o)
        subject = (o.get("subject") or "").strip()
        if subject:
            from .. import _impl

            try:
                _impl.validate_subject(subject)
            except Exception as exc:
                raise OptionError(f"option 'subject': {exc}") from None
        self.subject: str | None = subject or None
        self.start_sequence = parse_int(o["startsequence"], "startSequence", 0) if o.get("startsequence") else None
        self.end_sequence = parse_int(o["endsequence"], "endSequence", 0) if o.get("endsequence") else None
        self.start_time = o.get("starttime") or None
        if self.start_time is not None:
            parse_time(self.start_time, "startTime")
        self.num_partitions = parse_int(o["numpartitions"], "numPartitions", 1) if o.get("numpartitions") else None
        self.max_per_partition = parse_int(o.get("maxmessagesperpartition", DEFAULT_MAX_PER_PARTITION),
                                           "maxMessagesPerPartition", 1)
        self.fetch_batch = parse_int(o.get("fetchbatch", DEFAULT_FETCH_BATCH), "fetchBatch", 1)
        self.fetch_max_bytes = parse_size_option(o.get("fetchmaxbytes", DEFAULT_FETCH_MAX_BYTES), "fetchMaxBytes",
                                                 MAX_FETCH_BYTES)
        self.fetch_timeout = parse_duration(o.get("fetchtimeout", DEFAULT_FETCH_TIMEOUT), "fetchTimeout")
        mode = (o.get("readmode") or "auto").strip().lower()
        if mode not in ("auto", "direct", "consumer"):
            raise OptionError(f"option 'readMode' must be auto, direct or consumer, not {mode!r}")
        self.read_mode = mode
        # streaming
        self.starting_offsets = (o.get("startingoffsets") or "").strip().lower() or None
        if self.starting_offsets not in (None, "earliest", "latest"):
            parse_int(self.starting_offsets, "startingOffsets", 1)  # stream sequences start at 1
        self.starting_timestamp = o.get("startingtimestamp") or None
        if self.starting_timestamp is not None:
            parse_time(self.starting_timestamp, "startingTimestamp")
        self.max_per_trigger = parse_int(o["maxmessagespertrigger"], "maxMessagesPerTrigger", 1) \
            if o.get("maxmessagespertrigger") else None
        self.fail_on_data_loss = parse_bool(o.get("failondataloss", "true"), "failOnDataLoss")


class WriteOptions(_Options):
    """Parsed writer options. Plain values only: it is pickled.

    ``subject``, ``maxPendingAcks``, ``ackTimeout``, ``msgIdColumn``, ``msgIdPrefix``
    (see ``docs/guide/spark.md``) and, for streaming writes only, ``commitBucket``: the
    KV bucket (created on first use) where the driver records each query's last
    committed micro-batch id (key: the query id) after all of the batch's acks; a task of
    a batch at or below it (a replay) publishes nothing, even after the stream's
    duplicate window. Its reads and writes wait at most ``ackTimeout``.
    """

    def __init__(self, options: Mapping[str, Any] | None, kind: Kind | None = None) -> None:
        o = lower_options(options)
        _check_names(o, kind, ("write", "writeStream"))
        self.raw = o
        self.conn = _connect_options(o)
        subject = (o.get("subject") or "").strip() or None
        if subject is not None:
            from .. import _impl

            try:
                _impl.validate_subject(subject)
            except Exception as exc:
                raise OptionError(f"option 'subject': {exc}") from None
            if "*" in subject.split(".") or ">" in subject.split("."):
                raise OptionError("option 'subject' of a writer must not contain wildcards")
        self.subject: str | None = subject
        self.max_pending = parse_int(o.get("maxpendingacks", DEFAULT_MAX_PENDING_ACKS), "maxPendingAcks", 1)
        self.ack_timeout = parse_duration(o.get("acktimeout", DEFAULT_ACK_TIMEOUT), "ackTimeout")
        self.msg_id_column = (o.get("msgidcolumn") or "").strip() or None
        self.msg_id_prefix = o.get("msgidprefix") or None
        if self.msg_id_prefix is not None and any(c < " " or c == "\x7f" for c in self.msg_id_prefix):
            # it becomes a header value: a CR or LF would end it (and inject headers)
            raise OptionError(f"option 'msgIdPrefix' must not contain control characters, not {self.msg_id_prefix!r}")
        if self.msg_id_column and self.msg_id_prefix:
            raise OptionError("give option 'msgIdColumn' or 'msgIdPrefix', not both")
        self.expected_stream = (o.get("expectedstream") or o.get("stream") or "").strip() or None
        self.commit_bucket = (o.get("commitbucket") or "").strip() or None
        if self.commit_bucket is not None:
            from ..jetstream.validate import is_valid_bucket_name

            if not is_valid_bucket_name(self.commit_bucket):
                raise OptionError(f"option 'commitBucket' must be a KV bucket name (A-Z, a-z, 0-9, '_', '-'), "
                                  f"not {self.commit_bucket!r}")


# the last time a server's 64-bit nanosecond timestamps hold (2262-04-11)
_LAST_TIME = datetime(2262, 4, 11, tzinfo=UTC)


def parse_time(value: Any, name: str) -> Any:
    """An aware ``datetime`` from an ISO-8601 / RFC 3339 string (naive means UTC) or from
    epoch milliseconds (an integer string): ``_units.parse_time_input``."""
    try:
        t = _units.parse_time_input(value)
    except (ValueError, OverflowError, OSError):
        raise OptionError(f"option {name!r} must be an ISO-8601 time or epoch milliseconds, not {value!r}") from None
    if t >= _LAST_TIME:  # the server's times are 64-bit nanoseconds: later ones wrap around
        raise OptionError(f"option {name!r} must be before {_LAST_TIME:%Y-%m-%d}, not {value!r}")
    return t
