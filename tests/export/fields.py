"""Parse the engines' accepted argument names from the field lists in ``tests/data/engines``
(copies of ``shared/reference/engines``: vLLM 0.33.0, TensorRT-LLM 1.4.0rc0, SGLang 0.5.23)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data" / "engines"


@dataclass(frozen=True)
class Accepted:
    flags: frozenset[str]  # every accepted command-line option string
    yaml_keys: frozenset[str]  # top-level config keys
    nested: dict[str, frozenset[str]]  # sub-config keys (TensorRT-LLM)
    bool_fields: frozenset[str]  # flags (dashed, no --) whose field is a bool


def _sections(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    cur = ""
    for line in text.splitlines():
        if line.startswith("## "):
            if cur and not out[cur]:  # a title continued on the next "## " line
                out[cur + " " + line[3:]] = out.pop(cur)
                cur = cur + " " + line[3:]
                continue
            cur = line[3:]
            out[cur] = []
        elif cur:
            out[cur].append(line)
    return out


@lru_cache(maxsize=1)
def vllm() -> Accepted:
    sec = _sections((DATA / "vllm-engineargs-fields.txt").read_text())
    flags: set[str] = set()
    bools: set[str] = set()
    for title, lines in sec.items():
        if title.startswith("EngineArgs fields (") or title.startswith("vllm serve frontend fields") \
                or title.startswith("AsyncEngineArgs"):
            for ln in lines:
                m = re.match(r"^([a-z_0-9]+): (.+?) = ", ln)
                if m:
                    if re.match(r"^bool( \| None)?$", m.group(2)):
                        bools.add(m.group(1).replace("_", "-"))
        if title.startswith("Every EngineArgs CLI option string"):
            for ln in lines:
                flags.update(t for t in ln.split() if t.startswith("-"))
    front = next(v for k, v in sec.items() if k.startswith("vllm serve frontend fields"))
    for ln in front:
        m = re.match(r"^([a-z_0-9]+): ", ln)
        if m:
            flags.add("--" + m.group(1).replace("_", "-"))
    serve = next(v for k, v in sec.items() if k.startswith("vllm serve-level flags"))
    flags.update(re.findall(r"--[a-z-]+", " ".join(serve)))
    flags.update(f"--no-{b}" for b in bools if f"--{b}" in flags)
    keys = {f[2:] for f in flags if f.startswith("--")}
    return Accepted(frozenset(flags), frozenset(keys), {}, frozenset(bools))


@lru_cache(maxsize=1)
def trtllm() -> Accepted:
    sec = _sections((DATA / "trtllm-llmargs-fields.txt").read_text())

    def names(title: str) -> frozenset[str]:
        lines = next(v for k, v in sec.items() if k.startswith(title))
        return frozenset(m.group(1) for ln in lines if (m := re.match(r"^([a-z_0-9]+):", ln)))

    cli = next(v for k, v in sec.items() if k.startswith("trtllm-serve CLI"))
    flags = frozenset(re.findall(r"--[a-z_]+", " ".join(cli)))
    return Accepted(
        flags, names("Top-level fields"),
        {"kv_cache_config": names("kv_cache_config"), "moe_config": names("moe_config"),
         "cuda_graph_config": names("cuda_graph_config")}, frozenset(),
    )


@lru_cache(maxsize=1)
def sglang() -> Accepted:
    text = (DATA / "sglang-serverargs-fields.txt").read_text()
    flags: set[str] = set()
    bools: set[str] = set()
    for ln in text.splitlines():
        m = re.match(r"^([a-z_0-9]+): (.+?) = .*# cli: (.*)$", ln)
        if m:
            opts = [o.strip() for o in m.group(3).split(";")[0].split(",")]
            flags.update(o for o in opts if o.startswith("--"))
            if m.group(2) == "bool":
                bools.update(o[2:] for o in opts)
    flags.add("--config")
    return Accepted(frozenset(flags), frozenset(f[2:] for f in flags), {}, frozenset(bools))
