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


def test_the_summarisation_workload_is_listed_and_selectable_in_every_command(cli):
    r = cli("presets", "workloads")
    assert r.code == 0 and "arxiv-summarization-4k" in r.out and "Long-document summarisation" in r.out
    base = ("--gpu", "h100-sxm", "--gpus-per-node", "1", "--model", "llama-3.1-8b", "--lengths", "arxiv-summarization-4k")
    r = cli("plan", *base, "--tp", "1", "--json")
    assert r.code == 0, r.err
    assert r.json()["over_lengths"]["requests"] > 0
    r = cli("simulate", *base, "--tp", "1", "--rate", "1", "--num-requests", "100", "--json")
    assert r.code == 0, r.err
    assert r.json()["isl"].endswith("mean 2,588")
    r = cli("sweep", *base)
    assert r.code == 0, r.err
    assert "ISL 2588, OSL 292" in r.out
    r = cli("export", *base, "--tp", "1", "--engine", "vllm")
    assert r.code == 0, r.err
    assert "--max-model-len" in r.out
