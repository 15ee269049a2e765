"""User strings (model path, node and host names, project name) cannot make a generated script
run anything else: the scripts are run with stand-in engine programs that record their argv.
Host names must be host names (checked in ``test_runtime_rules``); node and project names only
reach comments; the model path is one quoted word."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from studio.core.layout import Layout
from studio.io.export import export_plan

from .conftest import LLAMA_70B, MIXTRAL, plan, project

EVIL = [
    "a b $(touch PWNED1)",
    "x`touch PWNED2`",
    "n'; touch PWNED3; echo '",
    'q"$(touch PWNED4)"',
    "line\ntouch PWNED5",
    "cr\rtouch PWNED6\u2028touch PWNED7",
]
MODEL = "/models/my model $(touch PWNED8) `touch PWNED9` 'q\"$HOME"
HOSTS = ["gpu-a.example.com", "10.0.0.2"]
RECORDER = """#!/usr/bin/env python3
import json, os, sys
with open(os.environ["ARGV_LOG"], "a") as f:
    f.write(json.dumps([os.path.basename(sys.argv[0])] + sys.argv[1:]) + "\\n")
"""


@pytest.fixture
def fake_bin(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for prog in ("vllm", "ray", "python", "trtllm-serve", "mpirun", "srun"):
        exe = bin_dir / prog
        exe.write_text(RECORDER.replace("python3", os.path.realpath(os.sys.executable), 1))
        exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return bin_dir


def _run(script: str, tmp_path: Path, fake_bin: Path, args: list[str], env: dict | None = None,
         rc: int = 0):
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    path = work / "run.sh"
    path.write_text(script)
    log = tmp_path / "argv.jsonl"
    e = {"PATH": f"{fake_bin}:/usr/bin:/bin", "ARGV_LOG": str(log), **(env or {})}
    r = subprocess.run(["bash", str(path), *args], cwd=work, env=e, capture_output=True, text=True)
    assert r.returncode == rc, r.stderr
    assert not list(work.glob("PWNED*")), "a user string ran as a command"
    return [json.loads(ln) for ln in log.read_text().splitlines()] if log.exists() else []


@pytest.mark.parametrize("engine", ["vllm", "trtllm", "sglang"])
def test_hostile_names_stay_literal(engine, tmp_path, fake_bin):
    proj = project(LLAMA_70B, 2, Layout(tp=8, pp=2), names=EVIL[:2], name=EVIL[4])
    p = plan(proj)
    for fmt in ("command", "script"):
        bundle = export_plan(proj, p, engine=engine, fmt=fmt, model_path=MODEL, hosts=HOSTS)
        (name, text), = [(n, t) for n, t in bundle.files.items() if n.endswith(".sh")]
        if fmt == "script":
            calls = _run(text, tmp_path, fake_bin, ["0" if engine == "trtllm" else "1"])
        else:
            calls = _run(text, tmp_path, fake_bin, [])
        assert calls
        servers = [c for c in calls if c[0] in ("vllm", "python", "trtllm-serve", "mpirun", "srun")]
        assert servers and all(MODEL in c for c in servers), servers
        for c in calls:
            joined = " ".join(c)
            assert ("node-rank" not in joined) or HOSTS[0] in joined
            assert not any(e in joined for e in EVIL), "a node name became an argument"
        (tmp_path / "argv.jsonl").unlink()


@pytest.mark.parametrize("engine", ["vllm", "trtllm", "sglang"])
def test_script_without_hosts_refuses_to_start_until_they_are_set(engine, tmp_path, fake_bin):
    proj = project(LLAMA_70B, 2, Layout(tp=8, pp=2), names=EVIL[:2])
    text = next(iter(export_plan(proj, plan(proj), engine=engine, fmt="script").files.values()))
    assert _run(text, tmp_path, fake_bin, ["0"], rc=2) == []  # nothing started
    bad = {"HOST_0": "-oProxyCommand=x", "HOST_1": "b"}
    assert _run(text, tmp_path, fake_bin, ["0"], env=bad, rc=2) == []
    calls = _run(text, tmp_path, fake_bin, ["0"], env={"HOST_0": "10.1.0.1", "HOST_1": "10.1.0.2"})
    assert calls and any("10.1.0.1" in " ".join(c) for c in calls)


def test_hostile_names_in_comments_do_not_end_the_comment():
    proj = project(MIXTRAL, 2, Layout(tp=8, dp=2, ep=16), names=EVIL[4:6], name=EVIL[5])
    bundle = export_plan(proj, plan(proj), engine="vllm", fmt="yaml", model_path=MODEL)
    for text in bundle.files.values():
        for line in text.splitlines():
            assert "touch PWNED" not in line or line.startswith("#") or "'" in line or '"' in line


def test_k8s_command_is_one_literal_model_argument(tmp_path, fake_bin):
    proj = project(LLAMA_70B, 2, Layout(tp=8, pp=2))
    bundle = export_plan(proj, plan(proj), engine="sglang", fmt="k8s", model_path=MODEL)
    import yaml

    lws = next(yaml.safe_load_all(bundle.files["sglang-lws.yaml"]))
    script = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["command"][2]
    env = {"LWS_LEADER_ADDRESS": "lead.svc", "LWS_GROUP_SIZE": "2", "LWS_WORKER_INDEX": "1"}
    (call,) = _run(script + "\n", tmp_path, fake_bin, [], env)
    assert call[call.index("--model-path") + 1] == MODEL
    assert call[call.index("--dist-init-addr") + 1] == "lead.svc:20000"
    assert call[call.index("--node-rank") + 1] == "1"
