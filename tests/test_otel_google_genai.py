"""Format `otel` reads a Gemini function-calling loop as OTel's and OpenInference's google-genai instrumentations write it.

The recordings (`tests/data/google-genai/`, made by `tests/frameworks/record_google_genai.py` against a loopback Gemini
API): two user turns, the first answered after two parallel function calls (no ids, as the API gives them), the second
after one, plain and streamed, driven by hand or by the SDK's automatic function calling in a `chats` session (`-afc`;
`-afc-error`: the function raises for Oslo, which the SDK sends as `{"error": <message>}`, a failed call). OTel's instrumentation gives each call and response an id of its own making,
`<name>_<index of the part>`, so a call and its response have unrelated ids; read as ids they paired Paris's call with
Tokyo's result and left Tokyo's without one. Streamed, it writes each chunk as an output message, which read as one
answer broken by newlines. Both are undone for Gemini spans (`conventions/genai_gemini.py`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import extract_path, live_truth, start_recordings
from test_otel_loop_faults import facts

DATA = Path(__file__).parent / "data" / "google-genai"
NAMES = [f"{m}{a}{s}" for m in ("otel-span-only", "otel-event-only", "oi") for a in ("", "-afc", "-afc-error") for s in ("", "-stream")]


def _truth(name: str) -> list[dict[str, Any]]:
    return json.loads((DATA / f"{name}.truth.json").read_text())["cases"]


def _lines(name: str) -> list[str]:
    return (DATA / f"{name}.jsonl").read_text().splitlines()


@pytest.mark.parametrize("name", NAMES)
def test_each_recording_reads_as_the_conversation_the_application_had(name: str) -> None:
    got = extract_path(DATA / f"{name}.jsonl", "otel")
    assert [facts(c) for c in got] == _truth(name), got
    (case,) = got
    last = "I could not get the weather in Oslo." if "-afc-error" in name else "Snow in Oslo, -3 C."
    assert [t["final_text"] for t in case.metadata["otel"]["turns"]] == ["Paris is sunny (21 C); Tokyo is rainy (14 C).", last]


@pytest.mark.parametrize("name", [n for n in NAMES if "-afc-error" in n])
def test_a_function_that_raised_is_a_failed_call_with_the_error_the_sdk_sent(name: str) -> None:
    # automatic function calling sends a function that raised as `{"error": <message>}`: the Gemini API's failed call.
    # Read as a result like any other, the call did not fail and its result was that object.
    (case,) = extract_path(DATA / f"{name}.jsonl", "otel")
    sent = _truth(name)[0]["calls"][-1]["result"]
    assert "because of error weather service unavailable for Oslo" in sent
    assert [c.error for c in case.trace.tool_calls()] == [None, None, sent]


def test_the_recording_holds_ids_that_do_not_tie_a_response_to_its_call() -> None:
    # what makes the test above a test of the made-up ids: recorded as they are, Paris's call and Tokyo's result share one
    text = _lines("otel-span-only")[0]
    assert '\\"name\\":\\"get_weather\\",\\"id\\":\\"get_weather_1\\"' in text and '\\"rainy, 14 C\\"},\\"id\\":\\"get_weather_1\\"' in text


def test_ids_of_that_form_from_another_provider_are_ids(tmp_path: Path) -> None:
    # only a Gemini span's ids are taken for the instrumentation's own: elsewhere `get_weather_1` may be the real id
    path = tmp_path / "other.jsonl"
    path.write_text("\n".join(_lines("otel-span-only")).replace('"stringValue": "gemini"', '"stringValue": "acme"') + "\n")
    (case,) = extract_path(path, "otel")
    assert [(c.id, c.result) for c in case.trace.tool_calls()][:2] == [("get_weather_1", {"result": "rainy, 14 C"}), ("get_weather_2", None)]


def test_a_streamed_reply_of_several_chunks_is_one_reply() -> None:
    (case,) = extract_path(DATA / "otel-span-only-stream.jsonl", "otel")
    assert [s.output for s in case.trace.steps] == [None, "Paris is sunny (21 C); Tokyo is rainy (14 C).", None, "Snow in Oslo, -3 C."]
    assert [len(s.tool_calls) for s in case.trace.steps] == [2, 0, 1, 0]


# --- re-recorded now by the installed libraries ------------------------------------------------------------------
RECORD = Path(__file__).parent / "frameworks" / "record_google_genai.py"
NEEDS = ("google.genai", "opentelemetry.instrumentation.google_genai", "openinference.instrumentation.google_genai", "opentelemetry.sdk")
LIVE = ("otel-span-only-stream", "otel-event-only-afc-error", "oi-afc-error-stream")


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The `LIVE` scenarios re-recorded at once into a temporary folder: (folder, scenario -> its process)."""
    return start_recordings(tmp_path_factory.mktemp("google-genai-live"), RECORD, LIVE, NEEDS)


@pytest.mark.parametrize("name", LIVE)
def test_a_live_recording_reads_as_its_truth(live: tuple[Path, dict[str, Any]], name: str) -> None:
    path, want = live_truth(live, name, NEEDS, DATA)
    assert [facts(c) for c in extract_path(path, "otel")] == want
