"""The link-kind menu after drawing a link: the kinds that can physically join the two ends.

The rules are Qt-free (:mod:`studio.service.project_edits.link_compat`); this module only names them for the
canvas.
"""

from __future__ import annotations

from studio.core.hardware import Cluster, LinkKind
from studio.service.project_edits.link_compat import compatible_kinds, refusal


def applicable_kinds(cluster: Cluster, extra: dict[str, LinkKind], a: str, b: str) -> list[LinkKind]:
    """Link kinds for a new link from ``a`` to ``b`` (best first); empty when none can join them."""
    return compatible_kinds(cluster, extra, a, b)


__all__ = ["applicable_kinds", "refusal"]
