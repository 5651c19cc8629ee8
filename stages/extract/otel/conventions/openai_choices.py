"""A chat completion's choices and refusal, as the OpenAI instrumentations record a plain client's request.

- A request asking for `n` > 1 completions gets that many choices, and both instrumentations write one output
  message per choice (OpenInference's `llm.output_messages.{i}`; the GenAI `gen_ai.output.messages` OpenLLMetry
  writes on its `openai.chat` span, beside one `gen_ai.response.finish_reasons` entry per choice). They are
  alternatives, not one reply in parts: the application went on with one of them, `choices[0]` as every loop
  reading `response.choices[0].message` does, so the step's output is that choice alone (the other choices' calls
  were never run, their text never said). A Responses API reply's output messages (OpenLLMetry's Agents SDK
  instrumentation writes each of its items as one) are one reply and stay whole.
- A refusal (`message.refusal`, its `content` null) is what the model answered: OpenLLMetry writes it as a part
  of type `refusal`, OpenInference flattens nothing of it (only `output.value`, the completion, holds it). It is
  read as the message's text, as format `openai-messages` reads a message's `refusal`.
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import unjson

__all__ = ["genai_choice", "oi_choice"]


def oi_choice(outputs: list[dict[str, Any]] | None, raw_output: Any, invocation: Any) -> list[dict[str, Any]] | None:
    """OpenInference's output messages of a chat completion: the first choice's only when there were several (the
    completion in `output.value` says how many, else `n` in `llm.invocation_parameters`), a refusal as its text."""
    if not outputs:
        return outputs
    body = unjson(raw_output)
    choices = body.get("choices") if isinstance(body, dict) else None  # (a streamed request's: the chunks joined, as one)
    choices = choices if isinstance(choices, list) and all(isinstance(c, dict) for c in choices) else None
    params = unjson(invocation)
    n = len(choices) if choices is not None else params.get("n") if isinstance(params, dict) else None
    if isinstance(n, int) and not isinstance(n, bool) and n > 1 and len(outputs) == n:
        outputs = outputs[:1]
    message = choices[0].get("message") if choices else None
    refusal = message.get("refusal") if isinstance(message, dict) else None
    if isinstance(refusal, str) and refusal and len(outputs) == 1 and not _said(outputs[0]):
        outputs[0]["parts"] = [*(outputs[0].get("parts") or []), {"type": "text", "content": refusal}]
    return outputs


def genai_choice(outputs: list[dict[str, Any]], span: Span) -> list[dict[str, Any]]:
    """GenAI output messages of a request: the first only when each is a choice of a chat completion (as many
    finish reasons as messages, more than one), a `refusal` part as a text part.

    Only a Chat Completions request has choices: OpenLLMetry's `openai.chat` span, or a response id of the API's
    `chatcmpl-…`. A Responses API reply never has several, and OpenLLMetry's Agents SDK instrumentation writes its
    items as messages of their own, each with its finish reason (`stop` for a text, `tool_call` for a call): one reply.
    """
    reasons, rid = span.attrs.get("gen_ai.response.finish_reasons"), span.attrs.get("gen_ai.response.id")
    chat = span.name == "openai.chat" or (isinstance(rid, str) and rid.startswith("chatcmpl"))
    if chat and len(outputs) > 1 and isinstance(reasons, list) and len(reasons) == len(outputs):
        outputs = outputs[:1]
    for msg in outputs:
        parts = msg.get("parts")
        if isinstance(parts, list) and any(isinstance(p, dict) and p.get("type") == "refusal" for p in parts):
            msg["parts"] = [{"type": "text", "content": p.get("content")} if isinstance(p, dict) and p.get("type") == "refusal"
                            and isinstance(p.get("content"), str) else p for p in parts]
    return outputs


def _said(message: dict[str, Any]) -> bool:
    """Whether a normalised output message holds any text or call (a refusal's message holds neither)."""
    return any(isinstance(p, dict) and p.get("type") in ("text", "tool_call") for p in message.get("parts") or [])
