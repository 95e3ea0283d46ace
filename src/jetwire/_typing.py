"""Type aliases shared by the package (annotations only; nothing here runs on a hot path).

``JSONObject`` is a decoded JSON object whose values really are arbitrary JSON (server
documents, service payloads, schema fragments): the one place that spells that ``Any``.
"""
from __future__ import annotations

from typing import Any, TypeAlias

__all__ = ["JSONObject"]

JSONObject: TypeAlias = dict[str, Any]
