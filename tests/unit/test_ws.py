"""The sans-IO WebSocket adapter (connection/ws.py) against an in-memory wsproto server,
and the ws:// / wss:// URL handling of the server pool."""
from __future__ import annotations

import pytest
from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Ping,
    Pong,
    RejectConnection,
    Request,
)
from wsproto.extensions import PerMessageDeflate

from jetwire.connection.ws import WsAdapter, ws_path
from jetwire.errors import ProtocolError
from jetwire.options import Server, ServerPool

INFO = b'INFO {"server_id":"x","headers":true}\r\n'


def _server(adapter: WsAdapter):
    """A wsproto server that took the adapter's upgrade request: (server, request event)."""
    srv = WSConnection(ConnectionType.SERVER)
    srv.receive_data(adapter.request())
    (req,) = list(srv.events())
    assert isinstance(req, Request)
    return srv, req


def _accept(adapter: WsAdapter, compression: bool = False) -> WSConnection:
    srv, _req = _server(adapter)
    ext = [PerMessageDeflate()] if compression else []
    out = srv.send(AcceptConnection(extensions=ext)) + srv.send(BytesMessage(data=INFO))
    assert adapter.receive(out) == INFO  # the INFO line may come with the 101 response
    assert adapter.open
    return srv


def _server_gets(srv: WSConnection, data: bytes) -> list:
    srv.receive_data(data)
    return list(srv.events())


def test_upgrade_request_has_path_host_and_compression_offer():
    a = WsAdapter("127.0.0.1:8080", "/nats/ws", compression=True)
    _srv, req = _server(a)
    assert req.host == "127.0.0.1:8080"
    assert req.target == "/nats/ws"
    offer = b"".join(v for k, v in req.extra_headers if k.lower() == b"sec-websocket-extensions")
    offered = ",".join(req.extensions) + offer.decode()
    assert "permessage-deflate" in offered
    assert "client_no_context_takeover" in offered and "server_no_context_takeover" in offered
    plain = WsAdapter("h:1")
    assert b"permessage-deflate" not in plain.request()


def test_stream_split_anywhere_gives_the_same_bytes():
    a = WsAdapter("h:1")
    srv, _ = _server(a)
    payloads = [INFO, b"MSG a 1 3\r\nabc\r\n", b"x" * 70000, b"PING\r\n"]
    wire = srv.send(AcceptConnection()) + b"".join(srv.send(BytesMessage(data=p)) for p in payloads)
    got = b"".join(a.receive(wire[i:i + 1]) for i in range(len(wire)))
    assert got == b"".join(payloads)


def test_fragmented_messages_are_passed_on_as_they_come():
    a = WsAdapter("h:1")
    srv = _accept(a)
    first = srv.send(BytesMessage(data=b"MSG a 1 ", message_finished=False))
    rest = srv.send(BytesMessage(data=b"3\r\nabc\r\n", message_finished=True))
    assert a.receive(first) == b"MSG a 1 "
    assert a.receive(rest) == b"3\r\nabc\r\n"


def test_encode_is_a_masked_binary_frame():
    a = WsAdapter("h:1")
    srv = _accept(a)
    frame = a.encode(b"PUB a 2\r\nhi\r\n")
    assert frame[0] == 0x82 and frame[1] & 0x80  # FIN + binary, masked
    (ev,) = _server_gets(srv, frame)
    assert isinstance(ev, BytesMessage) and ev.data == b"PUB a 2\r\nhi\r\n"


@pytest.mark.parametrize("server_agrees", [True, False])
def test_compression_only_when_the_server_agrees(server_agrees):
    a = WsAdapter("h:1", compression=True)
    srv = _accept(a, compression=server_agrees)
    assert a.compressed == server_agrees
    data = b"PUB a 100000\r\n" + b"z" * 100000 + b"\r\n"
    frame = a.encode(data)
    assert bool(frame[0] & 0x40) == server_agrees  # RSV1: compressed
    assert (len(frame) < 1000) == server_agrees
    got = b"".join(ev.data for ev in _server_gets(srv, frame))
    assert got == data
    # and what the server compresses comes out whole
    back = srv.send(BytesMessage(data=b"MSG a 1 5\r\nhello\r\n" * 1000))
    assert a.receive(back) == b"MSG a 1 5\r\nhello\r\n" * 1000


def test_ping_is_answered_and_close_is_reported_and_answered():
    a = WsAdapter("h:1")
    srv = _accept(a)
    assert a.receive(srv.send(Ping(payload=b"p1"))) == b""
    (pong,) = _server_gets(srv, a.take_control())
    assert isinstance(pong, Pong) and pong.payload == b"p1"
    assert a.take_control() == b""
    wire = srv.send(BytesMessage(data=b"-ERR 'bye'\r\n")) + srv.send(CloseConnection(code=1001, reason="away"))
    assert a.receive(wire) == b"-ERR 'bye'\r\n"  # what came before the CLOSE still counts
    assert a.peer_closed == (1001, "away")
    assert "1001" in str(a.closed_error()) and "away" in str(a.closed_error())
    (close,) = _server_gets(srv, a.take_control())
    assert isinstance(close, CloseConnection)
    with pytest.raises(ConnectionError):
        a.encode(b"PING\r\n")


def test_refused_upgrade_is_a_protocol_error():
    a = WsAdapter("h:1", "/wrong")
    srv, _ = _server(a)
    refusal = srv.send(RejectConnection(status_code=404))
    with pytest.raises(ProtocolError, match="404"):
        a.receive(refusal)
    b = WsAdapter("h:1")
    with pytest.raises(ProtocolError):
        b.receive(b"INFO {} \r\n\r\n")  # a NATS server, not a websocket listener


def test_bad_frame_from_the_server_closes():
    a = WsAdapter("h:1")
    _accept(a)
    a.receive(b"\x8f\x00")  # an unknown opcode
    assert a.peer_closed is not None and a.peer_closed[0] == 1002


def test_ws_path():
    assert ws_path("", None) == "/"
    assert ws_path("", "nats") == "/nats"
    assert ws_path("/base/", "/ws") == "/base/ws"
    assert ws_path("/base", "ws") == "/base/ws"
    assert ws_path("/only", None) == "/only"
    assert ws_path("/base", "ws", "auth=abc&x=1") == "/base/ws?auth=abc&x=1"
    assert ws_path("", None, "t=1") == "/?t=1"


def test_ws_server_urls():
    s = Server("ws://example.com")
    assert (s.scheme, s.host, s.port, s.path, s.url) == ("ws", "example.com", 80, "", "ws://example.com:80")
    t = Server("wss://u:p@example.com/nats")
    assert (t.port, t.path, t.user, t.password, t.url) == (443, "/nats", "u", "p", "wss://example.com:443/nats")
    assert Server("ws://h:8080/").url == "ws://h:8080"
    assert Server("nats://h/ignored").url == "nats://h:4222"
    with pytest.raises(ValueError, match="mixing"):
        ServerPool(["ws://a:1", "nats://b:2"])
    pool = ServerPool(["ws://a:1"], randomize=False)
    assert pool.add_discovered(["b:2"], tls=False) == ["ws://b:2"]
    assert pool.add_discovered(["c:3"], tls=True) == ["wss://c:3"]
    assert ServerPool(["nats://a:1"]).add_discovered(["b:2"], tls=False) == ["nats://b:2"]
