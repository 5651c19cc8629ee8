"""OpenAI Agents SDK runs paused for a human's approval: read for both of its readers (format `openai-agents`, OpenInference).

A function tool declared `needs_approval=True`, or an MCP server's tool its server holds for approval
(`MCPServerStdio(..., require_approval=…)`: "always", or the tools named under `{"always": {"tool_names": […]}}`), does
not run when the model calls it: `Runner.run` returns with the call in `result.interruptions` and `final_output` None, and the application may approve or reject it
(`state = result.to_state(); state.approve(item)`) and resume with `Runner.run(agent, state)`, a run (and, under
`trace(...)`, a trace) of its own. The SDK records no pause: the call's `function` span opens and closes around the
approval check with no output and no error (OpenInference writes the TOOL span alike, without `output.value`), no model
request follows, and the agent, turn and trace spans end normally. So a run whose last model request was followed by
tool spans that recorded their arguments but neither output nor error, and that ended before the agent span did (one
ending after it is a cancelled call: `agents_cancel`), is read as paused (`paused_runs`): those calls stay calls (the
model made them) whose error says they awaited approval and did not run, and the run has no final output (the text
beside the calls announced them; it stays the step's). The run's error (`metadata.run_error`) says it paused, and for
which setting each call was held (`setting`); nothing failed, but no other field says a run returned without an answer.
A held MCP tool's span is like a function tool's (the export writes its `mcp_data` only once the tool ran): it is told
by the server's tool list the SDK records before the request (`mcp_tools` spans, the export's with the server's name),
under the same turn; a tool no such list names is a function tool's `needs_approval`.

What the trace cannot tell: a tool that returned `None` in a run that ended at it (`stop_on_first_tool`,
`StopAtTools`) is recorded exactly alike; its run's `final_output` is None too, so only the call's reading differs,
and a warning says so (once per file; the export, whose spans name no file: once per process). A span without
its arguments (`trace_include_sensitive_data=False`, which drops every tool's output too) is never read as paused.
What the application then decided is in the resumed run's trace, not this one: an approved call runs there first,
in a `function` span of its own (before any model request), and a rejected one runs no span, the model being sent
the SDK's "Tool execution was not approved." as the call's output. Where both traces are one case (the export's by
their `group_id`; OpenInference's, which records no `group_id`, by the resumed request replaying the paused one:
`stitch`), that span is the held call's execution, not a call of its own (`approved_run`, `run_approved`): the call keeps its
place in the request that asked for it, with the span's result and error. A rejected call keeps its error (it did
not run; the error says the run paused for the application to approve or reject it) and, as its result, what the SDK
sent the model in its place.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tracejudge.core.log import get_logger
from tracejudge.stages.extract.otel.conventions.scopeless import OI_AGENTS, agents_sdk_group, agents_sdk_span, from_instrumentation
from tracejudge.stages.extract.otel.reused_ids import agrees
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import MISSING, View, present, unjson
from tracejudge.stages.extract.otel.value_limit import cut_at
from tracejudge.stages.extract.said_once import first_time

__all__ = ["AWAITING", "Pause", "approved_run", "paused_runs", "run_approved", "warn_pause_lookalike"]

log = get_logger("tracejudge.extract.otel")


# (one text for every held call: readers tell a held call by it; the setting that held it is in the run's error)
AWAITING = ("not run: awaiting approval (a tool that needs it, `needs_approval` or an MCP server's `require_approval`: its span "
            "recorded no output and no error, and the run ended there with no model request after it, so the run paused for the "
            "application to approve or reject the call)")


@dataclass(slots=True)
class Pause:
    """A run paused for approval (`paused_runs`): its `agent` span, last `model` request, the tool spans of the calls
    awaiting approval (`pending`), the run's `error` (why it has no final output) and, by the name of such a span, the
    MCP server of each that is an MCP server's tool (`mcp`: the server's name, `None` when the trace does not name it)."""

    agent: Span
    model: Span
    pending: list[Span]
    error: str
    mcp: dict[str, str | None]

    def setting(self) -> str:
        """What held the calls: `needs_approval`, an MCP server's `require_approval`, or each tool's when they differ."""
        said = {name: _setting(name, self.mcp) for name in dict.fromkeys(t.name for t in self.pending)}
        if len(set(said.values())) == 1:
            return next(iter(said.values()))
        return "; ".join(f"{name}: {how}" for name, how in said.items())


def paused_runs(spans: list[Span], kind: Callable[[Span], str | None], view: Callable[[Span], View]) -> list[Pause]:
    """Every run that paused for approval of calls its last model request asked for (module docstring).

    `kind` / `view` as for `openai_agents.stopped_runs` (an agent called as a tool is that call's business, not read).
    A run counts when its agent span records no error (a failed or cancelled run is read so: run these after
    `run_errors` and `agents_cancel.unrun_calls`, and before `stopped_runs`), no handoff started after its last
    request, and some tool span started after that request recorded its arguments, no result (`None` or none at
    all) and no error, and ended no later than the agent span. Calls that ran beside them keep their results.
    """
    # here: `openai_agents` imports langfuse, which imports openinference, which imports `agents_sdk`, which imports this
    from tracejudge.stages.extract.otel.conventions.openai_agents import agent_runs

    out = []
    for agent, mine in agent_runs(spans, kind):
        if not mine.get("model") or not mine.get("tool") or view(agent).error:
            continue
        last = max(mine["model"], key=lambda s: (s.start, s.span_id))
        if any(h.start >= last.start for h in mine.get("handoff", [])):
            continue
        pending = [t for t in sorted(mine["tool"], key=lambda s: (s.start, s.span_id))
                   if t.start >= last.start and _awaiting(t, agent, view(t))]
        if not pending:
            continue
        names = ", ".join(dict.fromkeys(view(t).tool_name or t.name for t in pending))
        listed = _mcp_tools(spans, last, {view(t).tool_name or t.name for t in pending})
        pause = Pause(agent, last, pending, "", {t.name: listed[n] for t in pending if (n := view(t).tool_name or t.name) in listed})
        error = (f"Run paused for approval ({pause.setting()}) of the tool calls of its last model request ({names}): they did not run "
                 "and the run returned no final output (its `result.interruptions`); a resumed run (`Runner.run(agent, state)` after "
                 "`state.approve` / `state.reject`) is recorded apart. The SDK records no pause: read from tool spans with no "
                 "output and no error that no model request followed")
        pause.error = error
        out.append(pause)
    return out


def _setting(name: str, mcp: dict[str, str | None]) -> str:
    if name not in mcp:
        return "`needs_approval`"
    return f"MCP server `{mcp[name]}`'s `require_approval`" if mcp[name] else "an MCP server's `require_approval`"


def _mcp_tools(spans: list[Span], model: Span, names: set[str]) -> dict[str, str | None]:
    """`{tool: server}` for each of `names` an MCP server's tool list names, as the SDK recorded it before `model` (its
    `mcp_tools` spans under the same turn: the export's `span_data` with `server` and `result`, OpenInference's CHAIN
    span named so with the names as its `output.value`, no server); `None` for a server the span does not name."""
    out: dict[str, str | None] = {}
    loose = agents_sdk_group(spans)  # (spans read without their scope: the Agents SDK's group, `scopeless`)
    for span in sorted(spans, key=lambda s: (s.start, s.span_id)):
        if span.parent_id != model.parent_id or span.start > model.start:
            continue
        data = span.attrs.get("openai_agents.span_data")
        if isinstance(data, dict) and data.get("type") == "mcp_tools":
            server, listed = data.get("server"), data.get("result")
        elif span.name == "mcp_tools" and from_instrumentation(span, OI_AGENTS, lambda s: loose and agents_sdk_span(s)):
            server, listed = None, unjson(span.attrs.get("output.value"))
        else:
            continue
        for name in listed if isinstance(listed, list) else []:
            if isinstance(name, str) and name in names:
                out[name] = server if isinstance(server, str) and server else None
    return out


def approved_run(held: list[Any], tool: Any, run: set[str]) -> Any | None:
    """The call held for approval that tool `tool` is the execution of, on resume, else `None`.

    `held`: the `calls.Tool`s of the case whose error is `AWAITING` (`paused_runs`), whose calls are built, in the
    order they started; `tool`: a `calls.Tool` that no model request of its run came before; `run`: the span ids of
    that run (its anchor's members). It is one of them when it ran in another run (the resumed run is a run and a
    trace of its own; a trace joined by replay takes the first trace's id, `stitch`, so ids cannot tell) after the
    held call ended, with the same tool name and agreeing arguments (none that differ; the SDK runs the held call's
    own arguments). The latest such is taken (a resume continues the last pause: an earlier pause of the same call left
    unanswered stays held) and removed from `held`, so one resumed span runs one held call. Any other tool span, and
    every other framework's (no call of theirs is `AWAITING`), is left alone.
    """
    for h in reversed(held):
        if (h.call is not None and h.span.span_id not in run and h.span.end <= tool.span.start
                and h.name == tool.name and agrees(tool.args, unjson(h.args) if h.args is not MISSING else None) is not False):
            held.remove(h)
            return h
    return None


def run_approved(call: dict[str, Any], ran: dict[str, Any]) -> None:
    """Give the held `call` (a native call dict) what its approved execution `ran` (the resumed span's call) recorded.

    The result and error are the span's (a result the call had from the resumed request's tool message is that same
    output); the call's id, arguments and place stay the held call's, the id being the one the model gave it.
    """
    call["result"] = ran.get("result")
    call["error"] = ran.get("error")


def _awaiting(tool: Span, agent: Span, v: View) -> bool:
    """Whether `tool` looks like a call the SDK held for approval: arguments recorded, no result, no error, ended in its run."""
    no_result = not present(v.result) or v.result is None
    # (an output the length limit cut is no result to read, but the tool ran and returned it: `value_limit`)
    ran = cut_at(tool.attrs.get("output.value")) is not None
    return present(v.args) and no_result and not ran and v.error is None and not (agent.end and tool.end > agent.end)


def warn_pause_lookalike(pause: Pause, where: str) -> None:
    """Warn, once per file, that a run read as paused for approval may have ended at a tool that returned `None`.

    `where` names the recording (`"otel: <file>:<line>: trace <id>"`, `"openai-agents: trace <id>"`); said once per
    `agent.file` (the export's spans have none: once per process), naming its first run.
    """
    key = pause.agent.file or where.partition(":")[0]
    if not first_time("agents_pause_lookalike", key):
        return
    names = ", ".join(dict.fromkeys(t.name for t in pause.pending))
    log.warning(f"{where}: agent {pause.agent.name!r} ended after tool calls ({names}) whose spans recorded no output and no error, "
                f"with no model request after them: read as a run paused for approval ({pause.setting()}), the calls not run and "
                "no final output; a tool that returned None in a run stopped at it (`stop_on_first_tool`, `StopAtTools`) is "
                f"recorded exactly alike, and also has no final output (said once{' per file' if pause.agent.file else ''}; every "
                "such run is read the same way)")
