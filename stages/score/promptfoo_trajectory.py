"""promptfoo's trajectory assertions, under promptfoo's own names: `trajectory:tool-used`, `trajectory:tool-sequence`,
`trajectory:tool-args-match`, `trajectory:step-count`, and each one's `not-` inverse.

Source: promptfoo `src/assertions/trajectory.ts` (`handleTrajectoryToolUsed`,
`handleTrajectoryToolSequence`, `handleTrajectoryToolArgsMatch`,
`handleTrajectoryStepCount`; `stripDefaults`, `stripIgnoredArgs`, `matchesToolArgs`),
the `not-` prefix of `src/assertions/index.ts` (`isAssertionInverse`: any assertion
type), with the steps and the JavaScript comparisons of
`tracejudge.stages.score.promptfoo_steps` and the values of
`tracejudge.stages.score.promptfoo_values`; `trajectory:tool-args-match` is in
`tracejudge.stages.score.promptfoo_args_match`. A config names them as promptfoo does:

    metrics:
      - {type: "trajectory:tool-used", value: [search_orders, compose_reply]}
      - {type: "not-trajectory:tool-used", value: delete_account}

Each scores 1.0 or 0.0 and passes exactly when promptfoo passes it, with promptfoo's
reason word for word; the score key is the type unless `name` is given (promptfoo's
`metric`). `threshold` is refused: promptfoo decides these on their own rule.

What promptfoo's steps are here. promptfoo reads the raw spans of a trace and makes each a
step; tracejudge reads the normalized trace (`Case.trace`), so each promptfoo step type is:

- `tool`: one tool call (`trace.steps[i].tool_calls[j]`), named by the call's `name`, its
  `arguments` the step's args. Failed calls count, as failed tool spans do there. A call
  whose arguments were not recorded (`arguments_missing`) has no args (promptfoo's "no
  arguments were captured"); a payload that is no JSON object is parsed as promptfoo
  parses it (a JSON array or number, else the text).
- `command`: a call of a shell tool (`exec_command`, `local_shell`, `shell`, the names
  listed in the case's `metadata.commandToolNames`, or `execute` given `cmd`, `command` or
  `commands`) whose arguments hold the command: named by the command, matched by it, by
  the tool's name and by the executable (`ls` of `ls -la`), as there. Not a tool step.
- `reasoning`: a step's `thought` (named `reasoning`).
- `message`: a step's `output` (named `agent response`, alias `message`); when no step has
  an output, the trace's `output` is one message at the end.
- `span`: each trace step itself, one model request (named `chat`), first in its step.
- `search`: none. promptfoo makes a search step only of a span that is no tool call
  (a retrieval span with a query); a search *tool* call is a `tool` step in both.

"The same turn" (a nested list in `tool-sequence`) is the tool calls of one trace step:
what one model response asked for. Steps are in trace order: within a trace step its
`span`, `reasoning`, `message`, then its calls.

Differences that cannot be avoided, since the spans are gone once a trace is normalized:

- patterns match a tool's name (and a command's aliases), not the span's name
  (promptfoo also tries `tool.call`, `execute_tool get_weather`, `mcp server/tool`);
- promptfoo counts every span: an agent's root span, HTTP spans and the like are
  `span` steps there and absent here, so `trajectory:step-count` without `type` counts
  model requests, thoughts, messages and calls only; user messages are not steps;
- promptfoo splits the calls of one response into several turns when they ran one
  after another (their spans do not overlap); here they are one turn;
- a call recorded with empty arguments (`""`, none) has arguments `{}` here, where
  promptfoo captured none;
- promptfoo renders a string value with the test's variables (Nunjucks) and reads
  `file://` values; a case has no such variables: values are taken as written.

Reasons quote arguments as `JSON.stringify` writes them, credentials masked
(`redact_quoted`), each payload cut at 1,000 characters. `details` holds the counts and the
trace indexes of what matched (`calls`: indexes into `Trace.tool_calls()`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from pydantic import PrivateAttr, field_validator
from pydantic_core import PydanticCustomError
from tracejudge.core.records import Case, Score
from tracejudge.core.registry import register_metric
from tracejudge.llm.redact import redact_quoted
from tracejudge.stages.score.base import Metric, make_score, no_trace
from tracejudge.stages.score.promptfoo_steps import (
    TrajectoryStep,
    format_args,
    format_step,
    js_number,
    tool_turns,
    trajectory_steps,
)
from tracejudge.stages.score.promptfoo_values import (
    PromptfooSpec,
    SequenceSpec,
    StepCountSpec,
    ToolUsedSpec,
    parse_step_count,
    parse_tool_sequence,
    parse_tool_used,
)

__all__ = [
    "NotTrajectoryStepCount",
    "NotTrajectoryToolSequence",
    "NotTrajectoryToolUsed",
    "PromptfooTrajectoryAssertion",
    "TrajectoryStepCount",
    "TrajectoryToolSequence",
    "TrajectoryToolUsed",
]

_ARGS_SHOWN = 1000  # characters of one argument payload a reason quotes


def _promptfoo_type(kind: str) -> Callable[[type[Metric]], type[Metric]]:
    """Register a metric class under promptfoo's assertion type: the class's `__name__` becomes `kind`, the name a
    registered metric goes by (`register_metric`, `api.metric_spec`) and a score's default key; `__qualname__` stays
    the Python name the registry's table gives (`module:TrajectoryToolUsed`)."""

    def apply(cls: type[Metric]) -> type[Metric]:
        cls.__name__ = kind
        return register_metric(cls)

    return apply


def _steps(labels: list[str]) -> str:
    # promptfoo's `formatStepList`
    return ", ".join(labels) if labels else "(none)"


def _args_text(args: Any) -> str:
    text = format_args(args)
    return text if len(text) <= _ARGS_SHOWN else text[: _ARGS_SHOWN - 1] + "…"


class PromptfooTrajectoryAssertion(PromptfooSpec, Metric):
    """Base of promptfoo's trajectory assertions: `value` is the assertion's value, read when the config loads.

    Subclasses set `assertion` (promptfoo's base type), `inverse` (the `not-` form) and
    `parse` (value → spec, raising `PydanticCustomError` naming the place in the value),
    and implement `check(steps) -> (passed, reason, details)`. `evaluate` returns 1.0/0.0
    with `passed` as promptfoo decides it, or `value: null` for a case without a trace
    (promptfoo: "No trace data available").
    """

    assertion: ClassVar[str] = ""
    inverse: ClassVar[bool] = False
    refused_options: ClassVar[tuple[str, ...]] = ("threshold",)  # (`tracejudge explain` does not offer them)
    value: Any
    _spec: Any = PrivateAttr(default=None)

    @field_validator("threshold", mode="before")
    @classmethod
    def _no_threshold(cls, value: Any) -> Any:
        if value is not None:
            raise PydanticCustomError("promptfoo_threshold", "promptfoo's trajectory assertions pass or fail on their own rule; "
                                      "threshold does not apply (the score is 1 when the assertion passes, else 0)")
        return value

    def model_post_init(self, context: Any) -> None:
        # (validated above: parsed again, once per metric, to keep the typed spec beside the value as written)
        self._spec = type(self).parse(self.value)

    def evaluate(self, case: Case) -> Score:
        if case.trace is None:
            return no_trace()
        passed, reason, details = self.check(trajectory_steps(case))
        details["inverse"] = self.inverse
        return make_score(1.0 if passed else 0.0, passed, redact_quoted(reason), details)

    def check(self, steps: list[TrajectoryStep]) -> tuple[bool, str, dict[str, Any]]:  # pragma: no cover - abstract
        raise NotImplementedError


@_promptfoo_type("trajectory:tool-used")
class TrajectoryToolUsed(PromptfooTrajectoryAssertion):
    """promptfoo's `trajectory:tool-used` (`handleTrajectoryToolUsed`): the tools the agent must have called.

    `value`: a tool name or glob (`search*`, case-insensitive), or a list of them — each
    must match some tool call; or `{name | pattern, min?, max?}` — the calls it matches
    must number `min` (default 1) to `max`. Command steps (shell tools) are not tool
    calls here, as in promptfoo. `not-trajectory:tool-used` passes when none of the listed
    tools was called, or when the count is outside `min`..`max`.
    Example: `value: [search_orders, compose_reply]` on calls `search_orders,
    search_inventory, compose_reply` scores 1 ("Observed required tool(s): …").
    """

    assertion: ClassVar[str] = "trajectory:tool-used"
    parse: ClassVar[Callable[[Any], Any]] = staticmethod(parse_tool_used)

    def check(self, steps: list[TrajectoryStep]) -> tuple[bool, str, dict[str, Any]]:
        spec: ToolUsedSpec = self._spec
        tools = [s for s in steps if s.type == "tool"]
        actual = [format_step(s) for s in tools]
        if spec.count is None:
            matched = [m for m in spec.matchers if any(m.matches(s) for s in tools)]
            missing = [m for m in spec.matchers if not any(m.matches(s) for s in tools)]
            passed = not matched if self.inverse else not missing
            expected = ", ".join(m.label for m in spec.matchers)
            if self.inverse:
                reason = (f"Forbidden tool(s) were not used: {expected}" if passed else
                          f"Forbidden tool(s) were used: {', '.join(m.label for m in matched)}. Actual tools: {_steps(actual)}")
            elif passed:
                reason = f"Observed required tool(s): {expected}. Actual tools: {_steps(actual)}"
            else:
                reason = f"Missing required tool(s): {', '.join(m.label for m in missing)}. Actual tools: {_steps(actual)}"
            return passed, reason, {"matched": [m.label for m in matched], "missing": [m.label for m in missing], "actual": actual}
        matcher = spec.count
        hits = [s for s in tools if matcher.matches(s)]
        count = len(hits)
        base = count >= spec.min and (spec.max is None or count <= spec.max)
        label = matcher.label
        if self.inverse:
            reason = (f'Tool "{label}" matched {count} time(s), which violates the inverse assertion' if base
                      else f'Tool "{label}" did not satisfy the forbidden match condition')
        else:
            reason = f'Matched tool "{label}" {count} time(s)'
            reason += (f" (expected at least {js_number(spec.min)})" if spec.max is None
                       else f" (expected {js_number(spec.min)}-{js_number(spec.max)})")
            if hits:
                reason += f". Matches: {', '.join(format_step(s) for s in hits)}"
        return base != self.inverse, reason, {"count": count, "calls": [s.call for s in hits]}


@_promptfoo_type("trajectory:tool-sequence")
class TrajectoryToolSequence(PromptfooTrajectoryAssertion):
    """promptfoo's `trajectory:tool-sequence` (`handleTrajectoryToolSequence`): tool calls in an expected order.

    `value`: a list of steps, or `{steps: [...], mode: in_order | exact}`. A step is a
    tool name or glob or `{name | pattern}`. `in_order` (default): the steps appear in
    order among the calls, others between allowed; `exact`: the calls are exactly these,
    one for one. A nested list is a group of tools called in one turn (one model
    response), in any order: the value is then compared turn by turn (a turn matches a
    group when it holds exactly those calls). `not-trajectory:tool-sequence` passes when
    the sequence is not observed.
    Example: `[search_orders, compose_reply]` on `search_orders, search_inventory,
    compose_reply` scores 1; with `mode: exact` it scores 0.
    """

    assertion: ClassVar[str] = "trajectory:tool-sequence"
    parse: ClassVar[Callable[[Any], Any]] = staticmethod(parse_tool_sequence)

    def check(self, steps: list[TrajectoryStep]) -> tuple[bool, str, dict[str, Any]]:
        spec: SequenceSpec = self._spec
        tools = [s for s in steps if s.type == "tool"]
        actual = [format_step(s) for s in tools]
        details: dict[str, Any] = {"mode": spec.mode, "turns": spec.has_groups}
        if spec.has_groups:
            turns = tool_turns(tools)
            shown = ", ".join(_turn(t) for t in turns) if turns else "(none)"
            if spec.mode == "exact":
                base = len(turns) == len(spec.groups) and all(map(_turn_matches, turns, spec.groups))
                reason = (f"Observed expected tool turns: {shown}" if base else
                          f"Expected tool turns {', '.join(map(_group, spec.groups))}, but observed {shown}")
            else:
                at = 0
                for turn in turns:
                    if at >= len(spec.groups):
                        break
                    if _turn_matches(turn, spec.groups[at]):
                        at += 1
                base = at == len(spec.groups)
                reason = (f"Observed tool turns in order: {', '.join(map(_group, spec.groups))}. Actual turns: {shown}" if base else
                          f"Expected tool turn {_group(spec.groups[at])} was not observed in order. Actual turns: {shown}")
                details["matched"] = at
        else:
            expected = [group[0] for group in spec.groups]
            if spec.mode == "exact":
                base = len(tools) == len(expected) and all(m.matches(s) for s, m in zip(tools, expected))
                reason = (f"Observed exact tool sequence: {_steps(actual)}" if base else
                          f"Expected exact tool sequence of {', '.join(m.label for m in expected)}, but actual tools were {_steps(actual)}")
            else:
                at = 0
                seen: list[TrajectoryStep] = []
                for step in tools:
                    if at >= len(expected):
                        break
                    if expected[at].matches(step):
                        seen.append(step)
                        at += 1
                base = at == len(expected)
                reason = (f"Observed tool sequence in order: {', '.join(map(format_step, seen))}. Actual tools: {_steps(actual)}"
                          if base else f'Expected tool "{expected[at].label}" was not observed in order. Actual tools: {_steps(actual)}')
                details.update(matched=at, calls=[s.call for s in seen])
        if self.inverse:
            reason = (f"Forbidden tool sequence was observed. Actual tools: {_steps(actual)}" if base
                      else "Forbidden tool sequence was not observed")
        return base != self.inverse, reason, details


def _turn_matches(turn: list[TrajectoryStep], group: tuple[Any, ...]) -> bool:
    """promptfoo's `turnMatchesGroup`: every matcher paired with a distinct call of the turn, and no call left over."""
    if len(turn) != len(group):
        return False
    used = [False] * len(turn)

    def assign(i: int) -> bool:
        if i == len(group):
            return True
        for j, step in enumerate(turn):
            if not used[j] and group[i].matches(step):
                used[j] = True
                if assign(i + 1):
                    return True
                used[j] = False
        return False

    return assign(0)


def _group(group: tuple[Any, ...]) -> str:
    # promptfoo's `formatExpectedGroup`
    labels = [m.label for m in group]
    return f"[{' + '.join(labels)}]" if len(labels) > 1 else labels[0]


def _turn(turn: list[TrajectoryStep]) -> str:
    # promptfoo's `formatActualTurn`
    labels = [format_step(s) for s in turn]
    return f"[{' + '.join(labels)}]" if len(labels) > 1 else labels[0]


@_promptfoo_type("trajectory:step-count")
class TrajectoryStepCount(PromptfooTrajectoryAssertion):
    """promptfoo's `trajectory:step-count` (`handleTrajectoryStepCount`): how many trajectory steps of a kind there were.

    `value`: `{type?: tool | command | search | reasoning | message | span (or a list),
    name? | pattern?, min?, max?}`, with `min` or `max`. Counts the steps (every type, see
    the module docstring for what each is here) the filter selects; passes when the count
    is within `min`..`max`. `not-trajectory:step-count` passes when it is not.
    Example: `{type: tool, max: 3}` on three tool calls scores 1.
    """

    assertion: ClassVar[str] = "trajectory:step-count"
    parse: ClassVar[Callable[[Any], Any]] = staticmethod(parse_step_count)

    def check(self, steps: list[TrajectoryStep]) -> tuple[bool, str, dict[str, Any]]:
        spec: StepCountSpec = self._spec
        hits = [s for s in steps if spec.matcher.matches(s)]
        count = len(hits)
        low, high = spec.min, spec.max
        base = (low is None or count >= low) and (high is None or count <= high)
        if self.inverse:
            reason = ("Trajectory step count satisfied the forbidden range" if base
                      else "Trajectory step count did not satisfy the forbidden range")
        else:
            parts = []
            if spec.matcher.types is not None:
                parts.append(f"type={'|'.join(spec.matcher.types)}")
            if spec.matcher.glob is not None:
                parts.append(f"pattern={spec.matcher.glob}")
            reason = f"Matched {count} trajectory step(s)" + (f" for {', '.join(parts)}" if parts else "")
            if low is not None and high is not None:
                reason += f" (expected {js_number(low)}-{js_number(high)})"
            elif low is not None:
                reason += f" (expected at least {js_number(low)})"
            else:
                reason += f" (expected at most {js_number(high)})"
            if hits:
                reason += f". Matches: {', '.join(map(format_step, hits))}"
        return base != self.inverse, reason, {"count": count, "calls": [s.call for s in hits if s.call is not None]}


@_promptfoo_type("not-trajectory:tool-used")
class NotTrajectoryToolUsed(TrajectoryToolUsed):
    """promptfoo's `not-trajectory:tool-used`: `trajectory:tool-used` inverted (see there); passes when no listed tool was called."""

    inverse: ClassVar[bool] = True


@_promptfoo_type("not-trajectory:tool-sequence")
class NotTrajectoryToolSequence(TrajectoryToolSequence):
    """promptfoo's `not-trajectory:tool-sequence`: `trajectory:tool-sequence` inverted (see there)."""

    inverse: ClassVar[bool] = True


@_promptfoo_type("not-trajectory:step-count")
class NotTrajectoryStepCount(TrajectoryStepCount):
    """promptfoo's `not-trajectory:step-count`: `trajectory:step-count` inverted (see there)."""

    inverse: ClassVar[bool] = True
