"""The report's "Prompt reuse and KV tiers" section: there when the plan caches prefixes, with the
hit rate per tier, the tiers' capacities and what reuse changes; absent with reuse off."""

from __future__ import annotations

import dataclasses

import pytest

from studio.cli import build_parser
from studio.commands.options.project_args import project_from_args
from studio.gui.report.document import Images, build_html

FAKE = Images(src=lambda name: f"data:image/png;base64,{name}", width=600)
CHAT = ("--node-template", "dgx-h100", "--model", "llama-3.1-70b", "--tp", "4", "--isl", "8000", "--osl", "300",
        "--system-prompt-tokens", "2000", "--turns", "8", "--history-tokens", "1000", "--think-time-s", "20",
        "--kv-host-gib", "512")


@pytest.fixture(scope="module")
def chat_data():
    from studio.gui.report import gather

    ns = build_parser(["studio.commands.report"]).parse_args(["report", *CHAT, "-o", "r.html"])
    return gather(project_from_args(ns))


def test_reuse_section_only_when_the_plan_caches_prefixes(data, chat_data):
    assert "Prompt reuse and KV tiers" not in build_html(data, FAKE)
    html = build_html(chat_data, FAKE)
    section = html[html.index("<h2>Prompt reuse and KV tiers</h2>"):html.index("<h2>Chosen layout")]
    pc = chat_data.chosen.plan.prefix_cache
    off = chat_data.without_reuse
    assert off is not None and off.prefix_cache is None
    assert f"{pc['hit_rate']:.1%} of prompt tokens served" in section
    assert f"host DRAM {pc['hit_rate_host']:.1%}" in section and pc["hit_rate_host"] > 0
    assert "system prompt 2,000 tokens shared by every request" in section
    assert "<td>host DRAM</td><td class=\"num\">256</td><td class=\"num\">1,907</td>" in section
    assert f"batch {chat_data.chosen.plan.batch:,} instead of {off.batch:,}" in section
    sim = chat_data.simulation
    assert sim is not None and sim.prefix is not None
    assert f"in host DRAM by {sim.prefix.requests[1]:,}" in section
    no_sim = build_html(dataclasses.replace(chat_data, simulation=None), FAKE)
    assert "Simulated requests" not in no_sim and "Prompt reuse and KV tiers" in no_sim
