"""pydantic-ai's output tools when the attribute length limit cut `model_request_parameters` (`value_limit`).

A request's `model_request_parameters` (JSON, `output_tools` after every function tool's schema) is the one place
pydantic-ai names its output tools; it is long, so under `OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT` it is cut before them, and
the output tool's call (`final_result`) would read as a tool call that never returned. The run says which call gave
its answer all the same: the agent span's `final_result` is the value that call's arguments hold, and no tool span
ran it (an output tool is no function tool). That call's tool is then an output tool of every request of the run
whose parameters were cut, its arguments the answer (`View.answer_texts`; the value inside a one-key wrapper, pydantic-ai's
`{"response": …}` around an output that is no object), as the uncut reading gives them.
"""

from __future__ import annotations

import json
from typing import Any

from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.value_limit import cut_at
from tracejudge.stages.extract.otel.view import MISSING, View, present, unjson

__all__ = ["cut_output_tools"]

_PARAMS = "model_request_parameters"


def cut_output_tools(spans: list[Span], views: dict[str, View]) -> None:
    """Name the output tools of requests whose `model_request_parameters` was cut (module docstring); nothing else changes."""
    cut = [s for s in spans if views[s.span_id].role == "model" and not views[s.span_id].output_tools and cut_at(s.attrs.get(_PARAMS))]
    if not cut:
        return
    index = {s.span_id: s for s in spans}
    ran = {v.call_id for v in views.values() if v.role == "tool" and v.call_id}
    by_run: dict[str, set[str]] = {}
    for span in cut:
        run = _run(span, index)
        if run is None:
            continue
        final = unjson(run.attrs["final_result"])
        for part in _calls(views[span.span_id]):
            if str(part["id"]) not in ran and final in _answered(unjson(part.get("arguments"))):
                by_run.setdefault(run.span_id, set()).add(part["name"])
    for span in cut:
        run = _run(span, index)
        names = by_run.get(run.span_id, set()) if run is not None else set()
        view = views[span.span_id]
        view.output_tools |= names
        for part in _calls(view):
            if part["name"] in names and (value := _answered(unjson(part.get("arguments")))[-1]) not in (None, ""):
                text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
                view.answer_texts.setdefault(str(part["id"]), text)


def _answered(args: Any) -> list[Any]:
    """What a call's arguments may answer with: themselves, or the one value of a wrapper (`{"response": 21}`, the
    `outer_typed_dict_key` pydantic-ai wraps an output that is no object in), the likelier last."""
    return [args, *args.values()] if isinstance(args, dict) and len(args) == 1 else [args]


def _calls(view: View) -> list[dict[str, Any]]:
    return [p for m in view.outputs or [] for p in m.get("parts") or [] if p.get("type") == "tool_call" and p.get("id") is not None]


def _run(span: Span, index: dict[str, Span]) -> Span | None:
    """The agent run `span` was made in that recorded its answer (`invoke_agent` with a `final_result`), else `None`."""
    node, hops = index.get(span.parent_id or ""), 0
    while node is not None and hops < 10_000:  # (a loop of parents in a hostile trace ends here too)
        final = node.attrs.get("final_result")
        if node.attrs.get("gen_ai.operation.name") == "invoke_agent" and isinstance(final, str) and present(final):
            return node if cut_at(final) is None and unjson(final) is not MISSING else None
        node, hops = index.get(node.parent_id or ""), hops + 1
    return None
