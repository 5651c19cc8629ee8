"""Format `otel` reads what OTel's own OpenAI instrumentation writes, in each of its modes.

The recordings (`tests/data/openai-v2/`, made by `tests/frameworks/record_openai_v2.py` against a loopback server) are a
two-turn Chat Completions tool loop, plain and streamed. Under opentelemetry-instrumentation-openai-v2 2.4b0 (with
opentelemetry-util-genai 1.1b0) its messages are on the spans (`SPAN_ONLY`), in `gen_ai.client.inference.operation.details`
log records (`EVENT_ONLY`) or both; each request is a trace of its own, joined into the conversation by the history it
replays. Recorded with capture off, or with the old `true` that util-genai 1.x takes for no content, the trace is
refused, naming the settings. Under 2.3b0 each message is a log record of its own (`gen_ai.user.message`, …,
`gen_ai.choice`); with capture off the records stay, without content: the calls' ids and names read, their arguments
and results unknown, and each request is counted as one whose input messages lost their content.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import extract_path, live_truth, start_recordings
from test_otel_loop_faults import facts

DATA = Path(__file__).parent / "data" / "openai-v2"
MODES = ["span-only", "event-only", "span-and-event", "events"]


def _truth(name: str) -> list[dict[str, Any]]:
    return json.loads((DATA / f"{name}.truth.json").read_text())["cases"]


@pytest.mark.parametrize("name", [f"v2-{m}{s}" for m in MODES for s in ("", "-stream")])
def test_each_content_mode_reads_as_the_conversation_the_application_had(name: str) -> None:
    got = extract_path(DATA / f"{name}.jsonl", "otel")
    assert [facts(c) for c in got] == _truth(name), got
    (case,) = got
    assert case.input == "What is the weather in Paris?"
    assert [t["final_text"] for t in case.metadata["otel"]["turns"]] == ["Sunny in Paris, 21 C.", "Rainy in Tokyo, 14 C."]


def test_the_details_record_alone_holds_the_messages_in_event_only_mode() -> None:
    # what makes `event-only` a test of the log records: no span carries a message
    docs = [json.loads(line) for line in (DATA / "v2-event-only.jsonl").read_text().splitlines()]
    spans = [s for d in docs for rs in d.get("resourceSpans", []) for ss in rs["scopeSpans"] for s in ss["spans"]]
    records = [r for d in docs for rl in d.get("resourceLogs", []) for sl in rl["scopeLogs"] for r in sl["logRecords"]]
    assert len(spans) == 4 and not any(a["key"].startswith("gen_ai.input") for s in spans for a in s["attributes"])
    assert [r["eventName"] for r in records] == ["gen_ai.client.inference.operation.details"] * 4


@pytest.mark.parametrize("name", ["v2-capture-true", "v2-capture-true-stream", "v2-no-content", "v2-no-content-stream"])
def test_a_loop_recorded_without_content_is_refused_naming_the_setting(name: str) -> None:
    got = extract_path(DATA / f"{name}.jsonl", "otel")
    assert len(got) == 4 and all(isinstance(g, tuple) for g in got), got  # one a request: nothing joins them
    for _, error in got:
        assert error.kind == "invalid_input" and "carry no content" in error.message, error
        assert "`true` where opentelemetry-util-genai 1.x wants SPAN_ONLY / EVENT_ONLY / SPAN_AND_EVENT" in error.message, error


@pytest.mark.parametrize("name", ["v2-events-off", "v2-events-off-stream"])
def test_legacy_events_without_content_read_as_calls_whose_arguments_and_results_are_unknown(name: str,
                                                                                            caplog: pytest.LogCaptureFixture) -> None:
    import logging

    with caplog.at_level(logging.WARNING):
        (case,) = extract_path(DATA / f"{name}.jsonl", "otel")
    want = _truth(name)[0]
    calls = case.trace.tool_calls()
    assert [(c.id, c.name) for c in calls] == [(c["id"], c["name"]) for c in want["calls"]]
    assert all(c.arguments_missing and c.result is None for c in calls), calls
    assert case.input is None and case.trace.output is None
    assert case.metadata["otel"]["missing_inputs"] == {"requests": 4, "no_messages": 0, "empty_messages": 4}
    said = [r.getMessage() for r in caplog.records if "content parts were all dropped" in r.getMessage()]
    assert len(said) == 1 and "no `content` in gen_ai.*.message log records" in said[0], said
    assert "`opentelemetry.instrumentation.openai_v2` (4)" in said[0], said


# --- re-recorded now by the installed libraries ------------------------------------------------------------------
RECORD = Path(__file__).parent / "frameworks" / "record_openai_v2.py"
NEEDS = ("openai", "opentelemetry.instrumentation.openai_v2", "opentelemetry.util.genai", "opentelemetry.sdk")
LIVE = ("v2-span-and-event-stream", "v2-event-only")


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The `LIVE` scenarios re-recorded at once into a temporary folder: (folder, scenario -> its process)."""
    return start_recordings(tmp_path_factory.mktemp("openai-v2-live"), RECORD, LIVE, NEEDS)


@pytest.mark.parametrize("name", LIVE)
def test_a_live_recording_reads_as_its_truth(live: tuple[Path, dict[str, Any]], name: str) -> None:
    path, want = live_truth(live, name, NEEDS, DATA)
    assert [facts(c) for c in extract_path(path, "otel")] == want
