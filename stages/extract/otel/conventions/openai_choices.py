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
- An empty answer (`content: ""`): OpenInference flattens no empty content, so its output message holds a role alone,
  as a refusal's does; `output.value` says `""` (a stream's joined chunks: a message with no text, refusal or call
  that finished). It is read as the text `""`, the answer the application got, as OpenLLMetry's empty text part reads.
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import unjson

__all__ = ["chat_reasoning", "genai_choice", "oi_choice"]


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
    elif len(outputs) == 1 and not _said(outputs[0]) and _empty_answer(body, choices[0] if choices else None):
        # (the flattening drops an empty content: the application got "", an empty answer, not none)
        outputs[0]["parts"] = [*(outputs[0].get("parts") or []), {"type": "text", "content": ""}]
    return outputs


def chat_reasoning(outputs: list[dict[str, Any]], raw: Any) -> None:
    """Add to `outputs` (OpenInference's output messages of a chat completion) the reasoning its first choice's message
    carried (`reasoning_content`, or `reasoning`: what llama.cpp's, vLLM's and DeepSeek's reasoning parsers return), which
    only the completion in `output.value` (`raw`) recorded; in place.

    The instrumentation flattens a message's content and tool calls only. Outputs that already hold a reasoning part keep
    theirs. The reasoning is the step's thought (`otel.turns`), never its output. It goes to the first choice's message:
    with `n` > 1, one output message per choice, it went to the last one, which `oi_choice` then leaves out, and the
    reasoning of the choice the application took was lost.
    """
    body = unjson(raw)
    choices = body.get("choices") if isinstance(body, dict) else None
    message = choices[0].get("message") if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
    if not isinstance(message, dict):
        return
    text = next((message[k] for k in ("reasoning_content", "reasoning") if isinstance(message.get(k), str) and message[k].strip()), None)
    if text is None or any(p.get("type") == "reasoning" for m in outputs for p in m.get("parts") or []):
        return
    assistant = [m for m in outputs if m.get("role") == "assistant"]
    several = isinstance(choices, list) and len(choices) > 1 and len(outputs) == len(choices) == len(assistant)  # (one message per choice)
    target = assistant[0] if several else assistant[-1] if assistant else None
    if target is None:
        outputs.append(target := {"role": "assistant", "parts": []})
    target["parts"] = [{"type": "reasoning", "content": text}, *(target.get("parts") or [])]


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


def _empty_answer(body: Any, choice: dict[str, Any] | None) -> bool:
    """Whether the completion's first choice said `""`: its message's content is `""`, or (a stream, the chunks joined
    by the instrumentation, which keeps no empty delta) the stream finished with no text, refusal or call at all."""
    message = choice.get("message") if choice else None
    if not isinstance(message, dict) or message.get("refusal") or message.get("tool_calls") or message.get("function_call"):
        return False
    if message.get("content") == "":
        return True
    streamed = isinstance(body, dict) and body.get("object") == "chat.completion.chunk"
    return streamed and message.get("content") is None and isinstance(choice.get("finish_reason"), str)  # type: ignore[union-attr]


def _said(message: dict[str, Any]) -> bool:
    """Whether a normalised output message holds any text or call (a refusal's message holds neither)."""
    return any(isinstance(p, dict) and p.get("type") in ("text", "tool_call") for p in message.get("parts") or [])
