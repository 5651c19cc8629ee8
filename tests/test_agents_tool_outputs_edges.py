"""OpenAI Agents SDK tool outputs at the edges: a timed-out call whose tool span was dropped, and a huge Python-repr output.

Both read the real recordings of `tests/data/agents-tool-timeout/` (`tests/frameworks/record_agents_tool_timeout.py`;
the folder's README says what ran): the SDK's export (format `openai-agents`), OpenInference and OpenLLMetry (`otel`),
changed by hand as an exporter or a tool would change them:

- the `lookup_order` tool span removed (an exporter dropped it): the call is still read, from the request that asked for
  it, and its result from the tool message the next request sent, which is the SDK's timeout message; the call is
  failed with it, as when the span is there (before: a call that succeeded with that text);
- `get_weather`'s output made a megabyte of Python `repr` (`['a', 'a', …]`, as the export and OpenInference write a
  list a tool returned): read as it is, without parsing it as Python (before: parsed whole, then checked item by item
  as the SDK's structured outputs: seconds for one output).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest
from helpers import extract_path
from tracejudge.core.records import Case
from tracejudge.stages.extract.otel.conventions import agents_outputs

DATA = Path(__file__).parent / "data" / "agents-tool-timeout"
MESSAGE = "Tool 'lookup_order' timed out after 0.3 seconds."
# (the export keeps no text of a Responses API request: the call it asked for cannot be read without its span)
DROPPED = [("export", "openai-agents", "timeout_chat"), ("oi", "otel", "timeout_chat"), ("oi", "otel", "timeout_responses"),
           ("tl", "otel", "timeout_chat"), ("tl", "otel", "timeout_responses")]
BIG = "[" + ", ".join(["'a'"] * 200_000) + "]"  # 1 MB


def truth(scenario: str) -> dict[str, Any]:
    return json.loads((DATA / f"{scenario}.truth.json").read_text())


def edited(src: Path, dst: Path, tool: str, output: str | None) -> Path:
    """`src` with the spans of `tool` removed (`output` None) or their output replaced by `output`, written to `dst`."""
    lines = []
    for line in src.read_text().splitlines():
        doc = json.loads(line)
        if "spans" in doc:  # the SDK's export: `{"trace", "spans"}`
            mine = [s for s in doc["spans"] if s["span_data"].get("type") == "function" and s["span_data"].get("name") == tool]
            doc["spans"] = [s for s in doc["spans"] if s not in mine or output is not None]
            for s in mine:
                s["span_data"]["output"] = output
        for rs in doc.get("resourceSpans", []):
            for ss in rs["scopeSpans"]:
                mine = [s for s in ss["spans"] if s["name"] in (tool, f"{tool}.tool")]
                ss["spans"] = [s for s in ss["spans"] if s not in mine or output is not None]
                for s in mine:
                    for a in s["attributes"]:
                        if a["key"] in ("output.value", "traceloop.entity.output", "gen_ai.tool.call.result"):
                            a["value"] = {"stringValue": output}
        lines.append(json.dumps(doc))
    dst.write_text("\n".join(lines) + "\n")
    return dst


def only_case(path: Path, fmt: str) -> Case:
    (case,) = extract_path(path, fmt)
    assert isinstance(case, Case), case
    return case


@pytest.mark.parametrize("kind, fmt, scenario", DROPPED, ids=[f"{k}-{s}" for k, _, s in DROPPED])
def test_a_timed_out_call_without_its_span_is_failed_from_the_next_request(kind: str, fmt: str, scenario: str, tmp_path: Path) -> None:
    want = truth(scenario)
    assert want["cancelled"] == ["lookup_order"] and want["calls"][0]["error"] == MESSAGE
    case = only_case(edited(DATA / f"{kind}-{scenario}.jsonl", tmp_path / "dropped.jsonl", "lookup_order", None), fmt)
    got = case.trace.tool_calls()
    assert [(c.name, c.arguments, c.result, c.error) for c in got] == [(c["name"], c["arguments"], c["result"], c["error"]) for c in want["calls"]]
    assert got[0].failed and not got[1].failed
    assert case.metadata.get("run_error") is None


@pytest.mark.parametrize("kind, fmt", [("export", "openai-agents"), ("oi", "otel")])
def test_a_huge_repr_output_is_read_as_it_is_without_parsing_it(kind: str, fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[int] = []
    real = ast.parse

    def parse(source: Any, *args: Any, **kwargs: Any) -> Any:
        parsed.append(len(source))
        return real(source, *args, **kwargs)

    monkeypatch.setattr(agents_outputs.ast, "parse", parse)
    case = only_case(edited(DATA / f"{kind}-timeout_chat.jsonl", tmp_path / "big.jsonl", "get_weather", BIG), fmt)
    (lookup, weather) = case.trace.tool_calls()
    assert (weather.name, weather.result, weather.error) == ("get_weather", BIG, None)
    assert (lookup.result, lookup.error) == (MESSAGE, MESSAGE)
    assert not [n for n in parsed if n > 1_000], parsed  # (a glance at the first item, never the megabyte)


def test_structured_outputs_are_still_read_and_other_data_is_not() -> None:
    read = agents_outputs.tool_output
    assert read("[ToolOutputText(type='text', text='a'), ToolOutputText(type='text', text='b ]})')]") == "a\nb ]})"
    assert read("{'type': 'text', 'text': 'x', 'annotations': {'audience': ['user']}}") == "x"  # (extra fields nested)
    assert read("[{'type': 'image', 'image_url': 'data:x'}]") == [{"type": "image", "image_url": "data:x"}]
    for data in ["['a', 'b']", "[{'id': 1, 'type': 'order'}]", "[{'type': 'text', 'text': 'a'}, 'b']", BIG, "[{'text': 'x', 'k': [[[1]]]}]"]:
        assert read(data) == data
