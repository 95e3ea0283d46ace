"""The blocking flavour hammered from 8 threads on one connection (ahead of free-threaded
Python): core publishers, JetStream async publishers, a requester, a reader taking from a
subscription and callback threads that count and answer. Every message is accounted
for, in order per publisher, and no thread raises."""
from __future__ import annotations

import threading
from typing import Any

import jetwire
from tests.sync._helpers import uniq

from .report import record

CORE_THREADS, CORE_MSGS = 4, 150000
JS_THREADS, JS_MSGS = 2, 20000
REQUESTS = 3000


def test_eight_threads_on_one_connection(nats_url):
    errors: list = []
    nc = jetwire.connect(nats_url, error_cb=errors.append)
    base = uniq("H")
    stream = uniq("HJS")
    try:
        js = nc.jetstream()
        js.create_stream(name=stream, subjects=[f"{stream}.>"], storage="memory")
        read: dict = {t: [] for t in range(CORE_THREADS)}
        by_cb: dict = {t: [] for t in range(CORE_THREADS)}
        cb_lock = threading.Lock()
        everything = threading.Event()

        def on_msg(msg: Any) -> None:  # a callback thread
            t, i = msg.data.split(b":")
            with cb_lock:
                by_cb[int(t)].append(int(i))
                if sum(map(len, by_cb.values())) == CORE_THREADS * CORE_MSGS:
                    everything.set()

        sub_read = nc.subscribe(f"{base}.*")
        nc.subscribe(f"{base}.*", cb=on_msg)
        nc.subscribe(f"{base}-svc", cb=lambda m: m.respond(m.data))
        nc.flush(5)
        failures: list = []
        acked: list = []
        answers: list = []

        def guard(fn: Any, *args: Any) -> threading.Thread:
            def run() -> None:
                try:
                    fn(*args)
                except BaseException as exc:  # pragma: no cover - reported below
                    failures.append(exc)
            th = threading.Thread(target=run)
            th.start()
            return th

        def core(t: int) -> None:
            for i in range(CORE_MSGS):
                nc.publish(f"{base}.{t}", b"%d:%d" % (t, i))

        def jsp(t: int) -> None:
            # a busy box may take longer than the default 0.2 s to make room in the window
            futs = [js.publish_async(f"{stream}.{t}", b"%d" % i, msg_id=f"{t}-{i}", stall_wait=30)
                    for i in range(JS_MSGS)]
            js.publish_async_complete(timeout=60)
            acked.extend(f.result(0).seq for f in futs)

        def requester() -> None:
            for i in range(REQUESTS):
                answers.append(nc.request(f"{base}-svc", b"%d" % i, timeout=10).data)

        def reader() -> None:
            for _ in range(CORE_THREADS * CORE_MSGS):
                msg = sub_read.next_msg(30)
                t, i = msg.data.split(b":")
                read[int(t)].append(int(i))

        threads = [guard(core, t) for t in range(CORE_THREADS)]
        threads += [guard(jsp, t) for t in range(JS_THREADS)]
        threads += [guard(requester), guard(reader)]
        assert len(threads) == 8
        for th in threads:
            th.join(120)
        assert not any(th.is_alive() for th in threads), "a thread hung"
        assert everything.wait(30)
        stored = js.stream(stream).info().state.messages
        total = CORE_THREADS * CORE_MSGS * 2 + JS_THREADS * JS_MSGS + REQUESTS
        got = sum(map(len, read.values())) + sum(map(len, by_cb.values())) + len(acked) + len(answers)
        ordered = all(read[t] == list(range(CORE_MSGS)) and by_cb[t] == list(range(CORE_MSGS))
                      for t in range(CORE_THREADS))
        record("8 threads, one blocking connection", "sync", published=total, acked=got,
               stored=got - len(acked) + stored, lost=total - got, duplicated=len(acked) - len(set(acked)))
        assert failures == [] and errors == []
        assert ordered, "a message lost, duplicated or out of order per publisher"
        assert sorted(acked) == list(range(1, JS_THREADS * JS_MSGS + 1)) and stored == JS_THREADS * JS_MSGS
        assert answers == [b"%d" % i for i in range(REQUESTS)]
        assert sub_read.dropped == 0
    finally:
        nc.close()
