"""``jetwire bench <mode>`` on the engine: each mode's set-up (streams, consumers,
buckets, stored messages), its groups of clients and its accounting.

Every client is its own process (:func:`._engine.run_groups`), so several clients are
not serialised by one interpreter's GIL. Every message must be accounted for (subscriber
counts, stream state, consumer state, server counters): a lost message makes the report's
``accounted`` False. The set-up around the timed part and the accounting use the blocking
jetwire API in the parent process. No click or rich here.
"""
from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ._conn import ConnSettings, comma, connect_kwargs, redact_url
from ._engine import BenchError, Counters, Group, Target, in_msgs, run_groups, serve
from ._results import Check, GroupResult, ModeReport, WorkerResult
from ._stats import split_evenly
from ._workloads import MODES

if TYPE_CHECKING:
    import jetwire


class UsageError(BenchError):
    """Options that do not fit the mode (the command line is wrong)."""


@dataclass
class ModeSettings:
    """What a ``bench <mode>`` run is asked for (the command's options)."""

    mode: str
    msgs: int = 100_000
    size: int = 128
    pub: int = 1
    sub: int = 1
    subject: str = "bench"
    stream: str = "benchstream"
    consumer: str = "jetwire-bench"
    bucket: str = "benchbucket"
    storage: str = "file"
    replicas: int = 1
    purge: bool = False
    batch: int = 500
    window: int = 1000
    acks: str = "explicit"
    timeout: float = 10.0
    grace: float = 10.0
    flavour: str = "sync"
    conn: ConnSettings = field(default_factory=dict)  # connection settings (server excluded)
    server: str | None = None  # None: an embedded server
    server_cpus: set[int] | None = None
    client_cpus: set[int] | None = None

    def check(self) -> None:
        """:class:`UsageError` for options that do not fit the mode."""
        mode = MODES.get(self.mode)
        if mode is None:
            raise UsageError(f"unknown mode {self.mode!r}; known: {', '.join(MODES)}")
        if mode.needs_pub and self.pub < 1:
            raise UsageError(f"{self.mode} needs --pub of at least 1")
        if self.msgs < 1:
            raise UsageError("--msgs must be at least 1")


_DONE_VERB = {"pub": "published and flushed", "req": "requests answered", "jspub": "published and acked",
              "jspubasync": "published and acked", "kvput": "puts acked", "kvget": "gets returned the stored value"}


@dataclass
class Hooks:
    """What a view sees of a run: storing progress, the start, the workers' progress."""

    on_started: Callable[[bool], None] | None = None  # (waiting for peers elsewhere?)
    on_tick: Callable[[Counters], None] | None = None
    storing: Callable[[int, int], None] | None = None  # (stored, of)


class Bench:
    """One ``jetwire bench <mode>`` run against ``target``: set-up, groups, accounting."""

    def __init__(self, s: ModeSettings, target: Target, hooks: Hooks) -> None:
        self.s = s
        self.target = target
        self.hooks = hooks
        self.checks: list[Check] = []
        self.wait_external = False
        self.before = 0  # js-pub, kv-put: last sequence / values before
        self.in_msgs: int | None = None  # pub: the server's count before
        self.consumer = ""

    def connect(self) -> jetwire.Client:
        import jetwire

        kw = connect_kwargs(self.s.conn)
        kw.setdefault("name", "jetwire-bench")
        return jetwire.connect(self.target.url, **kw)

    def check(self, ok: bool, text: str) -> None:
        self.checks.append(Check(bool(ok), text))

    @staticmethod
    def require(ok: bool, text: str) -> None:
        if not ok:
            raise UsageError(text)

    # -- core NATS modes --------------------------------------------------------------
    def plan_pub(self) -> list[Group]:
        if self.target.monitor:
            self.in_msgs = in_msgs(self.target.monitor)
        return [Group("pub", "pub", split_evenly(self.s.msgs, self.s.pub), producer=True)]

    def plan_sub(self) -> list[Group]:
        self.require(self.s.sub >= 1, "--sub must be at least 1")
        groups = [Group("sub", "sub", [0] * self.s.sub, expected=self.s.msgs)]
        if self.target.embedded:
            groups.append(Group("pub", "pub", [self.s.msgs], measured=False, producer=True))
        else:
            self.wait_external = True
        return groups

    def plan_pubsub(self) -> list[Group]:
        self.require(self.s.sub >= 1, "--sub must be at least 1")
        return [Group("pub", "pub", split_evenly(self.s.msgs, self.s.pub), producer=True),
                Group("sub", "sub", [0] * self.s.sub, expected=self.s.msgs)]

    def plan_request(self) -> list[Group]:
        nsub = self.s.sub
        self.require(nsub >= 1 or not self.target.embedded, "--sub 0 (repliers elsewhere) needs --server")
        groups = [Group("req", "req", split_evenly(self.s.msgs, self.s.pub), producer=True)]
        if nsub:
            groups.append(Group("rep", "rep", [0] * nsub, measured=False, fanout=False, expected=0))
        return groups

    def plan_reply(self) -> list[Group]:
        self.require(self.s.sub >= 1, "--sub must be at least 1")
        groups = [Group("rep", "rep", [0] * self.s.sub, fanout=False, expected=self.s.msgs)]
        if self.target.embedded:
            groups.append(Group("req", "req", [self.s.msgs], measured=False, producer=True))
        else:
            self.wait_external = True
        return groups

    # -- JetStream modes ----------------------------------------------------------------
    def _stream_last_seq(self, nc: jetwire.Client) -> int:
        """Make sure the stream exists (purged with --purge); its last sequence."""
        import jetwire

        s = self.s
        js = nc.jetstream(timeout=s.timeout)
        try:
            st = js.stream(s.stream)
            if s.purge:
                st.purge()
        except jetwire.StreamNotFoundError:
            st = js.create_stream(name=s.stream, subjects=[s.subject], storage=s.storage, num_replicas=s.replicas)
        return st.info().state.last_seq

    def plan_js_pub(self) -> list[Group]:
        with contextlib.closing(self.connect()) as nc:
            self.before = self._stream_last_seq(nc)
        role = "jspub" if self.s.mode == "js-pub" else "jspubasync"
        return [Group("pub", role, split_evenly(self.s.msgs, self.s.pub), producer=True,
                      extra={"window": self.s.window})]

    def _fill(self, nc: jetwire.Client, n: int) -> int:
        """Store ``n`` fresh messages of --size in the stream; returns the first new sequence."""
        s = self.s
        before = self._stream_last_seq(nc)
        js = nc.jetstream(timeout=30, publish_async_max_pending=4000)
        payload = b"x" * s.size
        storing = self.hooks.storing
        for i in range(n):
            js.publish_async(s.subject, payload, stall_wait=30)
            if storing is not None and not i & 1023:
                storing(i, n)
        js.publish_async_complete(timeout=120)
        if storing is not None:
            storing(n, n)
        state = js.stream(s.stream).info().state
        if state.last_seq - before != n:
            raise BenchError(f"could not store the messages to consume: {state.last_seq - before} of {n}")
        if state.first_seq > before + 1:
            raise BenchError(f"stream {s.stream} keeps only {comma(state.messages)} messages (its limits "
                             f"dropped the oldest): use a stream without limits (--stream)")
        return before + 1

    def plan_js_consume(self) -> list[Group]:
        s = self.s
        with contextlib.closing(self.connect()) as nc:
            start = self._fill(nc, s.msgs)
            extra: dict[str, object] = {"stream": s.stream, "batch": s.batch, "start_seq": start}
            if s.mode == "js-ordered":
                return [Group("ordered", "jsordered", [0] * s.sub, expected=s.msgs, extra={**extra, "acks": "none"})]
            self.require(s.sub >= 1, "--sub must be at least 1")
            js = nc.jetstream(timeout=s.timeout)
            with contextlib.suppress(Exception):
                js.delete_consumer(s.stream, s.consumer)
            js.create_consumer(s.stream, durable_name=s.consumer, ack_policy=s.acks,
                               deliver_policy="by_start_sequence", opt_start_seq=start,
                               max_ack_pending=-1 if s.acks != "none" else None, filter_subject=None)
        self.consumer = s.consumer
        extra.update(consumer=s.consumer, acks=s.acks)
        role, label = ("jsfetch", "fetch") if s.mode == "js-fetch" else ("jsconsume", "consume")
        return [Group(label, role, [0] * s.sub, fanout=False, expected=s.msgs, extra=extra)]

    # -- key-value modes ----------------------------------------------------------------
    def plan_kv(self) -> list[Group]:
        import jetwire

        s = self.s
        prefix = "k" + uuid.uuid4().hex[:12]
        extra: dict[str, object] = {"bucket": s.bucket, "key_prefix": prefix}
        with contextlib.closing(self.connect()) as nc:
            js = nc.jetstream(timeout=s.timeout)
            try:
                kv = js.key_value(s.bucket)
            except jetwire.BucketNotFoundError:
                kv = js.create_key_value(bucket=s.bucket, storage=s.storage, replicas=s.replicas, history=1)
            if s.mode == "kv-put":
                self.before = kv.status().values
                return [Group("put", "kvput", split_evenly(s.msgs, s.pub), producer=True, extra=extra)]
            self.require(s.sub >= 1, "--sub must be at least 1")
            nkeys = min(s.msgs, 10_000)
            payload = b"x" * s.size
            for i in range(nkeys):
                kv.put(f"{prefix}.{i}", payload)
        gets = split_evenly(s.msgs, s.sub)
        offsets = [sum(gets[:i]) for i in range(len(gets))]
        return [Group("get", "kvget", gets, producer=True, extra={**extra, "nkeys": nkeys}, offsets=offsets)]

    def plan(self) -> list[Group]:
        planners: dict[str, Callable[[], list[Group]]] = {
            "pub": self.plan_pub, "sub": self.plan_sub, "pubsub": self.plan_pubsub, "request": self.plan_request,
            "reply": self.plan_reply, "js-pub": self.plan_js_pub, "js-pub-async": self.plan_js_pub,
            "js-fetch": self.plan_js_consume, "js-consume": self.plan_js_consume,
            "js-ordered": self.plan_js_consume, "kv-put": self.plan_kv, "kv-get": self.plan_kv}
        return planners[self.s.mode]()

    # -- accounting ---------------------------------------------------------------------
    def account_group(self, g: Group, rs: list[WorkerResult]) -> None:
        bad = sum(r.get("bad", 0) for r in rs)
        if bad:
            self.check(False, f"{g.name}: {bad} messages with the wrong content or failed acks")
        if not g.measured:
            return
        if g.producer:
            done, want = sum(r["msgs"] for r in rs), sum(g.counts)
            self.check(done == want, f"{g.name}: {comma(done)} of {comma(want)} {_DONE_VERB.get(g.role, 'done')}")
        elif g.expected and g.fanout:
            for r in rs:
                self.check(r["msgs"] >= g.expected,
                           f"{g.name} #{r['idx'] + 1}: received {comma(r['msgs'])} of {comma(g.expected)}")
        elif g.expected:
            got = sum(r["msgs"] for r in rs)
            self.check(got >= g.expected, f"{g.name}: received {comma(got)} of {comma(g.expected)}")

    def account_server(self, res: dict[str, list[WorkerResult]]) -> None:
        """What the server says (counters, stream, bucket and consumer state)."""
        s, msgs = self.s, self.s.msgs
        if s.mode == "pub":
            if self.in_msgs is not None:
                got = in_msgs(self.target.monitor) - self.in_msgs
                self.check(got >= msgs, f"server counted {comma(got)} of {comma(msgs)} messages in")
            else:
                self.check(True, "every publisher's flush round trip returned (server read every message)")
        elif s.mode == "request" and "rep" in res:
            answered = sum(r["msgs"] for r in res["rep"])
            self.check(answered == msgs, f"repliers answered {comma(answered)} of {comma(msgs)} requests")
        elif s.mode in ("js-pub", "js-pub-async", "js-fetch", "js-consume", "kv-put"):
            with contextlib.closing(self.connect()) as nc:
                js = nc.jetstream(timeout=s.timeout)
                if s.mode == "kv-put":
                    stored = js.key_value(s.bucket).status().values - self.before
                    self.check(stored == msgs, f"bucket {s.bucket} gained {comma(stored)} of {comma(msgs)} values")
                elif self.consumer:
                    self.account_consumer(nc)
                else:
                    after = js.stream(s.stream).info().state.last_seq
                    stored = after - self.before
                    self.check(stored == msgs, f"stream {s.stream} stored {comma(stored)} of {comma(msgs)} "
                                               f"(last seq {self.before} -> {after})")

    def account_consumer(self, nc: jetwire.Client) -> None:
        s = self.s
        js = nc.jetstream(timeout=s.timeout)
        deadline = time.monotonic() + 10
        while True:
            ci = js.consumer(s.stream, self.consumer).info()
            pending_ok = ci.num_pending == 0
            ack_ok = s.acks == "none" or ci.num_ack_pending == 0
            if (pending_ok and ack_ok) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        self.check(pending_ok, f"consumer {ci.name}: {comma(ci.num_pending)} messages left undelivered")
        if s.acks != "none":
            self.check(ack_ok, f"consumer {ci.name}: {comma(ci.num_ack_pending)} deliveries not acknowledged")

    # -- the report -----------------------------------------------------------------------
    def report(self, groups: list[Group], res: dict[str, list[WorkerResult]]) -> ModeReport:
        s = self.s
        settings: dict[str, str | int] = {"storage": s.storage, "replicas": s.replicas, "stream": s.stream, "bucket": s.bucket,
                    "batch": s.batch, "acks": "none" if s.mode == "js-ordered" else s.acks, "window": s.window}
        rep = ModeReport(mode=s.mode, flavour=s.flavour, server=redact_url(self.target.url),
                         embedded_server=self.target.embedded, msgs=s.msgs, size=s.size, pub=s.pub, sub=s.sub,
                         settings={k: settings[k] for k in MODES[s.mode].settings},
                         checks=self.checks, server_cpus=sorted(s.server_cpus) if s.server_cpus else None,
                         client_cpus=sorted(s.client_cpus) if s.client_cpus else None)
        for g in groups:
            if g.measured:
                rep.groups[g.name] = GroupResult.of(res.get(g.name, []))
        if s.mode == "pubsub":
            rep.total = GroupResult.of([{**r, "idx": i} for i, r in enumerate(res.get("pub", []) + res.get("sub", []))])
        return rep


def run_mode(s: ModeSettings, hooks: Hooks | None = None) -> ModeReport:
    """Run one ``bench <mode>``: the server (``s.server`` or an embedded one), the set-up,
    the clients, the accounting; the report (``accounted`` False when a message was lost;
    :class:`BenchError` when the run could not complete)."""
    s.check()
    hooks = hooks or Hooks()
    with serve(s.server, None, s.server_cpus) as target:
        b = Bench(s, target, hooks)
        groups = b.plan()
        base: dict[str, object] = {"url": target.url, "conn": s.conn, "subject": s.subject, "size": s.size,
                                   "timeout": s.timeout, "grace": s.grace,
                                   "debug": bool(os.environ.get("JETWIRE_DEBUG"))}
        on_started = hooks.on_started

        def started() -> None:
            if on_started is not None:
                on_started(b.wait_external)

        res = run_groups(groups, s.flavour, base, client_cpus=s.client_cpus, wait_external=b.wait_external,
                         on_started=started, on_tick=hooks.on_tick)
        for g in groups:
            b.account_group(g, res.get(g.name, []))
        b.account_server(res)
        return b.report(groups, res)
