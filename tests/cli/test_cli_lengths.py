"""``--lengths ID``: request lengths from a bundled workload on the command line."""

from __future__ import annotations


def test_lengths_on_the_command_line(cli):
    r = cli("simulate", "--gpu", "h100-sxm", "--gpus-per-node", "1", "--model", "llama-3.1-8b", "--tp", "1",
            "--lengths", "azure-code-2023", "--rate", "2", "--num-requests", "200", "--json")
    assert r.code == 0, r.err
    assert r.json()["isl"] == "histogram of 21 lengths, mean 2,048"
    r = cli("plan", "--lengths", "azure-conv-2023", "--isl", "100")
    assert r.code == 2 and "--lengths sets the input and output lengths; leave out --isl" in r.err
    r = cli("sweep", "--lengths", "sharegpt")
    assert r.code == 2 and "--lengths: lengths 'sharegpt' is not a bundled workload" in r.err
