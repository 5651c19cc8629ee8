"""Progress display: a rich bar on a terminal, periodic JSON log lines otherwise."""

from __future__ import annotations

import io
import json

from rich.console import Console
from tracejudge.core.records import CaseResult, JudgeInfo, Score, Status
from tracejudge.engine.progress import LogProgress, RichProgress, make_progress
import _forkserver


def _results() -> list[CaseResult]:
    judged = Score(value=1.0, passed=True, judge=JudgeInfo(model="m", cached=True, input_tokens=100, output_tokens=20))
    fresh = Score(value=0.0, passed=False, judge=JudgeInfo(model="m", cached=False, input_tokens=50, output_tokens=10))
    return [CaseResult(case_id="a", scores={"j": judged}), CaseResult(case_id="b", scores={"j": fresh}),
            CaseResult(case_id="c", status=Status.judge_error), CaseResult(case_id="d", status=Status.skipped_budget)]


def test_log_progress_lines_carry_counts_errors_and_judge_figures() -> None:
    buf = io.StringIO()
    p = LogProgress(buf, total=8, every_s=0.0)
    for r in _results():
        p.update(r)
    p.set_judge(in_flight=3)
    p.close()
    lines = [json.loads(x) for x in buf.getvalue().splitlines()]
    assert [x["event"] for x in lines] == ["progress"] * 4 + ["progress_done"]
    last = lines[-1]
    assert last["done"] == 4 and last["total"] == 8 and last["eta_s"] is not None
    assert last["errors"] == {"judge_error": 1, "skipped_budget": 1}
    assert last["judge_tokens"] == 180 and last["judge_cache_hit_rate"] == 0.5 and last["in_flight"] == 3


def test_rich_bar_on_a_terminal() -> None:
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=200)
    p = make_progress(console, total=None)
    assert isinstance(p, RichProgress)
    p.set_total(4)
    for r in _results():
        p.update(r)
    p.close()
    text = buf.getvalue()
    assert "ETA" in text and "scoring" in text and "4/4" in text
    assert "errors judge_error 1, skipped_budget 1" in text and "judge 180 tok, cache 50%" in text
    assert make_progress(Console(file=io.StringIO()), total=3).__class__ is LogProgress
    assert make_progress(console, enabled=False) is None


def test_a_resume_that_redoes_judge_errors_counts_them_in_its_total(tmp_path) -> None:
    """The log lines' `total` of a resume is what it has left, provisional results it redoes included: it took every
    line of the results' index out, so a resume redoing 5 judge errors said `done: 5, total: 0`."""
    import json as _json
    import subprocess
    import sys

    cases = [{"id": f"c{i}", "input": "Book a flight", "trace": {"steps": [{"tool_calls": [{"name": "search", "arguments": {"q": i}}]}],
                                                             "output": "booked"}} for i in range(5)]
    (tmp_path / "d.jsonl").write_text("".join(_json.dumps(c) + "\n" for c in cases))
    (tmp_path / "c.yaml").write_text("dataset: {path: d.jsonl}\nmetrics: [{type: TaskCompletion}]\n"
                                     "judge: {provider: simulator, model: gpt-4o-mini}\ncache: {dir: cache}\nrun: {dir: run}\n")
    cmd = [sys.executable, "-m", "tracejudge", "run", "c.yaml"]
    # Every judge request fails (a 500, a 504 or a cut reply, one attempt). (Not a timeout: a judge that never replied
    # stops the run with no case marked.)
    first = _forkserver.run([*cmd, "--no-progress", "--set", "judge.simulator.error_rate=1", "--set", "judge.simulator.hang_s=0.01",
                            "--set", "judge.max_attempts=1", "--set", "judge.max_retry_wait_s=0.5"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=120)
    assert first.returncode == 1 and (tmp_path / "run" / "results.jsonl").read_text().count('"judge_error"') == 5, first.stdout
    again = _forkserver.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)  # not a terminal: log lines
    assert again.returncode == 0, again.stdout + again.stderr
    done = [_json.loads(x) for x in again.stderr.splitlines() if '"progress_done"' in x]
    assert len(done) == 1 and done[0]["done"] == 5 and done[0]["total"] == 5, again.stderr
