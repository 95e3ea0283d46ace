"""Stub of the compiled ``jetwire._c.headers`` (twin: ``jetwire.protocol._pure.headers``)."""

from jetwire.protocol.headers import Headers

_Buffer = bytes | bytearray | memoryview
_Text = str | bytes | bytearray

def decode_headers(raw: _Buffer) -> Headers: ...
def encode_headers(headers: Headers | dict[_Text, _Text | list[_Text] | tuple[_Text, ...]] | None) -> bytes: ...
