"""Why OpenInference's spans of an OpenAI Agents SDK run hold no input: the SDK's own setting, or OpenInference's.

OpenInference's `OpenAIAgentsInstrumentor` writes a span's `input.value` from the SDK's span data. Two settings keep the
content out, and the spans tell them apart:

- the SDK's `RunConfig(trace_include_sensitive_data=False)` (or `OPENAI_AGENTS_TRACE_INCLUDE_SENSITIVE_DATA=false`)
  leaves the span data's `input` and `output` `None`: the LLM and TOOL spans carry no `input.value` at all;
- OpenInference's `OPENINFERENCE_HIDE_INPUTS` masks the value it writes: `input.value` is `__REDACTED__`.

`sdk_hid` says whether model requests recorded without input are the first case, so that `otel.missing_inputs` names
the setting that did it (its usual cause, content capture off in the instrumentation, names OpenInference's).
"""

from __future__ import annotations

from collections.abc import Iterable

from tracejudge.stages.extract.otel.spans import Span

__all__ = ["SDK_HID", "sdk_hid"]

_OI_SCOPE = "openinference.instrumentation.openai_agents"
_REDACTED = "__REDACTED__"  # what OpenInference's TraceConfig writes in place of a hidden value
SDK_HID = ("The Agents SDK did not write them: `RunConfig(trace_include_sensitive_data=False)` (or "
           "OPENAI_AGENTS_TRACE_INCLUDE_SENSITIVE_DATA=false) leaves content out of the spans it hands OpenInference's "
           "OpenAIAgentsInstrumentor (no `input.value` at all; OpenInference's own OPENINFERENCE_HIDE_INPUTS writes "
           "`__REDACTED__`), so the calls' arguments and results are unknown too. Nothing is made up in their place; each "
           "case counts its own in metadata.otel.missing_inputs. Record with trace_include_sensitive_data=True (the "
           "default) to evaluate them")


def sdk_hid(spans: Iterable[Span]) -> bool:
    """Whether every one of `spans` (model requests recorded without input) is an Agents SDK LLM span of OpenInference's
    with no `input.value` at all: the SDK's `trace_include_sensitive_data=False` (module docstring)."""
    got = list(spans)
    return bool(got) and all((s.scope == _OI_SCOPE or (s.scope or "").startswith(_OI_SCOPE + ".")) and "input.value" not in s.attrs
                             for s in got)  # (hidden by OpenInference, it would hold `_REDACTED`)
