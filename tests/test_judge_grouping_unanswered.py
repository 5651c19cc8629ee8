"""The grouping figure (`grouped_requests`, the terminal's "judge grouping" line) counts only grouped requests the judge
answered: one that timed out is billed at its estimated input, and is still not an answer."""

from __future__ import annotations

from pathlib import Path

from _loopback import Loopback, answers_then_hangs
from test_judge_servers import cases, config, results, run
from tracejudge.stages.reports.judge_lines import judge_lines

TWO = [{"type": "TaskCompletion"}, {"type": "ToolCallNecessity"}]


def test_grouped_requests_that_timed_out_are_not_counted_as_answered(tmp_path: Path) -> None:
    # One grouped request answered, two never (a judge that never answered stops the run instead).
    with Loopback(answers_then_hangs(1)) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 3), metrics=TWO, timeout_s=0.5, max_attempts=1))
    j = summary["judge"]
    assert summary["status"] == {"ok": 1, "judge_error": 2} and j["error_kinds"] == {"timeout": 4}
    # The timeouts are billed (in the summary and the scores), as before.
    assert j["input_tokens"] > 0 and all(sum(s["judge"]["input_tokens"] for s in r["scores"].values()) > 0 for r in results(tmp_path))
    assert j["grouped_requests"] == 1, j  # before: 3, "3 cases had every metric asked in one request the judge answered"
    assert [line for line in judge_lines(summary) if line.startswith("judge grouping")] == [
        "judge grouping: 1 cases had every metric asked in one request the judge answered (answers from the cache not counted); "
        "0 metrics re-asked alone"]
