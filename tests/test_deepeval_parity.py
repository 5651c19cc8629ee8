"""`DeepEvalToolCorrectness` gives deepeval's `ToolCorrectnessMetric` numbers.

Every row of `deepeval_table.ROWS` is scored by our metric and compared with
the value deepeval computed; when deepeval is installed (the `peers` extra)
its metric is also run offline on the same row — a model that must never be
called, no `available_tools`, telemetry off — and must agree.
"""

from __future__ import annotations

from typing import Any

import pytest
from deepeval_table import ROWS
from tracejudge.core.records import Case
from tracejudge.core.registry import build_metric


def _case(expected: list[Any], called: list[Any]) -> Case:
    return Case.model_validate(
        {
            "id": "c",
            "expected_tool_calls": [{"name": n, "arguments": a, "result": o} for n, a, o in expected],
            "trace": {"steps": [{"tool_calls": [{"name": n, "arguments": a if a is not None else {}, "result": o}]} for n, a, o in called]},
        }
    )


def _ours(params: dict[str, Any], expected: list[Any], called: list[Any]) -> Any:
    return build_metric({"type": "DeepEvalToolCorrectness", **params}).evaluate(_case(expected, called))


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_our_value_is_deepevals(row):
    _, params, expected, called, value = row
    score = _ours(params, expected, called)
    assert score.value == value
    threshold = 1.0 if params.get("strict_mode") else params.get("threshold", 0.5)
    assert score.passed is (value >= threshold)


def test_deepeval_computes_the_same_values(monkeypatch):
    monkeypatch.setenv("DEEPEVAL_TELEMETRY_OPT_OUT", "1")  # no network from the peer
    pytest.importorskip("deepeval")
    from deepeval.metrics import ToolCorrectnessMetric
    from deepeval.models import DeepEvalBaseLLM
    from deepeval.test_case import LLMTestCase, ToolCall, ToolCallParams

    class NeverCalled(DeepEvalBaseLLM):
        def __init__(self) -> None:
            pass

        def load_model(self) -> None:
            return None

        def get_model_name(self) -> str:
            return "offline"

        def generate(self, *args: Any, **kwargs: Any) -> Any:
            raise AssertionError("tool correctness without available_tools calls no model")

        async def a_generate(self, *args: Any, **kwargs: Any) -> Any:
            raise AssertionError("tool correctness without available_tools calls no model")

    def tools(rows: list[Any]) -> list[Any]:
        return [ToolCall(name=n, input_parameters=a, output=o) for n, a, o in rows]

    table = []
    for rid, params, expected, called, _ in ROWS:
        kwargs = dict(params)
        evaluation_params = [ToolCallParams(p) for p in kwargs.pop("evaluation_params", [])]
        metric = ToolCorrectnessMetric(model=NeverCalled(), async_mode=False, evaluation_params=evaluation_params, **kwargs)
        theirs = metric.measure(LLMTestCase(input="q", actual_output="a", expected_tools=tools(expected), tools_called=tools(called)), _show_indicator=False)
        ours = _ours(params, expected, called)
        table.append((rid, theirs, ours.value, metric.success, ours.passed))
    assert [(r[0], r[1], r[3]) for r in table] == [(r[0], r[2], r[4]) for r in table]
