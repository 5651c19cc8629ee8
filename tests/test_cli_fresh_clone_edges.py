"""Edges a first-time user meets from a fresh clone, each through the real CLI in a real process.

A folder of otel exports with files the include globs skip, `compare … | head -1`, `extract` over invalid
records, `--shard I/N --run-dir X`, `--run-dir . --fresh`, and `--log-level` after the command.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from _runs import native_case, planted_runs, write_config, write_dataset
import _forkserver

EXE = os.path.join(os.path.dirname(sys.executable), "tracejudge")
FRAMEWORKS = Path(__file__).resolve().parent / "data" / "frameworks"


def _tj(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return _forkserver.run([EXE, *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def test_an_otel_folder_says_once_how_many_files_the_globs_skipped(tmp_path: Path) -> None:
    exports = tmp_path / "exports"
    exports.mkdir()
    shutil.copy(FRAMEWORKS / "langfuse-otel" / "booking.jsonl", exports / "booking.jsonl")
    shutil.copy(FRAMEWORKS / "langfuse-otel" / "booking.jsonl", exports / "booking.otlp")  # an export under a name no glob matches
    (exports / "notes.txt").write_text("not an export\n")
    (tmp_path / "c.yaml").write_text("dataset: {path: exports, format: otel}\nmetrics: [{type: ToolCorrectness}]\nrun: {dir: run}\n")
    ext = _tj("extract", "c.yaml", "-o", "out.jsonl", cwd=tmp_path)
    assert ext.returncode == 0, ext.stderr
    assert ext.stderr.count("2 files under") == 1 and "booking.otlp, notes.txt" in ext.stderr and "match no include glob" in ext.stderr
    run = _tj("run", "c.yaml", "--no-progress", cwd=tmp_path)
    assert run.stderr.count("files under") == 1, run.stderr
    quiet = _tj("run", "c.yaml", "--no-progress", "--set", "dataset.options.include=['**/*.jsonl', '**/*.otlp', '**/*.txt']",
                "--run-dir", "run2", cwd=tmp_path)
    assert "files under" not in quiet.stderr


def test_compare_into_a_closed_pipe_ends_quietly_with_141(tmp_path: Path) -> None:
    planted_runs(tmp_path, n=3000)
    # As `compare … | head -1` once head has gone. (Through a shell, whether head had closed its end before compare wrote
    # its table, 5 KB, which a pipe's buffer holds, was a matter of scheduling: on a busy machine compare ended 0.)
    read, write = os.pipe()
    os.close(read)
    try:
        proc = _forkserver.run([EXE, "compare", "run-a", "run-b"], stdout=write, stderr=subprocess.PIPE, text=True, cwd=tmp_path, timeout=300)
    finally:
        os.close(write)
    assert proc.returncode == 141 and proc.stderr == "", proc.stderr


def test_extract_exits_1_when_a_record_is_invalid_and_0_when_none_is(tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "cases.jsonl", [native_case("a", ["x"], ["x"]), '{"id": "broken", '])
    cfg = write_config(tmp_path / "c.yaml", data, tmp_path / "run")
    bad = _tj("extract", str(cfg), "-o", "out.jsonl", cwd=tmp_path)
    assert bad.returncode == 1 and "cases.jsonl:2" in bad.stderr and "1 record was invalid" in bad.stderr
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 1  # the valid case is still written
    write_dataset(data, [native_case("a", ["x"], ["x"])])
    assert _tj("extract", str(cfg), "-o", "out.jsonl", "--force", cwd=tmp_path).returncode == 0  # (replacing the first)


def test_shard_with_run_dir_writes_that_directory_as_given(tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "cases.jsonl", [native_case(f"c{i}", ["x"], ["x"]) for i in range(40)])
    cfg = write_config(tmp_path / "c.yaml", data, tmp_path / "run")
    proc = _tj("run", str(cfg), "--shard", "2/2", "--run-dir", "X", "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "X" / "results.jsonl").exists() and not (tmp_path / "X-shard-2-of-2").exists()
    manifest = json.loads((tmp_path / "X" / "manifest.json").read_text())
    assert manifest["shard"] == {"index": 2, "count": 2}
    assert 0 < len((tmp_path / "X" / "results.jsonl").read_text().splitlines()) < 40


def test_log_level_works_after_the_command_as_before_it(tmp_path: Path) -> None:
    # Users type the option where they type the others; before this, `run c.yaml --log-level info` was a usage error (2).
    write_dataset(tmp_path / "cases.jsonl", [native_case("c1", ["lookup"], ["lookup"])])
    (tmp_path / "c.yaml").write_text("dataset: {path: cases.jsonl, format: native}\nmetrics: [{type: ToolCorrectness}]\nrun: {dir: run}\n")
    after = _tj("run", "c.yaml", "--no-progress", "--log-level", "info", cwd=tmp_path)
    assert after.returncode == 0, after.stderr
    assert '"level": "info"' in after.stderr
    default = _tj("run", "c.yaml", "--no-progress", "--fresh", cwd=tmp_path)
    assert default.returncode == 0 and '"level": "info"' not in default.stderr
    before = _tj("--log-level", "info", "run", "c.yaml", "--no-progress", "--fresh", cwd=tmp_path)
    assert before.returncode == 0 and '"level": "info"' in before.stderr
    bogus = _tj("run", "c.yaml", "--log-level", "verbose", cwd=tmp_path)  # a typo is a usage error, not silently the default
    assert bogus.returncode == 2 and "invalid choice: 'verbose'" in bogus.stderr


def test_fresh_with_run_dir_dot_starts_beside_the_current_folder(tmp_path: Path) -> None:
    # A user who ran once with `--run-dir .` and then asks for a fresh start got "internal error: ValueError".
    work = tmp_path / "work"
    work.mkdir()
    write_dataset(work / "cases.jsonl", [native_case("c1", ["lookup"], ["lookup"])])
    (work / "c.yaml").write_text("dataset: {path: cases.jsonl, format: native}\nmetrics: [{type: ToolCorrectness}]\n")
    assert _tj("run", "c.yaml", "--no-progress", "--run-dir", ".", cwd=work).returncode == 0
    again = _tj("run", "c.yaml", "--no-progress", "--run-dir", ".", "--fresh", cwd=work)
    assert again.returncode == 0, again.stdout + again.stderr
    assert (tmp_path / "work-2" / "results.jsonl").exists() and not (work / "crash.log").exists()


def test_a_folder_holding_its_own_report_is_not_written_over(tmp_path: Path) -> None:
    # `--run-dir .` in a project folder wrote report.md, report.html, junit.xml and summary.json over the user's own.
    work = tmp_path / "work"
    work.mkdir()
    write_dataset(work / "cases.jsonl", [native_case("c1", ["lookup"], ["lookup"])])
    (work / "c.yaml").write_text("dataset: {path: cases.jsonl, format: native}\nmetrics: [{type: ToolCorrectness}]\n")
    (work / "report.md").write_text("# my own notes\n")
    (work / "junit.xml").write_text("<testsuites/>\n")
    refused = _tj("run", "c.yaml", "--no-progress", "--run-dir", ".", cwd=work)
    assert refused.returncode == 2 and "is not a run directory, but holds report.md, junit.xml" in refused.stderr, refused.stderr
    assert (work / "report.md").read_text() == "# my own notes\n" and not (work / "results.jsonl").exists()
    assert not (work / "manifest.json").exists() and sorted(p.name for p in work.iterdir()) == ["c.yaml", "cases.jsonl", "junit.xml", "report.md"]
    # Other files beside the run are no obstacle; a run directory is resumed as before; --fresh starts beside it.
    (work / "report.md").unlink()
    (work / "junit.xml").unlink()
    assert _tj("run", "c.yaml", "--no-progress", "--run-dir", ".", cwd=work).returncode == 0
    again = _tj("run", "c.yaml", "--no-progress", "--run-dir", ".", cwd=work)
    assert again.returncode == 0 and "0 new results, 1 already finished" in again.stdout, again.stdout
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "report.md").write_text("mine\n")
    assert _tj("run", "c.yaml", "--no-progress", "--run-dir", "../other", "--fresh", cwd=work).returncode == 0
    assert (tmp_path / "other" / "report.md").read_text() == "mine\n" and (tmp_path / "other-2" / "results.jsonl").exists()


def test_a_web_projects_manifest_or_a_dataset_named_traces_jsonl_is_not_written_over(tmp_path: Path) -> None:
    # A folder's own manifest.json (a web app's) made it pass for a run directory, and the run replaced it.
    work = tmp_path / "work"
    work.mkdir()
    write_dataset(work / "cases.jsonl", [native_case("c1", ["lookup"], ["lookup"])])
    (work / "c.yaml").write_text("dataset: {path: cases.jsonl, format: native}\nmetrics: [{type: ToolCorrectness}]\n")
    pwa = '{"name": "My PWA", "start_url": "/", "icons": []}\n'
    (work / "manifest.json").write_text(pwa)
    (work / "traces.jsonl").write_text("{}\n")
    refused = _tj("run", "c.yaml", "--no-progress", "--run-dir", ".", cwd=work)
    assert refused.returncode == 2 and "holds manifest.json, traces.jsonl, which a run writes" in refused.stderr, refused.stderr
    assert (work / "manifest.json").read_text() == pwa and (work / "traces.jsonl").read_text() == "{}\n"
    assert _tj("run", "c.yaml", "--no-progress", "--run-dir", ".", "--fresh", cwd=work).returncode == 0
    assert (work / "manifest.json").read_text() == pwa and (tmp_path / "work-2" / "results.jsonl").exists()


def test_every_file_a_run_writes_is_one_a_folder_no_run_made_is_checked_for(tmp_path: Path) -> None:
    # The list `foreign_files` checks stays the run's: a run with a live target, a judge and a budget journal.
    from tracejudge.engine.run_state import RUN_MARKS, RUN_WRITES

    (tmp_path / "agent.py").write_text("def respond(request):\n    return {'output': 'done'}\n")
    write_dataset(tmp_path / "cases.jsonl", [{"id": "c1", "input": "q"}])
    (tmp_path / "c.yaml").write_text("dataset: {path: cases.jsonl, format: native}\ntarget: {kind: python, callable: agent:respond}\n"
                                     "metrics: [{type: Contains, value: done}, {type: TaskCompletion}]\n"
                                     "judge: {provider: simulator, model: gpt-4o-mini}\nbudget: {max_cost_usd: 5}\nrun: {dir: run}\n")
    done = _tj("run", "c.yaml", "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    written = {p.name for p in (tmp_path / "run").iterdir()}
    assert written - set(RUN_WRITES) - set(RUN_MARKS) == set() and {"traces.jsonl", "manifest.json", "results.jsonl"} <= written
