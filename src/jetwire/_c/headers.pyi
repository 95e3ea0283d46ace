"""Stub of the compiled ``jetwire._c.headers`` (twin: ``jetwire.protocol._pure.headers``)."""
from typing import Dict, List, Tuple, Union

from jetwire.protocol.headers import Headers

_Buffer = Union[bytes, bytearray, memoryview]
_Text = Union[str, bytes, bytearray]

def decode_headers(raw: _Buffer) -> Headers: ...
def encode_headers(headers: Union[Headers, Dict[_Text, Union[_Text, List[_Text], Tuple[_Text, ...]]], None]) -> bytes: ...
