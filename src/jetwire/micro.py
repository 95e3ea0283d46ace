"""Services: the NATS service API (ADR-32, nats.go ``micro``) for the blocking client.

``jetwire.micro`` is ``jetwire._sync.micro``, generated from :mod:`jetwire.aio.micro` (the
asyncio flavour, same names); the sans-IO part is :mod:`jetwire.micro_core`.
"""
from ._sync.micro import (
    DEFAULT_CONCURRENCY,
    DEFAULT_QUEUE_GROUP,
    ERROR_CODE_HEADER,
    ERROR_HEADER,
    Endpoint,
    EndpointInfo,
    EndpointStats,
    Group,
    Request,
    Service,
    ServiceError,
    ServiceInfo,
    ServicePing,
    ServiceStats,
    add_service,
    info,
    ping,
    request,
    stats,
)

# the same list as jetwire.aio.micro.__all__ (a test compares them)
__all__ = [
    'DEFAULT_CONCURRENCY',
    'DEFAULT_QUEUE_GROUP',
    'ERROR_CODE_HEADER',
    'ERROR_HEADER',
    'Endpoint',
    'EndpointInfo',
    'EndpointStats',
    'Group',
    'Request',
    'Service',
    'ServiceError',
    'ServiceInfo',
    'ServicePing',
    'ServiceStats',
    'add_service',
    'info',
    'ping',
    'request',
    'stats',
]
