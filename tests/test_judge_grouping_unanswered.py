"""The grouping figure (`grouped_requests`, the terminal's "judge grouping" line) counts only grouped requests the judge
answered: one that timed out is billed at its estimated input, and is still not an answer."""

from __future__ import annotations

from pathlib import Path

from _loopback import Loopback
from test_judge_servers import cases, config, results, run
from tracejudge.stages.reports.judge_lines import judge_lines

TWO = [{"type": "TaskCompletion"}, {"type": "ToolCallNecessity"}]


def test_grouped_requests_that_timed_out_are_not_counted_as_answered(tmp_path: Path) -> None:
    with Loopback(lambda headers, body: "hang") as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 3), metrics=TWO, timeout_s=0.5, max_attempts=1))
    j = summary["judge"]
    assert summary["status"] == {"judge_error": 3} and j["error_kinds"] == {"timeout": 6}
    # The timeouts are billed (in the summary and the scores), as before.
    assert j["input_tokens"] > 0 and all(sum(s["judge"]["input_tokens"] for s in r["scores"].values()) > 0 for r in results(tmp_path))
    assert j["grouped_requests"] == 0, j  # before: 3, "3 cases had every metric asked in one request the judge answered"
    assert not any(line.startswith("judge grouping") for line in judge_lines(summary))
