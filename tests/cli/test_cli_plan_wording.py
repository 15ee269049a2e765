"""Wording of the ``plan`` table that users tripped over: plural of one node, ``$inf`` as a price,
a micro-batch count the plan did not use, all-reduce times without their message size."""

from __future__ import annotations


def test_one_node_is_singular(cli):
    r = cli("plan", "--gpu", "h100-sxm", "--model", "llama-3.1-70b", "--tp", "8", "--pp", "1")
    assert r.code == 0, r.err
    assert "in 1 node\n" in r.out and "1 nodes" not in r.out


def test_layout_that_does_not_fit_has_no_price_per_token(cli):
    r = cli("plan", "--gpu", "l4", "--model", "llama-3.1-405b", "--tp", "4", "--pp", "1")
    assert r.code == 0, r.err
    line = next(ln for ln in r.out.splitlines() if "per million output tokens" in ln)
    assert "inf" not in line and "does not fit" in line


def test_micro_batches_capped_by_the_batch_are_shown_as_used(cli):
    r = cli("plan", "--micro-batches", "1000", "--batch", "16")
    assert r.code == 0, r.err
    layout = next(ln for ln in r.out.splitlines() if ln.strip().startswith("layout"))
    assert "micro-batches 1000 (the batch allows 16)" in layout
    assert "M=16)" in r.out  # the bubble line uses the count actually run


def test_allreduce_line_names_the_message_it_costs(cli):
    r = cli("plan", "--batch", "8", "--micro-batches", "2", "--isl", "1024")
    assert r.code == 0, r.err
    assert "prefill 4 prompts × 1,024 tokens, decode 4 tokens" in r.out


def test_out_of_range_values_name_the_flag(cli):
    r = cli("plan", "--isl", "1000000000")
    assert r.code == 2 and r.out == ""
    assert "error: --isl: " in r.err and "10000000" in r.err and "1000000000" in r.err
    r = cli("plan", "--gpus-per-node", "100000")
    assert r.code == 2 and "error: --gpus-per-node: " in r.err and "field" not in r.err
