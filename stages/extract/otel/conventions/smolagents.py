"""smolagents' managed agents under OpenInference: the agent run is the call of its manager that ran it.

A smolagents agent given `managed_agents=[researcher]` offers each managed agent to its model as a tool of the
agent's name; the model calls `researcher(task=…)` and smolagents runs the managed agent inside the manager's step.
openinference-instrumentation-smolagents (0.1.43) records no TOOL span for that call: the managed agent's run is an
`AGENT` span named `<name>.run` under the manager's step (`Step n` CHAIN), its model requests and tools under it.
Read as an agent run, its requests were steps of the manager's turn with nothing tying them to the call, the call had
no result, and the agent's answer could pass for the turn's.

So such a span — an agent run of the smolagents instrumentation inside another agent run (smolagents nests a run
only for a managed agent) — is read as that call's tool span: tool name the agent's name (`agent.name`, else the
span name without `.run`), result what the manager got — the tool message of a later request answering the id of
the model's call that ran it (`_part`: the step's call of that name, of several the one whose `task` the run's task
holds), which is smolagents' report, "Here is the final answer from your managed agent '<name>':\n…", from its prompt
template; when the reply made other calls too, smolagents joined their observations into one text (the `Step n`
span's output, the next request's one tool message), and the report is what is left of it once the other calls'
results are taken off, several reports (two managed agents, or one twice, in one reply) cut apart where that text
splits one way only (`_observed`); else the agent's answer (its `output.value`: a `CodeAgent`'s code gets the
report as a value, which no span records) — error its error, `agent_name` kept so the steps
it made are labelled with it (`nesting`). Under a `ToolCallingAgent` manager the call pairs with the model's part
as any tool span does (arguments, the `task`, and id from the part); under a `CodeAgent`, whose model wrote code
calling `researcher(task=…)` rather than a tool call, it is a call of the request before it, its arguments the
task that code passed as a literal (`smolagents_code_tasks`), else the `task` text smolagents gave the managed agent
(its prompt template around the manager's task) as recorded; its result stays the answer (the report is not recorded).
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.otel.conventions.scopeless import from_instrumentation, smolagents_span
from tracejudge.stages.extract.otel.conventions.smolagents_code_tasks import code_task
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
    runs = [s for s in spans if (v := views.get(s.span_id)) is not None and v.role == "agent"
            and from_instrumentation(s, _SCOPE, smolagents_span) and _inside_agent(s, index, views)]
    names = {r.span_id: _agent_name(r) for r in runs}
    tasks = {r.span_id: _run_task(r) for r in runs}
    parts = {r.span_id: _part(r, names[r.span_id], tasks[r.span_id], spans, views) for r in runs}
    for run in runs:  # (a `CodeAgent` manager's code called the agent: the task its code passed, when it can be told)
        if parts[run.span_id] is None and isinstance(tasks[run.span_id], str):
            tasks[run.span_id] = code_task(tasks[run.span_id], names[run.span_id], _replies(run, spans, views)) or tasks[run.span_id]
    # (every run's observed text before any view changes: a run read first must not pass for another's tool)
    observed = _observed(runs, parts, spans, index, views)
    for span in runs:
        v, name, task = views[span.span_id], names[span.span_id], tasks[span.span_id]
        result = _reported(parts[span.span_id], models)
        if result is MISSING and v.error is None:
            result = observed.get(span.span_id, MISSING)
        views[span.span_id] = View(role="tool", tool_name=name, agent_name=name, error=v.error, conventions=v.conventions,
                                   args={"task": task} if isinstance(task, str) else MISSING,
                                   result=result if result is not MISSING else v.answer if present(v.answer) else MISSING)


def _agent_name(run: Span) -> str:
    agent = run.attrs.get("agent.name")
    return agent if isinstance(agent, str) and agent else run.name[:-4] if run.name.endswith(".run") else run.name


def _run_task(run: Span) -> Any:
    given = unjson(run.attrs.get("input.value"))
    return given.get("task") if isinstance(given, dict) else None


def _asked(step: Span | None, spans: list[Span], views: dict[str, View]) -> list[dict[str, Any]]:
    """The calls (`tool_call` parts with an id) the model requests directly under `step` asked for."""
    return [p for s in spans if step is not None and s.parent_id == step.span_id and s.span_id in views and views[s.span_id].role == "model"
            for m in views[s.span_id].outputs or [] for p in m.get("parts") or [] if p.get("type") == "tool_call" and isinstance(p.get("id"), str)]


def _replies(run: Span, spans: list[Span], views: dict[str, View]) -> list[str]:
    """The texts of the model's replies in the step that ran `run` (its parent's model requests)."""
    return [p["content"] for s in spans if s.parent_id == run.parent_id and s.span_id in views and views[s.span_id].role == "model"
            for m in views[s.span_id].outputs or [] for p in m.get("parts") or [] if p.get("type") == "text" and isinstance(p.get("content"), str)]


def _part(run: Span, name: str, task: Any, spans: list[Span], views: dict[str, View]) -> dict[str, Any] | None:
    """The call of a `ToolCallingAgent` manager's step that ran `run`: the step's one call of `name`; of several (the
    same agent called twice in one reply), the one whose `task` is inside the task smolagents gave the run (its
    template around it). None when no call, or more than one, fits (a `CodeAgent` manager's step asks for none)."""
    step = next((s for s in spans if s.span_id == run.parent_id), None)
    mine = [p for p in _asked(step, spans, views) if p.get("name") == name]
    if len(mine) > 1:
        mine = [p for p in mine if isinstance(task, str) and isinstance(given := unjson(p.get("arguments")), dict)
                and isinstance(given.get("task"), str) and given["task"] in task]
    return mine[0] if len(mine) == 1 else None


def _reported(part: dict[str, Any] | None, models: list[View]) -> Any:
    """What the manager's model got for the call `part` (a later request's tool message answering its id, when no
    other call of the run has that id), else `MISSING`."""
    ids = [p.get("id") for v in models for m in v.outputs or [] for p in m.get("parts") or [] if p.get("type") == "tool_call"]
    if part is None or ids.count(part["id"]) != 1:
        return MISSING
    got = [p.get("response") for v in models for m in v.inputs or [] for p in m.get("parts") or []
           if p.get("type") == "tool_call_response" and p.get("id") == part["id"] and present(p.get("response"))]
    return got[0] if got else MISSING


def _observed(runs: list[Span], parts: dict[str, dict[str, Any] | None], spans: list[Span], index: dict[str, Span],
              views: dict[str, View]) -> dict[str, str]:
    """What a `ToolCallingAgent` manager's step observed of each managed call it made, by run span id (those it cannot
    tell are left out).

    smolagents joins the observations of one reply's calls into one text, `"\\n".join(str(result).strip())` in the
    order of their call ids, which the `Step n` span (the managed runs' parent) records as its output and the next
    request replays as one tool message. Every other call of the step's request is a tool span under that step
    whose result is text (one per call, told apart by name, else by its arguments); with their texts taken off, what
    is left is the managed calls' reports. One report is what is left; of several (two managed agents, or one twice,
    in one reply) each must end with its run's answer, as smolagents' report does ("…managed agent '<name>':\\n<answer>"),
    and only a text that splits one way so is read. Anything else (a call without its span, a result that is no text,
    a text that does not join up, or splits several ways) is left out."""
    steps: dict[str, list[Span]] = {}
    for run in runs:
        if parts[run.span_id] is not None and run.parent_id in index:
            steps.setdefault(run.parent_id, []).append(run)
    found: dict[str, str] = {}
    for step_id, mine in steps.items():
        found.update(_split(index[step_id], mine, parts, spans, views))
    return found


def _split(step: Span, runs: list[Span], parts: dict[str, dict[str, Any] | None], spans: list[Span], views: dict[str, View]) -> dict[str, str]:
    """`_observed` for one step and the managed `runs` under it."""
    observed = unjson(step.attrs.get("output.value"))
    asked = _asked(step, spans, views)
    by_part = {id(parts[r.span_id]): r for r in runs}
    if not isinstance(observed, str) or len({p["id"] for p in asked}) != len(asked) or len(by_part) != len(runs):
        return {}
    ran = {r.span_id for r in runs}
    tools = [views[s.span_id] for s in spans if s.parent_id == step.span_id and s.span_id not in ran and s.span_id in views
             and views[s.span_id].role == "tool"]
    pieces: list[str | Span] = []  # (in call id order: a known result's text, or the managed run whose report it is)
    for part in sorted(asked, key=lambda p: p["id"]):
        if id(part) in by_part:
            pieces.append(by_part[id(part)])
            continue
        named = [t for t in tools if t.tool_name == part.get("name")]
        if len(named) > 1:
            named = [t for t in named if unjson(t.args) == unjson(part.get("arguments"))]
        if len(named) != 1 or not isinstance(named[0].result, str):
            return {}
        pieces.append(named[0].result.strip())
    if sum(isinstance(p, Span) for p in pieces) != len(runs):
        return {}
    ends = [_answer_end(views[r.span_id]) for r in runs] if len(runs) > 1 else [None]
    if None in ends and len(runs) > 1:
        return {}
    return _cut(observed, pieces, {r.span_id: e for r, e in zip(runs, ends)})


def _answer_end(v: View) -> str | None:
    """The text a managed run's report ends with, its answer stripped (None when it has none to end with)."""
    return v.answer.strip() if isinstance(v.answer, str) and v.answer.strip() else None


def _cut(observed: str, pieces: list[str | Span], ends: dict[str, str | None]) -> dict[str, str]:
    """The managed runs' texts in `observed`, `pieces` joined by newlines: each known text where it stands, the last
    report what is left before the known texts after it, every earlier report ending with its `ends` text at a
    newline. Only a single way to cut it is read (`{}` otherwise). Each report's possible ends are where its answer
    is followed by a newline (bounded: a text of many such places is not cut)."""
    last = max(i for i, p in enumerate(pieces) if isinstance(p, Span))
    tail = "".join(f"\n{p}" for p in pieces[last + 1:])
    ways: list[dict[str, str]] = []

    def walk(i: int, pos: int, taken: dict[str, str]) -> None:
        if len(ways) > 1:
            return
        if i == len(pieces):
            if pos == len(observed):
                ways.append(dict(taken))
            return
        if i:
            if not observed.startswith("\n", pos):
                return
            pos += 1
        piece = pieces[i]
        if isinstance(piece, str):
            if observed.startswith(piece, pos):
                walk(i + 1, pos + len(piece), taken)
            return
        end_text = ends[piece.span_id]
        if i == last:
            stops = [len(observed) - len(tail)] if observed.endswith(tail) else []
        else:
            stops = _stops(observed, pos, end_text or "")
        for stop in stops:
            text = observed[pos:stop]
            if stop >= pos and (end_text is None or text.endswith(end_text)):
                walk(i + 1, stop, taken | {piece.span_id: text})

    walk(0, 0, {})
    return ways[0] if len(ways) == 1 else {}


_MAX_STOPS = 1000


def _stops(observed: str, pos: int, end_text: str) -> list[int]:
    """Where in `observed`, from `pos`, `end_text` ends right before a newline (none when there are too many)."""
    stops, at = [], observed.find(end_text + "\n", pos) if end_text else -1
    while at != -1 and len(stops) <= _MAX_STOPS:
        stops.append(at + len(end_text))
        at = observed.find(end_text + "\n", at + 1)
    return stops if len(stops) <= _MAX_STOPS else []


def _inside_agent(span: Span, index: dict[str, Span], views: dict[str, View]) -> bool:
    node, hops = span, 0
    while node.parent_id in index and hops < 10_000:  # (a hostile trace may nest deep; a loop of parents ends here too)
        node = index[node.parent_id]
        hops += 1
        if views[node.span_id].role == "agent":
            return True
    return False
