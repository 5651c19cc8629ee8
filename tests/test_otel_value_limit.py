"""Agents recorded under an attribute length limit (`OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT`), in `tests/data/value-limit/`.

Recorded by `tests/frameworks/record_value_limit.py` (its docstring says what each scenario runs). The OTel SDK cuts
every longer string attribute at the limit and records nothing else, so a body written as JSON text is left as the
start of a JSON document. Before, a LangGraph root's cut state dump (`{"messages": [{"type": "human", …`) was the case's
output and its last turn's final text, with no warning, a pydantic-ai conversation whose later requests' history
(`gen_ai.input.messages`) was cut was refused whole as "is not valid JSON", and a LangGraph tool whose `ToolMessage`
was cut had that text as its result, its call id lost with it. Now a cut value is never read as text:
what it held is read from the requests beside it, one warning per file names the cut attributes and the limit, and a
conversation whose messages nothing else holds is refused saying the text was cut at N characters.

When the libraries are installed, two scenarios are also re-recorded now into a temporary folder and read the same way.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers import extract_path, recorded, start_recordings
from tracejudge.core.records import Case
from tracejudge.stages.extract.otel.value_limit import cut_at, whole_items
from tracejudge.stages.score import MaxToolCalls

DATA = Path(__file__).parent / "data" / "value-limit"
RECORD = Path(__file__).parent / "frameworks" / "record_value_limit.py"
READ_WHOLE = ["lg-oi-4096", "lg-oi-400", "pai-v5-1000", "pai-oi-1000"]
NEEDS = {"lg-oi-4096": ("langgraph", "langchain_openai", "openinference.instrumentation.langchain"), "pai-v5-1000": ("pydantic_ai",)}


def truth(folder: Path, name: str) -> dict[str, Any]:
    return json.loads((folder / f"{name}.truth.json").read_text())


def attributes(path: Path) -> list[tuple[str, str, Any]]:
    """(span name, key, value) of every string attribute in an OTLP/JSON file."""
    docs = [json.loads(line) for line in path.read_text().splitlines()]
    return [(s["name"], a["key"], a["value"]["stringValue"]) for d in docs for rs in d["resourceSpans"] for ss in rs["scopeSpans"]
            for s in ss["spans"] for a in s.get("attributes", []) if "stringValue" in a["value"]]


def check(path: Path, want: dict[str, Any]) -> Case:
    """`path` reads as one case holding every user turn, call (arguments and result) and answer of the truth."""
    [case] = extract_path(path, "otel")
    assert isinstance(case, Case), case
    assert [m.content for m in case.trace.user_messages] == want["user_turns"]
    assert [[c.name, c.arguments, c.result] for c in case.trace.tool_calls()] == want["calls"]
    finals = [t["final_text"] for t in case.metadata["otel"]["turns"]]
    answers = [a if isinstance(a, str) else json.dumps(a, ensure_ascii=False, separators=(",", ":")) for a in want["answers"]]
    assert [json.loads(f) if f.startswith("{") else f for f in finals] == [json.loads(a) if a.startswith("{") else a for a in answers]
    assert case.trace.output == finals[-1]
    assert MaxToolCalls(max_calls=len(want["calls"])).evaluate(case).details["count"] == len(want["calls"])  # (no output tool among them)
    cut = case.metadata["otel"]["cut_attributes"]  # (the case says what of its own was cut)
    assert cut["limit"] == want["limit"] and cut["attributes"] >= cut["spans"] > 0
    assert ("output.value" if path.name.startswith("lg") else "gen_ai.input.messages") in cut["keys"]
    return case


@pytest.mark.parametrize("name", READ_WHOLE)
def test_a_conversation_reads_whole_though_its_json_attributes_were_cut(name: str) -> None:
    check(DATA / f"{name}.jsonl", truth(DATA, name))


def test_the_recordings_did_cut_what_the_readers_used() -> None:
    """The faults are in the files: the graph's last state dump, and pydantic-ai's later histories and its request
    parameters (where its output tool is named), each exactly the limit long and no JSON."""
    for name, keys in {"lg-oi-4096": {"output.value"}, "lg-oi-400": {"output.value"}, "pai-v5-1000": {"gen_ai.input.messages", "model_request_parameters"},
                       "pai-oi-1000": {"gen_ai.input.messages", "model_request_parameters"}}.items():
        limit = truth(DATA, name)["limit"]
        cut = {(span, key) for span, key, value in attributes(DATA / f"{name}.jsonl") if len(value) == limit and cut_at(value) == limit}
        assert keys <= {key for _, key in cut}, (name, cut)
        if name.startswith("lg"):
            assert ("LangGraph", "output.value") in cut
        if name == "lg-oi-400":
            assert ("get_weather", "output.value") in cut  # (the `ToolMessage` around a result that fits)


def test_results_cut_everywhere_stay_each_its_own_calls() -> None:
    """`lg-oi-300`: a result past the limit is cut in the tool span and in the history alike. Each call has the history's
    copy, paired by its call id (the cut `ToolMessage` lost it: parallel calls got each other's), and the case says so."""
    [case] = extract_path(DATA / "lg-oi-300.jsonl", "otel")
    assert isinstance(case, Case), case
    want = truth(DATA, "lg-oi-300")
    assert [m.content for m in case.trace.user_messages] == want["user_turns"]
    assert [t["final_text"] for t in case.metadata["otel"]["turns"]] == want["answers"]
    calls = case.trace.tool_calls()
    assert [[c.name, c.arguments] for c in calls] == [[n, a] for n, a, _ in want["calls"]]
    for call in calls:
        city = call.arguments["city"]
        assert call.id == f"c_{city.lower()}" and isinstance(call.result, str) and len(call.result) == 300
        assert call.result.startswith(f'{{"city": "{city}"') and not any(c in call.result for c in ("Paris", "Tokyo", "Lima", "Oslo") if c != city)
    assert case.metadata["otel"]["cut_attributes"]["limit"] == 300


def test_the_cut_state_dump_is_no_answer() -> None:
    [case] = extract_path(DATA / "lg-oi-4096.jsonl", "otel")
    assert isinstance(case, Case)
    texts = [case.trace.output, *(t["final_text"] for t in case.metadata["otel"]["turns"])]
    assert not any(t.startswith('{"messages"') for t in texts), texts


@pytest.mark.parametrize("name", [*READ_WHOLE, "pai-v5-1000-two"])
def test_one_warning_per_file_names_the_cut_attributes_and_the_limit(name: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / f"{name}.jsonl"  # (a file of its own: the warning is said once per file in a process)
    shutil.copy(DATA / f"{name}.jsonl", path)
    with caplog.at_level(logging.WARNING):
        extract_path(path, "otel")
        extract_path(path, "otel")
    said = [r.getMessage() for r in caplog.records if "attribute length limit" in r.getMessage()]
    assert len(said) == 1, said
    limit = truth(DATA, name)["limit"]
    assert str(path) in said[0] and f"cut at {limit} characters" in said[0] and "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT" in said[0]
    assert ("`output.value`" if name.startswith("lg") else "`gen_ai.input.messages`") in said[0]


def test_a_question_no_other_span_holds_refuses_the_conversation_saying_it_was_cut() -> None:
    """The second run's question is only in its first request's cut history: the conversation is one invalid_input
    naming the span, the attribute and the limit, not "not valid JSON", and no case is read without that question."""
    [got] = extract_path(DATA / "pai-v5-1000-two.jsonl", "otel")
    assert not isinstance(got, Case), got.trace.user_messages
    _, error = got
    assert error.kind == "invalid_input" and error.file.endswith("pai-v5-1000-two.jsonl") and error.line == 1
    assert "gen_ai.input.messages was cut at 1000 characters" in error.message and "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT" in error.message
    assert "no other span holds the rest" in error.message and "not valid JSON" not in error.message
    assert error.field and error.field.endswith("gen_ai.input.messages")


def test_what_counts_as_cut() -> None:
    """Cut: JSON text that stops short at a plausible limit. Not cut: whole JSON at that length, malformed JSON, text
    that is no JSON, or a length no limit gives."""
    [(_, _, dump)] = [a for a in attributes(DATA / "lg-oi-4096.jsonl") if a[:2] == ("LangGraph", "output.value") and len(a[2]) == 4096]
    assert cut_at(dump) == 4096
    assert cut_at(dump[:4095]) is None  # (no limit of 4095)
    assert cut_at(dump[:4000]) == 4000
    longer, whole = json.dumps({"a": "x" * 992}), json.dumps({"a": "x" * 991})
    assert len(longer) == 1001 and cut_at(longer[:1000]) == 1000 and len(whole) == 1000 and cut_at(whole) is None
    assert cut_at('{"a": 1, oops' + " " * 987 + "}") is None  # malformed well before its end: not a cut
    assert cut_at("x" * 1000) is None and cut_at(None) is None
    history = [{"role": "user", "parts": [{"type": "text", "content": "hi " * 30}]}] * 5
    text = json.dumps(history)[:400]
    assert whole_items(text) == history[: len(whole_items(text))] and 0 < len(whole_items(text)) < 5


def test_a_case_with_nothing_cut_says_nothing_of_it() -> None:
    [case] = extract_path(Path(__file__).parent / "data" / "mlflow-in-progress" / "lg-in-progress.jsonl", "mlflow")
    assert isinstance(case, Case) and "cut_attributes" not in case.metadata["otel"]


def test_a_history_malformed_before_its_end_is_still_not_valid_json(tmp_path: Path) -> None:
    """Only a cut reads as one: a `gen_ai.input.messages` broken in the middle is still its conversation's invalid_input."""
    lines = (DATA / "pai-v5-1000.jsonl").read_text().splitlines()
    doc = json.loads(lines[0])
    attrs = [a for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"] for a in s.get("attributes", [])
             if a["key"] == "gen_ai.input.messages"]
    attrs[0]["value"]["stringValue"] = attrs[0]["value"]["stringValue"].replace('"role"', "role", 1)
    path = tmp_path / "broken.jsonl"
    path.write_text("\n".join([json.dumps(doc), *lines[1:]]) + "\n")
    [(_, error)] = extract_path(path, "otel")
    assert "gen_ai.input.messages is not valid JSON" in error.message and "cut at" not in error.message


# --- re-recorded now by the installed libraries ------------------------------------------------------------------
@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Any:
    out = tmp_path_factory.mktemp("value-limit-live")
    return start_recordings(out, RECORD, list(NEEDS), {m for need in NEEDS.values() for m in need})


@pytest.mark.parametrize("name", list(NEEDS))
def test_live_recording_reads_whole(live: Any, name: str) -> None:
    out = recorded(live, name, NEEDS[name])
    want = truth(out, name)
    assert want == truth(DATA, name)  # the application did and got the same
    check(out / f"{name}.jsonl", want)


def _request_cut(tmp_path: Path, whole: int) -> Path:
    """One pydantic-ai-like request whose `gen_ai.input.messages` the limit cut after `whole` whole messages, its
    instructions (`gen_ai.system_instructions`) whole beside it; no other span holds the rest."""
    said = [{"role": "user", "parts": [{"type": "text", "content": f"question {i} " + "q" * 40}]} for i in range(whole)]
    text = json.dumps([*said, {"role": "user", "parts": [{"type": "text", "content": "x" * 2000}]}])
    cut = text[: next(n for n in range(len(json.dumps(said)) + 300, len(text)) if n % 10 == 0)]
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4.1-mini",
             "gen_ai.system_instructions": json.dumps([{"type": "text", "content": "Be brief."}]), "gen_ai.input.messages": cut,
             "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Done."}]}])}
    span = {"traceId": "5a0c1d2e3f405162738495a6b7c8d9e0", "spanId": "5a0c1d2e3f405162", "name": "chat gpt-4.1-mini", "kind": 3,
            "startTimeUnixNano": "1760000000000000000", "endTimeUnixNano": "1760000000010000000",
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()]}
    path = tmp_path / "cut.jsonl"
    path.write_text(json.dumps({"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {"name": "x"}, "spans": [span]}]}]}) + "\n")
    return path


@pytest.mark.parametrize(("whole", "said"), [(0, "none of its messages is whole"), (1, "its first message is whole"),
                                             (3, "its first 3 messages are whole")])
def test_the_refusal_counts_the_attributes_own_whole_messages(tmp_path: Path, whole: int, said: str) -> None:
    # (the instructions beside the cut input lead its messages, whole: counted, "its first 1 message(s) are whole" was
    # said of an input none of whose messages was)
    [(_, error)] = extract_path(_request_cut(tmp_path, whole), "otel")
    assert error.kind == "invalid_input" and "was cut at" in error.message, error.message
    assert f"the recording ran under: {said}, and no other span holds the rest" in error.message, error.message
