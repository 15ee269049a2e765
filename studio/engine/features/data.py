"""``presets/engines/effects.json``: the public figures the feature effects read, each with its
source (the engine reads its own data, like :mod:`studio.engine.runtime.loader`)."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from studio.core.errors import StudioError

FILE = "presets/engines/effects.json"


@cache
def effects() -> dict[str, Any]:
    """The file's contents (read once)."""
    from studio.engine.runtime.loader import _read

    text, where = _read("effects")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise StudioError(f"{where} is not valid JSON: {e}") from None
    if not isinstance(data, dict):
        raise StudioError(f"{where} must hold an object")
    return data


def figure(*path: str) -> Any:
    """The ``value`` at ``path`` (e.g. ``figure("frontend", "vllm", "request_ms")``)."""
    node: Any = effects()
    for key in path:
        if not isinstance(node, dict) or key not in node:
            raise StudioError(f"{FILE}: field {'.'.join(path)} is missing")
        node = node[key]
    return node["value"] if isinstance(node, dict) and "value" in node else node


def source(*path: str) -> str:
    """The ``source`` text at ``path``."""
    node: Any = effects()
    for key in path:
        node = node.get(key, {}) if isinstance(node, dict) else {}
    return str(node.get("source", "")) if isinstance(node, dict) else ""
