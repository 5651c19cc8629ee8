"""Spans read without their instrumentation scope (a Phoenix server keeps none) read as with it.

Each stored recording is read with format `otel` twice: as stored, and with every span's scope dropped in memory
(as `format: phoenix` builds its spans). The checks that tell an instrumentation's spans apart decide by the scope
when there is one and by what the instrumentation writes on its spans when there is none, so both read the same.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tracejudge.core import registry
from tracejudge.core.config import DatasetConfig
from tracejudge.stages.extract import extract_record
from tracejudge.stages.extract.otel import spans as otel_spans

DATA = Path(__file__).parent / "data"

RECORDINGS = [
    # OpenAI Agents SDK under OpenInference: a stop at a tool, a run's error, a pause for approval, a handoff filter
    "openai-agents-stop/oi-stop_at_tools.jsonl",
    "agents-sdk-faults/oi-input_guardrail.jsonl",
    "agents-approval/paused.oi.jsonl",
    "agents-mcp-approval/oi-mcp.jsonl",
    "agents-handoff-filters/oi-filtered.jsonl",
    "agents-tool-outputs/oi-function_outputs.jsonl",
    # OpenAI Agents SDK under OpenLLMetry: Chat Completions requests recorded without output, a handoff filter
    "agents-handoff-filters/tl-filtered.jsonl",
    "agents-tool-timeout/tl-timeout_chat.jsonl",
    # smolagents under OpenInference: streamed runs, runs that raised, answers that are no text, planning
    "smolagents-streams/tool.oi.jsonl",
    "smolagents-streams/fails.oi.jsonl",
    "smolagents-raised/code.oi.jsonl",
    "smolagents-raised/first-step.oi.jsonl",
    "smolagents-answers/dict.oi.jsonl",
    "smolagents-answers/number.oi.jsonl",
    "smolagents-planning/planning-tool.oi.jsonl",
    "trace-faults/oi-smolagents-managed.jsonl",
    # OpenLLMetry's MCP client instrumentation: its `{"tool_name", "arguments"}` and `{"result"}` wrappers around a call
    "openllmetry-mcp/tl-mcp-stdio.jsonl",
    # pydantic-ai's own instrumentation (1.x+: its tool spans carry neither `model_request_parameters` nor the messages)
    "pydantic-ai-unrun/tool_limit-v5.jsonl",
    "pydantic-ai-unrun/iter_after_tools-v5.jsonl",
    "pydantic-ai-raised-deferrals/mixed-v5.jsonl",
]


def _read(path: Path) -> list[dict[str, Any]]:
    format_ = registry.format_for("otel")
    ds = DatasetConfig(path=path, format="otel", options={})
    ctx = format_.prepare(ds)
    out = []
    for raw in format_.read(ds):
        got = extract_record(raw, format_, ctx)
        out.append(json.loads(got.model_dump_json()) if hasattr(got, "model_dump_json") else {"error": str(got)})
    return out


@pytest.mark.parametrize("rel", RECORDINGS)
def test_scopeless_spans_read_as_scoped(rel: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = DATA / rel
    scoped = _read(path)
    assert scoped and all("error" not in c for c in scoped)

    made = otel_spans._span

    def without_scope(*args: Any, **kwargs: Any) -> otel_spans.Span:
        span = made(*args, **kwargs)
        span.scope = None
        return span

    monkeypatch.setattr(otel_spans, "_span", without_scope)
    assert _read(path) == scoped
