"""How a project is served: aggregated (one pool doing prefill and decode) or disaggregated.

Disaggregated serving (vLLM with a KV connector, SGLang ``--disaggregation-mode``, TensorRT-LLM
disaggregated serving, NVIDIA Dynamo) runs prompts on a *prefill pool* of ``x`` workers and the
generation on a *decode pool* of ``y`` workers; each worker is one TP × PP (× EP) instance of the
model, and the KV cache of every prompt moves from a prefill worker to a decode worker over the
drawn links. The pools may sit on different GPU types (``gpu_type``), e.g. H200 for prefill and
L40S for decode.

Compact text form (CLI ``--disagg``, :func:`parse_pools`)::

    2P:tp4,1D:tp8            2 prefill workers of TP4, 1 decode worker of TP8
    1P:tp4pp2@h200,2D:tp2@l40s   pools pinned to GPU types (a GPU preset id after '@')
    4P:tp2ep2,1D:tp8ep8      EP inside a worker (MoE models)

Each part is ``<workers><P|D>:tp<T>[pp<P>][ep<E>][@<gpu type>]``; exactly one P part and one D part.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, model_validator

from studio.core.base import Frozen
from studio.core.errors import StudioError
from studio.core.layout import MAX_PP, MAX_TP, Layout, ep_shape_reason

#: Most workers one pool may have.
MAX_POOL_WORKERS = 4096

#: KV-transfer backends the exports know (vLLM ``kv_connector``, SGLang
#: ``--disaggregation-transfer-backend``, TensorRT-LLM ``cache_transceiver_config.backend``).
TransferBackend = Literal["nixl", "mooncake", "ucx"]


class PoolLayout(Frozen):
    """One pool of identical workers: ``workers`` instances of TP × PP (× EP)."""

    workers: int = Field(
        1, ge=1, le=MAX_POOL_WORKERS, description="instances of the model in the pool"
    )
    tp: int = Field(1, ge=1, le=MAX_TP, description="tensor-parallel size of one worker")
    pp: int = Field(1, ge=1, le=MAX_PP, description="pipeline stages of one worker")
    ep: int = Field(1, ge=1, le=100_000, description="expert-parallel size of one worker (MoE)")
    micro_batches: int | None = Field(
        None, ge=1, le=100_000, description="pipeline micro-batches; None = pp (every stage busy)"
    )
    gpu_type: str | None = Field(
        None, max_length=80, description="place the pool on GPUs of this type only"
    )
    placement: tuple[str, ...] | None = Field(
        None, description="GPU id of each rank, worker by worker"
    )
    max_batch: int | None = Field(
        None,
        ge=1,
        le=1_000_000,
        description="most sequences one worker runs; None = the workload's max_batch",
    )

    @model_validator(mode="after")
    def _check(self) -> PoolLayout:
        per = self.tp * self.pp
        why = ep_shape_reason(self.ep, self.tp, self.workers)  # the workers are the pool's DP
        if why is not None:
            raise ValueError(why)
        if self.placement is not None:
            if len(self.placement) != per * self.workers:
                raise ValueError(
                    f"placement lists {len(self.placement)} GPUs; workers × tp × pp = {per * self.workers}"
                )
            if len(set(self.placement)) != len(self.placement):
                raise ValueError("placement lists a GPU twice")
        return self

    @property
    def gpus_per_worker(self) -> int:
        return self.tp * self.pp

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.workers

    @property
    def micro_batches_used(self) -> int:
        return self.micro_batches if self.micro_batches is not None else self.pp

    def worker_label(self) -> str:
        """``TP4``, ``TP4×PP2``, ``TP8×EP8``."""
        parts = [f"TP{self.tp}"]
        if self.pp > 1:
            parts.append(f"PP{self.pp}")
        if self.ep > 1:
            parts.append(f"EP{self.ep}")
        return "×".join(parts)

    def label(self, role: str) -> str:
        """``2P(TP4)`` / ``1D(TP8)``; ``role`` is ``P`` or ``D``."""
        where = f"@{self.gpu_type}" if self.gpu_type else ""
        return f"{self.workers}{role}({self.worker_label()}){where}"

    def layout(self, placement: tuple[str, ...] | None = None) -> Layout:
        """The pool as a :class:`Layout` of ``workers`` data-parallel replicas."""
        return Layout(
            tp=self.tp,
            pp=self.pp,
            dp=self.workers,
            ep=self.ep,
            micro_batches=self.micro_batches_used,
            placement=placement if placement is not None else self.placement,
        )

    def spec(self, role: str) -> str:
        """The compact text form of this pool (see :func:`parse_pools`)."""
        text = f"{self.workers}{role}:tp{self.tp}"
        if self.pp > 1:
            text += f"pp{self.pp}"
        if self.ep > 1:
            text += f"ep{self.ep}"
        if self.gpu_type:
            text += f"@{self.gpu_type}"
        return text


class ServingMode(Frozen):
    """Aggregated (today's default: every replica prefills and decodes) or disaggregated."""

    mode: Literal["aggregated", "disaggregated"] = "aggregated"
    prefill: PoolLayout | None = Field(None, description="the prefill pool (disaggregated)")
    decode: PoolLayout | None = Field(None, description="the decode pool (disaggregated)")
    transfer_backend: TransferBackend = Field(
        "nixl", description="KV-transfer library the exports configure (NIXL, Mooncake, UCX)"
    )

    @model_validator(mode="after")
    def _check(self) -> ServingMode:
        if self.mode == "disaggregated" and (self.prefill is None or self.decode is None):
            missing = " and ".join(n for n in ("prefill", "decode") if getattr(self, n) is None)
            raise ValueError(f"mode 'disaggregated' needs a {missing} pool")
        if (
            self.prefill is not None
            and self.decode is not None
            and self.prefill.placement
            and self.decode.placement
        ):
            both = sorted(set(self.prefill.placement) & set(self.decode.placement))
            if both:
                raise ValueError(
                    f"the prefill and decode pools both list GPU {both[0]!r}; a GPU serves one pool"
                )
        return self

    @property
    def disaggregated(self) -> bool:
        return self.mode == "disaggregated"

    @property
    def label(self) -> str:
        """``2P(TP4)+1D(TP8)``, or ``aggregated``."""
        if not self.disaggregated or self.prefill is None or self.decode is None:
            return "aggregated"
        return f"{self.prefill.label('P')}+{self.decode.label('D')}"

    def spec(self) -> str:
        """The compact ``--disagg`` text of this mode (``aggregated`` when not disaggregated)."""
        if not self.disaggregated or self.prefill is None or self.decode is None:
            return "aggregated"
        return f"{self.prefill.spec('P')},{self.decode.spec('D')}"


#: One pool: ASCII digits only (``\\d`` would take full-width or Arabic-Indic digits, which ``int``
#: reads) and at most 7 of them (a 5,000-digit count is past ``int``'s own limit).
_PART = re.compile(
    r"^(?P<n>[0-9]{1,7})(?P<role>[PD]):tp(?P<tp>[0-9]{1,7})(?:pp(?P<pp>[0-9]{1,7}))?(?:ep(?P<ep>[0-9]{1,7}))?"
    r"(?:@(?P<gpu>[A-Za-z0-9._-]{1,100}))?$",
    re.IGNORECASE | re.ASCII,
)

SPEC_HELP = (
    "<workers>P:tp<T>[pp<P>][ep<E>][@gpu],<workers>D:tp<T>[pp<P>][ep<E>][@gpu], e.g. 2P:tp4,1D:tp8"
)


def parse_pools(text: str, what: str | None = None) -> ServingMode:
    """The :class:`ServingMode` of a compact pool description such as ``2P:tp4,1D:tp8``.

    Raises
    ------
    StudioError
        With the expected form when the text does not parse or a value is out of range; the
        message starts with ``what`` (a window's name for its control) when given, else the error's
        field is ``"disagg"`` (the command line puts its flag in front).
    """

    def fail(message: str) -> StudioError:
        if what:
            return StudioError(f"{what}: {message}")
        return StudioError(message, field="disagg")

    parts = [p.strip() for p in str(text).split(",") if p.strip()]
    pools: dict[str, PoolLayout] = {}
    for part in parts:
        m = _PART.match(part)
        if m is None:
            shown = repr(part) if len(part) <= 60 else f"{part[:40]!r}... ({len(part):,} characters)"
            raise fail(f"cannot read {shown}; expected {SPEC_HELP} (ASCII digits, at most 7 each)")
        role = m["role"].upper()
        if role in pools:
            raise fail(
                f"two {'prefill' if role == 'P' else 'decode'} pools ({part!r}); give one P and one D part"
            )
        values = {
            "workers": int(m["n"]),
            "tp": int(m["tp"]),
            "pp": int(m["pp"] or 1),
            "ep": int(m["ep"] or 1),
        }
        for key, v in values.items():
            if v < 1:
                raise fail(f"{key} in {part!r} must be ≥ 1")
        try:
            pools[role] = PoolLayout(**values, gpu_type=m["gpu"].lower() if m["gpu"] else None)
        except ValueError as exc:
            from studio.core.errors import first_error_message

            raise fail(f"{part!r}: {first_error_message(exc)}") from None
    if set(pools) != {"P", "D"}:
        missing = " and ".join(
            n for r, n in (("P", "a prefill (P)"), ("D", "a decode (D)")) if r not in pools
        )
        raise fail(f"{text!r} lacks {missing} pool; expected {SPEC_HELP}")
    return ServingMode(mode="disaggregated", prefill=pools["P"], decode=pools["D"])
