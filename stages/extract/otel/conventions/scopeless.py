"""Which instrumentation wrote a span, for spans read without their instrumentation scope.

A format that keeps no instrumentation scope (spans fetched back from a Phoenix server: `span.scope` is `None`)
still holds what the instrumentation wrote on each span: its keys, values and names. `from_instrumentation` decides
by the scope when the span has one (the rule each reader had), else by such a test of the span's own attributes:

- `smolagents_span`: openinference-instrumentation-smolagents' spans: an `AGENT` span named `<agent>.run` with its
  `smolagents.*` keys, a `CHAIN` named `Step <n>`, an `LLM` named `<Model>.generate` / `.generate_stream` /
  `.__call__`, a `TOOL` whose `input.value` is the bound arguments of smolagents' `Tool.__call__` (its
  `sanitize_inputs_outputs`);
- `agents_sdk_span`: openinference-instrumentation-openai-agents' spans, inside a group `agents_sdk_group` says is
  its (an `AGENT` span with `graph.node.id` and `agent.name` its name, or an `LLM` named `response` / `generation`
  with `llm.system` `openai`): an `LLM` so named, an `AGENT` so written or a trace's span (the span kind alone), a
  function `TOOL` (`tool.name` its name), a handoff (`handoff to <agent>`; `handoff` when it failed), a `CHAIN` or `GUARDRAIL`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import unjson

__all__ = ["OI_AGENTS", "OI_SMOLAGENTS", "agents_sdk_group", "agents_sdk_span", "agents_sdk_trace", "from_instrumentation", "smolagents_span"]

OI_AGENTS = "openinference.instrumentation.openai_agents"
OI_SMOLAGENTS = "openinference.instrumentation.smolagents"
_KIND = "openinference.span.kind"
_STEP = re.compile(r"Step \d+")
_REQUEST = re.compile(r"[^\s.]+\.(?:generate|generate_stream|__call__)")
_CONTEXT = frozenset({_KIND, "session.id", "user.id", "metadata", "tag.tags"})  # what a trace's span of the SDK holds
# Langfuse's span processor (the exporter Langfuse documents for the Agents SDK) marks the application's root span
# (`langfuse.internal.is_app_root`): bookkeeping of the exporter, none of the span's own content
_EXPORTER_MARKS = "langfuse.internal."


def _context_only(attrs: dict[str, object]) -> bool:
    """Whether `attrs` hold only the context keys of a trace's span (and an exporter's own marks)."""
    return all(k in _CONTEXT or k.startswith(_EXPORTER_MARKS) for k in attrs)


def from_instrumentation(span: Span, scope: str | Callable[[str], bool], attrs_test: Callable[[Span], bool]) -> bool:
    """Whether `span` is of an instrumentation: by its scope when it has one (`scope` a prefix it starts with, or a test
    of it), else (no scope kept: `None` or empty) by `attrs_test(span)`, its own attributes."""
    if span.scope:
        return scope(span.scope) if callable(scope) else span.scope.startswith(scope)
    return attrs_test(span)


def smolagents_span(span: Span) -> bool:
    """Whether a span without a scope is openinference-instrumentation-smolagents' (module docstring)."""
    a = span.attrs
    kind = a.get(_KIND)
    if kind == "AGENT":
        return span.name.endswith(".run") and any(k.startswith("smolagents.") for k in a)
    if kind == "CHAIN":
        return _STEP.fullmatch(span.name) is not None
    if kind == "LLM":
        return _REQUEST.fullmatch(span.name) is not None
    if kind == "TOOL":
        given = unjson(a.get("input.value"))
        return isinstance(given, dict) and "sanitize_inputs_outputs" in given
    return False


def agents_sdk_group(spans: Iterable[Span]) -> bool:
    """Whether spans without a scope are openinference-instrumentation-openai-agents': one of them is written as only it
    writes (an `AGENT` span with `graph.node.id` and `agent.name` its name, an `LLM` named `response` or `generation`)."""
    return any(not s.scope and _agents_sdk_mark(s) for s in spans)


def agents_sdk_span(span: Span) -> bool:
    """Whether a span without a scope, of a group `agents_sdk_group` says is the Agents SDK's, is its (module docstring)."""
    a = span.attrs
    kind = a.get(_KIND)
    if kind == "LLM":
        return _agents_sdk_mark(span)
    if kind == "AGENT":
        return _agents_sdk_mark(span) or _context_only(a)
    if kind == "TOOL":
        return a.get("tool.name") == span.name or ((span.name.startswith("handoff to ") or span.name == "handoff") and "tool.name" not in a)
    return kind in ("CHAIN", "GUARDRAIL")


def agents_sdk_trace(span: Span, spans: list[Span], group: bool | None = None) -> bool:
    """Whether `span` (one of `spans`, its group) is the span openinference-instrumentation-openai-agents writes for the
    SDK's trace (`with trace("x"):`, or the one `Runner.run` opens itself): an `AGENT` span holding only context keys
    (and Langfuse's exporter's mark of an application's root), no agent's name, of that instrumentation by its scope, else by its group (`agents_sdk_group`; `group` is its answer
    when the caller has it, so that a caller asking of every span reads the group once, not once a span)."""
    if span.attrs.get(_KIND) != "AGENT" or not _context_only(span.attrs):
        return False
    return from_instrumentation(span, OI_AGENTS, lambda _: agents_sdk_group(spans) if group is None else group)


def _agents_sdk_mark(span: Span) -> bool:
    a = span.attrs
    kind = a.get(_KIND)
    if kind == "LLM":
        return span.name in ("response", "generation") and a.get("llm.system") == "openai"
    return kind == "AGENT" and a.get("graph.node.id") == span.name and a.get("agent.name", span.name) == span.name
