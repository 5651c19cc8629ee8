"""The regression gate says how much of each run it compared, and a sharded run says which shard to resume.

Real `tracejudge` processes on the τ-bench demo (the shared data, read where it lies): a baseline killed with
SIGKILL part-way (its judge slowed by the simulator's latency so the kill lands mid-run), a current run of the
same cases gating on it, runs covering part of the other's cases, and a sweep of two shards whose second shard
is SIGKILLed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from _runs import sigkill_when
import _forkserver

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "configs" / "demo.yaml"
TRACEJUDGE = Path(sys.executable).with_name("tracejudge")
# One deterministic metric and one judged one (the judge is what a slowed simulator makes slow enough to kill mid-run).
METRICS = "metrics=[{type: ToolCorrectness, allow_extra: true}, {type: TaskCompletion}]"


def _cfg(tmp: Path, run_dir: str, *more: str) -> list[str]:
    return ["--set", f"cache.dir={tmp / 'cache'}", "--set", f"run.dir={tmp / run_dir}", "--set", METRICS,
            "--set", "assertions.metrics={}", "--set", "aggregate.group_by=[]", "--set", "run.flush_every=1", *more]


def _tj(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([str(TRACEJUDGE), *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def _killed(args: list[str], results: Path, cwd: Path, at_least: int = 8) -> int:
    """Start `tracejudge run ARGS` with a slow judge, SIGKILL it once `results` holds `at_least` lines; its line count."""
    slow = ["--set", "judge.simulator={latency_ms: 400}", "--set", "limits.max_in_flight=2"]
    proc = _forkserver.popen([str(TRACEJUDGE), "run", *args, *slow, "--no-progress"], cwd=cwd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    sigkill_when(proc, lambda: results.exists() and len(results.read_bytes().splitlines()) >= at_least, "the run wrote no results")
    return len(results.read_bytes().splitlines())


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_an_interrupted_baseline_fails_the_gate_saying_what_was_paired(tmp_path: Path) -> None:
    limit = ["--set", "dataset.limit=40"]
    got = _killed([str(DEMO), *_cfg(tmp_path, "base"), *limit], tmp_path / "base" / "results.jsonl", tmp_path)
    assert 0 < got < 40
    gate = ["--set", f"assertions.regression={{baseline: {tmp_path / 'base'}, max_mean_drop: 0.02}}"]
    run = _tj("run", str(DEMO), *_cfg(tmp_path, "cur"), *limit, *gate, "--no-progress", cwd=tmp_path)
    out = _flat(run.stdout)
    # Before: `ok ToolCorrectness regression … over N paired results`, `verdict: PASS`, exit 0.
    assert run.returncode == 1 and out.endswith("verdict: FAIL"), run.stdout + run.stderr
    assert (f"FAIL regression coverage: {got} of this run's 40 results ({got / 40:.1%}) and {got} of the baseline's {got} results "
            "(100.0%) are paired by (case, trial), required >= 100.0% of each (assertions.regression.min_paired_share)") in out, out
    assert f"{40 - got} results of this run have no baseline result, so their regression is not checked" in out
    assert f"the baseline {tmp_path / 'base'} was interrupted after {got} results: resume it with: " in out
    # The report and junit.xml say the same; so does `report --baseline`.
    assert "regression coverage" in (tmp_path / "cur" / "report.md").read_text()
    failures = [tc for tc in ET.parse(tmp_path / "cur" / "junit.xml").getroot().iter("testcase")
                if tc.get("name") == "regression coverage" and tc.find("failure") is not None]
    assert failures and "was interrupted after" in failures[0].find("failure").get("message")  # type: ignore[union-attr]
    again = _tj("report", str(tmp_path / "cur"), "--baseline", str(tmp_path / "base"), cwd=tmp_path)
    assert again.returncode == 1 and "FAIL regression coverage" in again.stdout, again.stdout + again.stderr

    # A tolerance lets it pass, never in silence: the check holds as a warning.
    lowered = _tj("run", str(DEMO), *_cfg(tmp_path, "cur2"), *limit, *gate, "--set", "assertions.regression.min_paired_share=0.1",
                  "--no-progress", cwd=tmp_path)
    said = _flat(lowered.stdout)
    assert lowered.returncode == 0 and said.endswith("verdict: PASS"), lowered.stdout + lowered.stderr
    assert "warn regression coverage: " in said and "required >= 10.0% of each" in said and "was interrupted after" in said
    assert "warning: " in (tmp_path / "cur2" / "report.md").read_text().split("regression coverage")[1][:40]

    # The baseline finished (the command the check gave), the same runs pair in full: no coverage line at all.
    resumed = _tj("run", str(DEMO), *_cfg(tmp_path, "base"), *limit, "--no-progress", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    full = _tj("report", str(tmp_path / "cur"), "--baseline", str(tmp_path / "base"), cwd=tmp_path)
    assert full.returncode == 0 and "coverage" not in full.stdout, full.stdout + full.stderr
    assert "ToolCorrectness regression: mean" in full.stdout and "over 40 paired results" in full.stdout


def test_runs_covering_part_of_each_other_fail_unless_a_share_is_tolerated(tmp_path: Path) -> None:
    assert _tj("run", str(DEMO), *_cfg(tmp_path, "big"), "--set", "dataset.limit=40", "--no-progress", cwd=tmp_path).returncode == 0
    assert _tj("run", str(DEMO), *_cfg(tmp_path, "small"), "--set", "dataset.limit=8", "--no-progress", cwd=tmp_path).returncode == 0
    # A run of 8 of the baseline's 40 cases: all of it paired, 20% of the baseline.
    part = _tj("report", str(tmp_path / "small"), "--baseline", str(tmp_path / "big"), cwd=tmp_path)
    said = _flat(part.stdout)
    assert part.returncode == 1 and said.endswith("verdict: FAIL"), part.stdout + part.stderr
    assert ("FAIL regression coverage: 8 of this run's 8 results (100.0%) and 8 of the baseline's 40 results (20.0%) are paired"
            in said), said
    assert "32 results of the baseline have none in this run, so they are not compared" in said
    # The other way round: 32 of this run's results have no baseline result.
    grown = _flat(_tj("report", str(tmp_path / "big"), "--baseline", str(tmp_path / "small"), cwd=tmp_path).stdout)
    assert "8 of this run's 40 results (20.0%) and 8 of the baseline's 8 results (100.0%)" in grown
    assert "32 results of this run have no baseline result" in grown and "cases or trials the baseline did not run" in grown
    # Stated tolerance: holds, shown as a warning with the same figures.
    smoke = ["--set", f"assertions.regression={{baseline: {tmp_path / 'big'}, min_paired_share: 0.0}}"]
    ok = _tj("run", str(DEMO), *_cfg(tmp_path, "smoke"), "--set", "dataset.limit=8", *smoke, "--no-progress", cwd=tmp_path)
    assert ok.returncode == 0 and "warn regression coverage: 8 of this run's 8 results" in _flat(ok.stdout), ok.stdout + ok.stderr
    checks = json.loads((tmp_path / "smoke" / "summary.json").read_text())["verdict"]["checks"]
    assert [c for c in checks if c["name"] == "regression coverage"][0]["warning"] is True


def test_min_paired_share_is_a_share(tmp_path: Path) -> None:
    for bad in ("1.5", "-0.1", "true"):
        got = _tj("run", str(DEMO), *_cfg(tmp_path, "r"), "--set", "dataset.limit=2", "--set",
                  f"assertions.regression={{baseline: {tmp_path}, min_paired_share: {bad}}}", "--no-progress", cwd=tmp_path)
        assert got.returncode == 2 and "min_paired_share" in got.stderr, (bad, got.stdout + got.stderr)
        assert "extra" not in got.stderr.lower() and "not permitted" not in got.stderr, got.stderr  # known, refused for its value
        assert not (tmp_path / "r").exists()
    # A share in [0, 1] is a setting of the rule: 1 of the baseline's 2 results paired holds 0.5, as a warning.
    assert _tj("run", str(DEMO), *_cfg(tmp_path, "b"), "--set", "dataset.limit=2", "--no-progress", cwd=tmp_path).returncode == 0
    fine = _tj("run", str(DEMO), *_cfg(tmp_path, "r"), "--set", "dataset.limit=1", "--set",
               f"assertions.regression={{baseline: {tmp_path / 'b'}, min_paired_share: 0.5}}", "--no-progress", cwd=tmp_path)
    assert fine.returncode == 0, fine.stdout + fine.stderr
    assert "warn regression coverage: 1 of this run's 1 result (100.0%) and 1 of the baseline's 2 results (50.0%)" in _flat(fine.stdout)


def test_an_interrupted_shard_is_named_with_its_resume_command(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, "sh", "--set", "dataset.limit=40")
    assert _tj("run", str(DEMO), "--shard", "1/2", *cfg, "--no-progress", cwd=tmp_path).returncode == 0
    got = _killed([str(DEMO), "--shard", "2/2", *cfg], tmp_path / "sh-shard-2-of-2" / "results.jsonl", tmp_path, at_least=4)
    both = _tj("report", str(tmp_path / "sh-shard-1-of-2"), str(tmp_path / "sh-shard-2-of-2"), cwd=tmp_path)
    said = _flat(both.stdout)
    assert both.returncode == 130, both.stdout + both.stderr
    # Before: "the run was interrupted; resume it to finish the remaining cases", no command.
    assert f"shard 2/2 was interrupted ({tmp_path / 'sh-shard-2-of-2'}: {got} results): resume it with: " in said, said
    verdict = both.stdout.strip().splitlines()[-1]
    assert verdict.startswith("verdict: INTERRUPTED (resume with: ") and "--shard 2/2" in verdict, verdict
    summary = json.loads((tmp_path / "sh" / "summary.json").read_text())
    assert [e["shard"] for e in summary["shards"]["interrupted"]] == ["2/2"] and summary["shards"]["missing"] == []
    merged = (tmp_path / "sh" / "results.jsonl").read_bytes()

    # Shard 1 alone: shard 2's directory is there, so it is described, never "missing"; the merge of both is kept.
    lone = _tj("report", str(tmp_path / "sh-shard-1-of-2"), cwd=tmp_path)
    alone = _flat(lone.stdout)
    assert lone.returncode == 130, lone.stdout + lone.stderr
    assert "no run directory" not in alone, alone
    assert f"{tmp_path / 'sh-shard-2-of-2'} holds it (interrupted, {got} results; resume it with: " in alone, alone
    assert "--shard 2/2" in lone.stdout.strip().splitlines()[-1]
    assert (tmp_path / "sh" / "results.jsonl").read_bytes() == merged  # not overwritten with shard 1's results only
    assert "does not replace it with part of it, so nothing was written" in alone

    # The command given resumes shard 2; the sweep then passes.
    command = verdict.removeprefix("verdict: INTERRUPTED (resume with: ").removesuffix(")")
    env = {**os.environ, "PATH": f"{TRACEJUDGE.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    resumed = _forkserver.run(command, shell=True, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    done = _tj("report", str(tmp_path / "sh"), cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.strip().endswith("verdict: PASS"), done.stdout + done.stderr
    assert "interrupted" not in json.loads((tmp_path / "sh" / "summary.json").read_text())["shards"]
