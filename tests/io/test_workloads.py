"""Bundled length distributions (presets/workloads) and ``--lengths``: what they hold, bad files and
ids, and a plan / simulation that uses the distribution rather than its mean."""

from __future__ import annotations

import re

import pytest

from studio.core.errors import StudioError
from studio.io.workloads import lengths_for, preset_from_dict, workload_presets


def test_the_trace_derived_presets_keep_the_traces_means_and_tails():
    p = workload_presets()
    conv, code = p["azure-conv-2023"], p["azure-code-2023"]
    # Azure/AzurePublicDataset @ b469a113ce: conversation input mean 1,154.7, output 211.1; code 2,047.8 / 27.9
    assert (conv.isl_mean, conv.osl_mean, code.isl_mean, code.osl_mean) == (1155, 211, 2048, 28)
    assert max(n for n, _ in code.isl.histogram) >= 7000  # the longest prompts survive the binning
    assert "AzurePublicDataset" in conv.source and conv.derived


def test_vllm_random_is_uniform_over_its_range_ratio():
    isl_d, osl_d, isl, osl, label = lengths_for("random:1024:128:0.5")
    assert (isl, osl) == (1024, 128) and isl_d.kind == osl_d.kind == "uniform" and isl_d.spread == 0.5
    assert lengths_for("random:1024:128")[0].kind == "fixed"  # vLLM's default range ratio is 0
    for bad in ("random:1024", "random:0:128", "random:1024:128:1.0", "random:a:b"):
        with pytest.raises(StudioError, match="random:ISL:OSL"):
            lengths_for(bad)


def test_an_unknown_id_names_the_known_ones():
    with pytest.raises(StudioError, match="did you mean azure-conv-2023") as exc:
        lengths_for("azure-conv")
    assert exc.value.field == "lengths"


@pytest.mark.parametrize(("isl", "message"), [
    ({"kind": "histogram", "histogram": [[100, 0], [200, 0]]}, "field 'isl.histogram': the weights add up to 0"),
    ({"kind": "histogram", "histogram": [[-5, 1.0]]}, "field 'isl.histogram[0]': length -5 is not a whole number"),
    ({"kind": "histogram", "histogram": [[100, -1]]}, "weight -1 is negative"),
    ({"kind": "uniform", "spread": 1.5}, "field 'isl.spread' is 1.5; allowed: a range ratio"),
    ({"kind": "gamma"}, "field 'isl.kind' is 'gamma'"),
])
def test_a_bad_preset_names_the_file_and_field(isl, message):
    data = {"id": "x", "name": "x", "source": "test", "isl": isl, "osl": {"kind": "uniform", "spread": 0}}
    with pytest.raises(StudioError, match=re.escape(message)) as exc:
        preset_from_dict(data, "presets/workloads/x.json")
    assert exc.value.source == "presets/workloads/x.json"


def test_the_summarisation_preset_keeps_the_arxiv_files_long_prompts_and_short_outputs():
    s = workload_presets()["arxiv-summarization-4k"]
    # microsoft/vidur arxiv_summarization_stats_llama2_tokenizer_filtered_v2.csv @ 7d47513363:
    # 28,257 requests, input mean 2,588.1, output mean 291.4 tokens, at most 4,096 tokens in all
    assert s.isl_mean == 2588 and abs(s.osl_mean - 291) <= 1
    assert max(n for n, _ in s.isl.histogram) <= 4096 and max(n for n, _ in s.osl.histogram) <= 4096
    assert s.isl_mean > 8 * s.osl_mean  # a summary is a small fraction of its document
    assert "microsoft/vidur" in s.source and "Cohan" in s.source and s.derived
    # chat and code completion are bundled beside it
    assert {"azure-conv-2023", "azure-code-2023", "arxiv-summarization-4k"} <= set(workload_presets())
