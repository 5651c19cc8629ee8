"""pydantic-ai's own keys, beside the GenAI ones it writes.

What counts: `tool_arguments` / `tool_response` on tool spans (instrumentation
versions before the GenAI keys); its output functions (`running output
function`, or an `execute_tool final_result` span logged as one) and output
tools named in `model_request_parameters` are the run's answer, not tool
calls; deferred tools (`pydantic_ai.tool.deferral.name`, or a function tool
of kind `unapproved` / `external`) were asked for but not run, a raised
deferral's `pydantic_ai.tool.deferral.metadata` (JSON) kept with the call
in `metadata.otel.deferred`; the agent span's `final_result` is the run's answer.

A request that calls an output tool (structured output, `output_type=` a
model) gave its answer through that call: its arguments are the answer
(`answer_texts`, compact JSON as pydantic-ai writes `final_result`; the
value under `outer_typed_dict_key` for a type it wraps, `{"response": 21}`
for `int`, a string as it is; arguments that are no JSON as written). A
later request's input shows what pydantic-ai sent back for such a call:
`Final result processed.` (or another of its status notes: a second output
call of the same reply, one whose value lost to another) when it took or
skipped the answer, anything else when it refused it (`refused_answers`):
validation errors (a list of pydantic error details, said as `loc: msg`), an
output validator's or function's `ModelRetry` message, or from 1.x on the
retry prompt text itself. A call whose response recorded no content
(`include_content=False`) cannot be told refused and counts as taken, as
does the last attempt of a run that ran out of output retries (no request
came after it: the run's error says so).

An answer given as TEXT (`NativeOutput`, `PromptedOutput`, `str` output with an output
validator) is refused the same way, but pydantic-ai's answer to it is no tool
response: it sends its feedback as text of its own, in the user's voice ("Your
previous response failed the application's validation (this is automated
feedback, not a message from the user):" and the validation errors or the
`ModelRetry` message fenced in `<validation_errors>` / `<retry_feedback>`, from
2.78 `<pyai:validation_errors>` / `<pyai:retry_feedback>`; 1.x's `RetryPromptPart`
with no tool name: "Validation feedback: …" / "N validation errors: …", then "Fix the errors and
try again."; a reply with nothing to use: its fixed "Please return text." and
the like). Its message history marks the part (`retry-feedback`, `retry-prompt`
before 2.x), its spans do not: they record it as a text part like any user
text, so it is told by its fixed wording, only on pydantic-ai's spans (its
instrumentation scope; without a scope, its own keys). `retry_feedback` reads it
as the framework speaking, never the user: the request's input holds it as a
`system` message (no user turn), a run's `input.value` that OpenInference took
from it (the last user text of the run) gives way to the run's real last user
text (`pydantic_ai.all_messages`), and the request whose answer it refused gets
`"output rejected: …"` (the validation errors said as for an output tool, or the
message) as its error, as a refused output-tool answer does.

A tool call whose arguments failed validation is an `execute_tool` span of its own
(`pydantic_ai.tool.failure_stage: validation`, the `ValidationError` its exception)
holding, as its result, the retry prompt pydantic-ai sends back (the error details).
When that failure is over the tool's `retries` pydantic-ai sends nothing: the run
ends, raising `UnexpectedModelBehavior` ("Tool … exceeded max retries count of N"),
and the span says so by recording the retry's cause without its attempt
(`pydantic_ai.tool.retry.cause`, no `pydantic_ai.tool.retry.attempt`); such a call
has no result (`over_budget`), as a `ModelRetry` over the limit records none.
"""

from __future__ import annotations

import json
import re
from itertools import product
from typing import Any

from tracejudge.stages.extract.common import maybe_json
from tracejudge.stages.extract.otel.conventions.genai import messages
from tracejudge.stages.extract.otel.messages import normalise
from tracejudge.stages.extract.otel.replays import message_key
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import MISSING, View, present, unjson

__all__ = ["NAME", "REFUSED", "SCOPE", "feedback", "ours", "over_budget", "read", "retry_feedback"]

NAME = "pydantic-ai"
SCOPE = "pydantic-ai"  # the instrumentation scope of its spans (`InstrumentationSettings`' tracer, under Logfire too)
DEFERRAL_KEY = "pydantic_ai.tool.deferral.name"
DEFERRAL_METADATA_KEY = "pydantic_ai.tool.deferral.metadata"  # (JSON, set only when the exception carried metadata)
_DEFERRED_KINDS = {"unapproved": "requires_approval", "external": "external"}
_OUTPUT_FUNCTION_MSG = "running output function"
# What pydantic-ai sends back for an output call it took or skipped (`_tool_execution`'s status notes, 1.x and 2.x):
# anything else answering an output call is its refusal.
_STATUS_NOTES = ("Final result processed.", "Output tool not used", "Output not used", "Output tool processed")
REFUSED = "output rejected: "  # how a refused answer's step error starts (`turns` counts such a request as answered)


def read(span: Span) -> View | None:
    """The pydantic-ai reading of `span`, or `None` when it carries none of its keys."""
    a = span.attrs
    msg = a.get("logfire.msg")
    output_fn = (isinstance(msg, str) and msg.startswith(_OUTPUT_FUNCTION_MSG)) or span.name.startswith(_OUTPUT_FUNCTION_MSG)
    keys = ("tool_arguments", "tool_response", DEFERRAL_KEY, "model_request_parameters", "final_result")
    if not output_fn and not any(k in a for k in keys):
        return None
    v = View()
    if output_fn:
        v.answer_tool = True
        cid = a.get("gen_ai.tool.call.id")
        v.call_id = str(cid) if present(cid) else None
    if present(a.get("tool_arguments")):
        v.args = a["tool_arguments"]
    if present(a.get("tool_response")):
        v.result = maybe_json(a["tool_response"])
    deferral = a.get(DEFERRAL_KEY)
    if present(deferral) and deferral != "":
        v.deferral = str(deferral)
        if isinstance(a.get(DEFERRAL_METADATA_KEY), str):
            v.deferral_metadata = _decoded(a[DEFERRAL_METADATA_KEY])
    params = maybe_json(a.get("model_request_parameters"))
    if isinstance(params, dict):
        outer = {t["name"]: t.get("outer_typed_dict_key") for t in params.get("output_tools") or [] if isinstance(t, dict) and isinstance(t.get("name"), str)}
        v.output_tools = set(outer)
        if outer:  # (only such requests: the messages are decoded again here, the GenAI reader's copy is not at hand)
            inputs, outputs = messages(span)
            v.answer_texts = _answers(outputs, outer)
            v.refused_answers = _refused(inputs, outer)
        v.deferred_tools = {
            t["name"]: _DEFERRED_KINDS[t["kind"]]
            for t in params.get("function_tools") or []
            if isinstance(t, dict) and isinstance(t.get("name"), str) and t.get("kind") in _DEFERRED_KINDS
        }
    final = a.get("final_result")
    if a.get("gen_ai.operation.name") == "invoke_agent" and isinstance(final, str) and present(final):
        v.answer = final
    return v


def _decoded(text: str) -> Any:
    """A deferral's metadata: the JSON value pydantic-ai wrote, or its text when it was no JSON (its `repr` fallback)."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _calls(msgs: list[dict[str, Any]], tools: dict[str, Any]) -> list[dict[str, Any]]:
    """The `tool_call` parts of `msgs` that call one of the output `tools` and carry a call id."""
    return [p for m in msgs for p in m.get("parts") or []
            if isinstance(p, dict) and p.get("type") == "tool_call" and p.get("name") in tools and p.get("id") is not None]


def _answers(outputs: list[dict[str, Any]], tools: dict[str, Any]) -> dict[str, str]:
    """Call id → the answer text of each output-tool call of a request's output (see module doc)."""
    out: dict[str, str] = {}
    for part in _calls(outputs, tools):
        value = unjson(part.get("arguments"))
        key = tools[part["name"]]
        if isinstance(key, str) and isinstance(value, dict) and key in value:
            value = value[key]
        if value is None or value == "":
            continue  # no arguments recorded (`include_content=False`): no answer to show
        out.setdefault(str(part["id"]), value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":")))
    return out


def _refused(inputs: list[dict[str, Any]], tools: dict[str, Any]) -> dict[str, str]:
    """Call id → `"output rejected: …"` for each output-tool call the request's input shows pydantic-ai refused.

    A response answers an output call when its id is that of an output-tool call in the same input, or
    (the call itself cut from the history by a history processor) it names an output tool.
    """
    asked = {str(p["id"]) for p in _calls(inputs, tools)}
    out: dict[str, str] = {}
    for m in inputs:
        for part in m.get("parts") or []:
            if not isinstance(part, dict) or part.get("type") != "tool_call_response" or part.get("id") is None:
                continue
            if str(part["id"]) not in asked and part.get("name") not in tools:
                continue
            said = _refusal(part.get("result", part.get("response")))  # pydantic-ai writes `result`; log events give `response`
            if said is not None:
                out.setdefault(str(part["id"]), REFUSED + said)
    return out


def _refusal(said: Any) -> str | None:
    """What a response to an output call says when it is a refusal (`None`: a status note, or nothing recorded)."""
    said = unjson(said)
    if said is None or said == "" or (isinstance(said, str) and said.startswith(_STATUS_NOTES)):
        return None
    if isinstance(said, str):
        return said
    if isinstance(said, list) and said and all(isinstance(e, dict) and isinstance(e.get("msg"), str) for e in said):
        # pydantic's error details: where and what, one per error (the model's own values are the step's output already)
        return "; ".join(".".join(str(x) for x in e["loc"]) + ": " + e["msg"] if isinstance(e.get("loc"), list) and e["loc"] else e["msg"] for e in said)
    return json.dumps(said, ensure_ascii=False, separators=(",", ":"), default=str)


# --- feedback on an answer given as text (see the module doc) ------------------------------------------------------
# 2.x (`RetryFeedbackPart.model_response`): the attribution line, then the errors or the `ModelRetry` message fenced;
# from 2.78 the fence's tag carries the `pyai:` prefix pydantic-ai reserves for the tags only it writes.
_FRAMING = "Your previous response failed the application's validation (this is automated feedback, not a message from the user):"
_FENCED = re.compile(re.escape(_FRAMING) + r"\n<((?:pyai:)?(?:validation_errors|retry_feedback))>\n(.*)\n</\1>", re.DOTALL)
# 1.x (`RetryPromptPart.model_response`, `tool_name=None`): a message, or the error details as JSON (fenced from 1.x on).
_LEGACY = re.compile(r"(?:Validation feedback:\n(?P<said>.*)|\d+ validation errors?:\s*(?:```json\n)?(?P<errors>.*?)(?:\n```)?)"
                     r"\n\nFix the errors and try again\.", re.DOTALL)
# 2.x's fixed feedback on a reply holding nothing to use (`_no_output_feedback_text`: what it could have been instead).
_NO_OUTPUT = frozenset("Please " + " or ".join(x for x in chosen if x) + "."
                       for chosen in product(("", "return text"), ("", "include your response in a tool call", "call a tool"), ("", "return an image"))
                       if any(chosen))
_OWN_KEYS = ("model_request_parameters", "pydantic_ai.all_messages")
# A tool span's retry (`_record_retry`): its cause, and its attempt unless the tool's retries are spent (the run ends)
_RETRY_CAUSE, _RETRY_ATTEMPT = "pydantic_ai.tool.retry.cause", "pydantic_ai.tool.retry.attempt"
# (pydantic-ai 1.x+ writes neither on its `execute_tool` spans: there, its run's call id beside logfire's schema key)
_OWN_PAIR = ("gen_ai.agent.call.id", "logfire.json_schema")


def feedback(text: Any) -> str | None:
    """What pydantic-ai's feedback on a refused answer says (`None`: `text` is none: see the module doc).

    Validation errors are said as for an output tool (`loc: msg`, one per error); a `ModelRetry` message as it is.
    """
    if not isinstance(text, str):
        return None
    if text.startswith(_FRAMING):
        fenced = _FENCED.fullmatch(text)
        if fenced is None:
            return None
        return _refusal(fenced[2]) or fenced[2]
    if text in _NO_OUTPUT:
        return text
    legacy = _LEGACY.fullmatch(text)
    if legacy is None:
        return None
    if legacy["said"] is not None:
        return legacy["said"]
    return _refusal(legacy["errors"]) or legacy["errors"]


def ours(span: Span) -> bool:
    """A span of pydantic-ai's instrumentation: its scope, or (a format that keeps no scope) one of its own keys."""
    return span.scope == SCOPE or (not span.scope and (any(k in span.attrs for k in _OWN_KEYS) or all(k in span.attrs for k in _OWN_PAIR)))


def retry_feedback(spans: list[Span], views: dict[str, View]) -> None:
    """Read pydantic-ai's feedback on a refused text answer as the framework's, never the user's (see the module doc).

    In every request's input a feedback text part becomes a `system` message of its own, right after what was
    left of its message. Feedback the request's input adds after the last reply it replays is new: the reply
    before it was refused, and the request that gave it (the last one before, of the same run when there is one,
    whose output is that reply) gets `"output rejected: …"` as its error. A run whose recorded request is a
    feedback text (OpenInference's `input.value`) asked the last user text of its messages that is none. Then a tool
    call over its retries has no result (`over_budget`).
    """
    mine = [s for s in spans if ours(s)]
    models = sorted((s for s in mine if views[s.span_id].role == "model"), key=lambda s: (s.start, s.span_id))
    # Feedback comes inside one run, right after the reply it refused: a text of its wording that a request adds after a
    # reply no earlier request of its run gave (a new run's prompt after the last run's accepted answer) is the user's.
    said_by_user: set[tuple[str, int]] = set()  # (text, which occurrence of it in a history): replays keep the order
    for i, m in enumerate(models):
        v = views[m.span_id]
        refused = _set_apart(v.inputs, said_by_user)[1] if v.inputs else None
        if refused is not None and not _refusers(models[:i], m, refused[0], views):
            said_by_user.add(refused[2])
    for i, m in enumerate(models):
        v = views[m.span_id]
        if not v.inputs:
            continue
        inputs, refused = _set_apart(v.inputs, said_by_user)
        if inputs is None:
            continue
        v.inputs = inputs
        if refused is None:
            continue
        given = _refusers(models[:i], m, refused[0], views)
        if given:
            pv = views[given[-1].span_id]
            pv.error = pv.error or REFUSED + refused[1]
    for s in mine:
        v = views[s.span_id]
        if feedback(v.request) is not None:
            v.request = _asked(s, said_by_user) if v.role == "agent" else None
    over_budget(mine, views)


def over_budget(spans: list[Span], views: dict[str, View]) -> None:
    """A failed tool call over its retries (the module doc) has no result: the prompt the span recorded was never sent.

    `spans`: pydantic-ai's. In place."""
    for s in spans:
        v = views[s.span_id]
        if v.role == "tool" and v.error is not None and present(s.attrs.get(_RETRY_CAUSE)) and _RETRY_ATTEMPT not in s.attrs:
            v.result = MISSING


def _refusers(earlier: list[Span], m: Span, reply: dict[str, Any], views: dict[str, View]) -> list[Span]:
    """The requests before `m` of its own run (the same parent; any, when `m` has none) whose output is `reply`."""
    key = [message_key(reply)]
    return [p for p in earlier if (m.parent_id is None or p.parent_id == m.parent_id)
            and [message_key(o) for o in views[p.span_id].outputs or []] == key]


def _set_apart(inputs: list[dict[str, Any]], said_by_user: set[tuple[str, int]]
               ) -> tuple[list[dict[str, Any]] | None, tuple[dict[str, Any], str, tuple[str, int]] | None]:
    """`inputs` with each feedback part a `system` message of its own (`None`: it holds none), and the reply the newest
    feedback refused with what it said and the feedback's key (its text, and which occurrence of that text it is), when
    that feedback came after the last reply of `inputs` (else `None`). A key in `said_by_user` is the user's, whatever
    its wording."""
    out: list[dict[str, Any]] = []
    found = False
    seen: dict[str, int] = {}
    refused: tuple[dict[str, Any], str, tuple[str, int]] | None = None
    reply: dict[str, Any] | None = None
    for msg in inputs:
        if msg.get("role") == "assistant":
            out.append(msg)
            reply, refused = msg, None
            continue
        parts = msg.get("parts") or []
        keys = [_occurrence(p, seen) for p in parts]
        said = [feedback(p.get("content")) if k is not None and k not in said_by_user else None for p, k in zip(parts, keys)]
        if msg.get("role") not in ("user", "system") or all(x is None for x in said):
            out.append(msg)
            continue
        found = True
        kept = [p for p, x in zip(parts, said) if x is None]
        if kept:
            out.append({**msg, "parts": kept})
        out.append({"role": "system", "parts": [p for p, x in zip(parts, said) if x is not None]})
        if reply is not None:
            at = next(k for k, x in enumerate(said) if x is not None)
            refused = (reply, said[at], keys[at])  # type: ignore[assignment]
    return (out if found else None), refused


def _occurrence(part: Any, seen: dict[str, int]) -> tuple[str, int] | None:
    """A text part's key `(text, n)`: its n-th occurrence in the history walked so far (`seen` counts); None for another part."""
    if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("content"), str):
        return None
    text = part["content"]
    seen[text] = seen.get(text, 0) + 1
    return text, seen[text]


def _asked(span: Span, said_by_user: set[tuple[str, int]]) -> str | None:
    """The last user text of a run's messages (`pydantic_ai.all_messages`) that is no feedback, else `None`.

    A text of feedback's wording is the user's when its key (`_occurrence`) is in `said_by_user`."""
    seen: dict[str, int] = {}
    texts = []
    for m in normalise(span.attrs.get("pydantic_ai.all_messages")) or []:
        if m.get("role") == "assistant":
            continue
        for p in m.get("parts") or []:
            key = _occurrence(p, seen)
            if key is not None and m.get("role") == "user" and present(key[0]) and key[0] != "" and (feedback(key[0]) is None or key in said_by_user):
                texts.append(key[0])
    return texts[-1] if texts else None
