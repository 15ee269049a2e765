"""A cluster built from flags without --tp/--pp/--dp gets the production rule's layout (TP inside a
node, PP across nodes until the weights fit), not the bundled example's TP8×PP2."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("argv", "layout"),
    [
        (("--gpu", "h100-sxm", "--nodes", "1", "--gpus-per-node", "1", "--model", "llama-3.1-8b"), (1, 1, 1)),
        (("--gpu", "l4", "--nodes", "1", "--model", "mistral-7b"), (4, 1, 1)),
        (("--gpu", "h100-sxm", "--nodes", "2", "--model", "llama-3.1-405b"), (8, 2, 1)),  # 8 GPUs cannot hold it
        (("--gpu", "h100-sxm", "--nodes", "2", "--model", "llama-3.1-70b"), (8, 1, 2)),
    ],
)
def test_flag_built_cluster_gets_a_fitting_production_layout(cli, argv, layout):
    r = cli("plan", *argv, "--json")
    assert r.code == 0, r.err
    data = r.json()
    assert (data["layout"]["tp"], data["layout"]["pp"], data["layout"]["dp"]) == layout
    assert data["fits"] is True


def test_explicit_layout_flags_still_win(cli):
    r = cli("plan", "--gpu", "h100-sxm", "--nodes", "2", "--model", "llama-3.1-70b", "--tp", "4", "--json")
    assert r.code == 0, r.err
    assert (r.json()["layout"]["tp"], r.json()["layout"]["dp"]) == (4, 4)


def test_a_project_file_keeps_its_layout(cli, tmp_path):
    r = cli("plan", "presets/examples/h100-pcie-bridge-llama-70b.json", "--json")
    assert r.code == 0, r.err
    assert (r.json()["layout"]["tp"], r.json()["layout"]["pp"]) == (2, 4)
