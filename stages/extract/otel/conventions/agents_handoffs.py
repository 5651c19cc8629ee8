"""OpenAI Agents SDK handoffs that did not run as the model asked: read for both of its readers (format `openai-agents`, OpenInference).

The SDK runs a reply's function tools first (each in a `function` span), then one handoff, in a `handoff` span
under the same `turn` as the request (`run_internal.turn_resolution.execute_handoffs`). A handoff call runs no
span of its own: it is the model's `transfer_to_<agent>` tool-call part, and its result the transfer message the
next agent's first request sends back. Two cases leave that reading wrong:

- several handoffs in one reply: the SDK runs the first in the model's order only, answers each other one with
  "Multiple handoffs detected, ignoring this one." and marks the handoff span failed, "Multiple handoffs requested"
  (`data.requested_agents`). The others did not run: each stays a call (the model made it) failed with why, its
  result the text the model was sent; the one that ran keeps its result and no error (the span's error is the
  SDK's note of the others, not the handoff's failure).
- a handoff that failed: `on_invoke_handoff` raised (the handoff's `on_handoff` callback raised; arguments that are
  not JSON or do not fit its `input_type`, "Invalid JSON provided" on the handoff span and `ModelBehaviorError` out
  of `Runner.run`). The span keeps no target (`to_agent` null; OpenInference names it `handoff`, not
  `handoff to <agent>`) and the run raised, after the reply's function tools ran. The first call of the reply no
  tool span ran is that handoff (a later one was ignored, as above): failed with the handoff span's error, else the
  run's (an `on_handoff` that raised marks the agent span, "Error in agent run: …", and not the handoff span), and
  the run's error is the handoff span's when the agent span records none (the SDK marks only the handoff span for
  arguments it could not read) and no model request followed within the run's parent.

Calls are told by tool name (a `function` span records no call id); nothing is found when the request's output is
not recorded (the export's Responses API `response` span keeps none: the failed handoff's tool name is then unknown).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import View

__all__ = ["IGNORED", "Missed", "missed_handoffs"]

IGNORED = "Multiple handoffs detected, ignoring this one."  # what the SDK sends the model for a handoff call it did not run
_MULTIPLE = "Multiple handoffs requested"  # the handoff span's error then


@dataclass(slots=True)
class Missed:
    """The handoff calls of one model request that did not run (`missed_handoffs`): `unrun` {tool name: why}, the run's
    `agent` span and, when the run ended in the failed handoff and the agent span records no error, that `run_error`."""

    model: Span
    unrun: dict[str, str] = field(default_factory=dict)
    agent: Span | None = None
    run_error: str | None = None


def missed_handoffs(spans: list[Span], kind: Callable[[Span], str | None], view: Callable[[Span], View],
                    target: Callable[[Span], str | None], error: Callable[[Span], str | None]) -> list[Missed]:
    """Every model request with handoff calls that did not run, or failed (module docstring).

    `kind` / `view` as for `openai_agents.stopped_runs`; `target(span)` the agent a `handoff` span hands off to (`None`:
    it recorded none), `error(span)` its own error as the export reads it.
    """
    # here: `openai_agents` imports langfuse, which imports openinference, which imports `agents_sdk`, which imports this
    from tracejudge.stages.extract.otel.conventions.openai_agents import agent_runs, asking_request, handoff_tool_name

    index = {s.span_id: s for s in spans}
    owners = {s.span_id: a for a, mine in agent_runs(spans, kind) for s in mine.get("handoff", [])}
    out: list[Missed] = []
    for h in spans:
        if kind(h) != "handoff" or (model := asking_request(spans, kind, h)) is None:
            continue
        to, said = target(h), error(h)
        failed = not to
        if not failed and not (said or "").startswith(_MULTIPLE):
            continue
        ran = {view(t).tool_name for t in spans if kind(t) == "tool" and t.parent_id == model.parent_id and t.start >= model.start}
        names = [p.get("name") for m in view(model).outputs or [] for p in m.get("parts") or []
                 if isinstance(p, dict) and p.get("type") == "tool_call" and not p.get("server") and "not_run" not in p]
        left = list(dict.fromkeys(n for n in names if isinstance(n, str) and n and n not in ran))  # the reply's handoff calls
        missed = Missed(model, agent=owners.get(h.span_id))
        taken = (left[0] if failed or handoff_tool_name(to) not in left else handoff_tool_name(to)) if left else None  # type: ignore[arg-type]
        for name in left:
            if name != taken:
                missed.unrun[name] = (f"not run: the reply asked for several handoffs and the SDK runs only the first ({taken}); "
                                      f"it answered this one \"{IGNORED}\"")
        if failed:
            run = view(missed.agent).error if missed.agent is not None else None
            why = said or run
            if taken is not None:
                missed.unrun[taken] = (f"{why} (the handoff did not complete: the SDK recorded no agent it handed off to)" if why else
                                       "the handoff did not complete: the SDK recorded no agent it handed off to, and no error")
            if said and not run and missed.agent is not None and not _went_on(h, missed.agent, spans, kind, index):
                missed.run_error = said  # (also when the request's output, and so the call, is not recorded)
        if missed.unrun or missed.run_error:
            out.append(missed)
    return out


def _went_on(handoff: Span, agent: Span, spans: list[Span], kind: Callable[[Span], str | None], index: dict[str, Any]) -> bool:
    """Whether a model request started after `handoff` within `agent`'s parent (the run's task span or workflow; the whole
    trace for an agent without one): the run went on after it."""
    scope = index.get(agent.parent_id or "")
    for m in spans:
        if kind(m) != "model" or m.start < handoff.start:
            continue
        node, hops = m, 0
        while scope is not None and node is not scope and node.parent_id in index and hops < 10_000:
            node, hops = index[node.parent_id], hops + 1
        if scope is None or node is scope:
            return True
    return False
