"""Management helpers: the raw API funnel, templates, load-or-create and ensure for
streams and consumers (asyncio source; the blocking twin is generated)."""
from __future__ import annotations

import importlib
import inspect

import pytest

import jetwire.aio as jetwire
from tests.aio._helpers import uniq

_PREFIX_ACCOUNTS = """
accounts: {
  JS: {
    jetstream: enabled
    users: [{user: js, password: js}]
    exports: [{service: "$JS.API.>"}]
  }
  APP: {
    users: [{user: app, password: app}]
    imports: [{service: {account: JS, subject: "$JS.API.>"}, to: "jsa.API.>"}]
  }
}
"""


class Trace:
    """trace_cb recording the subjects of requests and answers."""

    def __init__(self) -> None:
        self.calls: list = []

    def __call__(self, subject: str, payload: bytes) -> None:
        self.calls.append((subject, payload))


def _params(fn) -> list:
    return [(p.name, p.default if p.default is not inspect.Parameter.empty else "-", p.kind.name)
            for p in inspect.signature(fn).parameters.values() if p.name != "self"]


def test_documented_signatures():
    pkg = jetwire.Client.__module__.rsplit(".", 1)[0]  # this flavour's package
    JetStream = importlib.import_module(f"{pkg}.jetstream").JetStream
    Stream = importlib.import_module(f"{pkg}.stream").Stream
    kw = ("overrides", "-", "VAR_KEYWORD")
    pos = "POSITIONAL_OR_KEYWORD"
    assert _params(JetStream.api_request) == [("subject", "-", pos), ("payload", None, pos), ("timeout", None, pos)]
    assert _params(JetStream.create_stream_from_default) == [("name", "-", pos), ("template", "-", pos), kw]
    for fn in (JetStream.load_or_create_stream, JetStream.ensure_stream):
        assert _params(fn) == [("name", "-", pos), ("template", jetwire.DEFAULT_STREAM, pos), kw]
    assert _params(JetStream.create_consumer_from_default) == [("stream", "-", pos), ("template", "-", pos), kw]
    for fn in (JetStream.load_or_create_consumer, JetStream.ensure_consumer):
        assert _params(fn) == [("stream", "-", pos), ("name", "-", pos), ("template", jetwire.DEFAULT_CONSUMER, pos),
                               kw]
    assert _params(Stream.create_consumer_from_default) == [("template", "-", pos), kw]
    for fn in (Stream.load_or_create_consumer, Stream.ensure_consumer):
        assert _params(fn) == [("name", "-", pos), ("template", jetwire.DEFAULT_CONSUMER, pos), kw]
    assert issubclass(jetwire.ConfigDriftError, jetwire.JetStreamError)
    blocking = importlib.import_module("jetwire")
    errors = importlib.import_module("jetwire.errors")
    assert jetwire.ConfigDriftError is blocking.ConfigDriftError is errors.ConfigDriftError
    for n in ("DEFAULT_STREAM", "DEFAULT_WORK_QUEUE", "DEFAULT_CONSUMER", "SAMPLED_DEFAULT_CONSUMER"):
        assert getattr(jetwire, n) is getattr(blocking, n)
        assert n in blocking.__all__ and n in jetwire.__all__


# --- the raw API ---------------------------------------------------------------------
async def test_api_request_round_trip_and_typed_errors(nats_url):
    trace = Trace()
    async with await jetwire.connect(nats_url) as nc:
        js = nc.jetstream(trace_cb=trace)
        name = uniq("RAW")
        try:
            created = await js.api_request(f"STREAM.CREATE.{name}",
                                           {"name": name, "subjects": [f"{name}.>"], "storage": "memory"})
            assert created["type"] == "io.nats.jetstream.api.v1.stream_create_response"
            assert created["config"]["name"] == name
            assert trace.calls[0][0] == f"$JS.API.STREAM.CREATE.{name}"
            # bytes payloads are sent as they are; None sends an empty body
            info = await js.api_request(f"STREAM.INFO.{name}", b'{"deleted_details": true}')
            assert info["config"]["subjects"] == [f"{name}.>"]
            assert (await js.api_request(f"STREAM.INFO.{name}", None))["state"]["messages"] == 0
            # the typed error of an error answer, with the server's codes
            with pytest.raises(jetwire.StreamNotFoundError) as e:
                await js.api_request(f"STREAM.INFO.{name}_NOPE")
            assert e.value.err_code == 10059 and e.value.code == 404
            with pytest.raises(jetwire.ConsumerNotFoundError):
                await js.api_request(f"CONSUMER.INFO.{name}.nobody")
            with pytest.raises(jetwire.StreamNameInUseError):
                await js.api_request(f"STREAM.CREATE.{name}",
                                     {"name": name, "subjects": [f"{name}.>"], "max_msgs": 5, "storage": "memory"})
            with pytest.raises(jetwire.BadRequestError):
                await js.api_request(f"STREAM.CREATE.{name}", b"{not json")
            # bad input raises before anything is sent
            sent = len(trace.calls)
            with pytest.raises(TypeError):
                await js.api_request("INFO", ["a list"])
            with pytest.raises(ValueError):
                await js.api_request("")
            with pytest.raises(ValueError):
                await js.api_request(f"$JS.API.STREAM.INFO.{name}")  # the prefix is applied, not given
            with pytest.raises(jetwire.BadSubjectError):
                await js.api_request("STREAM.INFO.a b")
            assert len(trace.calls) == sent
        finally:
            await js.delete_stream(name)


async def test_api_request_timeout(fresh_nats_server):
    """The call's timeout wins over the context's (which would outlast the test's limit)."""
    srv = fresh_nats_server
    async with await jetwire.connect(srv.url, ping_interval=60) as nc:
        js = nc.jetstream(timeout=600)
        assert (await js.api_request("INFO", timeout=5))["type"] == "io.nats.jetstream.api.v1.account_info_response"
        srv.freeze()
        try:
            with pytest.raises(jetwire.TimeoutError):
                await js.api_request("INFO", timeout=0.3)
        finally:
            srv.thaw()
        assert "streams" in await js.api_request("INFO", timeout=5)


async def test_management_calls_go_through_api_request(nats_url):
    """Every management call of the context reaches the server through api_request."""
    async with await jetwire.connect(nats_url) as nc:
        js = nc.jetstream()
        seen: list = []
        real = js.api_request

        async def spy(subject, payload=None, timeout=None):
            seen.append(subject.split(".")[0] + "." + subject.split(".")[1] if "." in subject else subject)
            return await real(subject, payload, timeout)

        js.api_request = spy
        name = uniq("FUN")
        await js.account_info()
        s = await js.create_stream(name=name, subjects=[f"{name}.>"], storage="memory")
        await js.update_stream(name=name, subjects=[f"{name}.>"], storage="memory", max_msgs=10)
        await s.info()
        c = await s.create_consumer(durable_name="d")
        await c.info()
        await js.consumer(name, "d")
        assert [n async for n in js.consumer_names(name)] == ["d"]
        await s.delete_consumer("d")
        await s.purge()
        await js.delete_stream(name)
        assert seen == ["INFO", "STREAM.CREATE", "STREAM.UPDATE", "STREAM.INFO", "CONSUMER.CREATE",
                        "CONSUMER.INFO", "CONSUMER.INFO", "CONSUMER.NAMES", "CONSUMER.DELETE",
                        "STREAM.PURGE", "STREAM.DELETE"]


async def test_api_request_domain(nats_server_factory):
    srv = nats_server_factory(domain="hub")
    trace = Trace()
    async with await jetwire.connect(srv.url) as nc:
        js = nc.jetstream(domain="hub", trace_cb=trace)
        info = await js.api_request("INFO")
        assert info["domain"] == "hub"
        assert trace.calls[0][0] == "$JS.hub.API.INFO"
        with pytest.raises(jetwire.StreamNotFoundError) as ei:
            await js.api_request("STREAM.INFO.NOPE")
        assert ei.value.request == "STREAM.INFO.NOPE" and "STREAM.INFO.NOPE" in str(ei.value)  # names the stream
        # a domain nobody serves: no responders, JetStream is not enabled there
        with pytest.raises(jetwire.JetStreamNotEnabledError):
            await nc.jetstream(domain="nowhere", timeout=1).api_request("INFO")


async def test_api_request_prefix(nats_server_factory):
    """An account that imports another account's JetStream API under its own prefix."""
    srv = nats_server_factory(config=_PREFIX_ACCOUNTS)
    host_port = srv.url.split("://", 1)[1]
    trace = Trace()
    async with await jetwire.connect(f"nats://app:app@{host_port}") as nc:
        js = nc.jetstream(api_prefix="jsa.API", trace_cb=trace)
        name = uniq("PFX")
        resp = await js.api_request(f"STREAM.CREATE.{name}", {"name": name, "subjects": [f"{name}.>"],
                                                              "storage": "memory"})
        assert resp["config"]["name"] == name
        assert trace.calls[0][0] == f"jsa.API.STREAM.CREATE.{name}"
        with pytest.raises(jetwire.StreamNotFoundError):
            await js.api_request(f"STREAM.INFO.{name}_NOPE")
        # the default prefix is not imported into this account
        with pytest.raises(jetwire.JetStreamNotEnabledError):
            await nc.jetstream(timeout=1).api_request("INFO")
    async with await jetwire.connect(f"nats://js:js@{host_port}") as nc:
        assert (await nc.jetstream().stream(name)).name == name


# --- templates and declarative management ---------------------------------------------
class Mgmt:
    """A connection whose JetStream context records the API requests it sends, and the
    streams a test made (deleted at exit)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.trace = Trace()
        self.names: list = []

    async def __aenter__(self) -> Mgmt:
        self.nc = await jetwire.connect(self.url)
        self.js = self.nc.jetstream(trace_cb=self.trace)
        return self

    async def __aexit__(self, *exc) -> None:
        try:
            for name in self.names:
                try:
                    await self.js.delete_stream(name)
                except jetwire.StreamNotFoundError:
                    pass
        finally:
            await self.nc.close()

    def name(self) -> str:
        n = uniq("M")
        self.names.append(n)
        return n

    def sent(self) -> list:
        """The API requests sent since the last call (subjects after the prefix)."""
        out = [s[len("$JS.API."):] for s, _ in self.trace.calls if s.startswith("$JS.API.")]
        self.trace.calls.clear()
        return out


def _verbs(subjects: list) -> list:
    return [".".join(s.split(".")[:2]) for s in subjects]


async def test_templates_round_trip_equal(nats_url):
    """A config made from a template compares equal to what the server hands back."""
    from jetwire.jetstream.ensure_core import consumer_drift, stream_drift

    async with Mgmt(nats_url) as m:
        js = m.js
        for template in (jetwire.DEFAULT_STREAM, jetwire.DEFAULT_WORK_QUEUE):
            name = m.name()
            s = await js.create_stream_from_default(name, template, subjects=[f"{name}.>"])
            got = s.cached_info().config
            assert got.retention == template.retention and got.max_age == 365 * 24 * 3600.0
            assert got.storage == jetwire.StorageType.FILE and got.num_replicas == 1
            wanted = jetwire.StreamConfig(**{**vars(template), "name": name, "subjects": [f"{name}.>"],
                                             "_extra": {}})
            assert stream_drift(wanted, got).equal
            assert stream_drift(wanted, (await s.info()).config).equal
            m.sent()
            again = await js.ensure_stream(name, template, subjects=[f"{name}.>"])
            assert _verbs(m.sent()) == ["STREAM.INFO"]  # compared, nothing to change
            assert again.cached_info().created == s.cached_info().created
        # without subjects the server uses the name: still equal
        name = m.name()
        await js.create_stream_from_default(name, jetwire.DEFAULT_STREAM, storage="memory")
        m.sent()
        s = await js.ensure_stream(name, jetwire.DEFAULT_STREAM, storage="memory")
        assert s.cached_info().config.subjects == [name]
        assert _verbs(m.sent()) == ["STREAM.INFO"]
        for template in (jetwire.DEFAULT_CONSUMER, jetwire.SAMPLED_DEFAULT_CONSUMER):
            durable = uniq("d")
            c = await js.create_consumer_from_default(name, template, durable_name=durable)
            info = c.cached_info()
            assert info.config.ack_wait == 30.0 and info.config.ack_policy == jetwire.AckPolicy.EXPLICIT
            assert info.config.sample_freq == template.sample_freq
            assert bool(info.is_sampled) == (template is jetwire.SAMPLED_DEFAULT_CONSUMER)
            assert info.is_pull and info.is_durable and not info.is_push
            assert consumer_drift(jetwire.ConsumerConfig(**{**vars(template), "durable_name": durable,
                                                            "_extra": {}}), info.config).equal
            m.sent()
            await js.ensure_consumer(name, durable, template)
            assert _verbs(m.sent()) == ["CONSUMER.INFO"]
            # ephemeral ones too (the server adds a name and an inactive threshold)
            eph = await js.create_consumer_from_default(name, template)
            assert not eph.cached_info().is_durable
            assert consumer_drift(template, eph.cached_info().config).equal
        assert (await js.consumer(name, durable)).cached_info().config.sample_freq == "100%"


async def test_ensure_stream(nats_url):
    async with Mgmt(nats_url) as m:
        js = m.js
        name = m.name()
        # missing: created from the template
        s = await js.ensure_stream(name, jetwire.DEFAULT_STREAM, subjects=[f"{name}.>"], storage="memory",
                                   max_msgs=100)
        assert _verbs(m.sent()) == ["STREAM.INFO", "STREAM.CREATE"]
        cfg = s.cached_info().config
        assert (cfg.max_msgs, cfg.storage, cfg.max_age) == (100, jetwire.StorageType.MEMORY, 365 * 24 * 3600.0)
        created = s.cached_info().created
        # equal: nothing sent but the lookup
        s = await js.ensure_stream(name, jetwire.DEFAULT_STREAM, subjects=[f"{name}.>"], storage="memory",
                                   max_msgs=100)
        assert _verbs(m.sent()) == ["STREAM.INFO"]
        assert s.cached_info().created == created
        # updatable fields differ: updated in place
        s = await js.ensure_stream(name, jetwire.DEFAULT_STREAM, subjects=[f"{name}.>", f"x{name}.>"],
                                   storage="memory", max_msgs=5, description="orders")
        assert _verbs(m.sent()) == ["STREAM.INFO", "STREAM.UPDATE"]
        cfg = (await js.stream(name)).cached_info().config
        assert (cfg.max_msgs, cfg.description, cfg.subjects) == (5, "orders", [f"{name}.>", f"x{name}.>"])
        assert s.cached_info().config.max_msgs == 5
        assert s.cached_info().created == created
        m.sent()
        # fields that cannot be updated: ConfigDriftError naming them, nothing changed
        with pytest.raises(jetwire.ConfigDriftError) as e:
            await js.ensure_stream(name, jetwire.DEFAULT_STREAM, subjects=[f"{name}.>"], max_msgs=7)
        assert e.value.fields == ["storage"]
        assert isinstance(e.value, jetwire.JetStreamError)
        with pytest.raises(jetwire.ConfigDriftError) as e:
            await js.ensure_stream(name, jetwire.DEFAULT_WORK_QUEUE, subjects=[f"{name}.>"], storage="file")
        assert e.value.fields == ["retention", "storage"]
        assert "max_msgs" in e.value.changes  # differs too, but could be updated
        assert _verbs(m.sent()) == ["STREAM.INFO", "STREAM.INFO"]
        cfg = (await js.stream(name)).cached_info().config
        assert (cfg.max_msgs, cfg.storage, cfg.retention) == (5, jetwire.StorageType.MEMORY,
                                                              jetwire.RetentionPolicy.LIMITS)
        # limits -> interest is an update the server allows
        s = await js.ensure_stream(name, jetwire.DEFAULT_STREAM, subjects=[f"{name}.>"], storage="memory",
                                   retention="interest")
        assert s.cached_info().config.retention == jetwire.RetentionPolicy.INTEREST
        m.sent()
        # unknown override: TypeError before any request
        with pytest.raises(TypeError):
            await js.ensure_stream(name, jetwire.DEFAULT_STREAM, max_msg=5)
        with pytest.raises(TypeError):
            await js.load_or_create_stream(name, jetwire.DEFAULT_STREAM, subject=["x"])
        with pytest.raises(TypeError):
            await js.create_stream_from_default(name, jetwire.DEFAULT_STREAM, storage_type="memory")
        assert m.sent() == []


async def test_ensure_stream_keeps_what_the_server_chose(nats_url):
    """An update by ensure_stream keeps the server's choices for unset fields."""
    async with Mgmt(nats_url) as m:
        name = m.name()
        await m.js.create_stream(name=name, subjects=[f"{name}.>"], storage="memory", duplicate_window=30.0)
        s = await m.js.ensure_stream(name, {"storage": "memory"}, max_msgs=3)
        cfg = s.cached_info().config
        assert (cfg.max_msgs, cfg.duplicate_window, cfg.subjects) == (3, 30.0, [f"{name}.>"])


async def test_load_or_create_stream_never_overwrites(nats_url):
    async with Mgmt(nats_url) as m:
        js = m.js
        name = m.name()
        s = await js.load_or_create_stream(name, subjects=[f"{name}.>"], storage="memory", max_msgs=10)
        assert _verbs(m.sent()) == ["STREAM.INFO", "STREAM.CREATE"]
        assert s.cached_info().config.max_age == jetwire.DEFAULT_STREAM.max_age  # the default template
        # exists: loaded as it is, even when everything differs
        again = await js.load_or_create_stream(name, jetwire.DEFAULT_WORK_QUEUE, subjects=["other.>"],
                                               storage="file", max_msgs=99)
        assert _verbs(m.sent()) == ["STREAM.INFO"]
        cfg = again.cached_info().config
        assert (cfg.max_msgs, cfg.storage, cfg.subjects) == (10, jetwire.StorageType.MEMORY, [f"{name}.>"])
        assert cfg.retention == jetwire.RetentionPolicy.LIMITS


async def test_ensure_consumer(nats_url):
    async with Mgmt(nats_url) as m:
        js = m.js
        name = m.name()
        s = await js.create_stream(name=name, subjects=[f"{name}.>"], storage="memory")
        m.sent()
        # missing: created, durable under the given name
        c = await js.ensure_consumer(name, "w", jetwire.DEFAULT_CONSUMER, max_deliver=5)
        assert _verbs(m.sent()) == ["CONSUMER.INFO", "CONSUMER.CREATE"]
        info = c.cached_info()
        assert (info.name, info.config.durable_name, info.config.max_deliver) == ("w", "w", 5)
        assert info.is_durable and info.is_pull
        # equal
        await s.ensure_consumer("w", jetwire.DEFAULT_CONSUMER, max_deliver=5)
        assert _verbs(m.sent()) == ["CONSUMER.INFO"]
        # updatable
        c = await js.ensure_consumer(name, "w", jetwire.DEFAULT_CONSUMER, max_deliver=7, description="workers",
                                     filter_subject=f"{name}.a")
        assert _verbs(m.sent()) == ["CONSUMER.INFO", "CONSUMER.CREATE"]  # an update is a create with action
        cfg = (await js.consumer(name, "w")).cached_info().config
        assert (cfg.max_deliver, cfg.description, cfg.filter_subject) == (7, "workers", f"{name}.a")
        assert c.cached_info().config.max_deliver == 7
        # not updatable
        with pytest.raises(jetwire.ConfigDriftError) as e:
            await js.ensure_consumer(name, "w", jetwire.DEFAULT_CONSUMER, max_deliver=7, description="workers",
                                     filter_subject=f"{name}.a", deliver_policy="new")
        assert e.value.fields == ["deliver_policy"]
        with pytest.raises(jetwire.ConfigDriftError) as e:
            await s.ensure_consumer("w", jetwire.DEFAULT_CONSUMER, ack_policy="none", deliver_subject="push.w",
                                    max_deliver=9)
        assert e.value.fields == ["ack_policy", "deliver_subject"]
        assert e.value.kind == "consumer" and e.value.name == "w"
        cfg = (await js.consumer(name, "w")).cached_info().config
        assert (cfg.max_deliver, cfg.deliver_policy, cfg.ack_policy) == (7, jetwire.DeliverPolicy.ALL,
                                                                           jetwire.AckPolicy.EXPLICIT)
        # a push consumer; the sampled template
        p = await s.ensure_consumer("p", jetwire.SAMPLED_DEFAULT_CONSUMER, deliver_subject=f"deliver.{name}")
        pinfo = p.cached_info()
        assert pinfo.is_push and pinfo.is_sampled and pinfo.is_durable and not pinfo.is_pull()
        m.sent()
        await s.ensure_consumer("p", jetwire.SAMPLED_DEFAULT_CONSUMER, deliver_subject=f"deliver.{name}")
        assert _verbs(m.sent()) == ["CONSUMER.INFO"]
        # the name in the config must be the consumer's
        with pytest.raises(ValueError):
            await js.ensure_consumer(name, "w", jetwire.DEFAULT_CONSUMER, durable_name="other")
        with pytest.raises(TypeError):
            await js.ensure_consumer(name, "w", jetwire.DEFAULT_CONSUMER, max_delivers=1)
        assert m.sent() == []
        # on a missing stream
        with pytest.raises(jetwire.StreamNotFoundError):
            await js.ensure_consumer(name + "X", "w")


async def test_load_or_create_consumer_never_overwrites(nats_url):
    async with Mgmt(nats_url) as m:
        js = m.js
        name = m.name()
        s = await js.create_stream(name=name, subjects=[f"{name}.>"], storage="memory")
        m.sent()
        c = await s.load_or_create_consumer("w", max_deliver=3)
        assert _verbs(m.sent()) == ["CONSUMER.INFO", "CONSUMER.CREATE"]
        assert c.cached_info().config.ack_wait == 30.0 and c.cached_info().config.durable_name == "w"
        again = await js.load_or_create_consumer(name, "w", jetwire.SAMPLED_DEFAULT_CONSUMER, max_deliver=9,
                                                 deliver_policy="new", deliver_subject="x.y")
        assert _verbs(m.sent()) == ["CONSUMER.INFO"]
        cfg = again.cached_info().config
        assert (cfg.max_deliver, cfg.deliver_policy, cfg.sample_freq, cfg.deliver_subject) == (
            3, jetwire.DeliverPolicy.ALL, None, None)
        # the stream handle's template helper
        eph = await s.create_consumer_from_default(jetwire.DEFAULT_CONSUMER, filter_subject=f"{name}.b")
        assert eph.cached_info().config.filter_subject == f"{name}.b" and not eph.cached_info().is_durable


_STREAM_SHAPES = [
    {"compression": "s2"},
    {"allow_msg_ttl": True, "subject_delete_marker_ttl": 60.0, "allow_rollup_hdrs": True},
    {"republish": {"src": "{n}.>", "dest": "r{n}.>"}, "allow_direct": True, "metadata": {"k": "v"}},
    {"subject_transform": {"src": "{n}.>", "dest": "t{n}.>"},
     "consumer_limits": {"max_ack_pending": 50, "inactive_threshold": 30.0}},
    {"discard": "new", "discard_new_per_subject": True, "max_msgs_per_subject": 5, "max_age": 60.0},
    {"max_age": 30.0, "storage": "memory", "retention": "interest"},
    {"subjects": None, "mirror": {"name": "{src}"}},
    {"sources": [{"name": "{src}", "filter_subject": "{src}.a"}]},
    {"allow_msg_counter": True},
]

_CONSUMER_SHAPES = [
    {"filter_subjects": ["{n}.a"]},
    {"filter_subjects": ["{n}.a", "{n}.b"]},
    {"backoff": [1.0, 2.0], "max_deliver": 4},
    {"deliver_subject": "push1.{n}", "idle_heartbeat": 5.0, "flow_control": True, "headers_only": True},
    {"deliver_subject": "push2.{n}", "deliver_group": "q", "ack_policy": "none"},
    {"priority_groups": ["g"], "priority_policy": "pinned_client"},
    {"deliver_policy": "by_start_sequence", "opt_start_seq": 3},
    {"deliver_policy": "last_per_subject", "filter_subject": "{n}.>"},
    {"max_batch": 10, "max_expires": 5.0, "max_bytes": 1000, "max_waiting": 5},
    {"rate_limit_bps": 1000, "deliver_subject": "push3.{n}", "replay_policy": "original"},
    {"mem_storage": True, "metadata": {"a": "b"}},
]


def _fill(value, **names):
    if isinstance(value, str):
        return value.format(**names)
    if isinstance(value, list):
        return [_fill(v, **names) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, **names) for k, v in value.items()}
    return value


async def test_ensure_is_idempotent_for_many_shapes(nats_url):
    """Whatever the config, ensuring it a second time changes nothing: what the server
    fills in never reads as a difference."""
    async with Mgmt(nats_url) as m:
        js = m.js
        src = m.name()
        await js.create_stream(name=src, subjects=[f"{src}.>"], storage="memory")
        for shape in _STREAM_SHAPES:
            name = m.name()
            overrides = {"subjects": [f"{name}.>"], **_fill(shape, n=name, src=src)}
            await js.ensure_stream(name, jetwire.DEFAULT_STREAM, **overrides)
            m.sent()
            await js.ensure_stream(name, jetwire.DEFAULT_STREAM, **overrides)
            assert _verbs(m.sent()) == ["STREAM.INFO"], shape
        name = m.name()
        await js.create_stream(name=name, subjects=[f"{name}.>"], storage="memory")
        for i, shape in enumerate(_CONSUMER_SHAPES):
            overrides = _fill(shape, n=name)
            await js.ensure_consumer(name, f"c{i}", jetwire.DEFAULT_CONSUMER, **overrides)
            m.sent()
            await js.ensure_consumer(name, f"c{i}", jetwire.DEFAULT_CONSUMER, **overrides)
            assert _verbs(m.sent()) == ["CONSUMER.INFO"], shape
        # a named consumer that is not durable (the config names it)
        await js.ensure_consumer(name, "named", {"name": "named"}, inactive_threshold=60.0)
        m.sent()
        c = await js.ensure_consumer(name, "named", {"name": "named"}, inactive_threshold=60.0)
        assert _verbs(m.sent()) == ["CONSUMER.INFO"]
        assert not c.cached_info().is_durable


async def test_a_value_beyond_64_bits_is_a_typed_error_before_anything_is_sent(nats_url):
    """The server reads integers (durations in nanoseconds too) as 64-bit: a stream kept
    for 10**12 seconds is refused here, with nothing sent and nothing created."""
    trace = Trace()
    async with await jetwire.connect(nats_url) as nc:
        js = nc.jetstream(trace_cb=trace)
        name = uniq("HUGE")
        with pytest.raises(jetwire.InvalidOptionError, match="64 bits") as e:
            await js.create_stream(name=name, subjects=[f"{name}.>"], max_age=1e12)
        assert isinstance(e.value, ValueError)
        with pytest.raises(jetwire.InvalidOptionError):
            await js.api_request(f"STREAM.CREATE.{name}", {"name": name, "max_msgs": 2 ** 70})
        assert trace.calls == []
        with pytest.raises(jetwire.StreamNotFoundError):
            await js.stream_info(name)
        # the largest duration the server holds still goes through
        await js.create_stream(name=name, subjects=[f"{name}.>"], max_age=(2 ** 63 - 1) // 10 ** 9, storage="memory")
        await js.delete_stream(name)


async def test_ensure_stream_sends_no_update_for_the_rollup_headers_the_server_turned_on(nats_url):
    nc = await jetwire.connect(nats_url)
    sent: list[str] = []
    js = nc.jetstream(trace_cb=lambda subject, payload: sent.append(subject))
    name = uniq("ENSROLL").replace(".", "_")
    try:
        s = await js.ensure_stream(name, subjects=[f"{name}.>"], allow_msg_ttl=True, subject_delete_marker_ttl=5)
        assert (await s.info()).config.allow_rollup_hdrs is True  # the server's doing
        sent.clear()
        await js.ensure_stream(name, subjects=[f"{name}.>"], allow_msg_ttl=True, subject_delete_marker_ttl=5)
        assert [x for x in sent if ".UPDATE." in x] == [], sent  # unchanged: looked up, not updated
    finally:
        await js.delete_stream(name)
        await nc.close()
