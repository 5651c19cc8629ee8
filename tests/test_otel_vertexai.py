"""Format `otel` reads a Gemini function-calling loop made with the Vertex AI SDK as OpenLLMetry's, OpenInference's and
OTel's vertexai instrumentations write it.

The recordings (`tests/data/vertexai/`, made by `tests/frameworks/record_vertexai.py` against a loopback Vertex AI
REST API) are `tests/data/google-genai`'s conversation: two user turns, the first answered after two parallel function
calls without ids, the second after one; by hand (`loop`), through `start_chat` (`chat`), with the tool failing for
Oslo (`error`), and a chat without tools (`text`, all that OpenLLMetry's instrumentation can record: a reply holding a
function call makes it raise in the application). What was misread before these recordings: OTel's 2.x, opted in to
the latest conventions, names no provider, so its made-up call ids (`get_weather_1`, …) paired Paris's call with
Tokyo's result; OpenLLMetry's writes a prompt's content as the JSON text of its parts, read as that text, and its
events name no span while its spans carry no `gen_ai.operation.name`, so they were not read at all.
"""

from __future__ import annotations

import json
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import pytest
from helpers import extract_path, live_recordings, live_truth
from test_otel_loop_faults import facts

from tracejudge.core.records import ErrorInfo

DATA = Path(__file__).parent / "data" / "vertexai"
APPS = ("loop", "chat", "error", "text")
WHOLE = ([f"oi-{a}{s}" for a in APPS for s in ("", "-stream")]
         + [f"otel{m}-{a}" for m in ("", "-latest-span-only", "-latest-event-only") for a in APPS])
OPENLLMETRY = [f"openllmetry{m}-text{s}" for m in ("", "-events") for s in ("", "-stream")]
NO_CONTENT = sorted(p.name.removesuffix(".jsonl") for p in DATA.glob("*no-content*.jsonl"))


def _truth(name: str) -> list[dict[str, Any]]:
    return json.loads((DATA / f"{name}.truth.json").read_text())["cases"]


@pytest.mark.parametrize("name", WHOLE)
def test_each_recording_reads_as_the_conversation_the_application_had(name: str) -> None:
    assert [facts(c) for c in extract_path(DATA / f"{name}.jsonl", "otel")] == _truth(name)


@pytest.mark.parametrize("name", [n for n in WHOLE if "-error" in n])
def test_a_function_response_of_an_error_is_a_failed_call(name: str) -> None:
    (case,) = extract_path(DATA / f"{name}.jsonl", "otel")
    assert [c.error for c in case.trace.tool_calls()] == [None, None, "weather service unavailable for Oslo"]


def test_the_latest_conventions_recording_holds_made_up_ids_and_no_provider() -> None:
    # what makes the reading above a test of the made-up ids: Paris's call and Tokyo's response share an id, and nothing
    # names Gemini or Vertex AI but the instrumentation's scope
    text = (DATA / "otel-latest-span-only-loop.jsonl").read_text()
    assert '\\"name\\":\\"get_weather\\",\\"id\\":\\"get_weather_1\\"' in text
    assert '"key": "gen_ai.provider.name"' not in text and '"key": "gen_ai.system"' not in text


@pytest.mark.parametrize("name", OPENLLMETRY)
def test_openllmetry_records_each_message_sent_as_a_request_of_its_own(name: str) -> None:
    # its `send_message` span holds the message sent, not the chat's history, each in a trace of its own: nothing ties
    # the turns together, so each is a case; its events lose the user's text (`content` ""), its spans keep it
    (want,) = _truth(name)
    got = [facts(c) for c in extract_path(DATA / f"{name}.jsonl", "otel")]
    assert [g["output"] for g in got] == ["Paris is sunny (21 C); Tokyo is rainy (14 C).", want["output"]]
    assert [g["user_turns"] for g in got] == ([[], []] if "-events" in name else [[t] for t in want["user_turns"]])
    assert sum(g["usage"]["input_tokens"] for g in got) == want["usage"]["input_tokens"]
    assert sum(g["usage"]["output_tokens"] for g in got) == want["usage"]["output_tokens"]


@pytest.mark.parametrize("name", NO_CONTENT)
def test_a_recording_without_content_says_so_and_makes_nothing_up(name: str) -> None:
    (want,) = _truth(name)
    for got in extract_path(DATA / f"{name}.jsonl", "otel"):
        if isinstance(got, tuple):  # nothing but usage: a case with a clear error, not a passing empty one
            assert isinstance(got[1], ErrorInfo) and "content capture was off" in got[1].message
            continue
        f = facts(got)
        assert f["user_turns"] == [] and f["output"] is None
        assert [(c["name"], c["arguments"], c["result"]) for c in f["calls"]] == [("get_weather", {}, None)] * len(want["calls"])
        assert f["usage"] == want["usage"]


# --- re-recorded now by the installed libraries ------------------------------------------------------------------
RECORD = Path(__file__).parent / "frameworks" / "record_vertexai.py"
NEEDS = ("vertexai", "openinference.instrumentation.vertexai", "opentelemetry.instrumentation.vertexai", "opentelemetry.sdk")


def _otel_major() -> int | None:
    """The major version of the installed `opentelemetry-instrumentation-vertexai`: 0 OpenLLMetry's, 2 OTel's."""
    try:
        return int(version("opentelemetry-instrumentation-vertexai").split(".")[0])
    except PackageNotFoundError:
        return None


# OpenLLMetry's and OTel's instrumentations share a distribution name: the installed one's scenario is recorded
LIVE = ("oi-error-stream", "oi-chat", "otel-latest-span-only-error" if (_otel_major() or 0) >= 2 else "openllmetry-text-stream")


live = live_recordings("vertexai-live", RECORD, LIVE, NEEDS)


@pytest.mark.parametrize("name", LIVE)
def test_a_live_recording_reads_as_the_committed_one(live: tuple[Path, dict[str, Any]], name: str) -> None:
    path, _ = live_truth(live, name, NEEDS, DATA)
    assert [facts(c) for c in extract_path(path, "otel")] == [facts(c) for c in extract_path(DATA / f"{name}.jsonl", "otel")]
