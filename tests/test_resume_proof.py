"""A resume proves its config, and `run`, `report` and `compare` read damaged run directories by one rule (real processes and files)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import _forkserver

TRACEJUDGE = Path(sys.executable).with_name("tracejudge")
N = 300
CONFIG = "dataset: {path: cases.jsonl}\nmetrics:\n  - {type: ExactMatch%s}\nrun: {dir: out, processes: 1, flush_every: 16}\n"


def _tj(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([str(TRACEJUDGE), *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def _workspace(root: Path, extra: str = "") -> Path:
    with open(root / "cases.jsonl", "w") as fh:
        for i in range(N):
            fh.write(json.dumps({"id": f"c{i}", "input": "hi", "expected_output": "hello" if i % 3 else "Hello",
                                 "trace": {"steps": [{"thought": "ok"}], "output": "hello"}}) + "\n")
    (root / "run.yaml").write_text(CONFIG % extra)
    return root


def _killed_early(out: Path, keep: int = 120) -> None:
    # What a run killed before its first summary leaves (results only), its manifest garbled and derived files gone.
    lines = (out / "results.jsonl").read_text().splitlines(keepends=True)
    (out / "results.jsonl").write_text("".join(lines[:keep]))
    for name in ("results.idx", "summary.json", "checkpoint.json"):
        (out / name).unlink()
    (out / "manifest.json").write_text("{garbled")


def _run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _tj(root, "run", "run.yaml", "--no-progress", *args)


def test_a_changed_config_cannot_resume_when_manifest_is_garbled_and_checkpoint_and_summary_are_gone(tmp_path):
    root = _workspace(tmp_path)
    assert _run(root).returncode == 0
    out = root / "out"
    _killed_early(out)
    (root / "run.yaml").write_text(CONFIG % ", case_sensitive: true")
    refused = _run(root)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "cannot resume" in refused.stderr and "case_sensitive" in refused.stderr  # the key-by-key diff, from configs.jsonl
    assert len((out / "results.jsonl").read_text().splitlines()) == 120  # nothing written

    # Nothing left that records the config: the resume cannot prove it is the same, so it refuses too.
    (out / "configs.jsonl").unlink()
    (out / "manifest.json").write_text("{garbled")
    unproven = _run(root)
    assert unproven.returncode == 2 and "nothing else" in unproven.stderr, unproven.stderr
    forced = _run(root, "--force")
    assert forced.returncode == 0, forced.stderr
    assert json.loads((out / "summary.json").read_text())["results"] == N


def test_the_same_config_resumes_from_configs_jsonl_alone(tmp_path):
    root = _workspace(tmp_path)
    assert _run(root).returncode == 0
    out = root / "out"
    _killed_early(out)
    again = _run(root)
    assert again.returncode == 0, again.stderr
    assert len((out / "results.jsonl").read_text().splitlines()) == N
    assert len((out / "configs.jsonl").read_text().splitlines()) == 1  # one config: one entry, however many resumes


def test_run_report_and_compare_agree_on_a_line_overwritten_with_a_copy_of_another(tmp_path):
    root = _workspace(tmp_path)
    assert _run(root, "--run-dir", "clean").returncode == 0
    assert _run(root).returncode == 0
    results = root / "out" / "results.jsonl"
    lines = results.read_text().splitlines(keepends=True)
    lost = json.loads(lines[50])["case_id"]
    lines[50] = lines[10]
    results.write_text("".join(lines))
    again = _run(root)
    assert again.returncode == 0, again.stderr
    assert "repeated result line skipped" in again.stderr and '"line": 51' in again.stderr
    summary = json.loads((root / "out" / "summary.json").read_text())
    assert summary["results"] == N
    assert lost in {json.loads(x)["case_id"] for x in results.read_text().splitlines()[N:]}  # the lost case was redone
    rep = _tj(root, "report", "out")
    assert rep.returncode == 0, rep.stdout + rep.stderr  # one rule: the repeat is named, the run's count holds
    assert "repeats an earlier line" in rep.stderr + rep.stdout
    assert json.loads((root / "out" / "summary.json").read_text())["results"] == N
    cmp = _tj(root, "compare", "clean", "out", "--json")
    body = json.loads(cmp.stdout)
    assert body["paired"] == N and body["results_b"] == N and body["repeats_b"] == 1, body
    assert body["repeated_b"] == [f"{json.loads(lines[10])['case_id']}#0"]
    text = _tj(root, "compare", "clean", "out")
    assert "repeat a (case, trial) already read" in text.stdout


def _forge_moments(cp: dict) -> None:
    cp["aggregator"]["metrics"][0][1]["moments"]["n"] = 10**30


def _forge_segments(cp: dict) -> None:
    cp["segments"] = [{"segment": "one", "results": "many", "ended": 5}]


def _forge_provisional(cp: dict) -> None:
    cp["provisional"] = {str(k): "{}" for k in range(50_000)}


@pytest.mark.parametrize("forge", [_forge_moments, _forge_segments, _forge_provisional])
def test_checkpoint_values_that_validate_but_are_absurd_are_rebuilt_with_a_warning(tmp_path, forge):
    root = _workspace(tmp_path)
    assert _run(root).returncode == 0
    out = root / "out"
    want = json.loads((out / "summary.json").read_text())["metrics"]
    cp = json.loads((out / "checkpoint.json").read_text())
    forge(cp)
    (out / "checkpoint.json").write_text(json.dumps(cp))
    for n in range(2):  # the run that meets it warns and rebuilds; the next finds a sound checkpoint
        again = _run(root)
        assert again.returncode == 0, again.stderr
        assert ("checkpoint not reused" in again.stderr) == (n == 0), again.stderr
        got = json.loads((out / "summary.json").read_text())
        assert got["results"] == N and got["metrics"] == want


def test_report_names_a_line_whose_score_value_was_edited_into_an_object(tmp_path):
    root = _workspace(tmp_path)
    assert _run(root).returncode == 0
    results = root / "out" / "results.jsonl"
    lines = results.read_text().splitlines()
    edited = json.loads(lines[3])
    edited["scores"]["ExactMatch"]["value"] = {"a": 1}
    lines[3] = json.dumps(edited)
    results.write_text("\n".join(lines) + "\n")
    rep = _tj(root, "report", "out")
    assert rep.returncode == 1, rep.stdout + rep.stderr  # a FAIL (a result is lost), not an internal error
    assert "internal error" not in rep.stderr and "results.jsonl:4" in rep.stdout + rep.stderr
