"""What an export produces: the file bundle and the engine arguments it holds (for :mod:`.check`);
the engines and formats are in :mod:`.engines`."""

from __future__ import annotations

from dataclasses import dataclass, field

from studio.core.layout import Layout

__all__ = ["EngineRecipe", "ExportBundle"]


@dataclass(frozen=True)
class ExportBundle:
    """What an export produces.

    Attributes
    ----------
    files:
        File name → text, in the order a user should read them.
    notes:
        What the engine cannot express of the plan, and what the export runs instead.
    nearest_layout:
        The layout the exported files actually run when it differs from the plan's, else ``None``.
    """

    files: dict[str, str]
    notes: tuple[str, ...] = ()
    nearest_layout: Layout | None = None
    recipe: EngineRecipe | None = None


@dataclass(frozen=True)
class EngineRecipe:
    """The engine arguments an export writes, for checking them (:mod:`.check`).

    Attributes
    ----------
    engine:
        ``vllm``, ``trtllm`` or ``sglang``.
    model:
        The model argument of the launch line.
    config:
        Engine settings shared by every node, spelled as the engine's config-file keys (dashed for
        vLLM and SGLang, snake_case with nested mappings for TensorRT-LLM).
    env:
        Environment variables set on every launch line (e.g. a layer partition).
    host:
        The ``--host`` the server listens on, or ``None`` when not given.
    model_dtype:
        The dtype the engine runs the model in (``bfloat16`` or ``float16``).
    mla:
        Whether the model uses multi-head latent attention.
    num_layers, pp:
        Decoder layers and pipeline stages (for a layer partition).
    sequences_per_rank:
        Concurrent sequences the plan gives each rank that schedules its own batch.
    version:
        The engine release the recipe is written for (``None``: the one the rules target).
    role:
        ``aggregated``, or ``prefill`` / ``decode`` for a server of a disaggregated recipe.
    blackwell:
        Whether the GPUs are NVIDIA Blackwell (Helix runs there only).
    kv_heads, attention_heads:
        The model's KV and query heads (the engines' context-parallel rules read them).
    experts:
        The model's routed experts (0: a dense model, or not known); the load-balancer rules read
        them (the physical experts must divide among the expert-parallel ranks).
    gpus_per_node:
        GPUs one node gives the server (vLLM's parallel config checks the world size against it).
    nodes, headless_nodes:
        Nodes one server spans, and how many of them start with ``--headless`` (vLLM).
    config_nodes:
        The nodes whose launch steps write the engine's config file (TensorRT-LLM multi-node).
    srun_nodelist:
        The ``srun -w`` entries the recipe writes (``None``: no ``-w``).
    plan:
        The values the plan was costed with, by config key (batch limit, token budget, memory
        fraction); ``export --check`` fails when the config holds other values.
    hf_config:
        The model's Hugging Face ``config.json`` (a bundled preset's, when the project's model is
        that preset unchanged), for the engine's own model-config validation; ``None`` otherwise.
    disagg_config:
        TensorRT-LLM's ``disagg-config.yaml`` (the router's servers), on the one server recipe of a
        disaggregated export whose engine check also parses it; ``None`` otherwise.
    """

    engine: str
    model: str
    config: dict[str, object]
    env: dict[str, str]
    host: str | None
    model_dtype: str
    mla: bool
    num_layers: int
    pp: int
    sequences_per_rank: int
    version: str | None = None
    role: str = "aggregated"
    blackwell: bool = False
    kv_heads: int = 0
    attention_heads: int = 0
    experts: int = 0
    gpus_per_node: int = 8
    nodes: int = 1
    headless_nodes: int = 0
    config_nodes: tuple[int, ...] = ()
    srun_nodelist: tuple[str, ...] | None = None
    plan: dict[str, object] = field(default_factory=dict)
    hf_config: dict[str, object] | None = None
    disagg_config: dict[str, object] | None = None

    def value(self, key: str) -> object:
        """``config[key]``, following dots into nested mappings (``kv_cache_config.dtype``);
        ``None`` when the recipe does not set it."""
        node: object = self.config
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node
