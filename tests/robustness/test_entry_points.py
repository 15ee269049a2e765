"""The remaining entry points against special files (issue 16): the load flags
(``--isl-histogram`` / ``--osl-histogram``), ``export --check``, ``calibrate serving``, ``simulate``
and ``sweep`` on a FIFO or a link to ``/dev/zero``, and every single-file output (``sweep --csv``,
``calibrate nccl|serving -o``, ``import-topo -o``) onto a FIFO, a device link, a folder or into a
missing folder. Each exits 2 with one line, reads nothing without limit, never blocks, and leaves
the target as it was; each case runs under the hang guard of :mod:`tests.robustness.hostile`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from studio.cli import main
from tests.robustness.hostile import bounded, guarded

DATA = Path(__file__).resolve().parents[1] / "data"
SERVING = DATA / "serving" / "trtllm-v0.17-h200-fp8-llama-3.1-8b.jsonl"
NCCL = DATA / "nccl" / "a100-8gpu-nvswitch-allreduce.txt"
TOPO = DATA / "topo" / "h100-8gpu-nvswitch-8nic.txt"

INPUTS = {
    "plan --isl-histogram": ["plan", "--isl-histogram", "{p}"],
    "simulate --osl-histogram": ["simulate", "--osl-histogram", "{p}", "--num-requests", "20"],
    "simulate PROJECT": ["simulate", "{p}"],
    "sweep PROJECT": ["sweep", "{p}"],
    "export --check": ["export", "--engine", "vllm", "--check", "{p}"],
    "calibrate serving": [
        "calibrate",
        "serving",
        "{p}",
        "--gpu",
        "h200-sxm",
        "--model",
        "llama-3.1-8b",
    ],
    "calibrate serving --project": ["calibrate", "serving", str(SERVING), "--project", "{p}"],
}

OUTPUTS = {
    "sweep --csv": ["sweep", "--top", "1", "--csv", "{p}"],
    "calibrate nccl -o": [
        "calibrate",
        "nccl",
        str(NCCL),
        "--link-kind",
        "nvlink3-nvswitch",
        "-o",
        "{p}",
    ],
    "calibrate serving -o": [
        "calibrate",
        "serving",
        str(SERVING),
        "--gpu",
        "h200-sxm",
        "--model",
        "llama-3.1-8b",
        "-o",
        "{p}",
    ],
    "import-topo -o": ["import-topo", str(TOPO), "--gpu", "h100-sxm", "-o", "{p}"],
}


def _special(kind: str, tmp_path: Path, name: str) -> Path:
    p = tmp_path / name
    if kind == "fifo":
        os.mkfifo(p)  # no writer: a blocking open would wait forever
    elif kind == "zero":
        p.symlink_to("/dev/zero")
    elif kind == "folder":
        p.mkdir()
    elif kind == "missing":
        p = tmp_path / "no-such-folder" / name
    return p


def _run(argv: list[str], path: Path, capsys, measure: bool = True) -> tuple[str, int]:
    """The one error line of ``argv`` on ``path`` and the peak bytes it allocated (0 unless
    ``measure``: :mod:`tracemalloc` slows the run several times, so only cases that check it pay)."""
    args = [a.format(p=path) for a in argv]
    if measure:
        code, err, peak = bounded(lambda: main(args))
    else:
        (code, err), peak = guarded(lambda: main(args)), 0
    assert err is None and code == 2, (code, err)
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0], peak


@pytest.mark.parametrize("kind", ["fifo", "zero"])
@pytest.mark.parametrize("entry", sorted(INPUTS))
def test_inputs_refuse_special_files_without_reading(entry, kind, tmp_path, capsys):
    path = _special(kind, tmp_path, "input.json")
    line, peak = _run(INPUTS[entry], path, capsys)
    assert "not a regular file" in line and str(path) in line
    assert peak < 64 * 2**20  # nothing was read from /dev/zero


@pytest.mark.parametrize("kind", ["fifo", "zero", "folder", "missing"])
@pytest.mark.parametrize("entry", sorted(OUTPUTS))
def test_outputs_refuse_non_files_and_leave_them_alone(entry, kind, tmp_path, capsys):
    path = _special(kind, tmp_path, "out.json")
    before = os.lstat(path).st_mode if os.path.lexists(path) else None
    line, _ = _run(OUTPUTS[entry], path, capsys, measure=False)  # writes: the time guard alone
    expect = {
        "fifo": "not a regular file",
        "zero": "not a regular file",
        "folder": "folder",
        "missing": "does not exist",
    }[kind]
    assert expect in line, line
    assert (os.lstat(path).st_mode if os.path.lexists(path) else None) == before
    assert not (tmp_path / "no-such-folder").exists()
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []
