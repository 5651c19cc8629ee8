"""Span-shaped framework exports that are not OTLP (`mlflow`, `langfuse`, `openai-agents`), through the one assembler.

Each of those formats translates one raw record (a trace, or the traces of one
conversation joined by `conversation_groups`) into a `Group` of `Span`s
whose attributes are its convention's (`native_span`): MLflow's span
attributes as they are, a Langfuse observation as the `langfuse.observation.*`
attributes its OTel SDK writes, an Agents SDK span as `openai_agents.*`. Then
`native_case` runs the `otel` assembler, so every rule of the package
docstring (pairing a tool span with the model's tool-call part, the model's
order, answer and user turns, usage) is the same for them as for OTLP.

What `native_case` changes in the assembled mapping: the case id, tags and
the format's own `metadata.<format>` are the format's; `turns` are every
user message after the first (`trace.user_messages`); `metadata.otel` keeps
only `turns`, `conventions` (what `tracejudge extract` reports per file) and `retried` (`retries`),
and `metadata.run_error` (the error the run ended in), `requests_without_usage`
(`tally`) and `nested_steps` (`nesting`) stay;
token counts that some model request did not record are left out rather than 0; a
result that only a tool message recorded stays the text the model got;
`usage` takes the format's extra figures (latency, cost).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tracejudge.stages.extract.common import fail
from tracejudge.stages.extract.otel.assemble import assemble
from tracejudge.stages.extract.otel.spans import Group, Span

__all__ = ["native_case", "native_span", "nanos"]



@dataclass(frozen=True)
class _Options:
    """What the assembler is told for a native export: no answer tools (every call the model made is a call), no
    custom keys, and results from tool messages kept as the text the model got."""

    error_prefixes: tuple[str, ...] = ()
    answer_tools: tuple[str, ...] = ()
    argument_keys: tuple[str, ...] = ()
    result_keys: tuple[str, ...] = ()
    decode_tool_messages: bool = False


_OPTIONS = _Options()


def nanos(value: Any) -> int | None:
    """Unix nanoseconds of a time: an integer as it is (MLflow's ns), digits, or ISO 8601 text; `None` when none of these."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value * 1e9)
    if isinstance(value, str):
        if value.isdigit():
            return int(value)
        try:
            return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1e9)
        except ValueError:
            return None
    return None


def native_span(trace_id: str, span_id: Any, parent_id: Any, name: Any, start: int, end: int, attrs: dict[str, Any], *,
                error: bool = False, message: str | None = None, events: list[tuple[str, dict[str, Any]]] | None = None) -> Span:
    """A `Span` of a native export: ids as text (a parent that is not text or a number is no parent), times in ns."""
    parent = str(parent_id) if isinstance(parent_id, (str, int)) and not isinstance(parent_id, bool) and parent_id != "" else None
    return Span(trace_id=trace_id, span_id=str(span_id), parent_id=parent, name=name if isinstance(name, str) else "", kind=0,
                start=start, end=end, attrs=attrs, status_error=error, status_message=message, events=events or [], service=None,
                file="", line=0)


def in_order(starts: list[int | None]) -> list[int]:
    """Start times with the missing ones filled so that record order stands (just after the span before)."""
    out: list[int] = []
    for s in starts:
        out.append(s if s is not None else (out[-1] + 1 if out else 0))
    return out


def native_case(case_id: str, spans: list[Span], fmt: str, meta: dict[str, Any], *, tags: list[str] | None = None,
                usage: dict[str, Any] | None = None, traces: list[str] | None = None) -> dict[str, Any]:
    """The native case mapping of one record's spans (see the module docstring).

    `fmt` names the metadata key (`mlflow`, `langfuse`, `openai_agents`) that
    holds `meta`. `traces`: the trace ids of a conversation's spans, in turn
    order (`conversation_groups`; default: the one trace `case_id`). Raises
    `AdapterError` as `assemble` does.
    """
    if not spans:
        fail("the trace holds no span: nothing the agent did was recorded", case_id=case_id)
    group = Group(key=case_id, key_attr=None, traces=traces or [case_id], spans=sorted(spans, key=lambda s: s.start))
    built = assemble(group, _OPTIONS)
    trace = built["trace"]
    got = trace["usage"]
    if not got.get("input_tokens") and not got.get("output_tokens"):
        got.pop("input_tokens", None)
        got.pop("output_tokens", None)
    got.update(usage or {})
    otel = built["metadata"]["otel"]
    metadata = {fmt: meta, "otel": {"turns": otel["turns"], "conventions": otel["conventions"]}}
    if "retried" in otel:  # a call run again after it failed (`retries`): its attempts
        metadata["otel"]["retried"] = otel["retried"]
    for key in ("run_error", "requests_without_usage", "nested_steps"):
        if key in built["metadata"]:
            metadata[key] = built["metadata"][key]
    return {"id": case_id, "input": built["input"], "turns": [m["content"] for m in trace["user_messages"][1:]], "tags": tags or [],
            "metadata": metadata, "trace": trace}
