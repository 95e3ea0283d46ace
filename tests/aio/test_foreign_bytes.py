"""What another client puts on the wire never breaks jetwire.

A raw socket speaking the protocol stands in for another client (nats.go lets its users
publish any bytes): subjects, reply subjects, header names and values that are not UTF-8,
and a message whose header block is malformed. jetwire receives every message with the
exact bytes recoverable (``.encode("utf-8", "surrogateescape")``), skips and reports the
malformed one, loses nothing around it and never drops the connection; JetStream reads of
a stream holding such messages work. (asyncio source; the blocking twin is generated.)
"""
from __future__ import annotations

import asyncio  # aio-only
import socket

import jetwire.aio as jetwire
from tests.aio._helpers import Errors, uniq, wait_until


def _raw(b: str) -> bytes:
    return b.encode("utf-8", "surrogateescape")


class RawClient:
    """A bare protocol peer on a plain socket (blocking; small, bounded exchanges)."""

    def __init__(self, url: str) -> None:
        host, port = url.split("//")[1].rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=5)
        self.buf = b""
        self.read_until(b"\r\n")  # INFO
        self.sock.sendall(b'CONNECT {"verbose":false,"pedantic":false,"headers":true}\r\n')

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def hpub(self, subject: bytes, header_block: bytes, payload: bytes, reply: bytes = b"") -> None:
        self.send(b"HPUB %s %s%d %d\r\n%s%s\r\n" % (subject, reply + b" " if reply else b"", len(header_block),
                                                   len(header_block) + len(payload), header_block, payload))

    def sync(self) -> None:
        """Everything sent so far was processed by the server."""
        self.send(b"PING\r\n")
        self.read_until(b"PONG\r\n")

    def read_until(self, marker: bytes) -> bytes:
        while marker not in self.buf:
            chunk = self.sock.recv(65536)
            assert chunk, "server closed the raw connection"
            self.buf += chunk
        head, _, self.buf = self.buf.partition(marker)
        return head + marker

    def close(self) -> None:
        self.sock.close()


async def read_until(raw: RawClient, marker: bytes) -> bytes:
    """Read from the raw peer while jetwire keeps running (the asyncio loop must not block)."""
    return await asyncio.get_running_loop().run_in_executor(None, raw.read_until, marker)  # aio-only
    # sync-only: return raw.read_until(marker)


LATIN1 = b"NATS/1.0\r\nX-Latin1: caf\xe9\r\nX-\xe9t\xe9: \xff\xfe\r\n\r\n"
MALFORMED = b"NATS/1.0\r\nthis line has no colon\r\n\r\n"


async def test_non_utf8_content_arrives_exactly_and_nothing_around_it_is_lost(nats_url):
    errors = Errors()
    nc = await jetwire.connect(nats_url, error_cb=errors)
    raw = RawClient(nats_url)
    p = uniq("fb").lower().encode()
    try:
        sub = await nc.subscribe(p.decode() + ".>")
        await nc.flush()
        raw.send(b"PUB %s.before 1\r\na\r\n" % p)
        raw.send(b"PUB %s.caf\xe9 r.\xff\xfe 1\r\nb\r\n" % p)
        raw.hpub(p + b".hdr", LATIN1, b"c")
        raw.hpub(p + b".bad", MALFORMED, b"x")  # this one is skipped and reported
        raw.send(b"PUB %s.after 1\r\nd\r\n" % p)
        raw.sync()
        got = [await sub.next_msg(timeout=5) for _ in range(4)]
        assert [m.data for m in got] == [b"a", b"b", b"c", b"d"]
        assert _raw(got[1].subject) == p + b".caf\xe9" and _raw(got[1].reply) == b"r.\xff\xfe"
        h = got[2].headers
        assert _raw(h["X-Latin1"]) == b"caf\xe9"
        assert [(_raw(k), _raw(v)) for k, v in h.items()] == [(b"X-Latin1", b"caf\xe9"), (b"X-\xe9t\xe9", b"\xff\xfe")]
        err = await errors.wait_for(jetwire.ProtocolError)
        assert err.subject == (p + b".bad").decode() and "no colon" in str(err)
        assert nc.is_connected and nc.stats["reconnects"] == 0 and nc.last_error is err
    finally:
        raw.close()
        await nc.close()


async def test_answers_and_republishing_send_the_bytes_received(nats_url):
    nc = await jetwire.connect(nats_url)
    raw = RawClient(nats_url)
    p = uniq("fb").lower().encode()
    try:
        async def responder(msg):
            await msg.respond(b"pong", headers={"Echo": msg.headers["X-Latin1"]})

        await nc.subscribe(p.decode() + ".svc", cb=responder)
        fwd = await nc.subscribe(p.decode() + ".in.>")
        await nc.flush()
        raw.send(b"SUB %s.r.\xff 1\r\n" % p)
        raw.hpub(p + b".svc", LATIN1, b"ping", reply=p + b".r.\xff")
        answer = await read_until(raw, b"pong\r\n")
        assert answer.startswith(b"HMSG %s.r.\xff 1 " % p)
        assert b"Echo: caf\xe9\r\n" in answer
        # a bridge forwards what it received unchanged (subject, headers as received)
        raw.hpub(p + b".in.caf\xe9", LATIN1, b"payload")
        m = await fwd.next_msg(timeout=5)
        raw.send(b"SUB %s.out.> 2\r\n" % p)
        raw.sync()
        await nc.publish(p.decode() + ".out" + m.subject[len(p) + 3:], m.data, headers=m.headers)
        await nc.flush()
        out = await read_until(raw, b"payload\r\n")
        assert out == b"HMSG %s.out.caf\xe9 2 %d %d\r\n%spayload\r\n" % (p, len(LATIN1), len(LATIN1) + 7, LATIN1)
    finally:
        raw.close()
        await nc.close()


async def test_a_stream_holding_such_messages_reads_everywhere(nats_url):
    nc = await jetwire.connect(nats_url)
    raw = RawClient(nats_url)
    js = nc.jetstream()
    name = uniq("FB")
    subj = name.lower().encode()
    await js.create_stream(name=name, subjects=[subj.decode() + ".>"], allow_direct=True)
    try:
        raw.send(b"PUB %s.a 1\r\n1\r\n" % subj)
        raw.hpub(subj + b".caf\xe9", LATIN1, b"2")
        raw.send(b"PUB %s.b 1\r\n3\r\n" % subj)
        raw.sync()

        async def stored() -> bool:
            return (await js.stream_info(name)).state.messages == 3

        assert await wait_until(stored, 5)

        def check(msgs) -> None:
            assert [m.data for m in msgs] == [b"1", b"2", b"3"]
            assert _raw(msgs[1].subject) == subj + b".caf\xe9"
            assert _raw(msgs[1].headers["X-Latin1"]) == b"caf\xe9"

        c = await js.create_consumer(name, durable_name="d", ack_policy="explicit")
        batch = [m async for m in await c.fetch(3, max_wait=5)]
        check(batch)
        for m in batch:
            await m.ack_sync()
        oc = await js.ordered_consumer(name)
        check([m async for m in await oc.fetch(3, max_wait=5)])
        c2 = await js.create_consumer(name, durable_name="e", ack_policy="none")
        ctx = await c2.messages()
        check([await ctx.next(timeout=5) for _ in range(3)])
        ctx.stop()
        stream = await js.stream(name)
        direct = await stream.get_msg(2, direct=True)
        assert direct.data == b"2" and _raw(direct.headers["X-Latin1"]) == b"caf\xe9"
        assert _raw(direct.subject) == subj + b".caf\xe9"
        stored_msg = await stream.get_msg(2)
        assert stored_msg.data == b"2" and _raw(stored_msg.headers["X-Latin1"]) == b"caf\xe9"
        assert nc.stats["reconnects"] == 0
    finally:
        await js.delete_stream(name)
        raw.close()
        await nc.close()


async def test_kv_and_object_store_entries_written_by_another_client(nats_url):
    nc = await jetwire.connect(nats_url)
    raw = RawClient(nats_url)
    js = nc.jetstream()
    bucket = uniq("fbkv")
    kv = await js.create_key_value(bucket=bucket)
    obs = await js.create_object_store(bucket=uniq("fbobj"))
    try:
        await kv.put("plain", b"p")
        raw.hpub(b"$KV.%s.foreign" % bucket.encode(), LATIN1, b"value")  # a foreign header on an entry
        raw.send(b"PUB $KV.%s.k\xe9y 2\r\nxx\r\n" % bucket.encode())  # a key that is not UTF-8
        raw.sync()
        e = await kv.get("foreign")
        assert e.value == b"value" and e.revision == 2
        keys = await kv.keys()
        assert sorted(_raw(k) for k in keys) == [b"foreign", b"k\xe9y", b"plain"]
        w = await kv.watch_all()
        seen = []
        async for entry in w:
            if entry is None:
                break
            seen.append((_raw(entry.key), entry.value))
        w.stop()
        assert seen == [(b"plain", b"p"), (b"foreign", b"value"), (b"k\xe9y", b"xx")]

        await obs.put_bytes("doc", b"x" * 1000)
        info = await obs.get_info("doc")
        # another client re-publishes the object's meta with a foreign header: still readable
        meta_subject = f"$O.{info.bucket}.M.".encode()
        meta = await js.api_request(f"STREAM.MSG.GET.OBJ_{info.bucket}", {"last_by_subj": f"$O.{info.bucket}.M.>"})
        assert meta["message"]["subject"].startswith(meta_subject.decode())
        import base64

        raw.hpub(meta["message"]["subject"].encode(), LATIN1, base64.b64decode(meta["message"]["data"]))
        raw.sync()
        got = await obs.get("doc")
        assert await got.read() == b"x" * 1000
        assert [i.name for i in await obs.list()] == ["doc"]
        assert nc.stats["reconnects"] == 0
    finally:
        raw.close()
        await js.delete_key_value(bucket)
        await nc.close()
