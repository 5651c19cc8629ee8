"""A panel's spending per model (`judge.panel.models`) after a run killed with SIGKILL and resumed, and after a finished
run resumed with nothing left to do. Real runs against the judge simulator over HTTP on 127.0.0.1.

A segment killed with SIGKILL writes no summary, and a result line holds the whole panel's usage, not each member's: the
resume counted each model from the last summary only, so what the killed segment spent was missing from every model
(6 requests of 12 each after a kill at 6 of 12 cases) while the run's whole figures had it. Each member's attempts are
journaled under its name in judge_spend.jsonl as they are sent and answered, so the resume recounts each model from it.

What is right for a user who pays per request: money spent before the kill was spent. A request in flight at the kill
was sent (and billed) and is sent again by the resume: it counts, in that model's requests and, at its estimated prompt,
in its input tokens and dollars, as in the run's `in_flight_at_stop`. An answer the killed segment paid for and the
resume took from the cache counts once, as answered and paid, as in the uninterrupted run. A finished run resumed with
nothing left to do changes nothing (it priced an unpriced member's unknown dollars at the section model's price, and
called the panel priced).
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
from _runs import sigkill_when
from test_judge_samples_panel import write_cases
from tracejudge.core.config import validate_config
from tracejudge.engine import runner
from tracejudge.stages.reports import rebuild
import _forkserver

TJ = [sys.executable, "-m", "tracejudge"]
CASES = 8
PRICED = ["simulator:gpt-4o-mini", "simulator:gpt-4.1-mini", "simulator:claude-3-5-haiku-latest"]
SPEND = ("requests", "answered", "input_tokens", "output_tokens")


def _config(tmp: Path, name: str, models: list[str]) -> Path:
    cfg = {"dataset": {"path": str(write_cases(tmp / "cases.jsonl", CASES))}, "metrics": [{"type": "TaskCompletion"}, {"type": "TrajectoryEfficiency"}],
           "judge": {"provider": "simulator", "model": "gpt-4o-mini", "models": models, "aggregate": "majority", "stop_grace_s": 0,
                     "simulator": {"latency_ms": 40}},
           "limits": {"max_in_flight": 3}, "cache": {"dir": str(tmp / f"cache-{name}")}, "run": {"dir": str(tmp / name), "flush_every": 1}}
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(cfg))
    return path


def _run(config: Path) -> None:
    """Run (or resume) `config` in this process, as `tracejudge run` does."""
    outcome = anyio.run(lambda: runner.run(validate_config(json.loads(config.read_text()))))
    assert outcome.verdict is None or outcome.verdict.passed


def _lines(run: Path) -> int:
    results = run / "results.jsonl"
    return results.read_bytes().count(b"\n") if results.exists() else 0


def _judge(run: Path) -> dict[str, Any]:
    return json.loads((run / "summary.json").read_text())["judge"]


def _consistent(judge: dict[str, Any]) -> None:
    """The run's whole spending is its models' added up."""
    models = judge["panel"]["models"].values()
    for k in SPEND:
        assert sum(m[k] for m in models) == judge[k], (k, judge)
    costs = [m["cost_usd"] for m in models]
    if judge["priced"]:
        assert all(m["priced"] for m in models) and math.isclose(sum(costs), judge["cost_usd"], abs_tol=len(costs) * 1e-6), judge
    else:
        assert judge["cost_usd"] is None and None in costs


def _unchanged_by_a_resume(config: Path, run: Path) -> None:
    """Resuming the finished run, with nothing left to do, changes neither its summary nor its spend journal."""
    before = [(run / f).read_bytes() for f in ("summary.json", "judge_spend.jsonl")]
    _run(config)
    assert [(run / f).read_bytes() for f in ("summary.json", "judge_spend.jsonl")] == before


def test_each_models_spending_after_a_kill_counts_what_the_killed_segment_spent(tmp_path: Path) -> None:
    _run(_config(tmp_path, "whole", PRICED))
    config = _config(tmp_path, "killed", PRICED)
    killed = tmp_path / "killed"
    proc = _forkserver.popen([*TJ, "run", str(config), "--no-progress"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    sigkill_when(proc, lambda: _lines(killed) >= 3, "3 results")
    assert _lines(killed) < CASES, "the run ended before it was killed"
    shutil.copytree(killed, tmp_path / "killed-report")  # (for `report` below)
    _run(config)
    want, got = _judge(tmp_path / "whole"), _judge(killed)
    assert [s["ended"] for s in json.loads((killed / "summary.json").read_text())["segments"]] == ["killed", "finished"]
    # Each model counts what it spent in both segments: the uninterrupted run's requests, answers and tokens, and its
    # requests in flight at the kill (sent again by the resume) at their estimated prompts. Every answer the killed
    # segment paid for counts once: the resume takes it from the cache (an answer killed between its bill and the
    # cache, a millisecond, is asked again, paid twice, and counted so: `reasked`).
    stopped = got.get("in_flight_at_stop") or {"requests": 0, "input_tokens_estimated": 0, "cost_usd_estimated": 0.0}
    assert want["answered"] == 3 * CASES
    reasked = got["answered"] - want["answered"]
    extra = {"requests": 0, "input_tokens": 0, "output_tokens": 0}
    extra_usd = 0.0
    for m, w in want["panel"]["models"].items():
        g = got["panel"]["models"][m]
        assert g["requests"] >= w["requests"] == CASES and g["input_tokens"] >= w["input_tokens"] and g["output_tokens"] >= w["output_tokens"], (m, g, w)
        assert w.get("answered") == CASES and g["priced"] is w["priced"] is True, (m, w)
        assert g["requests"] - w["requests"] >= g.get("answered", 0) - w["answered"] >= 0, (m, g, w)
        for k in extra:
            extra[k] += g[k] - w[k]
        extra_usd += g["cost_usd"] - w["cost_usd"]
    assert 0 <= reasked <= 3 and extra["requests"] == stopped["requests"] + reasked, (reasked, extra, stopped)
    if not reasked:
        assert extra == {"requests": stopped["requests"], "input_tokens": stopped["input_tokens_estimated"], "output_tokens": 0}, (extra, stopped)
        assert math.isclose(extra_usd, stopped["cost_usd_estimated"], abs_tol=1e-5), (extra_usd, stopped)
    _consistent(want)
    _consistent(got)
    # `tracejudge report` rebuilds the summary with the same figures, and a resume with nothing to do changes nothing.
    rebuild(killed)
    assert _judge(killed)["panel"]["models"] == got["panel"]["models"]
    _unchanged_by_a_resume(config, killed)
    # `tracejudge report` of the killed run, which has no summary.json, rebuilds each model's figures from the journal.
    rebuild(tmp_path / "killed-report")
    _consistent(_judge(tmp_path / "killed-report"))


def test_a_finished_panel_with_an_unpriced_member_resumed_with_nothing_to_do_changes_nothing(tmp_path: Path) -> None:
    config = _config(tmp_path, "run", ["simulator:gpt-4o-mini", "simulator:judge-7b"])
    _run(config)
    _unchanged_by_a_resume(config, tmp_path / "run")
    judge = _judge(tmp_path / "run")
    assert judge["priced"] is False and judge["cost_usd"] is None
    assert {m: (s["priced"], s["cost_usd"] is None) for m, s in judge["panel"]["models"].items()} == {
        "simulator:gpt-4o-mini": (True, False), "simulator:judge-7b": (False, True)}
    _consistent(judge)


def test_the_journal_counts_each_members_attempts_and_the_answers(tmp_path: Path) -> None:
    import contextvars

    from tracejudge.llm.spend_journal import SPEND, SpendJournal, spend_by_model, spend_totals

    run = tmp_path / "run"
    run.mkdir()
    (run / SPEND).write_text(json.dumps({"input_tokens": 100, "output_tokens": 10, "cost_usd": 0.00002}) + "\n")  # (a line of the old format)
    journal = SpendJournal(run)
    a, b = journal.for_model("simulator:a"), journal.for_model("simulator:b")

    def attempt(member: Any, billed: tuple[int, int, float] | None, answered: bool) -> None:
        member.sent(500, 0.0005)
        if billed is not None:
            member.add(*billed, answered=answered)

    for member, billed, answered in ((a, (498, 80, 0.0006), True), (a, (0, 0, 0.0), False), (b, (490, 60, 0.0004), True), (b, None, False)):
        contextvars.copy_context().run(attempt, member, billed, answered)  # (each attempt is settled in the task that sent it)
    rows = [json.loads(line) for line in (run / SPEND).read_text().splitlines()]
    assert [(r.get("model"), "sent" in r, r.get("answered")) for r in rows[1:]] == [
        ("simulator:a", True, None), ("simulator:a", False, True), ("simulator:a", True, None), ("simulator:a", False, None),
        ("simulator:b", True, None), ("simulator:b", False, True), ("simulator:b", True, None)]
    got = spend_by_model(run)
    # b's second attempt is in flight (no settle line): a request, at its estimated prompt and dollars, as in the totals.
    assert got == {"answered": 2, "models": {
        "simulator:a": {"requests": 2, "answered": 1, "input_tokens": 498, "output_tokens": 80, "cost_usd_exact": 0.0006},
        "simulator:b": {"requests": 2, "answered": 1, "input_tokens": 990, "output_tokens": 60, "cost_usd_exact": 0.0009}}}
    totals = spend_totals(run)
    assert totals is not None and totals["requests"] == 1 + 4 and totals["input_tokens"] == 100 + 498 + 990
    journal.close()
    assert spend_by_model(tmp_path / "none") is None
