"""Format `smolagents`: which result belongs to which of a step's parallel calls.

smolagents keeps no per-call result in memory, only `observations`: the results joined by
newlines in call id order, trailing newlines cut off. A call gets its own part of that text
only when the text can be cut one way; otherwise every call keeps the whole text and
`metadata.smolagents.shared_results` says so. The recordings in
`tests/data/smolagents-parallel-results/` were made with the real library (see its README).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from framework_truth import assert_truth, only_case
from tracejudge.stages.extract.smolagents_observations import NOT_JOINED, split_observations

DATA = Path(__file__).parent / "data" / "smolagents-parallel-results"


def _truth(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.truth.json").read_text())


@pytest.mark.parametrize("name", ["empty-first", "one-result"])
def test_a_join_that_can_be_cut_one_way_gives_each_call_its_own_result(name: str) -> None:
    case = only_case(DATA / f"{name}.jsonl", "smolagents")
    assert_truth(case, _truth(name))
    assert "shared_results" not in case.metadata.get("smolagents", {})


def test_two_lines_for_two_calls_are_not_taken_as_one_line_each() -> None:
    """get_forecast returned two lines and log_event nothing: the join reads like two one-line results."""
    case = only_case(DATA / "empty-last.jsonl", "smolagents")
    calls = case.trace.tool_calls()
    assert [(c.name, c.result) for c in calls] == [("get_forecast", "sunny\nwind 5 km/h"), ("log_event", "sunny\nwind 5 km/h")]
    (note,) = case.metadata["smolagents"]["shared_results"]
    assert note["step"] == 0 and note["calls"] == ["call_a", "call_b"] and "more than one way" in note["reason"]
    assert case.trace.output == _truth("empty-last")["output"]


def _step(observations: str, model_output: str | None = None, ids: tuple[str, str] = ("a", "b")) -> list[dict[str, Any]]:
    calls = [{"id": i, "type": "function", "function": {"name": n, "arguments": {}}} for i, n in zip(ids, ("f", "g"))]
    return [{"task": "t"}, {"step_number": 1, "tool_calls": calls, "model_output": model_output, "observations": observations, "error": None}]


def test_results_joined_in_the_order_the_calls_finished_are_not_paired(tmp_path: Path) -> None:
    """smolagents 1.18-1.19 (`process_tool_calls`): observations in completion order, model_output one `Called Tool:` line per call."""
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(_step("x\n", "Called Tool: 'f' with arguments: {}\nCalled Tool: 'g' with arguments: {}")) + "\n")
    case = only_case(path, "smolagents")
    assert [c.result for c in case.trace.tool_calls()] == ["x\n"] * 2
    assert "finished" in case.metadata["smolagents"]["shared_results"][0]["reason"]
    # the same text from 1.20+ (id order, trailing empties cut): not a join smolagents makes, so not paired either
    path.write_text(json.dumps(_step("x\n")) + "\n")
    case = only_case(path, "smolagents")
    assert [c.result for c in case.trace.tool_calls()] == ["x\n"] * 2 and case.metadata["smolagents"]["shared_results"]


def test_calls_sharing_an_id_share_the_text(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(_step("x", ids=("a", "a"))) + "\n")
    case = only_case(path, "smolagents")
    assert [c.result for c in case.trace.tool_calls()] == ["x", "x"] and "share an id" in case.metadata["smolagents"]["shared_results"][0]["reason"]


def _join(results: tuple[str, ...]) -> str:
    """smolagents 1.20+'s `observations` of stripped results, in call id order."""
    return "".join(r + "\n" for r in results).rstrip("\n")


def _readings(text: str, calls: int) -> set[tuple[str, ...]]:
    """Every tuple of stripped results whose join is `text` (by brute force)."""
    if not text:
        return {("",) * calls}
    lines = text.split("\n")
    found = set()
    for k in range(1, min(calls, len(lines)) + 1):
        for cuts in itertools.combinations(range(1, len(lines)), k - 1):
            bounds = (0, *cuts, len(lines))
            parts = tuple("\n".join(lines[a:b]) for a, b in itertools.pairwise(bounds)) + ("",) * (calls - k)
            if all(p == p.strip() for p in parts) and _join(parts) == text:
                found.add(parts)
    return found


def test_a_split_is_given_exactly_when_one_reading_fits() -> None:
    pool = sorted({"", "a", "b c", "a\nb", "a\n\nb", "m\n n", "q\r\nz", "x\t\ny"})
    for calls in (2, 3, 4):
        for results in itertools.product(pool, repeat=calls):
            text = _join(results)
            readings = _readings(text, calls)
            assert results in readings
            parts, why = split_observations(text, calls)
            assert (parts, why is None) == ((list(results), True) if len(readings) == 1 else (None, False)), (results, text)
    assert split_observations(" x\ny", 2) == (None, NOT_JOINED) == split_observations("x\n", 2)  # no stripped results join so


def test_a_live_run_of_the_installed_smolagents_is_never_paired_by_guess(tmp_path: Path) -> None:
    pytest.importorskip("smolagents")
    from smolagents import Model, ToolCallingAgent, tool
    from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction, MessageRole

    @tool
    def lookup(key: str) -> str:
        """Look a key up.

        Args:
            key: the key
        """
        return {"k1": "line 1\nline 2", "k2": "   "}[key]

    script = [[("c1", "lookup", {"key": "k1"}), ("c2", "lookup", {"key": "k2"})], [("c3", "final_answer", {"answer": "done"})]]

    class Scripted(Model):
        def generate(self, messages, stop_sequences=None, response_format=None, tools_to_call_from=None, **kwargs):  # noqa: ANN001
            calls = [ChatMessageToolCall(id=i, type="function", function=ChatMessageToolCallFunction(name=n, arguments=a)) for i, n, a in script.pop(0)]
            return ChatMessage(role=MessageRole.ASSISTANT, content=None, tool_calls=calls)

    agent = ToolCallingAgent(tools=[lookup], model=Scripted(model_id="scripted"), max_steps=3, verbosity_level=0)
    agent.run("Look up k1 and k2.")
    path = tmp_path / "live.jsonl"
    path.write_text(json.dumps(agent.memory.get_full_steps(), default=str) + "\n")
    case = only_case(path, "smolagents")
    assert [c.result for c in case.trace.tool_calls()] == ["line 1\nline 2"] * 2 and case.metadata["smolagents"]["shared_results"]
