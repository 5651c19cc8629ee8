"""Sub-agents run inside a tool call, streams that report no usage, the Agents SDK's Responses export, MLflow's streamed calls.

Recorded by the real libraries against the project's fake server (`tests/frameworks/record_subagents_streams.py`;
the folder's README says what each scenario is; `<s>.outcome.json` is what the framework returned and the tokens
the server reported). What was wrong before:

- OpenLLMetry listed a graph nobody named as an agent of its turn, `LangGraph` (its `invoke_agent LangGraph` span), where
  the other instrumentations list none: that is LangGraph's default name, no agent's.
- A sub-agent's steps (a LangGraph agent run inside a tool, an Agents SDK agent `as_tool`) were laid out by start
  time alone: two researchers run in parallel interleaved, nothing marked them as the sub-agent's, and a judge
  reading in order saw the calling agent make again the calls whose results it already had.
- A run whose requests only partly recorded tokens (an Agents SDK stream, which asks for no usage) summed the
  requests that did: 114 tokens for a run of four requests, which `TokenUsage` passed against a budget of 200.
- The Agents SDK's own export of a Responses API run lost the handoff call `transfer_to_<agent>`.
- MLflow's streamed chat completions lost every call id (and so a failed call's `Error: …` result), which only
  its chunk events hold.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from framework_truth import only_case
from helpers import calls, extract_path, layout
from tracejudge.core.records import Case
from tracejudge.stages.judge.trace_text import nested_steps, render_steps
from tracejudge.stages.score import TokenUsage
import _forkserver

DATA = Path(__file__).parent / "data" / "subagents-streams"
WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C", "Zürich": "bewölkt, 12 °C"}


def read(name: str, fmt: str) -> Case:
    """The one case format `fmt` makes of `DATA/name`."""
    return only_case(DATA / name, fmt)


def outcome(scenario: str) -> dict[str, Any]:
    return json.loads((DATA / f"{scenario}.outcome.json").read_text())


# --- 1. a sub-agent's steps come with the call that ran them --------------------------------------------------

@pytest.mark.parametrize("scenario", ["lg-supervisor-oi", "lg-supervisor-tl"])
def test_each_researchers_steps_follow_the_step_that_called_it_in_the_models_order_of_the_calls(scenario: str) -> None:
    case = read(f"{scenario}.jsonl", "otel")
    assert case.trace is not None
    assert calls(case) == [
        ("call_s1", "ask_researcher", {"question": "Weather in Paris?"}, "Paris: sunny, 21 C", None),
        ("call_s2", "ask_researcher", {"question": "Weather in Tokyo?"}, "Tokyo: rainy, 14 C", None),
        ("call_r_Paris", "get_weather", {"city": "Paris"}, WEATHER["Paris"], None),  # what call 1's researcher did
        ("call_r_Tokyo", "get_weather", {"city": "Tokyo"}, WEATHER["Tokyo"], None),  # then call 2's
    ]
    assert layout(case) == [(["ask_researcher", "ask_researcher"], None), (["get_weather"], None), ([], "Paris: sunny, 21 C"),
                            (["get_weather"], None), ([], "Tokyo: rainy, 14 C"), ([], "Paris is sunny; Tokyo is rainy.")]
    assert case.metadata["nested_steps"] == [{"step": 1, "call": 0}, {"step": 2, "call": 0}, {"step": 3, "call": 1}, {"step": 4, "call": 1}]
    assert [(m.step, m.content) for m in case.trace.user_messages] == [(0, "Ask the researcher about Paris and about Tokyo, then summarise.")]
    assert case.trace.output == outcome(scenario)["final_output"]
    turn = case.metadata["otel"]["turns"][0]
    assert (turn["final_text"], turn["intermediate_texts"], turn["steps"], turn["calls"]) == (case.trace.output, [], [0, 6], [0, 4])
    usage = case.trace.usage
    assert usage is not None and (usage.input_tokens, usage.output_tokens, usage.requests) == (615, 75, 6)
    assert (outcome(scenario)["input_tokens"], outcome(scenario)["output_tokens"], outcome(scenario)["requests"]) == (615, 75, 6)


def test_a_judge_given_the_nesting_reads_which_steps_ran_inside_which_call() -> None:
    case = read("lg-supervisor-oi.jsonl", "otel")
    assert case.trace is not None
    assert render_steps(case.trace.steps, nested=nested_steps(case)) == "\n".join([
        "Step 1:",
        " call 1: ask_researcher({question:Weather in Paris?})",
        "  ran steps 2–3 before returning",
        "  result: Paris: sunny, 21 C",
        " call 2: ask_researcher({question:Weather in Tokyo?})",
        "  ran steps 4–5 before returning",
        "  result: Tokyo: rainy, 14 C",
        "Step 2:",
        " [sub-agent, inside call 1: ask_researcher]",
        " call 3: get_weather({city:Paris})",
        "  result: sunny, 21 C",
        "Step 3:",
        " [sub-agent, inside call 1: ask_researcher]",
        " output: Paris: sunny, 21 C",
        "Step 4:",
        " [sub-agent, inside call 2: ask_researcher]",
        " call 4: get_weather({city:Tokyo})",
        "  result: rainy, 14 C",
        "Step 5:",
        " [sub-agent, inside call 2: ask_researcher]",
        " output: Tokyo: rainy, 14 C",
        "Step 6:",
        " output: Paris is sunny; Tokyo is rainy.",
    ])
    assert "sub-agent" not in render_steps(case.trace.steps)  # without the nesting, the text (and its cache key) is as before


@pytest.mark.parametrize(("name", "fmt"), [("oi-agents-as-tool.jsonl", "otel"), ("export-agents-as-tool.jsonl", "openai-agents")])
def test_an_agent_called_as_a_tool_is_named_on_the_step_it_made(name: str, fmt: str) -> None:
    case = read(name, fmt)
    assert case.trace is not None
    assert [(c.id, c.name, c.arguments, c.failed) for c in case.trace.tool_calls()] == [
        ("call_h1", "transfer_to_wetter_agent", {}, False), ("call_w1", "get_weather", {"city": "Zürich"}, False),
        ("call_c1", "cancel_order", {"order_id": "#W999"}, True), ("call_x1", "translate", {"input": "bewölkt, 12 °C"}, False),
        ("call_p1", "get_weather", {"city": "Paris"}, False)]
    assert layout(case) == [(["transfer_to_wetter_agent"], None), (["get_weather", "cancel_order", "translate", "get_weather"], None),
                            ([], "cloudy, 12 °C"), ([], outcome("agents-as-tool")["final_output"])]
    assert case.metadata["nested_steps"] == [{"step": 2, "call": 3, "agent": "Translator"}]
    text = render_steps(case.trace.steps, nested=nested_steps(case))
    assert " call 4: translate({input:\"bewölkt, 12 °C\"})\n  ran step 3 before returning\n  result: cloudy, 12 °C" in text
    assert "Step 3:\n [sub-agent Translator, inside call 4: translate]\n output: cloudy, 12 °C\nStep 4:" in text
    assert case.trace.output == outcome("agents-as-tool")["final_output"]
    usage = case.trace.usage
    assert usage is not None and (usage.input_tokens, usage.output_tokens, usage.requests) == (406, 46, 4)
    assert "requests_without_usage" not in case.metadata


def test_a_named_agent_a_tool_ran_labels_its_steps_under_openllmetry() -> None:
    # OpenLLMetry records each call's `invoke_agent researcher` span beside the spans holding the researcher's requests
    # (both under the call's tool span), not around them: the steps read `[sub-agent, inside call 1: …]`, unnamed.
    case = read("lg-named-tl.jsonl", "otel")
    assert case.trace is not None and case.trace.output == outcome("lg-named-tl")["final_output"]
    assert [c[:2] for c in calls(case)] == [("call_s1", "ask_researcher"), ("call_s2", "ask_researcher"), ("call_r_Paris", "get_weather"),
                                            ("call_r_Tokyo", "get_weather")]
    assert case.metadata["nested_steps"] == [{"step": s, "call": c, "agent": "researcher"} for s, c in ((1, 0), (2, 0), (3, 1), (4, 1))]
    text = render_steps(case.trace.steps, nested=nested_steps(case))
    assert text.count("[sub-agent researcher, inside call 1: ask_researcher]") == text.count("[sub-agent researcher, inside call 2: ask_researcher]") == 2
    assert case.metadata["otel"]["turns"][0]["agents"] == ["researcher", "supervisor"]


NAMED = [("lg-named-oi.jsonl", "otel"), ("lg-named-mlflow.mlflow.jsonl", "mlflow"), ("lg-named-mlflow.otlp.jsonl", "otel"),
         ("lg-named-lf.otlp.jsonl", "otel"), ("lg-named-lf.json", "langfuse"), ("lg-named-lf.v2.json", "langfuse")]


@pytest.mark.parametrize(("name", "fmt"), NAMED)
def test_a_named_agent_a_tool_ran_labels_its_steps_where_only_its_graphs_span_names_it(name: str, fmt: str) -> None:
    # OpenInference, MLflow and Langfuse record the researcher graph as a chain span named `researcher` under the call's
    # tool span, and no agent span: its steps read `[sub-agent, inside call 1: …]`, unnamed.
    scenario = name.split(".")[0]
    case = read(name, fmt)
    assert case.trace is not None and case.trace.output == outcome(scenario)["final_output"]
    assert calls(case) == [
        ("call_s1", "ask_researcher", {"question": "Weather in Paris?"}, "Paris: sunny, 21 C", None),
        ("call_s2", "ask_researcher", {"question": "Weather in Tokyo?"}, "Tokyo: rainy, 14 C", None),
        ("call_r_Paris", "get_weather", {"city": "Paris"}, WEATHER["Paris"], None),
        ("call_r_Tokyo", "get_weather", {"city": "Tokyo"}, WEATHER["Tokyo"], None),
    ]
    assert case.metadata["nested_steps"] == [{"step": s, "call": c, "agent": "researcher"} for s, c in ((1, 0), (2, 0), (3, 1), (4, 1))]
    text = render_steps(case.trace.steps, nested=nested_steps(case))
    assert text.count("[sub-agent researcher, inside call 1: ask_researcher]") == text.count("[sub-agent researcher, inside call 2: ask_researcher]") == 2
    usage = case.trace.usage
    assert usage is not None and (usage.input_tokens, usage.output_tokens, usage.requests) == (615, 75, 6) == tuple(
        outcome(scenario)[k] for k in ("input_tokens", "output_tokens", "requests"))
    # the supervisor and the researcher are the turn's agents, as OpenLLMetry's `invoke_agent` spans say (they listed none)
    assert case.metadata["otel"]["turns"][0]["agents"] == ["researcher", "supervisor"]


@pytest.mark.parametrize(("name", "fmt"), NAMED)
def test_a_graph_left_unnamed_names_no_agent(name: str, fmt: str, tmp_path: Path) -> None:
    # LangGraph calls a graph nobody named `LangGraph` (as `lg-supervisor-oi` records it): that is no agent's name
    unnamed = tmp_path / name
    unnamed.write_text(re.sub(r'"name": ?"researcher"', '"name": "LangGraph"', (DATA / name).read_text()))
    case = only_case(unnamed, fmt)
    assert case.metadata["nested_steps"] == [{"step": s, "call": c} for s, c in ((1, 0), (2, 0), (3, 1), (4, 1))]
    assert "[sub-agent, inside call 2: ask_researcher]" in render_steps(case.trace.steps, nested=nested_steps(case))  # type: ignore[union-attr]
    assert case.metadata["otel"]["turns"][0]["agents"] == ["supervisor"]


RECORDINGS = DATA.parent
SAME_RUNS = [("subagents-streams/lg-supervisor", "-tl.jsonl", "-oi.jsonl"), ("langgraph-handoff/", "tl-handoff.jsonl", "oi-handoff.jsonl"),
             *((f"frameworks/{{}}-langchain/{run}", ".jsonl", ".jsonl") for run in ("booking", "failing", "multiturn", "parallel", "sequence"))]


@pytest.mark.parametrize(("stem", "tl", "oi"), SAME_RUNS, ids=[s.replace("{}-", "") + t for s, t, _ in SAME_RUNS])
def test_openllmetrys_spans_of_a_graph_left_unnamed_name_no_agent(stem: str, tl: str, oi: str) -> None:
    # OpenLLMetry writes `invoke_agent LangGraph` and `LangGraph.workflow` for the graph nobody named; it listed `LangGraph`
    # as an agent of every turn, where OpenInference (and MLflow, Langfuse) list none for the same run
    def agents(path: Path) -> list[list[str]]:
        return [t["agents"] for c in extract_path(path, "otel") for t in c.metadata["otel"]["turns"]]
    got = agents(RECORDINGS / (stem.format("traceloop") + tl))
    assert got == agents(RECORDINGS / (stem.format("openinference") + oi)) and all("LangGraph" not in a for a in got)


# --- 2. tokens some requests did not record are unknown, not the others' sum -----------------------------------

@pytest.mark.parametrize(("name", "fmt"), [("oi-agents-stream-nousage.jsonl", "otel"), ("export-agents-stream-nousage.jsonl", "openai-agents")])
def test_a_run_whose_requests_partly_recorded_tokens_has_unknown_usage_and_says_how_many_lack_it(name: str, fmt: str) -> None:
    ran = outcome("agents-stream-nousage")
    assert (ran["requests"], ran["input_tokens"], ran["output_tokens"]) == (4, 406, 46)  # what the four requests spent
    case = read(name, fmt)
    assert case.trace is not None and case.trace.usage is not None
    assert (case.trace.usage.input_tokens, case.trace.usage.output_tokens, case.trace.usage.requests) == (None, None, 4)
    assert case.metadata["requests_without_usage"] == 3  # only the Translator's request, run inside the tool, was not streamed
    assert case.metadata["otel"]["turns"][0]["usage"] == {"input_tokens": None, "output_tokens": None, "requests": 4, "requests_without_usage": 3}
    score = TokenUsage(max_tokens=200).evaluate(case)
    assert (score.value, score.passed) == (None, None)  # it passed with "114 tokens, budget 200"
    assert score.reason == "not computed: 3 of the trace's 4 model requests recorded no token usage, so the total is unknown"
    assert case.trace.output == ran["final_output"] and len(case.trace.tool_calls()) == 5


# --- 3. the Agents SDK's Responses export keeps the handoff call ------------------------------------------------

def test_the_responses_export_has_the_handoff_call_its_handoff_span_records() -> None:
    case = read("export-agents-responses.jsonl", "openai-agents")
    assert case.trace is not None
    assert [(c.id, c.name, c.arguments, c.arguments_missing, c.result, c.failed) for c in case.trace.tool_calls()] == [
        # the export keeps no call id or arguments; the reply is the SDK's transfer message, which its handoff span names
        (None, "transfer_to_wetter_agent", {}, True, json.dumps({"assistant": "Wetter-Agent"}), False),
        (None, "get_weather", {"city": "Zürich"}, False, WEATHER["Zürich"], False),
        (None, "cancel_order", {"order_id": "#W999"}, False, "An error occurred while running the tool. Please try again.", True),
        (None, "translate", {"input": "bewölkt, 12 °C"}, False, "cloudy, 12 °C", False),
        (None, "get_weather", {"city": "Paris"}, False, WEATHER["Paris"], False)]
    assert layout(case) == [(["transfer_to_wetter_agent"], None), (["get_weather", "cancel_order", "translate", "get_weather"], None),
                            ([], None), ([], None)]
    assert case.metadata["nested_steps"] == [{"step": 2, "call": 3, "agent": "Translator"}]
    usage = case.trace.usage
    assert usage is not None and (usage.input_tokens, usage.output_tokens, usage.requests) == (406, 46, 4)
    # OpenInference's recording of the same run keeps the text: the same calls, in the same steps
    oi = read("oi-agents-responses.jsonl", "otel")
    assert [(c.name, c.arguments) for c in oi.trace.tool_calls()] == [(c.name, c.arguments) for c in case.trace.tool_calls()]  # type: ignore[union-attr]
    assert layout(oi)[:2] == layout(case)[:2] and oi.trace.output == outcome("agents-responses")["final_output"]  # type: ignore[union-attr]


# --- 4. MLflow's streamed chat completions: the calls from the chunk events --------------------------------------

@pytest.mark.parametrize(("name", "fmt"), [("mlflow-stream.mlflow.jsonl", "mlflow"), ("mlflow-stream.otlp.jsonl", "otel")])
def test_streamed_calls_keep_their_ids_and_a_failed_calls_error_text(name: str, fmt: str) -> None:
    # what MLflow recorded: an output without the calls, and of the long stream only its last 128 chunks
    (line,) = (DATA / "mlflow-stream.mlflow.jsonl").read_text().splitlines()
    chats = [s for s in json.loads(line)["data"]["spans"] if s["attributes"].get("mlflow.spanType") == '"CHAT_MODEL"']
    assert json.loads(chats[0]["attributes"]["mlflow.spanOutputs"])["choices"][0]["message"]["tool_calls"] is None
    events = [e["name"] for e in chats[1]["events"]]
    assert len(events) == 128 and events[0] != "mlflow.chunk.item.0"
    case = read(name, fmt)
    note = "Paris is sunny. " * 100
    assert calls(case) == [
        ("call_m1", "get_weather", {"city": "Paris"}, WEATHER["Paris"], None),
        ("call_m2", "cancel_order", {"order_id": "#W999"}, "Error: Bestellung #W999 nicht gefunden", "ValueError: Bestellung #W999 nicht gefunden"),
        # its first chunks, id and name among them, were past the 128 events a span keeps: no id, the tool span's arguments
        (None, "save_note", {"text": note}, "saved 1600 characters", None),
    ]
    assert layout(case) == [(["get_weather", "cancel_order"], None), (["save_note"], None), ([], outcome("mlflow-stream")["final_output"])]
    assert case.trace is not None and case.trace.steps[1].thought == "Saving a note."
    usage = case.trace.usage
    assert usage is not None and (usage.input_tokens, usage.output_tokens, usage.requests) == (303, 33, 3)


def test_the_judge_prompt_labels_the_sub_agents_steps_with_the_call_that_ran_them(tmp_path: Path) -> None:
    # What the judge reads (`estimate --show-prompt`, built as the run builds it): unlabelled, the researchers' steps
    # read as the supervisor making again the calls whose results it already had.
    import subprocess
    import sys

    case_id = read("lg-supervisor-oi.jsonl", "otel").id
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset: {{path: {DATA / 'lg-supervisor-oi.jsonl'}, format: otel}}\n"
                   "metrics: [{type: ToolCallNecessity}]\njudge: {provider: simulator, model: sim}\n")
    shown = _forkserver.run([sys.executable, "-m", "tracejudge", "estimate", str(cfg), "--show-prompt", case_id],
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    lines = [line.strip() for line in shown.stdout.splitlines()]
    at = lines.index("Step 1:")
    assert [line for line in lines[at:] if "before returning" in line or line.startswith("[sub-agent")] == [
        "ran steps 2–3 before returning", "ran steps 4–5 before returning",
        "[sub-agent, inside call 1: ask_researcher]", "[sub-agent, inside call 1: ask_researcher]",
        "[sub-agent, inside call 2: ask_researcher]", "[sub-agent, inside call 2: ask_researcher]"]
