"""File ▸ Export launch config…: engines, formats, preview, copy, save, quoting, errors; and the
checkpoint size check shown by the model panel's Load config.json…."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from gui_helpers import engine_evaluate

from studio.core.errors import StudioError

HOSTILE = "/models/x'; rm -rf ~ #$(reboot)`id`"
HF = Path(__file__).resolve().parents[1] / "data" / "hf"


@pytest.fixture
def example():
    from studio.commands.options.project_args import load_base_project

    evaluate = engine_evaluate()
    project = load_base_project(None)  # the bundled example: Llama-3.1-405B on 2× DGX H100
    return project, evaluate(project)


@pytest.fixture
def dialog(qtbot, example):
    from studio.gui.editors.export_dialog import ExportDialog

    dlg = ExportDialog(*example)
    qtbot.addWidget(dlg)
    return dlg


@pytest.mark.parametrize(
    ("engine", "launcher"),
    [("vllm", "vllm serve"), ("trtllm", "trtllm-serve"), ("sglang", "sglang.launch_server")],
)
def test_each_engine_previews_its_launcher(dialog, engine, launcher):
    dialog.set_choice(engine, "command")
    files = dialog.file_texts()
    assert files == dialog.bundle.files
    assert any(launcher in text for text in files.values())
    assert dialog.error.isHidden()


def test_formats_switch_files_and_trtllm_has_no_kubernetes(dialog):
    dialog.set_choice("vllm", "k8s")
    assert list(dialog.file_texts()) == ["vllm-lws.yaml"]
    assert "LeaderWorkerSet" in dialog.file_texts()["vllm-lws.yaml"]
    dialog.set_choice("vllm", "yaml")
    assert "vllm-serve.yaml" in dialog.file_texts()
    # choosing TensorRT-LLM while Kubernetes is selected falls back to commands, k8s greyed out
    dialog.set_choice("vllm", "k8s")
    dialog.set_choice("trtllm")
    assert dialog.format.currentData() == "command"
    assert not dialog.format_enabled("k8s")
    assert dialog.format_enabled("script")
    with pytest.raises(StudioError, match="allowed: command, yaml, script"):
        dialog.set_choice("trtllm", "k8s")
    dialog.set_choice("sglang")
    assert dialog.format_enabled("k8s")


def test_notes_are_shown_prominently(dialog):
    dialog.set_choice("trtllm", "command")
    assert dialog.bundle.notes
    assert not dialog.notes.isHidden()
    assert "what the engine cannot express" in dialog.notes.text()
    assert "Node addresses" in dialog.notes.text()
    # real host names silence the address note
    dialog.hosts.setText("gpu-a, gpu-b")
    dialog.refresh()
    assert "Node addresses" not in dialog.notes.text()
    assert "gpu-a" in "".join(dialog.file_texts().values())


def test_wrong_host_count_is_shown_not_raised(dialog):
    dialog.hosts.setText("only-one")
    dialog.refresh()
    assert dialog.bundle is None
    assert not dialog.error.isHidden() and dialog.error.text()
    assert dialog.tabs.count() == 0 and not dialog.save_button.isEnabled()
    assert not dialog.check_button.isEnabled()
    dialog.hosts.setText("gpu-a, -oProxyCommand=x")  # an option, not a host name
    dialog.refresh()
    assert dialog.bundle is None and "not a host name or IP address" in dialog.error.text()
    dialog.hosts.setText("")
    dialog.refresh()
    assert dialog.error.isHidden() and dialog.tabs.count() > 0 and dialog.check_button.isEnabled()


def test_hostile_model_path_stays_one_quoted_word(dialog, tmp_path):
    dialog.set_choice("vllm", "script")
    dialog.model_path.setText(HOSTILE)
    dialog.refresh()
    (name, text), = dialog.file_texts().items()
    serve = [line for line in text.splitlines() if "vllm serve" in line and not line.lstrip().startswith("#")]
    assert serve
    words = shlex.split(serve[0].rstrip("\\"), comments=False)
    assert HOSTILE in words  # the whole path is one word, nothing of it runs
    script = tmp_path / name
    script.write_text(text)
    if shutil.which("bash"):
        assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0


def test_save_writes_every_file_and_never_overwrites_silently(dialog, tmp_path):
    dialog.set_choice("vllm", "yaml")
    asked = []
    dialog.confirm_overwrite = lambda existing: asked.append([p.name for p in existing]) or False
    written = dialog.save_to(tmp_path)
    assert sorted(p.name for p in written) == sorted(dialog.bundle.files)
    for p in written:
        assert p.read_text(encoding="utf-8") == dialog.bundle.files[p.name]
    assert not asked
    (tmp_path / "vllm-serve.yaml").write_text("mine")
    assert dialog.save_to(tmp_path) == []  # refused: kept
    assert asked and "vllm-serve.yaml" in asked[0]
    assert (tmp_path / "vllm-serve.yaml").read_text() == "mine"
    dialog.confirm_overwrite = lambda existing: True
    assert len(dialog.save_to(tmp_path)) == len(dialog.bundle.files)
    assert (tmp_path / "vllm-serve.yaml").read_text() != "mine"


def test_save_into_a_missing_folder_is_a_message(dialog, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QMessageBox

    shown = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *a: shown.append(a[2]))
    dialog.choose_folder = lambda: str(tmp_path / "nope")
    assert dialog.save_to() == []
    assert shown and "not a folder" in shown[0]


def test_copy_puts_the_shown_file_on_the_clipboard(dialog):
    from PySide6.QtGui import QGuiApplication

    dialog.set_choice("sglang", "command")
    name = dialog.copy_current()
    assert name is not None
    assert QGuiApplication.clipboard().text() == dialog.bundle.files[name]
    assert "sglang.launch_server" in QGuiApplication.clipboard().text()


def test_file_menu_opens_the_dialog_on_the_window_plan(qtbot, doc, catalog):
    from studio.gui.window.main_window import MainWindow

    engine_evaluate()
    win = MainWindow(doc, catalog)
    qtbot.addWidget(win)
    errors = []
    win.show_error = lambda title, text: errors.append(text)
    action = next(a for a in win.menuBar().actions()[0].menu().actions() if "launch config" in a.text())
    action.trigger()
    dlg = win.export_dialog
    assert not errors
    assert dlg.plan.layout.label == "TP8×PP2"
    assert any("vllm serve" in t for t in dlg.file_texts().values())
    dlg.close()


def test_file_menu_reports_a_project_the_engine_refuses(qtbot, doc, catalog, monkeypatch):
    import studio.engine
    from studio.gui.editors.export_dialog import open_export_dialog
    from studio.gui.window.main_window import MainWindow

    win = MainWindow(doc, catalog)
    qtbot.addWidget(win)
    errors = []
    win.show_error = lambda title, text: errors.append(text)
    win.ask_save = lambda: "discard"  # the edit below leaves the document unsaved
    doc.wait_idle()
    doc.edit("Batch", "workload", lambda p: p.replace(workload=p.workload.replace(batch=3)))

    def refuse(project):
        raise StudioError("the layout needs 99 GPUs")

    monkeypatch.setattr(studio.engine, "evaluate", refuse)
    assert open_export_dialog(win) is None
    assert errors == ["the layout needs 99 GPUs"]


# ------------------------------------------------------------------------------ model panel
def test_load_config_shows_the_checkpoint_size_check(qtbot, doc, catalog):
    from studio.gui.panels.model_panel import ModelPanel

    panel = ModelPanel(doc, catalog)
    qtbot.addWidget(panel)
    assert panel.load_config(str(HF / "tiny-llama-extra-layer" / "config.json"))
    doc.wait_idle()
    assert "differs by 35%" in panel.model_info.text()
    assert panel.load_config(str(HF / "tiny-llama-bf16" / "config.json"))
    assert "26,784 in its tensors" in panel.model_info.text() and "agrees" in panel.model_info.text()
    panel.load_config(str(HF / "tiny-llama-bf16" / "config.json"))  # same model again: still shown
    assert "agrees" in panel.model_info.text()


def test_model_box_names_the_model_the_project_holds(qtbot, doc, catalog):
    """A project whose ``model_ref`` names another preset than its model (a hand-edited file) shows
    the model it holds: that is the one every figure is computed for."""
    from studio.gui.panels.model_panel import ModelPanel

    panel = ModelPanel(doc, catalog)
    qtbot.addWidget(panel)
    other = next(mid for mid in catalog.models if mid != doc.project.model.id)
    panel.refresh(doc.project.model_copy(update={"model_ref": other}))
    shown = panel.model.currentData() or panel.model.currentText()
    assert shown in (doc.project.model.id, doc.project.model.name)
    assert panel.model.currentText() != catalog.models[other].name


def test_check_button_shows_the_rules_verdict(qtbot, dialog, monkeypatch):
    from PySide6.QtCore import Qt

    monkeypatch.delenv("LAYOUT_STUDIO_ENGINE_PYTHON", raising=False)
    dialog.engine_python.clear()  # no engine interpreter named (the field starts from the variable)
    dialog.set_choice("trtllm", "yaml")
    assert dialog.check_result.isHidden()
    qtbot.mouseClick(dialog.check_button, Qt.MouseButton.LeftButton)
    assert not dialog.check_result.isHidden()
    text = dialog.check_result.text()
    assert "passes the engine's run-time rules" in text
    # TensorRT-LLM is not installed here: the dialog says its own validation did not run
    assert "the engine's own validation was not run: tensorrt_llm is not installed" in text
    dialog.set_choice("sglang", "command")  # a new recipe hides the old verdict
    assert dialog.check_result.isHidden()


def test_check_button_reports_what_the_installed_engine_refuses(qtbot, dialog, monkeypatch, tmp_path):
    """A stand-in SGLang package whose ServerArgs refuses the recipe, installed in the environment of
    the interpreter typed into the Engine Python field: the dialog shows the engine's own words and
    which engine checked it."""
    import sys

    from PySide6.QtCore import Qt

    from tests.export.fake_engines import write_package

    monkeypatch.delenv("LAYOUT_STUDIO_ENGINE_PYTHON", raising=False)
    site = write_package(tmp_path / "site", {
        "sglang/__init__.py": "",
        "sglang/srt/__init__.py": "",
        "sglang-0.5.23.dist-info/METADATA": "Metadata-Version: 2.1\nName: sglang\nVersion: 0.5.23\n",
        "sglang/srt/server_args.py": """
            class ServerArgs:
                @staticmethod
                def add_cli_args(parser):
                    parser.add_argument("--model-path")
                    parser.add_argument("--host")
                    for flag in ("--tp-size", "--pp-size", "--dp-size", "--mem-fraction-static", "--context-length",
                                 "--kv-cache-dtype", "--max-running-requests", "--chunked-prefill-size",
                                 "--cuda-graph-max-bs-decode"):
                        parser.add_argument(flag)

                @classmethod
                def from_cli_args(cls, ns):
                    raise ValueError(f"tp_size {ns.tp_size} needs more GPUs than this node has")
            """,
    })
    monkeypatch.setenv("PYTHONPATH", str(site))
    dialog.engine_python.clear()
    dialog.set_choice("sglang", "command")
    qtbot.mouseClick(dialog.check_button, Qt.MouseButton.LeftButton)
    assert "was not run: sglang is not installed" in dialog.check_result.text()  # this Python lacks it
    qtbot.keyClicks(dialog.engine_python, sys.executable)  # the environment that has it
    assert dialog.check_result.isHidden()  # the verdict shown was another interpreter's
    qtbot.mouseClick(dialog.check_button, Qt.MouseButton.LeftButton)
    text = dialog.check_result.text()
    assert "needs more GPUs than this node has" in text
    assert "checked with the engine itself: sglang 0.5.23: sglang.srt.server_args.ServerArgs" in text
    assert dialog.status.text() == "Check found problems"


def test_the_layout_the_files_run_is_costed_again(qtbot):
    """Mixtral TP2×DP4 with EP2 on one DGX H100: vLLM can only run EP = TP × DP = 8, so its files
    run that layout; the notes name it and say whether it fits (issue 11: never 'fits' for a
    layout the plan did not cost)."""
    from studio.core.building.builders import build_cluster
    from studio.core.layout import Layout
    from studio.core.project import Project
    from studio.gui.editors.export_dialog import ExportDialog
    from studio.io.presets import load_catalog

    evaluate = engine_evaluate()
    cat = load_catalog()
    cluster = build_cluster(cat.node("dgx-h100"), 1, cat.gpu("h100-sxm"), cat.links)
    project = Project(cluster=cluster, model=cat.model("mixtral-8x7b").architecture,
                      layout=Layout(tp=2, dp=4, ep=2))
    dlg = ExportDialog(project, evaluate(project))
    qtbot.addWidget(dlg)
    dlg.set_choice("vllm", "command")
    assert dlg.bundle.nearest_layout is not None and dlg.bundle.nearest_layout.ep == 8
    v = dlg.nearest_verdict
    assert v is not None and v.layout == dlg.bundle.nearest_layout
    text = dlg.notes.text()
    assert v.layout.label in text
    assert ("it fits" in text) if v.fits else ("does not fit" in text and (v.proposal or "") in text)
    dlg.set_choice("trtllm", "command")  # TensorRT-LLM runs the plan's own layout: no verdict
    assert dlg.bundle.nearest_layout is None and dlg.nearest_verdict is None


def test_save_shows_the_check_first_and_asks_before_writing_a_refused_recipe(qtbot, dialog, tmp_path, monkeypatch):
    from PySide6.QtCore import Qt

    from studio.io.export.checks.findings import Finding

    dialog.set_choice("vllm", "yaml")
    asked = []
    dialog.confirm_problems = lambda report: asked.append(report) or False
    dialog.choose_folder = lambda: str(tmp_path)
    qtbot.mouseClick(dialog.save_button, Qt.MouseButton.LeftButton)
    assert not dialog.check_result.isHidden() and "passes" in dialog.check_result.text()
    assert not asked and sorted(p.name for p in tmp_path.iterdir()) == sorted(dialog.bundle.files)
    # a recipe the check refuses: the verdict is shown and nothing is written unless the user agrees
    refused = [Finding("error", "decode-context-parallel-size", "refused by vLLM", "vllm.cp.dcp_gqa")]
    import studio.gui.editors.export_dialog as module

    real = module.check
    monkeypatch.setattr(module, "check", lambda recipe, **kw: real(recipe).__class__(
        engine=recipe.engine, findings=tuple(refused), engine_checked=None, engine_missing="not here"))
    dialog.set_choice("sglang", "yaml")
    other = tmp_path / "other"
    other.mkdir()
    dialog.choose_folder = lambda: str(other)
    qtbot.mouseClick(dialog.save_button, Qt.MouseButton.LeftButton)
    assert len(asked) == 1 and not list(other.iterdir())
    assert "refused by vLLM" in dialog.check_result.text() and "Nothing written" in dialog.status.text()
    dialog.confirm_problems = lambda report: True
    qtbot.mouseClick(dialog.save_button, Qt.MouseButton.LeftButton)
    assert sorted(p.name for p in other.iterdir()) == sorted(dialog.bundle.files)
