"""Spans in the shapes pydantic-ai writes, scored by tracejudge (format `otel`) and, where installed, by pydantic-evals.

A span is `(name, attributes, start, status)`: `status` is `"error"` for a failed attempt, else `"unset"`. pydantic-evals
reads such spans as a `SpanTree`; tracejudge reads the same spans exported as OTLP/JSON under an agent-run span. Importing
this module needs no peer: `peer_value` imports pydantic-evals when it is called.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from test_extract_otel_cases import export, one, span
from tracejudge.core.records import Score
from tracejudge.core.registry import build_metric

Span = tuple[str, dict[str, Any], int, str]

_EPOCH = datetime(2025, 1, 1, tzinfo=timezone.utc)
_OUT = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "done"}]}])
_IN = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "go"}]}])


def tool(name: Any, args: str | None, t: int, *, v3: bool = True, error: bool = False, **extra: Any) -> Span:
    """A tool span: v3+ `execute_tool NAME` with `gen_ai.tool.call.arguments`, or v2 `running tool` with `tool_arguments`
    (`args` None: not recorded, as with `include_content=False`); `error`: an attempt that failed."""
    attrs = {"gen_ai.tool.name": name, "logfire.msg": f"running tool: {name}", **extra}
    if args is not None:
        attrs["gen_ai.tool.call.arguments" if v3 else "tool_arguments"] = args
    return (f"execute_tool {name}" if v3 else "running tool", attrs, t, "error" if error else "unset")


def output_fn(name: str, t: int, *, v3: bool, msg: bool = True) -> Span:
    """An output-function span (not a tool call in either tool)."""
    attrs = {"gen_ai.tool.name": name, **({"logfire.msg": f"running output function: {name}"} if msg else {})}
    return (f"execute_tool {name}" if v3 else "running output function", attrs, t, "unset")


def chat(t: int, *, content: bool = True) -> Span:
    """A chat model request; `content=False` leaves out its messages, as pydantic-evals' own request spans do."""
    attrs = {"gen_ai.request.model": "gpt-5", "gen_ai.operation.name": "chat"}
    if content:
        attrs |= {"gen_ai.input.messages": _IN, "gen_ai.output.messages": _OUT}
    return ("chat", attrs, t, "unset")


def our_score(tmp_path: Path, spans: list[Span], spec: dict[str, Any]) -> Score:
    """tracejudge's score of metric `spec` on `spans`, read by format `otel` under one agent run."""
    otlp = [span("root", None, 0, "agent run", gen_ai__operation__name="invoke_agent", gen_ai__agent__name="agent")]
    for i, (name, attrs, t, status) in enumerate(spans):
        otlp.append(span(f"s{i}", "root", t + 1, name, status={"code": 2, "message": "failed"} if status == "error" else None,
                         **{k.replace(".", "__"): v for k, v in attrs.items()}))
    return build_metric(spec).evaluate(one(tmp_path, export(otlp)))


def peer_value(spans: list[Span], spec: dict[str, Any], metrics: dict[str, Any] | None = None) -> float:
    """pydantic-evals' value (as a float) of the evaluator `spec["type"]`, with the other keys as its parameters."""
    from pydantic_evals.evaluators import EvaluatorContext, agentic
    from pydantic_evals.otel.span_tree import SpanNode, SpanTree

    nodes = [SpanNode(name=name, trace_id=1, span_id=i + 2, parent_span_id=None, start_timestamp=_EPOCH + timedelta(seconds=t),
                      end_timestamp=_EPOCH + timedelta(seconds=t, milliseconds=10), attributes=dict(attrs), status=status)
             for i, (name, attrs, t, status) in enumerate(spans)]
    tree = SpanTree()
    tree.add_spans(nodes)
    ctx = EvaluatorContext(name="t", inputs={}, metadata=None, expected_output=None, output=None, duration=0.0,
                           _span_tree=tree, attributes={}, metrics=metrics or {})
    params = {k: v for k, v in spec.items() if k != "type"}
    return float(getattr(agentic, spec["type"])(**params).evaluate(ctx).value)
