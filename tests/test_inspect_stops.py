"""Format `inspect`: samples stopped before their agent was done — a token limit, a tool that raised, a time limit.

The logs in `tests/data/inspect-stops/` were written by real `inspect_ai.eval(...)` runs (mockllm with scripted replies,
real tools that log their runs) by `tests/frameworks/record_inspect_stops.py`; `truth.json` is what each sample did: the
replies the model made, what the tools' own log says of each call, and what inspect kept (completion, error, limit).

Before: the reply that went past a token limit, which inspect records only in its `model` event, was missing (a step and
its calls gone, `requests` one short, no error said); the call whose tool raised the sample's error, and the calls never
run after it, read as calls in flight with no result and no error; a call a time limit stopped while it ran read as a
call that returned `""`; a limit left `metadata.run_error` empty. Now the reply is a step whose calls did not run, the
raising call failed with the sample's error, every call without a result says why, and the limit's reason is the run's
error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _inspect_logs import InspectLogs, assert_replies_are_steps, calls_as_listed, read_one_sample_log

LOGS = InspectLogs("inspect-stops")
TRUTH, SAMPLES = LOGS.truth, LOGS.samples
reading, _sample_of = LOGS.reading, LOGS.sample_of


def _why(want: dict[str, Any]) -> str:
    """What the run's error is: the sample's error, else the reason of the limit that stopped it."""
    return want["error"] if want["error"] is not None else want["limit"]["reason"]


@pytest.mark.parametrize(("task", "sid"), SAMPLES)
def test_every_reply_is_a_step_and_every_call_reads_as_it_ran(task: str, sid: str) -> None:
    want = TRUTH[task][sid]
    case = reading(task, sid)
    assert case.trace is not None and case.input == want["input"]
    assert_replies_are_steps(case, want)
    usage = case.trace.usage
    assert (usage.requests, usage.input_tokens, usage.output_tokens) == tuple(want["usage"][k] for k in ("requests", "input_tokens", "output_tokens"))
    run_error = _why(want)
    assert case.metadata.get("run_error") == run_error
    for call, c in calls_as_listed(case, want):
        if call["returned"] is not None:
            assert (c.result, c.error) == (call["returned"], None), c
        elif call["raised"] is not None:  # the tool raised the error that ended the sample
            assert (c.result, c.error) == (None, call["raised"]) and call["raised"] == run_error, c
        elif call["started"]:  # the stop came while it ran
            assert c.result is None and c.error is not None and c.error.startswith("did not finish: ") and run_error in c.error, c
        else:
            assert c.result is None and c.error is not None and c.error.startswith("not run: ") and run_error in c.error, c
    assert case.trace.output == want["output"]


def test_the_reply_past_a_token_limit_is_the_last_step_its_calls_not_run() -> None:
    case = reading("token-limit", "over_calls")
    assert case.trace is not None
    last = case.trace.steps[-1]
    assert last.thought == "Now Oslo and Rome." and [c.arguments["city"] for c in last.tool_calls] == ["Oslo", "Rome"]
    assert all(c.error is not None and "token limit (Token limit exceeded. value: 360; limit: 300)" in c.error for c in last.tool_calls)
    assert case.metadata["inspect"]["limit"]["type"] == "token" and case.trace.output == "Now Tokyo."  # (what inspect scored)


def test_an_answer_past_the_limit_is_a_step_not_the_output_inspect_scored() -> None:
    case = reading("token-limit-gen", "over_answer")
    assert case.trace is not None
    assert case.trace.steps[-1].output == "Lima is cloudy, 18 C; Cairo is hot, 35 C." and case.trace.output == "Cairo."


def test_a_sample_past_its_limit_at_its_first_reply_has_that_step() -> None:
    case = reading("token-limit-gen", "over_first")
    assert case.trace is not None
    ((call,),) = [s.tool_calls for s in case.trace.steps]
    assert call.arguments == {"city": "Quito"} and call.error is not None and call.error.startswith("not run: ")
    assert case.trace.output == "" and case.trace.usage.requests == 1


def test_a_log_without_events_leaves_the_calls_as_they_read(tmp_path: Path) -> None:
    """No events, nothing known of the calls: a crashed sample's unanswered call is left without an error it may not have."""
    sample = {"id": "x", "epoch": 1, "input": "q", "target": "t", "error": {"message": "RuntimeError('boom')"},
              "messages": [{"role": "user", "content": "q", "source": "input"},
                           {"role": "assistant", "content": "Checking.", "tool_calls": [{"id": "c1", "function": "f", "arguments": {}}]}]}
    case = read_one_sample_log(tmp_path, sample)
    assert case.trace is not None and case.metadata["run_error"] == "RuntimeError('boom')"
    assert [(c.result, c.error) for c in case.trace.tool_calls()] == [(None, None)]


def test_a_sub_agents_or_a_scorers_reply_is_no_late_step(tmp_path: Path) -> None:
    """A model event under a tool's or a scorer's span before the limit is not the agent's own reply: no step is added."""
    doc = _sample_of("token-limit", "over_calls")
    late = [e for e in doc["events"] if e.get("event") == "model"][-1]  # (the reply past the limit, under the agent's span)
    doc["events"].insert(doc["events"].index(late), {"event": "span_begin", "id": "sub", "parent_id": late["span_id"], "type": "tool"})
    late["span_id"] = "sub"
    case = read_one_sample_log(tmp_path, doc)
    assert case.trace is not None and len(case.trace.steps) == 2 and case.metadata["run_error"].startswith("Token limit exceeded")


def test_an_earlier_replys_call_that_never_ran_is_none_of_the_limits_doing(tmp_path: Path) -> None:
    """A call of an earlier reply with no tool message and no `tool` event (a solver that did not run it): left as it reads;
    only the last reply's calls are the ones the limit stopped."""
    doc = _sample_of("token-limit", "over_calls")
    doc["messages"] = [m for m in doc["messages"] if m.get("tool_call_id") != "t1"]
    doc["events"] = [e for e in doc["events"] if not (e.get("event") == "tool" and e.get("id") == "t1")]
    case = read_one_sample_log(tmp_path, doc)
    assert case.trace is not None
    assert [(c.id, c.result, c.error is None) for c in case.trace.tool_calls()][:2] == [("t1", None, True), ("t2", "rainy, 14 C", True)]
    assert all(c.error is not None and c.error.startswith("not run: ") for c in case.trace.steps[-1].tool_calls)
