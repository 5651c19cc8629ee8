"""Responses API requests that go on from a response the server kept: the history the model really got.

A Responses API loop chained with `previous_response_id` (OpenAI's server-side conversation state)
sends only what is new: the `function_call_output` items answering the previous response's calls, or
the user's next message. The server puts the previous response's input and output before them; the
span records only the new items. `carry_history` gives such a request the history it was answered
with, so that the conversation reads as if the application had sent it whole (the request after a
tool round goes on with the same user turn; a new user message is the next turn; results pair with
the calls they answer), and `stitch` joins its trace to the one holding the previous response.

OpenInference records `previous_response_id` (`llm.invocation_parameters`, `input.value`) and the
response id (`output.value`); OpenLLMetry (opentelemetry-instrumentation-openai 0.62) records neither,
and gives each `function_call` the item id (`fc_…`), not the `call_id` its output answers. A request of
its recording whose input is tool results alone (`tool_results_only`) can only go on from an earlier
response that asked for calls; `stitch` joins it when exactly one such response fits. A user message
sent with `previous_response_id` is, in its recording, a new conversation: nothing tells it apart.
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import View

__all__ = ["asked_calls", "carry_history", "tool_results_only", "with_history"]


def _leading_system(messages: list[dict[str, Any]]) -> int:
    n = 0
    while n < len(messages) and messages[n].get("role") == "system":
        n += 1
    return n


def with_history(view: View, previous: View) -> None:
    """Put `previous`'s input and output before `view`'s recorded input (in place), as the server did.

    `instructions` (a leading system message) are not carried over from a previous response (the API
    says so): the request's own come first, then the previous history without its own.
    """
    own = list(view.inputs or [])
    before = [*(previous.inputs or []), *(previous.outputs or [])]
    before = before[_leading_system(before):]
    k = _leading_system(own)
    if before and own[k:k + len(before)] == before:
        return  # a recording that holds the whole history already: it is not put there twice
    view.inputs = [*own[:k], *before, *own[k:]]


def carry_history(requests: list[tuple[Span, View]]) -> None:
    """Give every request of `requests` (all model requests read, any order) that names a `previous_response_id`
    of another the history the server prepended (`with_history`); a chain of them is carried in start order."""
    by_id: dict[str, View] = {}
    done: set[int] = set()
    for span, view in sorted(requests, key=lambda r: (r[0].start, r[0].span_id)):
        previous = by_id.get(view.previous_response_id or "")
        if previous is not None and previous is not view and id(view) not in done:
            with_history(view, previous)
            done.add(id(view))
        if view.response_id:
            by_id.setdefault(view.response_id, view)


def tool_results_only(view: View) -> list[str | None] | None:
    """The call ids a request answers when its input (after its instructions) is tool results and nothing else;
    `None` otherwise. Such a request replays nothing: it goes on from a response kept by the server."""
    inputs = view.inputs or []
    rest = inputs[_leading_system(inputs):]
    if not rest or view.previous_response_id is not None:
        return None
    ids: list[str | None] = []
    for message in rest:
        parts = message.get("parts") or []
        if message.get("role") != "tool" or not parts or any(p.get("type") != "tool_call_response" for p in parts):
            return None
        ids += [None if p.get("id") is None else str(p["id"]) for p in parts]
    return ids


def asked_calls(view: View) -> list[str | None]:
    """The call ids (`None` for one without) of the tool calls a request's output asked for."""
    return [None if p.get("id") is None else str(p["id"]) for m in view.outputs or [] for p in m.get("parts") or [] if p.get("type") == "tool_call"]
