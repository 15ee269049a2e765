"""The layout the layout flags (``--tp --pp --dp --ep --micro-batches --layers-per-stage``)
describe over a cluster, checked by the rules of :mod:`studio.core.parallelism`; every refusal
names the flag and the values allowed."""

from __future__ import annotations

from pydantic import ValidationError

from studio.core import parallelism as par
from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.core.project import Project


def _valid_splits(model, gpus: int) -> str:
    """Up to eight TP × PP splits the model allows on ``gpus`` GPUs (:mod:`studio.core.parallelism`)."""
    splits = [f"TP{t}×PP{p}" for t in par.tp_options(model, gpus) for p in par.pp_options(model, t, gpus)]
    return ", ".join(splits[:8])


def checked_ep(model, ep: int, tp: int, dp: int) -> int:
    """``--ep`` when the model and TP × DP allow it, else a :class:`StudioError` naming the flag and
    the allowed values."""
    why = par.ep_reason(model, ep, tp, dp)
    if why is not None:
        allowed = ", ".join(map(str, par.ep_options(model, tp, dp)))
        raise StudioError(f"--ep {ep}: {why}; allowed: {allowed}")
    return ep


def layout_from_args(args, base: Project, gpus: int, model, cluster_changed: bool, model_changed: bool) -> Layout:
    """The layout the flags describe over ``gpus`` GPUs (the base project's values where unset;
    on a cluster built from flags without a PROJECT file, unset values are TP 1, PP 1, M 1 rather
    than the bundled example's)."""
    old = base.layout
    if cluster_changed and getattr(args, "project", None) is None:
        old = Layout()
    tp_flag, pp_flag, dp_flag = (getattr(args, k, None) for k in ("tp", "pp", "dp"))
    tp = tp_flag or old.tp
    pp = pp_flag or old.pp
    why = par.depth_reason(model, pp)
    if why is not None:
        raise StudioError(f"--pp {pp}: {why}")
    if dp_flag is not None:
        dp = dp_flag
        if tp * pp * dp != gpus:
            raise StudioError(
                f"layout TP={tp} × PP={pp} × DP={dp} uses {tp * pp * dp} GPUs, but the cluster has {gpus}; "
                f"TP × PP × DP must equal {gpus}"
            )
    elif gpus % (tp * pp) == 0:
        dp = gpus // (tp * pp)
    elif tp_flag is None and pp_flag is None and not hasattr(args, "tp"):
        tp, pp, dp = 1, 1, gpus  # a command without layout flags: any valid layout will do
    else:
        raise StudioError(
            f"TP={tp} × PP={pp} = {tp * pp} does not divide the cluster's {gpus} GPUs, so no DP fills it; "
            f"pick TP × PP dividing {gpus} (e.g. {_valid_splits(model, gpus)}) or pass --dp"
        )
    ep = getattr(args, "ep", None)
    if ep is None:
        ep = old.ep if (model.is_moe and not model_changed) else 1
        if par.ep_reason(model, ep, tp, dp) is not None:
            ep = 1
    else:
        ep = checked_ep(model, ep, tp, dp)
    lps = getattr(args, "layers_per_stage", None)
    if lps is None and old.layers_per_stage is not None and pp == old.pp and not model_changed:
        lps = old.layers_per_stage
    if lps is not None:
        why = par.split_reason(model, lps, pp)
        if why is not None:
            raise StudioError(f"--layers-per-stage: {why}")
    same_ranks = (tp, pp, dp) == (old.tp, old.pp, old.dp) and not cluster_changed
    micro = getattr(args, "micro_batches", None) or old.micro_batches
    try:
        return Layout(
            tp=tp, pp=pp, dp=dp, ep=ep, micro_batches=micro, layers_per_stage=lps,
            placement=old.placement if same_ranks else None,
            cp=old.cp, cp_mode=old.cp_mode,  # checked against the final layout by apply_cp_args
        )
    except ValidationError as exc:
        from studio.io.project_file import validation_message

        raise StudioError(f"invalid layout: {validation_message(exc)}") from None
