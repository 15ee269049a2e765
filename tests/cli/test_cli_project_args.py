"""``studio.commands.options.project_args.project_from_args``: flags over a project file, cluster building,
layout derivation and the errors for layouts that cannot exist."""

from __future__ import annotations

import pytest

from studio.cli import build_parser
from studio.commands.options.project_args import load_base_project, project_from_args
from studio.core.errors import StudioError
from studio.io.presets import load_catalog
from studio.io.project_file import save_project


def project(*argv: str, command: str = "plan"):
    return project_from_args(build_parser().parse_args([command, *argv]))


@pytest.fixture(scope="module")
def example():
    return load_base_project(None)


@pytest.fixture
def project_file(tmp_path, example):
    """The example with distinctive workload values, saved to a temporary file."""
    p = example.replace(
        name="saved plan",
        workload=example.workload.replace(isl=3000, osl=777, max_batch=64),
        serving=example.serving.replace(gpu_memory_utilization=0.85),
    )
    return save_project(p, tmp_path / "plan.json")


def test_no_file_starts_from_bundled_example(example):
    p = project()
    assert p.model == example.model
    assert p.cluster.num_gpus == example.cluster.num_gpus
    assert p.layout.world_size == p.cluster.num_gpus


def test_flags_override_project_file(project_file):
    p = project(str(project_file), "--isl", "4096", "--batch", "4", "--kv-dtype", "fp8",
                "--price-per-gpu-hour", "2.5", "--ttft-ms", "500")
    assert p.name == "saved plan"
    assert p.workload.isl == 4096  # overridden
    assert p.workload.osl == 777  # kept from the file
    assert p.workload.max_batch == 64
    assert p.workload.batch == 4
    assert p.workload.ttft_ms == 500
    assert p.serving.kv_dtype.value == "fp8"
    assert p.serving.price_per_gpu_hour == 2.5
    assert p.serving.gpu_memory_utilization == 0.85  # kept from the file
    assert project(str(project_file), "--batch", "auto").workload.batch == "auto"


def test_file_values_kept_without_flags(project_file):
    p = project(str(project_file))
    assert (p.workload.isl, p.workload.osl) == (3000, 777)


def test_gpu_alone_picks_usual_node_template():
    p = project("--gpu", "h100-sxm", "--nodes", "2", "--tp", "8", "--pp", "1")
    assert [n.template for n in p.cluster.nodes] == ["dgx-h100", "dgx-h100"]
    assert p.cluster.num_gpus == 16
    assert p.layout.dp == 2  # dp = GPUs / (tp × pp)
    assert load_catalog().template_for_gpu("h100-sxm").id == "dgx-h100"


def test_gpus_per_node_resizes_template():
    p = project("--gpu", "h100-sxm", "--nodes", "2", "--gpus-per-node", "4", "--tp", "4", "--pp", "2")
    assert [len(n.gpus) for n in p.cluster.nodes] == [4, 4]
    assert (p.layout.tp, p.layout.pp, p.layout.dp) == (4, 2, 1)


def test_node_template_and_nodes():
    p = project("--node-template", "l40s-8x-pcie", "--tp", "4", "--pp", "1")
    assert p.cluster.num_gpus == 8 and p.cluster.gpu_types() == ["l40s"]
    assert p.layout.dp == 2


def test_nodes_alone_reuses_the_projects_template(example):
    p = project("--nodes", "1", "--tp", "8", "--pp", "1")
    assert p.cluster.num_gpus == 8
    assert {n.template for n in p.cluster.nodes} == {n.template for n in example.cluster.nodes}


def test_dp_derived_or_checked():
    p = project("--gpu", "h100-sxm", "--nodes", "2", "--tp", "2", "--pp", "2")
    assert p.layout.dp == 4
    with pytest.raises(StudioError, match=r"TP=8 × PP=3 = 24 does not divide the cluster's 16 GPUs"):
        project("--gpu", "h100-sxm", "--nodes", "2", "--tp", "8", "--pp", "3")
    with pytest.raises(StudioError, match=r"uses 32 GPUs, but the cluster has 16"):
        project("--gpu", "h100-sxm", "--nodes", "2", "--tp", "8", "--pp", "2", "--dp", "2")


def test_layers_per_stage_checked():
    model = load_catalog().model("llama-3.1-405b").architecture
    half = model.num_layers // 2
    p = project("--model", "llama-3.1-405b", "--tp", "8", "--pp", "2",
                "--layers-per-stage", f"{half},{model.num_layers - half}")
    assert sum(p.layout.layers_per_stage) == model.num_layers
    with pytest.raises(StudioError, match="adds up to"):
        project("--tp", "8", "--pp", "2", "--layers-per-stage", "10,10")
    with pytest.raises(StudioError, match="lists 3 stages; PP is 2"):
        project("--tp", "8", "--pp", "2", "--layers-per-stage", "10,10,106")


def test_model_flag_and_dtype():
    p = project("--model", "llama-3.1-70b", "--weight-dtype", "fp8", "--tp", "8", "--pp", "2")
    assert p.model_ref == "llama-3.1-70b"
    assert p.serving.weight_dtype.value == "fp8"


def test_model_config_file(tmp_path):
    import json

    from studio.io.presets import presets_root

    data = json.loads((presets_root() / "models" / "llama-3.1-8b.json").read_text(encoding="utf-8"))
    (tmp_path / "config.json").write_text(json.dumps(data["config"]), encoding="utf-8")
    p = project("--model-config", str(tmp_path), "--tp", "8", "--pp", "2")
    assert p.model.num_layers == data["config"]["num_hidden_layers"]
    assert p.model_ref == str(tmp_path)


@pytest.mark.parametrize(
    ("argv", "pattern"),
    [
        (["--model", "llama-3.1-406b"], r"unknown model 'llama-3\.1-406b'.*llama-3\.1-405b"),
        (["--gpu", "h100-sxn"], r"unknown GPU 'h100-sxn'.*h100-sxm"),
        (["--node-template", "dgx-h101"], r"unknown node template 'dgx-h101'.*dgx-h100"),
        (["--ep", "2", "--model", "llama-3.1-8b", "--tp", "8", "--pp", "2"], r"--ep 2: .*has no experts"),
        (["--calibration", "lab"], r"--calibration 'lab' is not a profile"),
        (["--gpu-memory-utilization", "1.5"], r"--gpu-memory-utilization must be in"),
        (["--pp", "1000", "--tp", "1", "--dp", "1", "--gpu", "h100-sxm", "--gpus-per-node", "1"], r"exceeds the model's"),
    ],
)
def test_bad_input_raises_clear_error(argv, pattern):
    with pytest.raises(StudioError, match=pattern):
        project(*argv)


def test_sweep_inputs_have_no_layout_flags_but_valid_layout():
    p = project("--gpu", "l40s", "--nodes", "1", command="sweep")
    assert p.layout.world_size == 8


@pytest.fixture
def pinned_file(tmp_path, example):
    """The example with two pinned layouts at their batches and Explorer settings, saved: TP8×PP2
    runs on any 16-GPU cluster and model; the 60 + 66 layer split only on a 126-layer model."""
    from studio.core.layout import Layout

    even, split = Layout(tp=8, pp=2), Layout(tp=8, pp=2, layers_per_stage=(60, 66))
    p = example.with_pin(even, 32).with_pin(split, 16)
    p = p.replace(explorer=p.explorer.replace(objective="cost", ttft_p99_ms=900.0, tpot_p99_ms=60.0,
                                               slo_rate_per_s=2.0))
    return save_project(p, tmp_path / "pinned.json"), p


def test_pins_their_batches_and_explorer_settings_come_from_the_file(pinned_file):
    path, saved = pinned_file
    p = project(str(path), "--isl", "4096")
    assert p.pinned == saved.pinned and len(p.pinned) == 2
    assert p.pinned_batches == saved.pinned_batches
    assert [p.pinned_batch(lay) for lay in p.pinned] == [32, 16]
    assert p.explorer == saved.explorer and p.explorer.objective == "cost"


def test_a_flag_changed_cluster_keeps_the_pins_it_can_run(pinned_file):
    path, saved = pinned_file
    same_size = project(str(path), "--gpu", "h200-sxm", "--nodes", "2")
    assert same_size.cluster.num_gpus == 16
    assert same_size.pinned == saved.pinned and same_size.pinned_batches == saved.pinned_batches
    assert same_size.explorer == saved.explorer
    smaller = project(str(path), "--gpu", "h100-sxm", "--nodes", "1")  # 8 GPUs: neither runs
    assert smaller.pinned == () and smaller.pinned_batches == ()
    assert smaller.explorer == saved.explorer


def test_a_flag_changed_model_drops_the_pins_it_cannot_run_with_their_batches(pinned_file):
    path, saved = pinned_file
    p = project(str(path), "--model", "llama-3.1-70b")  # 80 layers: the 60 + 66 split goes
    even = saved.pinned[0]
    assert p.pinned == (even,)
    assert [(b.layout, b.batch) for b in p.pinned_batches] == [(even, 32)]
    assert p.explorer == saved.explorer

