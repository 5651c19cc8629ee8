"""The providers' SDKs against the simulator over 127.0.0.1: model lookups, Anthropic's token count.

Each is a call a real client makes; the simulator answers it in the provider's shapes, and refuses what the
provider refuses with the provider's 400.
"""

from __future__ import annotations

import anthropic
import openai

GPT, CLAUDE = "gpt-4o-mini", "claude-3-5-haiku-latest"
ASK = [{"role": "user", "content": "==== DATA t1 BEGIN ====\nthe run\n==== DATA t1 END ====\nTC1: Does the output answer the task?\n"
                                   "TC2: Is it complete?"}]
VERDICT = {"type": "object", "properties": {"ok": {"type": "boolean"}, "why": {"type": "string"}}, "required": ["ok", "why"]}
LOOKUP = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 7}},
          "required": ["city", "units"]}
ANSWERS = {"type": "object", "properties": {"answers": {"type": "array", "items": {"type": "object", "properties": {
    "id": {"type": "string"}, "answer": {"type": "string", "enum": ["yes", "no"]}, "reason": {"type": "string"}},
    "required": ["id", "answer", "reason"]}}}, "required": ["answers"]}
FUNCTIONS = [{"type": "function", "function": {"name": "lookup", "parameters": LOOKUP}},
             {"type": "function", "function": {"name": "verdict", "description": "the verdict", "parameters": VERDICT}}]
TOOLS = [{"name": "lookup", "input_schema": LOOKUP}, {"name": "verdict", "description": "the verdict", "input_schema": VERDICT}]


def _openai(sim) -> openai.OpenAI:
    return openai.OpenAI(base_url=sim.url + "/v1", api_key="unused", max_retries=0)


def _anthropic(sim) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=sim.url, api_key="unused", max_retries=0)


def test_both_sdks_retrieve_a_model_by_id(simulator):
    sim = simulator()
    model = _openai(sim).models.retrieve(GPT)
    assert (model.id, model.object) == (GPT, "model") and isinstance(model.created, int)
    assert _openai(sim).models.retrieve("ft:gpt-4o-mini:org::abc").id == "ft:gpt-4o-mini:org::abc"  # any model it would answer
    info = _anthropic(sim).models.retrieve(CLAUDE)
    assert (info.id, info.type, info.display_name, info.lifecycle) == (CLAUDE, "model", CLAUDE, "active")
    assert info.created_at.year == 2024
    assert [m.lifecycle for m in _anthropic(sim).models.list()] == ["active", "active"]


def test_anthropic_count_tokens_is_the_usage_of_the_same_request_and_costs_nothing(simulator):
    sim = simulator(rpm=1, tokenizer_factor=1.5)
    client = _anthropic(sim)
    forced = {"system": "be a judge", "tools": TOOLS, "tool_choice": {"type": "tool", "name": "verdict"}}
    counted = [client.messages.count_tokens(model=CLAUDE, messages=ASK, **forced).input_tokens for _ in range(3)]
    sent = client.messages.create(model=CLAUDE, max_tokens=100, messages=ASK, **forced)  # the one request the rpm allows
    assert counted == [sent.usage.input_tokens] * 3 and sent.usage.input_tokens > 0
    assert sim.stats.requests == 1 and sim.stats.by_path["/v1/messages/count_tokens"] == 3
    assert client.messages.count_tokens(model=CLAUDE, messages=ASK).input_tokens < counted[0]  # the tools and system count
