"""One-off generator of the v1 golden files, kept to document how they were made.

The committed JSON files are the contract: never regenerate them to make a test pass. Figures come
from shared/reference (hardware.md, hf-configs) as cited in each value's sources."""
import json
from pathlib import Path

from studio.core.architecture import LLMArchitecture, MLAConfig, ModulePrecision, MoEConfig
from studio.core.building.builders import build_cluster
from studio.core.hardware import GpuSpec, LinkFamily, LinkKind, NodeTemplate
from studio.core.layout import Layout
from studio.core.project import CalibrationProfile, LinkFit, Project
from studio.core.workload import ServingConfig, Workload
from studio.io.project_file import project_to_json

SRC = "shared/reference/hardware.md (stas00/ml-engineering spec tables; MLPerf system JSONs)"
h100 = GpuSpec(id="h100-sxm", name="H100 SXM5 80GB", memory_gb=80, hbm_bandwidth_gbps=3350, tflops_bf16=989, tflops_fp16=989, tflops_fp8=1979, host_pcie_gen=5, power_w=700, price_per_gpu_hour=2.5, sources={"specs": SRC})
kinds = {
 "nvlink4": LinkKind(id="nvlink4", name="NVLink 4", family=LinkFamily.NVLINK, bandwidth_gbps=450, latency_us=2.0, efficiency=0.82, sources={"bandwidth": SRC, "efficiency": "NCCL ring busbw ~370 / 450 GB/s (collectives.md)"}),
 "pcie5": LinkKind(id="pcie5", name="PCIe Gen5 x16", family=LinkFamily.PCIE, bandwidth_gbps=63, latency_us=1.0, sources={"bandwidth": SRC}),
 "upi": LinkKind(id="upi", name="CPU socket link", family=LinkFamily.CPU, bandwidth_gbps=60, latency_us=1.0),
 "ib-ndr": LinkKind(id="ib-ndr", name="InfiniBand NDR 400G", family=LinkFamily.INFINIBAND, bandwidth_gbps=50, latency_us=0.6, efficiency=0.94, sources={"bandwidth": SRC, "measured": "46-48 GB/s per NIC (NVIDIA/nccl-tests #290)"}),
}
tmpl = NodeTemplate(id="dgx-h100", name="DGX H100", gpu_type="h100-sxm", gpus_per_node=8, fabric="nvswitch", scale_up_link="nvlink4", pcie_switch_link="pcie5", host_link="pcie5", socket_link="upi", nics=8, nic_kind="ib-ndr")
llama70 = LLMArchitecture(id="llama-3.1-70b", name="Llama 3.1 70B", model_type="llama", hidden_size=8192, num_layers=80, num_attention_heads=64, num_kv_heads=8, head_dim=128, intermediate_size=28672, vocab_size=128256, max_context=131072, hf_model_id="meta-llama/Meta-Llama-3.1-70B", sources=("shared/reference/hf-configs/meta-llama--Meta-Llama-3.1-70B.config.json",))
out = Path("tests/robustness/golden/v1")

def write(name, p, bom_crlf=False):
    text = project_to_json(p)
    if bom_crlf:
        (out / name).write_bytes(("\ufeff" + text).replace("\n", "\r\n").encode("utf-8"))
    else:
        (out / name).write_text(text, encoding="utf-8")

# 1 minimal: only required fields, defaults omitted (hand-trimmed)
minimal = {"schema_version": 1, "cluster": {}, "model": json.loads(llama70.model_dump_json(exclude_defaults=True))}
(out / "minimal.json").write_text(json.dumps(minimal, indent=2) + "\n")

c2 = build_cluster(tmpl, 2, h100, kinds, name="Two DGX H100")
p2 = Project(name="Llama 70B on two DGX H100", description="TP8 x PP2 over InfiniBand", cluster=c2, model=llama70, model_ref="llama-3.1-70b",
  workload=Workload(isl=2048, osl=512, batch=64, ttft_ms=2000, tpot_ms=50), serving=ServingConfig(weight_dtype="fp8", kv_dtype="fp8", runtime="vllm"),
  layout=Layout(tp=8, pp=2), pinned=(Layout(tp=8, dp=2), Layout(tp=4, pp=4, micro_batches=4)),
  calibrations={"lab-a": CalibrationProfile(name="lab-a", description="fit to nccl-tests on our cluster", link_fits={"nvlink4": LinkFit(latency_us=18.0, bandwidth_gbps=370.0, points=12, rms_rel_error=0.04)}, efficiency={"matmul": 0.8}, fit_error={"decode_ms": 0.07}, source_files=("all_reduce_perf.log",))})
write("dgx-h100-2node.json", p2)

ds = LLMArchitecture(id="deepseek-v3", name="DeepSeek-V3", model_type="deepseek_v3", hidden_size=7168, num_layers=61, num_attention_heads=128, num_kv_heads=128, head_dim=128, intermediate_size=18432, vocab_size=129280, max_context=163840,
  moe=MoEConfig(num_experts=256, experts_per_token=8, expert_intermediate_size=2048, num_shared_experts=1, first_dense_layers=3, router_score_bias=True),
  mla=MLAConfig(q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128), precision=ModulePrecision.quantized_linear("fp8"), hf_model_id="deepseek-ai/DeepSeek-V3", sources=("shared/reference/hf-configs/deepseek-ai--DeepSeek-V3.config.json",))
c1 = build_cluster(tmpl, 2, h100, kinds)
place = tuple(g.id for g in reversed(c1.gpus))
p3 = Project(name="DeepSeek-V3 EP16", cluster=c1, model=ds, layout=Layout(tp=8, dp=2, ep=16, placement=place), workload=Workload(isl=4096, osl=1024, batch="auto", max_batch=512, interactive=False), serving=ServingConfig(kv_dtype="bf16", runtime="sglang", price_per_gpu_hour=3.1))
write("moe-mla-placement.json", p3)

lt = tuple("sliding" if i % 2 == 0 else "full" for i in range(36))
oss = LLMArchitecture(id="gpt-oss-120b", name="gpt-oss-120b", model_type="gpt_oss", hidden_size=2880, num_layers=36, num_attention_heads=64, num_kv_heads=8, head_dim=64, intermediate_size=2880, vocab_size=201088, max_context=131072, attention_bias=True, attention_out_bias=True, attention_sinks=True,
  moe=MoEConfig(num_experts=128, experts_per_token=4, expert_intermediate_size=2880, expert_bias=True, router_bias=True), layer_types=lt, sliding_window=128,
  precision=ModulePrecision(attention="bf16", mlp="bf16", experts="fp4", embeddings="bf16", lm_head="bf16"), hf_model_id="openai/gpt-oss-120b", sources=("shared/reference/hf-configs/openai--gpt-oss-120b.config.json",))
c0 = build_cluster(tmpl, 1, h100, kinds, name='Lab "A" — 実験 rack\nrow 2')
p4 = Project(name='Plan with "quotes", $(rm -rf ~), `ticks` and ünïcödé', description="line one\nline two\ttabbed", cluster=c0, model=oss, layout=Layout(tp=2, dp=4, ep=8), serving=ServingConfig(precision=ModulePrecision.uniform("bf16")))
write("gpt-oss-unicode-bom-crlf.json", p4, bom_crlf=True)
