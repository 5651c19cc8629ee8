"""The providers' own SDKs against the simulator over 127.0.0.1: plain replies, streams, and the models list.

A stream carries exactly the reply the same request gets without one, in each provider's event shapes,
so code written against the real APIs (the SDKs' stream helpers included) runs against the simulator.
"""

from __future__ import annotations

import anthropic
import openai

QUESTIONS = [{"role": "user", "content": "TC1: Does the output answer the task?\nTC2: Is it complete?"}]
TOOL = {"name": "verdict", "description": "the verdict", "input_schema": {"type": "object", "properties": {"ok": {"type": "boolean"},
        "why": {"type": "string"}}, "required": ["ok", "why"]}}


def test_openai_sdk_streams_the_reply_it_gets_without_a_stream(simulator):
    sim = simulator()
    client = openai.OpenAI(base_url=sim.url + "/v1", api_key="unused", max_retries=0)
    whole = client.chat.completions.create(model="gpt-4o-mini", messages=QUESTIONS)
    parts, usage, finish = [], None, None
    for chunk in client.chat.completions.create(model="gpt-4o-mini", messages=QUESTIONS, stream=True,
                                                stream_options={"include_usage": True}):
        usage = chunk.usage or usage
        if chunk.choices:
            parts.append(chunk.choices[0].delta.content or "")
            finish = chunk.choices[0].finish_reason or finish
    assert len(parts) > 2 and "".join(parts) == whole.choices[0].message.content
    assert finish == whole.choices[0].finish_reason == "stop"
    assert usage is not None and usage.prompt_tokens == whole.usage.prompt_tokens
    assert usage.completion_tokens == whole.usage.completion_tokens
    with client.chat.completions.stream(model="gpt-4o-mini", messages=QUESTIONS) as stream:
        assert stream.get_final_completion().choices[0].message.content == whole.choices[0].message.content
    assert "gpt-4o-mini" in [m.id for m in client.models.list()]


def test_anthropic_sdk_streams_text_and_a_forced_tool_as_it_gets_them_without_a_stream(simulator):
    sim = simulator()
    client = anthropic.Anthropic(base_url=sim.url, api_key="unused", max_retries=0)
    whole = client.messages.create(model="claude-haiku-4-5", max_tokens=200, messages=QUESTIONS)
    with client.messages.stream(model="claude-haiku-4-5", max_tokens=200, messages=QUESTIONS) as stream:
        texts = list(stream.text_stream)
        final = stream.get_final_message()
    assert "".join(texts) == whole.content[0].text == final.content[0].text
    assert final.stop_reason == whole.stop_reason and final.usage.output_tokens == whole.usage.output_tokens
    forced = {"tools": [TOOL], "tool_choice": {"type": "tool", "name": "verdict"}}
    whole = client.messages.create(model="claude-haiku-4-5", max_tokens=200, messages=QUESTIONS, **forced)
    with client.messages.stream(model="claude-haiku-4-5", max_tokens=200, messages=QUESTIONS, **forced) as stream:
        final = stream.get_final_message()
    assert final.stop_reason == "tool_use" and final.content[0].type == "tool_use"
    assert final.content[0].input == whole.content[0].input and set(final.content[0].input) == {"ok", "why"}
    assert "claude-haiku-4-5" in [m.id for m in client.models.list()]


def test_openai_sdk_structured_outputs_of_nested_models_and_json_mode_parse(simulator):
    # pydantic writes a nested model as a `$ref` into `$defs`: answered as a string, the SDK's `parse` raised.
    from typing import Literal

    from pydantic import BaseModel

    class Answer(BaseModel):
        answer: Literal["yes", "no"]
        reason: str

    class Verdict(BaseModel):
        TC1: Answer
        TC2: Answer | None = None

    sim = simulator()
    client = openai.OpenAI(base_url=sim.url + "/v1", api_key="unused", max_retries=0)
    ask = [{"role": "user", "content": "Is the output right?"}]
    parsed = client.chat.completions.parse(model="gpt-4o-mini", messages=ask, response_format=Verdict).choices[0].message.parsed
    assert isinstance(parsed, Verdict) and parsed.TC1.answer in ("yes", "no") and isinstance(parsed.TC2, Answer)
    with client.chat.completions.stream(model="gpt-4o-mini", messages=ask, response_format=Verdict) as stream:
        assert stream.get_final_completion().choices[0].message.parsed == parsed
    # JSON mode promises a JSON object whatever the prompt asks ("yes" is not one).
    text = client.chat.completions.create(model="gpt-4o-mini", messages=ask, response_format={"type": "json_object"}).choices[0].message.content
    import json

    assert isinstance(json.loads(text), dict)
