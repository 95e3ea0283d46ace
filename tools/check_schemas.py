"""Conformance check of jetwire.schemas against the published JetStream schemas.

    python tools/check_schemas.py [--published ../shared/schemas] [--save-corpus DIR] [-v]

1. Produces a corpus of real documents: starts a nats-server (jetwire.testing), drives
   it with jetwire (streams, consumers, messages, nak/term/ack, pause, snapshot and
   restore, pagination, errors) and records every API request and response (through
   ``trace_cb``) and every advisory and metric (``$JS.EVENT.>``).
2. Validates each document against jetwire's schema of its type and against the
   published schema of the same type (draft-07, ``$ref``s resolved in the published
   folder), and fails on any disagreement not listed in ``KNOWN`` (places where the
   published schemas disagree with what the server sends; jetwire follows the server).
   jetwire's schema must also accept every document of the corpus.
3. Fails when a published advisory, metric or micro type has no jetwire schema, and
   lists the other published types jetwire has none for.

Not a pytest test: the published schemas live beside the repository (../shared), not in
a fresh clone. Exit status 0 when everything agrees.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from datetime import UTC
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))


import fastjsonschema  # noqa: E402
import orjson  # noqa: E402

import jetwire  # noqa: E402
from jetwire import schemas  # noqa: E402
from jetwire.testing import NatsServer  # noqa: E402

API = "io.nats.jetstream.api.v1."

# (type, JSON path prefix) -> why the published schema's verdict is not jetwire's
KNOWN: dict[tuple[str, str], str] = {
    **{(f"io.nats.jetstream.advisory.v1.{t}", "replicas"):
       "the published schema types replicas as one peer; the server sends a list of peers"
       for t in ("stream_leader_elected", "consumer_leader_elected", "stream_quorum_lost", "consumer_quorum_lost",
                 "domain_leader_elected")},
    **{(f"io.nats.server.advisory.v1.{t}", "feature_flags"):
       "the server's info carries feature_flags, which the published server_info_v1 does not list"
       for t in ("client_connect", "client_disconnect", "account_connections")},
    ("io.nats.jetstream.advisory.v1.snapshot_create", "block"):
        "the server sends the stream's state instead of blocks/block_size, which the published schema requires",
    ("io.nats.jetstream.api.v1.consumer_unpin_response", "error"):
        "the published schema's error branch wants an error inside the error object",
    ("io.nats.jetstream.advisory.v1.nak", "consumer_seq"):
        "the published schema types consumer_seq as a string; the server sends an integer",
    ("io.nats.jetstream.advisory.v1.terminated", "consumer_seq"):
        "the published schema types consumer_seq as a string; the server sends an integer",
}

# request subject (relative to $JS.API) -> the response type
_RESPONSES = [
    ("STREAM.CREATE.", "stream_create_response"), ("STREAM.UPDATE.", "stream_update_response"),
    ("STREAM.INFO.", "stream_info_response"), ("STREAM.DELETE.", "stream_delete_response"),
    ("STREAM.PURGE.", "stream_purge_response"), ("STREAM.NAMES", "stream_names_response"),
    ("STREAM.LIST", "stream_list_response"), ("STREAM.MSG.GET.", "stream_msg_get_response"),
    ("STREAM.MSG.DELETE.", "stream_msg_delete_response"), ("STREAM.SNAPSHOT.", "stream_snapshot_response"),
    ("STREAM.RESTORE.", "stream_restore_response"), ("CONSUMER.CREATE.", "consumer_create_response"),
    ("CONSUMER.INFO.", "consumer_info_response"), ("CONSUMER.DELETE.", "consumer_delete_response"),
    ("CONSUMER.NAMES.", "consumer_names_response"), ("CONSUMER.LIST.", "consumer_list_response"),
    ("CONSUMER.PAUSE.", "consumer_pause_response"), ("CONSUMER.UNPIN.", "consumer_unpin_response"),
    ("CONSUMER.RESET.", "consumer_reset_response"), ("STREAM.LEADER.STEPDOWN.", "stream_leader_stepdown_response"),
    ("CONSUMER.LEADER.STEPDOWN.", "consumer_leader_stepdown_response"),
    ("META.LEADER.STEPDOWN", "meta_leader_stepdown_response"), ("STREAM.PEER.REMOVE.", "stream_remove_peer_response"),
    ("INFO", "account_info_response"),
]


def response_type(subject: str) -> str | None:
    for prefix, name in _RESPONSES:
        if subject == prefix or (prefix.endswith(".") and subject.startswith(prefix)):
            return API + name
    return None


# ------------------------------------------------------------------------ the corpus


class Recorder:
    """Collects ``(type, document, where)``: API requests and responses through a
    JetStream context's ``trace_cb``, events from a raw ``$JS.EVENT.>`` subscription."""

    def __init__(self) -> None:
        self.docs: list[tuple[str, Any, str]] = []
        self._last = ""

    def trace(self, subject: str, payload: bytes) -> None:
        if subject.startswith("$JS.API."):
            rel = subject[len("$JS.API."):]
            req_type = schemas.request_type(rel)
            if req_type is not None and payload:
                self.docs.append((req_type, orjson.loads(payload), f"request {rel}"))
            self._last = rel
        elif payload:
            rel, self._last = self._last, ""
            resp = orjson.loads(payload)
            t = resp.get("type") if isinstance(resp, dict) else None
            rtype = response_type(rel)
            if rtype is not None:
                self.docs.append((t if isinstance(t, str) and t.startswith(API) else rtype, resp, f"response {rel}"))

    def drain(self, sub: Any, quiet: float = 1.0) -> None:
        """Every message ``sub`` gets until none arrives for ``quiet`` seconds, as documents."""
        while True:
            try:
                msg = sub.next_msg(timeout=quiet)
            except jetwire.TimeoutError:
                return
            doc = orjson.loads(msg.data)
            self.docs.append((schemas.type_of(doc), doc, f"event on {msg.subject}"))


def single_server(rec: Recorder, tmp: Path) -> None:
    """Streams, consumers, messages, nak/term/ack, pause, snapshot and restore, errors."""
    from datetime import datetime, timedelta

    with NatsServer() as srv:
        nc = jetwire.connect(srv.url)
        js = nc.jetstream(trace_cb=rec.trace, validate=True)  # requests go out complete
        events = nc.subscribe("$JS.EVENT.>")  # the raw documents, as the server sent them
        nc.flush()
        s = "CORPUS"
        js.create_stream(name=s, subjects=["corpus.>"], max_msgs=1000, description="corpus", metadata={"k": "v"},
                         allow_direct=True, duplicate_window=10.0)
        js.update_stream(name=s, subjects=["corpus.>"], max_msgs=2000, description="corpus")
        js.create_stream(name="MIRROR", mirror=jetwire.StreamSource(name=s), storage="memory")
        for i in range(10):
            js.publish(f"corpus.{i % 3}", b"x" * 10, headers={"H": "v"} if i % 2 else None)
        st = js.stream(s)
        st.info(subjects_filter=">", deleted_details=True)
        st.get_msg(2)
        st.get_last_msg_for_subject("corpus.1")
        st.delete_msg(3)
        list(js.list_streams())
        list(js.stream_names())
        c = js.create_consumer(s, durable_name="C", max_deliver=2, sample_freq="100%", backoff=[1.0, 2.0],
                               ack_wait=5.0, metadata={"a": "b"})
        js.create_consumer(s, name="PUSH", deliver_subject="push.corpus", idle_heartbeat=5.0, flow_control=True)
        js.create_consumer(s, durable_name="G", priority_groups=["g"], priority_policy="pinned_client")
        js.create_consumer(s, durable_name="SEQ", deliver_policy="by_start_sequence", opt_start_seq=2)
        js.update_consumer(s, durable_name="C", max_deliver=2, sample_freq="100%", backoff=[1.0, 2.0],
                           ack_wait=5.0, metadata={"a": "c"})
        msgs = list(c.fetch(3, max_wait=2))
        msgs[0].nak()
        msgs[1].term("corpus")
        msgs[2].ack_sync()
        for m in c.fetch(1, max_wait=2):
            m.nak()
        list(c.fetch(1, max_wait=1))  # the message is now out of deliveries
        c.info()
        list(js.list_consumers(s))
        list(js.consumer_names(s))
        js.pause_consumer(s, "C", datetime.now(UTC) + timedelta(minutes=5))
        js.resume_consumer(s, "C")
        for bad in (lambda: js.unpin_consumer(s, "G", "nope"), lambda: js.stream("MISSING"),
                    lambda: js.consumer(s, "MISSING"), lambda: js.api_request(f"CONSUMER.RESET.{s}.C", {"seq": 1})):
            try:
                bad()
            except jetwire.JetStreamError:
                pass
        js.account_info()
        js.snapshot_stream(s, tmp / "bk")
        js.delete_consumer(s, "PUSH")
        js.delete_stream(s)
        js.restore_stream(tmp / "bk")
        st = js.stream(s)
        st.purge(subject="corpus.0")
        st.purge(keep=1)
        js.delete_stream("MIRROR")
        js.delete_stream(s)
        nc.flush()
        rec.drain(events)
        nc.close()


def cluster(rec: Recorder) -> None:
    """A three-server cluster: replicated streams and consumers, leader elections."""
    from jetwire.testing import start_cluster

    with start_cluster(3) as cl:
        nc = jetwire.connect(cl.url)
        js = nc.jetstream(trace_cb=rec.trace, validate=True)
        events = nc.subscribe("$JS.EVENT.>")
        nc.flush()
        js.create_stream(name="R3", subjects=["r3.>"], num_replicas=3)
        js.create_consumer("R3", durable_name="D")
        # a new R3 stream's leader takes a moment to be reachable from every server
        # (and a server may be slow to answer under load): retry for up to 20 s
        js.publish("r3.a", b"x", retry_attempts=80, retry_wait=0.25)
        js.api_request("STREAM.LEADER.STEPDOWN.R3", {})
        js.api_request("CONSUMER.LEADER.STEPDOWN.R3.D", {})
        try:
            js.api_request("STREAM.PEER.REMOVE.R3", {"peer": "nobody"})
        except jetwire.JetStreamError:
            pass
        rec.drain(events, quiet=2.0)
        js.delete_stream("R3")
        rec.drain(events)
        nc.close()


ACCOUNTS = """
accounts {
  SYS { users [{user: sys, password: sys}] }
  SVC {
    users [{user: svc, password: svc}]
    exports [{service: "svc.echo", latency: {sampling: 100%, subject: "latency.svc.echo"}}]
  }
  APP {
    jetstream: enabled
    users [{user: app, password: app}]
    imports [{service: {account: SVC, subject: "svc.echo"}}]
  }
}
system_account: SYS
"""


def system_account(rec: Recorder) -> None:
    """Server advisories and metrics: connects, disconnects, account connections, service latency."""
    with NatsServer(config=ACCOUNTS) as srv:
        url = srv.url.replace("nats://", "")
        sys_nc = jetwire.connect(f"nats://sys:sys@{url}")
        advisories = sys_nc.subscribe("$SYS.ACCOUNT.*.>")
        sys_nc.flush()
        svc = jetwire.connect(f"nats://svc:svc@{url}")
        latency = svc.subscribe("latency.svc.echo")
        svc.subscribe("svc.echo", cb=lambda m: m.respond(b"echo"))
        svc.flush()
        app = jetwire.connect(f"nats://app:app@{url}", name="corpus-app")
        app.request("svc.echo", b"hi", timeout=5)
        app.close()
        rec.drain(latency, quiet=2.0)
        rec.drain(advisories, quiet=2.0)
        svc.close()
        sys_nc.close()


def micro_service(rec: Recorder) -> bool:
    """The ``$SRV`` documents of a jetwire.micro service (False when jetwire has no micro)."""
    try:
        from jetwire import micro
    except ImportError:
        return False
    with NatsServer(jetstream=False) as srv:
        nc = jetwire.connect(srv.url)
        svc = micro.add_service(nc, name="corpus", version="1.0.0", description="corpus", metadata={"a": "b"})
        svc.add_endpoint("echo", lambda req: req.respond(req.data))
        svc.add_group("math").add_endpoint("fail", lambda req: req.respond_error("400", "bad"))
        nc.request("echo", b"x", timeout=5)
        nc.request("math.fail", b"x", timeout=5)
        inbox = nc.new_inbox()
        sub = nc.subscribe(inbox)
        for verb in ("PING", "INFO", "STATS"):
            nc.publish(f"$SRV.{verb}", b"", reply=inbox)
            nc.publish(f"$SRV.{verb}.corpus", b"", reply=inbox)
        rec.drain(sub, quiet=1.0)
        svc.stop()
        nc.close()
    return True


def produce_corpus(tmp: Path) -> list[tuple[str, Any, str]]:
    """``[(type, document, where it came from)]`` from real servers."""
    rec = Recorder()
    single_server(rec, tmp)
    cluster(rec)
    system_account(rec)
    if not micro_service(rec):
        print("micro: jetwire has no micro module here; no $SRV documents in the corpus")
    return [d for d in rec.docs if d[0] != schemas.UNKNOWN or not d[2].startswith("event on $SYS")]


# ------------------------------------------------------------------- published schemas


class Published:
    """The published schemas, by type (their ``title``), compiled on first use."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.by_type: dict[str, Path] = {}
        self.by_url: dict[str, Any] = {}
        for path in sorted(folder.rglob("*.json")):
            doc = json.loads(path.read_text())
            url = "https://nats.io/schemas/" + path.relative_to(folder).as_posix()
            self.by_url[url] = doc
            title = doc.get("title", "")
            if title.startswith("io.nats.") and not title.endswith(".definitions"):
                self.by_type[title] = path
        self._compiled: dict[str, Callable[[Any], Any]] = {}

    def _handler(self, uri: str) -> Any:
        doc = self.by_url.get(uri.split("#")[0])
        if doc is None:
            raise KeyError(f"no published schema at {uri}")
        return doc

    def validate(self, type_: str, doc: Any) -> list[str]:
        check = self._compiled.get(type_)
        if check is None:
            path = self.by_type[type_]
            url = "https://nats.io/schemas/" + path.relative_to(self.folder).as_posix()
            definition = dict(self.by_url[url])
            definition["$id"] = url  # some files carry another file's $id: resolve from where they are
            check = fastjsonschema.compile(definition, handlers={"https": self._handler}, use_default=False)
            self._compiled[type_] = check
        try:
            check(json.loads(json.dumps(doc)))
        except fastjsonschema.JsonSchemaValueException as exc:
            return [f"{exc.name}: {exc.message} (rule {exc.rule})"]
        return []


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--published", type=Path, default=ROOT.parent / "shared" / "schemas")
    ap.add_argument("--save-corpus", type=Path, default=None, help="write the corpus here as JSON lines")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    if not args.published.is_dir():
        print(f"check_schemas: no published schemas at {args.published}", file=sys.stderr)
        return 2
    published = Published(args.published)
    problems: list[str] = []

    ours = set(schemas.names())
    missing = sorted(set(published.by_type) - ours)
    must = [t for t in missing if ".advisory." in t or ".metric." in t or t.startswith("io.nats.micro.")]
    for t in must:
        problems.append(f"no jetwire schema for the published {t}")
    extra = sorted(ours - set(published.by_type))

    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        corpus = produce_corpus(Path(tmp))
    if args.save_corpus:
        args.save_corpus.write_text("".join(json.dumps({"type": t, "where": w, "doc": d}) + "\n"
                                            for t, d, w in corpus))
    counts: dict[str, int] = {}
    known_seen: dict[str, int] = {}
    for type_, doc, where in corpus:
        counts[type_] = counts.get(type_, 0) + 1
        if type_ not in ours:
            problems.append(f"{where}: jetwire has no schema for {type_}")
            continue
        our_errors = schemas.validate(doc, type_)
        if our_errors:
            problems.append(f"{where} ({type_}): jetwire's schema rejects a real document: {our_errors}")
        if type_ not in published.by_type:
            continue
        their_errors = published.validate(type_, doc)
        if bool(our_errors) == bool(their_errors):
            continue
        why = next((reason for (t, field), reason in KNOWN.items()
                    if t == type_ and any(field in e for e in their_errors)), None)
        if why is not None:
            known_seen[f"{type_}: {why}"] = known_seen.get(f"{type_}: {why}", 0) + 1
            continue
        problems.append(f"{where} ({type_}): jetwire {'rejects' if our_errors else 'accepts'}, published "
                        f"{'rejects' if their_errors else 'accepts'}: {their_errors or our_errors}\n    {doc}")

    print(f"corpus: {len(corpus)} documents of {len(counts)} types from a real nats-server")
    if args.verbose:
        for t in sorted(counts):
            print(f"  {counts[t]:4d}  {t}")
    for k, n in sorted(known_seen.items()):
        print(f"known difference ({n}x), jetwire follows the server: {k}")
    if missing:
        print(f"published types jetwire has no schema for ({len(missing)}):")
        for t in missing:
            print(f"  {t}")
    if extra and args.verbose:
        print(f"jetwire types not published ({len(extra)}): {', '.join(extra)}")
    if problems:
        print(f"FAILED: {len(problems)} problem(s)")
        for p in problems:
            print(f"  {p}")
        return 1
    print("schemas: jetwire and the published schemas agree on every document")
    return 0


if __name__ == "__main__":
    sys.exit(main())
