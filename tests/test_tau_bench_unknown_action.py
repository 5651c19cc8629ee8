"""τ-bench's answer to a tool the domain does not have is a failed call, like its `Error:` answers."""

from __future__ import annotations

from tracejudge.stages.extract.tau_bench import adapt
from tracejudge.stages.score import ToolCalls


def test_unknown_action_marks_the_call_failed():
    # tau_bench/envs/base.py `Env.step`: a name outside the domain's tools observes "Unknown action <name>" and changes nothing
    call = {"id": "c1", "type": "function", "function": {"name": "refund_order", "arguments": '{"order_id": "#W1"}'}}
    raw = {"task_id": 3, "trial": 0, "reward": 0.0, "info": {"task": {"actions": [{"name": "refund_order", "kwargs": {"order_id": "#W1"}}]}},
           "traj": [{"role": "system", "content": "policy"}, {"role": "user", "content": "Refund #W1."},
                    {"role": "assistant", "content": None, "tool_calls": [call]},
                    {"role": "tool", "tool_call_id": "c1", "name": "refund_order", "content": "Unknown action refund_order"},
                    {"role": "assistant", "content": "Done."}, {"role": "user", "content": "###STOP###"}]}
    case = adapt(raw, None)
    [made] = case.trace.tool_calls()
    assert made.error == "Unknown action refund_order"
    assert ToolCalls(arguments="exact", include_failed=False).evaluate(case).value == 0.0, "a call that ran nothing meets no expectation"
