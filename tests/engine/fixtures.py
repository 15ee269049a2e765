"""Engine test fixtures built in code from public datasheet figures (sources inline), so the
engine tests do not depend on the preset files."""

from __future__ import annotations

from studio.core.architecture import LLMArchitecture, ModulePrecision, MoEConfig
from studio.core.building.builders import build_cluster
from studio.core.hardware import Cluster, GpuSpec, LinkFamily, LinkKind, NodeTemplate
from studio.core.layout import Layout
from studio.core.project import Project
from studio.core.workload import ServingConfig, Workload

# reference/hardware.md (stas00/ml-engineering tables, MLPerf system JSONs)
H100 = GpuSpec(id="h100-sxm", name="H100 SXM5 80GB", memory_gb=80, hbm_bandwidth_gbps=3350, tflops_bf16=989,
               tflops_fp16=989, tflops_fp8=1979, scale_up_link="nvlink4-nvswitch", host_pcie_gen=5,
               power_w=700, price_per_gpu_hour=3.0)
H200 = GpuSpec(id="h200-sxm", name="H200 SXM 141GB", memory_gb=141, hbm_bandwidth_gbps=4800, tflops_bf16=989,
               tflops_fp16=989, tflops_fp8=1979, scale_up_link="nvlink4-nvswitch", host_pcie_gen=5,
               power_w=700, price_per_gpu_hour=3.8)
L40S = GpuSpec(id="l40s", name="L40S 48GB", memory_gb=48, hbm_bandwidth_gbps=864, tflops_bf16=362,
               tflops_fp16=362, tflops_fp8=733, host_pcie_gen=4, power_w=350, price_per_gpu_hour=1.0)
A100 = GpuSpec(id="a100-sxm-80g", name="A100 SXM 80GB", memory_gb=80, hbm_bandwidth_gbps=2000, tflops_bf16=312,
               tflops_fp16=312, scale_up_link="nvlink3-nvswitch", host_pcie_gen=4, power_w=400,
               price_per_gpu_hour=1.8)

# reference/hardware.md + collectives.md (measured busbw / spec as efficiency)
KINDS = {k.id: k for k in (
    LinkKind(id="nvlink4-nvswitch", name="NVLink 4 via NVSwitch", family=LinkFamily.NVLINK, bandwidth_gbps=450,
             latency_us=1.0, efficiency=0.822),
    LinkKind(id="nvlink3-nvswitch", name="NVLink 3 via NVSwitch", family=LinkFamily.NVLINK, bandwidth_gbps=300,
             latency_us=1.0, efficiency=0.78),
    LinkKind(id="pcie-gen5-switch", name="PCIe Gen5 x16", family=LinkFamily.PCIE, bandwidth_gbps=64,
             latency_us=1.0, efficiency=0.8),
    LinkKind(id="pcie-gen5-hostbridge", name="PCIe Gen5 host bridge", family=LinkFamily.PCIE, bandwidth_gbps=64,
             latency_us=2.0, efficiency=0.55),
    LinkKind(id="pcie-gen5-xsocket", name="Socket link (Gen5 era)", family=LinkFamily.CPU, bandwidth_gbps=64,
             latency_us=3.0, efficiency=0.44),
    LinkKind(id="pcie-gen4-switch", name="PCIe Gen4 x16", family=LinkFamily.PCIE, bandwidth_gbps=32,
             latency_us=1.0, efficiency=0.8),
    LinkKind(id="pcie-gen4-hostbridge", name="PCIe Gen4 host bridge", family=LinkFamily.PCIE, bandwidth_gbps=32,
             latency_us=2.0, efficiency=0.55),
    LinkKind(id="pcie-gen4-xsocket", name="Socket link (Gen4 era)", family=LinkFamily.CPU, bandwidth_gbps=32,
             latency_us=3.0, efficiency=0.44),
    LinkKind(id="ib-ndr", name="InfiniBand NDR 400G", family=LinkFamily.INFINIBAND, bandwidth_gbps=50,
             latency_us=1.0, efficiency=0.94),
)}

DGX_H100 = NodeTemplate(id="dgx-h100", name="DGX H100", gpu_type="h100-sxm", gpus_per_node=8, fabric="nvswitch",
                        scale_up_link="nvlink4-nvswitch", pcie_switch_link="pcie-gen5-switch",
                        host_link="pcie-gen5-hostbridge", socket_link="pcie-gen5-xsocket", nics=8, nic_kind="ib-ndr")
HGX_H200 = DGX_H100.replace(id="hgx-h200", name="HGX H200", gpu_type="h200-sxm")
DGX_A100 = DGX_H100.replace(id="dgx-a100", name="DGX A100", gpu_type="a100-sxm-80g", scale_up_link="nvlink3-nvswitch",
                            pcie_switch_link="pcie-gen4-switch", host_link="pcie-gen4-hostbridge",
                            socket_link="pcie-gen4-xsocket")
L40S_BOX = NodeTemplate(id="l40s-8", name="8x L40S PCIe", gpu_type="l40s", gpus_per_node=8, fabric="pcie",
                        pcie_switch_link="pcie-gen4-switch", host_link="pcie-gen4-hostbridge",
                        socket_link="pcie-gen4-xsocket", nics=2, nic_kind="ib-ndr")
# the same H100 box with the NVSwitch removed: GPUs talk over PCIe only
H100_PCIE_ONLY = DGX_H100.replace(id="h100-pcie-only", name="8x H100 PCIe-only", fabric="pcie", scale_up_link=None)


def cluster(template: NodeTemplate = DGX_H100, nodes: int = 1, spec: GpuSpec = H100) -> Cluster:
    return build_cluster(template, nodes, spec, KINDS)


def llama(hidden: int, layers: int, heads: int, kv: int, inter: int, name: str, ctx: int = 131072) -> LLMArchitecture:
    return LLMArchitecture(id=name, name=name, model_type="llama", hidden_size=hidden, num_layers=layers,
                           num_attention_heads=heads, num_kv_heads=kv, head_dim=hidden // heads,
                           intermediate_size=inter, vocab_size=128256, max_context=ctx)


# reference/models.md (HF config.json values)
LLAMA_8B = llama(4096, 32, 32, 8, 14336, "llama-3.1-8b")
LLAMA_70B = llama(8192, 80, 64, 8, 28672, "llama-3.1-70b")
LLAMA_405B = llama(16384, 126, 128, 8, 53248, "llama-3.1-405b")
LLAMA2_70B = llama(8192, 80, 64, 8, 28672, "llama-2-70b", ctx=4096).replace(vocab_size=32000)
MHA_7B = llama(4096, 32, 32, 32, 11008, "llama-2-7b", ctx=4096).replace(vocab_size=32000)
MIXTRAL = LLMArchitecture(
    id="mixtral-8x7b", name="Mixtral 8x7B", model_type="mixtral", hidden_size=4096, num_layers=32,
    num_attention_heads=32, num_kv_heads=8, head_dim=128, intermediate_size=14336, vocab_size=32000,
    max_context=32768, moe=MoEConfig(num_experts=8, experts_per_token=2, expert_intermediate_size=14336),
)


def project(
    cl: Cluster,
    model: LLMArchitecture,
    layout: Layout | None = None,
    workload: Workload | None = None,
    serving: ServingConfig | None = None,
) -> Project:
    return Project(cluster=cl, model=model, layout=layout or Layout(), workload=workload or Workload(),
                   serving=serving or ServingConfig())


FP8 = ServingConfig(weight_dtype="fp8", kv_dtype="fp8")
BF16 = ModulePrecision.uniform("bf16")
