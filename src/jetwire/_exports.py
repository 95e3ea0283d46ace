"""The types shared by both flavours (one class each, re-exported by ``jetwire`` and ``jetwire.aio``)."""
from __future__ import annotations

from ._impl import speedups_enabled
from .errors import *  # noqa: F401,F403
from .errors import __all__ as _errors_all
from .jetstream.ensure_core import DEFAULT_CONSUMER, DEFAULT_STREAM, DEFAULT_WORK_QUEUE, SAMPLED_DEFAULT_CONSUMER
from .jetstream.obj_core import decode_object_digest, object_digest
from .msg import Msg
from .protocol.headers import Headers
from .protocol.metadata import MsgMetadata, SequencePair, parse_metadata

__all__ = ["Msg", "Headers", "MsgMetadata", "SequencePair", "parse_metadata", "speedups_enabled",
           "object_digest", "decode_object_digest",
           "DEFAULT_STREAM", "DEFAULT_WORK_QUEUE", "DEFAULT_CONSUMER", "SAMPLED_DEFAULT_CONSUMER"] + [
    n for n in _errors_all if n not in ("api_error", "ERR_CODES")
]

import jetwire.micro_core as _micro  # not "from . import": that asks jetwire.__getattr__ first

from .jetstream import backup_core as _backup
from .jetstream import kv_models as _kv
from .jetstream import models as _models
from .jetstream import obj_models as _obj

for _mod in (_models, _kv, _obj, _backup, _micro):
    for _n in getattr(_mod, "__all__", ()):
        globals()[_n] = getattr(_mod, _n)
        __all__.append(_n)
