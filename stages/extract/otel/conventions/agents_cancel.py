"""OpenAI Agents SDK runs that were cut short from outside: read for both of its readers (format `openai-agents`, OpenInference).

The SDK records no error when the application stops a run: `RunResultStreaming.cancel()` (mode `immediate`, the
default) or a cancelled `asyncio` task leaves the agent span, its `turn` span and the trace as they were: a call
that never started has no span, one stopped mid-way a span that ends after its agent's, without output (a span is
exported when it ends). Two shapes follow:

- the run's last model request asked for calls, no later request and no handoff followed, and some of the calls have
  no tool span after it, or one that ended after the agent span did, with no output (`unrun_calls`). The SDK runs
  every call of a reply, each in a `function` span (a handoff in a `handoff` span), and waits for them all before it
  asks the model again or ends the run, a stop at a tool (`stop_on_first_tool`) included; so these calls did not
  run, or did not finish: they stay calls (the model made them) whose error says so, and the run has no final
  output (the text beside the calls announced them; it was never the answer). The reason is the run's error
  (`metadata.run_error`), worded as what the trace shows, since the SDK recorded none.
- `cancel(mode="after_turn")` while the turn's tools ran: they all finish, no request follows, no final output. The
  SDK records that exactly as a run stopped at a tool by `tool_use_behavior` (`openai_agents.stopped_runs`), whose
  final output is the first tool's output: the same spans, attributes and export fields (no span or field records
  the behaviour, a final output or the cancel). That reading is kept, and `warn_cancel_lookalike` says both
  possibilities (once per file; the export, whose spans name no file: once per process), unless the run was not streamed: only a streamed run has `cancel`, and a Chat
  Completions request records its output as chat messages only when it was not streamed (a streamed one as the
  Responses API response the SDK built from the stream). A Responses API request looks the same streamed or not.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tracejudge.core.log import get_logger
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import View, present, unjson
from tracejudge.stages.extract.said_once import first_time

__all__ = ["Cut", "unrun_calls", "warn_cancel_lookalike"]

log = get_logger("tracejudge.extract.otel")



@dataclass(slots=True)
class Cut:
    """A run cut short (`unrun_calls`): its `agent` span, last `model` request, the tools of its calls that have no tool
    span (`unrun`: {tool name: why its call is marked not run}), the tool spans that ended after the agent span
    (`unfinished`: the run ended while they ran; `unfinished_why` their error) and the run's `error`."""

    agent: Span
    model: Span
    unrun: dict[str, str]
    unfinished: list[Span]
    unfinished_why: str
    error: str


_NOT_RUN = ("not run: the run ended before this call ran (no tool span records it and no model request followed; the trace "
            "records no error: a cancelled run)")
_UNFINISHED = ("did not finish: the run ended while this call ran (its tool span ended after the agent's, with no output; the "
               "trace records no error: a cancelled run)")


def unrun_calls(spans: list[Span], kind: Callable[[Span], str | None], view: Callable[[Span], View]) -> list[Cut]:
    """Every run that ended before calls its last model request asked for ran or finished (module docstring).

    `kind` / `view` as for `openai_agents.stopped_runs` (an agent called as a tool is that call's business, not read).
    A run counts when its agent span records no error (a run that failed, "Tool not found" included, is read so), its
    last request's recorded output has tool calls, no handoff started after that request, and some call either has no
    tool span of its tool started after the request, or has one that ended after the agent span ended with no output
    and no error (OpenInference exports it so; the SDK's exporters send each span when it ends). The SDK ends an agent
    span only once every call of the turn has returned, so such a span was still running when the run was stopped.
    Calls are told apart by tool name (the SDK records no call id on a function span): of two calls of one tool of
    which one ran, neither is marked. Nothing is found when the request's output is not recorded (the export's
    Responses API `response` span keeps none). A trace that lost the spans of calls that did run (an exporter's dropped
    batch) reads the same: the error says what the trace shows, not that the application cancelled.
    """
    # here: `openai_agents` imports langfuse, which imports openinference, which imports `agents_sdk`, which imports this
    from tracejudge.stages.extract.otel.conventions.openai_agents import agent_runs

    out = []
    for agent, mine in agent_runs(spans, kind):
        if not mine.get("model") or view(agent).error:
            continue
        last = max(mine["model"], key=lambda s: (s.start, s.span_id))
        if any(h.start >= last.start for h in mine.get("handoff", [])):
            continue
        after = [t for t in mine.get("tool", []) if t.start >= last.start]
        unfinished = [t for t in after if agent.end and t.end > agent.end and not present(view(t).result) and view(t).error is None]
        ran = {view(t).tool_name for t in after}
        asked = [p.get("name") for m in view(last).outputs or [] for p in m.get("parts") or []
                 if isinstance(p, dict) and p.get("type") == "tool_call" and "not_run" not in p and not p.get("server")]
        unrun = list(dict.fromkeys(n for n in asked if isinstance(n, str) and n and n not in ran))
        if not unrun and not unfinished:
            continue
        names = ", ".join(unrun + [t.name for t in unfinished])
        error = (f"Run ended before the tool calls of its last model request ran or finished ({names}): no model request followed "
                 "and the SDK recorded no error, as it records none for a cancelled run (`RunResultStreaming.cancel()`, a "
                 "cancelled task); it returned no final output")
        out.append(Cut(agent, last, {n: _NOT_RUN for n in unrun}, unfinished, _UNFINISHED, error))
    return out


def warn_cancel_lookalike(agent: Span, tool: Span, text: str, model: Span, where: str) -> None:
    """Warn, once per file, that a run read as stopped at `tool` (its output `text` the run's) may have been cancelled.

    `model` is the run's last model request: no warning when it was a Chat Completions request that was not streamed
    (module docstring). `where` names the recording (`"otel: <file>:<line>: trace <id>"`, `"openai-agents: trace <id>"`);
    the warning is said once per `agent.file` (the export's spans have none: once per process), naming its first run.
    """
    key = agent.file or where.partition(":")[0]
    if _not_streamed(model) or not first_time("agents_cancel_lookalike", key):
        return
    log.warning(f"{where}: agent {agent.name!r} ran tool calls after its last model request and no request followed: read as a run "
                f"stopped at a tool (`tool_use_behavior=\"stop_on_first_tool\"` or `StopAtTools`), whose final output is the tool "
                f"{tool.name!r}'s output {_cut(text)!r}; a streamed run cancelled after that turn (`cancel(mode=\"after_turn\")`) is "
                f"recorded exactly alike and has no final output, so the trace cannot tell which it was (said once{' per file' if agent.file else ''}; "
                "every such run is read the same way)")


def _not_streamed(model: Span) -> bool:
    """Whether a model request recorded its output as chat messages: a Chat Completions request that was not streamed.

    The export keeps it as `span_data.output`, OpenInference as `output.value` (JSON text). A streamed one records the
    Responses API response the SDK built from the stream; a Responses API request records a response (or, exported,
    nothing) either way.
    """
    data = model.attrs.get("openai_agents.span_data")
    raw: Any = data.get("output") if isinstance(data, dict) else unjson(model.attrs.get("output.value"))
    return isinstance(raw, list) and bool(raw) and all(isinstance(m, dict) and "role" in m for m in raw)


def _cut(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
