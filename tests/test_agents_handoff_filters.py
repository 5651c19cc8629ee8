"""An OpenAI Agents SDK handoff whose `input_filter` removed the transfer from the next agent's input reads whole.

Recorded by the real SDK (0.24.0) against the project's scripted loopback server, under OpenInference's
`OpenAIAgentsInstrumentor` (format `otel`) and the SDK's own export (format `openai-agents`) at once
(`tests/frameworks/record_agents_handoff_filters.py`; the folder's README says what each scenario is;
`<scenario>.truth.json` is what the run did, from the application's own values). What was wrong before: with
`handoff(agent, input_filter=handoff_filters.remove_all_tools)` no request's input holds the SDK's output for the
`transfer_to_<agent>` call (the filter removes the call and its output from what the next agent gets), so the
handoff, which ran, read as a call with no result. It now has the SDK's transfer message, as an unfiltered handoff
reads (`unfiltered`). The same holds under OpenLLMetry's openai-agents instrumentation (`tl-<scenario>.jsonl`, format
`otel`, `tests/frameworks/record_agents_handoff_filters_tl.py`; the tests at the end).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import extract_path
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data" / "agents-handoff-filters"
READERS = [("oi", "otel"), ("export", "openai-agents")]
FILTERED = ["filtered", "filtered_after_tool", "filtered_responses"]
ORDER = {"filtered_after_tool": ["get_weather", "transfer_to_weather", "get_weather"]}  # the calls' order in the scripted replies


def read(scenario: str, prefix: str, fmt: str) -> Case:
    """The one case format `fmt` makes of `<prefix>-<scenario>.jsonl`."""
    (case,) = extract_path(DATA / f"{prefix}-{scenario}.jsonl", fmt)
    assert isinstance(case, Case), case
    return case


def truth(scenario: str) -> dict[str, Any]:
    return json.loads((DATA / f"{scenario}.truth.json").read_text())


def as_read(output: str, fmt: str) -> Any:
    """The SDK's output text of a call as each format reads a tool message: `otel` decodes JSON text, the export keeps it."""
    return json.loads(output) if fmt == "otel" else output


@pytest.mark.parametrize("scenario", FILTERED)
@pytest.mark.parametrize(("prefix", "fmt"), READERS)
def test_a_filtered_handoff_call_has_the_sdks_output_as_its_result(prefix: str, fmt: str, scenario: str) -> None:
    t = truth(scenario)
    assert t["input_filter"] == "remove_all_tools" and t["handoffs_in_run_items"] == 0  # the filter removed it everywhere
    (handoff,) = t["handoffs"]
    assert (handoff["source"], handoff["target"]) == ("Triage", "Weather") and t["last_agent"] == "Weather"
    case = read(scenario, prefix, fmt)
    assert case.trace is not None
    calls = [c for s in case.trace.steps for c in s.tool_calls]
    (transfer,) = [c for c in calls if c.name == handoff["name"]]
    assert transfer.result == as_read(handoff["output"], fmt)
    assert not transfer.failed and transfer.error is None
    if not (fmt == "openai-agents" and t["api"] == "responses"):  # (that export keeps no call id)
        assert transfer.id == handoff["call_id"]
    # the case is whole: every call the run made has its result, the handoff before the second agent's calls
    assert [(c.name, c.result) for c in calls if c.name != handoff["name"]] == [(r["name"], r["result"]) for r in t["tools_ran"]]
    assert all(c.result is not None for c in calls)
    order = ORDER.get(scenario, ["transfer_to_weather", "get_weather", "get_weather"])  # Triage's own call first, if any
    assert [c.name for c in calls] == order


@pytest.mark.parametrize("scenario", ["filtered", "filtered_after_tool"])
@pytest.mark.parametrize(("prefix", "fmt"), READERS)
def test_a_filtered_handoff_run_keeps_its_input_and_the_second_agents_answer(prefix: str, fmt: str, scenario: str) -> None:
    t = truth(scenario)
    case = read(scenario, prefix, fmt)
    assert case.trace is not None
    assert case.input == t["question"]
    assert case.trace.output == t["final_output"]
    assert len(case.trace.steps) == t["requests"]
    assert "run_error" not in case.metadata


@pytest.mark.parametrize(("prefix", "fmt"), READERS)
def test_a_filtered_handoff_reads_as_the_same_handoff_unfiltered(prefix: str, fmt: str) -> None:
    assert truth("unfiltered")["handoffs"] == truth("filtered")["handoffs"]
    plain, filtered = read("unfiltered", prefix, fmt), read("filtered", prefix, fmt)
    assert plain.trace is not None and filtered.trace is not None

    def calls(case: Case) -> list[tuple[Any, ...]]:
        return [(c.id, c.name, c.arguments, c.result, c.error) for s in case.trace.steps for c in s.tool_calls]  # type: ignore[union-attr]

    assert calls(filtered) == calls(plain)
    assert filtered.trace.output == plain.trace.output


def test_the_responses_api_export_gives_the_handoff_call_its_output_too() -> None:
    # The export keeps no text of a Responses API request: the handoff call comes from its `handoff` span alone
    # (`handoff_calls`); its output is the SDK's transfer message all the same.
    case = read("filtered_responses", "export", "openai-agents")
    assert case.trace is not None
    (transfer,) = [c for s in case.trace.steps for c in s.tool_calls if c.name == "transfer_to_weather"]
    assert transfer.result == truth("filtered_responses")["handoffs"][0]["output"]


# --- OpenLLMetry's openai-agents instrumentation (`tl-<scenario>.jsonl`, format otel) ------------------------------
# Recorded with opentelemetry-instrumentation-openai-agents 0.62.4 (`tests/frameworks/record_agents_handoff_filters_tl.py`).
# Its handoff span is `Triage → unknown.handoff` (named before the SDK knew the target): the target is the agent run it
# recorded next. It keeps no output of a Chat Completions request: those runs' handoff call comes from the next agent's
# first request's replay of it, else (a filter removed it there) from the handoff span.
TL_FILTERED = ["filtered_responses", "filtered_after_tool_responses"]
TL_ORDER = {"filtered_after_tool_responses": ["get_weather", "transfer_to_weather", "get_weather"]}


@pytest.mark.parametrize("scenario", TL_FILTERED)
def test_openllmetry_a_filtered_handoff_call_has_the_sdks_output_as_its_result(scenario: str) -> None:
    t = truth(scenario)
    assert t["input_filter"] == "remove_all_tools" and t["handoffs_in_run_items"] == 0 and t["api"] == "responses"
    (handoff,) = t["handoffs"]
    case = read(scenario, "tl", "otel")
    assert case.trace is not None
    calls = [c for s in case.trace.steps for c in s.tool_calls]
    (transfer,) = [c for c in calls if c.name == handoff["name"]]
    assert (transfer.id, transfer.result) == (handoff["call_id"], json.loads(handoff["output"]))
    assert not transfer.failed and transfer.error is None
    assert [(c.name, c.result) for c in calls if c.name != handoff["name"]] == [(r["name"], r["result"]) for r in t["tools_ran"]]
    assert [c.name for c in calls] == TL_ORDER.get(scenario, ["transfer_to_weather", "get_weather", "get_weather"])
    assert case.input == t["question"] and case.trace.output == t["final_output"]
    assert len(case.trace.steps) == t["requests"] and "run_error" not in case.metadata


def test_openllmetry_a_filtered_handoff_reads_as_the_same_handoff_unfiltered() -> None:
    assert truth("unfiltered_responses")["handoffs"] == truth("filtered_responses")["handoffs"]
    assert truth("unfiltered_responses")["handoffs_in_run_items"] == 1
    plain, filtered = read("unfiltered_responses", "tl", "otel"), read("filtered_responses", "tl", "otel")
    assert plain.trace is not None and filtered.trace is not None

    def calls(case: Case) -> list[tuple[Any, ...]]:
        return [(c.id, c.name, c.arguments, c.result, c.error, c.failed) for s in case.trace.steps for c in s.tool_calls]  # type: ignore[union-attr]

    assert calls(filtered) == calls(plain)
    assert ("call_h1", "transfer_to_weather", {}, {"assistant": "Weather"}, None, False) in calls(plain)
    assert filtered.trace.output == plain.trace.output


def test_openllmetry_the_reply_names_the_agent_run_next_not_the_handoff_span() -> None:
    # The span says `unknown` for the target; the reply is the SDK's for the agent that ran next, `Weather`.
    spans = [s for line in (DATA / "tl-filtered_responses.jsonl").read_text().splitlines()
             for rs in json.loads(line)["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    (h,) = [s for s in spans if s["name"].endswith(".handoff")]
    assert h["name"] == "Triage → unknown.handoff"
    assert "gen_ai.handoff.to_agent" not in {a["key"] for a in h["attributes"]}
    case = read("filtered_responses", "tl", "otel")
    assert case.trace is not None
    (transfer,) = [c for s in case.trace.steps for c in s.tool_calls if c.name == "transfer_to_weather"]
    assert transfer.result == {"assistant": "Weather"}


@pytest.mark.parametrize("scenario", ["filtered", "filtered_after_tool"])
def test_openllmetry_chat_completions_runs_read_alike_filtered_or_not(scenario: str) -> None:
    # A Chat Completions request keeps its input only: the transfer call comes from the next request's replay, else
    # (filtered) from the handoff span (README), with the SDK's reply; the function tools' calls from their tool spans.
    plain, filtered = read("unfiltered", "tl", "otel"), read(scenario, "tl", "otel")
    assert plain.trace is not None and filtered.trace is not None
    for case, t in ((plain, truth("unfiltered")), (filtered, truth(scenario))):
        calls = [c for s in case.trace.steps for c in s.tool_calls]  # type: ignore[union-attr]
        (handoff,) = t["handoffs"]
        assert [(c.name, c.result) for c in calls if c.name != handoff["name"]] == [(r["name"], r["result"]) for r in t["tools_ran"]]
        (transfer,) = [c for c in calls if c.name == handoff["name"]]
        assert transfer.result == json.loads(handoff["output"])
        assert all(c.result is not None for c in calls)


@pytest.mark.parametrize("scenario", ["filtered", "filtered_after_tool", "unfiltered"])
def test_openllmetry_a_chat_completions_handoff_is_its_transfer_call(scenario: str) -> None:
    # Its request recorded no output: unfiltered, the next agent's first request replays the call (its id and
    # arguments) and the SDK's reply; filtered, no request does, and the call is the handoff span's, on the request that
    # asked, as the SDK's export reads a request it kept without text (no id, arguments unknown), its result the reply.
    t = truth(scenario)
    assert t["api"] == "chat_completions"
    (handoff,) = t["handoffs"]
    case = read(scenario, "tl", "otel")
    assert case.trace is not None
    calls = [c for s in case.trace.steps for c in s.tool_calls]
    (transfer,) = [c for c in calls if c.name == handoff["name"]]
    replayed = t["input_filter"] is None
    assert (transfer.id, transfer.result, transfer.arguments_missing) == (
        handoff["call_id"] if replayed else None, json.loads(handoff["output"]), not replayed)
    if replayed:
        assert transfer.arguments == {}  # (what the model sent: the SDK's handoff takes no arguments)
    assert not transfer.failed and transfer.error is None
    assert [c.name for c in calls] == ORDER.get(scenario, ["transfer_to_weather", "get_weather", "get_weather"])
    assert len(case.trace.steps) == t["requests"]
    # each call on the step of the request that asked, as OpenInference's reading of the same run lays them out
    oi = read(scenario, "oi", "otel")
    assert oi.trace is not None
    assert [[c.name for c in s.tool_calls] for s in case.trace.steps] == [[c.name for c in s.tool_calls] for s in oi.trace.steps]


def test_openllmetry_a_chat_completions_handoff_reads_as_the_exports() -> None:
    # The same run, read off the SDK's own export (which keeps the request's text): the same transfer call and reply.
    for scenario in ("filtered", "unfiltered"):
        tl, export = read(scenario, "tl", "otel"), read(scenario, "export", "openai-agents")
        assert tl.trace is not None and export.trace is not None
        (ours,) = [c for s in tl.trace.steps for c in s.tool_calls if c.name == "transfer_to_weather"]
        (theirs,) = [c for s in export.trace.steps for c in s.tool_calls if c.name == "transfer_to_weather"]
        assert (ours.name, ours.result) == (theirs.name, as_read(theirs.result, "otel"))


def test_openllmetry_an_export_that_dropped_the_scope_reads_alike(tmp_path: Path) -> None:
    # A collector that keeps no instrumentation scope: the spans' kinds, operations and names say whose they are.
    docs = [json.loads(line) for line in (DATA / "tl-filtered_responses.jsonl").read_text().splitlines()]
    for d in docs:
        for rs in d["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                ss.pop("scope", None)
    path = tmp_path / "tl-filtered_responses.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    (case,) = extract_path(path, "otel")
    assert isinstance(case, Case) and case.trace is not None
    (transfer,) = [c for s in case.trace.steps for c in s.tool_calls if c.name == "transfer_to_weather"]
    assert (transfer.id, transfer.result) == ("call_h1", {"assistant": "Weather"})
