"""smolagents' managed agents under OpenInference: the agent run is the call of its manager that ran it.

A smolagents agent given `managed_agents=[researcher]` offers each managed agent to its model as a tool of the
agent's name; the model calls `researcher(task=…)` and smolagents runs the managed agent inside the manager's step.
openinference-instrumentation-smolagents (0.1.43) records no TOOL span for that call: the managed agent's run is an
`AGENT` span named `<name>.run` under the manager's step (`Step n` CHAIN), its model requests and tools under it.
Read as an agent run, its requests were steps of the manager's turn with nothing tying them to the call, the call had
no result, and the agent's answer could pass for the turn's.

So such a span — an agent run of the smolagents instrumentation inside another agent run (smolagents nests a run
only for a managed agent) — is read as that call's tool span: tool name the agent's name (`agent.name`, else the
span name without `.run`), result what the manager got — the tool message of a later request answering the model's one call of that
name (smolagents' report, "Here is the final answer from your managed agent '<name>':\n…", from its prompt
template); when the reply made other calls too, smolagents joined their observations into one text (the `Step n`
span's output, the next request's one tool message), and the report is what is left of it once the other calls'
results are taken off (`_observed`); else the agent's answer (its `output.value`: a `CodeAgent`'s code gets the
report as a value, which no span records) — error its error, `agent_name` kept so the steps
it made are labelled with it (`nesting`). Under a `ToolCallingAgent` manager the call pairs with the model's part
as any tool span does (arguments, the `task`, and id from the part); under a `CodeAgent`, whose model wrote code
calling `researcher(task=…)` rather than a tool call, it is a call of the request before it, its arguments the
`task` text smolagents gave the managed agent (its prompt template around the manager's task) as recorded.
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.otel.conventions.scopeless import from_instrumentation, smolagents_span
from tracejudge.stages.extract.otel.conventions.smolagents_plans import plans
from tracejudge.stages.extract.otel.conventions.smolagents_steps import answers, given_answers, max_steps, step_errors, stored_results, tool_answers
from tracejudge.stages.extract.otel.conventions.smolagents_raised import raised_runs
from tracejudge.stages.extract.otel.conventions.smolagents_refused import refused_answers
from tracejudge.stages.extract.otel.conventions.smolagents_streams import streamed_runs
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import MISSING, View, present, unjson

__all__ = ["managed_agent_calls"]

_SCOPE = "openinference.instrumentation.smolagents"


def managed_agent_calls(spans: list[Span], views: dict[str, View]) -> None:
    """Turn the managed agents' runs among `spans` into the calls that ran them, in `views` (module docstring).

    This is the group pass for smolagents' spans: it first reads each planning request's text as its thought
    (`smolagents_plans.plans`: a plan is never an output), then what a run iterated as a stream answered and raised
    (`smolagents_streams.streamed_runs`) and a run that raised, whose agent span was never exported
    (`smolagents_raised.raised_runs`), then each run's answer (`smolagents_steps.answers`:
    a managed agent's answer is its call's result) and the answer a `final_answer` call was given as text
    (`smolagents_steps.given_answers`), and last the failed steps' errors, once the calls of each
    step are known (`smolagents_steps.step_errors`: a failed managed agent's call holds its step's failure).
    Before the managed calls it also marks the request a run made when its steps ran out (`smolagents_steps.max_steps`)
    and gives a tool that returned an image or audio the result its model saw (`smolagents_steps.stored_results`).
    """
    plans(spans, views)
    streamed_runs(spans, views)  # (a run iterated as a stream recorded every event as its output)
    raised_runs(spans, views)  # (a run that raised: its agent span never ended, a stand-in in its place)
    answers(spans, views)
    given_answers(spans, views)  # (a `final_answer` given a value that is no text: its JSON is the step's answer)
    tool_answers(spans, views)  # (a `ToolCallingAgent`'s own `final_answer` call: the same, `""` and `None` as the run returned them)
    max_steps(spans, views)
    stored_results(spans, views)
    _managed_calls(spans, views)
    step_errors(spans, views)
    refused_answers(spans, views)  # (an answer a final-answer check refused: its step failed, as its memory says)


def _managed_calls(spans: list[Span], views: dict[str, View]) -> None:
    index = {s.span_id: s for s in spans}
    models = [v for v in views.values() if v.role == "model"]
    for span in spans:
        v = views.get(span.span_id)
        if v is None or v.role != "agent" or not from_instrumentation(span, _SCOPE, smolagents_span) or not _inside_agent(span, index, views):
            continue
        agent = span.attrs.get("agent.name")
        name = agent if isinstance(agent, str) and agent else span.name[:-4] if span.name.endswith(".run") else span.name
        given = unjson(span.attrs.get("input.value"))
        task = given.get("task") if isinstance(given, dict) else None
        result = _reported(name, models, MISSING)
        if result is MISSING:
            result = _observed(span, name, spans, index, views)
        views[span.span_id] = View(role="tool", tool_name=name, agent_name=name, error=v.error, conventions=v.conventions,
                                   args={"task": task} if isinstance(task, str) else MISSING,
                                   result=result if result is not MISSING else v.answer if present(v.answer) else MISSING)


def _reported(name: str, models: list[View], answer: Any) -> Any:
    """What the manager's model got for its one call of `name` (a later request's tool message, by call id), else `answer`."""
    ids = [p.get("id") for v in models for m in v.outputs or [] for p in m.get("parts") or [] if p.get("type") == "tool_call" and p.get("name") == name]
    if len(ids) == 1 and ids[0] is not None:
        got = [p.get("response") for v in models for m in v.inputs or [] for p in m.get("parts") or []
               if p.get("type") == "tool_call_response" and p.get("id") == ids[0] and present(p.get("response"))]
        if got:
            return got[0]
    return answer if present(answer) else MISSING


def _observed(run: Span, name: str, spans: list[Span], index: dict[str, Span], views: dict[str, View]) -> Any:
    """What a `ToolCallingAgent` manager's step observed of its call of `name` beside its other calls, else `MISSING`.

    smolagents joins the observations of one reply's calls into one text, `"\\n".join(str(result).strip())` in the
    order of their call ids, which the `Step n` span (the managed run's parent) records as its output and the next
    request replays as one tool message. Every other call of the step's request is a tool span under that step
    whose result is text (one per call, told apart by name, else by its arguments); with their texts around it
    taken off, what is left is the managed call's: the report smolagents returned. Anything else (a call without
    its span, a result that is no text, a text that does not join up) is `MISSING`."""
    step = index.get(run.parent_id or "")
    observed = unjson(step.attrs.get("output.value")) if step is not None else None
    under = [s for s in spans if step is not None and s.parent_id == step.span_id and s.span_id in views]
    asked = [p for s in under if views[s.span_id].role == "model" for m in views[s.span_id].outputs or []
             for p in m.get("parts") or [] if p.get("type") == "tool_call" and isinstance(p.get("id"), str)]
    mine = [p for p in asked if p.get("name") == name]
    if not isinstance(observed, str) or len(asked) < 2 or len(mine) != 1 or len({p["id"] for p in asked}) != len(asked):
        return MISSING
    tools = [views[s.span_id] for s in under if views[s.span_id].role == "tool" and s.span_id != run.span_id]
    before: list[str] = []
    after: list[str] = []
    for part in sorted(asked, key=lambda p: p["id"]):
        if part is mine[0]:
            continue
        named = [t for t in tools if t.tool_name == part.get("name")]
        if len(named) > 1:
            named = [t for t in named if unjson(t.args) == unjson(part.get("arguments"))]
        if len(named) != 1 or not isinstance(named[0].result, str):
            return MISSING
        (after if part["id"] > mine[0]["id"] else before).append(named[0].result.strip())
    head = "".join(f"{text}\n" for text in before)
    tail = "".join(f"\n{text}" for text in after)
    if not (observed.startswith(head) and observed.endswith(tail)) or len(observed) < len(head) + len(tail):
        return MISSING
    return observed[len(head): len(observed) - len(tail)]


def _inside_agent(span: Span, index: dict[str, Span], views: dict[str, View]) -> bool:
    node, hops = span, 0
    while node.parent_id in index and hops < 10_000:  # (a hostile trace may nest deep; a loop of parents ends here too)
        node = index[node.parent_id]
        hops += 1
        if views[node.span_id].role == "agent":
            return True
    return False
