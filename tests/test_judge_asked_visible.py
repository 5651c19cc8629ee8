"""A prompt fitted to `judge.context_tokens` shows every item its questions ask about; the steps left out are others.

The fitted prompts are built here as the judge builds them (`fit_request`); the run goes through the CLI in a real
process against a judge on 127.0.0.1 that keeps every prompt it is sent and answers "yes" to every question.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from _loopback import Loopback, completion, verdict
from tracejudge.core.config import JudgeConfig
from tracejudge.core.records import Case
from tracejudge.stages.judge.base import group_plans, grouped_plan
from tracejudge.stages.judge.fit import fit_request
from tracejudge.stages.judge.metrics import Faithfulness, StepFaithfulness, TaskCompletion, ToolArgumentAccuracy, ToolCallNecessity
import _forkserver

EXE = os.path.join(os.path.dirname(sys.executable), "tracejudge")


def long_case(cid: str = "long", steps: int = 20, result_chars: int = 1200) -> dict:
    """`steps` steps, each one call with a distinct ~`result_chars` result, and a user turn before each step."""
    out = []
    for i in range(1, steps + 1):
        words = " ".join(f"row{i}-{j}" for j in range(result_chars // 10))
        out.append({"tool_calls": [{"name": f"lookup_{i}", "arguments": {"key": f"k{i}"}, "result": words[:result_chars]}],
                    "output": f"answer {i}" if i == steps else None})
    users = [{"step": i, "content": f"question number {i + 1}"} for i in range(steps)]
    return {"id": cid, "input": "question number 1", "trace": {"steps": out, "user_messages": users, "output": f"answer {steps}"}}



@pytest.mark.parametrize("metric", [ToolCallNecessity(), ToolArgumentAccuracy(), StepFaithfulness()])
def test_every_item_asked_about_is_in_the_fitted_prompt(metric):
    case = Case.model_validate(long_case())
    cfg = JudgeConfig(provider="simulator", context_tokens=4096)
    plan = metric.plan(case)
    fitted = fit_request(plan, plan.questions, cfg)
    assert fitted.fits and fitted.omit > 0
    text = fitted.req.messages[-1]["content"]
    asked = fitted.asked if fitted.asked is not None else plan.questions
    assert asked and [q.id for q in asked] == [f"q{n}" for n in range(1, len(asked) + 1)]  # the first items, as many as fit
    what = "step" if isinstance(metric, StepFaithfulness) else "call"
    prefix = plan.prefix
    for q in asked:
        n = int(q.id.removeprefix("q"))
        assert (f"Step {n}:\n" if what == "step" else f" call {n}: lookup_{n}(") in text, (q.id, what)
        assert f"\n{prefix}{n}: {what} {n}" in text
    for q in plan.questions[len(asked):]:  # a question not asked is not in the request, nor in its schema
        assert f"\n{prefix}{q.id.removeprefix('q')}: " not in text and f"{prefix}{q.id.removeprefix('q')}" not in str(fitted.req.schema)


def test_a_grouped_prompt_shows_every_call_any_of_its_metrics_asks_about():
    case = Case.model_validate(long_case())
    cfg = JudgeConfig(provider="simulator", context_tokens=6000)
    plans = [m.plan(case) for m in (TaskCompletion(), ToolCallNecessity(), ToolArgumentAccuracy())]
    [group] = group_plans(plans)
    gp = grouped_plan(group)
    fitted = fit_request(gp, gp.questions, cfg)
    assert fitted.fits and fitted.omit > 0
    text = fitted.req.messages[-1]["content"]
    asked = fitted.asked if fitted.asked is not None else gp.questions
    assert {q.id for q in asked} >= {"TC1", "TC2", "TC3", "TC4", "TCN1", "TAA1"}
    for q in asked:
        if q.step:
            n = int(q.id.removeprefix("TCN").removeprefix("TAA"))
            assert f" call {n}: lookup_{n}(" in text


def test_a_prompt_that_cannot_show_any_asked_item_is_not_sent_and_says_why():
    case = Case.model_validate(long_case(steps=6, result_chars=5000))
    case.trace.steps[0].tool_calls[0].result = "x " * 4000  # the first call's step alone is longer than the window
    cfg = JudgeConfig(provider="simulator", context_tokens=1500)
    plan = ToolCallNecessity().plan(case)
    fitted = fit_request(plan, plan.questions, cfg)
    assert not fitted.fits and "no call or step asked about fits" in fitted.why


class _YesJudge:
    """The tests' loopback judge (`_loopback.Loopback`): every question answered yes, every prompt kept (`prompts`)."""

    def __init__(self, server: Loopback) -> None:
        self.server, self.url = server, server.url

    @property
    def prompts(self) -> list[str]:
        return [body["messages"][-1]["content"] for _, body in self.server.requests]


@pytest.fixture
def yes_server() -> Iterator[_YesJudge]:
    with Loopback(lambda headers, body: (200, completion(json.dumps(verdict(body))))) as server:
        yield _YesJudge(server)


def test_a_run_scores_only_what_the_judge_saw_and_says_what_was_left_out(yes_server, tmp_path: Path):
    sim = yes_server
    data = tmp_path / "cases.jsonl"
    data.write_text(json.dumps(long_case()) + "\n")
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"dataset": {"path": str(data), "format": "native"}, "metrics": [{"type": "ToolCallNecessity"}],
                               "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": sim.url + "/v1", "context_tokens": 4096},
                               "cache": {"dir": str(tmp_path / "cache")}, "run": {"dir": str(tmp_path / "run")}}))
    proc = _forkserver.run([EXE, "run", str(cfg), "--no-progress"], capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    rows = {r["case_id"]: r for r in map(json.loads, (tmp_path / "run" / "results.jsonl").read_text().splitlines())}
    score = rows["long"]["scores"]["ToolCallNecessity"]
    assert score["value"] is not None
    reason = score["reason"]
    assert "judged the first 8 of 20 tool calls" in reason and "none of them asked about" in reason
    judged = len(score["details"]["answers"])
    assert 0 < judged < 8 and f"{judged}/{judged} good answers" in reason
    assert f"not asked (their steps left out to fit context_tokens 4096): TCN{judged + 1} (call {judged + 1})," in reason
    assert sim.prompts
    for text in sim.prompts:  # every call a question names is in the prompt it was asked in
        for n in re.findall(r"\nTCN\d+: call (\d+)", text):
            assert f" call {n}: " in text


def test_every_claim_asked_about_stays_when_the_claims_are_cut_to_fit():
    claims = " ".join(f"Claim number {i} says " + " ".join(f"fact{i}x{j}" for j in range(60)) + "." for i in range(1, 9))
    case = Case.model_validate({"id": "f", "input": "q", "context": ["passage " * 3000], "trace": {"steps": [], "output": claims}})
    plan = Faithfulness().plan(case)
    for context in (3000, 2000):
        fitted = fit_request(plan, plan.questions, JudgeConfig(provider="simulator", context_tokens=context))
        assert fitted.fits and "Claims" in fitted.cut
        text = fitted.req.messages[-1]["content"]
        assert all(f"\nClaim {i}: Claim number {i} says" in text for i in range(1, 9))


def test_asked_one_question_per_request_the_calls_that_cannot_be_shown_are_not_asked(yes_server, tmp_path: Path):
    data = tmp_path / "cases.jsonl"
    data.write_text(json.dumps(long_case()) + "\n")
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"dataset": {"path": str(data), "format": "native"},
                               "metrics": [{"type": "ToolCallNecessity", "one_question_per_request": True}],
                               "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": yes_server.url + "/v1", "context_tokens": 4096},
                               "cache": {"enabled": False}, "run": {"dir": str(tmp_path / "run")}}))
    proc = _forkserver.run([EXE, "run", str(cfg), "--no-progress"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [row] = map(json.loads, (tmp_path / "run" / "results.jsonl").read_text().splitlines())
    score = row["scores"]["ToolCallNecessity"]
    judged = len(yes_server.prompts)
    assert 0 < judged < 8 and score["value"] == 1.0 and f"{judged}/{judged} good answers" in score["reason"]
    assert f"not asked (their steps do not fit context_tokens 4096): TCN{judged + 1} (call {judged + 1})," in score["reason"]
    for text in yes_server.prompts:
        [n] = re.findall(r"\nTCN\d+: call (\d+)", text)
        assert f" call {n}: lookup_{n}(" in text
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["judge"]["too_long"] == 0
