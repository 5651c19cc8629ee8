"""A metric that raises (or is cut at `run.metric_timeout_s`) fails the gate by default: `assertions.max_metric_error_share`.

Its score is not computed, as a case's is when it lacks what the metric needs; unlike that, it is the metric's failure,
counted per metric as `raised` (summary.json, the tables, junit.xml) and bounded by the gate, as a scorer error
fails an inspect-ai eval. Real runs of a real metric file; a real SIGKILL for the checkpointed count.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tracejudge.core.records import Case, CaseResult, Score
from tracejudge.engine import store
from tracejudge.engine.checkpoint import RunJournal
from tracejudge.engine.rendered import Finished, render
from tracejudge.stages.aggregate.fold import Aggregator
from tracejudge.stages.aggregate.state import dump_state, restore
import _forkserver

CHECKS = '''\
import tracejudge as tj


@tj.metric
def broken(case: tj.Case, trace: tj.Trace) -> float:
    if case.id.startswith("bad"):
        return 1 / 0  # a bug in the metric
    return 1.0
'''


def _case(cid: str, expected: bool = True) -> dict:
    case = {"id": cid, "trace": {"steps": [{"tool_calls": [{"name": "t", "arguments": {"a": 1}}]}], "output": "ok"}}
    if expected:
        case["expected_tool_calls"] = [{"name": "t", "arguments": {"a": 1}}]
    return case


def _run(tmp_path: Path, ids: list[str], extra: str = "", processes: int = 1, expected: bool = True) -> tuple[subprocess.CompletedProcess, dict]:
    (tmp_path / "checks.py").write_text(CHECKS)
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(_case(i, expected or not i.startswith("plain"))) + "\n" for i in ids))
    (tmp_path / "eval.yaml").write_text("dataset: {path: data.jsonl, format: native}\n"
                                        'metrics: [{type: ToolCalls}, {type: "checks:broken"}]\n'
                                        f"run: {{dir: runs/eval, processes: {processes}}}\n" + extra)
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", "run", "eval.yaml", "--no-progress"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    summary = json.loads((tmp_path / "runs" / "eval" / "summary.json").read_text())
    return proc, summary


IDS = ["ok-0", "bad-1", "ok-2", "bad-3", "bad-4", "ok-5", "bad-6"]


@pytest.mark.parametrize("processes", [1, 2])
def test_a_raising_custom_metric_fails_the_gate_naming_the_metric_the_count_and_the_first_reasons(tmp_path: Path, processes: int) -> None:
    proc, summary = _run(tmp_path, IDS, processes=processes)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    broken = summary["metrics"]["broken"]
    assert (broken["scored"], broken["not_computed"], broken["raised"]) == (3, 4, 4)
    assert "raised" not in summary["metrics"]["ToolCalls"]
    lines = proc.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if "max_metric_error_share" in line)
    assert lines[at].strip() == ("FAIL broken max_metric_error_share: metric 'broken' raised or timed out on 4 of 7 results (not computed "
                                 "because of the metric, not of the case) = 57.1%, allowed <= 0.0% (assertions.max_metric_error_share)")
    where = f"(at {tmp_path / 'checks.py'}:7, in broken)"
    assert [line.strip() for line in lines[at + 1:at + 4]] == [
        f"case {cid!r}: metric raised ZeroDivisionError: division by zero {where}" for cid in ("bad-1", "bad-3", "bad-4")]
    assert lines[at + 4].strip() == "… and 1 more"  # (bad-6: the list says it was cut)
    assert lines[-1] == "verdict: FAIL"
    # The table and report.md name them in the not computed cell; junit.xml fails the gate's test case.
    assert "4 (4 raised)" in proc.stdout
    run_dir = tmp_path / "runs" / "eval"
    assert "| broken | 3 of 7 | 0 | 4 (4 raised) |" in (run_dir / "report.md").read_text()
    junit = (run_dir / "junit.xml").read_text()
    assert '<testcase classname="tracejudge.gate" name="broken max_metric_error_share">\n      <failure type="gate"' in junit
    assert junit.count('<skipped type="metric_error" message="metric raised ZeroDivisionError') == 4


@pytest.mark.parametrize(("extra", "where"), [
    ("assertions: {max_metric_error_share: 0.6}\n", "assertions.max_metric_error_share"),
    ("assertions: {metrics: {broken: {max_metric_error_share: 0.6}}}\n", "assertions.metrics.broken.max_metric_error_share"),
    ('assertions: {metrics: {"*": {max_metric_error_share: 0.6}}}\n', 'assertions.metrics.*.max_metric_error_share'),
])
def test_an_allowed_share_passes(tmp_path: Path, extra: str, where: str) -> None:
    proc, summary = _run(tmp_path, IDS, extra)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert summary["metrics"]["broken"]["raised"] == 4
    assert (f"ok   broken max_metric_error_share: metric 'broken' raised or timed out on 4 of 7 results (not computed because of "
            f"the metric, not of the case) = 57.1%, allowed <= 60.0% ({where})") in proc.stdout
    assert proc.stdout.splitlines()[-1] == "verdict: PASS"


def test_the_limit_of_a_metric_named_with_a_dot_is_named_in_brackets() -> None:
    # `(assertions.metrics.broken.v2.max_metric_error_share)` read as a key `v2` of a metric `broken`.
    from tracejudge.core.evalconfig import AssertionsConfig
    from tracejudge.stages.aggregate.gate_metric_error import metric_error_checks

    assertions = AssertionsConfig.model_validate({"metrics": {"broken.v2": {"max_metric_error_share": 0.5}}})
    (check,) = metric_error_checks(assertions, {"metrics": {"broken.v2": {"results": 3, "raised": 1}}}, None)
    assert check.ok and check.detail.endswith('allowed <= 50.0% (assertions.metrics["broken.v2"].max_metric_error_share)'), check


def test_the_limit_named_goes_back_into_set_as_the_rule_it_came_from(tmp_path: Path) -> None:
    # The catch-all was named `assertions.metrics."*".max_metric_error_share`, which `--set` reads as a metric named `"*"`
    # (quotes and all), so the limit a user copied from the gate line set a rule no metric has.
    from tracejudge.core.config import load_config
    from tracejudge.core.evalconfig import AssertionsConfig
    from tracejudge.stages.aggregate.gate_metric_error import metric_error_checks

    (tmp_path / "data.jsonl").write_text("")
    cfg = tmp_path / "eval.yaml"
    cfg.write_text('dataset: {path: data.jsonl}\nmetrics: [{type: ToolCalls, name: tool.acc}]\n'
                   'assertions: {metrics: {"*": {max_metric_error_share: 0.5}, tool.acc: {min_mean: 0.1}}}\n')
    for rules, rule in [({"*": {"max_metric_error_share": 0.5}}, "*"), ({"tool.acc": {"max_metric_error_share": 0.5}}, "tool.acc")]:
        (check,) = metric_error_checks(AssertionsConfig.model_validate({"metrics": rules}), {"metrics": {"tool.acc": {"results": 4, "raised": 1}}}, None)
        where = check.detail.rsplit("(", 1)[1].rstrip(")")
        assert where == ("assertions.metrics.*.max_metric_error_share" if rule == "*" else 'assertions.metrics["tool.acc"].max_metric_error_share')
        got = load_config(cfg, [f"{where}=0.25"]).assertions.metrics
        assert got[rule].max_metric_error_share == 0.25 and set(got) == {"*", "tool.acc"}, got


def test_a_metric_own_limit_overrides_the_assertions_one(tmp_path: Path) -> None:
    proc, _ = _run(tmp_path, IDS, "assertions: {max_metric_error_share: 1.0, metrics: {broken: {max_metric_error_share: 0.5}}}\n")
    assert proc.returncode == 1
    assert "FAIL broken max_metric_error_share: metric 'broken' raised or timed out on 4 of 7 results" in proc.stdout
    assert "allowed <= 50.0% (assertions.metrics.broken.max_metric_error_share)" in proc.stdout
    # ToolCalls raised nowhere, and the limit above 0 is shown as held.
    assert "ok   ToolCalls max_metric_error_share: metric 'ToolCalls' raised or timed out on 0 of 7 results" in proc.stdout


def test_a_metric_not_applicable_to_a_case_does_not_trip_it(tmp_path: Path) -> None:
    # ToolCalls cannot score a case without expected_tool_calls: not computed, no exception, no metric error; beside it
    # `broken` raises on one case in four, which its own limit allows.
    proc, summary = _run(tmp_path, ["ok-0", "plain-1", "bad-2", "plain-3"], "assertions: {metrics: {broken: {max_metric_error_share: 0.5}}}\n",
                         expected=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    tool_calls, broken = summary["metrics"]["ToolCalls"], summary["metrics"]["broken"]
    assert (tool_calls["scored"], tool_calls["not_computed"]) == (2, 2) and "raised" not in tool_calls
    assert (broken["scored"], broken["not_computed"], broken["raised"]) == (3, 1, 1)
    assert "ToolCalls max_metric_error_share" not in proc.stdout
    assert "ok   broken max_metric_error_share: metric 'broken' raised or timed out on 1 of 4 results" in proc.stdout
    table = next(line for line in proc.stdout.splitlines() if line.strip().startswith("ToolCalls"))
    assert "raised" not in table and "1 (1 raised)" in proc.stdout


def test_a_rendered_result_never_holds_a_score_whose_metric_raised_and_both_paths_count_alike() -> None:
    case = Case(id="c1", tags=["x"], trace={"steps": []})
    keys = ["a", "b"]
    raised = {"a": Score(value=None, reason="metric raised ValueError: no (at m.py:3, in a)"), "b": Score(value=1.0, passed=True)}
    assert render(case, raised, keys) is None  # the general path, whose result keeps the reason the aggregate counts
    cut = {"a": Score(value=None, reason="metric_timeout: metric a did not return within 1 s (run.metric_timeout_s)"),
           "b": Score(value=None, reason="not computed: the case has no output")}
    done = render(case, cut, keys)
    assert done is not None and done.timed_out == ("a",)
    assert b'<skipped type="metric_error" message="metric_timeout: ' in done.junit[0] and b"metric_error" not in done.junit[1]
    fast, slow, one_by_one = Aggregator(keys), Aggregator(keys), Aggregator(keys)
    fast.fold_finished([Finished(done, t) for t in range(6)])
    for t in range(6):
        slow.fold(CaseResult(case_id="c1", trial=t, tags=["x"], scores=cut))
        one_by_one.fold(Finished(done, t))
    assert fast.summary() == slow.summary() == one_by_one.summary()
    got = slow.summary()
    assert got["metrics"]["a"]["raised"] == got["breakdowns"]["tag"]["x"]["metrics"]["a"]["raised"] == 6
    assert "raised" not in got["metrics"]["b"] and got["metrics"]["b"]["not_computed"] == 6


def test_the_checkpointed_state_keeps_the_count() -> None:
    agg = Aggregator(["m"])
    for i in range(10):
        score = Score(value=None, reason="metric raised KeyError: 'x'") if i % 3 == 0 else Score(value=0.5, passed=False)
        agg.fold(CaseResult(case_id=f"c{i}", tags=["t"], scores={"m": score}))
    state = json.loads(json.dumps(dump_state(agg)))
    back = restore(state, Aggregator(["m"]))
    assert back.summary() == agg.summary()
    assert back.summary()["metrics"]["m"]["raised"] == back.summary()["breakdowns"]["tag"]["t"]["metrics"]["m"]["raised"] == 4


CHILD = """
import sys
from tracejudge.core.records import CaseResult, Score
from tracejudge.engine import journal_checkpoint
from tracejudge.engine.checkpoint import RunJournal
from tracejudge.stages.aggregate.fold import Aggregator
journal_checkpoint.CHECKPOINT_EVERY_S = 0.0  # a checkpoint every CHECKPOINT_EVERY_RESULTS results
j = RunJournal.open(sys.argv[1], metric_keys=["m"], new_aggregator=lambda: Aggregator(["m"]), config_hash="h", flush_every=10)
i = 0
while True:
    score = Score(value=None, reason="metric raised ZeroDivisionError: division by zero") if i % 7 == 0 else Score(value=1.0, passed=True)
    j.record(CaseResult(case_id=f"c{i}", scores={"m": score}))
    i += 1
"""


def test_a_resume_after_sigkill_keeps_the_count(tmp_path: Path) -> None:
    proc = _forkserver.popen([sys.executable, "-c", CHILD, str(tmp_path)])
    checkpoint = tmp_path / store.CHECKPOINT
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if json.loads(checkpoint.read_text())["results_lines"] >= 1000:
                    break
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.02)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    held = json.loads(checkpoint.read_text())
    assert held["results_lines"] >= 1000
    assert dict(held["aggregator"]["metrics"])["m"]["raised"] > 0  # the state holds the count
    lines = (tmp_path / store.RESULTS).read_bytes().split(b"\n")[:-1]
    j = RunJournal.open(tmp_path, metric_keys=["m"], new_aggregator=lambda: Aggregator(["m"]), config_hash="h", flush_every=10)
    try:
        assert not j.recovery.get("rebuilt") and j.recovery["tail_results"] == len(lines) - held["results_lines"]  # reused
        want = sum(1 for line in lines if b"metric raised" in line)
        assert j.agg.summary()["metrics"]["m"]["raised"] == want == -(-len(lines) // 7)
    finally:
        j.close("finished")
