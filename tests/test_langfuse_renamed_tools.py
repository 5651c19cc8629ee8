"""Langfuse tool observations an application named otherwise than the tool the model called, read as the calls the model made.

Recordings in `tests/data/langfuse-renamed-tools/` (`tests/frameworks/record_langfuse_renamed.py`; the folder's README says what
runs), each read from the OTLP the SDK sent (format `otel`) and from Langfuse's API JSON (format `langfuse`, v1 and v2), and
compared with what the application did (`<scenario>.truth.json`). What was wrong before:

- a tool observation named by `@observe(name="Weather lookup")`, or renamed by the tool with `update_current_span(name=…)`,
  with no call id recorded, paired with none of the model's calls: each call was read twice, once as the model's call with the
  text the model was sent and once as the observation, under its name, with no id;
- an observation paired by its `metadata.tool_call_id` kept its own name (`tool-call`) rather than the tool the model called.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_langfuse_api_langgraph import extract  # (one trace, one case: read the same way)

DATA = Path(__file__).parent / "data" / "langfuse-renamed-tools"
FILES = [("json", "langfuse"), ("v2.json", "langfuse"), ("otlp.jsonl", "otel")]


def truth(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.truth.json").read_text())


@pytest.mark.parametrize("ext, fmt", FILES)
@pytest.mark.parametrize("name", ["lf-decorator-name", "lf-renamed", "lf-generic-id"])
def test_a_renamed_tool_observation_is_the_models_call(name: str, ext: str, fmt: str) -> None:
    want = truth(name)
    assert {c["observation"] for c in want["calls"]}.isdisjoint({c["name"] for c in want["calls"]})  # (named otherwise)
    case = extract(DATA / f"{name}.{ext}", fmt)
    calls = case.trace.tool_calls()
    assert [(c.id, c.name, c.arguments) for c in calls] == [(c["id"], c["name"], c["arguments"]) for c in want["calls"]]  # once each
    for got, ran in zip(calls, want["calls"]):
        if ran["error"] is None:
            assert (got.result, got.error) == (ran["result"], None)
        else:  # the SDK's status message (the exception's text); the result what the model was sent
            assert got.error and ran["error"].endswith(got.error) and got.result == ran["sent"]
    assert case.trace.usage.requests == len(want["requests"]) and len(case.trace.steps) == len(want["requests"])
    assert case.input == want["input"] and case.trace.output == want["output"]
