"""Parsing ``nvidia-smi topo -m`` text: real samples, variants, and clear errors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from studio.core.errors import StudioError
from studio.io.importers.topo import parse_topo

from .conftest import data_text

H100 = "topo/h100-8gpu-nvswitch-8nic.txt"
L40S = "topo/l40s-4gpu-2nic-spaces.txt"
RTX = "topo/rtx4090-8gpu-2nic-tabs.txt"


def test_h100_sample_space_aligned_with_legends():
    m = parse_topo(data_text(H100), "h100.txt")
    assert m.gpus == tuple(f"GPU{i}" for i in range(8))
    assert m.nics == tuple(f"NIC{i}" for i in range(8))
    assert all(m.code(a, b) == "NV18" for a in m.gpus for b in m.gpus if a != b)
    assert m.nvlinks("GPU0", "GPU7") == 18
    assert m.code("GPU0", "NIC0") == "PIX" and m.code("GPU0", "NIC1") == "NODE"
    assert m.code("GPU0", "NIC4") == "SYS" and m.code("NIC5", "GPU5") == "PIX"
    assert m.nic_devices["NIC7"] == "mlx5_7"
    assert m.cpu_affinity["GPU4"] == "48-95,144-191"
    assert [m.numa_affinity[g] for g in m.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]


def test_rtx4090_sample_with_real_tabs_and_no_legend():
    text = data_text(RTX)
    assert "\t" in text
    m = parse_topo(text)
    assert len(m.gpus) == 8 and m.nics == ("NIC0", "NIC1")
    assert m.code("GPU6", "NIC0") == "PHB" and m.code("NIC0", "NIC1") == "PIX"
    assert m.code("GPU0", "GPU1") == "SYS"
    assert m.nic_devices == {}
    assert m.numa_affinity["GPU7"] == 1


def test_l40s_sample():
    m = parse_topo(data_text(L40S))
    assert m.code("GPU0", "GPU1") == "NODE" and m.code("GPU1", "GPU2") == "SYS"
    assert m.code("GPU2", "NIC1") == "NODE"


def _drop_nic_columns(text: str, n_gpus: int) -> str:
    """The same matrix as an older driver without NIC columns, legend or NIC legend."""
    out = []
    for line in text.split("\n"):
        if line.startswith("Legend"):
            break
        if line.startswith("NIC"):
            continue
        cells = line.split("\t")
        out.append("\t".join(cells[: 1 + n_gpus] + cells[-3:]) if cells[0] else "\t".join(cells[: 1 + n_gpus]))
    return "\n".join(out)


def test_matrix_without_nic_columns():
    text = _drop_nic_columns(data_text(RTX), 8)
    m = parse_topo(text)
    assert m.nics == () and len(m.gpus) == 8
    assert m.code("GPU3", "GPU4") == "SYS"


def test_old_driver_names_nic_columns_after_devices_and_says_soc():
    text = (
        "\x1b[4m\tGPU0\tGPU1\tmlx5_0\tCPU Affinity\x1b[0m\n"
        "GPU0\t X \tNV12\tPHB\t0-23\n"
        "GPU1\tNV12\t X \tSOC\t24-47\n"
        "mlx5_0\tPHB\tSOC\t X \t\n"
    )
    m = parse_topo(text)
    assert m.nics == ("mlx5_0",)
    assert m.code("GPU1", "mlx5_0") == "SYS"  # SOC is the old name of SYS
    assert m.nvlinks("GPU0", "GPU1") == 12
    assert m.numa_affinity == {}


def test_nvidia_smi_list_lines_name_the_gpus():
    text = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\nGPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-2)\n"
    text += "\tGPU0\tGPU1\nGPU0\t X \tNV18\nGPU1\tNV18\t X \n"
    m = parse_topo(text)
    assert m.gpu_names == {"GPU0": "NVIDIA H100 80GB HBM3", "GPU1": "NVIDIA H100 80GB HBM3"}


def test_unreadable_cell_names_line_and_column():
    text = data_text(L40S).replace("GPU2    SYS     SYS      X      NODE", "GPU2    SYS     QPI      X      NODE")
    with pytest.raises(StudioError) as err:
        parse_topo(text, "box.txt")
    msg = str(err.value)
    assert msg.startswith("box.txt: line 4, column 17") and "'QPI'" in msg and "PIX" in msg


def test_short_row_and_misplaced_self_are_errors():
    with pytest.raises(StudioError, match=r"line 3, .*row 'GPU1' has 1 cells"):
        parse_topo("\tGPU0\tGPU1\nGPU0\t X \tSYS\nGPU1\tSYS\n")
    with pytest.raises(StudioError, match=r"line 2, column 6: cell GPU0/GPU0 is 'SYS'"):
        parse_topo("\tGPU0\tGPU1\nGPU0\tSYS\tSYS\nGPU1\tSYS\t X \n")


def test_asymmetric_matrix_is_an_error():
    with pytest.raises(StudioError, match="must be symmetric"):
        parse_topo("\tGPU0\tGPU1\nGPU0\t X \tPIX\nGPU1\tSYS\t X \n")


def test_text_without_header():
    with pytest.raises(StudioError, match="no header row found"):
        parse_topo("Legend:\n  X    = Self\n")


def test_oversized_input_is_refused():
    with pytest.raises(StudioError, match="larger than"):
        parse_topo("x" * (3 * 1024 * 1024))


_ALPHABET = st.sampled_from(
    ["\t", " ", "\n", "GPU0", "GPU1", "NIC0", " X ", "NV18", "PIX", "SYS", "NODE", "0-47", "N/A", "Legend:", "é", "\x1b[4m"]
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_ALPHABET, max_size=80).map("".join))
def test_arbitrary_tokens_never_crash(text):
    try:
        m = parse_topo(text)
    except StudioError:
        return
    assert m.gpus


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=400))
def test_arbitrary_text_never_crashes(text):
    try:
        parse_topo(text)
    except StudioError:
        pass
