"""Format `langfuse`: traces as Langfuse's public API returns them (`GET /api/public/traces/{id}`).

Framing: JSONL, one trace with its observations per line (the API's
`TraceWithFullDetails`: `id`, `name`, `input`, `output`, `sessionId`,
`userId`, `tags`, `metadata`, `latency`, `totalCost`, `observations: [...]`).
Field names are those of the API (camelCase), as the `langfuse` SDK's
`langfuse.api` models read them. A line may instead hold one page of the v2
observations API for one trace (`GET /api/public/v2/observations?traceId=…`:
`{"data": [...], "meta": {...}}`); the trace's fields then come from its root
observation.

What counts, by observation `type` and `parentObservationId`:

- `GENERATION` is a model request, one step: its `input` (a message list
  or `{"messages": [...]}`) gives the user's turns, its `output` (an
  assistant message, Chat Completions or Responses shape) the text and
  the tool calls asked for; tokens from `usageDetails` (`input`,
  `output`), else `usage`; a generation nested in another is the same
  request;
- `TOOL` is a tool call, and so is a `SPAN` named like a tool the model
  asked for: it pairs with the model's tool-call part by id
  (`metadata.tool_call_id` when recorded), else by name in order; the
  arguments come from the model's part when there is one (else the
  observation's `input`), the result from its `output`, and `level: ERROR`
  makes it a failed call with `statusMessage` as the error;
- `RETRIEVER` outputs (documents) are `trace.retrieved`;
- `AGENT`, `CHAIN`, `EVENT`, other `SPAN`s are structure; one at level
  `ERROR` that is not a call is listed in `metadata.langfuse.errors`.

The trace's `input` / `output` are the case's (a message list gives its
first user text / the assistant text); without them the root `AGENT`'s, else
the first user message and the last model text. An input that is not text
(a mapping of arguments) gives way to the first user message, when there is one. `sessionId`, `userId`,
`name`, `release`, `environment` and `metadata` go to `metadata.langfuse`,
`tags` to the case's tags. Usage: `totalCost` (else the observations'
`costDetails.total`) is `cost_usd`, `latency` (seconds) the latency.
"""

from __future__ import annotations

import json
from typing import Any

from tracejudge.core.records import Case
from tracejudge.core.registry import Format, NoOptions, register_format
from tracejudge.stages.extract.common import build_case, decode_line, fail, maybe_json, read_lines
from tracejudge.stages.extract.span_steps import Node, assemble, count, input_messages, model_output, passages, timestamp, user_texts

__all__ = ["adapt"]

_META_KEYS = ("name", "sessionId", "userId", "release", "version", "environment", "metadata")


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _tokens(obs: dict[str, Any]) -> tuple[int | None, int | None]:
    """Input and output tokens of a generation: `usageDetails`, else the older `usage`, else `promptTokens`/`completionTokens`."""
    for key in ("usageDetails", "usage"):
        usage = obs.get(key)
        if isinstance(usage, dict):
            ins = count(usage, "input", "prompt_tokens", "input_tokens")
            outs = count(usage, "output", "completion_tokens", "output_tokens")
            if ins is not None or outs is not None:
                return ins, outs
    return count(obs, "promptTokens"), count(obs, "completionTokens")


def _as_text(value: Any) -> Any:
    """A trace/agent input or output as the case keeps it: text when it is a message list or a message."""
    value = maybe_json(value)
    if isinstance(value, (list, dict)):
        said = user_texts(input_messages(value))
        if said:
            return said[0]
        text, _ = model_output(value)
        if text is not None:
            return text
    return value


def _error(obs: dict[str, Any]) -> str | None:
    if obs.get("level") != "ERROR":
        return None
    return str(obs.get("statusMessage") or "error")


def _from_observations(data: list[Any], default_id: str) -> dict[str, Any]:
    """A trace record from one page of the v2 observations API (`{"data": [...], "meta": ...}`) of one trace.

    The trace-level fields come from the root observation (`isRootObservation`,
    else the one without a parent). Raises `AdapterError` when the page mixes traces.
    """
    obs = [o for o in data if isinstance(o, dict)]
    traces = {str(o["traceId"]) for o in obs if isinstance(o.get("traceId"), (str, int))}
    if len(traces) > 1:
        fail(f"a page of observations holds {len(traces)} traces; fetch one trace per line (traceId=...)", field="data", case_id=default_id)
    root = next((o for o in obs if o.get("isRootObservation")), next((o for o in obs if not o.get("parentObservationId")), {}))
    record = {"id": next(iter(traces), None) or default_id, "name": root.get("traceName") or root.get("name"), "observations": data,
              "sessionId": root.get("sessionId"), "userId": root.get("userId"), "environment": root.get("environment"), "tags": root.get("tags"),
              "latency": root.get("latency")}
    return {k: v for k, v in record.items() if v is not None}


def _arguments(value: Any) -> Any:
    """A tool observation's input: the `@observe` decorator's `{"args": [], "kwargs": {...}}` is its keyword arguments."""
    value = maybe_json(value)
    if isinstance(value, dict) and set(value) == {"args", "kwargs"} and not value["args"] and isinstance(value["kwargs"], dict):
        return value["kwargs"]
    return value


def adapt(payload: Any, options: Any = None) -> Case:
    """Turn one API trace (with `observations`) into a `Case` (see the module docstring).

    Raises `AdapterError` naming the field (`observations[2].type`) for an
    observation without id or type.
    """
    record, default_id = decode_line(payload)
    if "observations" not in record and isinstance(record.get("data"), list):
        record = _from_observations(record["data"], default_id)
    cid = str(record.get("id") or default_id)
    observations = record.get("observations")
    if not isinstance(observations, list):
        fail("observations: required list of observations is missing (fetch the trace with GET /api/public/traces/{id})",
             field="observations", case_id=cid)
    for i, obs in enumerate(observations):
        if not isinstance(obs, dict) or not isinstance(obs.get("type"), str) or obs.get("id") is None:
            fail("expected an observation with `id` and `type`", field=f"observations[{i}].type", case_id=cid)
    asked = {p["name"] for o in observations if o["type"] == "GENERATION" for p in model_output(o.get("output"))[1]}
    nodes, retrieved, errors, costs = [], [], [], []
    agents = [o for o in observations if o["type"] == "AGENT"]
    root_agent = next((o for o in agents if not o.get("parentObservationId")), agents[0] if agents else None)
    for i, obs in enumerate(observations):
        kind, name = obs["type"], obs.get("name")
        node = Node(id=str(obs["id"]), parent=obs.get("parentObservationId"), start=timestamp(obs.get("startTime")), kind="other", name=name)
        if kind == "GENERATION":
            node.kind = "model"
            node.text, node.parts = model_output(obs.get("output"))
            node.messages = input_messages(obs.get("input"))
            node.input_tokens, node.output_tokens = _tokens(obs)
        elif kind == "TOOL" or (kind == "SPAN" and name in asked):
            meta = obs.get("metadata") if isinstance(obs.get("metadata"), dict) else {}
            node.kind, node.arguments, node.result, node.error = "tool", _arguments(obs.get("input")), obs.get("output"), _error(obs)
            node.call_id = None if meta.get("tool_call_id") is None else str(meta["tool_call_id"])
            if not name:
                fail("a tool observation has no name", field=f"observations[{i}].name", case_id=cid)
        elif kind == "RETRIEVER":
            retrieved += passages(obs.get("output"))
        if node.kind != "tool" and _error(obs):
            errors.append({"observation": node.id, "type": kind, "name": name, "error": _error(obs)})
        cost = obs.get("costDetails") if isinstance(obs.get("costDetails"), dict) else {}
        costs.append(next((c for c in (_number(cost.get("total")), _number(obs.get("totalCost")), _number(obs.get("calculatedTotalCost"))) if c is not None), None))
        nodes.append(node)
    built = assemble(nodes)
    built["retrieved"] = retrieved
    said = [m["content"] for m in built["user_messages"]]
    value = record.get("input") if record.get("input") is not None else (root_agent or {}).get("input")
    case_input = _as_text(value) if value is not None else None
    if not isinstance(case_input, str) and said:  # a structured input: the user's own words are the input
        case_input = said[0]
    answer = record.get("output") if record.get("output") is not None else (root_agent or {}).get("output")
    if answer is not None:
        text = _as_text(answer)
        built["output"] = text if isinstance(text, str) else json.dumps(text, default=str)
    if not built["user_messages"] and isinstance(case_input, str):
        built["user_messages"] = [{"step": 0, "content": case_input}]
    usage = built["usage"]
    total = _number(record.get("totalCost"))
    known = [c for c in costs if c is not None]
    if total is not None or known:
        usage["cost_usd"] = total if total is not None else sum(known)
    if _number(record.get("latency")) is not None:
        usage["latency_s"] = _number(record["latency"])
    info = {k: record[k] for k in _META_KEYS if record.get(k) is not None}
    if errors:
        info["errors"] = errors
    tags = [t for t in record.get("tags") or [] if isinstance(t, str)] if isinstance(record.get("tags"), list) else []
    return build_case({"id": cid, "input": case_input, "turns": said[1:], "tags": tags, "metadata": {"langfuse": info}, "trace": built})


register_format(Format("langfuse", read=read_lines, adapt=adapt, options=NoOptions))
