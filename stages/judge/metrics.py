"""The LLM-judge metrics (spec: JUDGE-METRICS.md; structure: multivon-eval's agent evaluators).

Each keeps multivon-eval's scoring structure — the same yes/no questions
(per tool call, per step, or a fixed set) turned into a score the same way —
so numbers stay comparable; the prompt wording is ours, versioned by
`prompt_version`. All questions of one metric for one case go in one request
by default. Deliberate deviations from multivon-eval are stated per metric.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from pydantic import Field, model_validator
from tracejudge.core.records import Case, Score
from tracejudge.core.registry import register_metric
from tracejudge.stages.judge.base import JudgeMetric, Plan, Question
from tracejudge.stages.judge.field_cut import AllData
from tracejudge.stages.judge.trace_text import fence, text_of, user_calls
from tracejudge.stages.judge.conversation import has_turns, request_text
from tracejudge.stages.judge.system_section import levels, shown_lengths, system_sections
from tracejudge.stages.judge.metric_plans import (  # (`_trace_sections`, `_not_computed`: named here by callers)
    calls_plan as _calls_plan,
    cap_note as _cap_note,
    not_computed as _not_computed,
    trace_plan as _trace_plan,
    trace_sections as _trace_sections,
)

__all__ = [
    "AgentMemoryEval",
    "ContextRelevance",
    "Faithfulness",
    "PlanQuality",
    "Rubric",
    "StepFaithfulness",
    "TaskCompletion",
    "ToolArgumentAccuracy",
    "ToolCallNecessity",
    "TrajectoryEfficiency",
]


def _ended_in_error(case: Case) -> bool:
    """Did the run end in an error the trace recorded (`metadata.run_error`, set by the span readers)?"""
    error = case.metadata.get("run_error")
    return isinstance(error, str) and bool(error.strip())


@register_metric
class TaskCompletion(JudgeMetric):
    """Does the final output do what the user asked? (multivon-eval `TaskCompletion`)

    Four questions: addresses the request (yes), complete (yes), correct and
    usable (yes), did the agent fail or end in an error (no). Score = share
    of good answers, so a judge answering yes to everything scores 0.75.
    Works without steps (the final output alone). No output at all → null
    (a recording that kept no output text says nothing of the task), except
    for a run that ended in an error (`metadata.run_error`: "Max turns
    exceeded", a raised exception): such a run did not complete its task,
    and leaving it out would raise the mean by every run that failed so. It
    is judged, its final output `(none)` and the error said under it
    (`trace_text.final_output`), as multivon-eval judges an empty output.
    """

    prompt_version: ClassVar[str] = "task-completion/4"
    task: ClassVar[str] = "You judge whether the agent's final output accomplishes the user's task."

    def plan(self, case: Case) -> Plan | Score:
        trace = case.trace
        if trace is None or not (trace.output or any(s.output for s in trace.steps) or _ended_in_error(case)):
            return _not_computed("the case has no final output")
        qs = [
            Question("q1", "Does the final output address what the user asked for?"),
            Question("q2", "Is the final output complete, covering every part of the request?"),
            Question("q3", "Is the final output correct and usable as given?"),
            Question("q4", "Did the agent fail, give up, or end in an error?", good="no"),
        ]
        return _trace_plan(self, case, qs)


@register_metric
class PlanQuality(JudgeMetric):
    """Is the agent's plan good? (multivon-eval `PlanQuality`)

    Five questions on the whole trace and output: addresses the task, logical
    order, avoids unnecessary/redundant steps, nothing essential missing,
    efficient overall (all good when yes). Score = share of good answers.
    Requires steps.
    """

    prompt_version: ClassVar[str] = "plan-quality/4"
    task: ClassVar[str] = "You judge the quality of the plan the agent followed, as shown by its steps."

    def plan(self, case: Case) -> Plan | Score:
        if case.trace is None or not case.trace.steps:
            return _not_computed("the case has no steps")
        qs = [
            Question("q1", "Does the plan address the task?"),
            Question("q2", "Are the steps in a logical order?"),
            Question("q3", "Does the plan avoid unnecessary or redundant steps?"),
            Question("q4", "Is nothing essential missing from the plan?"),
            Question("q5", "Is the plan efficient overall?"),
        ]
        return _trace_plan(self, case, qs)


@register_metric
class TrajectoryEfficiency(JudgeMetric):
    """Did the agent take an efficient path, and recover from failed calls? (multivon-eval `TrajectoryEfficiency`)

    Base = mean of three yes-good questions (no unnecessary detours; step
    count proportionate; no repeated completed steps). Only when some call
    failed (a non-null `error` — not any result mentioning "error") a fourth
    question asks whether the agent recovered; a "no" subtracts 0.2, floored
    at 0. Requires steps.
    """

    prompt_version: ClassVar[str] = "trajectory-efficiency/4"
    task: ClassVar[str] = "You judge how efficiently the agent reached its result."

    def plan(self, case: Case) -> Plan | Score:
        if case.trace is None or not case.trace.steps:
            return _not_computed("the case has no steps")
        calls = case.trace.tool_calls()
        users = user_calls(case)  # (τ²-bench's telecom: the user's own calls on their device are not the agent's path)
        mine = [c for i, c in enumerate(calls) if i not in users]
        failed = sum(c.failed for c in mine)
        n_steps = len(case.trace.steps) - len(_user_steps(case, users))
        counted = f"{n_steps} steps, {len(mine)} tool calls" + (f"; the user's own {len(calls) - len(mine)} calls besides" if users else "")
        qs = [
            Question("q1", "Did the agent complete the task without unnecessary detours?"),
            Question("q2", f"Is the number of steps ({counted}) proportionate to the task?"),
            Question("q3", "Did the agent avoid repeating steps it had already completed?"),
        ]
        if failed:
            qs.append(Question("q4", f"{failed} tool call(s) failed. Did the agent handle each failure by retrying differently, "
                                     "switching approach, or clearly saying it failed, rather than carrying on as if the call succeeded?"))
        return _trace_plan(self, case, qs)

    def finalize(self, plan: Plan, answers: dict[str, dict[str, Any]]) -> Score:
        base = sum(answers[q]["answer"] == "yes" for q in ("q1", "q2", "q3")) / 3
        value = base
        if "q4" in answers and answers["q4"]["answer"] == "no":
            value = max(0.0, base - 0.2)
        return self.scored(plan, value, answers)


def _user_steps(case: Case, users: frozenset[int]) -> set[int]:
    """The 1-based numbers of the steps made only of the user's own tool calls (`trace_text.user_calls`)."""
    out, at = set(), 0
    for i, step in enumerate(case.trace.steps if case.trace else [], 1):
        n = len(step.tool_calls)
        if n and all(c in users for c in range(at, at + n)):
            out.add(i)
        at += n
    return out


@register_metric
class ToolArgumentAccuracy(JudgeMetric):
    """Are each call's arguments appropriate and well-formed? (multivon-eval `ToolArgumentAccuracy`)

    One question per tool call (the first `max_items`, default 8), failed
    calls included. Score = share of yes. A trace with no call → null
    ("no tool calls to judge"), where multivon-eval is silent.
    """

    prompt_version: ClassVar[str] = "tool-argument-accuracy/4"
    task: ClassVar[str] = ("You judge the arguments the agent passed to its tool calls. For each call k asked about (the line "
                           "`call k:` in the trace): are its arguments appropriate and well-formed for this tool, given the task?")

    def plan(self, case: Case) -> Plan | Score:
        got = _calls_plan(self, case)
        return _not_computed("no tool calls to judge") if got is None else got


@register_metric
class ToolCallNecessity(JudgeMetric):
    """Was each call needed, given what earlier calls returned? (multivon-eval `ToolCallNecessity`)

    One question per tool call (first `max_items`, default 8); the judge sees
    the whole trace with calls numbered and is asked about call k given
    only calls 1..k-1. Score = share judged necessary; 1.0 with no call
    made (no request is sent).
    """

    prompt_version: ClassVar[str] = "tool-call-necessity/4"
    task: ClassVar[str] = ("You judge whether each tool call the agent made was needed. For each call k asked about (the line "
                           "`call k:` in the trace): given the task and only what calls 1 to k-1 returned, was call k strictly necessary to make progress?")

    def plan(self, case: Case) -> Plan | Score:
        got = _calls_plan(self, case)
        if got is None:
            return self.verdict(1.0, "no tool calls were made")
        return got


@register_metric
class StepFaithfulness(JudgeMetric):
    """Does each step follow from the task and earlier steps? (multivon-eval `StepFaithfulness`)

    One question per step (first `max_items`, default 8), each judged
    against the steps before it: no invented observations, no ignored
    failures. Score = share of yes. Requires steps.
    """

    prompt_version: ClassVar[str] = "step-faithfulness/4"
    task: ClassVar[str] = ("You judge whether each step of the agent is faithful to the task and to what earlier steps observed. For each "
                           "step k asked about: does it follow from the task and steps 1 to k-1, without invented observations or ignored failures?")

    def plan(self, case: Case) -> Plan | Score:
        if case.trace is None or not case.trace.steps:
            return _not_computed("the case has no steps")
        theirs = _user_steps(case, user_calls(case))  # (the user's own calls on their device: no step of the agent's)
        mine = [i for i in range(1, len(case.trace.steps) + 1) if i not in theirs]
        if not mine:
            return _not_computed("the case has no steps of the agent's")
        qs = [Question(f"q{i}", f"step {i}", step=i) for i in mine[: self.max_items]]
        return _trace_plan(self, case, qs, note=_cap_note(len(mine), self.max_items, "steps"))


@register_metric
class AgentMemoryEval(JudgeMetric):
    """Does the response use prior-session context correctly? (multivon-eval `AgentMemoryEval`)

    Needs `context` (prior sessions); without it the metric is skipped
    (null). Questions: uses the prior context correctly, invents no past
    facts, ignores superseded information, and — when `expected_output` is
    set — includes it (all yes-good). Score = share of good answers.
    """

    prompt_version: ClassVar[str] = "agent-memory/4"
    shows_trace: ClassVar[bool] = False
    task: ClassVar[str] = "You judge whether the agent's response uses what it should remember from earlier sessions."

    def plan(self, case: Case) -> Plan | Score:
        if case.context in (None, "", [], {}):
            return _not_computed("skipped: the case has no context (prior sessions)")
        output = text_of(case.trace.output) if case.trace else ""
        qs = [
            Question("q1", "Does the response use the information from the prior context correctly?"),
            Question("q2", "Does the response avoid inventing past facts that are not in the prior context?"),
            Question("q3", "Does the response ignore information that later context superseded?"),
        ]
        request = request_text(case) if has_turns(case) else text_of(case.input)
        sections = [("Prior context", text_of(case.context)), ("Current request", request), ("Response", output or "(none)")]
        if case.expected_output not in (None, ""):
            qs.append(Question("q4", "Does the response include the expected information?"))
            sections.append(("Expected information", text_of(case.expected_output)))
        return Plan(self, qs, lambda omit: fence(sections), conversation=has_turns(case))


def _passages(case: Case) -> list[str]:
    if case.trace is not None and case.trace.retrieved:
        return [p.content for p in case.trace.retrieved]
    ctx = case.context
    if isinstance(ctx, list):
        return [text_of(c) for c in ctx if text_of(c)]
    return [text_of(ctx)] if text_of(ctx) else []


@register_metric
class ContextRelevance(JudgeMetric):
    """Is each retrieved passage relevant to the input? (multivon-eval `ContextRelevance`)

    Passages: the trace's `retrieved`, else `context` (a list: one passage
    per item). One question per passage (first `max_items`). Score = share
    relevant; 0.0 with no request when there is nothing to judge.
    """

    prompt_version: ClassVar[str] = "context-relevance/4"
    shows_trace: ClassVar[bool] = False
    task: ClassVar[str] = "You judge whether each retrieved passage is relevant to the user's input."
    max_items: int = Field(default=8, ge=1, le=1000)

    def plan(self, case: Case) -> Plan | Score:
        passages = _passages(case)
        if not passages:
            return self.verdict(0.0, "no retrieved passages or context to judge")
        judged = passages[: self.max_items]
        sections = [("Input", request_text(case))] + [(f"Passage {i}", p) for i, p in enumerate(judged, 1)]
        qs = [Question(f"q{i}", f"Is passage {i} relevant to the input?") for i in range(1, len(judged) + 1)]
        return Plan(self, qs, lambda omit: fence(sections), note=_cap_note(len(passages), self.max_items, "passages"), conversation=has_turns(case))


_SENTENCE = re.compile(r"(?<=[.!?])\s+")
# (a break and the spaces around it: what `str.splitlines` splits at). Tried only where a run of spaces starts: tried at
# each of its characters, a run of 3,000,000 spaces with no break (a padded output) took hours, each try scanning the rest.
_LINE_BREAKS = re.compile(r"(?<!\s)\s*[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]\s*")


def claims_of(text: str) -> list[str]:
    """The output's claims: its sentences (split after . ! ? followed by space), blanks dropped."""
    return [s.strip() for s in _SENTENCE.split(text.strip()) if len(s.strip()) > 1]


@register_metric
class Faithfulness(JudgeMetric):
    """Is each claim of the output supported by the retrieved passages? (multivon-eval `Faithfulness`)

    Claims are the output's sentences (split locally, not by a model call —
    a deliberate deviation that saves one request per case and keeps the
    cache key stable); one question per claim (first `max_items`). Score =
    share supported. No output or no passages → null.
    """

    prompt_version: ClassVar[str] = "faithfulness/4"
    shows_trace: ClassVar[bool] = False
    task: ClassVar[str] = "You judge whether each claim of the agent's output is supported by the given passages."

    def plan(self, case: Case) -> Plan | Score:
        output = text_of(case.trace.output) if case.trace else ""
        passages = _passages(case)
        if not output:
            return _not_computed("the case has no output")
        if not passages:
            return _not_computed("the case has no retrieved passages or context")
        claims = claims_of(output)
        judged = claims[: self.max_items]
        # The claims come from the output, so they stay inside the fence; questions name them by number. A claim is one
        # line: one holding a line break (a sentence run on over lines) could start a line `Claim 3: …` of its own.
        claims_text = "\n".join(f"Claim {i}: {_LINE_BREAKS.sub(' ', c)}" for i, c in enumerate(judged, 1))
        sections = [(f"Passage {i}", p) for i, p in enumerate(passages, 1)] + [("Output", output), ("Claims", claims_text)]
        qs = [Question(f"q{i}", f"Is claim {i} (in the Claims section) supported by the passages?") for i in range(1, len(judged) + 1)]
        return Plan(self, qs, lambda omit: fence(sections), note=_cap_note(len(claims), self.max_items, "claims"))


@register_metric
class Rubric(JudgeMetric):
    """The user's own criteria, graded on an integer scale (default 1..5) and normalized to [0, 1].

    `criteria` is the rubric text (part of the cache key); `scale` is
    `[lowest, highest]`; `include` chooses what the judge sees: `trace`
    (task, steps, output; default) or `output` (task and output only).
    Score = (grade − lowest) / (highest − lowest).
    """

    prompt_version: ClassVar[str] = "rubric/4"
    task: ClassVar[str] = "You grade the agent's run against the user's rubric."
    criteria: str = Field(min_length=1)
    scale: tuple[int, int] = (1, 5)
    include: str = Field(default="trace", pattern="^(trace|output)$")

    @model_validator(mode="after")
    def _scale_ok(self) -> Rubric:
        if self.scale[1] <= self.scale[0]:
            raise ValueError("scale must be [lowest, highest] with highest > lowest")
        return self

    @property
    def rubric(self) -> Any:
        return {"criteria": self.criteria, "scale": list(self.scale)}

    def instructions(self, kind: str = "scale", answer_format: str | None = None) -> str:
        lo, hi = self.scale
        fmt = (f"Rubric:\n{self.criteria}\n\nGrade the run on the integer scale {lo} (worst) to {hi} (best) and give a reason "
               f'of one or two sentences, as one JSON object: {{"score": {lo}, "reason": "..."}}. Reply with the JSON object only.')
        return super().instructions(kind, fmt)

    def verdict_schema(self, plan: Plan, question_ids: list[str]) -> dict[str, Any]:
        lo, hi = self.scale
        return {"type": "object", "properties": {"score": {"type": "integer", "minimum": lo, "maximum": hi}, "reason": {"type": "string"}},
                "required": ["score", "reason"], "additionalProperties": False}

    def plan(self, case: Case) -> Plan | Score:
        if self.include == "output":
            out = text_of(case.trace.output) if case.trace else ""
            request = request_text(case, self.trace_format == "full")
            system = levels(self, case)  # (no steps to leave out: a fitted prompt cuts the system prompt first)
            render = lambda omit: fence([*(system_sections(case, min(omit, system), self.system_prompt_chars) if system else []),  # noqa: E731
                                         ("Task (the user's request)", request), ("Final output", AllData(out or "(none)"))])
        elif case.trace is not None:
            return _trace_plan(self, case, [Question("q1", "Grade the run against the rubric.")], kind="scale", scale=self.scale)
        else:
            render = lambda omit: fence(_trace_sections(case, omit, self.trace_format == "full"))  # noqa: E731
        return Plan(self, [Question("q1", "Grade the run against the rubric.")], render, kind="scale", scale=self.scale, conversation=has_turns(case),
                    system=levels(self, case) if self.include == "output" else 0,
                    system_lengths=shown_lengths(self, case) if self.include == "output" else ())

    def finalize(self, plan: Plan, answers: dict[str, dict[str, Any]]) -> Score:
        lo, hi = self.scale
        return self.scored(plan, (answers["q1"]["score"] - lo) / (hi - lo), answers)
