"""JetStream management: account, streams, stream handles, consumers (asyncio source;
the blocking twin is generated)."""
from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

import jetwire.aio as jetwire
from tests.aio._helpers import uniq


class Env:
    """A connection, its JetStream context and the streams a test made (deleted at exit)."""

    def __init__(self, url: str, **js_options) -> None:
        self.url = url
        self.js_options = js_options
        self.streams: list = []

    async def __aenter__(self) -> Env:
        self.nc = await jetwire.connect(self.url)
        self.js = self.nc.jetstream(**self.js_options)
        return self

    async def __aexit__(self, *exc) -> None:
        try:
            for name in self.streams:
                try:
                    await self.js.delete_stream(name)
                except jetwire.StreamNotFoundError:
                    pass
        finally:
            await self.nc.close()

    def name(self, prefix: str = "S") -> str:
        n = uniq(prefix)
        self.streams.append(n)
        return n

    async def stream(self, **fields):
        name = self.name()
        fields.setdefault("subjects", [f"{name.lower()}.>"])
        fields.setdefault("storage", jetwire.StorageType.MEMORY)
        return await self.js.create_stream(name=name, **fields)


# --- account -----------------------------------------------------------------------
async def test_account_info(nats_url):
    async with Env(nats_url) as env:
        before = await env.js.account_info()
        assert isinstance(before, jetwire.AccountInfo)
        await env.stream()
        after = await env.js.account_info()
        assert after.streams == before.streams + 1
        assert after.limits.max_streams == -1
        assert after.domain is None


# --- streams -----------------------------------------------------------------------
async def test_create_stream_is_idempotent_and_name_in_use(nats_url):
    async with Env(nats_url) as env:
        js = env.js
        name = env.name()
        s = await js.create_stream(name=name, subjects=[f"{name}.a"], storage="memory", max_msgs=100)
        assert type(s).__name__ == "Stream"
        assert s.name == name
        info = s.cached_info()
        assert info.config.subjects == [f"{name}.a"]
        assert info.config.storage == jetwire.StorageType.MEMORY
        assert info.config.max_msgs == 100
        assert info.state.messages == 0
        # the same config again: returns the stream
        cfg = jetwire.StreamConfig(name=name, subjects=[f"{name}.a"], storage=jetwire.StorageType.MEMORY, max_msgs=100)
        again = await js.create_stream(cfg)
        assert again.name == name
        assert again.cached_info().created == info.created
        # a dict config is accepted too
        again2 = await js.create_stream({"name": name, "subjects": [f"{name}.a"], "storage": "memory",
                                         "max_msgs": 100})
        assert again2.name == name
        # another config: name in use
        with pytest.raises(jetwire.StreamNameInUseError) as ei:
            await js.create_stream(cfg, max_msgs=5)
        assert ei.value.err_code == 10058
        assert isinstance(ei.value, jetwire.APIError)
        assert isinstance(ei.value, jetwire.JetStreamError)
        assert cfg.max_msgs == 100  # the caller's config is never changed
        with pytest.raises(TypeError):
            await js.create_stream(name=name, no_such_field=1)


async def test_update_and_create_or_update_stream(nats_url):
    async with Env(nats_url) as env:
        js = env.js
        s = await env.stream(max_msgs=10)
        cfg = s.cached_info().config
        up = await js.update_stream(cfg, max_msgs=20, description="bigger")
        assert up.cached_info().config.max_msgs == 20
        assert (await js.stream(s.name)).cached_info().config.description == "bigger"
        missing = uniq("MISSING")
        with pytest.raises(jetwire.StreamNotFoundError) as ei:
            await js.update_stream(name=missing, subjects=[f"{missing}.x"])
        assert ei.value.err_code == 10059
        name = env.name()
        created = await js.create_or_update_stream(name=name, subjects=[f"{name}.x"], storage="memory")
        assert created.cached_info().config.max_msgs == -1
        updated = await js.create_or_update_stream(name=name, subjects=[f"{name}.x"], storage="memory", max_msgs=7)
        assert updated.cached_info().config.max_msgs == 7


async def test_stream_lookup_and_delete(nats_url):
    async with Env(nats_url) as env:
        js = env.js
        s = await env.stream()
        got = await js.stream(s.name)
        assert got.name == s.name
        assert got.cached_info().config.subjects == s.cached_info().config.subjects
        assert await js.delete_stream(s.name) is True
        with pytest.raises(jetwire.StreamNotFoundError):
            await js.stream(s.name)
        with pytest.raises(jetwire.StreamNotFoundError):
            await js.delete_stream(s.name)
        with pytest.raises(jetwire.StreamNotFoundError):
            await s.info()


async def test_invalid_names_raise_before_sending(nats_url):
    async with Env(nats_url) as env:
        js = env.js
        s = await env.stream()
        sent = env.nc.stats["out_msgs"]
        for bad in ["a.b", "a b", "a*", "a>", "a/b", "a\\b", "", "tab\tname"]:
            with pytest.raises(jetwire.InvalidStreamNameError):
                await js.create_stream(name=bad, subjects=["bad.names"])
            with pytest.raises(jetwire.InvalidStreamNameError):
                await js.stream(bad)
            with pytest.raises(jetwire.InvalidStreamNameError):
                await js.delete_stream(bad)
            with pytest.raises(jetwire.InvalidStreamNameError):
                await js.create_consumer(bad, durable_name="ok")
            with pytest.raises(jetwire.InvalidConsumerNameError):
                await js.create_consumer(s.name, durable_name=bad or "x.y")
            with pytest.raises(jetwire.InvalidConsumerNameError):
                await s.consumer(bad or "x y")
            with pytest.raises(jetwire.InvalidConsumerNameError):
                await s.delete_consumer(bad or "x*")
        with pytest.raises(jetwire.InvalidStreamNameError):
            await js.create_stream(subjects=["no.name"])
        with pytest.raises(jetwire.InvalidConsumerNameError):
            await s.create_consumer(name="a.b")
        with pytest.raises(ValueError):  # the invalid-name errors are ValueErrors too
            await js.stream("x.y")
        assert env.nc.stats["out_msgs"] == sent
        assert env.nc.is_connected


async def test_list_streams_and_names_page_through_everything(nats_url):
    # The server pages STREAM.LIST by 256 and STREAM.NAMES by 1024: make more than both.
    async with Env(nats_url) as env:
        js = env.js
        tag = uuid.uuid4().hex[:8]
        names = [f"PG_{tag}_{i:04d}" for i in range(1030)]
        for n in names:
            env.streams.append(n)
            await js.create_stream(name=n, subjects=[f"pg.{tag}.{n}"], storage="memory")
        listed = [si async for si in js.list_streams(subject=f"pg.{tag}.>")]
        assert sorted(si.config.name for si in listed) == names
        assert all(isinstance(si, jetwire.StreamInfo) for si in listed)
        got = [n async for n in js.stream_names(subject=f"pg.{tag}.>")]
        assert sorted(got) == names
        everything = [n async for n in js.stream_names()]
        assert set(names) <= set(everything)
        one = [n async for n in js.stream_names(subject=f"pg.{tag}.{names[7]}")]
        assert one == [names[7]]
        assert [si async for si in js.list_streams(subject=f"nomatch.{tag}")] == []
        for n in names:
            await js.delete_stream(n)
        env.streams.clear()


async def test_listing_pages_follow_offset_and_total(nats_url):
    # Page handling against a fake API that serves three items per page.
    async with Env(nats_url) as env:
        js = env.js
        calls = []
        items = [f"N{i}" for i in range(8)]

        async def fake_api(subject, payload=None, timeout=None):
            calls.append((subject, dict(payload or {})))
            off = (payload or {}).get("offset", 0)
            page = items[off:off + 3]
            if subject == "STREAM.NAMES":
                return {"total": len(items), "offset": off, "limit": 3, "streams": page}
            if subject == "STREAM.LIST":
                return {"total": len(items), "offset": off, "limit": 3,
                        "streams": [{"config": {"name": n}, "state": {}} for n in page]}
            if subject.startswith("CONSUMER.NAMES."):
                return {"total": len(items), "offset": off, "limit": 3, "consumers": page}
            if subject.startswith("CONSUMER.LIST."):
                return {"total": len(items), "offset": off, "limit": 3,
                        "consumers": [{"name": n, "stream_name": "X"} for n in page]}
            if subject.startswith("STREAM.INFO."):
                subs = {f"s.{i}": i for i in range(8)}
                keys = sorted(subs)[off:off + 3]
                return {"total": len(subs), "offset": off, "limit": 3,
                        "config": {"name": "X"}, "state": {"messages": 28, "subjects": {k: subs[k] for k in keys}}}
            raise AssertionError(subject)

        Stream = type(await env.stream())
        js.api_request = fake_api
        try:
            assert [n async for n in js.stream_names(subject="s.>")] == items
            assert [c[1]["offset"] for c in calls] == [0, 3, 6]
            assert calls[0][1]["subject"] == "s.>"
            calls.clear()
            assert [si.config.name async for si in js.list_streams()] == items
            assert [c[1]["offset"] for c in calls] == [0, 3, 6]
            assert [n async for n in js.consumer_names("X")] == items
            assert [ci.name async for ci in js.list_consumers("X")] == items
            s = Stream(js, jetwire.StreamInfo(config=jetwire.StreamConfig(name="X")))
            assert [n async for n in s.consumer_names()] == items
            calls.clear()
            info = await s.info(subjects_filter=">")
            assert info.state.subjects == {f"s.{i}": i for i in range(8)}
            assert [c[1].get("offset", 0) for c in calls] == [0, 3, 6]
            assert all(c[1]["subjects_filter"] == ">" for c in calls)
            assert s.cached_info() is info
        finally:
            del js.api_request


async def test_stream_name_by_subject(nats_url):
    async with Env(nats_url) as env:
        s = await env.stream()
        assert await env.js.stream_name_by_subject(f"{s.name.lower()}.x.y") == s.name
        assert await env.js.stream_name_by_subject(f"{s.name.lower()}.>") == s.name
        with pytest.raises(jetwire.StreamNotFoundError):
            await env.js.stream_name_by_subject(f"nothing.{uuid.uuid4().hex}")
        with pytest.raises(jetwire.BadSubjectError):
            await env.js.stream_name_by_subject("bad subject")


async def test_stream_info_subjects_filter_and_deleted_details(nats_url):
    async with Env(nats_url) as env:
        js = env.js
        s = await env.stream()
        p = s.name.lower()
        for subj, n in ((f"{p}.a", 3), (f"{p}.b", 2), (f"{p}.c.d", 1)):
            for _ in range(n):
                await js.publish(subj, b"x")
        info = await s.info()
        assert info.state.messages == 6
        assert info.state.num_subjects == 3
        assert not info.state.subjects
        info = await s.info(subjects_filter=">")
        assert info.state.subjects == {f"{p}.a": 3, f"{p}.b": 2, f"{p}.c.d": 1}
        info = await s.info(subjects_filter=f"{p}.a")
        assert info.state.subjects == {f"{p}.a": 3}
        assert s.cached_info() is info
        await s.delete_msg(2)
        await s.secure_delete_msg(4)
        info = await s.info(deleted_details=True)
        assert info.state.deleted == [2, 4]
        assert info.state.num_deleted == 2
        assert info.state.messages == 4
        assert not (await s.info()).state.deleted


async def test_purge_variants(nats_url):
    async with Env(nats_url) as env:
        js = env.js
        s = await env.stream()
        p = s.name.lower()
        for i in range(10):
            await js.publish(f"{p}.a" if i % 2 == 0 else f"{p}.b", b"%d" % i)  # a: 1,3,5,7,9  b: 2,4,6,8,10
        assert await s.purge(subject=f"{p}.a", keep=2) == 3
        assert await s.purge(sequence=5) == 2  # below seq 5: b@2, b@4
        info = await s.info(subjects_filter=">")
        assert info.state.subjects == {f"{p}.a": 2, f"{p}.b": 3}
        assert await s.purge(keep=3) == 2
        assert await s.purge(subject=f"{p}.nothing") == 0
        assert await s.purge() == 3
        info = await s.info()
        assert info.state.messages == 0
        assert info.state.first_seq == 11
        with pytest.raises(jetwire.InvalidOptionError, match="sequence or keep"):  # a ValueError too
            await s.purge(sequence=3, keep=1)


async def test_get_msg_api_and_direct(nats_url):
    async with Env(nats_url) as env:
        js = env.js
        for allow_direct in (False, True):
            s = await env.stream(allow_direct=allow_direct)
            p = s.name.lower()
            await js.publish(f"{p}.a", b"one", headers={"X-Test": ["v1", "v2"], "Y": "y"})
            await js.publish(f"{p}.b", b"two")
            await js.publish(f"{p}.a", b"three")
            modes = (False, True) if allow_direct else (False,)
            for direct in modes:
                m = await s.get_msg(1, direct=direct)
                assert isinstance(m, jetwire.RawStreamMsg)
                assert (m.subject, m.seq, m.data) == (f"{p}.a", 1, b"one")
                assert m.headers.get_all("X-Test") == ["v1", "v2"]
                assert m.headers == {"X-Test": ["v1", "v2"], "Y": "y"}
                assert m.time.tzinfo is not None
                assert abs((datetime.now(UTC) - m.time).total_seconds()) < 60
                m2 = await s.get_msg(2, direct=direct)
                assert (m2.subject, m2.seq, m2.data, m2.headers) == (f"{p}.b", 2, b"two", None)
                last = await s.get_last_msg_for_subject(f"{p}.a", direct=direct)
                assert (last.seq, last.data) == (3, b"three")
                with pytest.raises(jetwire.MsgNotFoundError) as ei:
                    await s.get_msg(99, direct=direct)
                assert isinstance(ei.value, jetwire.APIError)
                with pytest.raises(jetwire.MsgNotFoundError):
                    await s.get_last_msg_for_subject(f"{p}.zzz", direct=direct)
            if allow_direct:
                api = await s.get_msg(1, direct=False)
                direct_msg = await s.get_msg(1, direct=True)
                assert api == direct_msg


async def test_delete_and_secure_delete_msg(nats_url):
    async with Env(nats_url) as env:
        js = env.js
        s = await env.stream(storage="file")
        p = s.name.lower()
        for i in range(3):
            await js.publish(f"{p}.x", b"secret-%d" % i)
        assert await s.delete_msg(1) is True
        assert await s.secure_delete_msg(2) is True
        for seq in (1, 2):
            with pytest.raises(jetwire.MsgNotFoundError):
                await s.get_msg(seq)
        assert (await s.get_msg(3)).data == b"secret-2"
        with pytest.raises(jetwire.APIError):
            await s.delete_msg(1)
        info = await s.info()
        assert info.state.messages == 1


# --- consumers ---------------------------------------------------------------------
async def test_consumer_create_is_idempotent_exists_and_update(nats_url):
    async with Env(nats_url) as env:
        js = env.js
        s = await env.stream()
        c = await s.create_consumer(durable_name="dur", description="first")
        assert c.name == "dur"
        info = c.cached_info()
        assert isinstance(info, jetwire.ConsumerInfo)
        assert info.stream_name == s.name
        assert info.config.ack_policy == jetwire.AckPolicy.EXPLICIT
        assert info.config.durable_name == "dur"
        # same config: same consumer
        again = await js.create_consumer(s.name, durable_name="dur", description="first")
        assert again.name == "dur"
        assert again.cached_info().created == info.created
        # another config: exists
        with pytest.raises(jetwire.ConsumerExistsError) as ei:
            await s.create_consumer(durable_name="dur", description="second")
        assert isinstance(ei.value, jetwire.APIError)
        assert ei.value.err_code is not None
        # update
        up = await s.update_consumer(durable_name="dur", description="second")
        assert up.cached_info().config.description == "second"
        assert (await c.info()).config.description == "second"
        with pytest.raises(jetwire.ConsumerDoesNotExistError):
            await s.update_consumer(durable_name="missing", description="x")
        with pytest.raises(jetwire.ConsumerDoesNotExistError):
            await js.update_consumer(s.name, name="missing2")
        # create or update
        cu = await js.create_or_update_consumer(s.name, name="cu", ack_policy=jetwire.AckPolicy.NONE)
        assert cu.cached_info().config.ack_policy == jetwire.AckPolicy.NONE
        cu2 = await s.create_or_update_consumer(name="cu", ack_policy="none", description="d")
        assert cu2.cached_info().config.description == "d"
        # config object + keyword override
        cfg = jetwire.ConsumerConfig(name="viacfg", max_ack_pending=10)
        vc = await s.create_consumer(cfg, description="cfg")
        assert vc.cached_info().config.max_ack_pending == 10
        assert vc.cached_info().config.description == "cfg"
        assert cfg.description is None
        # on a missing stream
        with pytest.raises(jetwire.StreamNotFoundError):
            await js.create_consumer(uniq("NOPE"), durable_name="x")


async def test_ephemeral_consumer_lookup_and_delete(nats_url):
    async with Env(nats_url) as env:
        js = env.js
        s = await env.stream()
        eph = await s.create_consumer(inactive_threshold=30.0)
        assert eph.name
        assert eph.cached_info().config.durable_name is None
        assert eph.cached_info().config.inactive_threshold == 30.0
        eph2 = await s.create_consumer()
        assert eph2.name != eph.name
        found = await js.consumer(s.name, eph.name)
        assert found.name == eph.name
        assert (await s.consumer(eph.name)).cached_info().config.inactive_threshold == 30.0
        with pytest.raises(jetwire.ConsumerNotFoundError) as ei:
            await s.consumer("nobody")
        assert ei.value.err_code == 10014
        assert await s.delete_consumer(eph.name) is True
        with pytest.raises(jetwire.ConsumerNotFoundError):
            await js.consumer(s.name, eph.name)
        with pytest.raises(jetwire.ConsumerNotFoundError):
            await js.delete_consumer(s.name, eph.name)


async def test_consumer_filter_subjects(nats_url):
    async with Env(nats_url) as env:
        s = await env.stream()
        p = s.name.lower()
        one = await s.create_consumer(durable_name="one", filter_subject=f"{p}.a")
        assert one.cached_info().config.filter_subject == f"{p}.a"
        assert (await s.create_consumer(durable_name="one", filter_subject=f"{p}.a")).name == "one"
        many = await s.create_consumer(name="many", filter_subjects=[f"{p}.a", f"{p}.b.>"])
        assert many.cached_info().config.filter_subjects == [f"{p}.a", f"{p}.b.>"]
        single_list = await s.create_consumer(durable_name="single", filter_subjects=[f"{p}.c"])
        assert single_list.cached_info().config.filter_subjects == [f"{p}.c"]
        with pytest.raises(jetwire.APIError):  # overlapping filters are refused by the server
            await s.create_consumer(name="bad", filter_subjects=[f"{p}.a", f"{p}.>"])
        with pytest.raises(jetwire.BadSubjectError):
            await s.create_consumer(name="badsubj", filter_subject="a b")
        up = await s.update_consumer(durable_name="one", filter_subject=f"{p}.b")
        assert up.cached_info().config.filter_subject == f"{p}.b"


async def test_list_consumers_and_names(nats_url):
    async with Env(nats_url) as env:
        s = await env.stream()
        assert [n async for n in s.consumer_names()] == []
        for i in range(5):
            await s.create_consumer(durable_name=f"c{i}")
        names = [n async for n in s.consumer_names()]
        assert sorted(names) == [f"c{i}" for i in range(5)]
        infos = [ci async for ci in env.js.list_consumers(s.name)]
        assert sorted(ci.name for ci in infos) == [f"c{i}" for i in range(5)]
        assert all(ci.stream_name == s.name for ci in infos)
        assert sorted([ci.name async for ci in s.list_consumers()]) == sorted(names)
        assert sorted([n async for n in env.js.consumer_names(s.name)]) == sorted(names)
        assert (await s.info()).state.consumer_count == 5


async def test_pause_and_resume_consumer(nats_url):
    async with Env(nats_url) as env:
        s = await env.stream()
        await s.create_consumer(durable_name="p")
        until = datetime.now(UTC) + timedelta(minutes=5)
        r = await s.pause_consumer("p", until)
        assert r.paused is True
        assert abs((r.pause_until - until).total_seconds()) < 0.001
        assert 200 < r.pause_remaining <= 300
        info = await (await s.consumer("p")).info()
        assert info.paused is True
        assert info.config.pause_until is not None
        r2 = await env.js.resume_consumer(s.name, "p")
        assert r2.paused is False
        assert not r2.pause_remaining
        assert (await s.consumer("p")).cached_info().paused is False
        r3 = await env.js.pause_consumer(s.name, "p", datetime.now(UTC) + timedelta(seconds=30))
        assert r3.paused is True
        await s.resume_consumer("p")
        with pytest.raises(jetwire.ConsumerNotFoundError):
            await s.pause_consumer("nobody", until)


async def test_domain(nats_server_factory):
    srv = nats_server_factory(domain="hub")
    async with Env(srv.url, domain="hub") as env:
        js = env.js
        assert js.api_prefix == "$JS.hub.API"
        info = await js.account_info()
        assert info.domain == "hub"
        s = await env.stream()
        ack = await js.publish(f"{s.name.lower()}.x", b"hello")
        assert ack.domain == "hub"
        assert ack.stream == s.name
        fut = await js.publish_async(f"{s.name.lower()}.x", b"again")
        await js.publish_async_complete(timeout=5)
        assert fut.result().domain == "hub"
        assert (await js.stream(s.name)).cached_info().state.messages == 2
        assert (await s.get_msg(1)).data == b"hello"
        c = await s.create_consumer(durable_name="d")
        assert (await c.info()).num_pending == 2
        assert [n async for n in js.stream_names()] == [s.name]
        # the same server through the default prefix
        plain = env.nc.jetstream()
        assert (await plain.stream(s.name)).name == s.name
        # an unknown domain has no responders
        with pytest.raises(jetwire.JetStreamNotEnabledError):
            await env.nc.jetstream(domain="nowhere", timeout=1).account_info()


async def test_jetstream_not_enabled(nats_server_factory):
    srv = nats_server_factory(jetstream=False)
    async with Env(srv.url) as env:
        with pytest.raises(jetwire.JetStreamNotEnabledError):
            await env.js.account_info()
        with pytest.raises(jetwire.JetStreamError):
            await env.js.stream("ANY")
