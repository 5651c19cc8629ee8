"""One (case, trial) conversation with the target: `input`, then each of `turns`, in order.

Semantics follow cogitator's multi-turn cases: the target is called once per
turn with the earlier `{input, output}` turns as `history`; the case's trace
is every turn's steps in order, with tool calls, retrieved passages and usage
summed over turns and the last answer as its output, and — for a case with
`turns` — each turn's input as a user message before that turn's steps; each turn's input,
output and tool calls are kept; a turn that fails ends the conversation, the
failed turn last in the record with its error.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from tracejudge.core.errors import text_of
from tracejudge.core.records import Case, SystemPrompt, Trace, Usage, UserMessage
from tracejudge.stages.target.protocol import HistoryItem, TargetReply, TargetRequest, agent_view

__all__ = ["Conversation", "converse", "merge_traces"]

Call = Callable[[TargetRequest], Awaitable[TargetReply]]
Normalize = Callable[[TargetReply], tuple[str | None, Trace]]


@dataclass
class Conversation:
    """What one attempt at a conversation has produced so far.

    `turns` holds one record per turn started: `{"input", "output",
    "tool_calls"}` plus `"error"` on a failed turn. `current` is the index of
    the turn in progress (or the last one), `traces` the normalized trace of
    each finished turn.
    """

    conversation_id: str
    inputs: list[Any]
    turns: list[dict[str, Any]] = field(default_factory=list)
    traces: list[Trace] = field(default_factory=list)
    current: int = 0

    def fail(self, message: str) -> None:
        """Record the turn in progress as failed with `message` (once)."""
        if len(self.turns) == self.current:
            self.turns.append({"input": self.inputs[self.current], "output": None, "tool_calls": [], "error": message})


def _usage_sum(usages: list[Usage | None]) -> Usage | None:
    present = [u for u in usages if u is not None]
    if not present:
        return None
    total: dict[str, Any] = {}
    for name in Usage.model_fields:
        values = [getattr(u, name) for u in present if getattr(u, name) is not None]
        total[name] = sum(values) if values else None
    return Usage(**total)


def merge_traces(traces: list[Trace], inputs: list[Any] | None = None) -> Trace:
    """One trace for a whole conversation: steps and passages in turn order, usage summed, last output, the distinct
    system prompts in the order they first appeared.

    Usage fields are summed over the turns that report them (`None` when no
    turn does); `latency_s` is thus the conversation's total. `inputs` (a
    multi-turn case: what the target was given, turn by turn) become the
    trace's `user_messages`, each before the steps of its turn; an input past
    the finished turns (the turn that failed) is placed after the last step.
    Without `inputs` a single trace is returned as is.
    """
    if len(traces) == 1 and not inputs:
        return traces[0]
    steps = [s for t in traces for s in t.steps]
    users: list[UserMessage] = []
    at = 0
    for i, text in enumerate(inputs or []):
        users.append(UserMessage(step=min(at, len(steps)), content=text))
        at += len(traces[i].steps) if i < len(traces) else 0
    return Trace(
        steps=steps,
        user_messages=users,
        output=traces[-1].output if traces else None,
        usage=_usage_sum([t.usage for t in traces]),
        retrieved=[p for t in traces for p in t.retrieved],
        # (an agent re-sends its instructions every turn: each distinct one once, where it first appeared)
        system_prompts=[SystemPrompt(text=x, agent=a) for a, x in dict.fromkeys((p.agent, p.text) for t in traces for p in t.system_prompts)],
    )


async def converse(call: Call, normalize: Normalize, case: Case, trial: int, state: Conversation) -> Trace:
    """Run every turn of `case` on `state`'s conversation and return the merged trace.

    A turn whose trace has no `latency_s` gets the measured wall time of its
    call, in seconds. Exceptions from `call` or `normalize` propagate after
    the failed turn is recorded on `state`.
    """
    view = agent_view(case)
    history: list[HistoryItem] = []
    for i, text in enumerate(state.inputs):
        state.current = i
        request = TargetRequest(
            case_id=case.id, trial=trial, turn=i, conversation_id=state.conversation_id, input=text, history=list(history), case=view
        )
        t0 = time.perf_counter()
        try:
            output, trace = normalize(await call(request))
        except Exception as exc:
            state.fail(text_of(exc))
            raise
        elapsed = round(time.perf_counter() - t0, 6)
        if trace.usage is None:
            trace = trace.model_copy(update={"usage": Usage(latency_s=elapsed)})
        elif trace.usage.latency_s is None:
            trace = trace.model_copy(update={"usage": trace.usage.model_copy(update={"latency_s": elapsed})})
        state.traces.append(trace)
        state.turns.append(
            {"input": text, "output": output, "tool_calls": [c.model_dump(mode="json", exclude_defaults=True) for c in trace.tool_calls()]}
        )
        history.append(HistoryItem(input=text, output=output))
    state.current = len(state.inputs) - 1
    return merge_traces(state.traces, state.inputs if case.turns else None)
