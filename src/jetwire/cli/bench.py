"""``jetwire bench <mode>``: a multi-process load generator modelled on ``nats bench``,
and ``jetwire bench compare`` (the BENCHMARKS.md rows against nats-py).

Every client (publisher, subscriber, requester, fetcher, ...) is its own process, so
several clients are not serialised by one interpreter's GIL. Clients connect and get
ready, then all start together; the parent shows live progress from shared counters,
gathers each client's figures and prints the group rates (first start to last end),
the per-client spread (min / avg / max / stddev) and, for request-like modes, latency
percentiles. Every message must be accounted for (subscriber counts, stream state,
consumer state, server counters): a lost message fails the run with exit status 1.

The set-up around the timed part (streams, consumers, buckets, stored messages) and
the accounting use the blocking jetwire API in the parent process.
"""
from __future__ import annotations

import csv
import io
import json
import os
import queue as queue_mod
import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import click

from ._click import COUNT, DURATION, SIZE, CliError, JetwireGroup, connection_options, console, echo_json
from ._conn import comma, connect_kwargs, human_bytes, redact_url, server_url
from ._stats import group_stats, split_evenly

# mode -> (help, latency?)
MODES: dict[str, tuple[str, bool]] = {
    "pub": ("Core NATS publishers (--pub N) on --subject; the server's counters account for every message.", False),
    "sub": ("Core NATS subscribers (--sub N), each expecting all --msgs messages. Without --server a "
            "publisher is started too; with --server run `jetwire bench pub` elsewhere.", False),
    "pubsub": ("Publishers (--pub N) and subscribers (--sub N) together; every subscriber must get every message.",
               False),
    "request": ("Requesters (--pub N) doing --msgs sequential requests in total, answered by --sub N "
                "repliers started here (--sub 0: answered by `jetwire bench reply` elsewhere).", True),
    "reply": ("Repliers (--sub N, one queue group) answering --msgs requests. Without --server a requester "
              "is started too; with --server run `jetwire bench request --sub 0` elsewhere.", False),
    "js-pub": ("JetStream publishers (--pub N), each publish waiting for its ack; the stream's state "
               "accounts for every message.", True),
    "js-pub-async": ("JetStream async publishers (--pub N), at most --window acks in flight each, until all "
                     "are acked.", False),
    "js-fetch": ("Pull consumers (--sub N sharing one durable consumer) fetching --msgs stored messages in "
                 "batches of --batch.", False),
    "js-consume": ("Continuous pull (consume()) by --sub N clients sharing one durable consumer.", False),
    "js-ordered": ("Ordered consumers (--sub N), each reading all --msgs stored messages.", False),
    "kv-put": ("Key-value puts by --pub N clients into --bucket.", True),
    "kv-get": ("Key-value gets by --sub N clients from --bucket (keys stored first).", True),
}


@dataclass
class Group:
    name: str  # shown: "pub", "sub", "req", "rep", "fetch", ...
    role: str
    counts: list[int]  # per worker: messages it sends / requests it makes
    measured: bool = True
    producer: bool = False  # when every producer is done, consumers may give up after --grace
    fanout: bool = True  # each worker expects `expected` messages (else the group shares `expected`)
    expected: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def workers(self) -> int:
        return len(self.counts)

    def total(self) -> int:
        if self.producer:
            return sum(self.counts)
        return self.expected * self.workers if self.fanout else self.expected


class BenchFailed(CliError):
    pass


_DONE_VERB = {"pub": "published and flushed", "req": "requests answered", "jspub": "published and acked",
              "jspubasync": "published and acked", "kvput": "puts acked", "kvget": "gets returned the stored value"}


# =========================================================================== runner


def run_groups(groups: list[Group], flavour: str, base: dict[str, Any], show_progress: bool,
               wait_external: bool = False, on_started: Any = None) -> dict[str, list[dict[str, Any]]]:
    """Start one process per worker, wait until all are ready, start them together,
    show progress, and return each group's worker results (errors raise BenchFailed)."""

    from ._benchwork import worker_main

    ctx = _mp_context()
    nworkers = sum(g.workers for g in groups)
    counters = ctx.Array("q", nworkers, lock=False)
    q = ctx.Queue()
    start_ev, stop_ev = ctx.Event(), ctx.Event()
    procs: list[Any] = []
    owner: list[tuple[Group, int]] = []
    idx = 0
    for g in groups:
        lo = idx
        for i, n in enumerate(g.counts):
            spec = dict(base)
            spec.update(g.extra)
            spec.update(role=g.role, flavour=flavour, idx=idx, gidx=i, n=n, external=wait_external,
                        expected=g.expected, fanout=g.fanout, group_slice=(lo, lo + g.workers),
                        group_total=0 if g.fanout else g.expected)
            offs = g.extra.get("offsets_by_worker")
            if offs:
                spec["offset"] = offs[i]
            procs.append(ctx.Process(target=worker_main, args=(spec, counters, q, start_ev, stop_ev),
                                     name=f"jetwire-bench-{g.name}-{i + 1}", daemon=True))
            owner.append((g, i))
            idx += 1
    results: dict[str, list[dict[str, Any]]] = {g.name: [] for g in groups}
    errors: list[str] = []
    reported: set = set()
    try:
        for p in procs:
            p.start()
        _await_ready(procs, q, owner, errors, reported, timeout=base.get("ready_timeout", 60.0))
        producers = {i for i, (g, _) in enumerate(owner) if g.producer}
        if not producers and not wait_external:
            stop_ev.set()
        start_ev.set()
        if on_started is not None:
            on_started()
        with _Progress(groups, counters, show_progress) as prog:
            while len(reported) < len(procs):
                try:
                    kind, i, payload = q.get(timeout=0.1)
                except queue_mod.Empty:
                    prog.update()
                    for j, p in enumerate(procs):
                        if j not in reported and not p.is_alive() and p.exitcode not in (None, 0):
                            reported.add(j)
                            errors.append(f"{_label(owner[j])}: worker exited with status {p.exitcode}")
                    if producers and producers <= reported:
                        stop_ev.set()
                    continue
                reported.add(i)
                if kind == "done":
                    results[owner[i][0].name].append(payload)
                else:
                    errors.append(f"{_label(owner[i])}: {payload}")
                    stop_ev.set()
                if producers and producers <= reported:
                    stop_ev.set()
                prog.update()
            prog.update()
    finally:
        start_ev.set()
        stop_ev.set()
        for p in procs:
            p.join(timeout=5)
        for p in procs:
            if p.is_alive():
                p.terminate()
                p.join(timeout=5)
    if errors:
        raise BenchFailed("; ".join(errors[:3]) + (f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""))
    return results


_CTX: Any = None


def _mp_context() -> Any:
    """Worker processes come from a fork server that has jetwire imported already (fast
    to start, and never a fork of this multi-threaded process); spawn where there is none."""
    global _CTX
    if _CTX is None:
        import multiprocessing as mp

        try:
            ctx = mp.get_context("forkserver")
            ctx.set_forkserver_preload(["jetwire.cli._benchwork", "jetwire", "jetwire.aio"])
        except ValueError:
            ctx = mp.get_context("spawn")  # type: ignore[assignment]
        _CTX = ctx
    return _CTX


def _label(owner: tuple[Group, int]) -> str:
    g, i = owner
    return f"{g.name} #{i + 1}"


def _await_ready(procs: list[Any], q: Any, owner: list[tuple[Group, int]], errors: list[str], reported: set,
                 timeout: float) -> None:
    ready: set = set()
    deadline = time.monotonic() + timeout
    while len(ready) < len(procs):
        try:
            kind, i, payload = q.get(timeout=0.1)
        except queue_mod.Empty:
            for j, p in enumerate(procs):
                if j not in ready and not p.is_alive():
                    raise BenchFailed(f"{_label(owner[j])}: worker exited with status {p.exitcode} before it was ready") from None
            if time.monotonic() > deadline:
                raise BenchFailed(f"only {len(ready)} of {len(procs)} clients were ready within {timeout:.0f}s") from None
            continue
        if kind == "ready":
            ready.add(i)
        elif kind == "error":
            raise BenchFailed(f"{_label(owner[i])}: {payload}")


class _Progress:
    """Live rich progress bars (stderr), one per measured group, fed from the counters."""

    def __init__(self, groups: list[Group], counters: Any, enabled: bool) -> None:
        self.groups = groups
        self.counters = counters
        self.enabled = enabled
        self.prog: Any = None
        self.tasks: list[tuple[Any, int, int]] = []
        self.t0 = time.monotonic()

    def __enter__(self) -> _Progress:
        if not self.enabled:
            return self
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.prog = Progress(TextColumn("[bold]{task.description:>8}"), BarColumn(), MofNCompleteColumn(),
                             TextColumn("{task.fields[rate]}"), TimeElapsedColumn(),
                             console=console(stderr=True), transient=True)
        self.prog.__enter__()
        idx = 0
        for g in self.groups:
            if g.measured:
                tid = self.prog.add_task(g.name, total=max(1, g.total()), rate="")
                self.tasks.append((tid, idx, idx + g.workers))
            idx += g.workers
        return self

    def update(self) -> None:
        if self.prog is None:
            return
        dt = max(time.monotonic() - self.t0, 1e-6)
        for tid, lo, hi in self.tasks:
            done = sum(self.counters[i] for i in range(lo, hi))
            self.prog.update(tid, completed=done, rate=f"{done / dt:,.0f} msgs/s")

    def __exit__(self, *exc: Any) -> None:
        if self.prog is not None:
            self.prog.__exit__(*exc)


# =========================================================================== modes


class Bench:
    """One ``jetwire bench <mode>`` run: set-up, groups, accounting."""

    def __init__(self, mode: str, opts: dict[str, Any], url: str, monitor: str | None, embedded: bool) -> None:
        self.mode = mode
        self.o = opts
        self.url = url
        self.monitor = monitor
        self.embedded = embedded
        self.conn = {k: v for k, v in opts["conn"].items() if k != "server"}
        self.checks: list[tuple[bool, str]] = []
        self.state: dict[str, Any] = {}
        self.wait_external = False

    # -- helpers -------------------------------------------------------------------
    def connect(self) -> Any:
        import jetwire

        kw = connect_kwargs(self.conn)
        kw.setdefault("name", "jetwire-bench")
        return jetwire.connect(self.url, **kw)

    def check(self, ok: bool, text: str) -> None:
        self.checks.append((bool(ok), text))

    def _ensure_stream(self, js: Any) -> Any:
        import jetwire

        name, subj = self.o["stream"], self.o["subject"]
        try:
            st = js.stream(name)
            if self.o["purge"]:
                st.purge()
        except jetwire.StreamNotFoundError:
            st = js.create_stream(name=name, subjects=[subj], storage=self.o["storage"],
                                  num_replicas=self.o["replicas"])
        return st

    def _fill(self, nc: Any, st: Any, n: int) -> int:
        """Store ``n`` fresh messages of --size in the stream; returns the first new sequence."""
        js = nc.jetstream(timeout=30, publish_async_max_pending=4000)
        before = st.info().state.last_seq
        payload = b"x" * self.o["size"]
        subj = self.o["subject"]
        show = self.o["progress"]
        prog = None
        if show:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            prog = Progress(TextColumn("[bold]{task.description:>8}"), BarColumn(), MofNCompleteColumn(),
                            console=console(stderr=True), transient=True)
            prog.__enter__()
            tid = prog.add_task("storing", total=n)
        try:
            for i in range(n):
                js.publish_async(subj, payload, stall_wait=30)
                if prog is not None and not i & 1023:
                    prog.update(tid, completed=i)
            js.publish_async_complete(timeout=120)
        finally:
            if prog is not None:
                prog.__exit__(None, None, None)
        state = st.info().state
        if state.last_seq - before != n:
            raise BenchFailed(f"could not store the messages to consume: {state.last_seq - before} of {n}")
        if state.first_seq > before + 1:
            raise BenchFailed(f"stream {self.o['stream']} keeps only {comma(state.messages)} messages (its limits "
                              f"dropped the oldest): use a stream without limits (--stream)")
        return before + 1

    # -- set-up + groups per mode ---------------------------------------------------
    def plan(self) -> list[Group]:
        o, m = self.o, self.mode
        msgs, npub, nsub = o["msgs"], o["pub"], o["sub"]
        pubs = split_evenly(msgs, npub)
        subs0 = [0] * nsub
        if m == "pub":
            self._varz_before()
            return [Group("pub", "pub", pubs, producer=True)]
        if m == "sub":
            self.require(nsub >= 1, "--sub must be at least 1")
            groups = [Group("sub", "sub", [0] * nsub, expected=msgs)]
            if self.embedded:
                groups.append(Group("pub", "pub", [msgs], measured=False, producer=True))
            else:
                self.wait_external = True
            return groups
        if m == "pubsub":
            self.require(nsub >= 1, "--sub must be at least 1")
            return [Group("pub", "pub", pubs, producer=True), Group("sub", "sub", subs0, expected=msgs)]
        if m == "request":
            self.require(nsub >= 1 or not self.embedded, "--sub 0 (repliers elsewhere) needs --server")
            groups = [Group("req", "req", pubs, producer=True)]
            if nsub:
                groups.append(Group("rep", "rep", subs0, measured=False, fanout=False, expected=0))
            return groups
        if m == "reply":
            self.require(nsub >= 1, "--sub must be at least 1")
            groups = [Group("rep", "rep", subs0, fanout=False, expected=msgs)]
            if self.embedded:
                groups.append(Group("req", "req", [msgs], measured=False, producer=True))
            else:
                self.wait_external = True
            return groups
        nc = self.connect()
        try:
            js = nc.jetstream(timeout=o["timeout"])
            if m in ("js-pub", "js-pub-async"):
                st = self._ensure_stream(js)
                self.state["before"] = st.info().state
                role = "jspub" if m == "js-pub" else "jspubasync"
                return [Group("pub", role, pubs, producer=True, extra={"window": o["window"]})]
            if m in ("js-fetch", "js-consume", "js-ordered"):
                st = self._ensure_stream(js)
                start = self._fill(nc, st, msgs)
                self.state["start_seq"] = start
                extra = {"stream": o["stream"], "batch": o["batch"], "start_seq": start}
                if m == "js-ordered":
                    return [Group("ordered", "jsordered", subs0, expected=msgs, extra={**extra, "acks": "none"})]
                self.require(nsub >= 1, "--sub must be at least 1")
                name = o["consumer"]
                try:
                    js.delete_consumer(o["stream"], name)
                except Exception:
                    pass
                js.create_consumer(o["stream"], durable_name=name, ack_policy=o["acks"],
                                   deliver_policy="by_start_sequence", opt_start_seq=start,
                                   max_ack_pending=-1 if o["acks"] != "none" else None,
                                   filter_subject=None)
                self.state["consumer"] = name
                extra.update(consumer=name, acks=o["acks"])
                role = "jsfetch" if m == "js-fetch" else "jsconsume"
                label = "fetch" if m == "js-fetch" else "consume"
                return [Group(label, role, subs0, fanout=False, expected=msgs, extra=extra)]
            if m in ("kv-put", "kv-get"):
                import jetwire

                bucket = o["bucket"]
                try:
                    kv = js.key_value(bucket)
                except jetwire.BucketNotFoundError:
                    kv = js.create_key_value(bucket=bucket, storage=o["storage"], replicas=o["replicas"], history=1)
                prefix = "k" + uuid.uuid4().hex[:12]
                if m == "kv-put":
                    self.state["before"] = kv.status().values
                    return [Group("put", "kvput", pubs, producer=True, extra={"bucket": bucket, "key_prefix": prefix})]
                self.require(nsub >= 1, "--sub must be at least 1")
                nkeys = min(msgs, 10_000)
                self._fill_kv(kv, prefix, nkeys)
                gets = split_evenly(msgs, nsub)
                g = Group("get", "kvget", gets, producer=True, extra={"bucket": bucket, "key_prefix": prefix, "nkeys": nkeys})
                offs = []
                acc = 0
                for n in gets:
                    offs.append(acc)
                    acc += n
                g.extra["offsets_by_worker"] = offs
                return [g]
        finally:
            nc.close()
        raise CliError(f"unknown mode {m!r}")  # pragma: no cover

    def _fill_kv(self, kv: Any, prefix: str, nkeys: int) -> None:
        payload = b"x" * self.o["size"]
        for i in range(nkeys):
            kv.put(f"{prefix}.{i}", payload)

    def require(self, ok: bool, text: str) -> None:
        if not ok:
            raise click.UsageError(text)

    def _varz_before(self) -> None:
        if self.monitor:
            self.state["in_msgs"] = _varz(self.monitor)["in_msgs"]

    # -- accounting -----------------------------------------------------------------
    def account(self, res: dict[str, list[dict[str, Any]]], groups: list[Group]) -> None:
        o, m, msgs = self.o, self.mode, self.o["msgs"]
        for g in groups:
            rs = res.get(g.name, [])
            bad = sum(r.get("bad", 0) for r in rs)
            if bad:
                self.check(False, f"{g.name}: {bad} messages with the wrong content or failed acks")
            if g.producer and g.measured:
                done = sum(r["msgs"] for r in rs)
                self.check(done == sum(g.counts),
                           f"{g.name}: {comma(done)} of {comma(sum(g.counts))} {_DONE_VERB.get(g.role, 'done')}")
            if not g.producer and g.measured and g.expected:
                if g.fanout:
                    for r in rs:
                        self.check(r["msgs"] >= g.expected,
                                   f"{g.name} #{r['idx'] + 1}: received {comma(r['msgs'])} of {comma(g.expected)}")
                else:
                    got = sum(r["msgs"] for r in rs)
                    self.check(got >= g.expected, f"{g.name}: received {comma(got)} of {comma(g.expected)}")
        if m == "pub":
            if "in_msgs" in self.state:
                got = _varz(self.monitor or "")["in_msgs"] - self.state["in_msgs"]
                self.check(got >= msgs, f"server counted {comma(got)} of {comma(msgs)} messages in")
            else:
                self.check(True, "every publisher's flush round trip returned (server read every message)")
        if m == "request" and "rep" in res:
            answered = sum(r["msgs"] for r in res["rep"])
            self.check(answered == msgs, f"repliers answered {comma(answered)} of {comma(msgs)} requests")
        if m in ("js-pub", "js-pub-async", "js-fetch", "js-consume", "kv-put"):
            nc = self.connect()
            try:
                js = nc.jetstream(timeout=o["timeout"])
                if m in ("js-pub", "js-pub-async"):
                    before = self.state["before"]
                    after = js.stream(o["stream"]).info().state
                    stored = after.last_seq - before.last_seq
                    self.check(stored == msgs, f"stream {o['stream']} stored {comma(stored)} of {comma(msgs)} "
                                               f"(last seq {before.last_seq} -> {after.last_seq})")
                elif m == "kv-put":
                    after = js.key_value(o["bucket"]).status().values
                    stored = after - self.state["before"]
                    self.check(stored == msgs, f"bucket {o['bucket']} gained {comma(stored)} of {comma(msgs)} values")
                else:
                    self._account_consumer(js)
            finally:
                nc.close()

    def _account_consumer(self, js: Any) -> None:
        o = self.o
        deadline = time.monotonic() + 10
        while True:
            ci = js.consumer(o["stream"], self.state["consumer"]).info()
            pending_ok = ci.num_pending == 0
            ack_ok = o["acks"] == "none" or ci.num_ack_pending == 0
            if (pending_ok and ack_ok) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        self.check(pending_ok, f"consumer {ci.name}: {comma(ci.num_pending)} messages left undelivered")
        if o["acks"] != "none":
            self.check(ack_ok, f"consumer {ci.name}: {comma(ci.num_ack_pending)} deliveries not acknowledged")


def _varz(monitor: str) -> dict[str, Any]:
    import urllib.request

    with urllib.request.urlopen(monitor.rstrip("/") + "/varz", timeout=5) as r:
        return json.loads(r.read())


# =========================================================================== output


def build_report(b: Bench, groups: list[Group], res: dict[str, list[dict[str, Any]]], flavour: str) -> dict[str, Any]:
    o = b.o
    rep: dict[str, Any] = {
        "mode": b.mode,
        "flavour": flavour,
        "server": redact_url(b.url),
        "embedded_server": b.embedded,
        "msgs": o["msgs"],
        "size": o["size"],
        "pub": o["pub"],
        "sub": o["sub"],
        "groups": {},
    }
    if b.mode.startswith("js-") or b.mode.startswith("kv-"):
        rep.update(storage=o["storage"], replicas=o["replicas"])
        if b.mode.startswith("kv-"):
            rep["bucket"] = o["bucket"]
        else:
            rep["stream"] = o["stream"]
    if b.mode in ("js-fetch", "js-consume", "js-ordered"):
        rep["batch"] = o["batch"]
        rep["acks"] = "none" if b.mode == "js-ordered" else o["acks"]
    if b.mode == "js-pub-async":
        rep["window"] = o["window"]
    for g in groups:
        if g.measured:
            rep["groups"][g.name] = group_stats(res.get(g.name, []))
    if b.mode == "pubsub":
        all_rs = res.get("pub", []) + res.get("sub", [])
        t = group_stats([dict(r, idx=i) for i, r in enumerate(all_rs)])
        rep["total"] = {k: t[k] for k in ("msgs", "bytes", "seconds", "msgs_per_sec", "mb_per_sec")}
    rep["checks"] = [{"ok": ok, "check": text} for ok, text in b.checks]
    rep["accounted"] = all(ok for ok, _ in b.checks)
    return rep


_CLIENT_KEYS = {"pub": ("pub",), "sub": ("sub",), "pubsub": ("pub", "sub"), "request": ("pub", "sub"),
                "reply": ("sub",), "js-pub": ("pub",), "js-pub-async": ("pub",), "js-fetch": ("sub",),
                "js-consume": ("sub",), "js-ordered": ("sub",), "kv-put": ("pub",), "kv-get": ("sub",)}


def _fmt_rate(v: float) -> str:
    return f"{v:,.0f}"


def print_report(rep: dict[str, Any]) -> None:
    from rich.table import Table

    con = console()
    extra = []
    for k in ("stream", "bucket", "storage", "batch", "acks", "window"):
        if k in rep:
            extra.append(f"{k}={rep[k]}")
    clients = ", ".join(f"{k}={rep[k]}" for k in _CLIENT_KEYS[rep["mode"]])
    con.print(f"[bold]jetwire bench {rep['mode']}[/bold]  {comma(rep['msgs'])} msgs x {human_bytes(rep['size'])}, "
              f"{clients}, {rep['flavour']} flavour"
              + (", " + ", ".join(extra) if extra else "")
              + f"  [dim]({'embedded ' if rep['embedded_server'] else ''}server {rep['server']})[/dim]")
    t = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for col, just in (("group", "left"), ("client", "left"), ("msgs", "right"), ("seconds", "right"),
                      ("msgs/s", "right"), ("MB/s", "right")):
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for name, g in rep["groups"].items():
        if len(g["clients"]) > 1:
            for c in g["clients"]:
                t.add_row(name, f"[{c['client']}]", comma(c["msgs"]), f"{c['seconds']:.3f}",
                          _fmt_rate(c["msgs_per_sec"]), f"{c['mb_per_sec']:.2f}")
        t.add_row(f"[bold]{name}[/bold]", "[bold]all[/bold]", comma(g["msgs"]), f"{g['seconds']:.3f}",
                  f"[bold]{_fmt_rate(g['msgs_per_sec'])}[/bold]", f"{g['mb_per_sec']:.2f}")
    if "total" in rep:
        tt = rep["total"]
        t.add_row("[bold]pub+sub[/bold]", "", comma(tt["msgs"]), f"{tt['seconds']:.3f}",
                  f"[bold]{_fmt_rate(tt['msgs_per_sec'])}[/bold]", f"{tt['mb_per_sec']:.2f}")
    con.print(t)
    multi = {n: g for n, g in rep["groups"].items() if len(g["clients"]) > 1}
    if multi:
        s = Table(title="per-client msgs/s", title_justify="left", header_style="bold", box=None, pad_edge=False)
        for col in ("group", "min", "avg", "max", "stddev"):
            s.add_column(col, justify="left" if col == "group" else "right")
        for name, g in multi.items():
            sp = g["spread"]
            s.add_row(name, _fmt_rate(sp["min"]), _fmt_rate(sp["avg"]), _fmt_rate(sp["max"]), _fmt_rate(sp["stddev"]))
        con.print(s)
    lat = {n: g["latency"] for n, g in rep["groups"].items() if "latency" in g}
    if lat:
        lt = Table(title="latency (us)", title_justify="left", header_style="bold", box=None, pad_edge=False)
        for col in ("group", "count", "min", "p50", "p90", "p99", "p99.9", "max"):
            lt.add_column(col, justify="left" if col == "group" else "right")
        for name, L in lat.items():
            lt.add_row(name, comma(L["count"]), f"{L['min_us']:.1f}", f"{L['p50_us']:.1f}", f"{L['p90_us']:.1f}",
                       f"{L['p99_us']:.1f}", f"{L['p999_us']:.1f}", f"{L['max_us']:.1f}")
        con.print(lt)
    for c in rep["checks"]:
        mark = "[green]ok[/green]" if c["ok"] else "[bold red]FAILED[/bold red]"
        con.print(f"  {mark}  {c['check']}")


def write_csv(rep: dict[str, Any], path: str) -> None:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["mode", "flavour", "group", "client", "msgs", "bytes", "seconds", "msgs_per_sec", "mb_per_sec",
                "p50_us", "p99_us"])
    for name, g in rep["groups"].items():
        for c in g["clients"]:
            w.writerow([rep["mode"], rep["flavour"], name, c["client"], c["msgs"], c["bytes"], f"{c['seconds']:.6f}",
                        f"{c['msgs_per_sec']:.1f}", f"{c['mb_per_sec']:.3f}", "", ""])
        lat = g.get("latency") or {}
        w.writerow([rep["mode"], rep["flavour"], name, "all", g["msgs"], g["bytes"], f"{g['seconds']:.6f}",
                    f"{g['msgs_per_sec']:.1f}", f"{g['mb_per_sec']:.3f}",
                    f"{lat['p50_us']:.1f}" if lat else "", f"{lat['p99_us']:.1f}" if lat else ""])
    text = buf.getvalue()
    if path == "-":
        click.echo(text, nl=False)
    else:
        with open(path, "w", newline="", encoding="utf-8") as f:
            f.write(text)


def _need_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise CliError("--histogram needs matplotlib: pip install 'jetwire[plot]'") from None


def write_histogram(rep: dict[str, Any], latencies: dict[str, list[float]], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5), dpi=110)
    for name, lat in latencies.items():
        us = [x * 1e6 for x in lat]
        if not us:
            continue
        lo, hi = max(min(us), 0.1), max(max(us), min(us) * 1.01, 0.2)
        bins = [lo * (hi / lo) ** (i / 80) for i in range(81)]
        ax.hist(us, bins=bins, alpha=0.6, label=f"{name} ({len(us):,})")
        L = rep["groups"][name]["latency"]
        for p, style in (("p50_us", "--"), ("p99_us", ":")):
            ax.axvline(L[p], linestyle=style, color="black", linewidth=1)
            ax.annotate(p[:-3], (L[p], ax.get_ylim()[1] * 0.95), rotation=90, fontsize=8, ha="right", va="top")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("latency (us, log scale)")
    ax.set_ylabel("count")
    ax.set_title(f"jetwire bench {rep['mode']} ({rep['flavour']}, {rep['msgs']:,} msgs x {rep['size']} B)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# =========================================================================== click


def bench_options(f: Any) -> Any:
    opts = [
        click.option("--msgs", default=100_000, show_default=True, type=COUNT,
                     help="Messages (or requests, puts, gets) in total."),
        click.option("--size", default="128", show_default=True, type=SIZE, help="Message size (128, 1KB, 1MiB)."),
        click.option("--pub", "npub", default=1, show_default=True, type=click.IntRange(min=0),
                     help="Publishing clients (processes): publishers, requesters, putters."),
        click.option("--sub", "nsub", default=1, show_default=True, type=click.IntRange(min=0),
                     help="Receiving clients (processes): subscribers, repliers, consumers, getters."),
        click.option("--subject", default="bench", show_default=True, help="Subject (JetStream: the stream's subject)."),
        click.option("--stream", default="benchstream", show_default=True, help="Stream for js-* modes."),
        click.option("--consumer", default="jetwire-bench", show_default=True, help="Durable consumer for js-fetch/js-consume."),
        click.option("--bucket", default="benchbucket", show_default=True, help="Bucket for kv-* modes."),
        click.option("--storage", type=click.Choice(["file", "memory"]), default="file", show_default=True,
                     help="Storage of a stream or bucket created here."),
        click.option("--replicas", default=1, show_default=True, type=click.IntRange(min=1, max=5),
                     help="Replicas of a stream or bucket created here."),
        click.option("--purge", is_flag=True, help="Purge an existing stream first."),
        click.option("--batch", default=500, show_default=True, type=click.IntRange(min=1),
                     help="Fetch batch (js-fetch) / messages buffered (js-consume, js-ordered)."),
        click.option("--window", default=1000, show_default=True, type=click.IntRange(min=1),
                     help="js-pub-async: acks in flight at most, per publisher."),
        click.option("--acks", type=click.Choice(["none", "explicit", "all"]), default="explicit", show_default=True,
                     help="Ack policy of the consumer (js-fetch, js-consume)."),
        click.option("--aio/--sync", "aio", default=False, help="Client flavour: jetwire.aio or blocking jetwire (default)."),
        click.option("--timeout", default="10s", type=DURATION, show_default=True,
                     help="Timeout of each request / JetStream call."),
        click.option("--grace", default="10s", type=DURATION, show_default=True,
                     help="How long receivers wait for missing messages once senders are done."),
        click.option("--json", "as_json", is_flag=True, help="Print the result as JSON (stdout) and nothing else."),
        click.option("--csv", "csv_path", metavar="FILE", help="Write per-client results as CSV ('-': stdout)."),
        click.option("--histogram", metavar="PNG", help="Plot the latency histogram (needs matplotlib)."),
        click.option("--no-progress", is_flag=True, help="No live progress bar."),
    ]
    for o in reversed(opts):
        f = o(f)
    return connection_options(f)


@click.group("bench", cls=JetwireGroup)
def bench() -> None:
    """Benchmark NATS and JetStream with jetwire clients (like `nats bench`).

    Without --server (or $NATS_URL) an embedded nats-server (JetStream, temporary
    store) is started and stopped. Each client is its own process. A lost message fails
    the run (exit status 1).
    """


def run_bench(mode: str, kw: dict[str, Any]) -> dict[str, Any]:
    """Run one bench mode (``kw``: the command's options); returns the report."""
    latency_mode = MODES[mode][1]
    if kw.get("histogram"):
        if not latency_mode:
            raise click.UsageError(f"--histogram needs a mode with latencies "
                                   f"({', '.join(m for m, (_, lat) in MODES.items() if lat)})")
        _need_matplotlib()
    show_progress = not kw["no_progress"] and not kw["as_json"] and sys.stderr.isatty()
    opts = {
        "conn": kw["conn"], "msgs": kw["msgs"], "size": kw["size"], "pub": kw["npub"], "sub": kw["nsub"],
        "subject": kw["subject"], "stream": kw["stream"], "consumer": kw["consumer"], "bucket": kw["bucket"],
        "storage": kw["storage"], "replicas": kw["replicas"], "purge": kw["purge"], "batch": kw["batch"],
        "window": kw["window"], "acks": kw["acks"], "timeout": kw["timeout"], "grace": kw["grace"],
        "progress": show_progress,
    }
    if mode in ("pub", "pubsub", "js-pub", "js-pub-async", "kv-put", "request") and opts["pub"] < 1:
        raise click.UsageError(f"{mode} needs --pub of at least 1")
    flavour = "aio" if kw["aio"] else "sync"
    server = None
    if kw["conn"].get("server"):
        url, monitor, embedded = server_url(kw["conn"]["server"]), None, False
    else:
        from ..testing import NatsServer

        server = NatsServer()
        server.start()
        url, monitor, embedded = server.url, server.monitor_url, True
    try:
        b = Bench(mode, opts, url, monitor, embedded)
        groups = b.plan()
        base = {"url": url, "conn": b.conn, "subject": opts["subject"], "size": opts["size"],
                "timeout": opts["timeout"], "grace": opts["grace"], "debug": bool(os.environ.get("JETWIRE_DEBUG"))}
        def started() -> None:
            if b.wait_external and not kw["as_json"]:
                peer = "publishers" if mode == "sub" else "requesters"
                click.echo(f"ready: waiting for {comma(opts['msgs'])} messages on {opts['subject']!r} from "
                           f"{peer} elsewhere", err=True)
                sys.stderr.flush()

        res = run_groups(groups, flavour, base, show_progress, wait_external=b.wait_external, on_started=started)
        b.account(res, groups)
        rep = build_report(b, groups, res, flavour)
        latencies = {g.name: [x for r in res.get(g.name, []) for x in (r.get("latencies") or ())]
                     for g in groups if g.measured}
    finally:
        if server is not None:
            server.stop()
    if kw.get("csv_path"):
        write_csv(rep, kw["csv_path"])
    if kw.get("histogram"):
        write_histogram(rep, {k: v for k, v in latencies.items() if v}, kw["histogram"])
    if kw["as_json"]:
        echo_json(rep)
    elif kw.get("csv_path") != "-":
        print_report(rep)
        if kw.get("histogram"):
            click.echo(f"latency histogram written to {kw['histogram']}")
    if not rep["accounted"]:
        failed = [c["check"] for c in rep["checks"] if not c["ok"]]
        raise BenchFailed("messages not accounted for: " + "; ".join(failed))
    return rep


def _make_mode_command(mode: str) -> None:
    help_text, _ = MODES[mode]

    @bench.command(mode, help=help_text)
    @bench_options
    def _cmd(**kw: Any) -> None:
        run_bench(mode, kw)


for _mode in MODES:
    _make_mode_command(_mode)


@bench.command("compare")
@click.option("--rows", default="a,b,c,d,e,f,f2,g,h", show_default=True,
              help="Benchmark rows (comma separated, or 'all'; docs/performance.md describes them).")
@click.option("--rounds", default=3, show_default=True, type=click.IntRange(min=1), help="Rounds (medians are reported).")
@click.option("--scale", default=1.0, show_default=True, type=click.FloatRange(min=0.0001),
              help="Multiply the rows' message counts (0.05 for a smoke run).")
@click.option("--clients", default=None,
              help="Clients to run (default: jetwire,jetwire.aio,nats.go,nats-py,raw when available).")
@click.option("--peers", default=None, metavar="DIR", envvar="JETWIRE_BENCH_PEERS",
              type=click.Path(exists=True, file_okay=False),
              help="Folder holding the peers' rows, natspy_rows.py, natsgo_rows.py and raw_rows.py (default: the "
                   "benchmarks/ folder of the source checkout; they are not in the package).")
@click.option("-s", "--server", default=None, metavar="URL", help="A running server (default: a fresh embedded one).")
@click.option("--monitor", default=None, metavar="URL", help="Monitoring URL of --server (row a accounting).")
@click.option("--server-cpus", default=None, metavar="LIST",
              help="Run the embedded server on these CPUs only (taskset's list form: 1, 2-15).")
@click.option("--client-cpus", default=None, metavar="LIST",
              help="Run each client process on these CPUs only (taskset's list form: 0, 0,1).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def compare_cmd(rows: str, rounds: int, scale: float, clients: str | None, peers: str | None,
                server: str | None, monitor: str | None, server_cpus: str | None, client_cpus: str | None,
                as_json: bool) -> None:
    """Run the benchmark rows for jetwire (both flavours), nats.go and nats-py, each in
    its own process, in turns, on one fresh server; print medians and ratios.

    jetwire's rows come with the package; the peers' are benchmarks/natspy_rows.py (needs
    nats-py) and benchmarks/natsgo_rows.py (needs go and Debian's nats.go: apt-get install
    golang-go golang-github-nats-io-go-nats-dev) in a source checkout (--peers). A peer
    that cannot run is left out with one line saying why. --server-cpus 1 --client-cpus 0
    measures across cores on a small machine (the many-core proxy)."""
    from . import compare as cmp
    from .rows import ROWS

    try:
        row_list = cmp.parse_rows(rows)
        client_list = cmp.parse_clients(clients)
        srv_cpus = cmp.parse_cpus(server_cpus)
        cli_cpus = cmp.parse_cpus(client_cpus)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    if srv_cpus and server:
        raise click.BadParameter("--server-cpus pins the embedded server; with --server, pin that server yourself")
    folder = None
    for peer in cmp.PEER_FILES:
        if peer not in client_list:
            continue
        found, why = cmp.find_peers(peers, peer)
        if found is None:
            if clients:  # asked for by name: not a run without it
                raise CliError(f"{peer} rows unavailable: {why}")
            client_list.remove(peer)
            click.echo(cmp.unavailable_line(why, peer), err=True)
        else:
            folder = found
    err = console(stderr=True)
    quiet = as_json
    status = None
    if not quiet and sys.stderr.isatty():
        status = err.status("starting")
        status.__enter__()

    def on_start(rnd: int, r: str, c: str) -> None:
        if status is not None:
            status.update(f"round {rnd + 1}/{rounds}  row {r}  {c}")

    def on_result(rnd: int, r: str, c: str, res: dict[str, Any]) -> None:
        if quiet:
            return
        if "error" in res:
            err.print(f"round {rnd + 1} row {r:2s} {c:12s} [bold red]FAILED[/bold red] {res['error']}")
        else:
            err.print(f"round {rnd + 1} row {r:2s} {c:12s} {ROWS[r].show(res)}")

    try:
        results = cmp.run(row_list, client_list, rounds, scale, server, monitor, on_result=on_result,
                          on_start=on_start, peers=folder, server_cpus=srv_cpus, client_cpus=cli_cpus)
    finally:
        if status is not None:
            status.__exit__(None, None, None)
    summary = cmp.summarize(results, scale)
    summary.update(rounds=rounds, scale=scale, clients=client_list, **cmp.pinning(srv_cpus, cli_cpus))
    if as_json:
        echo_json(summary)
    else:
        print_compare(summary, client_list)
    click.get_current_context().meta["jetwire.compare_summary"] = summary
    if summary["failed"] and not click.get_current_context().meta.get("jetwire.compare_no_raise"):
        raise CliError("some rows failed (see above)")


def failed_clients(summary: dict[str, Any]) -> list[str]:
    """``row/client`` of every failed run in a compare summary."""
    return [f"{r}/{c}" for r, row in summary["rows"].items() for c, v in row["clients"].items() if v["failed"]]


def print_compare(summary: dict[str, Any], clients: list[str]) -> None:
    from rich.table import Table

    from .rows import ROWS

    con = console()
    from .compare import pinning_line

    pin = pinning_line(summary)
    t = Table(title=f"medians over {summary['rounds']} round(s), scale {summary['scale']:g}; "
                    "ratio = times better than nats.go (go) / nats-py (py) / the raw-socket limit (raw): "
                    "rates jetwire/peer, "
                    "latency peer/jetwire (p50 for c, p99 for h); cpu = client CPU per message"
                    + (f"; {pin}" if pin else ""),
              title_justify="left", header_style="bold")
    t.add_column("row")
    t.add_column("what", min_width=20)
    t.add_column("n", justify="right")
    for c in clients:
        t.add_column(c, justify="right")
    short = {"nats.go": "go", "nats-py": "py", "raw": "raw"}
    keys = {"nats.go": "ratios_go", "nats-py": "ratios", "raw": "ratios_raw"}
    peers = [p for p in short if p in clients]
    ratio_cols = [c for c in clients if c.startswith("jetwire")] if peers else []
    for c in ratio_cols:
        t.add_column(f"{c}\nvs " + " / ".join(short[p] for p in peers), justify="right")
    t.add_column("target")
    for r, row in summary["rows"].items():
        spec = ROWS[r]
        cells = [r, row["short"], comma(row["n"])]
        for c in clients:
            v = row["clients"].get(c)
            if v is None:
                cells.append("[dim]n/a[/dim]")
            elif v["median"] is None:
                cells.append("[bold red]FAILED[/bold red]")
            else:
                m = v["median"]
                if spec.kind == "rate":
                    txt = f"{m['rate']:,.0f}/s"
                elif spec.kind == "service":
                    txt = f"{m['rate']:,.0f}/s\np50 {m['p50_us']:.0f}us\np99 {m['p99_us']:.0f}us"
                else:
                    txt = f"p50 {m['p50_us']:.0f}us\np99 {m['p99_us']:.0f}us"
                if "cpu_rate" in m:
                    txt += f"\n{m['cpu_rate']:,.0f}/s CPU"
                if "vs_pure" in m:
                    txt += f"\n{m['vs_pure']:.1f}x pure twin"
                if "p999_us" in m:
                    txt += f"\np99.9 {m['p999_us']:.0f}us"
                if "cpu_us" in m:
                    txt += f"\ncpu {m['cpu_us']:.2f}us"
                if v["failed"]:
                    txt += f"\n[red]{v['failed']} failed[/red]"
                cells.append(txt)
        for c in ratio_cols:
            parts = []
            for p in peers:
                x = row.get(keys[p], {}).get(c)
                parts.append(f"{x:.2f}x" if x is not None else "-")
            if all(x == "-" for x in parts) and c in row.get("vs_f", {}):
                cells.append(f"{row['vs_f'][c]:.2f}x of f")
            else:
                if c in row.get("p50_ratios", {}):
                    parts.append(f"p50 {row['p50_ratios'][c]:.2f}x of py")
                cells.append("\n".join(parts))
        cells.append(row["target"])
        t.add_row(*cells)
    con.print(t)
    for r, row in summary["rows"].items():
        for c, v in row["clients"].items():
            for e in v["errors"]:
                con.print(f"[bold red]row {r} {c} failed:[/bold red] {e}")
