"""Format `otel` on agentevals' own OTLP fixture corpus: every trace reads as its `.truth.json` says.

`tests/data/agentevals/` holds a copy of some of the corpus (see its NOTICE): Google ADK recordings in the telemetry
modes the developer set does not cover (v1 and v2 schemas, content in events, content off, the google-genai
instrumentation underneath, the projected upstream shape) and the hand-built shapes. The whole corpus, about 170
traces, is compared when a copy of agentevals' `tests/fixtures/otlp/` is named by `AGENTEVALS_OTLP_FIXTURES`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from _otel_truth import assert_cases_truth, extract

HERE = Path(__file__).resolve().parent / "data" / "agentevals"
COPY = sorted(HERE.rglob("*.truth.json"))
FULL = Path(os.environ.get("AGENTEVALS_OTLP_FIXTURES", "")) if os.environ.get("AGENTEVALS_OTLP_FIXTURES") else None
FULL_TRUTHS = sorted(FULL.rglob("*.truth.json")) if FULL and FULL.is_dir() else []


def _trace(truth_path: Path) -> Path:
    return truth_path.with_name(truth_path.name.removesuffix(".truth.json") + ".json")


def _name(root: Path):
    return lambda p: str(p.relative_to(root)).removesuffix(".truth.json")


def test_the_copy_covers_every_mode_it_names():
    modes = {p.parent.name for p in COPY if p.parent.parent.name == "adk_py"}
    assert modes == {"v1_default", "v1_event_stable", "v2_default", "v2_event_only", "v2_span_only_contrib", "v2proj_span_only",
                     "v2proj_no_content"}
    assert all(_trace(p).exists() for p in COPY) and len(COPY) == 16


@pytest.mark.parametrize("truth_path", COPY, ids=_name(HERE))
def test_copied_fixture_reads_as_its_truth(truth_path: Path):
    assert_cases_truth(extract(_trace(truth_path)), json.loads(truth_path.read_text()))


@pytest.mark.skipif(not FULL_TRUTHS, reason="AGENTEVALS_OTLP_FIXTURES names no copy of agentevals' tests/fixtures/otlp")
@pytest.mark.parametrize("truth_path", FULL_TRUTHS or [None], ids=_name(FULL) if FULL_TRUTHS else None)
def test_full_corpus_fixture_reads_as_its_truth(truth_path: Path):
    if not _trace(truth_path).exists():
        pytest.skip("the corpus keeps this truth without its trace")
    assert_cases_truth(extract(_trace(truth_path)), json.loads(truth_path.read_text()))


def test_adk_events_of_gemini_contents_read_as_their_messages():
    """ADK 2 in mode v1_event_stable writes each message event's content as a whole Gemini `Content`, every part with
    all the model's fields (most of them keys without a value), and the model's earlier reply as a user message of role
    `model`: the user's text, the call and its error response are read from them, the reply is no user text."""
    case = extract(HERE / "adk_py" / "v1_event_stable" / "S6b.json")[0]
    turn = case.metadata["otel"]["turns"][0]
    assert (turn["user_text"], turn["final_text"]) == ("What is the price of XYZ?", "Sorry, I could not find a stock with ticker XYZ.")
    assert case.input == "What is the price of XYZ?" and case.turns == []
    [call] = case.trace.tool_calls()
    assert (call.name, call.arguments, call.result) == ("get_stock_price", {"ticker": "XYZ"}, {"error": "ValueError: ticker not found: XYZ"})
