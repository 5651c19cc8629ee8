"""Format `inspect`: what inspect-ai's own agents say in the user's role, and tool messages a message limit dropped.

The logs in `tests/data/inspect-agents/` were written by real `inspect_ai.eval(...)` runs (mockllm with scripted replies, a
real tool) by `tests/frameworks/record_inspect_agents.py`; `truth.json` is what each sample did, from the script, inspect's
own prompt constants and the tool's own log of its runs.

`react()` and `basic_agent()` append a user message of their own when the model replies without a tool call ("Please
proceed to the next step …") or when an attempt's answer scored incorrect ("Your submission was incorrect. …"). Before,
each read as a user turn: a second thing the user said, sent again as the user's turn by a live re-run. Now it is no turn
(the user said one thing), it is kept in `metadata.inspect.agent_prompts`, and the refused answer's step has the refusal as
its error. A `message_limit` that the tool messages of a reply would exceed stops the sample after those tools ran and
keeps none of their messages: the calls read as calls that returned nothing; now each has what its `tool` event recorded.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from framework_truth import only_case
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data" / "inspect-agents"
TRUTH = json.loads((DATA / "truth.json").read_text())
LOGS = sorted(TRUTH)


def reading(task: str) -> Case:
    return only_case(DATA / f"{task}.eval", "inspect")


@pytest.mark.parametrize("task", LOGS)
def test_each_sample_reads_as_it_ran(task: str) -> None:
    [(sid, want)] = TRUTH[task].items()
    case = reading(task)
    assert case.id == sid and case.trace is not None
    assert case.input == want["input"]
    assert [m.content for m in case.trace.user_messages] == want["user_turns"] and case.turns == want["user_turns"][1:]
    calls = [{"id": c.id, "name": c.name, "arguments": c.arguments, "result": c.result, "error": c.error} for c in case.trace.tool_calls()]
    assert calls == want["calls"]
    assert case.trace.output == want["output"]
    assert [p["content"] for p in case.metadata["inspect"].get("agent_prompts", [])] == want["agent_prompts"]
    assert (case.metadata["inspect"].get("limit") or {}).get("type") == want["limit"]


@pytest.mark.parametrize("task", ["react-nudge", "agent-nudge"])
def test_the_agents_continue_prompt_is_no_user_turn(task: str) -> None:
    case = reading(task)
    assert case.trace is not None
    [prompt] = case.metadata["inspect"]["agent_prompts"]
    assert prompt["content"].startswith("Please proceed to the next step using your best judgement.")
    first = case.trace.steps[0]  # the reply that made the agent say it: its words, no error
    assert prompt["step"] == 1 and first.output is not None and not first.tool_calls and first.error is None


def test_an_answer_the_scorer_refused_is_its_steps_output_with_the_refusal() -> None:
    [(_, want)] = TRUTH["react-attempts"].items()
    case = reading("react-attempts")
    assert case.trace is not None
    [refused] = want["refused"]
    first = case.trace.steps[0]
    assert (first.output, first.error) == (refused, "output rejected: " + want["agent_prompts"][0])
    assert case.trace.output == want["output"] != refused and all(s.error is None for s in case.trace.steps[1:])


def test_calls_whose_tool_messages_the_message_limit_dropped_keep_what_their_tools_returned() -> None:
    [(_, want)] = TRUTH["msg-limit"].items()
    case = reading("msg-limit")
    assert case.trace is not None
    last = case.trace.steps[-1]
    assert [(c.id, c.result, c.error) for c in last.tool_calls] == [(c["id"], c["result"], None) for c in want["calls"][1:]]
    assert case.metadata["inspect"]["limit"]["type"] == "message"


def test_a_condensed_tool_event_result_and_older_wordings_read_the_same(tmp_path: Path) -> None:
    """A log whose `tool` event text was pooled as an `attachment://` reference (inspect condensed event text so before
    it kept tool results inline) reads that text; react's continue prompt as older releases wrapped it is no turn either."""
    ask = {"role": "user", "content": "Weather in Oslo?", "source": "input"}
    call = {"id": "o1", "function": "get_weather", "arguments": {"city": "Oslo"}}
    older = "\nPlease proceed to the next step using your best judgement. If you believe you\nhave completed the task, please call the `submit()` tool.\n"
    messages = [ask, {"role": "assistant", "content": "Hmm.", "source": "generate"}, {"role": "user", "content": older},
                {"role": "assistant", "content": "Checking.", "source": "generate", "tool_calls": [call]}]
    sample = {"id": "oslo", "epoch": 1, "input": ask["content"], "target": "snow", "messages": messages, "attachments": {"h1": "snow, -2 C"},
              "events": [{"event": "span_begin"}, {"event": "tool", "id": "o1", "function": "get_weather", "result": "attachment://h1"}],
              "output": {"completion": "Checking."}, "limit": {"type": "message", "limit": 4}}
    log = tmp_path / "t.json"
    log.write_text(json.dumps({"version": 2, "status": "success", "eval": {"task": "t", "model": "mockllm/model", "config": {"epochs": 1}},
                               "samples": [sample]}))
    case = only_case(log, "inspect")
    assert case.trace is not None and case.turns == [] and [m.content for m in case.trace.user_messages] == ["Weather in Oslo?"]
    assert [(c.id, c.result, c.error) for c in case.trace.tool_calls()] == [("o1", "snow, -2 C", None)]
    assert case.metadata["inspect"]["agent_prompts"] == [{"step": 1, "content": older.strip()}]
