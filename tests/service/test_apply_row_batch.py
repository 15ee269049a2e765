"""Issue 34 case 9: applying the sweep's recommended row keeps a Batch of "auto" (the row's batch is
what "auto" gives on its layout); a row at another batch pins that batch."""

from __future__ import annotations

from pathlib import Path

from studio.engine import sweep
from studio.io.project_file import load_project
from studio.service.explore.recommend import with_row

EXAMPLE = Path(__file__).resolve().parents[2] / "presets" / "examples" / "dgx-h100-2node-llama-405b.json"


def test_the_recommended_row_keeps_batch_auto_and_another_batch_is_pinned():
    p = load_project(EXAMPLE)
    p = p.replace(workload=p.workload.replace(batch="auto"))
    res = sweep(p)
    i = int(res.recommended)
    lay, batch = res.layout(i), int(res.columns["batch"][i])
    q = with_row(p, lay, batch)
    assert q.layout == lay and q.workload.batch == "auto"
    pinned = with_row(p, lay, max(1, batch // 2))
    assert pinned.workload.batch == max(1, batch // 2)
