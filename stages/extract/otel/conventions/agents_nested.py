"""The OpenAI Agents SDK's agent called as a tool (`Agent.as_tool`) whose run failed: the call's error is that run's.

`as_tool` runs the agent inside the function tool's span; when the nested run fails (`MaxTurnsExceeded`, its own tool
raising with no failure function, …) the SDK's failure function answers the calling model with its generic text ("An
error occurred while running the tool. Please try again.") and marks the function span `Error running tool
(non-fatal)`. With the default failure function the SDK leaves the error out of that mark (`Tool execution failed.
Error details are redacted.`, its `REDACTED_TOOL_ERROR_MESSAGE`), whatever `trace_include_sensitive_data` says, while
the nested run's agent span keeps its own error (`Max turns exceeded: {"max_turns": 1}`, `Error in agent run: Error
running tool glossary: …`). `nested_run_errors` (on a whole group, both the SDK's export and OpenInference's
instrumentation, after `agents_sdk.oi_errors` has read the latter's errors as the export's) puts that error in place
of the redacted text, so the call reads why it failed. The result (what the model was sent) is kept.
"""

from __future__ import annotations

from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import View
from tracejudge.stages.extract.otel.wrapped import HOPS

__all__ = ["REDACTED_TOOL_ERROR", "nested_run_errors"]

# What the SDK writes in a function span's error in place of the tool's (`agents.util._tool_errors`), and in an agent
# span's in place of the run's when sensitive data is not traced (`agents.util._error_tracing`): no better than it.
REDACTED_TOOL_ERROR = "Tool execution failed. Error details are redacted."
_REDACTED_RUN_ERROR = "Error details are redacted."


def nested_run_errors(spans: list[Span], views: dict[str, View]) -> None:
    """Give each tool span of `spans` whose error ends in `REDACTED_TOOL_ERROR` the error of the one failed agent run
    right inside it (no agent or tool span between) in place of that text (`views` changed in place).

    A call with no failed run inside, or several, or whose run's error is redacted too, keeps its error.
    """
    index = {s.span_id: s for s in spans}
    failed: dict[str, list[str]] = {}
    for span in spans:
        v = views[span.span_id]
        if v.role != "agent" or not v.error or v.error.endswith(_REDACTED_RUN_ERROR):
            continue
        above, hops = index.get(span.parent_id or ""), 0
        while above is not None and views[above.span_id].role not in ("agent", "tool") and hops < HOPS:
            above, hops = index.get(above.parent_id or ""), hops + 1
        if above is not None and views[above.span_id].role == "tool":
            failed.setdefault(above.span_id, []).append(v.error)
    for tid, errors in failed.items():
        tv = views[tid]
        if len(errors) == 1 and tv.error and tv.error.endswith(REDACTED_TOOL_ERROR):
            tv.error = tv.error[: -len(REDACTED_TOOL_ERROR)] + errors[0]
