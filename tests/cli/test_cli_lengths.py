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


def test_plan_gives_its_figures_over_the_distribution_not_only_at_the_means(cli):
    args = ("plan", "--gpu", "h100-sxm", "--gpus-per-node", "1", "--model", "llama-3.1-8b", "--tp", "1",
            "--lengths", "azure-conv-2023", "--json")
    r = cli(*args)
    assert r.code == 0, r.err
    data = r.json()
    over = data["over_lengths"]
    assert over["requests"] > 0 and 0.0 <= over["not_admitted_share"] <= 1.0
    assert over["longest_tokens"] > 4_000  # the trace's tail, not the 1,366-token mean
    # long prompts wait longer for their first token than the mean prompt does
    assert over["ttft_ms"]["p99"] > 2 * data["latency_ms"]["ttft"]
    fixed = cli(*args[:-3], "--json")  # without --lengths the lengths are fixed: no such figures
    assert "over_lengths" not in fixed.json()
