"""Colours shared by the charts (timeline, memory bars) so the GUI and the report agree."""

from __future__ import annotations

#: Timeline segment colours by kind (``studio.engine.plan.views.SEGMENT_KINDS``).
SEGMENT_COLORS: dict[str, str] = {
    "compute": "#4c6ef5",
    "allreduce": "#f76707",
    "alltoall": "#0ca678",
    "p2p": "#ae3ec9",
    "idle": "#ced4da",
    "cp": "#c2255c",
    "kv_transfer": "#f08c00",
}
SEGMENT_LABELS: dict[str, str] = {
    "compute": "Compute",
    "allreduce": "AllReduce (TP)",
    "alltoall": "All-to-all (EP)",
    "p2p": "P2P (stage → stage)",
    "idle": "Idle (bubble)",
    "cp": "Context parallel (KV shards)",
    "kv_transfer": "KV transfer (prefill → decode)",
}

#: Memory bar parts, bottom to top.
MEMORY_PARTS: tuple[tuple[str, str, str], ...] = (
    ("weights", "Weights", "#1c7ed6"),
    ("kv_cache", "KV cache", "#37b24d"),
    ("activations", "Activations", "#f59f00"),
    ("overhead", "Overhead", "#868e96"),
)
FREE_COLOR = "#e9ecef"
OVER_COLOR = "#e03131"
