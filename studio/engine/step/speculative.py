"""Speculative decoding: what a drafter costs and how many tokens each verification step yields.

A decode step with speculation runs the drafter ``k`` times (one token per decoding sequence each
pass; the first pass also takes the step's prompt tokens, which the drafter must prefill too),
then one forward pass of the model over ``k + 1`` tokens per decoding sequence that verifies them.
It emits ``E`` tokens per sequence on average:

* constant per-token acceptance ``α`` (each drafted token accepted with probability ``α`` given
  that the one before it was): ``E = (1 − α^(k+1)) / (1 − α)`` (``k + 1`` when ``α = 1``);
* per-position rates ``p_i`` (the share of steps whose ``i``-th drafted token is accepted, as vLLM
  reports "acceptance at token i"): ``E = 1 + Σ_{i ≤ k} p_i``; positions past the list continue
  with the ratio of its last two entries;
* a measured mean accepted length ``L`` at ``k`` tokens is turned into the ``α`` that reproduces it.

What the drafter costs (:func:`drafting`), priced by the same
:class:`~studio.engine.step.iteration.IterationModel` as the model itself on the GPUs of the model's last
pipeline stage (where the engines run it):

* ``draft``: a separate model (its own weights, KV cache and LM head);
* ``eagle`` / ``eagle3``: one decoder layer of the model's width plus the feature projection
  (2h × h for EAGLE-1/2, 3h × h for EAGLE-3); EAGLE-1/2 share the model's embedding and LM head,
  EAGLE-3 shares the embedding and has its own LM head over a 32,000-token draft vocabulary;
* ``mtp``: the model's own multi-token-prediction layer(s) (DeepSeek-V3: a full MoE decoder layer
  and a 2h × h projection, sharing embedding and LM head), reused for every drafted token;
* ``ngram``: prompt lookup on the CPU, no GPU pass (its cost is left out).

The verification pass reads the weights and each sequence's KV cache once for ``k + 1`` query
tokens: at small batch it is memory-bound and costs about one plain decode step, at large batch it
is compute-bound and costs ``k + 1`` times as much — so the gain shrinks with batch, as measured.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

import numpy as np

from studio.core.architecture import LLMArchitecture, ModulePrecision
from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.core.packaged import packaged_text
from studio.core.precision import DType
from studio.core.workload import SpeculativeConfig
from studio.engine.step.costing import LayoutCosts, layout_costs
from studio.engine.step.iteration import IterationModel
from studio.engine.step.records import frozen_result
from studio.engine.step.shapes import layer_table

#: Human names of the methods, for explanations.
METHOD_NAMES = {
    "draft": "draft model",
    "eagle": "EAGLE head",
    "eagle3": "EAGLE-3 head",
    "mtp": "MTP layers",
    "ngram": "n-gram lookup",
}


@lru_cache(maxsize=1)
def speculative_presets() -> dict[str, Any]:
    """The decoded ``presets/speculative.json`` (published acceptance defaults and their sources)."""
    try:
        data = json.loads(packaged_text("presets/speculative.json"))
    except ValueError as exc:
        raise StudioError(
            f"cannot read speculative-decoding defaults: {exc}", "presets/speculative.json"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("methods"), dict):
        raise StudioError("field 'methods' is missing", "presets/speculative.json")
    return data


def tokens_from_alpha(alpha: float, k: int) -> float:
    """Mean tokens per step with constant per-token acceptance ``alpha`` and ``k`` drafted tokens."""
    a = float(alpha)
    if a >= 1.0:
        return float(k + 1)
    return (1.0 - a ** (k + 1)) / (1.0 - a)


def alpha_from_length(length: float, k: int) -> float:
    """The constant per-token acceptance that yields ``length`` tokens per step at ``k`` tokens
    (bisection; ``length`` in [1, k + 1])."""
    target = min(max(float(length), 1.0), float(k + 1))
    if target >= k + 1:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if tokens_from_alpha(mid, k) < target:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def position_rates(rates: tuple[float, ...], k: int) -> list[float]:
    """Per-position acceptance for positions 1..k: the given ones, then continuing with the ratio
    of the last two (the last one itself when only one is given)."""
    out = list(rates[:k])
    ratio = rates[-1] / rates[-2] if len(rates) > 1 and rates[-2] > 0 else rates[-1]
    while len(out) < k:
        out.append(out[-1] * min(ratio, 1.0))
    return out


@frozen_result
class Acceptance:
    """Tokens per verification step and where the acceptance came from."""

    tokens_per_step: float  # E, the bonus token included
    alpha: float | None  # constant per-token rate, when the acceptance is one
    source: str  # what the figure is: given, or the published default and its source


def acceptance(spec: SpeculativeConfig) -> Acceptance:
    """Expected tokens per step of ``spec`` (its own acceptance, else the method's published default).

    Raises
    ------
    StudioError
        Method ``draft`` without an acceptance (no published default fits every draft/model pair).
    """
    k = spec.num_tokens
    if spec.acceptance is not None:
        return Acceptance(
            tokens_from_alpha(spec.acceptance, k),
            spec.acceptance,
            f"acceptance {spec.acceptance:.2f} per token (given)",
        )
    if spec.acceptance_by_position is not None:
        rates = position_rates(spec.acceptance_by_position, k)
        shown = ", ".join(f"{r:.2f}" for r in rates)
        return Acceptance(1.0 + sum(rates), None, f"per-position acceptance {shown} (given)")
    if spec.accepted_length is not None:
        a = alpha_from_length(spec.accepted_length, k)
        return Acceptance(
            spec.accepted_length, a, f"mean accepted length {spec.accepted_length:.2f} (given)"
        )
    entry = speculative_presets()["methods"].get(spec.method)
    if entry is None:
        raise StudioError(
            f"serving.speculative.acceptance: method '{spec.method}' has no published default (acceptance depends "
            "on the draft/model pair); give an acceptance rate in (0, 1]",
            field="spec_acceptance",
        )
    if "acceptance" in entry:
        a = float(entry["acceptance"])
        basis = f"{a:.2f} per token"
    else:
        a = alpha_from_length(float(entry["accepted_length"]), int(entry["num_tokens"]))
        basis = (
            f"α {a:.3f} from accepted length {entry['accepted_length']} at k={entry['num_tokens']}"
        )
    return Acceptance(tokens_from_alpha(a, k), a, f"published default: {basis} ({entry['source']})")


def check_speculative(model: LLMArchitecture, spec: SpeculativeConfig) -> None:
    """Refuse a speculative setting this model cannot run, naming the field.

    Raises
    ------
    StudioError
        A draft model whose vocabulary differs from the model's, or MTP on a model without MTP layers.
    """
    if (
        spec.method == "draft"
        and spec.draft is not None
        and spec.draft.vocab_size != model.vocab_size
    ):
        raise StudioError(
            f"serving.speculative.draft_model: '{spec.draft_model or spec.draft.id}' has a {spec.draft.vocab_size:,}-token "
            f"vocabulary, the model '{model.id}' {model.vocab_size:,}; a draft model must share the model's tokenizer"
        )
    if spec.method == "mtp" and model.mtp_layers < 1:
        raise StudioError(
            f"serving.speculative.method: 'mtp' needs a model with multi-token-prediction layers "
            f"(num_nextn_predict_layers in config.json); '{model.id}' has none"
        )


@frozen_result
class Drafting:
    """What speculation adds to one replica's iteration (see the module docstring)."""

    spec: SpeculativeConfig
    accept: Acceptance
    draft: Any | None  # LayoutCosts of one draft pass on the last stage's GPUs; None for n-gram
    weight_bytes: (
        float  # draft weights per GPU of the last stage (shared embedding / LM head excluded)
    )
    kv_per_token: float  # draft KV bytes per token per GPU of the last stage
    extra_bytes: (
        float  # projection weights per GPU read on every pass (not in ``draft``'s layer table)
    )
    hbm_bps: float  # achievable memory bandwidth of the last stage's GPU

    @property
    def k(self) -> int:
        return self.spec.num_tokens

    @property
    def tokens_per_step(self) -> float:
        return self.accept.tokens_per_step

    @property
    def verify_tokens(self) -> int:
        """Tokens the model verifies per decoding sequence (chain drafting: k + 1)."""
        return self.spec.num_tokens + 1

    def draft_ms(
        self,
        c: Any,
        prefill_tokens: np.ndarray,
        decode_seqs: np.ndarray,
        ctx: np.ndarray,
        prompt_len: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """(compute, collectives) of the ``k`` draft passes of one micro-batch, ms, arrays (N,).

        The first pass also prefills the micro-batch's prompt tokens into the drafter's KV cache;
        the engine's per-iteration overhead is paid once by the iteration, not per pass."""
        n = decode_seqs.shape[0]
        if self.draft is None:
            return np.zeros(n), np.zeros(n)
        im = IterationModel(self.draft, c)
        both = im.micro_batch_times(
            np.concatenate((prefill_tokens, np.zeros(n))),
            np.tile(decode_seqs, 2),
            np.tile(ctx, 2),
            np.tile(prompt_len, 2),
        )
        comp = both.compute[0]
        coll = (both.allreduce + both.alltoall)[0]
        tokens = np.concatenate((prefill_tokens + decode_seqs, decode_seqs))
        proj = self.extra_bytes / (self.hbm_bps * c.decode_efficiency) * 1e3
        comp = np.where(tokens > 0, comp - c.decode_step_overhead_us / 1e3 + proj, 0.0)
        first, rest = comp[:n], comp[n:]
        return first + (self.k - 1) * rest, coll[:n] + (self.k - 1) * coll[n:]

    def describe(self) -> str:
        """One line: method, k, tokens per step and the acceptance's source."""
        return (
            f"{METHOD_NAMES[self.spec.method]}, k={self.k}: {self.tokens_per_step:.2f} tokens per step "
            f"(verifies {self.verify_tokens} per sequence); {self.accept.source}"
        )


def _head(
    model: LLMArchitecture, spec: SpeculativeConfig
) -> tuple[LLMArchitecture, float, list[str], int]:
    """(architecture of one draft pass, projection parameters, modules shared with the model,
    copies of the pass's layer held in memory)."""
    h = model.hidden_size
    if spec.method == "draft":
        assert spec.draft is not None
        return spec.draft, 0.0, [], 1
    if spec.method == "mtp":
        moe = (
            model.moe.replace(first_dense_layers=0, dense_layers=())
            if model.moe is not None
            else None
        )
        arch = model.replace(
            num_layers=1,
            moe=moe,
            layer_types=None,
            sliding_window=None,
            mtp_layers=0,
            id=f"{model.id}-mtp",
            name=f"{model.name} MTP layer",
        )
        return arch, 2.0 * h * h, ["embeddings", "lm_head"], max(1, model.mtp_layers)
    vocab = model.vocab_size
    shared = ["embeddings", "lm_head"]
    fc = 2.0 * h * h
    if spec.method == "eagle3":
        vocab = int(
            speculative_presets().get("eagle3_draft_vocab", {}).get("value", model.vocab_size)
        )
        shared = ["embeddings"]
        fc = 3.0 * h * h
    arch = model.replace(
        num_layers=1,
        moe=None,
        layer_types=None,
        sliding_window=None,
        mtp_layers=0,
        vocab_size=vocab,
        tie_word_embeddings=False,
        id=f"{model.id}-{spec.method}",
        name=f"{model.name} {METHOD_NAMES[spec.method]}",
    )
    return arch, fc, shared, 1


def drafting(
    model: LLMArchitecture,
    spec: SpeculativeConfig,
    precision: ModulePrecision,
    kv_dtype: DType,
    layout: Layout,
    groups: list[list[list[str]]],
    topo: Any,
    c: Any,
    gpu_memory_utilization: float,
    max_batch: int,
    replicas: list[int] | None,
    hbm_bps: float,
    kernel_engine: tuple[str, str | None] | None = None,
) -> Drafting:
    """The drafter of ``spec`` for ``model`` served with ``layout`` (``groups`` from
    :meth:`studio.core.layout.Layout.gpu_groups`); ``kernel_engine`` names the target's kernel
    tables, which the drafter runs on too.

    Raises
    ------
    StudioError
        See :func:`check_speculative` and :func:`acceptance`.
    """
    check_speculative(model, spec)
    acc = acceptance(spec)
    if spec.method == "ngram":
        return Drafting(
            spec=spec,
            accept=acc,
            draft=None,
            weight_bytes=0.0,
            kv_per_token=0.0,
            extra_bytes=0.0,
            hbm_bps=hbm_bps,
        )
    arch, fc_params, shared, copies = _head(model, spec)
    if spec.method == "draft":
        d_prec = arch.precision
    elif spec.method == "mtp":
        d_prec = precision
    else:
        d_prec = ModulePrecision()  # EAGLE heads are published in BF16
    last = layout.pp - 1
    placement = tuple(g for d in range(layout.dp) for g in groups[d][last])
    ep = layout.ep if arch.moe is not None else 1
    d_layout = Layout(tp=layout.tp, pp=1, dp=layout.dp, ep=ep, micro_batches=1)
    lc = layout_costs(
        arch,
        layer_table(arch),
        d_prec,
        kv_dtype,
        d_layout,
        placement,
        topo,
        c,
        gpu_memory_utilization,
        max_batch,
        replicas=replicas,
        kernel_engine=kernel_engine,
    )
    sh = lc.shapes[0]
    heads = ("embeddings", "lm_head")
    layer_bytes = sum(v for k, v in sh.weights_by_module.items() if k not in heads)
    own_heads = sum(v for k, v in sh.weights_by_module.items() if k in heads and k not in shared)
    fc_dtype = precision.attention if spec.method == "mtp" else DType.BF16
    fc_bytes = fc_params / layout.tp * DType(fc_dtype).bytes
    weights = copies * (layer_bytes + fc_bytes) + own_heads
    kv_tok = copies * float(lc.kv_seq_bytes(1.0)[0])
    return Drafting(
        spec=spec,
        accept=acc,
        draft=lc,
        weight_bytes=weights,
        kv_per_token=kv_tok,
        extra_bytes=fc_bytes,
        hbm_bps=hbm_bps,
    )


def plan_line(plan: Any) -> str | None:
    """One line for reports: drafter, k, tokens per step E, and TPOT = the iteration (drafter +
    verification) / E, under the plan's load when it has one; None without speculation."""
    ex = plan.explanations.get("speculative")
    if ex is None:
        return None
    t = {term.name: term for term in ex.terms}
    it = t.get("iteration under the load")
    step, where = (it.value, "iteration under the load") if it is not None else (t["decode step"].value, "decode step")
    return (
        f"{ex.notes[0].removeprefix('drafter: ')}, k={int(t['k (tokens proposed per step)'].value)}: "
        f"{ex.value:.2f} tokens per step; {where} {step:.2f} ms (drafter + verification of "
        f"{int(t['verified per sequence'].value)} tokens per sequence) / {ex.value:.2f} = TPOT {plan.tpot_ms:.2f} ms"
    )


def with_drafter(
    lc: LayoutCosts,
    model: LLMArchitecture,
    spec: SpeculativeConfig,
    precision: ModulePrecision,
    kv_dtype: DType,
    topo: Any,
    c: Any,
    gpu_memory_utilization: float,
    max_batch: int,
    replicas: list[int] | None,
    fraction_of_free: bool,
) -> LayoutCosts:
    """``lc`` with the drafter of ``spec`` on its last stage: its weights and KV cache in memory,
    its passes in every iteration (see the module docstring). With ``fraction_of_free``
    (TensorRT-LLM) the KV cache is sized from what the drafter's weights leave free.

    Raises
    ------
    StudioError
        See :func:`check_speculative` and :func:`acceptance`.
    """
    lc.spec = drafting(model, spec, precision, kv_dtype, lc.layout, lc.groups, topo, c,
                       gpu_memory_utilization, max_batch, replicas, float(lc.hbm_bps[-1]), lc.kernel_engine)
    if fraction_of_free:
        lc.usable[-1] += lc.spec.weight_bytes * (1.0 - gpu_memory_utilization)
    return lc
