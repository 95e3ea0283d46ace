"""The per-ack part of the async-publish mux (twin of the compiled ``jetwire._c.ackmux``)."""
from __future__ import annotations

import re
from typing import Any, List, Optional, Tuple

# ------------------------------------------------------------------ publish-ack mux
_PLAIN_ACK = re.compile(rb'\{"stream":"([^"\\\x00-\x1f]+)","seq":(0|[1-9][0-9]{0,17})\}\Z')


def _plain_ack(data: Any) -> Optional[Tuple[str, int]]:
    """``(stream, seq)`` when ``data`` is exactly ``{"stream":"<name>","seq":<n>}`` (the
    server's usual answer: compact, a non-empty name without escapes or control characters
    in strict UTF-8, ``n`` of 1-18 digits without leading zeros); else None."""
    if type(data) is not bytes:
        return None
    m = _PLAIN_ACK.match(data)
    if m is None:
        return None
    try:
        stream = m.group(1).decode("utf-8")
    except UnicodeDecodeError:
        return None
    return stream, int(m.group(2))


class AckMux:
    """The per-message part of the JetStream async-publish mux (base of
    ``jetwire.jetstream.pubmux.PubAckMux``, which documents the whole).

    ``pending`` maps a token to ``(future, subject, header_bytes_or_None, data,
    retries_left, retry_wait)``; ``add()`` registers a publish under the next token
    (``str`` of a counter) and returns it. ``on_msg(msg)`` handles one reply on
    ``<prefix><token>``: an unknown token is ignored; the usual answer
    ``{"stream":"<name>","seq":<n>}`` (see ``_plain_ack``) becomes ``make_ack(name, seq)``
    (the ack type's constructor), resolves the entry's future with its ``set_result``
    (unless it is done already; an error from ``set_result`` is ignored) and then, when
    ``stall_waiters`` or ``complete_waiters`` is non-empty, calls ``self._after_pop()``.
    Any other reply (or ``make_ack`` None) goes to ``self._other(msg, token, entry)``
    after the entry was popped.
    """

    __slots__ = ("prefix", "_plen", "pending", "_n", "stall_waiters", "complete_waiters", "wake_at",
                 "make_ack")

    def __init__(self, prefix: str, make_ack: Any = None) -> None:
        if type(prefix) is not str:
            raise TypeError(f"prefix must be a str, not {type(prefix).__name__}")
        self.prefix = prefix
        self._plen = len(prefix)
        self.pending: dict = {}
        self._n = 0
        self.stall_waiters: List[Any] = []
        self.complete_waiters: List[Any] = []
        self.wake_at = 0
        self.make_ack = make_ack

    def add(self, fut: Any, subject: str, hdr: Any, data: Any, retries: int, retry_wait: float) -> str:
        """Register a publish; returns its token (the reply subject is ``prefix + token``)."""
        n = self._n + 1
        self._n = n
        token = str(n)
        self.pending[token] = (fut, subject, hdr, data, retries, retry_wait)
        return token

    def on_msg(self, msg: Any) -> None:
        """Handle one reply on ``<prefix>*`` (see the class docstring)."""
        token = msg.subject[self._plen:]
        entry = self.pending.pop(token, None)
        if entry is None:
            return
        make = self.make_ack
        plain = _plain_ack(msg.data) if make is not None else None
        if plain is None:
            self._other(msg, token, entry)
            return
        ack = make(plain[0], plain[1])
        fut = entry[0]
        try:
            if not fut.done():
                fut.set_result(ack)
        except Exception:  # cancelled / resolved concurrently by another thread
            pass
        if self.stall_waiters or self.complete_waiters:
            self._after_pop()

    def _other(self, msg: Any, token: str, entry: tuple) -> None:
        raise NotImplementedError

    def _after_pop(self) -> None:
        raise NotImplementedError
