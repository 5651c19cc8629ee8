"""pydantic-evals' own agentic-evaluator test scenarios (tests/evals/test_agentic_evaluators.py): hand-built spans.

Each scenario is a list of spans in the shapes pydantic-ai writes (v2 `running tool`, v3+ `execute_tool …`, output
functions, deferrals, failed attempts, chat and embeddings requests). pydantic-evals scores them as a `SpanTree`; the
same spans, exported as OTLP/JSON under an agent-run span, are read by format `otel` and scored here. The two values
must be equal. What the other parity tests do not cover is the span shapes no real agent run produces on demand (a
non-string `gen_ai.tool.name`, a v2 output function without `logfire.msg`, an embeddings request beside chat ones).
Skipped without the `peers` extra.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_evals.evaluators.agentic")
from _pydantic_spans import chat, output_fn, our_score, peer_value, tool  # noqa: E402

_EMBEDDINGS = ("embeddings", {"gen_ai.request.model": "text-embedding-3-small", "gen_ai.operation.name": "embeddings"}, 5, "unset")
_RETRIED = [tool("search", '{"q": "bad"}', 0, error=True), tool("search", '{"q": "good"}', 1)]

SCENARIOS: list[tuple[str, list[tuple], dict[str, Any]]] = [
    ("v2_and_v3_in_start_order", [tool("rerank", '{"top_k": 3}', 2), tool("search", '{"q": "cats"}', 1, v3=False)],
     {"type": "TrajectoryMatch", "expected_trajectory": ["search", "rerank"], "order": "exact"}),
    ("output_functions_are_not_calls", [tool("search", "{}", 0, v3=False), output_fn("format_answer", 1, v3=False), output_fn("final_answer", 2, v3=True)],
     {"type": "ToolCorrectness", "expected_tools": ["search"]}),
    ("v2_output_function_without_msg", [output_fn("format_answer", 0, v3=False, msg=False), tool("search", "{}", 1, v3=False)],
     {"type": "ToolCorrectness", "expected_tools": ["search"]}),
    ("deferred_call_does_not_satisfy", [tool("search", "{}", 0, v3=False), tool("delete_account", "{}", 1, **{"pydantic_ai.tool.deferral.name": "ApprovalRequired"})],
     {"type": "ToolCorrectness", "expected_tools": ["search", "delete_account"]}),
    ("non_string_tool_name_is_skipped", [("running tool", {"gen_ai.tool.name": 123, "logfire.msg": "running tool: 123"}, 0, "unset"), tool("search", "{}", 1)],
     {"type": "ToolCorrectness", "expected_tools": ["search"]}),
    ("failed_attempt_left_out", _RETRIED, {"type": "ArgumentCorrectness", "tool_name": "search", "expected_arguments": {"q": "good"}}),
    ("failed_attempt_included", _RETRIED, {"type": "ArgumentCorrectness", "tool_name": "search", "expected_arguments": {"q": "bad"}, "include_failed": True}),
    ("failed_attempt_extra_when_included", _RETRIED, {"type": "ToolCorrectness", "expected_tools": ["search"], "include_failed": True}),
    ("budget_counts_failed_attempts", _RETRIED, {"type": "MaxToolCalls", "max_calls": 1}),
    ("budget_without_failed_attempts", _RETRIED, {"type": "MaxToolCalls", "max_calls": 1, "include_failed": False}),
    ("arguments_not_json", [tool("search", "not-json", 0)], {"type": "ArgumentCorrectness", "tool_name": "search", "expected_arguments": {"q": "cats"}}),
    ("arguments_not_an_object", [tool("search", "[1, 2, 3]", 0)], {"type": "ArgumentCorrectness", "tool_name": "search", "expected_arguments": {"q": "cats"}}),
    # the JSON text of a string is no object, even when that string would read as one (an empty one, `"{}"`)
    ("arguments_json_empty_string", [tool("search", '""', 0)], {"type": "ArgumentCorrectness", "tool_name": "search", "expected_arguments": {}}),
    ("arguments_json_string_of_object", [tool("search", '"{\\"q\\": \\"cats\\"}"', 0)],
     {"type": "ArgumentCorrectness", "tool_name": "search", "expected_arguments": {"q": "cats"}}),
    ("v2_arguments_json_empty_string", [tool("search", '""', 0, v3=False)],
     {"type": "ArgumentCorrectness", "tool_name": "search", "expected_arguments": {}, "match_mode": "exact"}),
    # an empty text is no JSON at all (some instrumentations write the model's raw `""` for a call without arguments)
    ("arguments_empty_text", [tool("search", "", 0)], {"type": "ArgumentCorrectness", "tool_name": "search", "expected_arguments": {}}),
    ("arguments_blank_text", [tool("search", "  ", 0)], {"type": "ArgumentCorrectness", "tool_name": "search", "expected_arguments": {}}),
    ("v2_arguments_empty_text", [tool("search", "", 0, v3=False)],
     {"type": "ArgumentCorrectness", "tool_name": "search", "expected_arguments": {}, "match_mode": "exact"}),
    ("v2_arguments_not_recorded", [tool("search", None, 0, v3=False)], {"type": "ArgumentCorrectness", "tool_name": "search", "expected_arguments": {"q": "cats"}}),
    ("nested_value_is_compared_whole", [tool("search", '{"filters": {"status": "open", "priority": "high"}}', 0)],
     {"type": "ArgumentCorrectness", "tool_name": "search", "expected_arguments": {"filters": {"status": "open"}}}),
    ("embeddings_are_no_model_request", [chat(0), _EMBEDDINGS], {"type": "MaxModelRequests", "max_requests": 1}),
    ("chat_requests_over_budget", [chat(0), chat(1), tool("search", "{}", 2, v3=False)], {"type": "MaxModelRequests", "max_requests": 1}),
]


@pytest.mark.parametrize(("spans", "spec"), [(s, m) for _, s, m in SCENARIOS], ids=[n for n, _, _ in SCENARIOS])
def test_pydantic_evals_scenario_scores_the_same(tmp_path: Path, spans: list[tuple], spec: dict[str, Any]) -> None:
    assert our_score(tmp_path, spans, spec).value == peer_value(spans, spec)
