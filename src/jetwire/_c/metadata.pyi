"""Stub of the compiled ``jetwire._c.metadata`` (twin: ``jetwire.protocol._pure.metadata``)."""
from typing import Optional, Tuple

def parse_metadata_fields(
    subject: str,
) -> Tuple[Optional[str], Optional[str], str, str, int, int, int, int, int]: ...
