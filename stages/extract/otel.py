"""Format `otel`: OTLP/JSON traces following the OpenTelemetry GenAI semantic conventions.

Framing: `dataset.path` is one OTLP/JSON export file (a single document, or
JSON Lines of exports as the collector's file exporter writes them) or a
directory searched for `include` globs (default `**/*.json`, `**/*.jsonl`)
minus `exclude` globs. Spans and span-linked log records (`resourceLogs`,
log-event mode) of every file are read, then grouped into conversations;
**one conversation is one raw record and one case**. Its file and line are
those of its first span; problems name the span id.

Grouping (`group_by`): `conversation` (default) groups the traces that carry
the same `gen_ai.conversation.id` (else `session.id`,
`gcp.vertex.agent.session_id`, `langfuse.session.id`; a trace with none
stands alone); `trace` makes every trace its own case; `run` makes every
top-level agent run its own case (an `invoke_agent` / `invoke_workflow`
span with no agent above it, and everything under it); a list of attribute
names sets the keys to try. The case id is the key's value (for `run`,
`<trace id>:<agent span id>`). Within one trace a span belongs to the key
value of its topmost ancestor carrying the key, so several agent runs under
one parent span (a web request, an evaluation harness), each with its own
`gen_ai.conversation.id`, are one case each; runs that carry no
conversation id need `group_by: run` for that.

What a conversation becomes:

- spans are ordered by start time (they arrive out of tree order); the tree
  is rebuilt from `parentSpanId`;
- model requests are spans with `gen_ai.operation.name` `chat`,
  `generate_content` or `text_completion` (OpenInference `LLM` spans too),
  one step each; a model span nested in another is the same request.
  Usage sums `gen_ai.usage.input_tokens` / `output_tokens`;
- tool calls are `execute_tool` spans (also spans with `gen_ai.tool.name`
  and no operation, as pydantic-ai writes, and OpenInference `TOOL` spans).
  Arguments come from the first present of `gen_ai.tool.call.arguments`,
  `gcp.vertex.agent.tool_call_args` (ADK), `tool_arguments` (pydantic-ai),
  `input.value` (OpenInference) — or the `argument_keys` option — else from
  the `tool_call` part of the model output that requested the call; results
  likewise from `gen_ai.tool.call.result`, `gcp.vertex.agent.tool_response`
  (ADK's `{"result": X}` wrapper unwrapped), `tool_response`,
  `output.value`, else a later `tool_call_response` part. JSON strings are
  decoded; ADK's placeholders `<not specified>` / `N/A` mean "not
  recorded". A call whose arguments were not recorded anywhere gets `{}`
  and `arguments_missing`;
- a `tool_call` part with no tool span (a handoff such as
  `transfer_to_billing`) is a call too; parts pair with tool spans by call
  id, else by name in order;
- an `execute_tool` span nested in one of the same tool name (an MCP client
  span and the server span inside it) is ONE call; ADK's parallel wrapper
  `(merged tools)` is not a call, its children are;
- span status ERROR on the tool span marks a failed call; the error is
  `"<error.type>: <status message>"`;
- other spans (HTTP, gRPC, task stores, unknown operation names) are noise
  and ignored.

Turns: a turn is one user exchange, anchored on a top-level
`invoke_workflow` / `invoke_agent` span (or, without agent spans, on the
trace root); delegated agents stay inside. Consecutive anchors of one trace
with the same user text are one turn. The first turn's user text is the
case `input`, the later ones `turns`; `metadata.otel.turns` lists per turn
`user_text`, `final_text`, `intermediate_texts`, `agents`, `steps`
(`[first, end)` indices into `trace.steps`), `calls` (`[first, end)` into
`trace.tool_calls()`), `usage`. See `turn_calls(case)`.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from tracejudge.core.records import Case
from tracejudge.core.registry import Format, register_format
from tracejudge.stages.extract.common import build_case, fail, maybe_json
from tracejudge.stages.extract.otel_model import Collector, Group, Span, iter_exports
from tracejudge.stages.load import JSON_ERRORS, RawRecord

__all__ = ["CONVERSATION_KEYS", "Options", "adapt", "read", "turn_calls"]

CONVERSATION_KEYS = ["gen_ai.conversation.id", "session.id", "gcp.vertex.agent.session_id", "langfuse.session.id"]
ARGUMENT_KEYS = ["gen_ai.tool.call.arguments", "gcp.vertex.agent.tool_call_args", "tool_arguments", "input.value"]
RESULT_KEYS = ["gen_ai.tool.call.result", "gcp.vertex.agent.tool_response", "tool_response", "output.value"]
_MODEL_OPS = {"chat", "generate_content", "text_completion"}
_AGENT_OPS = {"invoke_agent", "invoke_workflow"}
_PLACEHOLDERS = {"<not specified>", "N/A", "<elided>"}
_WRAPPER_TOOLS = {"(merged tools)"}
DEFERRAL_KEY = "pydantic_ai.tool.deferral.name"
_DEFERRED_KINDS = {"unapproved": "requires_approval", "external": "external"}
_OUTPUT_FUNCTION_MSG = "running output function"


def _is_output_function(span: Span) -> bool:
    """pydantic-ai's output-function span (`execute_tool final_result`, or `running output function` in version 2)."""
    msg = span.attrs.get("logfire.msg")
    return (isinstance(msg, str) and msg.startswith(_OUTPUT_FUNCTION_MSG)) or span.name.startswith(_OUTPUT_FUNCTION_MSG)


def _request_tools(span: Span) -> tuple[set[str], dict[str, str]]:
    """Output tool names and deferred tools (name -> why) from pydantic-ai's `model_request_parameters`."""
    params = maybe_json(span.attrs.get("model_request_parameters"))
    if not isinstance(params, dict):
        return set(), {}
    output = {t["name"] for t in params.get("output_tools") or [] if isinstance(t, dict) and isinstance(t.get("name"), str)}
    deferred = {
        t["name"]: _DEFERRED_KINDS[t["kind"]]
        for t in params.get("function_tools") or []
        if isinstance(t, dict) and isinstance(t.get("name"), str) and t.get("kind") in _DEFERRED_KINDS
    }
    return output, deferred


class Options(BaseModel):
    """`dataset.options` of `otel`.

    `group_by`: `conversation`, `trace`, `run`, or a list of attribute names.
    `argument_keys` / `result_keys`: extra span attributes holding tool
    arguments / results, tried before the built-in ones.
    `include` / `exclude`: file globs when `dataset.path` is a directory.
    """

    model_config = ConfigDict(extra="forbid")

    group_by: Literal["conversation", "trace", "run"] | list[str] = "conversation"
    argument_keys: list[str] = []
    result_keys: list[str] = []
    include: list[str] = ["**/*.json", "**/*.jsonl"]
    exclude: list[str] = []


# ---------------------------------------------------------------------------- reading


def _files(path: Path, opts: Options) -> list[Path]:
    if path.is_file():
        return [path]
    found: set[Path] = set()
    for pattern in opts.include:
        found.update(p for p in path.glob(pattern) if p.is_file())
    def rel(p: Path) -> str:
        return p.relative_to(path).as_posix()

    return sorted(p for p in found if not any(fnmatch.fnmatch(rel(p), ex) or fnmatch.fnmatch(p.name, ex) for ex in opts.exclude))


def read(dataset: Any) -> Iterator[RawRecord]:
    """Read every export under `dataset.path` and yield one `RawRecord` per conversation.

    Unreadable files and documents that are not OTLP exports are yielded as
    records with `error` set (file and line named); `dataset.limit` counts
    conversations.
    """
    opts = Options.model_validate(dataset.options)
    collector = Collector()
    for path in _files(Path(dataset.path), opts):
        for line, doc, error in iter_exports(path):
            if error is not None:
                yield RawRecord(str(path), line, error=error)
            elif not isinstance(doc, dict) or not ("resourceSpans" in doc or "resourceLogs" in doc):
                yield RawRecord(str(path), line, error="not an OTLP/JSON export: expected `resourceSpans` or `resourceLogs` at the top level")
            else:
                try:
                    collector.add(doc, str(path), line)
                except RecursionError:  # attribute values nested past the stack: this export only
                    yield RawRecord(str(path), line, error="OTLP export nested too deeply to read")
    for file, line, message in collector.orphans:
        yield RawRecord(file, line, error=message)
    keys = None if opts.group_by in ("trace", "run") else (CONVERSATION_KEYS if opts.group_by == "conversation" else list(opts.group_by))
    groups = collector.groups(keys)
    if opts.group_by == "run":
        groups = (run for trace in groups for run in _runs(trace))
    count = 0
    for group in groups:
        first = group.spans[0]
        yield RawRecord(first.file, first.line, group)
        count += 1
        if dataset.limit is not None and count >= dataset.limit:
            return


def _runs(trace: Group) -> list[Group]:
    """One trace split into its top-level agent runs; spans outside every run join the first one."""
    index = {s.span_id: s for s in trace.spans}
    agent = {s.span_id for s in trace.spans if _op(s) in _AGENT_OPS}
    owner: dict[str, str | None] = {}
    for span in trace.spans:
        top: str | None = None
        node: Span | None = span
        hops = 0
        while node is not None and hops < 10_000:
            if node.span_id in agent:
                top = node.span_id
            node = index.get(node.parent_id or "")
            hops += 1
        owner[span.span_id] = top
    tops = list(dict.fromkeys(o for o in owner.values() if o is not None))
    if len(tops) < 2:
        return [trace]
    parts: dict[str, list[Span]] = {t: [] for t in tops}
    for span in trace.spans:
        parts[owner[span.span_id] or tops[0]].append(span)
    return [Group(key=f"{trace.key}:{top}", key_attr="run", traces=trace.traces, spans=parts[top]) for top in tops]


# ---------------------------------------------------------------------------- span roles


def _op(span: Span) -> str | None:
    op = span.attrs.get("gen_ai.operation.name")
    if isinstance(op, str):
        return op
    kind = span.attrs.get("openinference.span.kind")
    if kind == "LLM":
        return "chat"
    if kind == "TOOL":
        return "execute_tool"
    if kind == "AGENT":
        return "invoke_agent"
    if span.attrs.get("gen_ai.tool.name"):
        return "execute_tool"
    return None


def _tool_name(span: Span) -> str | None:
    name = span.attrs.get("gen_ai.tool.name") or span.attrs.get("tool.name")
    if isinstance(name, str) and name:
        return name
    if span.name.startswith("execute_tool "):
        return span.name[len("execute_tool ") :]
    return None


def _present(value: Any) -> bool:
    return value is not None and not (isinstance(value, str) and value.strip() in _PLACEHOLDERS)


def _first(span: Span, keys: list[str]) -> tuple[str | None, Any]:
    for key in keys:
        if key in span.attrs and _present(span.attrs[key]):
            return key, span.attrs[key]
    return None, None


def _result_value(key: str | None, value: Any) -> Any:
    value = maybe_json(value)
    if key == "gcp.vertex.agent.tool_response" and isinstance(value, dict) and set(value) == {"result"}:
        value = value["result"]  # ADK wraps a non-mapping return value as {"result": X}
    return value if _present(value) else None


def _json_attr(span: Span, key: str) -> Any:
    value = span.attrs.get(key)
    if isinstance(value, str):
        try:
            return json.loads(value)
        except JSON_ERRORS:
            fail(f"span {span.span_id}: {key} is not valid JSON", field=f"span {span.span_id}: {key}")
    return value


# ---------------------------------------------------------------------------- messages


def _text_parts(message: Any) -> list[str]:
    out = []
    for part in (message or {}).get("parts") or [] if isinstance(message, dict) else []:
        if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("content"), str) and _present(part["content"]):
            out.append(part["content"])
    return out


def _log_messages(span: Span) -> tuple[list[Any] | None, list[Any] | None]:
    """Input and output messages rebuilt from a span's GenAI log events (log-event mode)."""
    inputs: list[Any] = []
    outputs: list[Any] = []
    for ev in sorted(span.logs, key=lambda e: e.time):
        body = ev.body if isinstance(ev.body, dict) else {}
        if ev.name == "gen_ai.client.inference.operation.details":
            for key, into in (("gen_ai.input.messages", inputs), ("gen_ai.output.messages", outputs)):
                got = ev.attrs.get(key)
                got = maybe_json(got) if isinstance(got, str) else got
                if isinstance(got, list):
                    into.extend(got)
        elif ev.name in ("gen_ai.user.message", "gen_ai.assistant.message", "gen_ai.tool.message", "gen_ai.choice"):
            raw_msg = body.get("message")
            msg: dict[str, Any] = raw_msg if ev.name == "gen_ai.choice" and isinstance(raw_msg, dict) else body
            role = {"gen_ai.user.message": "user", "gen_ai.tool.message": "tool"}.get(ev.name, "assistant")
            parts: list[dict[str, Any]] = []
            content = msg.get("content")
            if isinstance(content, str) and _present(content):
                if role == "tool":
                    parts.append({"type": "tool_call_response", "id": msg.get("id"), "response": content})
                else:
                    parts.append({"type": "text", "content": content})
            for tc in msg.get("tool_calls") or []:
                if isinstance(tc, dict):
                    fn = tc.get("function") or {}
                    parts.append({"type": "tool_call", "id": tc.get("id"), "name": fn.get("name"), "arguments": fn.get("arguments")})
            (outputs if ev.name == "gen_ai.choice" else inputs).append({"role": role, "parts": parts})
    return inputs or None, outputs or None


def _messages(span: Span) -> tuple[list[Any], list[Any]]:
    inputs = _json_attr(span, "gen_ai.input.messages")
    outputs = _json_attr(span, "gen_ai.output.messages")
    if inputs is None or outputs is None:
        log_in, log_out = _log_messages(span)
        inputs = inputs if inputs is not None else log_in
        outputs = outputs if outputs is not None else log_out
    return (inputs if isinstance(inputs, list) else []), (outputs if isinstance(outputs, list) else [])


def _last_user_text(messages: list[Any]) -> str | None:
    for msg in reversed(messages):
        if isinstance(msg, dict) and msg.get("role") == "user":
            texts = _text_parts(msg)
            if texts:
                return "\n".join(texts)
    return None


def _output_text(messages: list[Any]) -> str | None:
    texts = [t for m in messages for t in _text_parts(m)]
    return "\n".join(texts) if texts else None


def _usage(span: Span, key: str) -> int:
    value = span.attrs.get(key)
    if value is None:
        for ev in span.logs:
            if ev.attrs.get(key) is not None:
                value = ev.attrs[key]
                break
    if value is None:
        alt = {"gen_ai.usage.input_tokens": "llm.token_count.prompt", "gen_ai.usage.output_tokens": "llm.token_count.completion"}[key]
        value = span.attrs.get(alt)
    try:
        return int(value) if value is not None else 0
    except (TypeError, ValueError):
        fail(f"span {span.span_id}: {key} is not an integer ({value!r})", field=f"span {span.span_id}: {key}")


# ---------------------------------------------------------------------------- the adapter


class _Tool:
    """One tool call being assembled from a span (and what nested spans add)."""

    __slots__ = ("span", "name", "call_id", "args", "args_key", "result", "error", "claimed", "deferral")

    def __init__(self, span: Span, name: str, opts: Options) -> None:
        self.span = span
        self.name = name
        cid = span.attrs.get("gen_ai.tool.call.id")
        self.call_id = str(cid) if _present(cid) else None
        self.args_key, self.args = _first(span, [*opts.argument_keys, *ARGUMENT_KEYS])
        rkey, raw = _first(span, [*opts.result_keys, *RESULT_KEYS])
        self.result = _result_value(rkey, raw) if rkey else None
        deferral = span.attrs.get(DEFERRAL_KEY)
        self.deferral = str(deferral) if _present(deferral) and deferral != "" else None
        # A deferral is control flow, not a failure (pydantic-ai marks it ERROR before instrumentation version 5).
        self.error = None if self.deferral else _error(span)
        self.claimed = False

    def absorb(self, inner: _Tool) -> None:
        """Take what a nested span of the same call recorded and this one did not."""
        if self.args_key is None and inner.args_key is not None:
            self.args_key, self.args = inner.args_key, inner.args
        if self.result is None:
            self.result = inner.result
        if self.call_id is None:
            self.call_id = inner.call_id
        if self.error is None:
            self.error = inner.error


def _error(span: Span) -> str | None:
    if not span.status_error:
        return None
    etype = span.attrs.get("error.type")
    if etype is None:
        etype = next((a.get("exception.type") for name, a in span.events if name == "exception" and a.get("exception.type")), None)
    message = span.status_message
    if etype and message:
        return message if message.startswith(f"{etype}:") else f"{etype}: {message}"
    return message or (str(etype) if etype else "error")


def _ancestor(span: Span, index: dict[str, Span], pred: Any) -> Span | None:
    seen = 0
    parent = index.get(span.parent_id or "")
    while parent is not None and seen < 10_000:
        if pred(parent):
            return parent
        parent = index.get(parent.parent_id or "")
        seen += 1
    return None


def _root(span: Span, index: dict[str, Span]) -> Span:
    node, seen = span, 0
    while node.parent_id in index and seen < 10_000:
        node = index[node.parent_id]
        seen += 1
    return node


def adapt(group: Group, options: Options | None = None) -> Case:
    """Turn one conversation's spans into a `Case` (see the module docstring).

    Raises `AdapterError` naming the span id when a span's times or
    attributes cannot be decoded, or a messages attribute is not JSON.
    """
    from tracejudge.stages.extract.errors import AdapterError

    opts = options or Options()
    if not isinstance(group, Group):
        fail(f"expected a group of spans, got {type(group).__name__}")
    try:
        return _adapt(group, opts)
    except AdapterError as exc:
        exc.case_id = exc.case_id or group.key
        raise


def _adapt(group: Group, opts: Options) -> Case:
    for span in group.spans:
        if span.problem:
            fail(span.problem, field=f"span {span.span_id}", case_id=group.key)
    index = {s.span_id: s for s in group.spans}
    ops = {s.span_id: _op(s) for s in group.spans}

    # Tool calls: drop wrappers, fold a nested same-name span into its outer call.
    tools: dict[str, _Tool] = {}
    output_ids: set[str] = set()  # call ids the model made to an output function: the answer, not a tool call
    for span in group.spans:
        if ops[span.span_id] != "execute_tool":
            continue
        name = _tool_name(span)
        if name is None or name in _WRAPPER_TOOLS:
            continue
        if _is_output_function(span):
            cid = span.attrs.get("gen_ai.tool.call.id")
            if _present(cid):
                output_ids.add(str(cid))
            continue
        tool = _Tool(span, name, opts)
        outer = _ancestor(span, index, lambda p: p.span_id in tools)
        if outer is not None and tools[outer.span_id].name == name:
            tools[outer.span_id].absorb(tool)
            continue
        tools[span.span_id] = tool
    # Model requests: a model span nested in another is the same request.
    models = [s for s in group.spans if ops[s.span_id] in _MODEL_OPS and _ancestor(s, index, lambda p: ops[p.span_id] in _MODEL_OPS) is None]
    model_ids = {s.span_id for s in models}
    agents = [s for s in group.spans if ops[s.span_id] in _AGENT_OPS]

    # Turns: top-level agent spans, else trace roots.
    def anchor(span: Span) -> Span:
        top = None
        node = _ancestor(span, index, lambda p: ops[p.span_id] in _AGENT_OPS) if ops[span.span_id] not in _AGENT_OPS else span
        while node is not None:
            top = node
            node = _ancestor(node, index, lambda p: ops[p.span_id] in _AGENT_OPS)
        return top or _root(span, index)

    members: dict[str, list[Span]] = {}
    anchors: dict[str, Span] = {}
    for span in [*agents, *models, *(t.span for t in tools.values())]:
        a = anchor(span)
        anchors[a.span_id] = a
        members.setdefault(a.span_id, []).append(span)
    ordered = sorted(anchors.values(), key=lambda s: (s.start, s.span_id))

    # Pair tool_call parts with tool spans.
    all_part_ids: set[str] = set()
    parsed: dict[str, tuple[list[Any], list[Any]]] = {}
    for m in models:
        parsed[m.span_id] = _messages(m)
        for msg in parsed[m.span_id][1]:
            for part in (msg or {}).get("parts") or [] if isinstance(msg, dict) else []:
                if isinstance(part, dict) and part.get("type") == "tool_call" and part.get("id"):
                    all_part_ids.add(str(part["id"]))
    responses: dict[str, Any] = {}
    for m in models:
        for msg in parsed[m.span_id][0]:
            for part in (msg or {}).get("parts") or [] if isinstance(msg, dict) else []:
                if isinstance(part, dict) and part.get("type") == "tool_call_response" and part.get("id") is not None:
                    responses.setdefault(str(part["id"]), part.get("response", part.get("result")))
    tool_list = sorted(tools.values(), key=lambda t: (t.span.start, t.span.span_id))

    def claim(part_id: str | None, name: str, after: int) -> _Tool | None:
        if part_id is not None:
            for t in tool_list:
                if not t.claimed and t.call_id == part_id:
                    return t
        for t in tool_list:
            if not t.claimed and t.name == name and t.span.start >= after and (t.call_id is None or t.call_id not in all_part_ids):
                return t
        return None

    # Build turns → steps → calls.
    turns: list[dict[str, Any]] = []
    steps: list[dict[str, Any]] = []
    deferred: dict[str, list[dict[str, Any]]] = {}  # model span id -> calls it emitted that were deferred, not run
    orphan_deferred: list[dict[str, Any]] = []
    deferred_out: list[dict[str, Any]] = []
    calls_total = 0
    usage_in = usage_out = requests = 0
    for a in ordered:
        mem = members[a.span_id]
        mem_ids = {s.span_id for s in mem}
        turn_models = sorted((s for s in mem if s.span_id in model_ids), key=lambda s: (s.start, s.span_id))
        turn_tools = [t for t in tool_list if t.span.span_id in mem_ids]
        step_rows: list[tuple[Span | None, list[tuple[tuple[int, int], dict[str, Any]]], str | None]] = []
        for m in turn_models:
            entries: list[tuple[tuple[int, int], dict[str, Any]]] = []
            out_msgs = parsed[m.span_id][1]
            output_tools, deferred_tools = _request_tools(m)
            k = 0
            # A call with no span sorts right after the call the model emitted before it, so
            # the model's order survives ([search, delete_account] stays in that order).
            last = m.start
            for msg in out_msgs:
                for part in (msg or {}).get("parts") or [] if isinstance(msg, dict) else []:
                    if not (isinstance(part, dict) and part.get("type") == "tool_call" and isinstance(part.get("name"), str)):
                        continue
                    pid = None if part.get("id") is None else str(part["id"])
                    if (pid is not None and pid in output_ids) or part["name"] in output_tools:
                        continue  # structured output through an output tool or function: the answer, not a call
                    t = claim(pid, part["name"], m.start)
                    if t is not None:
                        t.claimed = True
                        if t.deferral:
                            deferred.setdefault(m.span_id, []).append(_deferred(_call(t, part, responses), t.deferral))
                            continue
                        last = t.span.start
                        entries.append(((last, k), _call(t, part, responses)))
                    elif part["name"] in deferred_tools:
                        deferred.setdefault(m.span_id, []).append(_deferred(_part_call(part, responses), deferred_tools[part["name"]]))
                        continue
                    else:
                        entries.append(((last, k), _part_call(part, responses)))
                    k += 1
            step_rows.append((m, entries, _output_text(out_msgs)))
        for t in turn_tools:
            if t.claimed:
                continue
            t.claimed = True
            if t.deferral:
                orphan_deferred.append(_deferred(_call(t, None, responses), t.deferral))
                continue
            owner = None
            for i, (row_model, _, _) in enumerate(step_rows):
                if row_model is not None and row_model.start <= t.span.start:
                    owner = i
            if owner is None:
                if not step_rows or step_rows[0][0] is not None:
                    step_rows.insert(0, (None, [], None))  # calls made before any model request
                owner = 0
            step_rows[owner][1].append(((t.span.start, 0), _call(t, None, responses)))
        # Merge an anchor into the previous turn when it is the same user exchange.
        user_text = _json_user_text(a) or next((_last_user_text(parsed[m.span_id][0]) for m in turn_models if _last_user_text(parsed[m.span_id][0])), None)
        if turns and turns[-1]["_trace"] == a.trace_id and (user_text is None or user_text == turns[-1]["user_text"]):
            turn = turns[-1]
        else:
            turn = {"_trace": a.trace_id, "user_text": user_text, "_rows": [], "_anchor_final": None, "_agents": set(), "_in": 0, "_out": 0}
            turns.append(turn)
        turn["_rows"].extend(step_rows)
        anchor_out = _anchor_output(a)
        if anchor_out:
            turn["_anchor_final"] = anchor_out
        turn["_agents"].update(str(s.attrs["gen_ai.agent.name"]) for s in mem if ops[s.span_id] == "invoke_agent" and s.attrs.get("gen_ai.agent.name"))
        for m in turn_models:
            turn["_in"] += _usage(m, "gen_ai.usage.input_tokens")
            turn["_out"] += _usage(m, "gen_ai.usage.output_tokens")

    meta_turns = []
    for turn in turns:
        rows = sorted(turn["_rows"], key=lambda r: (r[0].start if r[0] is not None else -1))
        first_step, first_call = len(steps), calls_total
        texts = []
        for m, entries, text in rows:
            calls = [c for _, c in sorted(entries, key=lambda e: e[0])]
            if m is not None:
                deferred_out.extend({**d, "step": len(steps)} for d in deferred.get(m.span_id, []))
            calls_total += len(calls)
            if m is not None:
                requests += 1
            if calls:
                steps.append({"thought": text, "tool_calls": calls})
            else:
                steps.append({"output": text})
            texts.append(text)
        model_texts = [t for (m, _, t) in rows if m is not None]
        if turn["_anchor_final"] is not None:
            final = turn["_anchor_final"]
            inter = [t for t in model_texts if t]
            if inter and inter[-1] == final:
                inter = inter[:-1]
        else:
            final = model_texts[-1] if model_texts else None
            inter = [t for t in model_texts[:-1] if t]
        usage_in += turn["_in"]
        usage_out += turn["_out"]
        meta_turns.append(
            {
                "user_text": turn["user_text"],
                "final_text": final,
                "intermediate_texts": inter,
                "agents": sorted(turn["_agents"]),
                "steps": [first_step, len(steps)],
                "calls": [first_call, calls_total],
                "usage": {"input_tokens": turn["_in"], "output_tokens": turn["_out"], "requests": sum(1 for r in rows if r[0] is not None)},
            }
        )
    user_texts = [t["user_text"] for t in meta_turns]
    case: dict[str, Any] = {
        "id": group.key,
        "input": user_texts[0] if user_texts else None,
        "turns": [t for t in user_texts[1:] if t is not None],
        "tags": ["otel"],
        "metadata": {"otel": {"group_key": group.key_attr or "trace_id", "traces": group.traces, "turns": meta_turns, "deferred": deferred_out + orphan_deferred}},
        "trace": {
            "steps": steps,
            "output": meta_turns[-1]["final_text"] if meta_turns else None,
            "usage": {"input_tokens": usage_in, "output_tokens": usage_out, "requests": requests},
        },
    }
    return build_case(case)


def _json_user_text(span: Span) -> str | None:
    value = span.attrs.get("gen_ai.input.messages")
    msgs = maybe_json(value) if isinstance(value, str) else value
    return _last_user_text(msgs) if isinstance(msgs, list) else None


def _anchor_output(span: Span) -> str | None:
    value = span.attrs.get("gen_ai.output.messages")
    msgs = maybe_json(value) if isinstance(value, str) else value
    if isinstance(msgs, list):
        return _output_text(msgs)
    # pydantic-ai's agent span: the run's output, also when it came through an output tool or function.
    final = span.attrs.get("final_result") if _op(span) == "invoke_agent" else None
    return final if isinstance(final, str) and _present(final) else None


def _part_args(part: dict[str, Any] | None) -> tuple[bool, Any]:
    if part is None or "arguments" not in part or part["arguments"] is None:
        return False, None
    return True, part["arguments"]


def _call(t: _Tool, part: dict[str, Any] | None, responses: dict[str, Any]) -> dict[str, Any]:
    call: dict[str, Any] = {"id": t.call_id or (None if part is None or part.get("id") is None else str(part["id"])), "name": t.name}
    if t.args_key is not None:
        call["arguments"] = t.args
    else:
        has, args = _part_args(part)
        if has:
            call["arguments"] = args
        else:
            call["arguments_missing"] = True
    result = t.result
    if result is None:
        for cid in (t.call_id, None if part is None else part.get("id")):
            if cid is not None and str(cid) in responses:
                result = _result_value(None, responses[str(cid)])
                break
    call["result"] = result
    call["error"] = t.error
    return call


def _deferred(call: dict[str, Any], why: str) -> dict[str, Any]:
    """A call the model asked for that did not run: kept for `metadata.otel.deferred`, not counted as a tool call."""
    out = {"id": call["id"], "name": call["name"], "deferral": why}
    if call.get("arguments_missing"):
        out["arguments_missing"] = True
    else:
        out["arguments"] = maybe_json(call.get("arguments"))
    return out


def _part_call(part: dict[str, Any], responses: dict[str, Any]) -> dict[str, Any]:
    pid = None if part.get("id") is None else str(part["id"])
    call: dict[str, Any] = {"id": pid, "name": part["name"]}
    has, args = _part_args(part)
    if has:
        call["arguments"] = args
    else:
        call["arguments_missing"] = True
    call["result"] = _result_value(None, responses[pid]) if pid is not None and pid in responses else None
    return call


def turn_calls(case: Case) -> list[list[Any]]:
    """The tool calls of each turn of an `otel` case, using `metadata.otel.turns[].calls`."""
    calls = case.trace.tool_calls() if case.trace else []
    return [calls[a:b] for a, b in (t["calls"] for t in case.metadata["otel"]["turns"])]


register_format(Format("otel", read=read, adapt=adapt, prepare=lambda ds: Options.model_validate(ds.options), options=Options, reads_dirs=True))
