"""Prompt reuse of a workload (shared system prompt, multi-turn history, re-read documents) and the
KV-cache tiers beyond HBM an engine may keep reused prefixes in (host DRAM, local NVMe)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from studio.core.base import Frozen

#: Largest host-memory or NVMe KV tier, GiB (a 4 PiB ceiling only guards the arithmetic).
MAX_TIER_GIB = 4 * 1024 * 1024


class Reuse(Frozen):
    """How much of each prompt repeats an earlier one.

    * ``system_prompt_tokens``: a prefix every request shares (part of the mean prompt ``isl``).
    * ``turns`` / ``history_tokens_per_turn`` / ``think_time_s``: conversations of ``turns`` turns;
      each turn resends the history so far, which grows by ``history_tokens_per_turn`` (the user's
      message plus the answer) per turn; a user waits ``think_time_s`` on average between turns.
    * ``document_share`` / ``documents``: the share of the prompt (beyond the system prompt and
      history) that is one of ``documents`` equally popular documents re-read by many requests.
    * ``hit_rate``: a measured prefix-cache hit rate (share of prompt tokens served from the cache)
      that replaces the LRU estimate; None = estimate it.
    * ``hit_tier``: where a measured ``hit_rate`` is served from: ``hbm`` (the GPU's own prefix
      cache), ``host`` (host DRAM, loaded over the host link) or ``disk`` (local NVMe).
    """

    system_prompt_tokens: int = Field(0, ge=0, le=10_000_000, description="tokens every prompt shares")
    turns: int = Field(1, ge=1, le=10_000, description="turns per conversation")
    history_tokens_per_turn: int = Field(
        0, ge=0, le=10_000_000, description="tokens the history grows by per turn (message + answer)"
    )
    think_time_s: float = Field(0.0, ge=0.0, le=86_400.0, description="mean seconds a user waits between turns")
    document_share: float = Field(0.0, ge=0.0, le=1.0, description="share of the rest of the prompt that is a re-read document")
    documents: int = Field(1, ge=1, le=10_000_000, description="distinct documents re-read")
    hit_rate: float | None = Field(
        None, ge=0.0, le=1.0, description="measured prefix-cache hit rate in [0, 1]; None = the LRU estimate"
    )
    hit_tier: Literal["hbm", "host", "disk"] = Field(
        "hbm", description="tier a measured hit_rate is served from: hbm, host or disk"
    )

    @model_validator(mode="after")
    def _check_tier(self) -> Reuse:
        if self.hit_tier != "hbm" and self.hit_rate is None:
            raise ValueError(f"reuse: hit_tier '{self.hit_tier}' places a measured hit_rate; give hit_rate too "
                             "(the LRU estimate places its hits itself)")
        return self

    @property
    def active(self) -> bool:
        """Whether any prompt token can repeat an earlier one."""
        return bool(self.system_prompt_tokens or self.turns > 1 or self.document_share > 0
                    or (self.hit_rate or 0.0) > 0)

    def mean_history_tokens(self) -> float:
        """History resent by the mean turn: the k-th of ``turns`` resends (k - 1) × growth tokens."""
        return self.history_tokens_per_turn * (self.turns - 1) / 2.0

    def check_against(self, isl: int) -> None:
        """Raise ``ValueError`` naming the field when the shared parts exceed the mean prompt."""
        shared = self.system_prompt_tokens + self.mean_history_tokens()
        if shared > isl:
            raise ValueError(
                f"reuse: system_prompt_tokens ({self.system_prompt_tokens:,}) plus the mean turn's history "
                f"(history_tokens_per_turn {self.history_tokens_per_turn:,} × (turns {self.turns} - 1) / 2 = "
                f"{self.mean_history_tokens():,.0f}) exceed the mean prompt isl ({isl:,} tokens); "
                "they are parts of the prompt"
            )


class KVTiers(Frozen):
    """Where the engine keeps KV blocks: HBM always, then optionally host DRAM and local NVMe.

    ``prefix_cache``: True / False turns automatic prefix caching on or off; None = the engine's
    default (its profile). ``host_gib`` / ``disk_gib``: KV capacity per node in host memory and on
    local NVMe (0 = no such tier), checked against the node's own memory and disk.
    ``prefix_routing``: a router sends the requests that share a document to the replica that holds
    it (llm-d's prefix-cache scorer, SGLang router's cache-aware policy), so each replica re-reads
    its share of the documents; False = requests spread over the replicas regardless of their
    prompt, every replica seeing every document. A conversation's turns return to its replica either way.
    """

    prefix_cache: bool | None = Field(None, description="automatic prefix caching; None = the engine's default")
    host_gib: float = Field(0.0, ge=0.0, le=MAX_TIER_GIB, description="KV cache in host DRAM per node, GiB")
    disk_gib: float = Field(0.0, ge=0.0, le=MAX_TIER_GIB, description="KV cache on local NVMe per node, GiB")
    prefix_routing: bool = Field(
        False, description="requests that share a document go to the replica holding it (prefix-aware routing)"
    )
    host_link_gbps: float | None = Field(
        None, gt=0, le=100_000,
        description="host-to-GPU bandwidth per GPU, GB/s one way; None = PCIe 5.0 x16 (the node template's when drawn from one)",
    )

    @model_validator(mode="after")
    def _check(self) -> KVTiers:
        if self.prefix_cache is False and (self.host_gib or self.disk_gib):
            raise ValueError(
                "kv_tiers: host_gib / disk_gib keep reused prefixes, so they need prefix_cache on "
                f"(prefix_cache is off, host_gib {self.host_gib:g}, disk_gib {self.disk_gib:g})"
            )
        return self
