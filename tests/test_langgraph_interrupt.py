"""LangGraph human-in-the-loop, read from real recordings in `tests/data/langgraph-interrupt/`.

Recorded by `tests/frameworks/record_langgraph_interrupt.py` (its docstring says what each scenario runs): a graph
calls `search_flights`, pauses at `interrupt("Which date do you want?")`, and the same thread is resumed with
`Command(resume="June 3")`, after which the model answers with the date. No instrumentation records that exchange
as messages: the question is only in the pause's `GraphInterrupt` (an exception event, or Langfuse's status
message), the answer only in the resumed run's input (the `Command`).

Before, the judge saw the run's answer use a date nobody had asked for: the question was nowhere, and the answer
a user turn only when the graph happened to add it to the model's messages. Now the pause is the agent's question
(its step's output, and the paused turn's final text) and the resume value is the user's next turn, placed before
the step that answered it, under OpenInference, OpenLLMetry, Langfuse and MLflow's OTLP export alike; a paused
tool is one call, not a second call without a result.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from tracejudge.core import registry
from tracejudge.core.config import DatasetConfig
from tracejudge.core.records import Case
from tracejudge.stages.extract import extract_record
from tracejudge.stages.judge.metrics import TaskCompletion

DATA = Path(__file__).parent / "data" / "langgraph-interrupt"
REQUEST = "Book me the cheapest JFK to SFO flight."
QUESTION = "Which date do you want?"
ANSWER = "June 3"
FINAL = "Booked HAT170 on June 3 for $320."
FLIGHTS = [{"flight": "HAT170", "date": "June 3", "price": 320}, {"flight": "HAT200", "date": "June 5", "price": 280}]
SEARCH = ("search_flights", {"origin": "JFK", "destination": "SFO"}, FLIGHTS, None)
OTEL = ["oi-ask-date.jsonl", "tl-ask-date.jsonl", "langfuse-ask-date.jsonl", "mlflow-ask-date.otlp.jsonl"]


def extract(path: Path, fmt_name: str = "otel") -> list[Case]:
    fmt = registry.format_for(fmt_name)
    ds = DatasetConfig(path=path, format=fmt_name, options={})
    ctx = fmt.prepare(ds)
    cases = [extract_record(raw, fmt, ctx) for raw in fmt.read(ds)]
    assert all(isinstance(c, Case) for c in cases), cases
    return cases


def calls(case: Case) -> list[tuple[str, Any, Any, str | None]]:
    return [(c.name, c.arguments, c.result, c.error) for c in case.trace.tool_calls()]


def said(case: Case) -> list[tuple[int, Any]]:
    return [(m.step, m.content) for m in case.trace.user_messages]


def judge_text(case: Case) -> str:
    """The data a judge is shown for the case (`TaskCompletion`'s prompt, inside the fence)."""
    text = TaskCompletion().plan(case).render(0)
    return text.split("\n", 1)[1].rsplit("\n==== DATA", 1)[0]


def in_order(text: str, lines: list[str]) -> None:
    at = [text.find(line) for line in lines]
    assert -1 not in at and at == sorted(at), (lines, text)


def _rewrite(src: Path, dst: Path, edit: Any) -> None:
    """Copy OTLP/JSON `src` to `dst` with `edit(span)` applied to every span (a span for which it returns False is dropped)."""
    out = []
    for line in src.read_text().splitlines():
        doc = json.loads(line)
        for rs in doc.get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                ss["spans"] = [s for s in ss.get("spans", []) if edit(s) is not False]
        out.append(json.dumps(doc))
    dst.write_text("\n".join(out) + "\n")


def _attr(span: dict[str, Any], key: str) -> Any:
    return next((a["value"].get("stringValue") for a in span["attributes"] if a["key"] == key), None)


@pytest.mark.parametrize("name", OTEL)
def test_the_pause_is_the_agents_question_and_the_resume_the_users_answer(name):
    (case,) = extract(DATA / name)
    trace = case.trace
    assert calls(case) == [SEARCH]
    assert [(len(s.tool_calls), s.output) for s in trace.steps] == [(1, QUESTION), (0, FINAL)]
    assert said(case) == [(0, REQUEST), (1, ANSWER)]
    assert trace.output == FINAL and trace.usage.requests == 2  # the question is no model request
    assert case.input == REQUEST and case.turns == [ANSWER]
    turns = case.metadata["otel"]["turns"]
    assert [(t["user_text"], t["final_text"], t["steps"]) for t in turns] == [(REQUEST, QUESTION, [0, 1]), (ANSWER, FINAL, [1, 2])]
    assert "run_error" not in case.metadata and all(s.error is None for s in trace.steps)  # a pause is no failure (OpenLLMetry, MLflow: ERROR status)
    text = judge_text(case)
    in_order(text, [f"User 1: {REQUEST}", "Step 1:", "call 1: search_flights", f"output: {QUESTION}", f"User 2: {ANSWER}", "Step 2:",
                    f"output: {FINAL}", "## Final output"])
    assert text.count(QUESTION) == 1 and text.count(f"User 2: {ANSWER}") == 1


def test_a_tool_that_asks_is_one_call_and_asks_from_its_step():
    # `book_flight` calls `interrupt` itself: the paused run of the tool recorded no result, and on resume ToolNode
    # ran it again. Before: two calls (the paused one "no result"), and no question or answer.
    (case,) = extract(DATA / "oi-tool-asks.jsonl")
    assert calls(case) == [SEARCH, ("book_flight", {"flight": "HAT170"}, "booked HAT170 on June 3", None)]
    assert [(len(s.tool_calls), s.output) for s in case.trace.steps] == [(1, None), (1, QUESTION), (0, FINAL)]
    assert said(case) == [(0, REQUEST), (2, ANSWER)]
    assert case.trace.output == FINAL and case.trace.usage.requests == 3
    in_order(judge_text(case), [f"User 1: {REQUEST}", "call 2: book_flight", f"output: {QUESTION}", f"User 2: {ANSWER}", "Step 3:", f"output: {FINAL}"])


def test_a_run_never_resumed_ends_on_its_question(tmp_path):
    # Only the first invoke: the graph's last word is the question it paused on.
    docs = [json.loads(line) for line in (DATA / "oi-ask-date.jsonl").read_text().splitlines()]
    roots = [s for d in docs for rs in d["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"] if not s.get("parentSpanId")]
    first = min(roots, key=lambda s: int(s["startTimeUnixNano"]))["traceId"]
    path = tmp_path / "paused.jsonl"
    _rewrite(DATA / "oi-ask-date.jsonl", path, lambda s: s["traceId"] == first)
    (case,) = extract(path)
    assert [(len(s.tool_calls), s.output) for s in case.trace.steps] == [(1, QUESTION)]
    assert said(case) == [(0, REQUEST)] and case.trace.output == QUESTION


def test_a_structured_interrupt_and_a_resume_by_interrupt_id(tmp_path):
    # `interrupt({...})` with a mapping, and `Command(resume={interrupt_id: value})`: the mapping is shown as the
    # value it is, and the resume is the value given for the interrupt.
    asked = {"question": QUESTION, "options": ["June 3", "June 5"]}
    ident = "e1bfbe8fd2d0d17e06d664a1015a9214"

    def edit(span: dict[str, Any]) -> None:
        for ev in span.get("events", []):
            for a in ev["attributes"]:
                if a["key"] == "exception.message":
                    a["value"] = {"stringValue": f"(Interrupt(value={asked!r}, id={ident!r}, response_schema=None),)"}
        if span["name"] == "LangGraph" and '"resume"' in (_attr(span, "input.value") or ""):
            for a in span["attributes"]:
                if a["key"] == "input.value":
                    a["value"] = {"stringValue": json.dumps({"graph": None, "update": None, "resume": {ident: ANSWER}, "goto": []})}

    path = tmp_path / "structured.jsonl"
    _rewrite(DATA / "oi-ask-date.jsonl", path, edit)
    (case,) = extract(path)
    assert json.loads(case.trace.steps[0].output) == asked
    assert said(case) == [(0, REQUEST), (1, ANSWER)]
    assert re.search(r"output: \{options:\[June 3,June 5\],question:Which date do you want\?\}\nUser 2: June 3\n", judge_text(case))


def test_mlflow_format_joins_the_paused_run_and_its_resume():
    # Format `mlflow` made each MLflow trace (each invoke) a case of its own; it now joins them on the thread
    # (`mlflow.trace.session`) as `otel` does (tests/test_traces_mlflow_interrupt.py).
    (case,) = extract(DATA / "mlflow-ask-date.mlflow.jsonl", "mlflow")
    assert calls(case) == [SEARCH] and said(case) == [(0, REQUEST), (1, ANSWER)] and case.trace.output == FINAL
