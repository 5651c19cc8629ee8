"""Model requests recorded without their input messages: said once per file, and counted in each case's metadata.

Every model request was sent messages, so a model span holding none (nor any input attribute: `_holds_input`) means
the instrumentation wrote none, and a message recorded with `"parts": []` one whose content it dropped. Causes seen:

- content capture of inputs off (`HIDDEN_INPUTS`; with outputs off too, `HIDDEN`, a case with nothing at all in it
  is refused: see `adapt`'s "content capture was off");
- the instrumentation gave up on the request without a word: opentelemetry-instrumentation-openai (OpenLLMetry)
  0.62 writes no `gen_ai.input.messages` for a request whose messages hold a base64 image (its image upload hook
  fails and the error is swallowed), its output and usage still written;
- the message written with none of its parts: opentelemetry-instrumentation-openai-v2 2.4b0 records a user message
  given as content parts (a text part and an image part) as `{"role": "user", "parts": []}`;
- a message event written without its content: openai-v2 up to 2.3b0 with capture off writes each message's log record
  all the same, a system or user message's with no body, a tool message's with the call id alone (its choices keep
  the calls' ids and names, so the conversation reads, as calls without arguments or results).

What those messages held is in no attribute: the user's words (the case `input`), the tool results sent back to
the model (a call's result), and the history by which the requests of a plain loop, each a trace of its own, are
joined into one conversation (`stitch`): without it each request reads as a case of its own. Nothing is made up in
their place: `warn_unread` says, once per file, how many requests lost what, which instrumentation scope and
attributes, and what is unknown; `note_unread` puts the case's count in `metadata.otel.missing_inputs`
(`{"requests", "no_messages", "empty_messages"}`: only on a case that has such requests).

Not counted here: a request that lost its first messages to the attribute limit per span (`dropped` says that), and a
model span nested in another whose request recorded them (one request seen by a wrapper and its provider).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from tracejudge.core.log import get_logger
from tracejudge.stages.extract.otel.conventions import group_views
from tracejudge.stages.extract.otel.conventions.agents_hidden import SDK_HID, sdk_hid
from tracejudge.stages.extract.otel.conventions.genai_events import INPUT_EVENTS, holds_messages
from tracejudge.stages.extract.otel.conventions.genai_instructions import only_instructions
from tracejudge.stages.extract.otel.spans import Group, Span
from tracejudge.stages.extract.otel.view import present
from tracejudge.stages.extract.otel.wrapped import ancestor
from tracejudge.stages.extract.said_once import first_time

__all__ = ["HIDDEN", "Unread", "note_unread", "unread_requests", "warn_unread"]

log = get_logger("tracejudge.extract.otel")

# The settings that keep message content out of spans, as each instrumentation names them (shared with `adapt`'s refusal).
# opentelemetry-util-genai 1.x (OTel's openai-v2 2.4 and google-genai instrumentations write through it) takes the old
# `true` for NO_CONTENT, with a warning in the application's log only: a trace recorded so looks like capture was never set.
_OTEL_CAPTURE = ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT unset, or `true` where opentelemetry-util-genai 1.x "
                 "wants SPAN_ONLY / EVENT_ONLY / SPAN_AND_EVENT")
HIDDEN = f"OPENINFERENCE_HIDE_INPUTS / OPENINFERENCE_HIDE_OUTPUTS, TRACELOOP_TRACE_CONTENT=false, {_OTEL_CAPTURE}"
HIDDEN_INPUTS = f"OPENINFERENCE_HIDE_INPUTS / OPENINFERENCE_HIDE_INPUT_MESSAGES, TRACELOOP_TRACE_CONTENT=false, {_OTEL_CAPTURE}"

# Where each convention (`View.conventions`) keeps a request's input messages: what such a span lacks.
INPUT_KEYS = {
    "otel-genai": "gen_ai.input.messages",
    "pydantic-ai": "gen_ai.input.messages",
    "openllmetry": "gen_ai.prompt.*",
    "openinference": "llm.input_messages.* / input.value",
    "vercel-ai": "ai.prompt.messages",
    "langfuse": "langfuse.observation.input",
    "mlflow": "mlflow.spanInputs",
    "openai-agents": "span_data.input",
}
# The GenAI parts form, the one that can say a message had no part (read on the span's attribute), and the message
# events of conventions 1.27–1.36 as log records, which say it by a body without `content`.
_EMPTY_KEY = "gen_ai.input.messages"
_EMPTY_EVENTS = {"gen_ai.system.message": "system", "gen_ai.user.message": "user", "gen_ai.tool.message": "tool"}
_EVENTS_KEY = "gen_ai.*.message log records"


class Unread:
    """One model request recorded without (some of) its input messages.

    `span`: the request's (outermost) model span; `kind`: `"none"` (no input message at all) or `"empty"` (a
    message other than the assistant's recorded with no part: `roles` names whose); `keys`: the attributes its
    conventions keep input messages in.
    """

    __slots__ = ("span", "kind", "roles", "keys")

    def __init__(self, span: Span, kind: str, roles: list[str], keys: list[str]) -> None:
        self.span, self.kind, self.roles, self.keys = span, kind, roles, keys


# Attributes that hold a request's input in some convention (exact keys, then prefixes): a span with one of them holding
# a value recorded its input, whether or not a reader made messages of it (a prompt string), so it is not counted here.
_INPUT_KEYS_EXACT = frozenset({"gen_ai.input.messages", "input.value", "ai.prompt", "ai.prompt.messages", "langfuse.observation.input",
                               "mlflow.spanInputs", "llm.prompts"})
_INPUT_PREFIXES = ("gen_ai.prompt.", "llm.input_messages.", "llm.prompts.")


def _holds_input(span: Span) -> bool:
    """Whether `span` recorded some input: an input attribute with a value (a placeholder such as OpenInference's
    `__REDACTED__` is none), the Agents SDK's `span_data.input`, a GenAI details event or a log event other than the
    model's choice."""
    if holds_messages(span, ("gen_ai.input.messages",), INPUT_EVENTS) or any(ev.name != "gen_ai.choice" for ev in span.logs):
        return True
    data = span.attrs.get("openai_agents.span_data")
    if isinstance(data, dict) and present(data.get("input")):
        return True
    return any((k in _INPUT_KEYS_EXACT or k.startswith(_INPUT_PREFIXES)) and present(v) for k, v in span.attrs.items())


def _empty_roles(span: Span) -> list[str]:
    """The roles of the input messages `span` recorded in the GenAI parts form with `"parts": []` (the assistant's
    left out: a reply may say nothing); `[]` when none, or when the attribute is not a JSON list."""
    raw = span.attrs.get(_EMPTY_KEY)
    if not isinstance(raw, str) or '"parts"' not in raw:
        return []
    try:
        messages = json.loads(raw)
    except ValueError:
        return []  # the reader said so already (`genai._json_attr`)
    if not isinstance(messages, list):
        return []
    return [str(m.get("role")) for m in messages if isinstance(m, dict) and m.get("parts") == [] and m.get("role") not in ("assistant", None)]


def _contentless_events(span: Span) -> list[str]:
    """The roles of the system, user and tool message events `span`'s log records hold without `content` (module
    docstring), in order, each once."""
    return list(dict.fromkeys(_EMPTY_EVENTS[ev.name] for ev in span.logs
                              if ev.name in _EMPTY_EVENTS and not (isinstance(ev.body, dict) and "content" in ev.body)))


def unread_requests(group: Group) -> tuple[list[Unread], list[Span]]:
    """`(unread, requests)`: the model requests of `group` (`requests`, in start order) and those of them recorded
    without their input messages, or with one whose parts were all dropped (`unread`).

    A request is a model span with no model span above it; it recorded its input when it, or a model span inside it,
    holds input messages, or an input attribute a reader made none of (a prompt string: `_holds_input`). A request whose span (or one inside it) dropped attributes past the limit is left to
    `dropped`. A request with no input at all is `"none"`, else one with an empty message `"empty"`.
    """
    views = group_views(group)
    index = {s.span_id: s for s in group.spans}
    models = [s for s in group.spans if views[s.span_id].role == "model"]
    top: dict[str, Span] = {}
    for s in models:
        outer, passed = s, {s.span_id}
        # (Each step goes up one model span; one seen before means the export's parents loop, and the walk ends there.)
        while (up := ancestor(outer, index, lambda p: views[p.span_id].role == "model")) is not None and up.span_id not in passed:
            passed.add(up.span_id)
            outer = up
        top[s.span_id] = outer
    heard: set[str] = set()  # requests that recorded their input, read as messages or not
    lossy: set[str] = set()
    empty: dict[str, list[str]] = {}
    where: dict[str, str] = {}  # what said a request's message was empty
    keys: dict[str, list[str]] = {}
    for s in models:
        t = top[s.span_id].span_id
        # (the system instructions alone are not the request's input messages: those were lost all the same)
        if (views[s.span_id].inputs and not only_instructions(s, views[s.span_id].inputs)) or _holds_input(s):
            heard.add(t)
        if s.dropped_attributes:
            lossy.add(t)
        if roles := _empty_roles(s):
            empty.setdefault(t, roles)
            where.setdefault(t, _EMPTY_KEY)
        elif roles := _contentless_events(s):
            empty.setdefault(t, roles)
            where.setdefault(t, _EVENTS_KEY)
        keys.setdefault(t, []).extend(INPUT_KEYS[c] for c in views[s.span_id].conventions or [] if c in INPUT_KEYS)
    requests = sorted({t.span_id: t for t in top.values()}.values(), key=lambda s: (s.start, s.span_id))
    unread = []
    for s in requests:
        if s.span_id in lossy:
            continue
        if s.span_id not in heard:
            unread.append(Unread(s, "none", [], list(dict.fromkeys(keys[s.span_id]))))
        elif s.span_id in empty:
            unread.append(Unread(s, "empty", empty[s.span_id], [where[s.span_id]]))
    return unread, requests


def note_unread(metadata: dict[str, Any], unread: list[Unread]) -> None:
    """Add `missing_inputs` to a case's `metadata["otel"]` when some of its requests are `unread` (else nothing)."""
    if not unread:
        return
    none = sum(1 for u in unread if u.kind == "none")
    metadata.setdefault("otel", {})["missing_inputs"] = {"requests": len(unread), "no_messages": none, "empty_messages": len(unread) - none}


def warn_unread(unread: Iterable[Unread], requests: dict[str, int]) -> None:
    """Say once per file how many of its model requests (`requests`: the file's count) are `unread`, and what that means."""
    by_file: dict[str, list[Unread]] = {}
    for u in unread:
        by_file.setdefault(u.span.file, []).append(u)
    for file, found in by_file.items():
        if not first_time("missing_inputs", file):
            continue
        log.warning(f"otel: {file}: {_unread_text(found, requests.get(file, len(found)))}")


def _scopes(found: list[Unread]) -> str:
    """"`a` (2), `b` (1)": the instrumentation scopes that wrote the requests, the most first."""
    counts: dict[str, int] = {}
    for u in found:
        counts[u.span.scope or "(none)"] = counts.get(u.span.scope or "(none)", 0) + 1
    return ", ".join(f"`{k}` ({n})" for k, n in sorted(counts.items(), key=lambda e: -e[1]))


def _unread_text(found: list[Unread], total: int) -> str:
    """The warning of `warn_unread` for one file: what was lost, by whom, what is unknown for it, why, and how to keep it."""
    none = [u for u in found if u.kind == "none"]
    empty = [u for u in found if u.kind == "empty"]
    said = []
    if none:
        keys = " / ".join(f"`{k}`" for k in dict.fromkeys(k for u in none for k in u.keys)) or "input attribute"
        said.append(f"{len(none)} of {total} model request(s) were recorded without any input message (no {keys}; "
                    f"instrumentation scope {_scopes(none)}): unless another span records it, the user's input (the case's "
                    "`input` is then null), the tool results sent back to the model (a call's result is then null) and the "
                    "conversation each belongs to are unknown (requests in traces of their own, with no conversation key, are "
                    "joined by the history they replay: without it each reads as a case of its own)")
    if empty:
        roles = " / ".join(dict.fromkeys(r for u in empty for r in u.roles))
        forms = " / ".join(dict.fromkeys({_EMPTY_KEY: f'`"parts": []` in `{_EMPTY_KEY}`', _EVENTS_KEY: f"no `content` in {_EVENTS_KEY}"}[k]
                                         for u in empty for k in u.keys))
        said.append(f"{len(empty)} of {total} model request(s) hold a {roles} message whose content parts were all dropped "
                    f"({forms}; instrumentation scope {_scopes(empty)}): what it said is unknown (a "
                    "first user message's text is the case's input)")
    if not empty and sdk_hid(u.span for u in none):  # the Agents SDK's own setting, not OpenInference's (`agents_hidden`)
        return f"{'; '.join(said)}. {SDK_HID}"
    return (f"{'; '.join(said)}. The instrumentation did not write them: content capture of inputs off ({HIDDEN_INPUTS}), or it "
            "gave up on the request (OpenLLMetry's opentelemetry-instrumentation-openai 0.62 writes no input message for a request "
            "with a base64 image; opentelemetry-instrumentation-openai-v2 2.4b0 writes a user message of content parts as "
            "`parts: []`). Nothing is made up in their place; each case counts its own in metadata.otel.missing_inputs. Record "
            "with input content captured (and text-only user messages for those two) to evaluate them")
