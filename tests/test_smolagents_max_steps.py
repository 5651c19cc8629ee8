"""Format `smolagents`: a run that reaches `max_steps` answers with what `agent.run` returned.

smolagents then asks the model for a final answer itself and records it as the
`action_output` of the step it adds, whose `error` is `AgentMaxStepsError`.
Live tests drive a real agent with a scripted `Model` (no server, no network)
and write `agent.memory.get_full_steps()` as the reader's JSONL; one test reads
the same step in smolagents 1.13's layout, built on that version's recording.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from framework_truth import only_case

pytest.importorskip("smolagents")
from smolagents import CodeAgent, Model, ToolCallingAgent, tool  # noqa: E402
from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction, MessageRole  # noqa: E402
from smolagents.monitoring import TokenUsage  # noqa: E402

MAX = "AgentMaxStepsError: Reached max steps."


@tool
def get_weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: the city
    """
    return {"Paris": "sunny, 21 C"}[city]


class Scripted(Model):
    """Answers each request with the next scripted reply: a list of (id, name, arguments) calls, a text, or an exception to raise."""

    def __init__(self, script: list[Any]) -> None:
        super().__init__(model_id="scripted")
        self.script = list(script)

    def generate(self, messages, stop_sequences=None, response_format=None, tools_to_call_from=None, **kwargs):  # noqa: ANN001
        reply = self.script.pop(0)
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, str):
            return ChatMessage(role=MessageRole.ASSISTANT, content=reply, token_usage=TokenUsage(input_tokens=10, output_tokens=4))
        calls = [ChatMessageToolCall(id=i, type="function", function=ChatMessageToolCallFunction(name=n, arguments=a)) for i, n, a in reply]
        return ChatMessage(role=MessageRole.ASSISTANT, content=None, tool_calls=calls, token_usage=TokenUsage(input_tokens=10, output_tokens=4))


def _weather(i: int) -> list[tuple[str, str, dict[str, Any]]]:
    return [(f"call_{i}", "get_weather", {"city": "Paris"})]


def _record(tmp_path: Path, agent: Any, tasks: list[str]) -> tuple[list[Any], Path]:
    returned = [agent.run(task, reset=k == 0) for k, task in enumerate(tasks)]
    path = tmp_path / "run.jsonl"
    path.write_text(json.dumps(agent.memory.get_full_steps(), default=str) + "\n")
    return returned, path


def test_a_run_that_reached_max_steps_answers_with_what_run_returned(tmp_path: Path) -> None:
    agent = ToolCallingAgent(tools=[get_weather], model=Scripted([_weather(1), _weather(2), "Final: Paris is sunny."]), max_steps=2, verbosity_level=0)
    (returned,), path = _record(tmp_path, agent, ["Keep checking the weather in Paris."])
    assert returned == "Final: Paris is sunny."
    case = only_case(path, "smolagents")
    assert case.trace.output == returned
    *work, last = case.trace.steps
    assert [c.result for s in work for c in s.tool_calls] == ["sunny, 21 C"] * 2 and all(s.error is None for s in work)
    # The step smolagents added still says the run hit max steps, and holds the answer it asked for.
    assert last.error == MAX and last.tool_calls == [] and last.output == returned
    assert case.metadata["smolagents"]["errors"] == [{"step": 2, "type": "AgentMaxStepsError", "message": "Reached max steps."}]
    assert case.trace.usage.requests == 3 and case.trace.usage.input_tokens == 30


def test_a_code_agent_that_reached_max_steps_answers_with_the_final_request_not_its_last_code_value(tmp_path: Path) -> None:
    # A CodeAgent keeps each code step's last value as `action_output`: only the max-steps step's is the answer.
    model = Scripted(["<code>\nw = get_weather(city='Paris')\nw\n</code>", "<code>\nw.upper()\n</code>", "Paris: sunny, 21 C."])
    (returned,), path = _record(tmp_path, CodeAgent(tools=[get_weather], model=model, max_steps=2, verbosity_level=0), ["Weather in Paris?"])
    case = only_case(path, "smolagents")
    assert returned == "Paris: sunny, 21 C." and case.trace.output == returned
    assert [s.output for s in case.trace.steps] == [None, None, returned] and case.trace.steps[-1].error == MAX
    assert [c.name for c in case.trace.tool_calls()] == ["python_interpreter"] * 2


def test_when_the_final_request_fails_the_run_has_no_answer_and_the_step_says_why(tmp_path: Path) -> None:
    # The first task is answered; the second reaches max steps and smolagents' own final-answer request fails:
    # `run` returns smolagents' error text, which is no answer (and not the first task's answer either).
    script = [[("call_1", "final_answer", {"answer": "Sunny."})], _weather(2), _weather(3), RuntimeError("upstream 500")]
    agent = ToolCallingAgent(tools=[get_weather], model=Scripted(script), max_steps=2, verbosity_level=0)
    (first, second), path = _record(tmp_path, agent, ["Weather in Paris?", "Keep checking it."])
    assert first == "Sunny." and "Error in generating final LLM output" in json.dumps(second)
    case = only_case(path, "smolagents")
    assert case.trace.output is None and case.turns == ["Keep checking it."]
    last = case.trace.steps[-1]
    assert last.output is None and last.error is not None and last.error.startswith(MAX + "\n")
    assert "Error in generating final LLM output" in last.error and "upstream 500" in last.error


def test_a_run_stopped_by_an_error_has_no_answer(tmp_path: Path) -> None:
    # A model request that raises ends the run (smolagents re-raises AgentGenerationError): nothing was returned.
    agent = ToolCallingAgent(tools=[get_weather], model=Scripted([_weather(1), RuntimeError("upstream 500")]), max_steps=4, verbosity_level=0)
    with pytest.raises(Exception, match="upstream 500"):
        agent.run("Weather in Paris?")
    path = tmp_path / "run.jsonl"
    path.write_text(json.dumps(agent.memory.get_full_steps(), default=str) + "\n")
    case = only_case(path, "smolagents")
    assert case.trace.output is None and all(s.output is None for s in case.trace.steps)
    assert [c.result for c in case.trace.tool_calls()] == ["sunny, 21 C"]


def test_smolagents_1_13_max_steps_step_gives_the_answer(tmp_path: Path) -> None:
    """smolagents 1.13 wrote `step` (not `step_number`) and the timing on the step; its max-steps step is the same otherwise."""
    record = json.loads((Path(__file__).parent / "data/framework-versions/smolagents-1.13-sequence.jsonl").read_text().splitlines()[0])
    steps = record["steps"][:-1]  # the recorded run without its final_answer step
    end = steps[-1]["end_time"]
    for action_output, output in [("Paris is sunny.", "Paris is sunny."), ("Error in generating final LLM output:\nupstream 500", None)]:
        last = {"model_input_messages": None, "tool_calls": [], "start_time": end, "end_time": end + 0.5, "step": len(steps),
                "error": {"type": "AgentMaxStepsError", "message": "Reached max steps."}, "duration": 0.5,
                "model_output_message": None, "model_output": None, "observations": None, "action_output": action_output}
        path = tmp_path / "run.jsonl"
        path.write_text(json.dumps({**record, "steps": [*steps, last]}) + "\n")
        case = only_case(path, "smolagents")
        assert case.trace.output == output and case.trace.steps[-1].output == output
        assert case.trace.steps[-1].error == (MAX if output else f"{MAX}\n{action_output}")
        assert len(case.trace.tool_calls()) == len(steps) - 1

