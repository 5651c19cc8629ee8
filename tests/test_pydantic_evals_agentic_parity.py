"""pydantic-evals' own agentic-evaluator test scenarios (tests/evals/test_agentic_evaluators.py): hand-built spans.

Each scenario is a list of spans in the shapes pydantic-ai writes (v2 `running tool`, v3+ `execute_tool …`, output
functions, deferrals, failed attempts, chat and embeddings requests). pydantic-evals scores them as a `SpanTree`; the
same spans, exported as OTLP/JSON under an agent-run span, are read by format `otel` and scored here. The two values
must be equal. What the other parity tests do not cover is the span shapes no real agent run produces on demand (a
non-string `gen_ai.tool.name`, a v2 output function without `logfire.msg`, an embeddings request beside chat ones).
Skipped without the `peers` extra.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

agentic = pytest.importorskip("pydantic_evals.evaluators.agentic")
from pydantic_evals.evaluators import EvaluatorContext  # noqa: E402
from pydantic_evals.otel.span_tree import SpanNode, SpanTree  # noqa: E402
from test_extract_otel_cases import export, one, span  # noqa: E402
from tracejudge.core.registry import build_metric  # noqa: E402

_EPOCH = datetime(2025, 1, 1, tzinfo=timezone.utc)
_OUT = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "done"}]}])
_IN = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "go"}]}])


def _tool(name: Any, args: str | None, t: int, *, v3: bool = True, error: bool = False, **extra: Any) -> tuple:
    attrs = {"gen_ai.tool.name": name, "logfire.msg": f"running tool: {name}", **extra}
    if args is not None:
        attrs["gen_ai.tool.call.arguments" if v3 else "tool_arguments"] = args
    return (f"execute_tool {name}" if v3 else "running tool", attrs, t, "error" if error else "unset")


def _output_fn(name: str, t: int, *, v3: bool, msg: bool = True) -> tuple:
    attrs = {"gen_ai.tool.name": name, **({"logfire.msg": f"running output function: {name}"} if msg else {})}
    return (f"execute_tool {name}" if v3 else "running output function", attrs, t, "unset")


def _chat(t: int) -> tuple:
    # (with content: a request without any is no case here, by design)
    return ("chat", {"gen_ai.request.model": "gpt-5", "gen_ai.operation.name": "chat",
                     "gen_ai.input.messages": _IN, "gen_ai.output.messages": _OUT}, t, "unset")


_EMBEDDINGS = ("embeddings", {"gen_ai.request.model": "text-embedding-3-small", "gen_ai.operation.name": "embeddings"}, 5, "unset")
_RETRIED = [_tool("search", '{"q": "bad"}', 0, error=True), _tool("search", '{"q": "good"}', 1)]

SCENARIOS: list[tuple[str, list[tuple], dict[str, Any]]] = [
    ("v2_and_v3_in_start_order", [_tool("rerank", '{"top_k": 3}', 2), _tool("search", '{"q": "cats"}', 1, v3=False)],
     {"type": "TrajectoryMatch", "expected_trajectory": ["search", "rerank"], "order": "exact"}),
    ("output_functions_are_not_calls", [_tool("search", "{}", 0, v3=False), _output_fn("format_answer", 1, v3=False), _output_fn("final_answer", 2, v3=True)],
     {"type": "ToolCorrectness", "expected_tools": ["search"]}),
    ("v2_output_function_without_msg", [_output_fn("format_answer", 0, v3=False, msg=False), _tool("search", "{}", 1, v3=False)],
     {"type": "ToolCorrectness", "expected_tools": ["search"]}),
    ("deferred_call_does_not_satisfy", [_tool("search", "{}", 0, v3=False), _tool("delete_account", "{}", 1, **{"pydantic_ai.tool.deferral.name": "ApprovalRequired"})],
     {"type": "ToolCorrectness", "expected_tools": ["search", "delete_account"]}),
    ("non_string_tool_name_is_skipped", [("running tool", {"gen_ai.tool.name": 123, "logfire.msg": "running tool: 123"}, 0, "unset"), _tool("search", "{}", 1)],
     {"type": "ToolCorrectness", "expected_tools": ["search"]}),
    ("failed_attempt_left_out", _RETRIED, {"type": "ArgumentCorrectness", "tool_name": "search", "expected_arguments": {"q": "good"}}),
    ("failed_attempt_included", _RETRIED, {"type": "ArgumentCorrectness", "tool_name": "search", "expected_arguments": {"q": "bad"}, "include_failed": True}),
    ("failed_attempt_extra_when_included", _RETRIED, {"type": "ToolCorrectness", "expected_tools": ["search"], "include_failed": True}),
    ("budget_counts_failed_attempts", _RETRIED, {"type": "MaxToolCalls", "max_calls": 1}),
    ("budget_without_failed_attempts", _RETRIED, {"type": "MaxToolCalls", "max_calls": 1, "include_failed": False}),
    ("arguments_not_json", [_tool("search", "not-json", 0)], {"type": "ArgumentCorrectness", "tool_name": "search", "expected_arguments": {"q": "cats"}}),
    ("arguments_not_an_object", [_tool("search", "[1, 2, 3]", 0)], {"type": "ArgumentCorrectness", "tool_name": "search", "expected_arguments": {"q": "cats"}}),
    ("v2_arguments_not_recorded", [_tool("search", None, 0, v3=False)], {"type": "ArgumentCorrectness", "tool_name": "search", "expected_arguments": {"q": "cats"}}),
    ("nested_value_is_compared_whole", [_tool("search", '{"filters": {"status": "open", "priority": "high"}}', 0)],
     {"type": "ArgumentCorrectness", "tool_name": "search", "expected_arguments": {"filters": {"status": "open"}}}),
    ("embeddings_are_no_model_request", [_chat(0), _EMBEDDINGS], {"type": "MaxModelRequests", "max_requests": 1}),
    ("chat_requests_over_budget", [_chat(0), _chat(1), _tool("search", "{}", 2, v3=False)], {"type": "MaxModelRequests", "max_requests": 1}),
]


def _peer_value(spans: list[tuple], spec: dict[str, Any]) -> float:
    nodes = [SpanNode(name=name, trace_id=1, span_id=i + 2, parent_span_id=None, start_timestamp=_EPOCH + timedelta(seconds=t),
                      end_timestamp=_EPOCH + timedelta(seconds=t, milliseconds=10), attributes=dict(attrs), status=status)
             for i, (name, attrs, t, status) in enumerate(spans)]
    tree = SpanTree()
    tree.add_spans(nodes)
    ctx = EvaluatorContext(name="t", inputs={}, metadata=None, expected_output=None, output=None, duration=0.0,
                           _span_tree=tree, attributes={}, metrics={})
    params = {k: v for k, v in spec.items() if k != "type"}
    return float(getattr(agentic, spec["type"])(**params).evaluate(ctx).value)


def _our_value(tmp_path: Path, spans: list[tuple], spec: dict[str, Any]) -> float | None:
    otlp = [span("root", None, 0, "agent run", gen_ai__operation__name="invoke_agent", gen_ai__agent__name="agent")]
    for i, (name, attrs, t, status) in enumerate(spans):
        otlp.append(span(f"s{i}", "root", t + 1, name, status={"code": 2, "message": "failed"} if status == "error" else None,
                         **{k.replace(".", "__"): v for k, v in attrs.items()}))
    return build_metric(spec).evaluate(one(tmp_path, export(otlp))).value


@pytest.mark.parametrize(("spans", "spec"), [(s, m) for _, s, m in SCENARIOS], ids=[n for n, _, _ in SCENARIOS])
def test_pydantic_evals_scenario_scores_the_same(tmp_path: Path, spans: list[tuple], spec: dict[str, Any]) -> None:
    assert _our_value(tmp_path, spans, spec) == _peer_value(spans, spec)
