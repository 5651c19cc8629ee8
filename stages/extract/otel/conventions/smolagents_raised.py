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
(the model was told and tried again) is no run error. The trace's warning about its lost root stays.
"""

from __future__ import annotations

from tracejudge.stages.extract.otel.conventions.smolagents_streams import SCOPE, raised
from tracejudge.stages.extract.otel.messages import text_parts
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import View

__all__ = ["raised_runs"]

_NEW_TASK = "New task:\n"


def raised_runs(spans: list[Span], views: dict[str, View]) -> None:
    """Read each stand-in for a smolagents run's lost agent span as that run (module docstring)."""
    index = {s.span_id: s for s in spans}
    for stand_in in spans:
        v = views.get(stand_in.span_id)
        if not stand_in.stand_in or v is None or v.role is not None:
            continue
        kids = sorted((s for s in spans if s.parent_id == stand_in.span_id), key=lambda s: (s.start, s.span_id))
        if not kids or not all((s.scope or "").startswith(SCOPE) for s in kids):
            continue
        below = [s for s in spans if _under(s, stand_in.span_id, index)]
        models = sorted((s for s in below if views[s.span_id].role == "model"), key=lambda s: (s.start, s.span_id))
        task = next((t for m in models if (t := _task(views[m.span_id])) is not None), None)  # (a planning request has none)
        if task is None:
            continue
        v.role, v.request = "agent", task
        last = kids[-1]
        lv = views[last.span_id]
        if lv.role in ("chain", "model") and (lv.error or last.status_error) and not any(m.start >= last.end for m in models):
            v.error = raised(last) or lv.error


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
