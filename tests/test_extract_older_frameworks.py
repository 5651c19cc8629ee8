"""Traces written by older releases of the agent frameworks than tests/data/frameworks was recorded with.

Each fixture in `tests/data/framework-versions/` is trimmed from a run of the scripted tasks
(`tests/frameworks/tasks.py`) recorded with the library version its README names; the test says
what that version wrote differently and what the reader must still get right.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from framework_truth import only_case
from test_extract_framework_traces import extract as extract_otel
from tracejudge.core.records import Case
from tracejudge.stages.extract.otel.payloads import unwrap_result

DATA = Path(__file__).parent / "data" / "framework-versions"


def test_smolagents_that_ran_only_the_first_of_two_calls_gives_the_second_no_result() -> None:
    """smolagents 1.17 ran only the first call of a message with two; the other never got the first's result."""
    case = only_case(DATA / "smolagents-1.17-parallel.jsonl", "smolagents")
    calls = [(c.name, c.arguments, c.result) for c in case.trace.tool_calls()]
    assert calls == [("get_weather", {"city": "Paris"}, "sunny, 21 C"), ("get_weather", {"city": "Tokyo"}, None)]
    assert case.trace.output == "Paris is sunny at 21 C; Tokyo is rainy at 14 C."


def test_openinference_langchain_tool_output_as_the_messages_str_gives_its_content() -> None:
    """openinference-instrumentation-langchain 0.1.45 wrote a TOOL span's output as `{"output": str(ToolMessage)}`."""
    cases = extract_otel(DATA / "openinference-langchain-0.1.45-sequence.jsonl")
    assert len(cases) == 1 and isinstance(cases[0], Case), cases
    calls = [(c.id, c.name, c.arguments, c.result, c.failed) for c in cases[0].trace.tool_calls()]
    assert calls == [("call_sequ_000", "get_weather", {"city": "Paris"}, "sunny, 21 C", False),
                     ("call_sequ_010", "convert_temperature", {"celsius": 21, "to": "F"}, "69.8 F", False)]
    assert cases[0].trace.output == "It is sunny in Paris: 21 C, which is 69.8 F."


def test_a_tool_messages_str_is_read_as_literals_never_as_code() -> None:
    """Quotes inside the content survive; a message's str() with a value that is no literal still gives content and id."""
    assert unwrap_result({"output": "content=\"it's 21 C\" name='get_weather' tool_call_id='c1'"}) == ("it's 21 C", None, "c1")
    assert unwrap_result({"output": "content='x' artifact=Thing(a=1) tool_call_id='c2'"}) == ("x", None, "c2")
    assert unwrap_result({"output": "content=__import__('os')"}) == ({"output": "content=__import__('os')"}, None, None)


def test_mlflow_spans_renamed_apart_on_storing_are_read_under_their_name() -> None:
    """MLflow 3.1's stored trace names a tool called twice `get_weather_1`, `get_weather_2`: still two calls, not four."""
    case = only_case(DATA / "mlflow-3.1-parallel.mlflow.jsonl", "mlflow")
    calls = [(c.id, c.name, c.arguments, c.result) for c in case.trace.tool_calls()]
    assert calls == [("call_para_000", "get_weather", {"city": "Paris"}, "sunny, 21 C"),
                     ("call_para_001", "get_weather", {"city": "Tokyo"}, "rainy, 14 C")]


def test_mlflow_3_17_stored_a_tools_json_text_as_the_value_it_spells() -> None:
    """MLflow 3.17's store took one JSON encoding off every span attribute, so `search_flights`, which returned JSON text,
    is stored as the list that text spells and reads as that list; 3.18 keeps the text, which reads as the tool returned it."""
    old = only_case(DATA / "mlflow-3.17-booking.mlflow.jsonl", "mlflow")
    new = only_case(Path(__file__).parent / "data" / "frameworks" / "mlflow" / "booking.mlflow.jsonl", "mlflow")
    truth = json.loads((Path(__file__).parent / "data" / "frameworks" / "mlflow" / "booking.truth.json").read_text())
    returned = truth["calls"][0]["result"]
    assert [c.result for c in new.trace.tool_calls()] == [c["result"] for c in truth["calls"]]
    assert [c.result for c in old.trace.tool_calls()] == [json.loads(returned), truth["calls"][1]["result"]]
    assert [(c.id, c.name, c.arguments) for c in old.trace.tool_calls()] == [(c.id, c.name, c.arguments) for c in new.trace.tool_calls()]
    assert (old.input, old.trace.output, _tokens(old)) == (new.input, new.trace.output, _tokens(new))


def test_mlflow_3_17_stream_without_its_calls_in_the_output_reads_as_3_18_which_put_them_there() -> None:
    """MLflow 3.17 left a streamed reply's tool calls out of the output it assembled (read from the chunk events); 3.18
    assembles them itself: the same run reads the same from both, each call paired with its result or error by its id."""
    old = only_case(DATA / "mlflow-3.17-stream.mlflow.jsonl", "mlflow")
    new = only_case(Path(__file__).parent / "data" / "nested-tool-calls" / "ml-stream.mlflow.jsonl", "mlflow")
    truth = json.loads((Path(__file__).parent / "data" / "nested-tool-calls" / "ml-stream.truth.json").read_text())
    got = [[(c.id, c.name, c.arguments, c.result, c.error) for c in case.trace.tool_calls()] for case in (old, new)]
    assert got[0] == got[1]
    assert [(c[0], c[1], c[2]) for c in got[0] if c[1] == "research"] == [(c["id"], c["name"], c["arguments"]) for c in truth["calls"]]
    assert (old.input, old.trace.output, _tokens(old)) == (new.input, new.trace.output, _tokens(new)) == (truth["input"], truth["output"], _tokens(new))


def _tokens(case: Case) -> tuple[int | None, int | None, int | None]:
    u = case.trace.usage
    return u.input_tokens, u.output_tokens, u.requests


def test_smolagents_steps_timed_on_the_step_itself_give_the_latency() -> None:
    """smolagents 1.13 wrote `start_time`/`end_time` on each step (no `timing`), and its message as a repr string."""
    case = only_case(DATA / "smolagents-1.13-sequence.jsonl", "smolagents")
    assert [(c.name, c.arguments, c.result) for c in case.trace.tool_calls()] == [
        ("get_weather", {"city": "Paris"}, "sunny, 21 C"), ("convert_temperature", {"celsius": 21, "to": "F"}, "69.8 F")]
    assert case.trace.output == "It is sunny in Paris: 21 C, which is 69.8 F."
    assert case.trace.usage.latency_s == pytest.approx(1796296662.7416298 - 1796296662.6328905)


SMOL_PARALLEL = DATA / "openinference-smolagents-0.1.16-parallel.jsonl"


def test_tool_spans_run_in_worker_threads_join_the_run_that_asked_for_them(tmp_path: Path) -> None:
    """openinference-instrumentation-smolagents 0.1.16 under smolagents 1.20 wrote each parallel call as a trace of its own.

    A lone tool trace whose arguments no model request asked for stays a trace of its own.
    """
    assert len(SMOL_PARALLEL.read_text().splitlines()) == 3  # the run's trace and one per tool span
    cases = extract_otel(SMOL_PARALLEL)
    assert len(cases) == 1 and isinstance(cases[0], Case), cases
    calls = [(c.id, c.name, c.arguments, c.result) for c in cases[0].trace.tool_calls()]
    assert calls == [("call_para_000", "get_weather", {"city": "Paris"}, "sunny, 21 C"),
                     ("call_para_001", "get_weather", {"city": "Tokyo"}, "rainy, 14 C")]
    assert cases[0].trace.output == "Paris is sunny at 21 C; Tokyo is rainy at 14 C."

    text = SMOL_PARALLEL.read_text().replace('kwargs\\": {\\"city\\": \\"Tokyo\\"}', 'kwargs\\": {\\"city\\": \\"Berlin\\"}')
    assert "Berlin" in text
    path = tmp_path / "stray.jsonl"
    path.write_text(text)
    cases = extract_otel(path)
    assert len(cases) == 2
    run = next(c for c in cases if c.trace.output)
    assert [(c.arguments, c.result) for c in run.trace.tool_calls()] == [({"city": "Paris"}, "sunny, 21 C"), ({"city": "Tokyo"}, None)]


def test_smolagents_message_kept_as_its_repr_gives_every_call_and_the_tokens() -> None:
    """smolagents 1.15 wrote the model's message as `ChatMessage(...)` text: the call it did not run and the usage are in there."""
    case = only_case(DATA / "smolagents-1.15-parallel.jsonl", "smolagents")
    calls = [(c.id, c.name, c.arguments, c.result) for c in case.trace.tool_calls()]
    assert calls == [("call_para_000", "get_weather", {"city": "Paris"}, "sunny, 21 C"), ("call_para_001", "get_weather", {"city": "Tokyo"}, None)]
    assert (case.trace.usage.input_tokens, case.trace.usage.output_tokens, case.trace.usage.requests) == (210, 41, 2)
    # 1.13 writes the role as an Enum's repr (`<MessageRole.ASSISTANT: 'assistant'>`), which is no Python expression
    older = only_case(DATA / "smolagents-1.13-sequence.jsonl", "smolagents")
    assert (older.trace.usage.input_tokens, older.trace.usage.output_tokens) == (330, 63)


def test_a_message_repr_is_read_as_literals_never_as_code() -> None:
    from tracejudge.stages.extract.smolagents_repr import message_tool_calls, message_usage

    assert message_tool_calls("ChatMessage(role='assistant', tool_calls=[ChatMessageToolCall(function=ChatMessageToolCallDefinition("
                              "arguments=__import__('os').getcwd(), name='x'), id='c1')])") == [{"id": "c1", "function": {"name": "x", "arguments": None}}]
    assert message_tool_calls("ChatMessage(role='assistant', content='hi', tool_calls=None)") is None
    assert message_tool_calls("not a message") is None and message_usage("ChatMessage(role='assistant')") == {}


def test_openinference_tool_calls_without_argument_attributes_take_them_from_the_output_message() -> None:
    """openinference-instrumentation-smolagents 0.1.11 recorded each call's id and name only; `output.value` holds the arguments."""
    cases = extract_otel(DATA / "openinference-smolagents-0.1.11-parallel.jsonl")
    assert len(cases) == 1 and isinstance(cases[0], Case), cases
    calls = [(c.id, c.name, c.arguments, c.result) for c in cases[0].trace.tool_calls()]
    # smolagents 1.15 ran only the first call: Tokyo was asked for, with its arguments, and never ran
    assert calls == [("call_para_000", "get_weather", {"city": "Paris"}, "sunny, 21 C"), ("call_para_001", "get_weather", {"city": "Tokyo"}, None)]


def test_langfuse_tool_observed_as_a_plain_span_is_the_call() -> None:
    """Langfuse 3.2's `@observe` has no `as_type="tool"`: the tool is a `span` observation, its failure only `level: ERROR`."""
    cases = extract_otel(DATA / "langfuse-3.2-failing.jsonl")
    assert len(cases) == 1 and isinstance(cases[0], Case), cases
    (call,) = cases[0].trace.tool_calls()
    assert (call.id, call.name, call.arguments, call.failed, call.error) == ("call_fail_000", "cancel_order", {"order_id": "#W999"}, True, "order #W999 not found")
    assert cases[0].trace.output == "I could not cancel order #W999: it was not found. Please check the order number."


def test_openinference_langchain_failed_tool_without_a_call_id_still_gets_the_text_the_model_saw() -> None:
    """openinference-instrumentation-langchain before 0.1.50 wrote no `tool_call.id` on the model's calls, and a failed
    TOOL span has no output (where a ToolMessage's `tool_call_id` is read): the call pairs by order and name with
    the tool message of the next request, as the current release's recording pairs it by id.
    """
    [old] = extract_otel(DATA / "openinference-langchain-0.1.45-failing.jsonl")
    [now] = extract_otel(Path(__file__).parent / "data" / "frameworks" / "openinference-langchain" / "failing.jsonl")
    assert isinstance(old, Case) and isinstance(now, Case), (old, now)
    [call] = old.trace.tool_calls()
    assert (call.id, call.name, call.arguments, call.failed) == ("call_fail_000", "cancel_order", {"order_id": "#W999"}, True)
    assert call.result == "Error: ValueError('order #W999 not found')\n Please fix your mistakes."
    assert call.error == "ValueError: order #W999 not found"  # (the exception event's type and message, not the status's traceback)
    [current] = now.trace.tool_calls()
    assert (call.id, call.result, call.failed) == (current.id, current.result, current.failed)
    assert old.trace.output == now.trace.output


def test_openai_agents_export_before_generation_tools_reads_as_the_current_one() -> None:
    """openai-agents 0.24.0's `generation` spans carry no `tools` (0.25.0 adds the request's function schemas), and its
    default `failure_error_function` sent the model "... Please try again."; the calls, the failed call's error, the
    answer and the tokens read alike, the result being the text that release sent.
    """
    old = only_case(DATA / "openai-agents-0.24-failing.jsonl", "openai-agents")
    now = only_case(Path(__file__).parent / "data" / "frameworks" / "openai-agents-export" / "failing.jsonl", "openai-agents")
    [call], [current] = old.trace.tool_calls(), now.trace.tool_calls()
    assert call.result == "An error occurred while running the tool. Please try again."
    assert current.result == "An error occurred while running the tool."
    assert (call.id, call.name, call.arguments, call.failed, call.error) == (current.id, current.name, current.arguments, current.failed, current.error)
    assert call.error == "Error running tool (non-fatal): Tool execution failed. Error details are redacted."
    assert old.trace.output == now.trace.output
    assert (old.trace.usage.input_tokens, old.trace.usage.output_tokens) == (now.trace.usage.input_tokens, now.trace.usage.output_tokens) == (210, 41)
