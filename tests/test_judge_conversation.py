"""Judges see the whole conversation: every user turn, in order, between the agent's steps, inside the fence."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import diskcache
import pytest
from _loopback import Loopback, completion, verdict
from helpers import DATA
from tracejudge.core.config import JudgeConfig, validate_config
from tracejudge.core.records import Case
from tracejudge.core.registry import format_for
from tracejudge.engine import runner
from tracejudge.stages.extract import extract_record
from tracejudge.stages.judge.base import group_plans, grouped_plan
from tracejudge.stages.judge.trace_text import FIELD_CHARS
from tracejudge.stages.judge.client import build_request, request_tokens
from tracejudge.stages.judge.fit import fit_request
from tracejudge.stages.judge.metrics import AgentMemoryEval, ContextRelevance, PlanQuality, Rubric, StepFaithfulness, TaskCompletion

TAU = DATA / "tau_bench" / "historical_trajectories" / "gpt-4o-airline.json"
TASKS = DATA / "tau_bench" / "tasks" / "tasks_airline_test.json"


class _Dataset:
    def __init__(self, path: Path, limit: int) -> None:
        self.path, self.tasks, self.limit, self.options = path, None, limit, {}


@pytest.fixture(scope="module")
def tau_cases() -> list[Case]:
    fmt = format_for("tau-bench")
    return [extract_record(raw, fmt, None) for raw in fmt.read(_Dataset(TAU, 6))]


def _inside(user_message: str) -> str:
    """The fenced data of a judge user message (asserting one BEGIN and its one END)."""
    head, _, rest = user_message.partition("\n")
    m = re.fullmatch(r"==== DATA (\w+) BEGIN ====", head)
    assert m, head
    closing = f"\n==== DATA {m.group(1)} END ===="
    assert rest.count(closing) == 1
    return rest.split(closing)[0]


def _turns_in_order(text: str, case: Case) -> None:
    """Every user turn of `case` is in `text`, in order, right after the step before it and before the step that answered it."""
    headers = [(m.start(), int(m.group(1))) for m in re.finditer(r"(?m)^Step (\d+):$", text)]
    pos = 0
    for k, msg in enumerate(case.trace.user_messages, 1):
        at = text.find(f"User {k}: {msg.content}", pos)
        assert at >= pos, (k, msg.content)
        before = [n for start, n in headers if start < at]
        after = [n for start, n in headers if start > at]
        assert (before[-1] if before else 0) == msg.step  # steps numbered from 1: step `msg.step` (0-based) is `Step msg.step + 1`
        assert (after[0] if after else len(case.trace.steps) + 1) == msg.step + 1
        pos = at + 1


@pytest.mark.parametrize("fmt", ["compact", "full"])
def test_every_user_turn_is_rendered_between_the_steps_in_both_renderings(tau_cases, fmt):
    for case in tau_cases:
        assert len(case.trace.user_messages) > 2
        for metric in (TaskCompletion(trace_format=fmt), PlanQuality(trace_format=fmt), StepFaithfulness(trace_format=fmt)):
            plan = metric.plan(case)
            text = _inside(plan.render(0))
            _turns_in_order(text, case)
            assert "Everything the user says (User 1 to User" in text  # the request is the conversation's user side
            assert plan.prompt_version == f"{metric.prompt_version};conversation/1"  # a prompt that changed has a new version


def test_a_case_without_user_messages_renders_exactly_as_before():
    case = Case.model_validate({"id": "c", "input": "Find item 1", "trace": {
        "steps": [{"thought": "look it up", "tool_calls": [{"name": "lookup", "arguments": {"q": "item 1"}, "result": {"found": 1}}]},
                  {"output": "Item 1 is found."}], "output": "Item 1 is found."}})
    plan = TaskCompletion().plan(case)
    # The rendering of a trace without turns, byte for byte as it was before turns existed: its cache keys still hit.
    assert _inside(plan.render(0)) == ("## Task (the user's request)\nFind item 1\n\n## Trace\nStep 1:\n thought: look it up\n"
                                      " call 1: lookup({q:item 1})\n  result: {found:1}\nStep 2:\n output: Item 1 is found.\n\n"
                                      "## Final output\n(the output of step 2 above)")
    assert plan.prompt_version == "task-completion/4" and not plan.conversation
    assert PlanQuality().plan(case).prompt_version == PlanQuality.prompt_version


def test_metrics_about_the_request_see_every_user_turn(tau_cases):
    case = tau_cases[0].model_copy(update={"context": ["Mia Li prefers aisle seats."], "expected_output": "a booking"})
    said = [f"User {k}: {m.content}" for k, m in enumerate(case.trace.user_messages, 1)]
    for metric in (AgentMemoryEval(), ContextRelevance(), Rubric(criteria="Did the agent serve the user?", include="output")):
        plan = metric.plan(case)
        text = _inside(plan.render(0))
        assert [text.find(s) for s in said] == sorted(text.find(s) for s in said) and all(s in text for s in said), type(metric).__name__
        assert plan.prompt_version.endswith(";conversation/1")
    plans = [m.plan(case) for m in (TaskCompletion(), PlanQuality())]
    (group,) = group_plans(plans)
    assert grouped_plan(group).prompt_version == "task-completion/4;conversation/1+plan-quality/4;conversation/1"


def _long_conversation(n_steps: int, n_users: int, user_chars: int = 200) -> Case:
    steps = [{"thought": f"step {i}", "tool_calls": [{"name": "search", "arguments": {"q": f"query {i}"},
                                                      "result": " ".join(f"r{i}w{j}" for j in range(150))}]} for i in range(n_steps)]
    steps.append({"output": "Done."})
    users = [{"step": min(k * max(1, n_steps // n_users), n_steps), "content": f"turn {k} " + " ".join(f"u{k}w{j}" for j in range(user_chars // 6))}
             for k in range(n_users)]
    users[1]["content"] = "oversized " + "x y " * 5000  # one turn far over the field limit
    return Case.model_validate({"id": "long", "input": users[0]["content"], "trace": {"steps": steps, "user_messages": users, "output": "Done."}})


def test_cut_policy_per_turn_middle_steps_go_first_and_user_turns_stay():
    case = _long_conversation(60, 12)
    plan = TaskCompletion().plan(case)
    full_text = _inside(plan.render(0))
    cut = len(case.trace.user_messages[1].content) - FIELD_CHARS
    assert "User 2: oversized x y" in full_text and f"…[{cut} characters cut]" in full_text  # the oversized turn, cut visibly
    cfg = JudgeConfig(provider="openai", model="gpt-4o-mini", context_tokens=12_000, max_tokens=256)
    fitted = fit_request(plan, plan.questions, cfg)
    assert fitted.fits and 0 < fitted.omit <= 60 - 1 and fitted.tokens <= 12_000 - 256
    text = _inside(fitted.req.messages[1]["content"])
    assert re.search(r"\[steps \d+–\d+ omitted: the trace is too long for the judge; the user's turns among them follow\]", text)
    assert all(f"User {k}: turn {k - 1} " in text or k == 2 for k in range(1, 13))  # every user turn is kept, in order
    assert [text.find(f"User {k}: ") for k in range(1, 13)] == sorted(text.find(f"User {k}: ") for k in range(1, 13))
    assert "Step 1:\n" in text and "Step 61:\n" in text  # the first and last steps stay


def test_user_turns_go_only_when_every_middle_step_is_out():
    case = _long_conversation(6, 80, user_chars=600)
    plan = TaskCompletion().plan(case)
    cfg = JudgeConfig(provider="openai", model="gpt-4o-mini", context_tokens=8_000, max_tokens=256)
    fitted = fit_request(plan, plan.questions, cfg)
    assert fitted.fits and fitted.omit > 5  # all 5 middle steps, then some middle user turns
    text = _inside(fitted.req.messages[1]["content"])
    m = re.search(r"\[user turns (\d+)–(\d+) omitted: the conversation is too long for the judge\]", text)
    assert m and int(m.group(1)) > 1 and int(m.group(2)) < 80
    assert "User 1: turn 0 " in text and "User 80: turn 79 " in text  # the first and last turns stay
    # The fewest turns that fit were left out: one turn fewer does not fit.
    assert request_tokens(build_request(plan, plan.questions, cfg, fitted.omit - 1)) > 8_000 - 256


def test_a_judged_tau_bench_run_sends_every_user_turn_inside_the_fence(tmp_path):
    with Loopback(lambda h, b: (200, completion(json.dumps(verdict(b))))) as server:
        config = validate_config({
            "dataset": {"path": str(TAU), "format": "tau-bench", "tasks": str(TASKS), "limit": 4},
            "metrics": [{"type": "TaskCompletion"}, {"type": "ToolCallNecessity"}, {"type": "Rubric", "criteria": "Did the agent serve the user?"}],
            "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": server.url + "/v1"},
            "cache": {"dir": str(tmp_path / "cache")},
            "run": {"dir": str(tmp_path / "run")},
        })
        summary = anyio.run(lambda: runner.run(config)).summary
        bodies = [b for _, b in server.requests]
    assert summary["status"] == {"ok": 4} and len(bodies) >= 8
    runs = json.loads(TAU.read_text())[:4]
    sent: dict[int, list[str]] = {}  # each request's fenced text, by the run whose conversation it holds
    for body in bodies:
        inside = _inside(body["messages"][1]["content"])
        (owner,) = [i for i, run in enumerate(runs) if all(m["content"] in inside for m in run["traj"] if m["role"] == "user")]
        sent.setdefault(owner, []).append(inside)
    assert sorted(sent) == [0, 1, 2, 3]
    for i, run in enumerate(runs):
        said = [m["content"] for m in run["traj"] if m["role"] == "user"]
        assert len(sent[i]) >= 2  # the grouped trace metrics, and the Rubric alone
        for inside in sent[i]:
            at = [inside.find(f"User {k}: {text}") for k, text in enumerate(said, 1)]
            assert all(a >= 0 for a in at) and at == sorted(at)  # every user turn, in order, inside the fence
    with diskcache.Cache(str(tmp_path / "cache")) as cache:  # the prompt version of every request answered
        versions = [cache[k]["prompt_version"] for k in cache.iterkeys() if str(k).startswith("i:")]
    assert versions and all(v.count(";conversation/1") == v.count("/") // 2 for v in versions)
