"""Which TP / PP / EP / DP a model and a GPU count allow, and why a value is not allowed.

One place for the rules that the layout panel, the sweep, the default layout, the plan rules and
the topology import all apply:

* **TP** divides the GPU count and the attention heads; without MLA it is also a divisor or a
  multiple of the KV heads (a multiple replicates each KV head). With MLA (DeepSeek) the latent
  KV cache is shared by all heads, so KV heads set no limit.
* **PP** divides the GPUs left after TP and is at most the model's layers; an explicit layer split
  has one entry per stage, each at least 1, adding up to the model's layers.
* **DP** fills the rest: ``tp × pp × dp`` equals the GPU count.
* **EP** (MoE only) divides the routed experts and ``tp × dp``, and is a divisor or a multiple of
  TP; a dense model has EP = 1. The part that needs no model (:func:`studio.core.layout.ep_shape_reason`)
  is what :class:`studio.core.layout.Layout` checks on construction.
* **CP** (context parallelism, :func:`cp_reason`) shards the KV cache along the sequence. Decode
  CP (vLLM ``--decode-context-parallel-size``) divides TP and, without MLA, removes at most the
  ``TP / KV heads`` copies TP makes of each KV head, with the query heads of a KV head split evenly
  (vLLM ``ModelConfig.verify_with_parallel_config``). Prefill CP (ring attention) groups ``cp`` DP
  replicas on one sequence, so it divides DP. Neither runs with sliding-window layers (vLLM's
  hybrid KV-cache manager shards full-attention groups only).

Every ``*_reason`` function returns ``None`` when the value is allowed, else one short sentence
that says why not, for a tooltip, a refusal or a CLI message.
"""

from __future__ import annotations

from studio.core.architecture import LLMArchitecture
from studio.core.layout import MAX_PP, MAX_TP, Layout, ep_shape_reason


def divisors(n: int) -> list[int]:
    """Divisors of ``n`` (≥ 1) in increasing order."""
    small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
    return sorted(set(small) | {n // d for d in small})


def heads_reason(model: LLMArchitecture, tp: int) -> str | None:
    """Why ``tp`` cannot split the attention of ``model``, or ``None`` when it can."""
    if tp < 1:
        return f"TP must be at least 1 (got {tp})"
    if model.num_attention_heads % tp:
        return f"TP={tp} does not divide the {model.num_attention_heads} attention heads"
    kv = model.num_kv_heads
    if model.mla is None and kv % tp and tp % kv:
        return f"TP={tp} is neither a divisor nor a multiple of the {kv} KV heads"
    return None


def tp_reason(model: LLMArchitecture, tp: int, gpus: int) -> str | None:
    """Why ``tp`` is not a valid tensor-parallel size on ``gpus`` GPUs, or ``None``."""
    if tp > MAX_TP:
        return f"TP={tp} is above the largest supported TP ({MAX_TP})"
    if gpus < 1:
        return "the cluster has no GPUs"
    if gpus % tp:
        return f"TP={tp} does not divide the {gpus} GPUs"
    return heads_reason(model, tp)


def tp_options(model: LLMArchitecture, gpus: int) -> list[int]:
    """Every TP the model allows on ``gpus`` GPUs (at least ``[1]``)."""
    return [t for t in divisors(max(gpus, 1)) if tp_reason(model, t, gpus) is None] or [1]


def depth_reason(model: LLMArchitecture, pp: int) -> str | None:
    """Why ``model`` cannot be cut into ``pp`` pipeline stages whatever the GPU count, or ``None``."""
    if pp < 1:
        return f"PP must be at least 1 (got {pp})"
    if pp > model.num_layers:
        return f"PP={pp} exceeds the model's {model.num_layers} layers"
    if pp > MAX_PP:
        return f"PP={pp} is above the largest supported PP ({MAX_PP})"
    return None


def split_reason(model: LLMArchitecture, layers_per_stage: tuple[int, ...], pp: int) -> str | None:
    """Why ``layers_per_stage`` is not a layer split of ``model`` over ``pp`` stages, or ``None``."""
    if len(layers_per_stage) != pp:
        return f"the layer split lists {len(layers_per_stage)} stages; PP is {pp}"
    if any(n < 1 for n in layers_per_stage):
        return "every stage of the layer split needs at least one layer"
    total = sum(layers_per_stage)
    if total != model.num_layers:
        return f"the layer split adds up to {total} layers; the model has {model.num_layers}"
    return None


def pp_reason(model: LLMArchitecture, pp: int, tp: int, gpus: int) -> str | None:
    """Why ``pp`` stages cannot follow TP = ``tp`` on ``gpus`` GPUs, or ``None``."""
    why = depth_reason(model, pp)
    if why is not None:
        return why
    if tp < 1 or gpus % tp or (gpus // tp) % pp:
        return f"TP×PP = {tp}×{pp} does not divide the {gpus} GPUs"
    return None


def pp_options(model: LLMArchitecture, tp: int, gpus: int) -> list[int]:
    """Every PP allowed after TP = ``tp`` on ``gpus`` GPUs (at least ``[1]``)."""
    if tp < 1 or gpus % tp:
        return [1]
    return [p for p in divisors(gpus // tp) if pp_reason(model, p, tp, gpus) is None] or [1]


def dp_for(tp: int, pp: int, gpus: int) -> int:
    """DP that fills ``gpus`` GPUs with TP×PP groups (at least 1)."""
    return max(1, gpus // max(1, tp * pp))


def ep_reason(model: LLMArchitecture, ep: int, tp: int, dp: int) -> str | None:
    """Why ``ep`` is not a valid expert-parallel size for TP = ``tp``, DP = ``dp``, or ``None``."""
    if ep == 1:
        return None
    if model.moe is None:
        return f"'{model.name}' has no experts (a dense model runs EP = 1)"
    experts = model.moe.num_experts
    if ep < 1 or experts % ep:
        return f"EP={ep} does not divide the {experts} routed experts"
    return ep_shape_reason(ep, tp, dp)


def ep_options(model: LLMArchitecture, tp: int, dp: int) -> list[int]:
    """Every EP allowed for TP = ``tp`` and DP = ``dp`` (``[1]`` for a dense model)."""
    if model.moe is None:
        return [1]
    return [e for e in divisors(model.moe.num_experts) if ep_reason(model, e, tp, dp) is None]


CP_MODES = ("decode", "prefill")


def cp_reason(model: LLMArchitecture, cp: int, tp: int, dp: int, mode: str = "decode") -> str | None:
    """Why context-parallel size ``cp`` (``mode`` "decode" or "prefill") cannot run with TP = ``tp``
    and DP = ``dp``, or ``None`` when it can."""
    if mode not in CP_MODES:
        return f"CP mode '{mode}' is not one of {', '.join(CP_MODES)}"
    if cp < 1:
        return f"CP must be at least 1 (got {cp})"
    if cp == 1:
        return None
    if model.sliding_window is not None and any(model.is_sliding_layer(i) for i in range(model.num_layers)):
        return (f"CP={cp}: '{model.name}' has sliding-window layers; context parallelism shards "
                "full-attention KV caches only (vLLM's hybrid KV-cache manager refuses it)")
    if mode == "prefill":
        if dp % cp:
            return f"prefill CP={cp} must divide DP={dp} (CP groups {cp} replicas on one sequence)"
        return None
    if tp % cp:
        return f"decode CP={cp} must divide TP={tp} (it shards the KV cache inside the TP group)"
    if model.mla is None:
        kv = model.num_kv_heads
        copies = tp // kv
        if copies < 2:
            return (f"decode CP={cp}: TP={tp} does not duplicate the {kv} KV heads, so there is no KV copy "
                    "for decode CP to remove (it needs TP > KV heads; raise TP or use prefill CP)")
        if copies < cp:
            return (f"decode CP={cp} exceeds TP / KV heads = {tp} / {kv} = {copies}: decode CP can only "
                    f"remove the {copies} copies TP makes of each KV head (lower CP or raise TP)")
        group = model.num_attention_heads // kv
        if group % cp:
            return (f"decode CP={cp} does not divide the {group} query heads of each KV head "
                    f"({model.num_attention_heads} heads / {kv} KV heads)")
    return None


def cp_options(model: LLMArchitecture, tp: int, dp: int, mode: str = "decode") -> list[int]:
    """Every CP allowed for TP = ``tp`` and DP = ``dp`` in ``mode`` (at least ``[1]``)."""
    pool = divisors(max(tp if mode == "decode" else dp, 1))
    return [c for c in pool if cp_reason(model, c, tp, dp, mode) is None] or [1]


def gpus_used(layout: Layout, gpus: int) -> int:
    """The GPUs ``layout`` runs on out of the ``gpus`` drawn: all of them, or only those its
    placement names when it names fewer (the others stay idle, e.g. a spare after a GPU is
    deleted; :func:`studio.service.project_edits.hardware_edits.follow_cluster` leaves GPUs idle that way)."""
    if layout.placement is not None and len(layout.placement) == layout.world_size < gpus:
        return layout.world_size
    return gpus


def layout_reason(model: LLMArchitecture, layout: Layout, gpus: int) -> str | None:
    """The first reason ``layout`` is not allowed for ``model`` on ``gpus`` GPUs, or ``None``.

    A layout whose placement names fewer GPUs runs on those (:func:`gpus_used`)."""
    gpus = gpus_used(layout, gpus)
    if layout.world_size != gpus:
        return (
            f"{layout.label} uses {layout.world_size} GPUs; the cluster has {gpus} "
            "(TP×PP×DP must equal the GPU count)"
        )
    return (
        tp_reason(model, layout.tp, gpus)
        or pp_reason(model, layout.pp, layout.tp, gpus)
        or ep_reason(model, layout.ep, layout.tp, layout.dp)
        or (
            split_reason(model, layout.layers_per_stage, layout.pp)
            if layout.layers_per_stage is not None
            else None
        )
        or cp_reason(model, layout.cp, layout.tp, layout.dp, layout.cp_mode)
    )


def candidates(
    model: LLMArchitecture, gpus: int, *, check_heads: bool = True
) -> list[tuple[int, int, int, int]]:
    """Every ``(tp, pp, dp, ep)`` that uses all ``gpus`` GPUs.

    ``check_heads=False`` keeps TPs that do not divide the heads (the sweep lists them as
    candidates that do not run, with the reason).
    """
    out: list[tuple[int, int, int, int]] = []
    for tp in divisors(max(gpus, 1)):
        if tp > MAX_TP or (check_heads and heads_reason(model, tp) is not None):
            continue
        for pp in pp_options(model, tp, gpus):
            dp = gpus // (tp * pp)
            out.extend((tp, pp, dp, ep) for ep in ep_options(model, tp, dp))
    return out


def nearest_tp(model: LLMArchitecture, want: int, gpus: int) -> int:
    """The largest allowed TP ≤ ``want`` on ``gpus`` GPUs (1 when none is)."""
    ok = [t for t in tp_options(model, gpus) if t <= max(want, 1)]
    return max(ok) if ok else 1


def nearest_pp(model: LLMArchitecture, want: int, tp: int, gpus: int) -> int:
    """The allowed PP closest to ``want`` after TP = ``tp`` (the larger one on a tie)."""
    opts = pp_options(model, tp, gpus)
    return min(opts, key=lambda p: (abs(p - want), -p))


def nearest_ep(model: LLMArchitecture, want: int, tp: int, dp: int) -> int:
    """The largest allowed EP ≤ ``want`` (1 when none is)."""
    ok = [e for e in ep_options(model, tp, dp) if e <= max(want, 1)]
    return max(ok) if ok else 1


def with_field(model: LLMArchitecture, layout: Layout, gpus: int, key: str, value: int) -> Layout:
    """``layout`` with ``key`` ("tp", "pp", "ep", "cp" or "micro_batches") set to ``value`` and the
    other fields moved to the nearest allowed values: PP stays if TP still leaves room for it,
    DP fills the rest, EP and CP fall back to the largest allowed value not above the old one. The
    placement and the explicit layer split reset when the shape changes.
    """
    tp, pp, ep, cp = layout.tp, layout.pp, layout.ep, layout.cp
    if key == "cp":
        cp = value
    elif key == "tp":
        tp = value
    elif key == "pp":
        pp = value
    elif key == "ep":
        ep = value
    elif key == "micro_batches":
        return layout.replace(micro_batches=value)
    else:
        raise ValueError(f"unknown layout field '{key}' (tp, pp, ep, cp, micro_batches)")
    pp = nearest_pp(model, pp, tp, gpus) if gpus % tp == 0 else pp
    dp = dp_for(tp, pp, gpus)
    ep = ep if ep_reason(model, ep, tp, dp) is None else nearest_ep(model, ep, tp, dp)
    if cp_reason(model, cp, tp, dp, layout.cp_mode) is not None:
        cp = max([o for o in cp_options(model, tp, dp, layout.cp_mode) if o <= cp] or [1])
    shape_changed = (tp, pp, dp) != (layout.tp, layout.pp, layout.dp)
    return layout.replace(
        cp=cp,
        tp=tp,
        pp=pp,
        dp=dp,
        ep=ep,
        placement=None if shape_changed else layout.placement,
        layers_per_stage=None if pp != layout.pp else layout.layers_per_stage,
    )
