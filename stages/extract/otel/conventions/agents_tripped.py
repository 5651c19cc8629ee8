"""OpenAI Agents SDK runs an input guardrail stopped while the model's calls ran: for both of its readers (format
`openai-agents`, OpenInference).

An input guardrail runs beside the agent's first turn by default (`run_in_parallel=True`): the model request and the
tools it asks for go on while the guardrail decides. When the tripwire fires the SDK cancels that turn and raises
`InputGuardrailTripwireTriggered`; the `turn` span holds the error (`Guardrail tripwire triggered`), which
`openai_agents.run_errors` makes the run's. A call of the turn's request whose tool had not started has no tool span;
one the cancel stopped mid-way has a tool span that ends with no output and no error (the SDK records none). Read as
they were, the first was a call with no result and the second one that returned nothing: neither ran to the end,
and the application never got a result. `tripped_calls` names them so, for the readers to mark (the same marks as
`agents_cancel.unrun_calls` gives a cancelled run's calls). Only what the trace shows counts: a request whose output
is not recorded (the export's Responses API `response` span) names no calls, so only the unfinished tool spans are
found there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import View, present

__all__ = ["Tripped", "tripped_calls"]

_TRIPWIRE = "Guardrail tripwire triggered"  # the SDK's error message on the turn span (export and OpenInference alike)
NOT_RUN = ("not run: an input guardrail tripped (InputGuardrailTripwireTriggered) before this call ran; the SDK cancelled "
           "the turn that asked for it (no tool span records it)")
UNFINISHED = ("did not finish: an input guardrail tripped (InputGuardrailTripwireTriggered) while this call ran; the SDK "
              "cancelled it (its tool span ended with no output and no error)")


@dataclass(slots=True)
class Tripped:
    """The calls of a tripped turn's last model request (`model`) that did not run (`unrun`: {tool name: why}) or did not
    finish (`unfinished`: their tool spans, each to get `UNFINISHED` as its error)."""

    model: Span
    unrun: dict[str, str]
    unfinished: list[Span]


def tripped_calls(spans: list[Span], kind: Callable[[Span], str | None], view: Callable[[Span], View]) -> list[Tripped]:
    """Every turn an input guardrail's tripwire ended with calls that did not run or finish (module docstring).

    `kind` / `view` as for `openai_agents.run_errors`. The turn's error must be the tripwire's (`Guardrail tripwire
    triggered…`); its last model request is the last one directly under it; the calls are that request's recorded
    tool-call parts, told apart by tool name as the SDK's function spans name no call id (of two calls of one tool
    neither is marked when one has a span). A tool span under the turn that started after the request with no output
    and no error did not finish. Calls of a turn that also started a handoff are left alone (a handoff span names its
    target agent, not its tool).
    """
    out: list[Tripped] = []
    for turn in spans:
        error = view(turn).error if kind(turn) == "turn" else None
        if not isinstance(error, str) or not error.startswith(_TRIPWIRE):
            continue
        models = [m for m in spans if kind(m) == "model" and m.parent_id == turn.span_id]
        if not models:
            continue  # tripped before the request answered: nothing was asked for
        last = max(models, key=lambda s: (s.start, s.span_id))
        after = [t for t in spans if t.parent_id == turn.span_id and t.start >= last.start and kind(t) in ("tool", "handoff")]
        tools = [t for t in after if kind(t) == "tool"]
        unfinished = [t for t in tools if not present(view(t).result) and view(t).error is None]
        unrun: dict[str, str] = {}
        if not any(kind(t) == "handoff" for t in after):
            ran = {view(t).tool_name for t in tools}
            asked = [p.get("name") for m in view(last).outputs or [] for p in m.get("parts") or []
                     if isinstance(p, dict) and p.get("type") == "tool_call" and "not_run" not in p and not p.get("server")]
            unrun = {n: NOT_RUN for n in asked if isinstance(n, str) and n and n not in ran}
        if unrun or unfinished:
            out.append(Tripped(last, unrun, unfinished))
    return out
