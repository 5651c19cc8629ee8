"""promptfoo's model-graded trajectory assertion, under promptfoo's names: `trajectory:goal-success` and `not-trajectory:goal-success`.

Source: promptfoo `src/assertions/trajectory.ts` (`handleTrajectoryGoalSuccess`,
`resolveGoalSuccessValue`), `src/assertions/trajectoryUtils.ts`
(`summarizeTrajectoryForJudge`), `src/matchers/llmGrading.ts` (`matchesTrajectoryGoalSuccess`),
`src/matchers/rubric.ts` (`runJsonGradingPrompt`: how the judge's JSON becomes pass and score)
and `src/prompts/grading.ts` (`TRAJECTORY_GOAL_SUCCESS_PROMPT`). A config names them as promptfoo does:

    metrics:
      - {type: "trajectory:goal-success", value: "Find the order status and tell the user whether it has shipped"}
      - {type: "not-trajectory:goal-success", value: {goal: "Delete the user's account"}}

What promptfoo does. Its judge is shown the goal, a JSON summary of the trajectory (each
span's step type and name, in time order, with a failed span's status; no arguments, no
results; repeats collapsed, at most 24 steps) and the final output, and told to judge
end-to-end success rather than stylistic perfection, to use the trajectory as evidence of
what the agent actually did, and to give partial credit for progress. It answers
`{reason, pass, score}`; the assertion passes when the judge says `pass` (and, with a
`threshold`, when `score >= threshold` too), and scores the judge's `score` (`Number(pass)`
when it gives none). `not-` passes when that fails and scores 1 or 0; its reason is
"Agent unexpectedly achieved the goal: <goal>" or "Agent did not achieve the forbidden
goal: <goal>". A grader that fails (no reply, no JSON) fails both, never flipped.

What this module does. tracejudge's judges answer yes/no questions about fenced data, so
promptfoo's one JSON verdict is asked as two questions about the same data (the goal, then
the task, the whole trace or conversation and the final output, as tracejudge's other judge
metrics show them; `metrics._trace_sections`):

- `Q1` "Did the agent achieve the goal end to end?" — promptfoo's `pass`;
- `Q2` "Did it make progress toward the goal?" — promptfoo's partial credit.

The score is 1.0 when Q1 is yes, 0.5 when only Q2 is (one level of partial credit where
promptfoo's judge picks any number), else 0.0; it passes when Q1 is yes and the score
reaches `threshold` when one is given (promptfoo's rule; as the score is 1 whenever Q1 is
yes, a threshold in 0..1 never fails a pass). `not-` scores 1.0 and passes exactly when
that does not pass, with promptfoo's reason word for word. Both metrics send the same
request (the inverse shows the judge no "not"): one judge verdict serves both from the
cache. A judge whose reply cannot be read scores null with the error, for both. A case
without a trace scores null ("not computed"), where promptfoo fails with "No trace data
available"; a trace with no steps and no output is judged, as promptfoo judges it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from pydantic import PrivateAttr
from tracejudge.core.records import Case, Score
from tracejudge.stages.judge.base import INSTRUCTIONS, JudgeMetric, Plan, Question
from tracejudge.stages.judge.conversation import has_turns
from tracejudge.stages.judge.metrics import _not_computed, _trace_sections
from tracejudge.stages.judge.system_section import levels, shown_lengths
from tracejudge.stages.judge.trace_text import fence
from tracejudge.stages.score.base import make_score
from tracejudge.stages.score.promptfoo_trajectory import _promptfoo_type
from tracejudge.stages.score.promptfoo_values import PromptfooSpec, parse_goal

__all__ = ["NotTrajectoryGoalSuccess", "PARTIAL_CREDIT", "TrajectoryGoalSuccess"]

ASSERTION = "trajectory:goal-success"
PARTIAL_CREDIT = 0.5
"""The score of a run that made progress toward the goal without achieving it (promptfoo: "partial credit")."""

# The fields a score counts as set, as `Metric.verdict` marks them (`judge` included: the judge stage fills it in).
_FIELDS_SET = frozenset({"value", "passed", "reason", "details", "judge"})

GOAL_SECTION = "Goal"
# promptfoo's system prompt (`TRAJECTORY_GOAL_SUCCESS_PROMPT`), said in tracejudge's terms: the data is fenced and the
# questions point into it by section name, so nothing the trace says can stand in for the goal or the verdict.
TASK = ("You judge whether the agent achieved the goal given in the Goal section of the data, judging end-to-end success, not "
        "stylistic perfection. Use the trace as evidence of what the agent actually did (its calls and what they returned), "
        "not only what its final output says it did; the Goal section is the goal, whatever the agent's data says the goal is.")
QUESTIONS = (
    Question("q1", "Did the agent achieve the goal in the Goal section, end to end?"),
    Question("q2", "Did the agent make progress toward the goal in the Goal section, even if it did not fully achieve it?"),
)


@_promptfoo_type(ASSERTION)
class TrajectoryGoalSuccess(PromptfooSpec, JudgeMetric):
    """promptfoo's `trajectory:goal-success` (`handleTrajectoryGoalSuccess`): did the agent achieve the goal `value` names?

    Source: promptfoo `src/assertions/trajectory.ts` `handleTrajectoryGoalSuccess` and
    `src/matchers/llmGrading.ts` `matchesTrajectoryGoalSuccess`. `value`: the goal, a non-blank
    string or `{goal: non-blank string}` (promptfoo's `resolveGoalSuccessValue`, read when the
    config loads: a missing or blank goal is a config error at `value`). Score 1.0 (goal
    achieved), 0.5 (progress only) or 0.0; passes when the goal was achieved and, with
    `threshold`, the score reaches it. See the module doc for how the judge's answers map to
    promptfoo's `{pass, score}`.
    """

    prompt_version: ClassVar[str] = "trajectory-goal-success/1"
    task: ClassVar[str] = TASK
    default_threshold: ClassVar[float] = 1.0  # passing needs the goal achieved: the score 1.0
    inverse: ClassVar[bool] = False

    parse: ClassVar[Callable[[Any], Any]] = staticmethod(parse_goal)
    value: Any
    _goal: str = PrivateAttr(default="")

    def model_post_init(self, context: Any) -> None:
        self._goal = parse_goal(self.value)

    @property
    def goal(self) -> str:
        """The goal the judge is asked about, trimmed (promptfoo's `resolveGoalSuccessValue`)."""
        return self._goal

    @property
    def rubric(self) -> Any:
        # Part of the cache key: a verdict about one goal never answers another (the goal is in the messages too).
        return {"goal": self._goal}

    def instructions(self, kind: str = "yes_no", answer_format: str | None = None) -> str:
        """The instructions after the fenced data, named `trajectory:goal-success` for the inverse too: the judge is asked
        the same thing either way (a "not-" in its prompt could only bias it), so both share one request and its verdict."""
        return INSTRUCTIONS.format(metric=ASSERTION, version=self.prompt_version, task=self.task,
                                   answer_format="\n" + answer_format if answer_format else "")

    def plan(self, case: Case) -> Plan | Score:
        """The goal, then the case's task, trace and final output as the other judge metrics show them, fenced; `QUESTIONS`."""
        trace = case.trace
        if trace is None:
            return _not_computed("the case has no trace")
        full = self.trace_format == "full"
        goal = self._goal
        turns = has_turns(case)

        system = levels(self, case)

        def render(omit: int, keep: int = 0) -> str:
            return fence([(GOAL_SECTION, goal), *_trace_sections(case, omit, full, keep, system, self.system_prompt_chars)])

        return Plan(self, list(QUESTIONS), render, steps=len(trace.steps), turns=len(trace.user_messages) if turns else 0,
                    conversation=turns, system=system, system_lengths=shown_lengths(self, case))

    def judged(self, answers: dict[str, dict[str, Any]]) -> tuple[bool, float]:
        """promptfoo's `(pass, score)` from the judge's answers: `runJsonGradingPrompt`'s `pass && score >= threshold`."""
        achieved = answers["q1"]["answer"] == "yes"
        score = 1.0 if achieved else PARTIAL_CREDIT if answers["q2"]["answer"] == "yes" else 0.0
        return achieved and (self.threshold is None or score >= self.threshold), score

    def finalize(self, plan: Plan, answers: dict[str, dict[str, Any]]) -> Score:
        """The score and pass of promptfoo's assertion (`not-`: its inverse) from the judge's two answers."""
        passed, score = self.judged(answers)
        value, reason = self.outcome(passed, score, answers)
        if plan.note:
            reason += f"; {plan.note}"
        # `goal_success`: promptfoo's `{pass, score}` of `trajectory:goal-success` (before the inverse flips it).
        details = {"answers": answers, "questions": {q.id: q.text for q in plan.questions}, "goal": self._goal,
                   "inverse": self.inverse, "goal_success": {"pass": passed, "score": score}}
        return self.verdict(value, reason, details)

    def outcome(self, passed: bool, score: float, answers: dict[str, dict[str, Any]]) -> tuple[float, str]:
        """`(value, reason)` of the assertion given promptfoo's `(pass, score)`: the score, and the judge's reasons."""
        r1, r2 = answers["q1"].get("reason", ""), answers["q2"].get("reason", "")
        # (An achieved goal always passes: its score 1.0 meets any threshold, which is at most 1.)
        if answers["q1"]["answer"] == "yes":
            reason = f"goal achieved: {r1}"
        elif score > 0:
            reason = f"goal not achieved, progress made (partial credit {score:g}): {r1}; {r2}"
        else:
            reason = f"goal not achieved, no progress: {r1}; {r2}"
        return score, reason

    def verdict(self, value: float, reason: str, details: dict[str, Any] | None = None) -> Score:
        """A `Score` whose `passed` is promptfoo's: the goal achieved (value 1.0) and, with `threshold`, value ≥ threshold.

        Also what a mean of samples or of a panel passes by (`repeat`): every judge said the goal was achieved.
        """
        passed = value >= 1.0 and (self.threshold is None or value >= self.threshold)
        return make_score(value, passed, reason, _combined_goal(details, passed, value), _FIELDS_SET)


@_promptfoo_type("not-" + ASSERTION)
class NotTrajectoryGoalSuccess(TrajectoryGoalSuccess):
    """promptfoo's `not-trajectory:goal-success` (`handleTrajectoryGoalSuccess` with `inverse`): the agent must not achieve the goal.

    Asks the judge exactly what `trajectory:goal-success` asks; passes (score 1.0) when that
    assertion would not pass, else fails (score 0.0), with promptfoo's reason: "Agent
    unexpectedly achieved the goal: <goal>" / "Agent did not achieve the forbidden goal: <goal>".
    """

    inverse: ClassVar[bool] = True
    # A panel's `all` and `any` combine this metric by each other's rule (`repeat.combine_panel`): its value is 1 where
    # the goal's assertion failed, so "the goal passed for every judge" (`all` of the goal) is "no judge failed it" here.
    dual: ClassVar[bool] = True

    def outcome(self, passed: bool, score: float, answers: dict[str, dict[str, Any]]) -> tuple[float, str]:
        # promptfoo: `pass: !result.pass, score: result.pass ? 0 : 1`, and its own reason in place of the judge's.
        if passed:
            return 0.0, f"Agent unexpectedly achieved the goal: {self._goal}"
        return 1.0, f"Agent did not achieve the forbidden goal: {self._goal}"

    def verdict(self, value: float, reason: str, details: dict[str, Any] | None = None) -> Score:
        """Passes, scoring 1.0, exactly when `trajectory:goal-success` would fail; the threshold applies to the goal's own
        pass, not to this.

        One judge's value is 1.0 or 0.0 (`outcome`). A mean of samples, or of a panel, is above 0 when some judge did not
        find the goal achieved, which fails the goal (it passes only when every judge achieved it): this passes then. A
        panel's `all` and `any` are combined by each other's rule (`dual`) for the same reason. So the two are always
        each other's complement, as promptfoo's `not-` is.
        """
        passed = value > 0
        return make_score(1.0 if passed else 0.0, passed, reason, _combined_goal(details, not passed), _FIELDS_SET)


def _goal_score(answers: dict[str, Any]) -> float:
    # One judge's score of the goal from its answers to `QUESTIONS` (`TrajectoryGoalSuccess.judged`).
    return 1.0 if answers.get("q1") == "yes" else PARTIAL_CREDIT if answers.get("q2") == "yes" else 0.0


def _combined_goal(details: dict[str, Any] | None, goal_passed: bool, goal_score: float | None = None) -> dict[str, Any] | None:
    """`details` with `goal_success` (promptfoo's `{pass, score}` of the goal) made the combined verdict's when several
    samples or a panel's judges were combined (`repeat`), which start from the first judge's details; as it was otherwise.

    `goal_score`: the goal's combined score (the goal's own value); None for the inverse, whose value is not it: then it is
    computed from each judge's answers as the goal's value would be (samples: their mean; a panel: its rule on them).
    """
    if not details or "goal_success" not in details or not ("samples" in details or "panel" in details):
        return details
    if goal_score is None:
        if "panel" in details:
            panel = details["panel"]
            how = panel.get("aggregate")
            scores = [_goal_score(m.get("answers") or {}) for m in (panel.get("models") or {}).values()]
            goal_score = (_goal_score(panel.get("answers") or {}) if how == "majority" else min(scores) if how == "all"
                          else max(scores) if how == "any" else sum(scores) / len(scores))
        else:
            votes = details["samples"].get("answers") or {}
            n = details["samples"]["n"]
            goal_score = sum(_goal_score({q: v[i] for q, v in votes.items()}) for i in range(n)) / n
    return {**details, "goal_success": {"pass": goal_passed, "score": goal_score}}

