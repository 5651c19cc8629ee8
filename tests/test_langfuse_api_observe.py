"""Langfuse's `@observe` tools read with the arguments they were called with; the SDK's manual API read whole.

Recordings in `tests/data/langfuse-api-observe/` (`tests/frameworks/record_langfuse_observe.py`; the folder's README says
what runs), each read from the OTLP the SDK sent (format `otel`) and from Langfuse's API JSON (format `langfuse`, `GET
/api/public/traces/{id}` and `GET /api/public/v2/observations`).

- `lf-args`: an `@observe` order desk that asks no model calls its `@observe(as_type="tool")` functions positionally, by
  keyword, with no argument, as a method mixing both, and one that raises. The SDK records a call's inputs as
  `{"args": [<positional>], "kwargs": {<keyword>}}` (`_get_input_from_func_args`, `self` left out), with no parameter
  names. Keyword-only calls read their keyword arguments; the others read that record whole (`{"args": ["#W1"],
  "kwargs": {}}`; a call with no argument `{"args": [], "kwargs": {}}`, not `{}`). Now keyword arguments are read by
  name, positional ones (whose names the record does not hold) as a list under `args`, a call with neither `{}`.
- `lf-manual` (read right before too; kept as a regression): `start_as_current_observation` around a plain `openai`
  client, the application setting each generation's `usage_details` and `cost_details`, and `level="ERROR"` with a
  `status_message` on a tool that failed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_langfuse_api_langgraph import extract  # (one trace, one case: read the same way)

DATA = Path(__file__).parent / "data" / "langfuse-api-observe"
FILES = [("json", "langfuse"), ("v2.json", "langfuse"), ("otlp.jsonl", "otel")]




def truth(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.truth.json").read_text())


def recorded(call: dict[str, Any]) -> dict[str, Any]:
    """What the record allows of a call's arguments: its keyword arguments by name, its positional ones as a list."""
    return {**({"args": call["positional"]} if call["positional"] else {}), **call["keyword"]}


@pytest.mark.parametrize("ext, fmt", FILES)
def test_observed_tools_read_the_arguments_they_were_called_with(ext: str, fmt: str) -> None:
    want = truth("lf-args")
    case = extract(DATA / f"lf-args.{ext}", fmt)
    calls = case.trace.tool_calls()
    assert [c.name for c in calls] == [c["name"] for c in want["calls"]]
    assert [c.arguments for c in calls] == [recorded(c) for c in want["calls"]]
    # every argument passed by keyword is read by its name, as the function's parameters name it
    assert all(c.arguments[k] == w["arguments"][k] for c, w in zip(calls, want["calls"]) for k in w["keyword"])
    assert [(c.result, c.error) for c in calls] == [(w["result"], w["error"]) for w in want["calls"]]
    assert not any(c.arguments_invalid or c.arguments_missing for c in calls)
    assert case.input == want["input"] and case.trace.output == want["output"]


@pytest.mark.parametrize("ext, fmt", FILES)
def test_the_manual_api_reads_usage_costs_and_failed_tools(ext: str, fmt: str) -> None:
    want = truth("lf-manual")
    case = extract(DATA / f"lf-manual.{ext}", fmt)
    calls = case.trace.tool_calls()
    assert [(c.id, c.name, c.arguments) for c in calls] == [(c["id"], c["name"], c["arguments"]) for c in want["calls"]]
    assert [c.error for c in calls] == [c["error"] for c in want["calls"]]
    assert [c.result for c in calls] == [c["result"] if c["error"] is None else c["sent"] for c in want["calls"]]  # (failed: what the model got)
    assert len(case.trace.steps) == len(want["requests"]) == case.trace.usage.requests
    assert (case.trace.usage.input_tokens, case.trace.usage.output_tokens) == (want["tokens"]["input"], want["tokens"]["output"])
    if fmt == "langfuse":  # (format `otel` reads no cost)
        assert case.trace.usage.cost_usd == pytest.approx(want["cost_usd"])
    assert case.input == want["input"] and case.trace.output == want["output"]
