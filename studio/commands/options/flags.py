"""The command-line flag of each input that core, engine, io and service errors name by field.

Those layers raise :class:`~studio.core.errors.StudioError` with ``field`` set to the input to
blame (``"gpu"``, ``"hosts"``, …) and a message that names it in words; only the command line knows
its flags, so it puts the flag in front here (``--gpu: the topology does not say which GPU model it
is; …``). A window shows the message as is, next to its own control.
"""

from __future__ import annotations

from studio.core.errors import StudioError

#: Field name → flag, for every field an error below the commands may name.
FLAGS: dict[str, str] = {
    "gpu": "--gpu",
    "nodes": "--nodes",
    "node_template": "--node-template",
    "nic_kind": "--nic-kind",
    "hosts": "--hosts",
    "slurm_nodes": "--slurm-nodes",
    "model_path": "--model-path",
    "draft_checkpoint": "--draft-checkpoint",
    "isl": "--isl",
    "osl": "--osl",
    "tp": "--tp",
    "pp": "--pp",
    "disagg": "--disagg",
    "spec": "--spec",
    "all2all_backend": "--all2all-backend",
    "load_balance": "--load-balance",
    "redundant_experts": "--eplb",
    "spec_acceptance": "--spec-acceptance",
    "kv_offload_gib": "--kv-offload-gib",
    # the fleet planner (layout-studio capacity; docs/fleet.md)
    "traffic": "--traffic",
    "ttft_p99_ms": "--ttft-p99-ms",
    "tpot_p99_ms": "--tpot-p99-ms",
    "headroom": "--headroom",
    "slot_minutes": "--slot-minutes",
    "peak": "--peak",
    "storage_gbps": "--storage-gbps",
    "pue": "--pue",
    "spot_price": "--price-spot",
    "runtime": "--runtime",
    "lengths": "--lengths",
    "runtime_version": "--runtime-version",
    # calibrate nccl (studio/service/nccl_fit.py)
    "ranks": "--ranks",
}


def cli_message(exc: StudioError) -> str:
    """``exc`` as the command line prints it: ``SOURCE: --FLAG: message`` (each part when known)."""
    flag = FLAGS.get(exc.field) if exc.field else None
    text = f"{flag}: {exc.message}" if flag else exc.message
    return f"{exc.source}: {text}" if exc.source else text
