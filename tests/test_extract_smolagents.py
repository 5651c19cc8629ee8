"""Format `smolagents`: runs recorded by the real smolagents library (`agent.memory.get_full_steps()`).

Live tests drive a real `ToolCallingAgent` with a scripted `Model` (no server
needed), write its memory as JSONL and check the extracted case field by
field; the recorded runs in `tests/data/frameworks/smolagents-memory/` are
checked against their truth files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from framework_truth import assert_truth, extract, only_case, recording_id, recordings
from tracejudge.core.records import Case

smolagents = pytest.importorskip("smolagents")
from smolagents import Model, ToolCallingAgent, tool  # noqa: E402
from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction, MessageRole  # noqa: E402
from smolagents.monitoring import TokenUsage  # noqa: E402


@tool
def get_weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: the city
    """
    return {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}[city]


@tool
def cancel_order(order_id: str) -> str:
    """Cancel an order.

    Args:
        order_id: the order id
    """
    raise ValueError(f"order {order_id} not found")


class Scripted(Model):
    """A smolagents model that answers with the scripted tool calls, one list per request."""

    def __init__(self, script: list[list[tuple[str, str, dict[str, Any]]]]) -> None:
        super().__init__(model_id="scripted")
        self.script = list(script)

    def generate(self, messages, stop_sequences=None, response_format=None, tools_to_call_from=None, **kwargs):  # noqa: ANN001
        calls = [ChatMessageToolCall(id=i, type="function", function=ChatMessageToolCallFunction(name=n, arguments=a)) for i, n, a in self.script.pop(0)]
        return ChatMessage(role=MessageRole.ASSISTANT, content="let me see", tool_calls=calls, token_usage=TokenUsage(input_tokens=10, output_tokens=4))


def _run(tmp_path: Path, tasks: list[str], script: list[Any], **record: Any) -> Path:
    agent = ToolCallingAgent(tools=[get_weather, cancel_order], model=Scripted(script), max_steps=6, verbosity_level=0)
    for k, task in enumerate(tasks):
        agent.run(task, reset=k == 0)
    path = tmp_path / "run.jsonl"
    steps = agent.memory.get_full_steps()
    path.write_text(json.dumps({"steps": steps, **record} if record else steps, default=str) + "\n")
    return path


def test_a_step_the_model_got_wrong_is_a_step_with_its_error(tmp_path: Path) -> None:
    path = _run(tmp_path, ["What is the weather in Paris?"], [
        [],  # an answer without a tool call, which a ToolCallingAgent cannot parse: the step fails, the run goes on
        [("call_1", "get_weather", {"city": "Paris"})],
        [("call_2", "final_answer", {"answer": "Sunny, 21 C."})],
    ])
    case = only_case(path, "smolagents")
    failed, *rest = case.trace.steps
    assert failed.tool_calls == [] and failed.error is not None and failed.error.startswith("AgentParsingError: "), failed.error
    assert all(s.error is None for s in rest) and [c.name for c in case.trace.tool_calls()] == ["get_weather"]
    assert case.metadata["smolagents"]["errors"][0]["step"] == 0 and case.trace.output == "Sunny, 21 C."


def test_parallel_calls_keep_the_models_order_and_share_the_one_text_memory_keeps_of_their_results(tmp_path: Path) -> None:
    # smolagents sorts a step's calls and observations by call id: "call_b" was asked first.
    path = _run(tmp_path, ["Compare Paris and Tokyo"], [
        [("call_b", "get_weather", {"city": "Paris"}), ("call_a", "get_weather", {"city": "Tokyo"})],
        [("call_c", "final_answer", {"answer": "Paris is sunny, Tokyo rainy."})],
    ], id="cmp-1", tags=["weather"], metadata={"source": "live"})
    case = only_case(path, "smolagents")
    # Memory keeps the two results as one text in call-id order, "rainy, 14 C\nsunny, 21 C", which is also one two-line
    # result and an empty one: each call holds it whole, and the case says so (OpenInference's spans keep each call's own).
    assert case.id == "cmp-1" and case.tags == ["weather"] and case.metadata["source"] == "live"
    (shared,) = case.metadata["smolagents"]["shared_results"]
    assert shared["step"] == 0 and shared["calls"] == ["call_b", "call_a"], shared
    both = "rainy, 14 C\nsunny, 21 C"
    assert_truth(case, {"input": "Compare Paris and Tokyo", "output": "Paris is sunny, Tokyo rainy.", "user_turns": ["Compare Paris and Tokyo"],
                        "calls": [{"name": "get_weather", "arguments": {"city": "Paris"}, "result": both, "error": None},
                                  {"name": "get_weather", "arguments": {"city": "Tokyo"}, "result": both, "error": None}]})
    assert [c.id for c in case.trace.tool_calls()] == ["call_b", "call_a"]
    assert len(case.trace.steps) == 2 and case.trace.steps[1].tool_calls == [] and case.trace.steps[1].output == "Paris is sunny, Tokyo rainy."
    usage = case.trace.usage
    assert (usage.input_tokens, usage.output_tokens, usage.requests) == (20, 8, 2) and usage.latency_s is not None and usage.latency_s >= 0


def test_a_failed_call_is_kept_with_its_error(tmp_path: Path) -> None:
    path = _run(tmp_path, ["Cancel order #W9"], [
        [("call_1", "cancel_order", {"order_id": "#W9"})],
        [("call_2", "final_answer", {"answer": "Order #W9 was not found."})],
    ])
    case = only_case(path, "smolagents")
    (call,) = case.trace.tool_calls()
    assert call.name == "cancel_order" and call.arguments == {"order_id": "#W9"} and call.result is None
    assert call.error is not None and "ValueError: order #W9 not found" in call.error and call.failed
    assert case.trace.output == "Order #W9 was not found." and case.input == "Cancel order #W9"


def test_every_task_of_a_continued_run_is_a_user_message_before_its_step(tmp_path: Path) -> None:
    path = _run(tmp_path, ["Weather in Paris?", "And Tokyo?"], [
        [("c1", "get_weather", {"city": "Paris"})], [("c2", "final_answer", {"answer": "Sunny."})],
        [("c3", "get_weather", {"city": "Tokyo"})], [("c4", "final_answer", {"answer": "Rainy."})],
    ])
    case = only_case(path, "smolagents")
    assert [(m.step, m.content) for m in case.trace.user_messages] == [(0, "Weather in Paris?"), (2, "And Tokyo?")]
    assert case.input == "Weather in Paris?" and case.turns == ["And Tokyo?"] and case.trace.output == "Rainy."
    assert [(c.name, c.result) for c in case.trace.tool_calls()] == [("get_weather", "sunny, 21 C"), ("get_weather", "rainy, 14 C")]


def test_a_code_agent_run_is_its_code_calls_and_final_answer(tmp_path: Path) -> None:
    from smolagents import CodeAgent

    class ScriptedCode(Model):
        def __init__(self, texts: list[str]) -> None:
            super().__init__(model_id="scripted")
            self.texts = list(texts)

        def generate(self, messages, stop_sequences=None, response_format=None, tools_to_call_from=None, **kwargs):  # noqa: ANN001
            return ChatMessage(role=MessageRole.ASSISTANT, content=self.texts.pop(0), token_usage=TokenUsage(input_tokens=5, output_tokens=2))

    agent = CodeAgent(tools=[get_weather], model=ScriptedCode(["<code>\nw = get_weather(city='Paris')\nprint(w)\n</code>",
                                                               "<code>\nfinal_answer(f'Paris: {w}')\n</code>"]), max_steps=4, verbosity_level=0)
    agent.run("Weather in Paris?")
    path = tmp_path / "code.jsonl"
    path.write_text(json.dumps(agent.memory.get_full_steps(), default=str) + "\n")
    case = only_case(path, "smolagents")
    calls = case.trace.tool_calls()
    # The last code only hands over the answer: the answer, not a call.
    assert [(c.name, c.arguments) for c in calls] == [("python_interpreter", {"code": "w = get_weather(city='Paris')\nprint(w)"})]
    assert "sunny, 21 C" in calls[0].result and case.trace.output == "Paris: sunny, 21 C" and case.input == "Weather in Paris?"
    assert [len(s.tool_calls) for s in case.trace.steps] == [1, 0] and case.trace.steps[1].output == "Paris: sunny, 21 C"


def _code_answer_step(code: str) -> list[dict[str, Any]]:
    """The recorded `sequence` run with its last step (a final_answer tool call) as a CodeAgent writes it: `code` run by python_interpreter."""
    record = json.loads((Path(__file__).parent / "data/frameworks/smolagents-memory/sequence.jsonl").read_text().splitlines()[0])
    last = record["steps"][-1]
    answer = last["tool_calls"][0]["function"]["arguments"]["answer"]
    last.update(tool_calls=[{"id": "call_9", "type": "function", "function": {"name": "python_interpreter", "arguments": code}}],
                model_output_message=None, code_action=code, observations=f"Execution logs:\nLast output from code snippet:\n{answer}",
                action_output=answer, is_final_answer=True)
    return record


def test_code_that_only_calls_final_answer_is_the_answer_not_a_call(tmp_path: Path) -> None:
    truth = json.loads((Path(__file__).parent / "data/frameworks/smolagents-memory/sequence.truth.json").read_text())
    # Code that does work before or inside final_answer(...) stays the python_interpreter call it is.
    for code, counted in [("final_answer('It is sunny in Paris: 21 C, which is 69.8 F.')", False),
                          ("t = 'sunny'\nfinal_answer(f'It is {t} in Paris: 21 C, which is 69.8 F.')", True),
                          ("final_answer(get_weather(city='Paris'))", True)]:
        path = tmp_path / "code.jsonl"
        path.write_text(json.dumps(_code_answer_step(code)) + "\n")
        case = only_case(path, "smolagents")
        names = [c["name"] for c in truth["calls"]] + (["python_interpreter"] if counted else [])
        assert [c.name for c in case.trace.tool_calls()] == names and case.trace.output == truth["output"], code


def test_several_calls_with_multi_line_results_each_get_the_whole_observation(tmp_path: Path) -> None:
    steps = [{"task": "t"}, {"step_number": 1, "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "f", "arguments": {}}},
        {"id": "b", "type": "function", "function": {"name": "g", "arguments": {}}}],
        "observations": "line one\nline two\nline three", "error": None}]
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(steps) + "\n")
    case = only_case(path, "smolagents")
    assert [c.result for c in case.trace.tool_calls()] == ["line one\nline two\nline three"] * 2


def test_a_malformed_step_costs_its_record_only(tmp_path: Path) -> None:
    good = [{"task": "t"}, {"step_number": 1, "tool_calls": [], "model_output": "hi", "error": None}]
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join([json.dumps(good), json.dumps([{"task": "t"}, {"step_number": 1, "tool_calls": [{"id": "x", "function": {}}]}]),
                               json.dumps([{"what": 1}]), "{not json", json.dumps(good)]) + "\n")
    results = extract(path, "smolagents")
    assert [isinstance(r, Case) for r in results] == [True, False, False, False, True]
    fields = [r[1].field for r in results if not isinstance(r, Case)]
    assert fields == ["steps[1].tool_calls[0].function.name", "steps[0]", None]
    assert all(r[1].file == str(path) and r[1].line == n for r, n in zip((x for x in results if not isinstance(x, Case)), (2, 3, 4)))


RECORDED = recordings("smolagents-memory")


@pytest.mark.skipif(not RECORDED, reason="no smolagents recordings in tests/data/frameworks/smolagents-memory")
@pytest.mark.parametrize("export,truth", RECORDED, ids=[recording_id(r) for r in RECORDED])
def test_recorded_run_matches_its_truth(export: Path, truth: dict[str, Any]) -> None:
    case = only_case(export, "smolagents")
    shared = {c for s in (case.metadata.get("smolagents") or {}).get("shared_results", []) for c in s["calls"]}
    if shared:
        # Memory keeps one observation text for a step's calls: where it cannot be cut one way, each call holds it whole.
        calls = case.trace.tool_calls()
        text = "\n".join(want["result"] for c, want in zip(calls, truth["calls"]) if c.id in shared)
        assert [c.result for c in calls if c.id in shared] == [text] * len(shared)
        truth = {**truth, "calls": [{k: v for k, v in want.items() if k != "result" or c.id not in shared}
                                    for c, want in zip(calls, truth["calls"])]}
    assert_truth(case, truth)
