"""What Langfuse's server reads of one OTLP span its SDK exported (`tests/frameworks/langfuse_api.py` builds the API's JSON from it).

Each rule names the function of langfuse/langfuse's `packages/shared/src/server/otel/OtelIngestionProcessor.ts` (or of
`packages/shared/src/server/ingestion/types.ts`, `worker/src/services/IngestionService/index.ts`) it follows; see
`langfuse_api.py` for what the API makes of it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from common import any_value

__all__ = ["PROJECT", "Span", "decoded", "iso", "js", "metadata_of", "ms", "read_spans", "reduced", "strict_json", "text_or_json", "truthy"]

PROJECT = "recording-project"
_OBS = "langfuse.observation."
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_LEVELS = {"DEBUG": "DEBUG", "TRACE": "DEBUG", "VERBOSE": "DEBUG", "DEFAULT": "DEFAULT", "INFO": "DEFAULT", "LOG": "DEFAULT",
           "NOTICE": "DEFAULT", "OK": "DEFAULT", "SUCCESS": "DEFAULT", "WARNING": "WARNING", "WARN": "WARNING", "ERROR": "ERROR",
           "FATAL": "ERROR", "CRITICAL": "ERROR"}
_TYPES = ("span", "generation", "event", "embedding", "agent", "tool", "chain", "retriever", "guardrail", "evaluator")
_MODEL_KEYS = ("langfuse.observation.model.name", "gen_ai.response.model", "ai.model.id", "gen_ai.request.model", "llm.response.model",
               "llm.model_name", "model")  # `extractModelName`
_MODEL_TYPED = ("langfuse.observation.model.name", "gen_ai.request.model", "gen_ai.response.model", "llm.model_name", "model")  # "ModelBased"
_TAG_KEYS = ("langfuse.trace.tags", "langfuse.tags", "langfuse.observation.metadata.langfuse_tags", "langfuse.trace.metadata.langfuse_tags",
             "ai.telemetry.metadata.tags", "tag.tags")
# `extractInputAndOutput`: attributes an observation's `metadata.attributes` leaves out (its input and output elsewhere)
_IO_KEYS = frozenset({
    "langfuse.trace.input", "langfuse.trace.output", "langfuse.observation.input", "langfuse.observation.output", "ai.prompt.messages",
    "ai.prompt", "ai.toolCall.args", "ai.response.text", "ai.result.text", "ai.toolCall.result", "ai.response.object", "ai.result.object",
    "ai.response.toolCalls", "ai.result.toolCalls", "gcp.vertex.agent.llm_request", "gcp.vertex.agent.llm_response",
    "gcp.vertex.agent.tool_call_args", "gcp.vertex.agent.tool_response", "prompt", "all_messages_events", "events", "lk.input_text",
    "lk.user_transcript", "lk.chat_ctx", "lk.user_input", "lk.function_tool.output", "lk.response.text", "mlflow.spanInputs",
    "mlflow.spanOutputs", "traceloop.entity.input", "traceloop.entity.output", "input.value", "output.value", "final_result",
    "pydantic_ai.all_messages", "gen_ai.system_instructions", "input", "output", "gen_ai.input.messages", "gen_ai.output.messages",
    "gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "genkit:input", "genkit:output", "flue.turn.input", "flue.turn.output",
    "flue.tool.arguments", "flue.tool.result", "flue.task.prompt", "flue.task.result", "flue.operation.result", "flue.workflow.payload",
    "flue.workflow.result"})
_IO_PREFIXES = ("gen_ai.prompt", "gen_ai.completion", "llm.input_messages", "llm.output_messages", "langfuse.trace.metadata",
                "langfuse.observation.metadata", "ai.telemetry.metadata")
# `hasTraceUpdates`: a span with any of these (or a `langfuse.trace.metadata…` key) updates its trace
_TRACE_KEYS = ("langfuse.trace.name", "langfuse.trace.input", "langfuse.trace.output", "langfuse.trace.metadata", "user.id", "session.id",
               "langfuse.trace.public", "langfuse.trace.tags", "langfuse.user.id", "langfuse.session.id",
               "langfuse.observation.metadata.langfuse_user_id", "langfuse.observation.metadata.langfuse_session_id",
               "langfuse.observation.metadata.langfuse_tags", "langfuse.trace.metadata.langfuse_session_id",
               "langfuse.trace.metadata.langfuse_user_id", "langfuse.trace.metadata.langfuse_tags", "ai.telemetry.metadata.sessionId",
               "ai.telemetry.metadata.userId", "ai.telemetry.metadata.tags", "tag.tags")


def js(value: Any) -> str:
    """`JSON.stringify`."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _no_constant(name: str) -> Any:
    raise ValueError(name)  # `JSON.parse` knows no NaN or Infinity


def strict_json(text: str) -> Any:
    """`JSON.parse`: raises ValueError for text that is no JSON."""
    return json.loads(text, parse_constant=_no_constant)


def decoded(value: Any) -> Any:
    """`parseJsonPrioritised` of a stored text: its JSON value, else the text."""
    if not isinstance(value, str):
        return value
    try:
        return strict_json(value)
    except ValueError:
        return value


def _json_object(raw: Any) -> dict[str, Any] | None:
    """`parseJsonObjectAttribute`: the JSON object an attribute holds; `{}` for a value that is no object, None (look
    elsewhere) for none or text that is no JSON."""
    if not truthy(raw):
        return None
    if not isinstance(raw, str):
        return {}
    try:
        parsed = strict_json(raw)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else {}


def iso(ns: int | None) -> str | None:
    """The millisecond (floor) of `ns` as JavaScript's `toISOString` writes it."""
    return None if ns is None else (_EPOCH + timedelta(milliseconds=ns // 1_000_000)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def ms(ns: int) -> int:
    return ns // 1_000_000


def text_or_json(value: Any) -> str:
    return value if isinstance(value, str) else js(value)


def metadata_of(attrs: dict[str, Any], domain: str) -> dict[str, Any]:
    """`extractMetadata`: a whole `langfuse.<domain>.metadata` JSON object, then the `langfuse.<domain>.metadata.<key>` (and
    `langfuse.metadata.`, `ai.telemetry.metadata.`) attributes as `<key>`, their values as sent."""
    prefix = f"langfuse.{domain}.metadata"
    whole = decoded(attrs.get(prefix) or attrs.get("langfuse.metadata"))
    out = dict(whole) if isinstance(whole, dict) else {}
    skipped = ("ai.telemetry.metadata.userId", "ai.telemetry.metadata.sessionId", "ai.telemetry.metadata.tags",
               "ai.telemetry.metadata.langfusePrompt")
    for key, value in attrs.items():
        for p in (prefix, "langfuse.metadata", "ai.telemetry.metadata"):
            if key.startswith(p + ".") and key not in skipped and key[len(p) + 1:]:
                out[key[len(p) + 1:]] = value
    return out


def truthy(value: Any) -> bool:
    return value not in (None, "", 0, False)


@dataclass
class Span:
    """One exported span (`doc`: the export it came in) with what the server reads of it."""

    doc: int
    resource: dict[str, Any]
    scope: dict[str, Any]
    span: dict[str, Any]
    attrs: dict[str, Any] = field(init=False)
    start: int = field(init=False)
    end: int = field(init=False)

    def __post_init__(self) -> None:
        self.attrs = {a["key"]: any_value(a.get("value", {})) for a in self.span.get("attributes", [])}
        self.start, self.end = int(self.span["startTimeUnixNano"]), int(self.span["endTimeUnixNano"])
        self.id, self.trace, self.parent = self.span["spanId"], self.span["traceId"], self.span.get("parentSpanId") or None

    def first(self, *keys: str) -> Any:
        """The value of the first of `keys` set to a truthy value (as `attributes[key] ? … :` reads it)."""
        got = next((self.attrs[k] for k in keys if truthy(self.attrs.get(k))), None)
        return None if got is None else text_or_json(got)

    def either(self, key: str, resource_key: str) -> Any:
        got = self.attrs.get(key)
        return got if got is not None else self.resource.get(resource_key)

    @property
    def sdk(self) -> bool:
        return str(self.scope.get("name") or "").startswith("langfuse-sdk")

    @property
    def root(self) -> bool:
        return self.parent is None or str(self.attrs.get("langfuse.internal.as_root")).lower() == "true"

    def meta(self) -> dict[str, Any]:
        """`attributes` (another instrumentation's span), `resourceAttributes`, `scope`, as both tables keep them."""
        filtered = {k: text_or_json(v) for k, v in self.attrs.items() if k not in _IO_KEYS and not k.startswith(_IO_PREFIXES)}
        scope = {**self.scope, "attributes": {a["key"]: any_value(a.get("value", {})) for a in self.scope.get("attributes", [])}}
        return {**({} if self.sdk else {"attributes": filtered}), "resourceAttributes": self.resource, "scope": scope}

    def environment(self) -> str:
        for key in ("langfuse.environment", "deployment.environment.name", "deployment.environment"):
            for source in (self.attrs, self.resource):
                if truthy(source.get(key)):
                    return str(source[key]).lower()
        return "default"

    def name(self) -> str:
        tool = self.attrs.get("gen_ai.tool.name")
        return text_or_json(tool) if truthy(tool) else self.span["name"]

    def kind(self) -> str:
        """`ObservationTypeMapperRegistry`: `langfuse.observation.type`, else GENERATION when a model is named, else SPAN."""
        declared = self.attrs.get(_OBS + "type")
        if declared in _TYPES:
            return str(declared).upper()
        return "GENERATION" if any(truthy(self.attrs.get(k)) for k in _MODEL_TYPED) else "SPAN"

    def level(self) -> str:
        declared = self.attrs.get(_OBS + "level")
        if isinstance(declared, str) and declared.strip().upper() in _LEVELS:
            return _LEVELS[declared.strip().upper()]
        return "ERROR" if self.span.get("status", {}).get("code") in (2, "STATUS_CODE_ERROR") else "DEFAULT"

    def status_message(self) -> str | None:
        got = self.attrs.get(_OBS + "status_message")
        return got if got is not None else self.span.get("status", {}).get("message")

    def user(self) -> str | None:
        return self.first("langfuse.user.id", "user.id", "langfuse.observation.metadata.langfuse_user_id",
                          "langfuse.trace.metadata.langfuse_user_id", "ai.telemetry.metadata.userId")

    def session(self) -> str | None:
        return self.first("langfuse.session.id", "session.id", "gen_ai.conversation.id", "langfuse.observation.metadata.langfuse_session_id",
                          "langfuse.trace.metadata.langfuse_session_id", "ai.telemetry.metadata.sessionId")

    def tags(self) -> list[str]:
        """`extractTags`: a list, JSON text of one, comma-separated text, or one tag."""
        value = next((self.attrs[k] for k in _TAG_KEYS if truthy(self.attrs.get(k))), None)
        if isinstance(value, str) and value.strip().startswith("["):
            value = decoded(value)
        if isinstance(value, list):
            return [t if isinstance(t, str) else js(t) for t in value]
        if isinstance(value, str):
            return [t.strip() for t in value.split(",")] if "," in value else [value]
        return []

    def public(self) -> bool | None:
        value = self.attrs.get("langfuse.trace.public", self.attrs.get("langfuse.public"))
        return None if value is None else value in (True, "true")

    def trace_updates(self) -> bool:
        return any(truthy(self.attrs.get(k)) for k in _TRACE_KEYS) or any(k.startswith("langfuse.trace.metadata") for k in self.attrs)

    def io(self, trace: bool = False) -> tuple[Any, Any]:
        """`extractInputAndOutput` for the SDK's attributes: the texts as sent (a trace's own `langfuse.trace.*` first)."""
        pair = []
        for what in ("input", "output"):
            own = self.attrs.get(f"langfuse.trace.{what}") if trace else None
            pair.append(own if truthy(own) else self.attrs.get(_OBS + what))
        return pair[0], pair[1]

    def model(self) -> str | None:
        return self.first(*_MODEL_KEYS)

    def model_parameters(self) -> Any:
        """`extractModelParameters`: the SDK's JSON object, else OpenInference's or `model_config`, else the request's attributes."""
        for key in (_OBS + "model.parameters", "llm.invocation_parameters", "model_config"):
            if truthy(self.attrs.get(key)):
                try:
                    return _sanitized(strict_json(str(self.attrs[key])))
                except ValueError:
                    pass
        picked = {}
        for prefix in ("gen_ai.request.", "llm.invocation_parameters."):
            picked.update({k[len(prefix):]: v for k, v in self.attrs.items() if k.startswith(prefix) and k[len(prefix):] != "model"})
        return _sanitized(picked)

    def completion_start(self) -> int | None:
        """`extractCompletionStartTime` (the SDK writes it JSON-quoted) as the table keeps it: ns of its millisecond."""
        raw = self.attrs.get(_OBS + "completion_start_time")
        for value in (raw, decoded(raw)):  # (older SDKs wrote it JSON-quoted)
            if not isinstance(value, str):
                continue
            try:
                when = datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                continue
            when = when if when.tzinfo else when.replace(tzinfo=timezone.utc)
            return (when - _EPOCH) // timedelta(milliseconds=1) * 1_000_000
        return None

    def usage(self) -> dict[str, int]:
        """`extractUsageDetails` through `UsageDetails`, then `getUsageUnits` (`total` the sum when not given)."""
        got = _usage_details(_json_object(self.attrs.get(_OBS + "usage_details")) or {})
        if got and "total" not in got:
            got["total"] = sum(got.values())
        return got

    def costs(self) -> dict[str, float]:
        """`extractCostDetails` through `CostDetails`, then `calculateUsageCosts` for costs the SDK gave (Langfuse's prices: none here)."""
        parsed = _json_object(self.attrs.get(_OBS + "cost_details"))
        if parsed is None:
            other = next((self.attrs[k] for k in ("gen_ai.usage.cost", "llm.cost.total") if self.attrs.get(k) not in (None, "")), None)
            parsed = {"total": other} if other is not None else {}
        given = {k: v for k, v in parsed.items() if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0}
        if given and "total" not in given and set(given) <= {"input", "output"}:
            given["total"] = given.get("input", 0) + given.get("output", 0)
        return given


def _sanitized(params: Any) -> Any:
    """`sanitizeModelParams`: text and numbers kept, other values as JSON text."""
    if isinstance(params, list):
        params = {str(i): v for i, v in enumerate(params)}
    if not isinstance(params, dict):
        return params
    return {k: v if isinstance(v, str) or (isinstance(v, (int, float)) and not isinstance(v, bool)) else js(v) for k, v in params.items()}


def _whole(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return int(value)
    match = re.match(r"\s*([+-]?\d+)", value) if isinstance(value, str) else None
    return int(match.group(1)) if match else None


def _usage_details(usage: dict[str, Any]) -> dict[str, int]:
    """`UsageDetails`: OpenAI's chat or responses usage renamed (each detail split off its side), else the whole counts given."""
    for ins, outs, details in (("prompt_tokens", "completion_tokens", ("prompt_tokens_details", "completion_tokens_details")),
                               ("input_tokens", "output_tokens", ("input_tokens_details", "output_tokens_details"))):
        names = {ins, outs, "total_tokens"}
        if set(usage) <= names | set(details) and all(_whole(usage.get(k)) is not None and not isinstance(usage.get(k), str)
                                                     and usage[k] >= 0 for k in names):
            got = {"input": int(usage[ins]), "output": int(usage[outs]), "total": int(usage["total_tokens"])}
            for side, key in zip(("input", "output"), details):
                for name, value in (usage.get(key) or {}).items():
                    if value is not None:
                        got[f"{side}_{name}"] = value
                        got[side] = max(got[side] - value, 0)
            return got
    return {k: n for k, v in usage.items() if (n := _whole(v)) is not None and n >= 0}


def reduced(details: dict[str, Any]) -> tuple[Any, Any, Any]:
    """`reduceUsageOrCostDetails`: the sums of the keys naming input and output (None: no such key), and `total` (else 0)."""
    ins = [v for k, v in details.items() if "input" in k]
    outs = [v for k, v in details.items() if "output" in k]
    return (sum(ins) if ins else None), (sum(outs) if outs else None), details.get("total", 0)


def read_spans(docs: list[dict[str, Any]]) -> list[Span]:
    """Every span of the OTLP/JSON exports `docs`, in order, with the number of the export it came in."""
    return [Span(i, {a["key"]: any_value(a.get("value", {})) for a in rs.get("resource", {}).get("attributes", [])}, ss.get("scope", {}), span)
            for i, doc in enumerate(docs) for rs in doc.get("resourceSpans", []) for ss in rs.get("scopeSpans", []) for span in ss.get("spans", [])]
