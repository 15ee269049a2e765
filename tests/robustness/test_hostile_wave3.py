"""Third wave of hostile cases (issue 37): every new input bounded, every output atomic.

Each case is a reproduction from the issue: it exits 0 or 2 with a message naming the file and
the field, never 1; an output that cannot be written leaves the old file; a link at an output is
replaced, never written through.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from studio.cli import main
from studio.core.errors import StudioError
from tests.robustness.golden_files import GOLDEN
from tests.robustness.hostile import bounded

GOOD = json.loads((GOLDEN / "v1" / "dgx-h100-2node.json").read_text(encoding="utf-8"))
SMALL = ["--gpu", "h100-sxm", "--nodes", "1", "--model", "llama-3.1-8b"]


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _project(tmp_path: Path, file: str = "p.json", **changes) -> Path:
    data = json.loads(json.dumps(GOOD))
    for dotted, value in changes.items():
        node = data
        *parents, last = dotted.split("__")
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    path = tmp_path / file
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _written(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _warm_up(fn) -> None:
    """Call a reader once on a tiny input before it is measured: its first call imports what it
    reads with lazily, and those imports would count against the file's size."""
    fn()


# ----------------------------------------------------------------------------- outputs
def test_csv_replaces_a_link_and_leaves_the_file_it_named(tmp_path, capsys):
    victim = tmp_path / "victim.txt"
    victim.write_text("mine", encoding="utf-8")
    link = tmp_path / "out.csv"
    link.symlink_to(victim)
    code, _, err = _cli(capsys, "sweep", *SMALL, "--csv", str(link))
    assert code == 0, err
    assert victim.read_text(encoding="utf-8") == "mine"
    assert not link.is_symlink() and link.read_text(encoding="utf-8").startswith("rank,")


def test_the_one_writer_replaces_links_unless_asked_to_follow(tmp_path):
    from studio.io.atomic import write_text_atomic

    victim = tmp_path / "victim"
    victim.write_text("mine", encoding="utf-8")
    link = tmp_path / "profile.json"
    link.symlink_to(victim)
    write_text_atomic("{}", link, what="profile")
    assert victim.read_text(encoding="utf-8") == "mine" and link.read_text(encoding="utf-8") == "{}"
    link.unlink()
    link.symlink_to(victim)
    write_text_atomic("new", link, follow_links=True)  # a project saved back through its link
    assert link.is_symlink() and victim.read_text(encoding="utf-8") == "new"


def test_a_failed_csv_write_exits_2_and_keeps_the_old_file(tmp_path, capsys, monkeypatch):
    out = tmp_path / "s.csv"
    out.write_text("OLD", encoding="utf-8")

    def too_large(_fd):
        raise OSError(27, "File too large")

    monkeypatch.setattr(os, "fsync", too_large)
    code, _, err = _cli(capsys, "sweep", *SMALL, "--csv", str(out))
    monkeypatch.undo()
    assert code == 2 and "File too large" in err and str(out) in err
    assert out.read_text(encoding="utf-8") == "OLD"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.csv"]


# ----------------------------------------------------------------------------- histograms
@pytest.mark.parametrize("command", ["plan", "simulate", "sweep"])
def test_weights_whose_sum_overflows_are_refused(command, tmp_path, capsys):
    w = tmp_path / "w.csv"
    w.write_text("100,1e308\n200,1e308\n", encoding="utf-8")
    code, _, err = _cli(capsys, command, *SMALL, "--isl-histogram", str(w), *(
        ["--num-requests", "50"] if command == "simulate" else []))
    assert code == 2, err
    assert str(w) in err and "weight" in err and "internal error" not in err


@pytest.mark.parametrize(("text", "expect"), [
    ("[[100, 1" + "0" * 400 + "]]", "entry 1: weight"),
    ('[[100, "5"]]', "entry 1: weight '5' is a string"),
    ('[["100", 1]]', "entry 1: length '100' is a string"),
    ('{"histogram": [{"length": 100, "weight": "1e3"}]}', "entry 1: weight '1e3' is a string"),
])
def test_json_histogram_numbers_are_numbers_of_bounded_size(text, expect, tmp_path, capsys):
    h = tmp_path / "h.json"
    h.write_text(text, encoding="utf-8")
    code, _, err = _cli(capsys, "plan", *SMALL, "--isl-histogram", str(h))
    assert code == 2, err
    assert str(h) in err and expect in err


def test_a_project_histogram_that_overflows_names_its_field(tmp_path, capsys):
    dist = {"kind": "histogram", "histogram": [[100, 1e308], [200, 1e308]]}
    p = _project(tmp_path, workload__load__isl_dist=dist)
    code, _, err = _cli(capsys, "simulate", str(p), "--num-requests", "50")
    assert code == 2, err
    assert str(p) in err and "workload.load.isl_dist" in err and "internal error" not in err
    huge = _project(tmp_path, "huge.json", workload__load__osl_dist={"kind": "histogram", "histogram": [[9, 10**400]]})
    code, _, err = _cli(capsys, "plan", str(huge))
    assert code == 2 and "workload.load.osl_dist" in err, err


def test_reading_a_histogram_stays_within_ten_times_its_size(tmp_path):
    """The issue's 16 MiB file of 8.4 M lines took 1.27 GB (76x); a 40 KiB file of such lines is
    read streaming, within 10x its size (the lengths are added up as they are read). The cost grew
    with the lines, so 10,000 lines show it as well as 100,000 did; 1,000 distinct lengths keep the
    histogram itself (which costs the same at any file size) well under the file's 10x."""
    from studio.io.importers.lengths import load_histogram

    h = tmp_path / "raw.csv"
    _warm_up(lambda: load_histogram(_written(tmp_path / "warm.csv", "100\n101\n")))
    lines = "".join(f"{100 + i % 1000}\n" for i in range(512 * 1024 // 50))
    h.write_text(lines, encoding="utf-8")
    size = h.stat().st_size
    dist, err, peak = bounded(lambda: load_histogram(h))
    assert err is None, err
    assert len(dist.histogram) == 1000
    assert peak <= 10 * size, f"{peak / size:.1f}x the file"


def test_a_histogram_line_is_bounded(tmp_path, capsys):
    h = tmp_path / "one-line.csv"
    h.write_text("1," * 200_000 + "\n", encoding="utf-8")
    code, _, err = _cli(capsys, "plan", *SMALL, "--isl-histogram", str(h))
    assert code == 2 and "line 1" in err and str(h) in err, err


# ----------------------------------------------------------------------------- serving results
def test_a_400_digit_max_concurrency_is_refused_naming_file_and_field(tmp_path, capsys):
    f = tmp_path / "bench.json"
    f.write_text('{"output_throughput": 1000.0, "completed": 10, "total_input_tokens": 1000, '
                 '"total_output_tokens": 1000, "max_concurrency": 1' + "0" * 400 + "}", encoding="utf-8")
    code, _, err = _cli(capsys, "calibrate", "serving", str(f), "--gpu", "h100-sxm", "--model", "llama-3.1-8b")
    assert code == 2, err
    assert str(f) in err and "max_concurrency" in err


# ----------------------------------------------------------------------------- flags
@pytest.mark.parametrize("spec", ["\uff11P:tp1,1D:tp1", "1P:tp\u0661,1D:tp1", "9" * 5000 + "P:tp1,1D:tp1"])
def test_disagg_takes_ascii_digits_of_bounded_length(spec, capsys):
    code, _, err = _cli(capsys, "plan", *SMALL, "--disagg", spec)
    assert code == 2, err
    assert "--disagg" in err and "internal error" not in err


def test_a_host_given_twice_is_refused(capsys):
    code, _, err = _cli(capsys, "export", "--engine", "vllm", "--hosts", "node-a,NODE-A")
    assert code == 2, err
    assert "--hosts" in err and "twice" in err


def test_draft_checkpoint_is_checked_like_model_path(capsys):
    code, _, err = _cli(capsys, "export", "--engine", "vllm", "--spec", "eagle", "--draft-checkpoint", "org/head\nx: 1")
    assert code == 2, err
    assert "--draft-checkpoint" in err and "U+000A" in err
    code, _, err = _cli(capsys, "export", "--engine", "vllm", "--spec", "eagle", "--draft-checkpoint=--served-model-name")
    assert code == 2 and "starts with '-'" in err, err


def test_a_project_draft_checkpoint_is_checked_on_export(tmp_path, capsys):
    p = _project(tmp_path, serving__speculative={"method": "eagle", "draft_checkpoint": "org/head\u202e"})
    code, _, err = _cli(capsys, "export", str(p), "--engine", "sglang")
    assert code == 2, err
    assert "draft_checkpoint" in err and "U+202E" in err


# ----------------------------------------------------------------------------- project values
def test_an_invalid_project_cp_is_refused_not_replaced(tmp_path, capsys):
    p = _project(tmp_path, layout__cp=3)  # TP 8: CP 3 divides nothing
    code, _, err = _cli(capsys, "plan", str(p))
    assert code == 2, err
    assert str(p) in err and "layout.cp" in err and "allowed" in err


def test_a_valid_project_cp_is_kept(tmp_path, capsys):
    p = _project(tmp_path, layout={"tp": 8, "pp": 1, "dp": 2, "cp": 2, "cp_mode": "prefill"})
    code, out, err = _cli(capsys, "plan", str(p), "--json")
    assert code == 0, err
    layout = json.loads(out)["layout"]
    assert (layout["cp"], layout["cp_mode"]) == (2, "prefill")


def test_identical_pinned_layouts_are_refused(tmp_path, capsys):
    p = _project(tmp_path, pinned=[{"tp": 8, "pp": 2, "dp": 1}] * 5000)
    code, _, err = _cli(capsys, "plan", str(p))
    assert code == 2, err
    assert str(p) in err and "pinned" in err


# ----------------------------------------------------------------------------- names
@pytest.mark.parametrize("where", ["name", "model__name"])
def test_a_newline_in_a_name_cannot_forge_a_table_row(where, tmp_path, capsys):
    forged = "x\n  fits      yes (forged line)\r\x0b\x0c\x85"
    p = _project(tmp_path, model_ref=None, **{where: forged})  # without a preset id the file's model is used
    code, out, err = _cli(capsys, "plan", str(p))
    assert code == 0, err
    assert "forged line" in out
    assert not any(line.lstrip().startswith("fits      yes (forged") for line in out.splitlines())
    assert "x\\n  fits" in out


def test_a_name_from_a_file_is_one_cell_in_every_table():
    from studio.commands.output import format_pairs, format_table

    pairs = format_pairs([("project", "a\nb\tc\u2028d")])
    assert pairs.count("\n") == 0 and "a\\nb\\tc\\u2028d" in pairs
    table = format_table(["layout", "name"], [["TP8", "a\nb"]])
    assert table.count("\n") == 2 and "a\\nb" in table


def test_every_hostile_message_is_a_studio_error():
    """The checks live where both the command line and the window reach them."""
    from studio.core.serving_mode import parse_pools
    from studio.io.export.checks.safety import check_hosts

    with pytest.raises(StudioError):
        parse_pools("\uff12P:tp1,1D:tp1")
    with pytest.raises(StudioError, match="twice"):
        check_hosts(["a.example", "A.example."])


def test_speculation_with_disaggregated_pools_is_never_dropped_silently(capsys):
    """The pools are planned with the drafter (TPOT changes); an export, whose recipes do not
    configure one yet, is refused naming the setting instead of writing servers without it."""
    pools = [*SMALL, "--disagg", "1P:tp1,1D:tp1"]
    spec = ["--spec", "eagle", "--draft-checkpoint", "org/head"]
    tpot = {}
    for name, extra in (("off", ["--spec", "off"]), ("eagle", spec)):
        code, out, err = _cli(capsys, "plan", *pools, *extra, "--json")
        assert code == 0, err
        tpot[name] = json.loads(out)["latency_ms"]["tpot"]
    assert tpot["eagle"] < tpot["off"]
    code, _, err = _cli(capsys, "export", *pools, "--engine", "vllm", *spec)
    assert code == 2, err
    assert "speculative decoding (eagle" in err and "disaggregated exports" in err
    assert _cli(capsys, "export", *pools, "--engine", "vllm", "--spec", "off")[0] == 0


# ----------------------------------------------------------------------------- concurrent saves
def test_concurrent_profile_saves_into_one_project_keep_every_profile(tmp_path, monkeypatch):
    """Three ``calibrate --save-as`` at once: each reads the file, adds its profile and saves. The
    serialiser is slowed so that all three read before any writes (the issue's race, every
    time); the lock makes each read what the one before wrote."""
    import threading
    import time

    from studio.commands import calibrate
    from studio.core.project import CalibrationProfile
    from studio.io import project_file

    path = _project(tmp_path)
    real = project_file.project_to_json

    def slow(project):
        time.sleep(0.2)
        return real(project)

    monkeypatch.setattr(project_file, "project_to_json", slow)
    start = threading.Barrier(3)
    errors: list[BaseException] = []

    def save(name: str) -> None:
        args = type("Args", (), {"output": None, "save_as": name, "project": str(path)})()
        project = project_file.load_project(path)  # as the command reads it when it starts
        start.wait()
        try:
            calibrate._save_profile(args, project, CalibrationProfile(name=name))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=save, args=(f"p{i}",)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    monkeypatch.undo()
    from studio.io.project_file import load_project

    assert {"p0", "p1", "p2"} <= set(load_project(path).calibrations)
    assert set(GOOD["calibrations"]) <= set(load_project(path).calibrations)


def test_reading_a_json_histogram_stays_within_ten_times_its_size(tmp_path):
    """A list of [length, weight] pairs is read entry by entry (as Python objects the same file
    took 16x its size: 6,000 pairs show that as well as 60,000); a 5,000-digit length is refused,
    not a crash."""
    from studio.io.importers.lengths import load_histogram

    h = tmp_path / "pairs.json"
    _warm_up(lambda: load_histogram(_written(tmp_path / "warm.json", "[[100,1]]")))
    h.write_text("[" + ",".join(f"[{100 + i % 900},1]" for i in range(6_000)) + "]", encoding="utf-8")
    dist, err, peak = bounded(lambda: load_histogram(h))
    assert err is None, err
    assert len(dist.histogram) == 900 and sum(w for _, w in dist.histogram) == 6_000
    assert peak <= 10 * h.stat().st_size, f"{peak / h.stat().st_size:.1f}x the file"
    h.write_text("[[" + "9" * 5000 + ", 1]]", encoding="utf-8")
    with pytest.raises(StudioError, match="entry 1: length"):
        load_histogram(h)


@pytest.mark.parametrize("unit", ["{},", "[],", "[[0]],"])
def test_json_of_empty_containers_is_refused_within_ten_times_its_size(unit, tmp_path):
    """``[{},{},…]`` is 3 characters per object and 64+ bytes per object once decoded: a 3.6 MiB
    project of them took 88 MB (24x) before it was refused for its unknown field. The lists and
    objects are counted before decoding (in pieces, so the count costs a few MiB) and refused."""
    from studio.io.project_file import load_project

    p = tmp_path / "p.json"
    p.write_text('{"junk": [' + (unit * 400_000)[:-1] + '], ' + json.dumps(GOOD)[1:], encoding="utf-8")
    project, err, peak = bounded(lambda: load_project(p))
    assert project is None and isinstance(err, StudioError), err
    assert str(p) in str(err) and "lists or objects" in str(err) and "10x the file" in str(err)
    assert peak <= 10 * p.stat().st_size, f"{peak / p.stat().st_size:.1f}x the file"


@pytest.mark.parametrize(("text", "refused"), [
    ("k:\n" + "  - []\n" * 6_000, False),  # one list per 7 characters: within the budget
    ("".join(f"a{i}: 1\n" for i in range(4_000)), False),
    ("k: [" + ",".join(["[]"] * 10_000) + "]\n", True),  # one per 3 characters
])
def test_reading_an_engine_config_stays_within_ten_times_its_size(text, refused, tmp_path):
    """PyYAML's loader composes a tree of nodes (about 250 bytes each, with their marks) before it
    builds the data: a 1 MiB ``--config`` of ``[],`` took 480 MB, a mapping of ``a: 1`` lines 135x.
    The data is now built from the parser's events, and lists and mappings are counted as they
    come, so a file costs about 10x its size or is refused (a list per 7 characters: 9x for the
    lists themselves, the rest the parent list's spare slots and the parser's own state). The
    cost is per list or mapping, so files of 20-40 KiB show the ratio as well as 400 KiB ones did
    (measured: the same ratios within 0.3x)."""
    from studio.io.safe import loads_yaml_limited

    _warm_up(lambda: loads_yaml_limited("k: [[]]\n", "w.yaml", what="engine config file"))
    data, err, peak = bounded(lambda: loads_yaml_limited(text, "c.yaml", what="engine config file"))
    if refused:
        assert isinstance(err, StudioError) and "lists or mappings" in str(err) and "c.yaml" in str(err), err
    else:
        assert err is None and data
    assert peak <= 15 * len(text), f"{peak / len(text):.1f}x the file"


def test_yaml_read_from_events_matches_the_safe_loader():
    """Merges, anchors, tags of plain data, dates and numbers read as PyYAML's safe loader reads
    them; tags that would build objects are refused."""
    import yaml

    from studio.io.safe import loads_yaml_limited

    text = ("base: &b {x: 1, y: 2}\nd:\n  <<: [*b, {z: 3, x: 9}]\n  y: 5\nn: [0x1f, 1e3, .5, ~, yes, 2024-01-02]\n"
            "s: !!str 12\nb: !!binary aGVsbG8=\nq: 'x: y'\n")
    assert loads_yaml_limited(text, "c.yaml") == yaml.safe_load(text)
    for bad in ("x: !!set {a, b}\n", "x: !!python/name:os.system\n", "x: !!omap [a: 1]\n"):
        with pytest.raises(StudioError, match="could not determine a constructor"):
            loads_yaml_limited(bad, "c.yaml")


def test_reading_a_topology_matrix_stays_within_ten_times_its_size():
    """A matrix's codes were a dict entry per pair with its line and column (a 600-device matrix of
    1.8 MB took 146 MB, 81x); now a row of shared code strings per device. The cost was per pair,
    so 100 devices (10,000 pairs) show it as well as 600 did."""
    from studio.io.importers.topo import parse_topo

    _warm_up(lambda: parse_topo("\tGPU0\tGPU1\nGPU0\t X \tNV18\nGPU1\tNV18\t X \n", "w.txt"))
    n = 100
    text = "\t" + "\t".join(f"GPU{i}" for i in range(n)) + "\n" + "".join(
        f"GPU{i}\t" + "\t".join(" X " if i == j else "NV18" for j in range(n)) + "\n" for i in range(n))
    matrix, err, peak = bounded(lambda: parse_topo(text, "topo.txt"))
    assert err is None, err
    assert matrix.code("GPU3", "GPU7") == "NV18" and len(matrix.relation) == n * (n - 1)
    assert peak <= 10 * len(text), f"{peak / len(text):.1f}x the text"


def test_a_small_file_costs_its_size_not_the_readers_cap(tmp_path):
    """Every reader read up to its cap in one call, which sets the whole cap aside first: a 1.3 MiB
    project cost 64 MiB, any config.json 4 MiB. Now a file costs about its own size."""
    from studio.io.safe import read_bytes_limited

    f = tmp_path / "small.json"
    f.write_bytes(b"{}" * 512)
    raw, err, peak = bounded(lambda: read_bytes_limited(f, 64 * 2**20, "project file"))
    assert err is None and raw == b"{}" * 512
    assert peak < 64 * 1024, f"{peak:,} bytes for a 1 KiB file"


def test_the_windows_profile_export_goes_through_the_atomic_writer(tmp_path, qtbot, monkeypatch):
    """The Calibration panel's Export wrote the profile in place, through a link at the target;
    now it is written like ``calibrate -o``: the link is replaced, a failed write keeps the old file."""
    from studio.gui.calibration import CalibrationPanel
    from studio.gui.document import ProjectDocument
    from studio.io.project_file import load_project

    doc = ProjectDocument(load_project(_project(tmp_path)), threaded=False)
    panel = CalibrationPanel(doc)
    qtbot.addWidget(panel)
    victim = tmp_path / "victim"
    victim.write_text("mine", encoding="utf-8")
    out = tmp_path / "lab-a.json"
    out.symlink_to(victim)
    panel.export_profile("lab-a", out)
    assert victim.read_text(encoding="utf-8") == "mine" and not out.is_symlink()
    assert json.loads(out.read_text(encoding="utf-8"))["name"] == "lab-a"

    def too_large(_fd):
        raise OSError(27, "File too large")

    monkeypatch.setattr(os, "fsync", too_large)
    with pytest.raises(StudioError, match="File too large"):
        panel.export_profile("lab-a", out)
    monkeypatch.undo()
    assert json.loads(out.read_text(encoding="utf-8"))["name"] == "lab-a"
    doc.wait_idle()


def test_the_documented_size_limits_are_the_flags_limits(capsys):
    """The docs said "at most 65,536 nodes" while ``--nodes`` stopped at 4,096: each limit the CLI
    reference states is the one the code enforces, and the flags' help says the same."""
    import re

    from studio.core.building.builders import MAX_NODES
    from studio.core.hardware import MAX_CLUSTER_GPUS, NodeTemplate

    root = Path(__file__).resolve().parents[2]
    cli = " ".join((root / "docs" / "cli.md").read_text(encoding="utf-8").split())
    per_node = NodeTemplate.model_fields["gpus_per_node"].metadata
    most_per_node = next(m.le for m in per_node if hasattr(m, "le"))
    assert f"at most {MAX_CLUSTER_GPUS:,} GPUs" in cli
    assert f"`--nodes` 1..{MAX_NODES:,}" in cli and f"`--gpus-per-node` 1..{most_per_node:,}" in cli
    code, out, _ = _cli(capsys, "plan", "--help")
    text = " ".join(out.split())
    assert code == 0
    for flag, most in (("--nodes", MAX_NODES), ("--gpus-per-node", most_per_node)):
        assert re.search(re.escape(flag) + r" \S+ [^-]*1\.\." + f"{most:,}", text), flag
        code, _, err = _cli(capsys, "plan", "--gpu", "h100-sxm", flag, str(most + 1))
        assert code == 2 and str(most) in err.replace(",", ""), err


def test_import_topo_output_replaces_a_link_instead_of_writing_through_it(tmp_path, capsys):
    """``import-topo -o mine.json`` followed a link planted at mine.json and overwrote the file it
    named; a new output replaces the link like every other output (a project opened through a link
    is still saved back to its file)."""
    victim = tmp_path / "victim"
    victim.write_text("mine", encoding="utf-8")
    out = tmp_path / "mine.json"
    out.symlink_to(victim)
    code, _, err = _cli(capsys, "import-topo", "topo-h100-8gpu-nvswitch", "--gpu", "h100-sxm", "-o", str(out))
    assert code == 0, err
    assert victim.read_text(encoding="utf-8") == "mine"
    assert not out.is_symlink() and json.loads(out.read_text(encoding="utf-8"))["cluster"]["nodes"]
