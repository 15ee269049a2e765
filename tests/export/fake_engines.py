"""Stand-in engine packages written to a temporary folder for ``export --check``'s engine step.

The real engines cannot be installed in CI (vLLM pulls torch and CUDA libraries). These packages
expose the entry points the check uses — vLLM's ``vllm.engine.arg_utils.EngineArgs`` with
``add_cli_args``/``from_cli_args``, ``vllm.platforms`` and a ``vllm.config.ParallelConfig`` that
checks the world size like vLLM's; SGLang's ``ServerArgs``; TensorRT-LLM's ``TorchLlmArgs`` (alone, or with trtllm-serve's config merge and
the ``Mapping`` it builds at start) — and
refuse values with known messages, so the tests see what the check reports of a refusal. The
check runs them in a separate Python process found through ``PYTHONPATH``.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

VLLM = {
    "vllm/__init__.py": "",
    "vllm/platforms/interface.py": """
        class PlatformEnum:
            CUDA = "cuda"
            UNSPECIFIED = "unspecified"


        class Platform:
            _enum = PlatformEnum.UNSPECIFIED
            device_type = ""

            @classmethod
            def device_count(cls):
                return 0
        """,
    "vllm/platforms/__init__.py": """
        from vllm.platforms import interface
        from vllm.platforms.interface import Platform

        _current_platform = None
        current_platform = Platform()  # as on a machine without a GPU: no device type
        """,
    "vllm/config/__init__.py": """
        import dataclasses

        import vllm.platforms as platforms


        @dataclasses.dataclass
        class ParallelConfig:
            tensor_parallel_size: int = 1
            pipeline_parallel_size: int = 1
            nnodes: int = 1

            def __post_init__(self):
                gpus = platforms._current_platform.device_count()
                world = self.tensor_parallel_size * self.pipeline_parallel_size
                if world > gpus * self.nnodes:
                    raise ValueError(f"World size ({world}) is larger than the number of available GPUs "
                                     f"({gpus}) in this node.")
        """,
    "vllm/engine/__init__.py": "",
    "vllm/engine/arg_utils.py": """
        import argparse
        import json
        import os
        import sys

        import vllm.platforms as platforms


        class EngineArgs:
            def __init__(self, ns):
                self.__dict__.update(vars(ns))

            @staticmethod
            def add_cli_args(parser):
                current = platforms._current_platform or platforms.current_platform
                if not current.device_type:
                    raise RuntimeError("Failed to infer device type, please set the environment variable "
                                       "`VLLM_LOGGING_LEVEL=DEBUG` to turn on verbose logging")
                parser.add_argument("--model")
                for flag in ("--tensor-parallel-size", "--pipeline-parallel-size", "--data-parallel-size",
                             "--max-model-len", "--max-num-seqs", "--max-num-batched-tokens",
                             "--max-cudagraph-capture-size"):
                    parser.add_argument(flag, type=int)
                parser.add_argument("--gpu-memory-utilization", type=float)
                parser.add_argument("--kv-cache-dtype", choices=["auto", "fp8", "bfloat16", "float16"])
                parser.add_argument("--enable-expert-parallel", action=argparse.BooleanOptionalAction)
                return parser

            @classmethod
            def from_cli_args(cls, ns):
                print("INFO engine log line that must not reach the user", file=sys.stderr)
                if os.environ.get("FAKE_ENGINE_ECHO"):  # the test reads what the parser made of the recipe
                    raise ValueError("parsed " + json.dumps(vars(ns), sort_keys=True))
                if ns.gpu_memory_utilization > 0.95:
                    raise ValueError("gpu_memory_utilization must be at most 0.95 here")
                return cls(ns)
        """,
    "vllm-0.33.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: vllm\nVersion: 0.33.0\n",
}

SGLANG = {
    "sglang/__init__.py": "",
    "sglang/srt/__init__.py": "",
    "sglang/srt/server_args.py": """
        class ServerArgs:
            @staticmethod
            def add_cli_args(parser):
                parser.add_argument("--model-path")
                parser.add_argument("--host")
                for flag in ("--tp-size", "--pp-size", "--dp-size", "--ep-size", "--attn-dp-size",
                             "--max-running-requests", "--chunked-prefill-size", "--context-length",
                             "--cuda-graph-max-bs-decode"):
                    parser.add_argument(flag, type=int)
                parser.add_argument("--mem-fraction-static", type=float)
                parser.add_argument("--kv-cache-dtype")

            @classmethod
            def from_cli_args(cls, ns):
                if ns.tp_size and ns.tp_size > 4:
                    raise ValueError("tp_size > 4 is not supported by this stand-in")
                return cls()
        """,
}

TRTLLM = {
    "tensorrt_llm/__init__.py": "",
    "tensorrt_llm/llmapi/__init__.py": "",
    "tensorrt_llm/llmapi/llm_args.py": """
        class TorchLlmArgs:
            def __init__(self, **kw):
                if kw.get("tensor_parallel_size", 1) > 4:
                    raise ValueError("1 validation error for TorchLlmArgs\\ntensor_parallel_size\\n  too large")
        """,
}

#: TensorRT-LLM with trtllm-serve's config merge (``update_llm_args_with_extra_dict``) and the
#: ``Mapping`` the LLM builds from ``parallel_config`` at start; the Mapping refuses an MoE split that
#: does not multiply to TP, as TensorRT-LLM's ``MappingBase`` does, and the MoE load balancer refuses
#: slots that do not divide among the EP ranks (``MoeLoadBalancerConfig.setup``); its ``disagg_utils``
#: refuses a router file whose urls do not match num_instances. With FAKE_ENGINE_ECHO set the
#: arguments class reports what it was given.
TRTLLM_SERVE = {
    "tensorrt_llm/__init__.py": "__version__ = 'source @test'\n",
    "tensorrt_llm/llmapi/__init__.py": "",
    "tensorrt_llm/llmapi/llm_args.py": """
        import json
        import os

        merged = []


        def update_llm_args_with_extra_dict(llm_args, llm_args_dict, extra_llm_api_options=None):
            merged.append(extra_llm_api_options)
            return llm_args | llm_args_dict


        class _Parallel:
            def __init__(self, tp, ep):
                self.tp, self.ep = tp, ep

            def to_mapping(self):
                if self.ep > 0 and self.tp % self.ep:
                    raise ValueError("moe_tp_size * moe_ep_size * moe_cluster_size must equal to moe_world_size, "
                                     f"but got {self.ep * (self.tp // self.ep)} != {self.tp}")
                self.moe_ep_size = max(self.ep, 1)
                return self


        class _Balancer:
            def __init__(self, num_slots):
                self.num_slots = num_slots

            def setup(self, ep_rank, ep_size):
                if self.num_slots % ep_size != 0:
                    raise ValueError(f"`num_slots` ({self.num_slots}) must be divisible by `ep_size` ({ep_size}).")


        class _Moe:
            def __init__(self, load_balancer=None):
                self.load_balancer = None if load_balancer is None else _Balancer(**load_balancer)


        class TorchLlmArgs:
            def __init__(self, **kw):
                if os.environ.get("FAKE_ENGINE_ECHO"):
                    raise ValueError("built " + json.dumps(kw, sort_keys=True, default=str) + " via " + str(merged))
                if kw.get("backend") != "pytorch" or not kw.get("gpus_per_node"):
                    raise ValueError("No GPU devices found on the node")
                self.parallel_config = _Parallel(kw.get("tensor_parallel_size", 1),
                                                 kw.get("moe_expert_parallel_size", -1))
                self.moe_config = _Moe(**kw.get("moe_config", {}))
        """,
    "tensorrt_llm/llmapi/disagg_utils.py": """
        import json


        class _Server:
            def __init__(self, url):
                self.url = url


        class _Parsed:
            def __init__(self, servers):
                self.server_configs = servers


        def parse_disagg_config_file(path):
            with open(path) as f:
                config = json.load(f)
            servers = []
            for section in ("context_servers", "generation_servers"):
                part = config.get(section, {})
                urls = part.get("urls") or []
                if urls and len(urls) != part.get("num_instances", 1):
                    raise ValueError(f"Number of hostnames ({len(urls)}) should be equal to the number of "
                                     f"instances ({part.get('num_instances', 1)})")
                servers += [_Server(u) for u in urls]
            return _Parsed(servers)


        def get_ctx_gen_server_urls(server_configs):
            return [s.url for s in server_configs], []
        """,
}

SLOW_SGLANG = {
    "sglang/__init__.py": "import time\ntime.sleep(60)\n",
}

BROKEN_VLLM = {
    "vllm/__init__.py": "raise RuntimeError('libcuda.so.1: cannot open shared object file')\n",
}


def write_package(root: Path, files: dict[str, str]) -> Path:
    """Write ``files`` (path → source) under ``root``; returns ``root`` (a ``PYTHONPATH`` entry)."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


#: vLLM whose EngineArgs also has ``create_engine_config``: it reads the model's config.json from the
#: folder the check passes as ``--model`` and refuses decode CP on a GQA model as vLLM's ModelConfig
#: does; with FAKE_KERNELS_MISSING set it stops at a kernel import, as vLLM does without a driver.
VLLM_FULL = dict(VLLM)
VLLM_FULL["vllm/engine/arg_utils.py"] = textwrap.dedent(VLLM["vllm/engine/arg_utils.py"]) + textwrap.dedent("""

    _add = EngineArgs.add_cli_args


    def _add_with_dcp(parser):
        _add(parser)
        parser.add_argument("--decode-context-parallel-size", type=int, default=1)
        return parser


    def _create_engine_config(self):
        import pathlib

        if os.environ.get("FAKE_KERNELS_MISSING"):
            raise ImportError("vllm.vllm_flash_attn requires the CUDA flash attention extensions")
        cfg = json.loads((pathlib.Path(self.model) / "config.json").read_text())
        kv = cfg["num_key_value_heads"]
        if self.decode_context_parallel_size > 1 and self.tensor_parallel_size <= kv:
            raise ValueError(f"Decode context parallelism for GQA/MQA requires `--tensor-parallel-size` "
                             f"({self.tensor_parallel_size}) to be greater than the model's total number of "
                             f"KV heads ({kv}).")
        return cfg


    EngineArgs.add_cli_args = staticmethod(_add_with_dcp)
    EngineArgs.create_engine_config = _create_engine_config
    """)
