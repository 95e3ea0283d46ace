"""The JetStream API requests of one context (asyncio source; ``jetwire/_sync/jsapi.py`` is
generated from it).

:class:`JSApi` is internal (no compatibility promise to users): the one object through
which a JetStream context and everything it makes (streams, consumers, ordered and push
consumers, KV and object stores, backups, the Spark connector) reach the server's
``$JS.API``. It holds what every request needs (the connection's ``Link``, the API
prefix or domain, the default timeout, ``trace_cb``, schema validation, a NUID for
generated names) and makes every request body in one place, :meth:`JSApi.prepare`.
Its names are public so that those modules use it openly; ``js.api`` is the context's.
Publishes and pulls on the hot path are not API requests and do not pass here.
"""
from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import orjson

from .. import _impl
from .._nuid import NUID
from .._typing import JSONObject
from ..errors import (
    InvalidJSONError,
    InvalidOptionError,
    JetStreamNotEnabledError,
    NoRespondersError,
    api_error,
)
from ..jetstream.manage import generate_consumer_name
from ..jetstream.validate import validate_domain
from ..msg import Msg
from ..schemas import check_request
from . import _prims as prims

if TYPE_CHECKING:
    from .client import Client

DEFAULT_PREFIX = "$JS.API"

Payload = JSONObject | bytes | None


def api_prefix(domain: str | None, prefix: str | None) -> str:
    """The API prefix of a context made with ``domain=`` or ``api_prefix=`` (or neither)."""
    if domain is not None and prefix is not None:
        raise ValueError("give domain or api_prefix, not both")
    if domain:
        return f"$JS.{validate_domain(domain)}.API"
    if prefix:
        return prefix.rstrip(".")
    return DEFAULT_PREFIX


def api_answer(data: bytes, request: str | None = None) -> JSONObject:
    """The decoded answer of an API request, or the typed error it carries (naming
    ``request``, the API subject)."""
    try:
        resp = orjson.loads(data)
    except orjson.JSONDecodeError:
        resp = None
    if type(resp) is not dict:
        raise InvalidJSONError(f"bad JetStream API response{f' to {request}' if request else ''}: "
                               f"{bytes(data[:100])!r}")
    err = resp.get("error")
    if err:
        raise api_error(err, request)
    return resp


class JSApi:
    """The API requests of one JetStream context (internal; see the module docstring).

    Attributes: ``nc`` (the client), ``link`` (its ``Link``), ``prefix``, ``domain``,
    ``timeout`` (seconds, the default of every request), ``trace_cb``, ``validate``,
    ``nuid``."""

    def __init__(self, nc: Client, domain: str | None = None, prefix: str | None = None,
                 timeout: float = 5.0, trace_cb: Callable[[str, bytes], object] | None = None,
                 validate: bool = False) -> None:
        self.nc = nc
        self.link = nc.link
        self.prefix = api_prefix(domain, prefix)
        self.domain = domain
        self.timeout = timeout
        self.trace_cb = trace_cb
        self.validate = validate
        self.nuid = NUID()

    def __repr__(self) -> str:
        return f"<JSApi prefix={self.prefix!r}>"

    @property
    def default_prefix(self) -> bool:
        """Whether the context uses the plain ``$JS.API`` (no domain, no ``api_prefix``)."""
        return self.prefix == DEFAULT_PREFIX

    def new_name(self) -> str:
        """A fresh consumer name (as nats.go generates them)."""
        return generate_consumer_name(self.nuid)

    def prepare(self, subject: str, payload: Payload) -> tuple[str, bytes]:
        """The full subject and the body of an API request: every API request is made here
        (and checked against its schema here with ``validate=True``)."""
        if not isinstance(subject, str) or not subject:
            raise ValueError("subject is required (relative to the API prefix, e.g. 'STREAM.INFO.ORDERS')")
        if subject.startswith(("$JS.", self.prefix + ".")):
            raise ValueError(f"subject {subject!r} must be relative to the API prefix (e.g. 'STREAM.INFO.ORDERS')")
        if payload is not None and not isinstance(payload, (bytes, bytearray, memoryview, dict)):
            raise TypeError(f"payload must be a dict, bytes or None, not {type(payload).__name__}")
        if self.validate:
            payload = check_request(subject, bytes(payload) if isinstance(payload, memoryview) else payload)
        if payload is None:
            data = b""
        elif isinstance(payload, dict):
            try:
                data = orjson.dumps(payload)
            except TypeError as exc:
                if "64-bit" not in str(exc):
                    raise
                # the server reads integers (durations in nanoseconds too) as 64-bit
                raise InvalidOptionError(
                    f"a value of the {subject} request does not fit in 64 bits (a duration is at most "
                    f"{(2 ** 63 - 1) // 10 ** 9:,} seconds, about 292 years)") from None
        else:
            data = bytes(payload)
        full = f"{self.prefix}.{subject}"
        _impl.validate_subject(full)
        return full, data

    async def request(self, subject: str, payload: Payload = None, timeout: float | None = None) -> JSONObject:
        """One API request (``subject`` relative to the prefix): the JSON answer, or its
        typed error (``JetStreamNotEnabledError`` when nothing answers). The body of
        ``JetStream.api_request``."""
        full, data = self.prepare(subject, payload)
        try:
            msg = await self.request_msg(full, data, self.timeout if timeout is None else timeout)
        except NoRespondersError as exc:
            raise JetStreamNotEnabledError(code=503, err_code=None, description="JetStream not enabled (no responders)",
                                           request=subject) from exc
        return api_answer(msg.data, subject)

    def request_nowait(self, subject: str, payload: Payload = None) -> None:
        """Send an API request whose answer nobody waits for (a best-effort cleanup)."""
        full, data = self.prepare(subject, payload)
        self.link.request_nowait(full, data)

    async def request_msg(self, subject: str, data: bytes, timeout: float | None = None) -> Msg:
        """One request over the connection's shared inbox (``subject`` in full, as
        :meth:`prepare` made it), traced through ``trace_cb``: the reply ``Msg`` (direct
        gets, whose answer is a message, not JSON)."""
        if timeout is None:
            timeout = self.timeout
        if self.trace_cb is None:
            return await self.link.request_raw(subject, data, None, timeout)
        await self.trace(subject, data)
        msg = await self.link.request_raw(subject, data, None, timeout)
        await self.trace(msg.subject, bytes(msg.data))
        return msg

    async def trace(self, subject: str, payload: bytes) -> None:
        """Hand a request (or its answer) to ``trace_cb``; its exception goes to
        ``error_cb``. Nothing without a ``trace_cb``."""
        trace = self.trace_cb
        if trace is None:
            return
        try:
            await prims.call(trace, subject, payload)
        except Exception as exc:
            self.link.report_error(exc)


class ContextBase:
    """What every part of a JetStream context (the managers ``JetStream`` is made of)
    builds on: ``api`` (its :class:`JSApi`, internal) and the public ``api_request``."""

    api: JSApi

    @property
    def api_prefix(self) -> str:
        return self.api.prefix

    @property
    def domain(self) -> str | None:
        return self.api.domain

    async def api_request(self, subject: str, payload: Payload = None,
                          timeout: float | None = None) -> JSONObject:
        """One JetStream API request: ``subject`` is relative to the API prefix (``"STREAM.INFO.ORDERS"``;
        the domain or ``api_prefix`` is applied), ``payload`` a dict (sent as JSON), bytes or None.
        Returns the JSON answer as a dict or raises its typed error (``APIError``
        subclasses with the server's ``err_code``; ``JetStreamNotEnabledError`` when nothing answers).

        Every management request of this context (streams, consumers, account, KV and
        object-store buckets, backups) goes through here. With ``validate=True`` the
        payload is completed and checked against its schema first
        (``SchemaValidationError``, nothing sent)."""
        return await self.api.request(subject, payload, timeout)

    async def api_pages(self, subject: str, key: str, body: JSONObject | None = None) -> AsyncIterator[Any]:
        """The items under ``key`` of a paged listing (``STREAM.LIST``, ``CONSUMER.NAMES.S``,
        ...), each page requested with ``body`` plus its ``offset`` as iteration gets there.
        The next page starts at the answer's ``offset + limit`` (jsm.go's), not after the
        items it held: a server leaves the streams or consumers it cannot reach (a node
        down) out of a page (``missing``) but counts them in ``total`` and its offsets, so
        counting items asked for the same ones again."""
        offset = 0
        while True:
            resp = await self.api_request(subject, {**(body or {}), "offset": offset})
            page = resp.get(key) or []
            for item in page:
                yield item
            missing = resp.get("missing") or ()
            if not page and not missing:
                return
            at, limit = resp.get("offset"), resp.get("limit")
            if type(at) is int and type(limit) is int and limit > 0 and at + limit > offset:
                offset = at + limit
            else:  # (an answer without them: what it held, and what it left out)
                offset += len(page) + len(missing)
            if offset >= (resp.get("total") or 0):
                return
