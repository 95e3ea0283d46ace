"""JetStream context (asyncio source; ``jetwire/_sync/jetstream.py`` is generated from it)."""
from __future__ import annotations

from typing import Any, Dict, Optional, Union

import orjson

from ..errors import JetStreamError, NoRespondersError, TimeoutError, api_error, JetStreamNotEnabledError


class JetStream:
    """JetStream over one connection: ``nc.jetstream(domain=, api_prefix=, timeout=)``."""

    def __init__(self, nc: Any, domain: Optional[str] = None, api_prefix: Optional[str] = None,
                 timeout: float = 5.0, publish_async_max_pending: int = 4000) -> None:
        if domain is not None and api_prefix is not None:
            raise ValueError("give domain or api_prefix, not both")
        if domain:
            prefix = f"$JS.{domain}.API"
        elif api_prefix:
            prefix = api_prefix.rstrip(".")
        else:
            prefix = "$JS.API"
        self._nc = nc
        self._prefix = prefix
        self._domain = domain
        self._timeout = timeout
        self._max_pending = publish_async_max_pending

    @property
    def api_prefix(self) -> str:
        return self._prefix

    async def _api(self, subject: str, payload: Union[dict, bytes, None] = None,
                   timeout: Optional[float] = None) -> Dict[str, Any]:
        """Request ``<prefix>.<subject>``; return the JSON answer or raise its typed error."""
        if payload is None:
            data = b""
        elif isinstance(payload, (bytes, bytearray)):
            data = bytes(payload)
        else:
            data = orjson.dumps(payload)
        try:
            msg = await self._nc.request(f"{self._prefix}.{subject}", data, timeout=timeout or self._timeout)
        except NoRespondersError as exc:
            raise JetStreamNotEnabledError(code=503, err_code=None,
                                           description="JetStream not enabled (no responders)") from exc
        try:
            resp = orjson.loads(msg.data)
        except orjson.JSONDecodeError as exc:
            raise JetStreamError(f"bad JetStream API response: {msg.data[:100]!r}") from exc
        err = resp.get("error")
        if err:
            raise api_error(err)
        return resp
