"""`TauOutputs`: τ-bench's output check, `r_outputs`, on the case's `metadata.outputs`.

Source: sierra-research/tau-bench `tau_bench/envs/base.py`, `Env.calculate_reward`: for a task with
`outputs`, each output string must occur in the `content` of some `respond` action of the run (the
agent's replies to the user), compared as `output.lower() in content.lower().replace(",", "")`;
`r_outputs` is 1.0 when every output is found, else 0.0 (and the reward is then 0.0 whatever the
database). Only the reply loses its commas, not the output: `"1,000"` is never found, as upstream.

The `tau-bench` format keeps a task's outputs in `metadata.outputs` (`tau-bench-tasks` too) and
reads every reply as a step's `output` (the tool-calling strategy's assistant messages without a
call, the `react`/`act` strategies' `respond` actions); the calls' texts are no replies.

A config names it `type: TauOutputs` (e.g. `{type: TauOutputs, name: r_outputs}`).
"""

from __future__ import annotations

from typing import Any

from tracejudge.core.records import Case, Score
from tracejudge.core.registry import register_metric
from tracejudge.llm.redact import redact_quoted
from tracejudge.stages.score.base import Metric, no_expectation, no_trace

__all__ = ["TauOutputs", "replies", "upstream_found"]


def replies(case: Case) -> list[str]:
    """The agent's reply texts of the case's trace, in order: every step's `output`, and the trace's `output` (its last
    reply, which a hand-written trace may give without steps). `[]` without a trace."""
    trace = case.trace
    if trace is None:
        return []
    texts = [s.output for s in trace.steps if isinstance(s.output, str)]
    if isinstance(trace.output, str):
        texts.append(trace.output)  # (the last reply again, in a τ-bench trace: found twice, counted once)
    return texts


def upstream_found(outputs: list[str], texts: list[str]) -> dict[str, bool]:
    """`{output: found}` as `calculate_reward` decides it: `output.lower()` inside a reply lower-cased, its commas removed."""
    seen = [t.lower().replace(",", "") for t in texts]
    return {o: any(o.lower() in t for t in seen) for o in outputs}


def _shown(texts: list[str]) -> str:
    return ", ".join(repr(redact_quoted(t, 80)[:80]) for t in texts[:5]) + (", …" if len(texts) > 5 else "")


@register_metric
class TauOutputs(Metric, defer_build=True):
    """1.0 when every string of `metadata.outputs` occurs in some agent reply, else 0.0: τ-bench's `r_outputs`.

    The comparison is upstream's (module docstring): case ignored, commas removed from the reply only,
    a substring anywhere in any reply (`35` is found in `135`). `details.outputs` lists each output with
    whether it was found. A case without a trace → `value: null`; without outputs (`metadata.outputs`
    missing or `[]`: upstream checks none) → `value: null`; outputs that are not a list of texts → `value: null`
    saying so.
    """

    def evaluate(self, case: Case) -> Score:
        if case.trace is None:
            return no_trace()
        outputs: Any = case.metadata.get("outputs")
        if outputs is None or outputs == []:
            return no_expectation("metadata.outputs")
        if not isinstance(outputs, list) or not all(isinstance(o, str) for o in outputs):
            return Score(value=None, passed=None, reason="not computed: metadata.outputs must be a list of texts (τ-bench's task outputs)")
        found = upstream_found(outputs, replies(case))
        missing = [o for o in outputs if not found[o]]
        details = {"outputs": [{"output": redact_quoted(o, 80)[:80], "found": found[o]} for o in outputs]}
        if missing:
            return self.verdict(0.0, f"no agent reply says {_shown(missing)} (τ-bench's output check)", details)
        return self.verdict(1.0, f"the agent's replies say every output: {_shown(outputs)}", details)
