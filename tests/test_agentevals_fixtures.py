"""Format `otel` on agentevals' own OTLP fixture corpus: every trace reads as its `.truth.json` says.

`tests/data/agentevals/` holds a copy of some of the corpus (see its NOTICE): Google ADK recordings in the telemetry
modes the developer set does not cover (v1 and v2 schemas, content in events, content off, the google-genai
instrumentation underneath, the projected upstream shape), kagent recordings (its Go ADK runtime, and Claude Code's
native spans with a background subagent) and the hand-built shapes. The whole corpus, about 170
traces, is compared when a copy of agentevals' `tests/fixtures/otlp/` is named by `AGENTEVALS_OTLP_FIXTURES`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from _otel_truth import assert_cases_truth, extract
from tracejudge.core.records import Case

HERE = Path(__file__).resolve().parent / "data" / "agentevals"
COPY = sorted(HERE.rglob("*.truth.json"))
FULL = Path(os.environ.get("AGENTEVALS_OTLP_FIXTURES", "")) if os.environ.get("AGENTEVALS_OTLP_FIXTURES") else None
FULL_TRUTHS = sorted(FULL.rglob("*.truth.json")) if FULL and FULL.is_dir() else []


# Where format `otel` reads a fixture otherwise than its truth says, by a choice README's OTel section gives: what it
# reads instead. (Traces without a conversation key read as a case each: `assert_cases_truth` splits the truth's turns.)
DIFFERENT = {
    # two model requests and message events naming the trace but no span: agentevals keeps a turn with usage and no
    # text; format `otel` refuses a trace whose requests left nothing readable rather than pass every budget
    "hand/openai_v2_logs_no_span_id_ambiguous": "its model requests carry no content that can be read",
}


def _refused(truth: dict) -> bool:
    """A recording without content (`content_captured: false`) whose turns made no tool call leaves nothing readable:
    agentevals keeps its turns of usage without text, format `otel` refuses the trace (README, OTel)."""
    return truth.get("content_captured") is False and not any(t["tool_calls"] for t in truth["turns"])


def _check(root: Path, truth_path: Path) -> None:
    """The fixture beside `truth_path` reads as its truth says, or as `DIFFERENT` / `_refused` say format `otel` reads it."""
    got = extract(_trace(truth_path))
    name = str(truth_path.relative_to(root)).removesuffix(".truth.json")
    truth = json.loads(truth_path.read_text())
    if name in DIFFERENT or _refused(truth):
        [(_, err)] = got
        assert err.kind == "invalid_input" and DIFFERENT.get(name, "its model requests carry no content that can be read") in err.message, err
        return
    assert_cases_truth(got, truth)


def _trace(truth_path: Path) -> Path:
    return truth_path.with_name(truth_path.name.removesuffix(".truth.json") + ".json")


def _name(root: Path):
    return lambda p: str(p.relative_to(root)).removesuffix(".truth.json")


def test_the_copy_covers_every_mode_it_names():
    modes = {p.parent.name for p in COPY if p.parent.parent.name == "adk_py"}
    assert modes == {"v1_default", "v1_default_contrib", "v1_event_stable", "v1_event_stable_contrib", "v1_nolegacy", "v2_default",
                     "v2_event_only", "v2_no_content", "v2_span_and_event", "v2_span_only", "v2_span_only_contrib",
                     "v2_span_only_nolegacy", "v2proj_event_only", "v2proj_span_only", "v2proj_no_content"}
    assert all(_trace(p).exists() for p in COPY) and len(COPY) == 41


@pytest.mark.parametrize("truth_path", COPY, ids=_name(HERE))
def test_copied_fixture_reads_as_its_truth(truth_path: Path):
    _check(HERE, truth_path)


@pytest.mark.skipif(not FULL_TRUTHS, reason="AGENTEVALS_OTLP_FIXTURES names no copy of agentevals' tests/fixtures/otlp")
@pytest.mark.parametrize("truth_path", FULL_TRUTHS or [None], ids=_name(FULL) if FULL_TRUTHS else None)
def test_full_corpus_fixture_reads_as_its_truth(truth_path: Path):
    if not _trace(truth_path).exists():
        pytest.skip("the corpus keeps this truth without its trace")
    _check(FULL, truth_path)


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
    # the model's text before its call, replayed in the next requests as a user message of role `model`, is its own
    loop = extract(HERE / "adk_py" / "v1_event_stable" / "S2.json")[0]
    assert [m.content for m in loop.trace.user_messages] == ["What is the weather and local time in Paris?"]
    assert loop.trace.steps[0].thought == "Let me look that up."


def test_adk_tool_spans_with_its_own_keys_off_hold_no_values():
    """ADK with its own content keys off writes `{}` as a tool span's arguments and response, their default. With
    message content on, the model's call gives the arguments, and a tool that raised (the run aborted, no later
    request shows a response) returned nothing: no result, not an empty mapping. With content capture off too, the
    call keeps no arguments either."""
    case = extract(HERE / "adk_py" / "v2_span_only_nolegacy" / "S6a.json")[0]
    [call] = case.trace.tool_calls()
    assert (call.name, call.arguments, call.result) == ("get_stock_price", {"ticker": "XYZ"}, None)
    assert call.failed and call.error == "ValueError: ticker not found: XYZ"
    off = extract(HERE / "adk_py" / "v1_nolegacy" / "S6a.json")[0]
    [call] = off.trace.tool_calls()
    assert (call.name, call.arguments_missing, call.result, call.error) == ("get_stock_price", True, None, "ValueError: ticker not found: XYZ")


def test_adk_wraps_a_return_value_in_its_function_responses_too():
    """An AgentTool's span with ADK's own keys off holds no result; the coordinator's next request shows ADK's function
    response `{"result": "The capital of France is Paris."}`, ADK's wrapper around a return value that is no mapping:
    the tool returned the text, as the span's result key reads once unwrapped in the other modes."""
    case = extract(HERE / "adk_py" / "v2_span_only_nolegacy" / "S4b.json")[0]
    [call] = case.trace.tool_calls()
    assert (call.name, call.arguments, call.result) == ("research_agent", {"request": "What is the capital of France?"},
                                                        "The capital of France is Paris.")


def test_adk_function_responses_in_message_events_answer_their_own_tool():
    """ADK 2's 1.x message events of a transfer: the coordinator's `transfer_to_agent` returned `{"result": null}`,
    and the billing agent's last request shows `issue_refund`'s function response, which carries no id but the
    tool's name: it answers `issue_refund`, never the transfer asked for before it."""
    case = extract(HERE / "adk_py" / "v1_event_stable" / "S4a.json")[0]
    assert [(c.name, c.result) for c in case.trace.tool_calls()] == [
        ("transfer_to_agent", None), ("issue_refund", {"status": "refunded", "order_id": "42"})]


def test_a_broken_trace_beside_a_healthy_one_leaves_the_healthy_one_whole():
    """A trace whose spans make a two-span cycle, in the file of a healthy one: the healthy trace is its own case with
    its turn; the broken one, whose spans hold no request, reads as a case of no turn (the truth compares only the
    turns it lists)."""
    got = extract(HERE / "hand" / "adk_cycle_poisons_batch.json")
    assert all(isinstance(c, Case) for c in got)
    assert [len(c.metadata["otel"]["turns"]) for c in got] == [1, 0]
    assert (got[0].input, got[0].trace.output) == ("Ping?", "Pong.")


def test_adk_turns_without_content_stay_turns_with_nothing_to_send():
    """ADK with content capture off over three turns of one session, a tool call in the second: three turns, one a trace,
    each with its usage and no user text; the case's `turns` (what a live re-run sends after the input) hold none."""
    [case] = extract(HERE / "adk_py" / "v2proj_no_content" / "S3.json")
    turns = case.metadata["otel"]["turns"]
    assert [(t["user_text"], t["usage"]["input_tokens"], t["usage"]["requests"]) for t in turns] == [
        (None, 10, 1), (None, 80, 2), (None, 70, 1)]
    assert (case.input, case.turns) == (None, [])
    assert [c.name for c in case.trace.tool_calls()] == ["get_weather"]


def test_a_background_subagent_s_report_is_no_user_turn():
    """kagent's Claude Code runtime, its agent handing the question to an `Agent` subagent in the background: the
    subagent's requests and Bash calls are Claude Code's own spans under the run, and its report comes back as a second
    `claude_code.interaction` whose `user_prompt` is Claude Code's `<task-notification>`. The conversation is the one
    user message kagent's `invoke_agent` span records and the answer it returned: one turn, the notification no user
    text of it."""
    [case] = extract(HERE / "kagent" / "v1.0.0-alpha9" / "claude_native_1turn_subagent.json")
    [turn] = case.metadata["otel"]["turns"]
    assert turn["user_text"].startswith("Use your tools to list the namespaces in this cluster")
    assert turn["final_text"].endswith("There are currently 14 pods running in the kagent namespace.")
    assert not any("task-notification" in (m.content or "") for m in case.trace.user_messages)
