"""smolagents' planning steps, and a tool's empty result, read the same by every reader of the same run.

The recordings in `tests/data/smolagents-planning/` were made with the real libraries by
`tests/frameworks/record_smolagents_planning.py` (see its docstring and the folder's README): each smolagents
run is kept twice, as OpenInference spans (`.oi.jsonl`, format `otel`) and as the agent's own memory
(`.memory.jsonl`, format `smolagents`); `.truth.json` holds what the application sent and got.

- A plan (`planning_interval`) is the agent's thought: never a step's output, an intermediate text or the answer.
  Its request counts, with its tokens, under both readers, and both lay the run out as the same steps.
- A tool that returned `""` has the result `""` under every convention, also when the exporter wrote the
  empty string as an empty `AnyValue` (`-unset`, as the OpenTelemetry Java SDK does); an output that was not
  recorded (hidden by `TraceConfig`, or absent) is still no result.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from framework_truth import assert_truth, only_case
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data" / "smolagents-planning"


def _truth(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.truth.json").read_text())


def _spans(path: Path) -> list[dict[str, Any]]:
    return [span for line in path.read_text().splitlines() for rs in json.loads(line)["resourceSpans"]
            for ss in rs["scopeSpans"] for span in ss["spans"]]


def _attr(span: dict[str, Any], key: str) -> Any:
    return next((a.get("value", {}).get("stringValue") for a in span.get("attributes", []) if a["key"] == key), None)


def _rewrite(src: Path, dst: Path, keep: Any = lambda span: True, drop: Any = lambda span, key: False) -> Path:
    """`src` with only the spans `keep(span)` accepts, each without the attributes `drop(span, key)` names."""
    out = []
    for line in src.read_text().splitlines():
        doc = json.loads(line)
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                ss["spans"] = [{**s, "attributes": [a for a in s.get("attributes", []) if not drop(s, a["key"])]} for s in ss["spans"] if keep(s)]
        out.append(json.dumps(doc))
    dst.write_text("\n".join(out) + "\n")
    return dst


def _steps(case: Case) -> list[dict[str, Any]]:
    """The steps as the judge sees them: thought, output, and each call's name, arguments and result."""
    assert case.trace is not None
    return [{"thought": s.thought, "output": s.output, "calls": [(c.name, c.arguments, c.result, c.error) for c in s.tool_calls]}
            for s in case.trace.steps]


@pytest.mark.parametrize("name", ["planning-tool", "planning-code"])
def test_a_plan_is_a_thought_never_an_output(name: str) -> None:
    """ToolCallingAgent and CodeAgent with `planning_interval=1`: each plan the model wrote is a step's thought."""
    truth = _truth(name)
    assert len(truth["plans"]) == 2 and sum(b.get("stop") == ["<end_plan>"] for b in truth["sent"]) == 2  # the recording planned twice
    case = only_case(DATA / f"{name}.oi.jsonl", "otel")
    steps = case.trace.steps
    assert [s.thought for s in steps if s.thought in truth["plans"]] == truth["plans"]
    assert not {s.output for s in steps} & set(truth["plans"])
    (turn,) = case.metadata["otel"]["turns"]
    assert not set(truth["plans"]) & {turn["final_text"], *turn["intermediate_texts"]}  # nothing the agent said to the user
    assert case.trace.output == truth["output"]


def test_both_readers_lay_a_planning_run_out_alike() -> None:
    """The same ToolCallingAgent run, from its spans and from its memory: same turns, steps, tokens and answer, as sent."""
    truth = _truth("planning-tool")
    spans = only_case(DATA / "planning-tool.oi.jsonl", "otel")
    memory = only_case(DATA / "planning-tool.memory.jsonl", "smolagents")
    for case in (spans, memory):
        assert_truth(case, truth)
        usage = case.trace.usage
        assert (usage.input_tokens, usage.output_tokens, usage.requests) == (truth["usage"]["input_tokens"], truth["usage"]["output_tokens"],
                                                                              truth["usage"]["requests"])
        assert len(case.trace.steps) == truth["usage"]["requests"]  # the planning requests are steps of their own
    assert _steps(spans) == _steps(memory)
    assert [(m.step, m.content) for m in spans.trace.user_messages] == [(m.step, m.content) for m in memory.trace.user_messages]
    assert [s.thought for s in memory.trace.steps[::2]] == truth["plans"]  # the model's own words, not smolagents' wrapper


def test_a_code_agents_plans_read_alike_from_spans_and_memory() -> None:
    """CodeAgent: the plan steps, the tokens and requests (planning included) and the answer agree with the truth under both readers."""
    truth = _truth("planning-code")
    spans = only_case(DATA / "planning-code.oi.jsonl", "otel")
    memory = only_case(DATA / "planning-code.memory.jsonl", "smolagents")
    for case in (spans, memory):
        plans = [s for s in case.trace.steps if s.thought in truth["plans"]]
        assert [(s.thought, s.output, s.tool_calls) for s in plans] == [(p, None, []) for p in truth["plans"]]
        usage = case.trace.usage
        assert (usage.input_tokens, usage.output_tokens, usage.requests) == (truth["usage"]["input_tokens"], truth["usage"]["output_tokens"],
                                                                              truth["usage"]["requests"])
        assert case.trace.output == truth["output"]


def test_a_run_cut_short_after_its_plan_has_no_answer(tmp_path: Path) -> None:
    """Spans exported while the agent still ran (the planning request ended, nothing else had): the plan is no answer."""
    src = DATA / "planning-tool.oi.jsonl"
    first = min((s for s in _spans(src) if _attr(s, "openinference.span.kind") == "LLM"), key=lambda s: int(s["startTimeUnixNano"]))
    case = only_case(_rewrite(src, tmp_path / "cut.jsonl", keep=lambda s: s["spanId"] == first["spanId"]), "otel")
    assert case.trace.output is None
    assert [(s.thought, s.output) for s in case.trace.steps] == [(_truth("planning-tool")["plans"][0], None)]
    assert case.trace.usage.requests == 1 and case.trace.usage.input_tokens == 100


# (recording, format) of the runs whose `log_event` returned ""
EMPTY = [
    ("empty-smolagents.oi.jsonl", "otel"), ("empty-smolagents-unset.oi.jsonl", "otel"), ("empty-smolagents.memory.jsonl", "smolagents"),
    ("empty-agents.oi.jsonl", "otel"), ("empty-agents-unset.oi.jsonl", "otel"), ("empty-agents.export.jsonl", "openai-agents"),
    ("empty-openai-oi.jsonl", "otel"), ("empty-openai-oi-unset.jsonl", "otel"), ("empty-openai-tl.jsonl", "otel"), ("empty-openai-tl-unset.jsonl", "otel"),
]


def test_an_empty_tool_result_is_empty_under_every_convention() -> None:
    """OpenInference (smolagents, Agents SDK, OpenAI), OpenLLMetry (OpenAI), smolagents' memory and the Agents SDK's export all read `""`."""
    got = {}
    for file, fmt in EMPTY:
        case = only_case(DATA / file, fmt)
        truth = _truth(file.split(".")[0])
        assert_truth(case, truth)
        got[file] = [c.result for c in case.trace.tool_calls() if c.name == "log_event"]
    assert got == {file: [""] for file, _ in EMPTY}


def _empty_value_keys(path: Path) -> list[str]:
    """The attribute keys the recording holds with an empty `AnyValue` (`"value": {}`)."""
    return [a["key"] for s in _spans(path) for a in s.get("attributes", []) if a.get("value") == {}]


@pytest.mark.parametrize("name", ["empty-smolagents-unset", "empty-agents-unset"])
def test_an_output_written_empty_is_empty_and_one_not_written_is_none(name: str, tmp_path: Path) -> None:
    """`output.value` present with an empty `AnyValue` is the tool's `""`; the same span without the attribute has no result."""
    src = DATA / f"{name}.oi.jsonl"
    assert _empty_value_keys(src) == ["output.value"]  # the tool span's: the exporter wrote "" as an empty value
    assert [c.result for c in only_case(src, "otel").trace.tool_calls() if c.name == "log_event"] == [""]

    def tool_output(span: dict[str, Any], key: str) -> bool:
        return key == "output.value" and _attr(span, "openinference.span.kind") == "TOOL" and _attr(span, "tool.name") == "log_event"

    absent = only_case(_rewrite(src, tmp_path / "absent.jsonl", drop=tool_output), "otel")
    assert [(c.result, c.error) for c in absent.trace.tool_calls() if c.name == "log_event"] == [(None, None)]


def test_an_output_the_instrumentation_hid_is_no_result() -> None:
    """`TraceConfig(hide_inputs=True, hide_outputs=True)`: every output is `__REDACTED__`, and no call has a result (nor an empty one)."""
    case = only_case(DATA / "hidden-smolagents.oi.jsonl", "otel")
    assert [(c.name, c.result) for c in case.trace.tool_calls()] == [("get_weather", None), ("log_event", None)]
    unset = only_case(DATA / "empty-smolagents-unset.oi.jsonl", "otel")  # the same run, its outputs recorded: one of them ""
    assert [(c.name, c.result) for c in unset.trace.tool_calls()] == [("get_weather", "sunny, 21 C"), ("log_event", "")]


def test_a_code_agents_answering_code_is_its_thought_and_the_answer_its_output() -> None:
    """CodeAgent: the last request's words and code (`final_answer("…")` in `<code>`) are reasoning, as its memory has
    them; the step's output is the answer. Under OpenInference that text was the step's output, what the agent said."""
    truth = _truth("planning-code")
    spans = only_case(DATA / "planning-code.oi.jsonl", "otel")
    memory = only_case(DATA / "planning-code.memory.jsonl", "smolagents")
    last_spans, last_memory = spans.trace.steps[-1], memory.trace.steps[-1]
    assert "final_answer(" in (last_spans.thought or "") and last_spans.output == truth["output"]
    assert (last_spans.thought, last_spans.output) == (last_memory.thought, last_memory.output)
    (turn,) = spans.metadata["otel"]["turns"]
    assert turn["final_text"] == truth["output"]
