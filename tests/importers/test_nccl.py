"""nccl-tests logs and the engine link fits on the public tables of collectives.md."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from studio.core.building.builders import build_cluster
from studio.core.errors import StudioError
from studio.engine.search.calibration import engine_times, fit_link_kind, rms
from studio.io.importers.nccl_log import parse_nccl_log

from .conftest import data_text

A100 = "nccl/a100-8gpu-nvswitch-allreduce.txt"
H100X2 = "nccl/h100-2x8-cloud-allreduce.txt"

MODERN = """\
# nThread 1 nGpus 2 minBytes 8 maxBytes 1024 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid   1234 on    host-a device  0 [0x18] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid   1234 on    host-a device  1 [0x2a] NVIDIA H100 80GB HBM3
host-a:1234:1234 [0] NCCL INFO Bootstrap : Using eth0
#
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
[1,0]<stdout>:            8             2     float     sum      -1    10.00    0.00    0.00      0    9.50    0.00    0.00      0
          1024           256     float     sum      -1    12.00    0.09    0.09      0   11.00    0.09    0.09  0e+00
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 0.045
"""

OLD = """\
#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                      (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144   float     sum    100.0   10.49   18.35  0e+00    101.0   10.38   18.17  0e+00
"""


def test_modern_log_with_ranks_devices_and_in_place_group():
    log = parse_nccl_log(MODERN, "ar.log")
    assert log.ranks == 2 and log.devices == ("NVIDIA H100 80GB HBM3",) * 2
    assert len(log.rows) == 2 and log.avg_busbw_gbps == pytest.approx(0.045)
    r = log.rows[1]
    assert (r.size_bytes, r.count, r.dtype, r.redop, r.root) == (1024, 256, "float", "sum", -1)
    assert (r.time_us, r.in_time_us, r.in_wrong) == (12.0, 11.0, 0.0)
    assert log.points() == ([8.0, 8.0, 1024.0, 1024.0], [10.0, 9.5, 12.0, 11.0])


def test_old_log_without_root_column():
    (r,) = parse_nccl_log(OLD).rows
    assert r.redop == "sum" and r.root is None and r.busbw_gbps == 18.35 and r.in_busbw_gbps == 18.17


def test_reference_table_reads_as_an_8_rank_all_reduce():
    log = parse_nccl_log(data_text(A100))
    assert log.collective == "all_reduce" and log.group_size == 8
    assert len(log.rows) == 18 and log.rows[-1].time_us == 127997
    assert log.rows[0].in_time_us is None  # the source published one group
    assert parse_nccl_log(data_text(H100X2)).group_size == 16


def test_bad_number_names_line_and_column():
    bad = OLD.replace("100.0", "fast!")
    with pytest.raises(StudioError, match=r"line 3, column 47 \(time\): cannot read 'fast!'"):
        parse_nccl_log(bad, "x.log")
    with pytest.raises(StudioError, match="no nccl-tests table rows"):
        parse_nccl_log("# Avg bus bandwidth : 3\n")


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("0123456789 .-#\nsumfloatN/A\te+")), max_size=300))
def test_arbitrary_text_never_crashes(text):
    try:
        parse_nccl_log(text)
    except StudioError:
        pass


def _halves(sizes, times):
    """Alternate points (by size) into a fitting half and a held-out half."""
    order = np.argsort(np.asarray(sizes, dtype=float), kind="stable")
    s, t = np.asarray(sizes, dtype=float)[order], np.asarray(times, dtype=float)[order]
    return (s[0::2], t[0::2]), (s[1::2], t[1::2])


def test_too_few_points_cannot_be_fitted(catalog_full):
    tpl = catalog_full.node("dgx-a100")
    cluster = build_cluster(tpl, 1, catalog_full.gpu(tpl.gpu_type), catalog_full.links)
    group = [g.id for g in cluster.gpus]
    with pytest.raises(StudioError, match="at least 3"):
        fit_link_kind(cluster, group, "nvlink3-nvswitch", [1e3, 1e4], [50.0, 60.0])
    with pytest.raises(StudioError, match="same message size"):
        fit_link_kind(cluster, group, "nvlink3-nvswitch", [1e3] * 4, [50.0, 51.0, 52.0, 53.0])


@pytest.mark.parametrize(
    ("table", "template", "kind", "nodes"),
    [(A100, "dgx-a100", "nvlink3-nvswitch", 1), (H100X2, "dgx-h100", "ib-ndr", 2)],
)
def test_calibrating_on_half_the_points_improves_the_other_half(catalog_full, table, template, kind, nodes):
    tpl = catalog_full.node(template)
    cluster = build_cluster(tpl, nodes, catalog_full.gpu(tpl.gpu_type), catalog_full.links)
    group = [g.id for g in cluster.gpus]
    s, t = parse_nccl_log(data_text(table)).points()
    (fs, ft), (hs, ht) = _halves(s, t)
    fit = fit_link_kind(cluster, group, kind, fs, ft)
    calibrated = rms((engine_times(cluster, group, hs, link_fits={kind: fit.link_fit}) - ht) / ht)
    default = rms((engine_times(cluster, group, hs) - ht) / ht)
    assert calibrated < 0.75 * default
    assert fit.link_fit.rms_rel_error == pytest.approx(rms(fit.residuals))


def test_fitting_a_kind_the_group_does_not_cross_is_an_error(catalog_full):
    tpl = catalog_full.node("dgx-a100")
    cluster = build_cluster(tpl, 1, catalog_full.gpu(tpl.gpu_type), catalog_full.links)
    s, t = parse_nccl_log(data_text(A100)).points()
    with pytest.raises(StudioError, match="crosses no link of kind 'ib-hdr'"):
        fit_link_kind(cluster, [g.id for g in cluster.gpus], "ib-hdr", s, t)


def test_a_fit_over_shared_route_tables_equals_one_that_searches_every_trial_figure(catalog_full, monkeypatch):
    # the fit builds ~140 topologies of one cluster; they share its skeleton and, between figures
    # that order the links alike, their routes: the fitted figures and every prediction must be
    # those of the full costing, which searches the routes again for each trial figure
    from collections import OrderedDict

    from studio.engine.fabric import topology

    tpl = catalog_full.node("dgx-h100")
    cluster = build_cluster(tpl, 2, catalog_full.gpu(tpl.gpu_type), catalog_full.links)
    group = [g.id for g in cluster.gpus]
    s, t = parse_nccl_log(data_text(H100X2)).points()
    fast = fit_link_kind(cluster, group, "ib-ndr", s, t)
    for name in ("_STORES", "_SHAPES", "_ROUTE_TABLES", "_SKELETONS"):
        monkeypatch.setattr(topology, name, OrderedDict())
    monkeypatch.setattr(topology, "_route_class", lambda links, figures: None)
    full = fit_link_kind(cluster, group, "ib-ndr", s, t)
    assert fast.link_fit == full.link_fit
    assert np.array_equal(fast.predicted_us, full.predicted_us)
    assert np.array_equal(fast.default_us, full.default_us)
