"""Conversations read as the framework recorded them: session tool rounds, aborted runs, run errors, a broken character.

Recorded by the frameworks' real instrumentation (`tests/frameworks/record_conversation_faults.py`,
one subprocess per scenario, loopback fake OpenAI server, no network):

- OpenInference on a plain OpenAI-client loop inside `using_session`: every request is a trace of
  its own carrying `session.id`; the request after a tool round replays the previous one and is the
  same user turn, not a new one (it was: each tool round repeated the user's message).
- A run that aborted right after a reply holding text and tool calls (Agents SDK under OpenInference
  and its own export; Langfuse with an interrupted tool): that text announced calls, it is no final
  output (it was the output).
- A run-level failure ("Max turns exceeded", "Error in agent run: …") is `metadata.run_error` in
  every reader and is said under the judge prompt's final output (it was nowhere the judge could see).
- A lone UTF-16 surrogate in one attribute becomes U+FFFD (the whole case was invalid_input).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tracejudge.core import registry
from tracejudge.core.config import DatasetConfig
from tracejudge.core.records import Case, Score
from tracejudge.stages.extract import extract_record
from tracejudge.stages.judge.metrics import PlanQuality
import _forkserver

pytest.importorskip("openai")
SCRIPT = Path(__file__).parent / "frameworks" / "record_conversation_faults.py"
NEEDS = {"oi_session": ("openinference.instrumentation.openai",),
         "agents": ("agents", "openinference.instrumentation.openai_agents"),
         "langfuse": ("langfuse",)}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """`recorded(scenario)`: the folder the scenario's recording wrote (recorded once a module; skipped without its libraries)."""
    out = tmp_path_factory.mktemp("conversation-faults")
    done: set[str] = set()

    def get(scenario: str) -> Path:
        for module in NEEDS[scenario]:
            pytest.importorskip(module)
        if scenario not in done:
            run = _forkserver.run([sys.executable, str(SCRIPT), scenario, str(out)], capture_output=True, text=True, timeout=120)
            assert run.returncode == 0, run.stderr[-3000:]
            done.add(scenario)
        return out

    return get


def extract(path: Path, fmt: str = "otel", **options: Any) -> list[Any]:
    """Every case (or `(id, ErrorInfo)`) format `fmt` makes of `path`."""
    f = registry.format_for(fmt)
    ds = DatasetConfig(path=path, format=fmt, options=options)
    ctx = f.prepare(ds)
    return [extract_record(raw, f, ctx) for raw in f.read(ds)]


def only_case(path: Path, fmt: str = "otel") -> Case:
    (case,) = extract(path, fmt)
    assert isinstance(case, Case), case
    return case


def test_session_tool_rounds_stay_in_their_user_turn(recorded: Any) -> None:
    case = only_case(recorded("oi_session") / "session.jsonl")
    assert case.id == "sess-42"
    assert [(m.step, m.content) for m in case.trace.user_messages] == [(0, "Weather in Paris?"), (2, "Say hello in French."), (3, "And Tokyo?")]
    turns = case.metadata["otel"]["turns"]
    assert [(t["user_text"], t["steps"], t["final_text"]) for t in turns] == [
        ("Weather in Paris?", [0, 2], "Sunny in Paris."), ("Say hello in French.", [2, 3], "Bonjour!"), ("And Tokyo?", [3, 5], "Rainy in Tokyo.")]
    assert turns[0]["intermediate_texts"] == ["Let me check."]  # the tool round's preamble is not the turn's answer
    assert case.turns == ["Say hello in French.", "And Tokyo?"]


@pytest.mark.parametrize("scenario, file, fmt", [("agents", "oi-text_fatal.jsonl", "otel"), ("agents", "export-text_fatal.jsonl", "openai-agents")])
def test_an_aborted_run_has_no_final_output_from_the_text_before_its_calls(recorded: Any, scenario: str, file: str, fmt: str) -> None:
    case = only_case(recorded(scenario) / file, fmt)
    (step,) = case.trace.steps
    assert step.thought and step.tool_calls  # the text stays where it was said, with its calls
    assert case.trace.output is None
    (turn,) = case.metadata["otel"]["turns"]
    assert turn["final_text"] is None and turn["intermediate_texts"] == [step.thought]


@pytest.mark.parametrize("file, fmt", [("oi-max_turns.jsonl", "otel"), ("export-max_turns.jsonl", "openai-agents"),
                                       ("oi-text_fatal.jsonl", "otel"), ("export-text_fatal.jsonl", "openai-agents")])
def test_a_run_that_ended_in_an_error_says_so_in_its_metadata(recorded: Any, file: str, fmt: str) -> None:
    case = only_case(recorded("agents") / file, fmt)
    error = case.metadata["run_error"]
    assert error.startswith("Max turns exceeded" if "max_turns" in file else "Error in agent run")
    assert case.metadata["otel"]["turns"][-1]["error"] == error


def test_a_run_that_ended_normally_has_no_run_error(recorded: Any) -> None:
    case = only_case(recorded("oi_session") / "session.jsonl")
    assert "run_error" not in case.metadata
    assert all("error" not in t for t in case.metadata["otel"]["turns"])


def test_the_judge_is_told_the_run_ended_in_an_error_once(recorded: Any) -> None:
    case = only_case(recorded("agents") / "oi-max_turns.jsonl")
    prompt = PlanQuality().plan(case).render(0)
    final = prompt.split("## Final output\n", 1)[1]
    assert final.startswith("(none)\n(the run ended in an error: Max turns exceeded")
    assert prompt.count("the run ended in an error") == 1


def test_a_lone_surrogate_in_one_attribute_is_replaced_not_fatal(recorded: Any, tmp_path: Path) -> None:
    text = (recorded("oi_session") / "session.jsonl").read_text()
    # half of an emoji, as an exporter cutting a string mid-character writes it: in the attribute itself, and inside
    # the JSON text of another attribute
    assert '"Rainy in Tokyo."' in text and 'Rainy in Tokyo.\\"' in text
    patched = text.replace('"Rainy in Tokyo."', '"Rainy in Tokyo. \\ud83c"').replace('Rainy in Tokyo.\\"', 'Rainy in Tokyo. \\\\ud83c\\"')
    (tmp_path / "cut.jsonl").write_text(patched)
    case = only_case(tmp_path / "cut.jsonl")
    assert case.trace.output == "Rainy in Tokyo. \ufffd"
    json.dumps(case.model_dump(mode="json"), ensure_ascii=False).encode()  # the case can be written as UTF-8


def test_a_lone_surrogate_in_genai_message_json_is_read_as_a_replacement_character(tmp_path: Path) -> None:
    # The OTel GenAI convention keeps messages as JSON text (`gen_ai.output.messages`): an escaped lone surrogate
    # there (a JS exporter cutting mid-emoji) decoded into text no result line can carry.
    span = {"traceId": "0" * 31 + "1", "spanId": "0" * 15 + "1", "name": "chat gpt", "startTimeUnixNano": "1", "endTimeUnixNano": "2",
            "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                           {"key": "gen_ai.input.messages", "value": {"stringValue": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "hi"}]}])}},
                           {"key": "gen_ai.output.messages", "value": {"stringValue": '[{"role": "assistant", "parts": [{"type": "text", "content": "hot \\ud83c"}]}]'}}]}
    path = tmp_path / "genai.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}))
    [case] = extract(path)
    assert isinstance(case, Case) and case.trace.output == "hot \ufffd", case


def test_a_tool_that_recorded_nothing_is_no_sign_of_an_aborted_run(recorded: Any) -> None:
    # Langfuse records a tool stopped by a `KeyboardInterrupt` (which it does not record) as it records a tool that
    # returned None: no output, no error. Read as an abort, it deleted the output of runs that ended normally after a
    # void tool; the text stays the output (the interrupted run keeps its preamble: the two look the same).
    case = only_case(recorded("langfuse") / "langfuse.jsonl")
    (step,) = case.trace.steps
    assert step.tool_calls and case.trace.output == step.thought
    assert "run_error" not in case.metadata


def test_a_request_the_application_sent_again_after_a_failure_stays_in_its_turn(recorded: Any) -> None:
    # In a session, the retry of a request that got a 500 replays the same input: it was a second user turn
    # ("Weather in Paris?" twice) where the user spoke once.
    case = only_case(recorded("oi_session") / "session-retry.jsonl")
    assert [(m.step, m.content) for m in case.trace.user_messages] == [(0, "Weather in Paris?")]
    assert [s.error is not None for s in case.trace.steps] == [False, True, False]
    assert case.trace.output == "Sunny in Paris." and len(case.metadata["otel"]["turns"]) == 1


@pytest.mark.parametrize("file, fmt", [("oi-max_turns.jsonl", "otel"), ("export-max_turns.jsonl", "openai-agents")])
def test_a_run_that_failed_without_output_is_judged_for_task_completion(recorded: Any, file: str, fmt: str) -> None:
    # Not computed, it left the mean: every run that failed so raised TaskCompletion's mean instead of lowering it.
    from tracejudge.stages.judge.metrics import TaskCompletion

    case = only_case(recorded("agents") / file, fmt)
    assert case.trace.output is None and not any(s.output for s in case.trace.steps)
    plan = TaskCompletion().plan(case)
    assert not isinstance(plan, Score), plan
    assert "## Final output\n(none)\n(the run ended in an error: Max turns exceeded" in plan.render(0)


def test_a_case_without_output_or_run_error_is_still_not_judged_for_task_completion(recorded: Any) -> None:
    from tracejudge.stages.judge.metrics import TaskCompletion

    case = only_case(recorded("agents") / "oi-max_turns.jsonl")
    quiet = case.model_copy(update={"metadata": {k: v for k, v in case.metadata.items() if k != "run_error"}})
    score = TaskCompletion().plan(quiet)
    assert isinstance(score, Score) and score.value is None and "no final output" in score.reason
