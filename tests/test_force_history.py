"""`--force` keeps the truth: each config a run directory's results were computed with stays on record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tracejudge.entrypoints.cli import main


def _case(i: int) -> str:
    call = {"name": "get_order", "arguments": {"order_id": i}}
    return json.dumps({"id": f"c{i}", "expected_tool_calls": [call], "trace": {"steps": [{"tool_calls": [call]}], "output": "done"}}) + "\n"


def test_force_records_each_config_and_the_original_command_still_resumes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "cases.jsonl").write_text("".join(_case(i) for i in range(4)))
    cfg = tmp_path / "c.yaml"
    original = "dataset: {path: cases.jsonl}\nmetrics: [{type: ToolCalls, arguments: exact}]\nrun: {dir: run, executor: inprocess}\n"
    cfg.write_text(original)
    assert main(["run", str(cfg), "--no-progress"]) == 0
    capsys.readouterr()

    # a second trial scored with another argument rule: refused, then forced
    cfg.write_text(original.replace("exact", "subset").replace("inprocess}", "inprocess, trials: 2}"))
    assert main(["run", str(cfg), "--no-progress"]) == 2
    assert 'config metrics.0.arguments: "exact" → "subset"' in capsys.readouterr().err
    assert main(["run", str(cfg), "--no-progress", "--force"]) == 0
    out = capsys.readouterr().out
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    first, second = manifest["history"]
    assert first["config"]["metrics"][0]["arguments"] == "exact" and "forced_changes" not in first
    assert second["config"]["metrics"][0]["arguments"] == "subset"
    assert 'config metrics.0.arguments: "exact" → "subset"' in second["forced_changes"]
    assert f"segments 1 used config {first['config_hash'][:12]} (the config the run started with)" in out
    assert f"segments 2 used config {second['config_hash'][:12]} (forced: " in out
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert [(c["config_hash"], c["segments"]) for c in summary["configs"]] == [(first["config_hash"], [1]), (second["config_hash"], [2])]

    # the original command: a config these results were computed with, so no (false) diff refuses it
    cfg.write_text(original)
    assert main(["run", str(cfg), "--no-progress"]) == 0
    assert "0 new results, 4 already finished" in capsys.readouterr().out
    assert len(json.loads((tmp_path / "run" / "manifest.json").read_text())["history"]) == 2
    # a config never used here is still refused
    cfg.write_text(original.replace("exact", "ignore"))
    assert main(["run", str(cfg), "--no-progress"]) == 2


def test_a_forced_dataset_change_lists_each_segment_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Same config, other data: both history entries share the config hash, so segments are told apart by the
    # dataset fingerprint each recorded (before, each segment was listed under both entries).
    data = tmp_path / "cases.jsonl"
    data.write_text("".join(_case(i) for i in range(3)))
    cfg = tmp_path / "c.yaml"
    cfg.write_text("dataset: {path: cases.jsonl}\nmetrics: [{type: ToolCalls, arguments: exact}]\nrun: {dir: run, executor: inprocess}\n")
    assert main(["run", str(cfg), "--no-progress"]) == 0
    data.write_text("".join(_case(i) for i in range(5)))
    assert main(["run", str(cfg), "--no-progress", "--force"]) == 0
    out = capsys.readouterr().out
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    first, second = manifest["history"]
    assert first["config_hash"] == second["config_hash"] and first["dataset_fingerprint"] != second["dataset_fingerprint"]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert [c["segments"] for c in summary["configs"]] == [[1], [2]]
    assert any("dataset" in change for change in summary["configs"][1]["forced_changes"])
    lines = [line for line in out.splitlines() if line.startswith("segments ")]
    assert len(lines) == 2 and lines[0].startswith("segments 1 used") and lines[1].startswith("segments 2 used"), out


def test_a_metric_added_under_force_names_the_results_it_did_not_score(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # `--force` keeps finished results as they were: a metric added to the config is not scored for them, and
    # "0/4 (4 not applicable)" with nothing else read as if the metric had been checked. `max_calls: 0` is a real limit.
    (tmp_path / "cases.jsonl").write_text("".join(_case(i) for i in range(4)))
    cfg = tmp_path / "c.yaml"
    cfg.write_text("dataset: {path: cases.jsonl}\nmetrics: [{type: ToolCalls}]\nrun: {dir: run, executor: inprocess}\n")
    assert main(["run", str(cfg), "--no-progress"]) == 0
    capsys.readouterr()
    cfg.write_text(cfg.read_text().replace("[{type: ToolCalls}]", "[{type: ToolCalls}, {type: MaxToolCalls, max_calls: 0}]"))
    assert main(["run", str(cfg), "--no-progress", "--force"]) == 0
    out = capsys.readouterr().out
    assert ("MaxToolCalls: 4 result(s) were written before this metric was in the config and are not scored with it "
            "(--force keeps results as they are); --fresh scores every case with the current config") in out
    assert main(["run", str(cfg), "--no-progress", "--fresh"]) == 0
    out = capsys.readouterr().out
    assert "not scored with it" not in out
    summary = json.loads((tmp_path / "run-2" / "summary.json").read_text())
    assert (summary["metrics"]["MaxToolCalls"]["scored"], summary["metrics"]["MaxToolCalls"]["passed"]) == (4, 0)


def test_a_gate_on_every_metric_counts_results_kept_from_before_a_metric_was_added(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # `"*": {max_error_share: 0.05}` promises every metric scored on 95% of the results. The four results `--force`
    # kept were counted "not applicable", as a case-level metric's, so the gate passed MaxToolCalls on one scored of five.
    (tmp_path / "cases.jsonl").write_text("".join(_case(i) for i in range(4)))
    cfg = tmp_path / "c.yaml"
    cfg.write_text("dataset: {path: cases.jsonl}\nmetrics: [{type: ToolCalls}]\nrun: {dir: run, executor: inprocess}\n"
                   "assertions: {metrics: {'*': {max_error_share: 0.05}}}\n")
    assert main(["run", str(cfg), "--no-progress"]) == 0
    (tmp_path / "cases.jsonl").write_text("".join(_case(i) for i in range(5)))
    cfg.write_text(cfg.read_text().replace("[{type: ToolCalls}]", "[{type: ToolCalls}, {type: MaxToolCalls, max_calls: 5}]"))
    capsys.readouterr()
    want = ("FAIL MaxToolCalls max_error_share: 4 of 5 results not scored (none excluded; not computed 4, 4 of them written before "
            "'MaxToolCalls' was in the config: --fresh scores every case with it) = 0.8000, allowed <= 0.05")
    assert main(["run", str(cfg), "--no-progress", "--force"]) == 1
    assert want in " ".join(capsys.readouterr().out.split())
    m = json.loads((tmp_path / "run" / "summary.json").read_text())["metrics"]["MaxToolCalls"]
    assert (m["scored"], m["not_computed"], m["written_before"], m["not_applicable"], m["error_share"]) == (1, 4, 4, 0, 0.8)
    # The same verdict from the checkpoint a resume restores, and from results.jsonl alone.
    assert main(["run", str(cfg), "--no-progress"]) == 1
    assert want in " ".join(capsys.readouterr().out.split())
    assert main(["report", str(tmp_path / "run")]) == 1
    assert want in " ".join(capsys.readouterr().out.split())
    # A bound on the mean names them too, beside the one result it is over.
    cfg.write_text(cfg.read_text().replace("{max_error_share: 0.05}", "{min_mean: 0.5}"))
    assert main(["run", str(cfg), "--no-progress", "--force"]) == 0
    assert ("ok MaxToolCalls min_mean: mean 1.0000 over 1 of 5 results (4 written before 'MaxToolCalls' was in the config, not scored "
            "with it), required >= 0.5") in " ".join(capsys.readouterr().out.split())
