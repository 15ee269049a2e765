"""The layout values a project may take, field by field, and why context parallelism is not
offered: what the window's Layout panel offers, from the same rules of :mod:`studio.core.parallelism`
the command line's layout flags are checked with (tests/gui/test_gui_refuses_as_cli.py holds the two
together); and the layout edits that keep the other fields valid."""

from __future__ import annotations

from studio.core import parallelism as par
from studio.core.layout import Layout
from studio.core.project import Project


def valid_choices(p: Project) -> dict[str, list[int]]:
    """Values each field may take given the others (:mod:`studio.core.parallelism`): TP divides the
    drawn GPUs and the attention heads and suits the KV heads (MLA aside), PP divides what TP
    leaves and is at most the layers, DP fills the rest (one value), EP by the expert rule."""
    n = max(1, p.cluster.num_gpus)
    lay, m = p.layout, p.model
    tp = par.tp_options(m, n)
    pp = par.pp_options(m, lay.tp, n)
    dp = [par.dp_for(lay.tp, lay.pp, n)]
    ep = par.ep_options(m, lay.tp, lay.dp)
    cp = par.cp_options(m, lay.tp, lay.dp, lay.cp_mode)
    for key, values in (("tp", tp), ("pp", pp), ("dp", dp), ("ep", ep), ("cp", cp)):
        cur = getattr(lay, key)
        if cur not in values:
            values.append(cur)  # keep showing an invalid current value; the engine explains it
            values.sort()
    return {"tp": tp, "pp": pp, "dp": dp, "ep": ep, "cp": cp}



def cp_refusal(p: Project) -> str | None:
    """Why no context parallelism is offered for the current layout (the rule of the smallest
    CP > 1 that the mode would use), or ``None`` when some CP > 1 is allowed."""
    lay, m = p.layout, p.model
    if len(par.cp_options(m, lay.tp, lay.dp, lay.cp_mode)) > 1:
        return None
    pool = par.divisors(max(lay.tp if lay.cp_mode == "decode" else lay.dp, 1))
    trial = next((c for c in pool if c > 1), 2)
    return par.cp_reason(m, trial, lay.tp, lay.dp, lay.cp_mode)


def with_cp_mode(p: Project, mode: str) -> Layout:
    """The layout with context-parallel ``mode`` and the largest CP of that mode not above the
    current one (1 when the mode allows none)."""
    lay = p.layout
    ok = [c for c in par.cp_options(p.model, lay.tp, lay.dp, mode) if c <= lay.cp]
    return lay.replace(cp_mode=mode, cp=max(ok or [1]))


def with_field(p: Project, key: str, value: int) -> Layout:
    """The layout with ``key`` set to ``value`` and the others moved to the nearest allowed values
    (:func:`studio.core.parallelism.with_field`; DP always fills the drawn GPUs)."""
    return par.with_field(p.model, p.layout, max(1, p.cluster.num_gpus), key, value)
