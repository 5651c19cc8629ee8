"""τ²-bench's "dir" layout: `results.json` without simulations, one file per simulation in `simulations/` beside it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_tau2_checked_task import _action, _Dataset, _sim
from tracejudge.core.records import Case
from tracejudge.core.registry import format_for
from tracejudge.stages.extract import extract_record
import _forkserver


def _dir_layout(tmp_path: Path, files: dict[str, str]) -> Path:
    cancel = [_action("7", 0, "cancel_reservation", reservation_id="ABC")]
    lookup = [_action("3", 0, "get_user_details", user_id="u1")]
    tasks = [{"id": "3", "evaluation_criteria": {"actions": lookup}}, {"id": "7", "evaluation_criteria": {"actions": cancel}}]
    folder = tmp_path / "experiment"
    (folder / "simulations").mkdir(parents=True)
    index = [{"id": f"sim-{t}", "task_id": t, "trial": 0} for t in ("3", "7")]
    (folder / "results.json").write_text(json.dumps({"info": {"environment_info": {"domain_name": "airline"}}, "tasks": tasks,
                                                     "simulation_index": index}, indent=2))
    for name, text in files.items():
        (folder / "simulations" / name).write_text(text)
    return folder


SIMS = {"sim-7.json": json.dumps(_sim("7", [], [("cancel_reservation", {"reservation_id": "ABC"})]), indent=2),
        "sim-3.json": json.dumps(_sim("3", [], [("get_user_details", {"user_id": "u1"})]), indent=2)}


def _read(path: Path) -> list:
    fmt = format_for("tau2-bench")
    return [(raw.file, extract_record(raw, fmt, None)) for raw in fmt.read(_Dataset(path))]


def test_the_folder_or_its_results_json_reads_each_simulation_file_by_name(tmp_path: Path):
    folder = _dir_layout(tmp_path, SIMS)
    for path in (folder, folder / "results.json"):
        read = _read(path)
        assert [Path(f).name for f, _ in read] == ["sim-3.json", "sim-7.json"]  # upstream's order: sorted file names
        cases = [c for _, c in read]
        assert all(isinstance(c, Case) for c in cases), cases
        assert [c.id for c in cases] == ["3-0", "7-0"]
        assert [[t.name for t in c.trace.tool_calls()] for c in cases] == [["get_user_details"], ["cancel_reservation"]]
        assert cases[1].expected_tool_calls[0].arguments == {"reservation_id": "ABC"}  # the task of results.json


def test_a_broken_simulation_file_is_its_own_invalid_record(tmp_path: Path):
    folder = _dir_layout(tmp_path, {**SIMS, "sim-5.json": '{"id": "sim-5", "task_id": "5",'})
    fmt = format_for("tau2-bench")
    raws = list(fmt.read(_Dataset(folder)))
    assert [Path(r.file).name for r in raws] == ["sim-3.json", "sim-5.json", "sim-7.json"]
    assert raws[1].error.startswith("cannot read a tau2-bench simulation file: invalid JSON") and raws[1].line == 1
    assert raws[0].error is None and raws[2].error is None


def test_an_empty_simulation_file_says_so(tmp_path: Path):
    # (it said `invalid JSON: Expecting value at line 1 column 1`, as if the file held something broken)
    folder = _dir_layout(tmp_path, {**SIMS, "sim-5.json": "", "sim-6.json": "\ufeff \n"})
    raws = list(format_for("tau2-bench").read(_Dataset(folder)))
    assert [(Path(r.file).name, r.error) for r in raws if r.error] == [
        (name, "cannot read a tau2-bench simulation file: the file is empty") for name in ("sim-5.json", "sim-6.json")]


def test_a_results_json_without_simulations_or_their_folder_says_where_it_looked(tmp_path: Path):
    folder = _dir_layout(tmp_path, SIMS)
    alone = tmp_path / "results.json"
    alone.write_text((folder / "results.json").read_text())
    [raw] = list(format_for("tau2-bench").read(_Dataset(alone)))
    assert "`simulations` list" in raw.error and f"there is none at {tmp_path / 'simulations'}" in raw.error


def test_extract_takes_the_folder_as_dataset_path(tmp_path: Path):
    folder = _dir_layout(tmp_path, SIMS)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset: {{path: {folder}, format: tau2-bench}}\nmetrics: [{{type: ToolCalls}}]\n")
    done = _forkserver.run([str(Path(sys.executable).with_name("tracejudge")), "extract", str(cfg), "-o", "-"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [json.loads(line)["id"] for line in done.stdout.splitlines()] == ["3-0", "7-0"]


def test_a_voice_simulation_of_ticks_says_so(tmp_path: Path):
    # τ²-bench's full-duplex runs keep `ticks` and no `messages`: the refusal says which, not only that messages are missing.
    voice = {"id": "sim-3", "task_id": "3", "trial": 0, "mode": "full_duplex", "termination_reason": "user_stop",
             "ticks": [{"tick_id": 0, "timestamp": "2026-06-30T11:40:29", "agent_chunk": None, "user_chunk": None}]}
    folder = _dir_layout(tmp_path, {"sim-3.json": json.dumps(voice)})
    [(_, (case_id, error))] = _read(folder)
    assert case_id == "3-0" and "full-duplex (voice) simulation (1 ticks)" in error.message, error


def test_simulations_saved_without_their_tasks_are_refused_saying_so(tmp_path: Path):
    # Leaderboard submissions that kept only their simulations: a bare array of them, or an object with no `tasks`.
    sims = [json.loads(text) for text in SIMS.values()]
    array = tmp_path / "array.json"
    array.write_text(json.dumps(sims))
    [raw] = list(format_for("tau2-bench").read(_Dataset(array)))
    assert "a JSON array of simulations, not a results object" in raw.error and "tasks file?" not in raw.error, raw.error
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps({"domain": "airline", "pass_rate": 0.5, "simulations": sims}))
    (_, (case_id, error)), _ = _read(bare)
    assert case_id == "7-0" and error.message.endswith("is not in the file's tasks (the file has no `tasks`: a results file "
                                                       "holds the tasks its simulations ran)"), error


def test_a_simulation_file_changed_before_a_resume_is_named_whichever_path_the_config_names(tmp_path: Path):
    # Named by its results.json, the run once fingerprinted that file alone: a simulation edited since was scored
    # on resume as if it were what the run had read.
    folder = _dir_layout(tmp_path, SIMS)
    tj = str(Path(sys.executable).with_name("tracejudge"))
    for path, run_dir in ((folder / "results.json", "by-file"), (folder, "by-folder")):
        cfg = tmp_path / f"{run_dir}.yaml"
        cfg.write_text(f"dataset: {{path: {path}, format: tau2-bench}}\nmetrics: [{{type: ToolCalls}}]\n"
                       f"run: {{dir: {tmp_path / run_dir}, processes: 1}}\n")
        first = _forkserver.run([tj, "run", str(cfg), "--no-progress"], capture_output=True, text=True, timeout=120)
        assert first.returncode in (0, 1), first.stderr[-3000:]
        same = _forkserver.run([tj, "run", str(cfg), "--no-progress"], capture_output=True, text=True, timeout=120)
        assert same.returncode in (0, 1) and "cannot resume" not in same.stderr, same.stderr[-3000:]
    edited = json.loads(SIMS["sim-7.json"])
    edited["messages"] = edited["messages"][:1]
    (folder / "simulations" / "sim-7.json").write_text(json.dumps(edited, indent=2))
    for run_dir in ("by-file", "by-folder"):
        refused = _forkserver.run([tj, "run", str(tmp_path / f"{run_dir}.yaml"), "--no-progress"], capture_output=True, text=True, timeout=120)
        assert refused.returncode == 2 and "cannot resume" in refused.stderr, refused.stderr[-3000:]
        assert "sim-7.json changed" in refused.stderr and "sim-3.json" not in refused.stderr, refused.stderr[-3000:]


def test_the_simulations_folder_is_fingerprinted_beside_results_json_and_named_when_an_older_run_has_none(tmp_path: Path):
    from tracejudge.core.config import validate_config
    from tracejudge.engine import manifest as mf
    from tracejudge.engine.dataset_fingerprint import files_of

    folder = _dir_layout(tmp_path, SIMS)
    config = validate_config({"dataset": {"path": str(folder / "results.json"), "format": "tau2-bench"}, "metrics": [{"type": "ToolCalls"}]})
    new = mf.manifest_for(config)
    assert new["dataset"]["beside"]["path"] == str(folder / "simulations")
    assert sorted(new["dataset"]["beside"]["files"]) == ["sim-3.json", "sim-7.json"]
    # Hashed ahead of the config's validation (the format not known yet): the folder is added, not left out.
    assert mf.manifest_for(config, files=files_of(folder / "results.json", None))["dataset"] == new["dataset"]
    # A run directory started before the folder was fingerprinted: the resume cannot tell, and says why.
    older = {**new, "dataset": {"path": new["dataset"]["path"]}}
    assert mf.diff(older, new) == [f"dataset.beside: folder {folder / 'simulations'} was not fingerprinted when this run "
                                   "directory was started, so whether the files the run read from it changed since cannot be told"]
    # A format that reads no folder beside its file records the file alone.
    native = validate_config({"dataset": {"path": str(folder / "results.json"), "format": "native"}, "metrics": [{"type": "ToolCalls"}]})
    assert set(mf.manifest_for(native)["dataset"]) == {"path"}


def test_a_folder_without_its_results_json_is_a_config_error_naming_it(tmp_path: Path):
    # The run said "no records in it (no file in the folder holds one)" beside a simulations/ folder, or, with simulation
    # files in it, started and made an invalid_input of the missing results.json.
    from tracejudge.core.config import load_config
    from tracejudge.core.errors import ConfigError

    folder = _dir_layout(tmp_path, SIMS)
    (folder / "results.json").unlink()
    cfg = tmp_path / "c.yaml"
    cfg.write_text("dataset: {path: experiment, format: tau2-bench}\nmetrics: [{type: ToolCallAccuracy}]\n")
    with pytest.raises(ConfigError) as refused:
        load_config(cfg)
    assert str(refused.value) == (f"{cfg}:1: dataset.path: {folder} is a folder without results.json; format 'tau2-bench' reads one file, "
                    "or a folder holding results.json (and simulations/)")
