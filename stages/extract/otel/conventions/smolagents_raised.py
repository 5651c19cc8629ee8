"""smolagents runs whose agent span was never exported under OpenInference: a run that raised.

openinference-instrumentation-smolagents (0.1.43) ends the agent span of a run called as `agent.run(task)` only when
`run` returns: when it raises (smolagents re-raises a model request's failure as `AgentGenerationError`, and anything
that is no `AgentError`), the wrapper records the exception on the span and re-raises without ending it, so the span is
never exported. Its steps (`Step n` CHAIN spans) and planning requests were, and name it as their parent: the trace lost
its root, and `links.stand_in_parents` hangs them from a stand-in with no attributes. Read so, the run's user text was
its first request's task message as smolagents words it (`New task:\\n<task>`), and the run had no error.

`raised_runs` reads such a stand-in (one whose children are smolagents spans) as the agent run: it asked the task of
the latest `New task:` message of its first model request that has one (smolagents' framing cut off; a planning
request words the task in its own template), and when its last child is a failed step, or a failed planning request
(smolagents lets its exception through as it is), with no model request after it, the run ended there: that span's
exception is the run's error (`"<exception.type>: <exception.message>"`, as a failed agent span reads), and it has no
answer (`turns` gives a turn that ended in an error no answer tool's text either: an earlier run's `final_answer`
is not this one's). A run whose step failed and that went on has a later step or request, so a caught step error
(the model was told and tried again) is no run error. `unended_run` tells such a stand-in from the spans alone, so that
the trace's warning about its lost root (`otel.lost_roots`) says what happened: not a dropped batch, a run that raised.

A run that raised in its first step (its first model request failed: an API key refused, a rate limit) left one span
under its lost agent span, the failed `Step 1`, and a parent only one span names gets no stand-in: that step is the
trace's root, and its request's `New task:` message was read as the user's text. Such a step (a smolagents `CHAIN`
span whose parent is not in the trace, failed) is read as the run in the same way: its task, and its exception as the
run's error; its model request keeps its own error.

A planning run (`planning_interval`) whose first plan's request failed left only that request (an `LLM` span, failed)
under its lost agent span: it read as a lone request, its user text the whole planning prompt, no run error. Such a
request gets the stand-in `links.stand_in_parents` gives a parent several spans name (`_lone_plans`, added to the
group's spans), and reads as the runs above: its task is the one the planning prompt gives (smolagents' `initial_plan`
templates: "Here is your task:\n```\n<task>\n```"; with another wording the run has none and reads as before), its
exception the run's error.
"""

from __future__ import annotations

from dataclasses import replace

from tracejudge.stages.extract.otel.conventions.scopeless import from_instrumentation, smolagents_span
from tracejudge.stages.extract.otel.conventions.smolagents_plans import _planning
from tracejudge.stages.extract.otel.conventions.smolagents_streams import SCOPE, raised
from tracejudge.stages.extract.otel.messages import text_parts
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import View

__all__ = ["raised_runs", "unended_run"]

_NEW_TASK = "New task:\n"
_PLAN_TASK = "Here is your task:\n```\n"  # smolagents' `initial_plan` templates (1.12+): "…\n```\nFirst in part 1, …"
_FENCE = "\n```"
_KIND = "openinference.span.kind"


def raised_runs(spans: list[Span], views: dict[str, View]) -> None:
    """Read each stand-in for a smolagents run's lost agent span as that run (module docstring)."""
    _lone_plans(spans, views)
    index = {s.span_id: s for s in spans}
    for stand_in in spans:
        v = views.get(stand_in.span_id)
        if not stand_in.stand_in or v is None or v.role is not None:
            continue
        kids = _children(stand_in, spans)
        if not kids or not all(from_instrumentation(s, SCOPE, smolagents_span) for s in kids):
            continue
        below = [s for s in spans if _under(s, stand_in.span_id, index)]
        models = sorted((s for s in below if views[s.span_id].role == "model"), key=lambda s: (s.start, s.span_id))
        task = next((t for m in models if (t := _task(views[m.span_id])) is not None), None)  # (a planning request has none)
        task = task if task is not None else next((t for m in models if (t := _plan_task(m, views[m.span_id])) is not None), None)
        if task is None:
            continue
        v.role, v.request = "agent", task
        if unended_run(stand_in, spans, index):
            v.error = raised(kids[-1]) or views[kids[-1].span_id].error
    for step in spans:  # (a run that raised in its first step: that step is all that hangs from the lost agent span)
        v = views.get(step.span_id)
        if v is None or v.role != "chain" or step.parent_id is None or step.parent_id in index or step.stand_in \
                or not from_instrumentation(step, SCOPE, smolagents_span) or not _failed(step):
            continue
        models = sorted((s for s in spans if views[s.span_id].role == "model" and _under(s, step.span_id, index)), key=lambda s: (s.start, s.span_id))
        task = next((t for m in models if (t := _task(views[m.span_id])) is not None), None)
        if task is not None:
            v.role, v.request, v.error = "agent", task, raised(step) or v.error


def unended_run(stand_in: Span, spans: list[Span], index: dict[str, Span] | None = None) -> bool:
    """Whether `stand_in` (a trace's stand-in for a lost parent, `links.stand_in_parents`) stands for the agent span of a
    smolagents run that raised: its children are smolagents spans, the last a step (`CHAIN`) or planning request (`LLM`)
    that failed, with no model request under the stand-in after it (module docstring)."""
    kids = _children(stand_in, spans)
    if not kids or not all(from_instrumentation(s, SCOPE, smolagents_span) for s in kids):
        return False
    last = kids[-1]
    if last.attrs.get(_KIND) not in ("CHAIN", "LLM") or not _failed(last):
        return False
    index = index if index is not None else {s.span_id: s for s in spans}
    return not any(s.attrs.get(_KIND) == "LLM" and s.start >= last.end and _under(s, stand_in.span_id, index) for s in spans)


def _lone_plans(spans: list[Span], views: dict[str, View]) -> None:
    """Hang each failed smolagents planning request that is the only span under its lost parent from a stand-in of that
    parent, added to `spans` and `views` (module docstring: a run whose first plan's request failed)."""
    ids = {s.span_id for s in spans}
    named: dict[str, int] = {}
    for span in spans:
        if span.parent_id is not None and span.parent_id not in ids:
            named[span.parent_id] = named.get(span.parent_id, 0) + 1
    for at, span in reversed(list(enumerate(spans))):
        v = views.get(span.span_id)
        if span.parent_id is None or named.get(span.parent_id) != 1 or span.stand_in or v is None or v.role != "model" \
                or not from_instrumentation(span, SCOPE, smolagents_span) or not _planning(span.attrs.get("input.value")) or not _failed(span):
            continue
        made = f"{span.parent_id}@{span.trace_id}"  # (as `links.stand_in_parents` names a stand-in)
        if made in ids:
            continue
        spans.insert(at, replace(span, span_id=made, parent_id=None, name="", kind=0, attrs={}, status_error=False, status_message=None,
                                 events=[], problem=None, logs=[], copies_differ=False, scope=None, stand_in=True))
        views[made] = View()
        span.parent_id = made


def _plan_task(span: Span, request: View) -> str | None:
    """The task a planning request's prompt gives, as smolagents' initial-plan templates word it (`None` otherwise)."""
    if not _planning(span.attrs.get("input.value")):
        return None
    said = ["\n".join(text_parts(m)) for m in request.inputs or [] if m.get("role") == "user"]
    text = said[-1] if said else ""
    start = text.rfind(_PLAN_TASK)
    end = text.rfind(_FENCE, start + len(_PLAN_TASK)) if start != -1 else -1
    task = text[start + len(_PLAN_TASK):end] if end != -1 else None
    return task if task and task.strip() else None


def _failed(span: Span) -> bool:
    return span.status_error or raised(span) is not None


def _children(parent: Span, spans: list[Span]) -> list[Span]:
    return sorted((s for s in spans if s.parent_id == parent.span_id), key=lambda s: (s.start, s.span_id))


def _task(request: View) -> str | None:
    """The task of the latest `New task:` user message of a request's input, without smolagents' framing."""
    said = ["\n".join(text_parts(m)) for m in request.inputs or [] if m.get("role") == "user"]
    tasks = [t[len(_NEW_TASK):] for t in said if t.startswith(_NEW_TASK)]
    return tasks[-1] if tasks and tasks[-1].strip() else None


def _under(span: Span, ancestor: str, index: dict[str, Span]) -> bool:
    node, hops = span, 0
    while node.parent_id is not None and hops < 10_000:
        if node.parent_id == ancestor:
            return True
        if node.parent_id not in index:
            return False
        node, hops = index[node.parent_id], hops + 1
    return False
