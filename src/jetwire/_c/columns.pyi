"""Stub of the compiled ``jetwire._c.columns`` (twin: ``jetwire.protocol._pure.columns``)."""
from array import array
from typing import Any, FrozenSet, Iterable, List, Optional, Tuple

DIRECT_KEYS: FrozenSet[str]

def rfc3339_us(s: str) -> Optional[int]: ...
def direct_columns(
    msgs: List[Any],
) -> Tuple[List[str], "array[int]", "array[int]", List[bytes], Optional[List[Any]], List[int]]: ...
def ack_columns(
    msgs: Iterable[Any], hi: int
) -> Tuple[List[str], "array[int]", "array[int]", List[bytes], Optional[List[Any]], bool]: ...
