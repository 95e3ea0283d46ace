"""``async for msg in sub``, shared by core subscriptions (``client.Subscription``) and
JetStream push subscriptions (``push.PushSubscription``): ``next_msg(None)`` until the
subscription or its connection ends."""
from __future__ import annotations

from typing import Self

from ..errors import ConnectionClosedError, SubscriptionClosedError
from ..msg import Msg


class MsgIteration:
    """Iteration over ``next_msg``; the class it is mixed into defines ``next_msg``."""

    __slots__ = ()

    async def next_msg(self, timeout: float | None = 1.0) -> Msg:
        raise NotImplementedError

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Msg:
        try:
            return await self.next_msg(None)
        except (SubscriptionClosedError, ConnectionClosedError):
            raise StopAsyncIteration from None
