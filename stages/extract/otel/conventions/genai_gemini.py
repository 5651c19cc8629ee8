"""What OTel's google-genai instrumentation writes into `gen_ai.input.messages` / `gen_ai.output.messages` that is not
the conversation: call ids it made up, and a streamed reply written one message a chunk.

opentelemetry-instrumentation-google-genai (1.x, through opentelemetry-util-genai; `message._to_part`) gives a
`function_call` or `function_response` part without an id (the Gemini API gives none) the id `<name>_<index>`, or
`<index>` without a name, its index the part's position in its `Content`. A call and the response that answers it
then have unrelated ids: the calls of a reply `Checking both cities.` + two calls are `get_weather_1` and
`get_weather_2`, their responses, the only parts of theirs, `get_weather_0` and `get_weather_1`, so reading ids as
ids pairs Paris's call with Tokyo's result. Such an id is no id: dropped, the response keeps the name it carries, and
results pair with calls by order and name as for any recording without ids (`call_results`).

For `generate_content_stream` it writes every chunk's candidate as an output message of its own, `finish_reason` ""
on all but the last (the API's chunk carries none until then): the pieces of one reply, joined here into one message
(adjacent text pieces into one text), not alternatives of a request for several choices.

Both only on a span whose `gen_ai.provider.name` (or `gen_ai.system`) is Gemini's or Vertex AI's, as the
instrumentation names them; `tests/data/google-genai` holds its recordings. OTel's vertexai instrumentation (2.x, with
`OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`) makes up ids the same way but names no provider at all
(2.2b0): a span of its scope, `opentelemetry.instrumentation.vertexai`, is a Vertex AI request whatever it names
(`tests/data/vertexai`).

A function response `{"error": X}` (no `output`) is the Gemini API's failed call ("Use 'output' key to specify function
output and 'error' key to specify error details", `FunctionResponse.response`): google-genai's automatic function
calling sends a function that raised so (`_extra_utils.get_function_response_parts`). It is a failed result, X its
text, on OpenInference's Gemini spans (`llm.provider` `google`) too: `gemini_failures`.
"""

from __future__ import annotations

import re
from typing import Any

from tracejudge.stages.extract.common import maybe_json
from tracejudge.stages.extract.otel.spans import Span

__all__ = ["gemini_failures", "gemini_messages", "is_gemini"]

_PROVIDERS = frozenset({"gemini", "vertex_ai", "gcp.gemini", "gcp.vertex_ai", "gcp.gen_ai", "google"})
_VERTEX_SCOPES = frozenset({"opentelemetry.instrumentation.vertexai"})  # only Gemini is served through them
_MADE_UP = re.compile(r"(?:(?P<name>.+)_)?(?P<index>\d+)")


def is_gemini(span: Span) -> bool:
    """Whether `span` says it is a request to Gemini or Vertex AI (`gen_ai.provider.name`, else `gen_ai.system`, else
    OpenInference's `llm.provider`), or comes from a Vertex AI instrumentation's scope that names no provider."""
    if span.scope in _VERTEX_SCOPES:
        return True
    provider = span.attrs.get("gen_ai.provider.name") or span.attrs.get("gen_ai.system") or span.attrs.get("llm.provider")
    return isinstance(provider, str) and provider.lower() in _PROVIDERS


def gemini_messages(span: Span, inputs: Any, outputs: Any) -> tuple[Any, Any]:
    """`(inputs, outputs)` as recorded (message lists before normalising, or anything else, returned as it is) with the
    made-up call ids dropped and a streamed reply's chunk messages joined, on a Gemini span; unchanged on any other."""
    if not is_gemini(span):
        return inputs, outputs
    return gemini_failures(_without_made_up_ids(inputs)), _joined_chunks(_without_made_up_ids(outputs))  # ids by each chunk's positions


def gemini_failures(messages: Any) -> Any:
    """`messages` (GenAI parts form; anything else returned as it is) with each function response `{"error": X}` a failed
    result (module docstring): `is_error`, its response X when it says nothing else."""
    if not isinstance(messages, list):
        return messages
    return [{**m, "parts": [_failure(p) for p in m["parts"]]} if isinstance(m, dict) and isinstance(m.get("parts"), list) else m
            for m in messages]


def _failure(part: Any) -> Any:
    if not isinstance(part, dict) or part.get("type") != "tool_call_response":
        return part
    response = maybe_json(part.get("response")) if isinstance(part.get("response"), str) else part.get("response")
    if not isinstance(response, dict) or "error" not in response or "output" in response:
        return part
    return {**part, "response": response["error"] if set(response) == {"error"} else response, "is_error": True}


def _without_made_up_ids(messages: Any) -> Any:
    if not isinstance(messages, list):
        return messages
    return [{**m, "parts": [_part(p, i) for i, p in enumerate(m["parts"])]}
            if isinstance(m, dict) and isinstance(m.get("parts"), list) else m for m in messages]


def _part(part: Any, position: int) -> Any:
    """`part` without its id when the instrumentation made it up (its index is at least the part's position: parts
    it could not write are left out, so a recorded position is never past the index it counted)."""
    if not isinstance(part, dict) or part.get("type") not in ("tool_call", "tool_call_response") or not isinstance(part.get("id"), str):
        return part
    made = _MADE_UP.fullmatch(part["id"])
    if made is None or int(made["index"]) < position:
        return part
    if part["type"] == "tool_call":
        return {**part, "id": None} if made["name"] == part.get("name") else part
    return {**part, "id": None, "name": part.get("name") or made["name"]}


def _joined_chunks(outputs: Any) -> Any:
    """One message for the chunk messages of a streamed reply: more than one output message, each but the last with
    the finish reason "" (a reply of several choices says one for each)."""
    if not isinstance(outputs, list) or len(outputs) < 2 or not all(isinstance(m, dict) and isinstance(m.get("parts"), list) for m in outputs):
        return outputs
    if any(m.get("finish_reason") != "" for m in outputs[:-1]):
        return outputs
    parts: list[Any] = []
    for m in outputs:
        for p in m["parts"]:
            if _is_text(p) and parts and _is_text(parts[-1]):
                parts[-1] = {**parts[-1], "content": parts[-1]["content"] + p["content"]}
            else:
                parts.append(p)
    return [{**outputs[-1], "parts": parts}]


def _is_text(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("content"), str)
