"""Case-level metrics: added for that case only, and overriding a run-level metric of the same name."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import tracejudge
import _forkserver

TRACEJUDGE = Path(sys.executable).with_name("tracejudge")

# The agent searched, fetched, then summarized; the case expected search → summarize.
TRACE = {
    "steps": [
        {"tool_calls": [{"name": "search", "arguments": {"q": "paris"}}]},
        {"tool_calls": [{"name": "fetch", "arguments": {"url": "u"}}]},
        {"tool_calls": [{"name": "summarize", "arguments": {}}]},
    ]
}
EXPECTED = [{"name": "search", "arguments": {"q": "paris"}}, {"name": "summarize"}]


def _cases() -> list[dict[str, object]]:
    return [
        {"id": "plain", "expected_tool_calls": EXPECTED, "trace": TRACE},
        # Same name as a run-level metric: replaces it for this case.
        {"id": "override", "expected_tool_calls": EXPECTED, "trace": TRACE, "metrics": [{"type": "TrajectoryMatch", "order": "exact"}]},
        # A new name: added for this case only.
        {"id": "extra", "expected_tool_calls": EXPECTED, "trace": TRACE, "metrics": [{"type": "ToolCorrectness", "name": "only_here", "allow_extra": True}]},
        {"id": "bad-spec", "expected_tool_calls": EXPECTED, "trace": TRACE, "metrics": [{"type": "NoSuchMetric"}]},
    ]


def test_case_level_metrics_add_to_and_override_the_run_metrics_for_their_case_only():
    report = tracejudge.evaluate(_cases(), [tracejudge.TrajectoryMatch(order="in_order", score="recall"), tracejudge.ToolCalls()])
    plain, override, extra, bad = (report.result(c) for c in ("plain", "override", "extra", "bad-spec"))

    # Run level: in_order recall = LCS 2 / 2 expected.
    assert list(plain.scores) == ["TrajectoryMatch", "ToolCalls"]
    assert plain.scores["TrajectoryMatch"].value == 1.0
    assert plain.scores["ToolCalls"].value == 0.8  # 2 pairs: precision 2/3, recall 1 → F1 0.8

    # Overridden: exact order, so fetch in the middle fails it.
    assert list(override.scores) == ["ToolCalls", "TrajectoryMatch"]
    assert override.scores["TrajectoryMatch"].value == 0.0
    assert override.scores["TrajectoryMatch"].reason.startswith("trajectory ['search', 'fetch', 'summarize'] does not equal expected ['search', 'summarize']")
    assert override.scores["ToolCalls"].value == 0.8

    # Added for "extra" only.
    assert list(extra.scores) == ["TrajectoryMatch", "ToolCalls", "only_here"]
    assert extra.scores["only_here"].value == 1.0 and extra.scores["TrajectoryMatch"].value == 1.0
    assert all("only_here" not in r.scores for r in (plain, override))

    # A bad case-level spec costs that metric only (null, the field and error in the reason); the case still scores.
    assert bad.status.value == "ok" and bad.error is None
    assert list(bad.scores) == ["TrajectoryMatch", "ToolCalls", "NoSuchMetric"]
    assert bad.scores["NoSuchMetric"].value is None and bad.scores["NoSuchMetric"].passed is None
    assert bad.scores["NoSuchMetric"].reason.startswith("not computed: case metric spec metrics.0.type does not validate: unknown metric type 'NoSuchMetric'")
    assert bad.scores["ToolCalls"].value == 0.8

    figures = report.metrics
    assert (figures["TrajectoryMatch"].scored, figures["TrajectoryMatch"].mean) == (4, 0.75)
    # The case-only metric counts the one case that has it, whatever order results came in.
    assert (figures["only_here"].scored, figures["only_here"].not_computed) == (1, 0)
    assert report.status == {"ok": 4}


def test_case_level_metrics_from_a_native_file_through_the_cli(tmp_path):
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in _cases()))
    (tmp_path / "run.yaml").write_text(
        "dataset: {path: cases.jsonl}\nmetrics:\n  - {type: TrajectoryMatch, order: in_order, score: recall}\n  - {type: ToolCalls}\nrun: {dir: out}\n"
    )
    proc = _forkserver.run([str(TRACEJUDGE), "run", "run.yaml", "--no-progress"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    cli = {}
    for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines():
        data = json.loads(line)
        data.pop("duration_s")
        cli[data["case_id"]] = data
    report = tracejudge.evaluate(_cases(), [{"type": "TrajectoryMatch", "order": "in_order", "score": "recall"}, {"type": "ToolCalls"}])
    api = {r.case_id: r.model_dump(mode="json", exclude={"duration_s"}) for r in report.results}
    assert cli["bad-spec"]["error"] is None and cli["bad-spec"]["scores"]["NoSuchMetric"]["value"] is None
    assert cli == api


def test_two_case_metrics_of_one_name_make_the_case_invalid(tmp_path):
    # Two of a case's own metrics keyed alike: the last one used to win silently.
    cases = [
        {"id": "twice", "expected_tool_calls": EXPECTED, "trace": TRACE,
         "metrics": [{"type": "Contains", "value": "x"}, {"type": "Contains", "value": "y"}]},
        {"id": "twice-named", "expected_tool_calls": EXPECTED, "trace": TRACE,
         "metrics": [{"type": "Contains", "name": "c", "value": "x"}, {"type": "ExactMatch", "name": "c"}]},
        {"id": "judged", "expected_tool_calls": EXPECTED, "trace": TRACE, "metrics": [{"type": "Rubric", "criteria": "is it polite?"}]},
        {"id": "plain", "expected_tool_calls": EXPECTED, "trace": TRACE},
    ]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    for processes in (1, 2):  # scored in this process, and in worker processes
        (tmp_path / "run.yaml").write_text(f"dataset: {{path: cases.jsonl}}\nmetrics: [{{type: ToolCalls}}]\nrun: {{dir: out-{processes}, processes: {processes}}}\n")
        proc = _forkserver.run([str(TRACEJUDGE), "run", "run.yaml", "--no-progress"], cwd=tmp_path, capture_output=True, text=True)
        assert proc.returncode == 1, proc.stderr  # two invalid cases fail the gate; the run went on
        got = {r["case_id"]: r for r in map(json.loads, (tmp_path / f"out-{processes}" / "results.jsonl").read_text().splitlines())}
        assert got["twice"]["status"] == got["twice-named"]["status"] == "invalid_input"
        where = {k: (got[k]["error"]["file"], got[k]["error"]["line"], got[k]["error"]["field"]) for k in ("twice", "twice-named")}
        assert where == {"twice": (str(tmp_path / "cases.jsonl"), 1, "metrics.1.type"), "twice-named": (str(tmp_path / "cases.jsonl"), 2, "metrics.1.name")}
        assert got["twice"]["error"]["message"] == ("two of this case's metrics are named 'Contains' (metrics.0 and metrics.1; "
                                                    "a name defaults to the type): give one a distinct `name`")
        assert f"cases.jsonl:1 (metrics.1.type): two of this case's metrics are named 'Contains'" in proc.stdout
        assert got["plain"]["status"] == "ok"


def test_a_case_judge_metric_in_a_run_without_a_judge_says_the_run_has_none(tmp_path):
    # It used to score "metric raised TypeError"; the config cannot know it, the case's score says it.
    cases = [{"id": "judged", "expected_tool_calls": EXPECTED, "trace": TRACE, "metrics": [{"type": "Rubric", "criteria": "is it polite?"}]},
             {"id": "plain", "expected_tool_calls": EXPECTED, "trace": TRACE}]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    for processes in (1, 2):  # scored in this process, and in worker processes
        (tmp_path / "run.yaml").write_text(f"dataset: {{path: cases.jsonl}}\nmetrics: [{{type: ToolCalls}}]\nrun: {{dir: out-{processes}, processes: {processes}}}\n")
        proc = _forkserver.run([str(TRACEJUDGE), "run", "run.yaml", "--no-progress"], cwd=tmp_path, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        got = {r["case_id"]: r for r in map(json.loads, (tmp_path / f"out-{processes}" / "results.jsonl").read_text().splitlines())}
        rubric = got["judged"]["scores"]["Rubric"]
        assert got["judged"]["status"] == "ok" and rubric["value"] is None
        assert rubric["reason"] == ("not computed: Rubric is an LLM-judge metric and this run has no judge configured: "
                                    "add a `judge:` section (provider, model) to the config")
        assert got["judged"]["scores"]["ToolCalls"]["value"] is not None and got["plain"]["status"] == "ok"
