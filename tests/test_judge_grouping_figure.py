"""The summary's grouping figure (`grouped_requests`, the terminal's "judge grouping" line) counts each (case, trial)
whose grouped request the judge itself answered, once: not budget skips, not cache hits, not again on a resume or a redo."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
from tracejudge.core.config import validate_config
from tracejudge.engine import runner
from tracejudge.stages.reports.judge_lines import judge_lines

N = 24
METRICS = [{"type": "TaskCompletion"}, {"type": "PlanQuality"}]  # both trace metrics: one grouped request per case


def _cases(path: Path) -> Path:
    with open(path, "w") as fh:
        for i in range(N):
            steps = [{"tool_calls": [{"name": "lookup", "arguments": {"q": f"item {i} {k}"}, "result": f"found {i} {k}"}]} for k in range(3)]
            fh.write(json.dumps({"id": f"case-{i}", "input": f"Find item {i}", "trace": {"steps": steps, "output": f"Item {i} is found."}}) + "\n")
    return path


def _run(tmp: Path, run: str, **budget: object) -> dict:
    config = validate_config({
        "dataset": {"path": str(_cases(tmp / "c.jsonl")), "format": "native"},
        "metrics": METRICS,
        "judge": {"provider": "simulator", "model": "gpt-4o-mini"},
        "cache": {"dir": str(tmp / "cache")},
        "budget": budget,
        "run": {"dir": str(tmp / run)},
    })
    return anyio.run(lambda: runner.run(config)).summary


def _answered_by_judge(run_dir: Path) -> int:
    """Results whose scores carry a grouped request the judge answered (each line read independently of the code under test)."""
    n = 0
    for line in (run_dir / "results.jsonl").read_text().splitlines():
        try:
            scores = json.loads(line)["scores"].values()
        except ValueError:
            continue  # the damaged line: the redone case has a line of its own
        # A grouped score (not re-asked alone) whose judge block is not cached and billed tokens: the judge answered it.
        if any("group" in (s.get("details") or {}) and not s["details"]["group"].get("alone") and s.get("judge")
               and not s["judge"]["cached"] and s["judge"]["input_tokens"] + s["judge"]["output_tokens"] > 0 for s in scores):
            n += 1
    return n


def test_a_budget_cap_counts_only_the_grouped_requests_sent_and_a_resume_counts_them_once(tmp_path):
    first = _run(tmp_path, "run", max_judge_tokens=3000)["judge"]
    # Every request of this run is a case's grouped request: the figure is the requests the judge answered.
    assert 0 < first["requests"] < N and first["skipped_budget"] > 0
    assert first["grouped_requests"] == first["requests"] == _answered_by_judge(tmp_path / "run")
    assert f"judge grouping: {first['requests']} cases" in "\n".join(judge_lines({"judge": first}))
    again = _run(tmp_path, "run", max_judge_tokens=3000)["judge"]  # the resume asks what the budget still allows
    assert again["skipped_budget"] > 0 and again["requests"] < N
    assert again["grouped_requests"] == again["requests"] == _answered_by_judge(tmp_path / "run") and again["parts_reasked_alone"] == 0
    done = _run(tmp_path, "run", max_judge_tokens=10**7)["judge"]  # a larger budget finishes the rest, each case once
    assert done["grouped_requests"] == N == done["requests"]


def test_a_run_the_cache_answers_whole_claims_no_case_asked(tmp_path):
    cold = _run(tmp_path, "cold")["judge"]
    assert cold["grouped_requests"] == N
    warm = _run(tmp_path, "warm")["judge"]
    assert warm["requests"] == 0 and warm["cache_hits"] == N and warm["grouped_requests"] == 0
    assert not any(line.startswith("judge grouping") for line in judge_lines({"judge": warm}))


def test_a_redone_damaged_line_is_not_counted_twice(tmp_path):
    run_dir = tmp_path / "run"
    assert _run(tmp_path, "run")["judge"]["grouped_requests"] == N
    lines = (run_dir / "results.jsonl").read_bytes().split(b"\n")
    lines[3] = b"{damaged" + lines[3][8:]  # mid-file damage: the resume redoes that case, from the cache
    (run_dir / "results.jsonl").write_bytes(b"\n".join(lines))
    redone = _run(tmp_path, "run")["judge"]
    # The standing line of the redone case was answered by the cache; the other N - 1 by the judge, counted once.
    assert redone["grouped_requests"] == N - 1 == _answered_by_judge(run_dir)
    assert redone["requests"] == N and redone["cache_hits"] == 1
