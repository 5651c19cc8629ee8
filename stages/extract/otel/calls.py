"""Tool calls out of tool spans and the model's own tool-call parts.

The same call is often recorded twice: as a `tool_call` part of the model
output that asked for it and as the span of the tool's execution. The
model's part is the truth for name, id and arguments (the tool span may hold
a framework's wrapper payload); the tool span is the truth for the result
and the error. Parts pair with tool spans by call id, else by name in order.
A result no tool span recorded comes from the tool message that answered the
call (`call_results.Responses`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from tracejudge.stages.extract.common import mcp_error
from tracejudge.stages.extract.otel.call_results import Responses
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import MISSING, View, present, unjson

__all__ = ["Responses", "Tool", "answer_value", "build_call", "by_call_id", "deferred_call", "part_call"]


class Tool:
    """One tool call being assembled from a tool span (and what nested spans of the same call add)."""

    __slots__ = ("span", "name", "call_id", "span_order", "args", "args_wrapped", "result", "error", "claimed", "deferral", "deferral_metadata", "call")

    def __init__(self, span: Span, view: View) -> None:
        self.span = span
        self.name = str(view.tool_name)
        self.call_id = view.call_id
        self.span_order = view.span_order
        self.args = view.args
        self.args_wrapped = view.args_wrapped
        self.result = view.result
        self.deferral = view.deferral
        self.deferral_metadata = view.deferral_metadata
        # A deferral is control flow, not a failure (pydantic-ai marks it ERROR before instrumentation version 5).
        self.error = None if self.deferral else view.error
        self.claimed = False
        self.call: dict[str, Any] | None = None  # the native call built from it (the steps of an agent run inside it nest under it)

    def absorb(self, inner: Tool) -> None:
        """Take what a nested span of the same call recorded and this one did not."""
        if self.args is MISSING and inner.args is not MISSING:
            self.args, self.args_wrapped = inner.args, inner.args_wrapped
        if self.result is MISSING:
            self.result = inner.result
        if self.call_id is None:
            self.call_id = inner.call_id
        if self.error is None:
            self.error = inner.error


def by_call_id(tools: list[Tool]) -> Callable[[str], Tool | None]:
    """A look-up of the first of `tools` (in their order) of a call id that is not claimed yet, else None.

    Built once the call ids are final; a tool once claimed stays claimed, so each id's queue only loses its front:
    scanning every tool for each part is quadratic in a wide fan-out."""
    queues: dict[str, deque[Tool]] = {}
    for t in tools:
        if t.call_id is not None:
            queues.setdefault(t.call_id, deque()).append(t)

    def first(pid: str) -> Tool | None:
        queue = queues.get(pid)
        while queue and queue[0].claimed:
            queue.popleft()
        return queue[0] if queue else None
    return first


def _part_args(part: dict[str, Any] | None) -> Any:
    if part is None or part.get("arguments") is None:
        return MISSING
    return part["arguments"]


def _empty(value: Any) -> bool:
    return value is MISSING or value is None or value in ({}, [], "")


def _finish(call: dict[str, Any], result: Any, error: str | None, response: dict[str, Any] | None, prefixes: tuple[str, ...],
            responses: Responses) -> dict[str, Any]:
    """`call` with its result and error: the tool span's, else those of the tool message `response` (told to `responses`)."""
    used = False
    if result is MISSING or result is None or (_empty(result) and response is not None and not _empty(response.get("response"))):
        # ADK with its own content keys off records `{}` as every tool's response on the span
        result = response.get("response") if response is not None else None
        used = response is not None
        if not present(result):
            result = None
    if error is None and response is not None and response.get("is_error") is True:
        error = str(response.get("response"))
        used = True
    if error is None and response is not None and response.get("server") and isinstance(response.get("error"), str):
        error = response["error"]  # a server tool's failure, as its result block said it (`server_blocks`)
    if error is None:
        error = mcp_error(result)  # an MCP CallToolResult with isError as the tool's output
    if error is None and prefixes and isinstance(result, str) and result.startswith(prefixes):
        error = result  # the loop reported the failure as the tool's text ("Error: …")
    call["result"] = result
    call["error"] = error
    if used:
        responses.used(response, call)  # a result paired by order alone is said, when another call could have had it
    return call


def build_call(t: Tool, part: dict[str, Any] | None, responses: Responses, prefixes: tuple[str, ...], asked_at: int | None = None) -> dict[str, Any]:
    """The native call of tool span `t`, paired with the model's `part` (asked for by request number `asked_at`) when there is one."""
    pid = None if part is None or part.get("id") is None else str(part["id"])
    # named as the model asked: a span may carry another name (an application's own, `tool-call`; a class, smolagents'
    # `SimpleTool` under MLflow) once it is paired with the part (by id, or by arguments: `assemble`)
    call: dict[str, Any] = {"id": t.call_id or pid, "name": part["name"] if part is not None else t.name}
    args = _part_args(part)
    # The model's own part with empty text: a provider's call without arguments (OpenAI's `""` for a strict tool taking
    # none). The tool span's arguments still come first when it recorded some (a streamed part may keep only the `""` of
    # its first chunk).
    no_args = isinstance(args, str) and not args.strip()
    if args is MISSING or (t.args is not MISSING and not t.args_wrapped and not isinstance(unjson(args), dict)):
        args = t.args
    if args is MISSING:
        call["arguments_missing"] = True
    elif isinstance(args, str) and not args.strip():
        # Empty text from the tool span (`gen_ai.tool.call.arguments`, pydantic-ai's `tool_arguments`), which is JSON by
        # definition: not JSON, as pydantic-evals' ArgumentCorrectness finds it, unless the model's part said no arguments.
        call["arguments"] = {} if no_args else args
        call["arguments_invalid"] = not no_args
    else:
        call["arguments"] = args
    # A failed span whose ids name another call keeps its error rather than a loose text the model saw next (ADK
    # numbers its parts apart from the calls). One with no id at all pairs by order and name, as a span that did
    # not fail: openinference-langchain before 0.1.50 gave the model's calls no id and a failed span no output,
    # the only place a call id was written, so its ToolMessage (and id) can be found no other way.
    loose = part is not None and (t.error is None or call["id"] is None)
    response = responses.find((t.call_id, pid), asked_at if part is not None else None, t.name, loose)
    if call["id"] is None and response is not None and response.get("id") is not None:
        call["id"] = str(response["id"])  # the id the tool message answered, which the call itself did not keep
    return _finish(call, t.result, t.error, response, prefixes, responses)


def part_call(part: dict[str, Any], responses: Responses, prefixes: tuple[str, ...], asked_at: int | None = None,
              answer: dict[str, Any] | None = None) -> dict[str, Any]:
    """The native call of a model's `tool_call` part (asked for by request number `asked_at`) that no tool span recorded (a handoff, a plain loop).

    `answer`: the result part the same output holds for it (an Anthropic server tool: `server_tools.same_response`),
    taken instead of a response of a later request.

    A part a convention marked `not_run` (the Agents SDK's "Tool not found": the agent has no such tool) is a call
    the model made that never ran: it stays a call, so call-counting metrics see what the model did, and fails
    with that reason as its error, so the judge and the failure metrics see that it did not run (a result the
    framework sent the model instead, `return_error_to_model`, is still its result; one a convention found where no
    request's input shows it is the part's `framework_result`).
    """
    pid = None if part.get("id") is None else str(part["id"])
    call: dict[str, Any] = {"id": pid, "name": part["name"]}
    args = _part_args(part)
    if args is MISSING:
        call["arguments_missing"] = True
    else:
        call["arguments"] = args
    not_run = part.get("not_run")
    response = answer if answer is not None else responses.find((pid,), asked_at, part["name"])
    if "framework_result" in part:  # what the framework recorded in the call's place, found by a convention (`pydantic_ai_deferred`)
        response = {"response": part["framework_result"]}
    return _finish(call, MISSING, not_run if isinstance(not_run, str) else None, response, prefixes, responses)


def deferred_call(call: dict[str, Any], why: str, metadata: Any = MISSING) -> dict[str, Any]:
    """A call the model asked for that did not run: kept for `metadata.otel.deferred`, not counted as a tool call
    (`metadata`: what its deferral carried, when recorded)."""
    out = {"id": call["id"], "name": call["name"], "deferral": why}
    if call.get("arguments_missing"):
        out["arguments_missing"] = True
    else:
        out["arguments"] = unjson(call.get("arguments"))
    if metadata is not MISSING:
        out["metadata"] = metadata
    return out


def answer_value(args: Any) -> str | None:
    """The answer text an answer tool (smolagents' `final_answer`) was called with."""
    args = unjson(args)
    if isinstance(args, dict):
        for key in ("answer", "final_answer", "output", "result"):
            if key in args and args[key] is not None:
                return args[key] if isinstance(args[key], str) else str(args[key])
        if len(args) == 1:
            (only,) = args.values()
            return only if isinstance(only, str) else str(only)
        return None
    return args if isinstance(args, str) and args else None
