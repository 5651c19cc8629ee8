"""`BfclRelevance`: BFCL's relevance check, applied to the calls a trace recorded.

Source: ShishirPatil/gorilla `berkeley-function-call-leaderboard/bfcl_eval/eval_checker/eval_runner.py`
(`relevance_file_runner`), with the handler's `decode_ast` and `utils.is_empty_output`: a reply holds a function call
when it decodes, which needs every call's arguments to be JSON text of an object, and the decoded list is not empty.
One call whose arguments do not decode leaves the whole reply without calls. The check reads the recorded calls itself,
so a target that records undecodable arguments as a call (`arguments_invalid`: text that is not a JSON object) gets
upstream's verdict, not a pass.
"""

from __future__ import annotations

from typing import Literal

from tracejudge.core.records import Case, Score, ToolCall
from tracejudge.core.registry import register_metric
from tracejudge.stages.score.base import Metric, make_score, no_trace

__all__ = ["BfclRelevance"]


def _decodes(call: ToolCall) -> bool:
    """Whether upstream's decoding reads the call's arguments as an object (a mapping, never kept raw text)."""
    return not call.arguments_invalid and isinstance(call.arguments, dict)


@register_metric
class BfclRelevance(Metric):
    """Pass (1.0) when the trace holds a call as BFCL's relevance check reads one (`expect: call`, live_relevance's
    check), or when it holds none (`expect: none`, irrelevance's), else fail (0.0).

    The trace holds a call when it recorded at least one tool call and every one's arguments are a JSON object:
    arguments kept as text that is not one (`arguments_invalid`) count as no call for the whole trace, as upstream
    reads a reply. Any name counts, offered or not. A case with no trace is `invalid_input` (`value: null`); a trace
    with a call whose arguments were not recorded (`arguments_missing`) and none that fails to decode is not computed:
    whether upstream would decode them cannot be told. `details`: `calls` (how many were recorded), `undecodable`
    (how many of them do not decode).
    """

    expect: Literal["call", "none"] = "call"

    def evaluate(self, case: Case) -> Score:
        if case.trace is None:
            return no_trace()
        calls = case.trace.tool_calls()
        bad = [c for c in calls if not _decodes(c)]
        if not bad and any(c.arguments_missing for c in calls):
            return Score(value=None, passed=None, reason="not computed: a call's arguments were not recorded, and upstream "
                                                         "counts a reply's calls only when every one's arguments decode")
        holds = bool(calls) and not bad
        if bad:
            reason = (f"no call as BFCL reads the reply: {len(bad)} of {len(calls)} call(s) have arguments that are no JSON "
                      f"object (the first, {bad[0].name!r}, {str(bad[0].arguments)[:80]!r}), which leaves the whole reply without calls")
        elif calls:
            reason = f"{len(calls)} call(s), each with arguments that decode to an object"
        else:
            reason = "no tool call"
        ok = holds == (self.expect == "call")
        return make_score(1.0 if ok else 0.0, ok, reason, {"calls": len(calls), "undecodable": len(bad)})
