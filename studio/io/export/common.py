"""The pieces every engine exporter uses, gathered under one name (``from studio.io.export import
common as c``): each lives in the module of its idea.

* :mod:`.bundle`: engines, formats, :class:`ExportBundle`, :class:`EngineRecipe`;
* :mod:`.deployment`: the drawn nodes a plan runs on, node addresses, server groups;
* :mod:`.shell`: comments, quoted words, commands; :mod:`.yaml_text`: config files;
* :mod:`.serving`: settings derived from the plan (context, tokens per step, memory fractions, KV
  dtype, model argument); :mod:`.header`: the comment block;
* :mod:`.recipes`: launch recipes written as commands or as a script.

Nothing here knows an engine's flag names; the engine modules (:mod:`.vllm`, :mod:`.trtllm`,
:mod:`.sglang`, :mod:`.k8s`) do. User values are checked for what they become first
(:mod:`.safety`), then pass through :func:`quote` before they land in a shell line and through
:func:`comment` before they land in a ``#`` comment, so a generated file can never run anything
else.
"""

from __future__ import annotations

from studio.io.export.bundle import EngineRecipe, ExportBundle
from studio.io.export.deployment import (
    Deployment,
    Group,
    NodeUse,
    address_notes,
    deployment,
    devices_env,
    group_node_index,
    host_word,
    hosts_word,
    one_group,
    replica_groups,
)
from studio.io.export.engines import ENGINE_VERSIONS, ENGINES, FORMATS
from studio.io.export.header import Reserve, header, reserve_lines
from studio.io.export.recipes import (
    Recipe,
    Step,
    host_variables,
    node_label,
    render_commands,
    render_script,
)
from studio.io.export.serving import (
    batched_tokens,
    budget_note,
    engine_recipe,
    graph_capture_max,
    is_blackwell,
    kv_cache_value,
    kv_dtype,
    kv_memory_fractions,
    max_model_len,
    model_dtype,
    model_path,
    partition_env,
    quantized_to,
    sequences_per_rank,
    served_layout,
    uneven_split,
)
from studio.io.export.shell import (
    Raw,
    Word,
    comment,
    flag_groups,
    one_line,
    quote,
    shell_command,
    word,
)
from studio.io.export.yaml_text import dump_yaml

__all__ = [
    "ENGINES", "ENGINE_VERSIONS", "FORMATS", "Deployment", "EngineRecipe", "ExportBundle", "Group",
    "NodeUse", "Raw", "Recipe", "Reserve", "Step", "Word", "address_notes", "batched_tokens", "budget_note", "graph_capture_max", "partition_env",
    "comment", "deployment", "devices_env", "dump_yaml", "flag_groups", "group_node_index",
    "engine_recipe", "header", "host_variables", "is_blackwell", "host_word", "hosts_word", "kv_cache_value", "kv_dtype",
    "kv_memory_fractions", "max_model_len", "model_dtype", "model_path", "node_label", "one_group",
    "one_line", "quantized_to", "quote", "render_commands", "render_script", "replica_groups",
    "reserve_lines", "sequences_per_rank", "served_layout", "shell_command", "uneven_split", "word",
]
