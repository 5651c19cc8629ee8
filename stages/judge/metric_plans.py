"""What the judge metrics' `plan` methods share (`metrics`, `promptfoo_goal`, the pairwise comparison).

The sections a case is shown in (task, trace, final output; or its
conversation), the plan asking questions about them, the plan asking one
question per tool call of the agent's, the note saying a metric judged only
its first `max_items`, and the score of a metric that cannot be computed.
"""

from __future__ import annotations

from typing import Any

from tracejudge.core.records import Case, Score
from tracejudge.stages.judge.base import JudgeMetric, Plan, Question
from tracejudge.stages.judge.conversation import conversation_sections, has_turns
from tracejudge.stages.judge.field_cut import AllData
from tracejudge.stages.judge.system_section import levels, shown_lengths, split, system_sections
from tracejudge.stages.judge.trace_text import FIELD_CHARS, fence, final_output, nested_steps, render_steps, text_of, user_calls

__all__ = ["calls_plan", "cap_note", "not_computed", "trace_plan", "trace_sections"]


def trace_sections(case: Case, omit: int, full: bool = False, keep: int = 0, system: int = 0,
                   system_chars: int = FIELD_CHARS) -> list[tuple[str, str]]:
    """The fenced sections of a case: its system prompts when `system` (`system_section.levels`) is not 0, then the task,
    the trace and the final output, or its conversation. `omit`: `Plan.render`'s (middle steps, then with `system` the
    prompts cut further, then middle user turns: `system_section.split`)."""
    head: list[tuple[str, str]] = []
    if system:
        omit, level = split(len(case.trace.steps) if case.trace is not None else 0, omit, keep, system)
        head = system_sections(case, level, system_chars)
    if has_turns(case):
        return head + conversation_sections(case, omit, full, keep)
    sections = [*head, ("Task (the user's request)", AllData(text_of(case.input) or "(none)"))]  # (neutralised by `fence`, after any cut)
    if case.trace is not None:
        steps = case.trace.steps
        sections.append(("Trace", render_steps(steps, omit, full, keep=keep, nested=nested_steps(case), by_user=user_calls(case))))
        sections.append(("Final output", final_output(case, full)))
    return sections


def trace_plan(metric: JudgeMetric, case: Case, qs: list[Question], **kw: Any) -> Plan:
    """The plan asking `qs` about the case's task, trace and output (`trace_sections`), its conversation included, and its
    system prompts when the metric asks for them (`include_system_prompt`)."""
    assert case.trace is not None
    turns = has_turns(case)
    full = metric.trace_format == "full"
    system = levels(metric, case)
    return Plan(metric, qs, lambda omit, keep=0: fence(trace_sections(case, omit, full, keep, system, metric.system_prompt_chars)), steps=len(case.trace.steps),
                turns=len(case.trace.user_messages) if turns else 0, conversation=turns, system=system,
                system_lengths=shown_lengths(metric, case), **kw)


def cap_note(total: int, cap: int, what: str) -> str:
    return f"judged the first {cap} of {total} {what} (max_items={cap})" if total > cap else ""


def not_computed(why: str) -> Score:
    return Score(value=None, passed=None, reason=f"not computed: {why}")


def calls_plan(metric: JudgeMetric, case: Case) -> Plan | Score | None:
    if case.trace is None:
        return not_computed("the case has no trace")
    calls = case.trace.tool_calls()
    users = user_calls(case)
    # The agent's calls only (numbered as the trace numbers every call): the user's own, on their device (τ²-bench's
    # telecom), are not the agent's to be judged for.
    mine = [i for i in range(1, len(calls) + 1) if i - 1 not in users]
    if not mine:
        return None
    judged = mine[: metric.max_items]
    # Each question names the step holding its call: a prompt fitted to the judge's context keeps that step, or does not ask.
    step_of = [i for i, s in enumerate(case.trace.steps, 1) for _ in s.tool_calls]
    qs = [Question(f"q{i}", f"call {i}", step=step_of[i - 1]) for i in judged]
    return trace_plan(metric, case, qs, note=cap_note(len(mine), metric.max_items, "tool calls"))
