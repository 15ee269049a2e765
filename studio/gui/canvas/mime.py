"""Drag-and-drop payloads between the palette and the canvas."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal, cast

from PySide6.QtCore import QMimeData

from studio.core.errors import StudioError

MIME_TYPE = "application/x-layout-studio-item"
MAX_PAYLOAD_BYTES = 4096  # ours are ~60 bytes; anything bigger is not from the palette
ItemKind = Literal["gpu", "node-template", "empty-node"]
KINDS: tuple[str, ...] = ("gpu", "node-template", "empty-node")


@dataclass(frozen=True)
class DragItem:
    """What is being dragged: a GPU type, a node template, or a new empty node."""

    kind: ItemKind
    id: str


def to_mime(item: DragItem) -> QMimeData:
    """Encode ``item`` as JSON ``{"kind": ..., "id": ...}`` under :data:`MIME_TYPE`."""
    mime = QMimeData()
    mime.setData(MIME_TYPE, json.dumps({"kind": item.kind, "id": item.id}).encode("utf-8"))
    return mime


def from_mime(mime: QMimeData) -> DragItem | None:
    """Decode a drag payload; ``None`` when the data is not ours.

    Raises
    ------
    StudioError
        The payload is ours but malformed (bad JSON or unknown kind).
    """
    if not mime.hasFormat(MIME_TYPE):
        return None
    payload = bytes(mime.data(MIME_TYPE).data())
    if len(payload) > MAX_PAYLOAD_BYTES:
        raise StudioError(f"drag payload is {len(payload):,} bytes; at most {MAX_PAYLOAD_BYTES:,} are accepted")
    raw = payload.decode("utf-8", errors="replace")
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):  # bad JSON, or nesting deep enough to exhaust the stack
        raise StudioError(f"drag payload is not JSON: {raw[:80]!r}") from None
    kind = data.get("kind") if isinstance(data, dict) else None
    ident = data.get("id") if isinstance(data, dict) else None
    if not isinstance(kind, str) or kind not in KINDS or not isinstance(ident, str) or not ident:
        raise StudioError(f"drag payload kind {kind!r} is not one of {', '.join(KINDS)}")
    return DragItem(kind=cast(ItemKind, kind), id=ident)
