"""A LangGraph agent traced by Langfuse's LangChain `CallbackHandler`, read from Langfuse's API JSON (format `langfuse`).

Recording in `tests/data/langfuse-api-langgraph/` (`tests/frameworks/record_langfuse_langgraph.py`; the folder's README
says what runs): one reply asks for three calls, one of a tool that raised (ToolNode's `handle_tool_errors` answer) and
one of a tool that does not exist, then the agent answers.

- The handler types LangGraph's node "agent" as an `AGENT` observation. Format `otel` reads the SDK's spans as a graph
  node (its `langfuse.observation.metadata.langgraph_node`); format `langfuse` dropped that metadata, so each node run
  was an agent run of its own: the calls were read twice, once more in a step of no request (before: six calls, three
  steps for two requests). It is now read from the observation's `metadata` (where Langfuse keeps the SDK's
  `langfuse.observation.metadata.*` keys), else its `metadata.attributes` (an export that keeps the span's attributes
  whole), as `tool_call_id` is.
- The unknown tool's call is failed with ToolNode's error message, which only the `tools` chain's output holds (`status:
  "error"`): format `langfuse` passed that output on decoded, where the reading looks for it in the JSON text the SDK
  sends (before: no error).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tracejudge.core import registry
from tracejudge.core.config import DatasetConfig
from tracejudge.core.records import Case
from tracejudge.stages.extract import extract_record

DATA = Path(__file__).parent / "data" / "langfuse-api-langgraph"


def extract(path: Path, fmt_name: str) -> Case:
    fmt = registry.format_for(fmt_name)
    ds = DatasetConfig(path=path, format=fmt_name, options={})
    ctx = fmt.prepare(ds)
    cases = [extract_record(raw, fmt, ctx) for raw in fmt.read(ds)]
    assert len(cases) == 1 and isinstance(cases[0], Case), cases
    return cases[0]


def check(case: Case) -> None:
    want = json.loads((DATA / "lf-react.truth.json").read_text())
    sent = {m["tool_call_id"]: m for m in want["tool_messages"]}
    raised = {r["name"]: r["raised"] for r in want["tool_runs"] if "raised" in r}
    assert len(case.trace.steps) == want["requests"] == case.trace.usage.requests
    calls = case.trace.tool_calls()
    assert [(c.id, c.name, c.arguments, c.result) for c in calls] == [(c["id"], c["name"], c["arguments"], sent[c["id"]]["content"]) for c in want["calls"]]
    assert [c.error is not None for c in calls] == [sent[c["id"]]["status"] == "error" for c in want["calls"]] == [False, True, True]
    assert calls[1].error in raised["cancel_order"]  # the exception the tool raised (Langfuse's status message)
    assert calls[2].error == sent["call_r3"]["content"]  # ToolNode's own answer: no tool ran
    assert not case.metadata.get("nested_steps") and "run_error" not in case.metadata
    assert case.input == want["asked"] and case.trace.output == want["last_message"]["content"]


@pytest.mark.parametrize("file, fmt", [("lf-react.json", "langfuse"), ("lf-react.v2.json", "langfuse"), ("lf-react.otlp.jsonl", "otel")])
def test_the_graphs_agent_node_is_a_step_of_the_run(file: str, fmt: str) -> None:
    check(extract(DATA / file, fmt))


def _attributes_only(observation: dict[str, Any]) -> dict[str, Any]:
    """`observation` with its metadata kept as span attributes only (`metadata.attributes`, JSON text), as an export that keeps
    a span's attributes whole writes it (Langfuse's server itself lifts these keys to the top of `metadata` for any span)."""
    meta = observation["metadata"]
    attrs = {f"langfuse.observation.metadata.{k}": json.dumps(v) for k, v in meta.items() if k not in ("resourceAttributes", "scope")}
    return {**observation, "metadata": {"attributes": attrs, "resourceAttributes": meta["resourceAttributes"], "scope": meta["scope"]}}


def test_the_api_files_hold_metadata_as_langfuses_server_returns_it() -> None:
    # (`tests/frameworks/langfuse_api.py`, after the server's `OtelIngestionProcessor`): the SDK's metadata keys at the
    # top, JSON-decoded, no `attributes`; the v2 page's flattened to dotted keys; times in milliseconds.
    trace = json.loads((DATA / "lf-react.json").read_text())
    tool = next(o for o in trace["observations"] if o["name"] == "get_weather")
    assert tool["metadata"]["tool_call_id"] == "call_r1" and "attributes" not in tool["metadata"]
    assert tool["metadata"]["scope"]["name"] == "langfuse-sdk" and tool["startTime"].endswith("Z") and len(tool["startTime"]) == 24
    page = json.loads((DATA / "lf-react.v2.json").read_text())
    row = next(o for o in page["data"] if o["name"] == "get_weather")
    assert row["metadata"]["tool_call_id"] == "call_r1" and row["metadata"]["scope.name"] == "langfuse-sdk"


def test_the_node_is_told_by_its_span_attributes_too(tmp_path: Path) -> None:
    trace = json.loads((DATA / "lf-react.json").read_text())
    path = tmp_path / "attributes.json"
    path.write_text(json.dumps({**trace, "observations": [_attributes_only(o) for o in trace["observations"]]}) + "\n")
    check(extract(path, "langfuse"))
