"""The providers' SDKs against the simulator over 127.0.0.1: model lookups, Anthropic's token count, OpenAI's `n`, forced tools.

Each is a call a real client makes; the simulator answers it in the provider's shapes, and refuses what the
provider refuses with the provider's 400.
"""

from __future__ import annotations

import json
import urllib.request

import anthropic
import openai
import pytest

from tracejudge.llm.tokens import counter_for

GPT, CLAUDE = "gpt-4o-mini", "claude-haiku-4-5"
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
    with pytest.raises(anthropic.BadRequestError) as refused:
        client.messages.count_tokens(model=CLAUDE, messages=ASK, tools=TOOLS, tool_choice={"type": "tool", "name": "nope"})
    assert refused.value.body["error"] == {"type": "invalid_request_error", "message": "Tool 'nope' not found in provided tools"}


def test_openai_n_gets_n_choices_streamed_or_not_each_a_sample_of_the_request(simulator):
    client = _openai(simulator(noise=0.5))
    whole = client.chat.completions.create(model=GPT, messages=ASK, n=3, max_tokens=300)
    assert [c.index for c in whole.choices] == [0, 1, 2] and {c.finish_reason for c in whole.choices} == {"stop"}
    texts = [c.message.content for c in whole.choices]
    assert whole.usage.completion_tokens == sum(counter_for(GPT).text(t) for t in texts)
    # With noise, the choices are the request's next occurrences: three separate requests to a fresh simulator give the same three.
    fresh = _openai(simulator(noise=0.5))
    assert texts == [fresh.chat.completions.create(model=GPT, messages=ASK, max_tokens=300).choices[0].message.content for _ in range(3)]
    assert len(set(texts)) > 1
    again = _openai(simulator(noise=0.5))
    parts: dict[int, str] = {}
    finishes, usage = {}, None
    for chunk in again.chat.completions.create(model=GPT, messages=ASK, n=3, max_tokens=300, stream=True,
                                               stream_options={"include_usage": True}):
        usage = chunk.usage or usage
        for c in chunk.choices:
            parts[c.index] = parts.get(c.index, "") + (c.delta.content or "")
            finishes[c.index] = c.finish_reason or finishes.get(c.index)
    assert [parts[i] for i in range(3)] == texts and finishes == {0: "stop", 1: "stop", 2: "stop"}
    assert usage is not None and usage.completion_tokens == whole.usage.completion_tokens
    with _openai(simulator(noise=0.5)).chat.completions.stream(model=GPT, messages=ASK, n=3, max_tokens=300) as stream:
        assert [c.message.content for c in stream.get_final_completion().choices] == texts


@pytest.mark.parametrize(("n", "code", "message"), [
    (129, "integer_above_max_value", "Invalid 'n': integer above maximum value. Expected a value <= 128, but got 129 instead."),
    (0, "integer_below_min_value", "Invalid 'n': integer below minimum value. Expected a value >= 1, but got 0 instead."),
    ("2", "invalid_type", "Invalid type for 'n': expected an integer, but got a string instead."),
])
def test_openai_n_out_of_range_gets_openais_400(simulator, n, code, message):
    sim = simulator()
    with pytest.raises(openai.BadRequestError) as refused:
        _openai(sim).chat.completions.create(model=GPT, messages=ASK, n=n)
    assert refused.value.status_code == 400
    assert refused.value.body == {"message": message, "type": "invalid_request_error", "param": "n", "code": code}
    assert sim.stats.answered == 0 and sim.stats.refused == 1


def test_openai_n_holds_room_for_every_choice_and_the_ledger_counts_them_all(simulator):
    sim = simulator(tpm=2_000)
    client = _openai(sim)
    with pytest.raises(openai.BadRequestError, match="request too large"):  # 3 × 900 completion tokens cannot fit 2,000
        client.chat.completions.create(model=GPT, messages=ASK, n=3, max_tokens=900)
    reply = client.chat.completions.create(model=GPT, messages=ASK, n=3, max_tokens=300)
    with urllib.request.urlopen(sim.url + "/_sim/ledger", timeout=10) as r:
        entries = json.loads(r.read())["entries"]
    assert [e[1] for e in entries] == [reply.usage.prompt_tokens + reply.usage.completion_tokens]


def test_openai_forced_function_gets_a_tool_call_streamed_or_not(simulator):
    sim = simulator()
    client = _openai(sim)
    named = {"tools": FUNCTIONS, "tool_choice": {"type": "function", "function": {"name": "verdict"}}}
    whole = client.chat.completions.create(model=GPT, messages=ASK, **named)
    choice = whole.choices[0]
    assert choice.finish_reason == "stop" and choice.message.content is None  # OpenAI ends a named call with `stop`
    (call,) = choice.message.tool_calls
    assert call.type == "function" and call.function.name == "verdict" and call.id.startswith("call_")
    args = json.loads(call.function.arguments)
    assert set(args) == {"ok", "why"} and isinstance(args["ok"], bool) and isinstance(args["why"], str)
    assert whole.usage.completion_tokens == counter_for(GPT).text(call.function.arguments)
    with client.chat.completions.stream(model=GPT, messages=ASK, **named) as stream:
        final = stream.get_final_completion().choices[0]
    assert final.finish_reason == "stop" and final.message.tool_calls[0].function.arguments == call.function.arguments
    # "required" calls the first function, with `tool_calls`; its arguments hold every required property.
    required = client.chat.completions.create(model=GPT, messages=ASK, tools=FUNCTIONS, tool_choice="required", n=2)
    assert [c.finish_reason for c in required.choices] == ["tool_calls", "tool_calls"]
    for c in required.choices:
        args = json.loads(c.message.tool_calls[0].function.arguments)
        assert c.message.tool_calls[0].function.name == "lookup" and {"city", "units"} <= set(args) and 1 <= args["days"] <= 7
    chunks = list(client.chat.completions.create(model=GPT, messages=ASK, tools=FUNCTIONS, tool_choice="required", stream=True))
    assert chunks[0].choices[0].delta.tool_calls[0].function.name == "lookup" and chunks[-1].choices[0].finish_reason == "tool_calls"
    streamed = "".join(c.choices[0].delta.tool_calls[0].function.arguments or "" for c in chunks if c.choices[0].delta.tool_calls)
    assert json.loads(streamed) == json.loads(required.choices[0].message.tool_calls[0].function.arguments)


def test_openai_forced_judge_function_gets_the_verdict_the_structured_output_gets(simulator):
    client = _openai(simulator())
    as_output = client.chat.completions.create(model=GPT, messages=ASK, response_format={
        "type": "json_schema", "json_schema": {"name": "answers", "schema": ANSWERS, "strict": True}})
    as_call = client.chat.completions.create(model=GPT, messages=ASK, tool_choice={"type": "function", "function": {"name": "answers"}},
                                             tools=[{"type": "function", "function": {"name": "answers", "parameters": ANSWERS}}])
    verdict = json.loads(as_call.choices[0].message.tool_calls[0].function.arguments)
    assert [a["id"] for a in verdict["answers"]] == ["TC1", "TC2"]
    assert verdict == json.loads(as_output.choices[0].message.content)


@pytest.mark.parametrize(("tools", "choice", "param", "message"), [
    (FUNCTIONS, {"type": "function", "function": {"name": "nope"}}, "tool_choice", "Tool choice 'nope' not found in 'tools' parameter."),
    (FUNCTIONS, "bogus", "tool_choice", "Invalid value: 'bogus'. Supported values are: 'none', 'auto', and 'required'."),
    (openai.omit, "required", "tool_choice", "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified."),
])
def test_openai_tool_choice_the_tools_cannot_meet_gets_openais_400(simulator, tools, choice, param, message):
    with pytest.raises(openai.BadRequestError) as refused:
        _openai(simulator()).chat.completions.create(model=GPT, messages=ASK, tools=tools, tool_choice=choice)
    assert refused.value.body["type"] == "invalid_request_error"
    assert (refused.value.body["param"], refused.value.body["message"]) == (param, message)


def test_anthropic_forced_tool_is_the_one_named_or_any(simulator):
    client = _anthropic(simulator())
    named = {"tools": TOOLS, "tool_choice": {"type": "tool", "name": "verdict"}}
    whole = client.messages.create(model=CLAUDE, max_tokens=200, messages=ASK, **named)
    assert whole.stop_reason == "tool_use" and whole.content[0].type == "tool_use" and whole.content[0].name == "verdict"
    assert set(whole.content[0].input) == {"ok", "why"}
    with client.messages.stream(model=CLAUDE, max_tokens=200, messages=ASK, **named) as stream:
        final = stream.get_final_message()
    assert (final.stop_reason, final.content[0].name, final.content[0].input) == ("tool_use", "verdict", whole.content[0].input)
    anyone = client.messages.create(model=CLAUDE, max_tokens=200, messages=ASK, tools=TOOLS, tool_choice={"type": "any"})
    assert anyone.stop_reason == "tool_use" and anyone.content[0].name == "lookup" and {"city", "units"} <= set(anyone.content[0].input)
    for tools, choice, message in [(TOOLS, {"type": "tool", "name": "nope"}, "Tool 'nope' not found in provided tools"),
                                   (anthropic.omit, {"type": "any"}, "tool_choice may only be specified while providing tools.")]:
        with pytest.raises(anthropic.BadRequestError) as refused:
            client.messages.create(model=CLAUDE, max_tokens=200, messages=ASK, tools=tools, tool_choice=choice)
        assert refused.value.body["error"] == {"type": "invalid_request_error", "message": message}


def test_openai_batch_lines_get_n_choices_and_the_same_refusals(simulator):
    client = _openai(simulator(batch_completion_s=0.0, batch_shuffle=False))
    lines = [{"custom_id": cid, "method": "POST", "url": "/v1/chat/completions", "body": {"model": GPT, "messages": ASK, **extra}}
             for cid, extra in [("three", {"n": 3}), ("too-many", {"n": 200}),
                                ("forced", {"tools": FUNCTIONS, "tool_choice": {"type": "function", "function": {"name": "nope"}}})]]
    upload = client.files.create(file=("in.jsonl", "".join(json.dumps(x) + "\n" for x in lines).encode()), purpose="batch")
    batch = client.batches.create(input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h")
    batch = client.batches.retrieve(batch.id)
    (done,) = [json.loads(x) for x in client.files.content(batch.output_file_id).text.splitlines()]
    assert done["custom_id"] == "three" and len(done["response"]["body"]["choices"]) == 3
    refused = {x["custom_id"]: x["response"] for x in map(json.loads, client.files.content(batch.error_file_id).text.splitlines())}
    assert {cid: r["status_code"] for cid, r in refused.items()} == {"too-many": 400, "forced": 400}
    assert refused["forced"]["body"]["error"]["message"] == "Tool choice 'nope' not found in 'tools' parameter."


def _post(sim, path: str, body: dict, headers: dict | None = None) -> tuple[int, dict]:
    req = urllib.request.Request(sim.url + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"content-type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


ONE = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(("path", "body", "message"), [
    # A message or tool of a shape the provider refuses was a 500 from inside the simulator, or answered as if the
    # tool were not there (a forced Anthropic tool without input_schema got text, or "not found").
    ("/v1/messages/count_tokens", {"model": CLAUDE, "messages": [None]}, "messages.0: Input should be a valid dictionary"),
    ("/v1/messages/count_tokens", {"model": CLAUDE, "messages": ONE, "tools": [None, 5]}, "tools.0: Input should be a valid dictionary"),
    ("/v1/messages/count_tokens", {"model": CLAUDE, "messages": [{"role": "user", "content": 5}]},
     "messages.0.content: Input should be a valid string"),
    ("/v1/messages/count_tokens", {"model": CLAUDE, "messages": ONE, "system": 5}, "system: Input should be a valid string"),
    ("/v1/messages", {"model": CLAUDE, "max_tokens": 10, "messages": [None]}, "messages.0: Input should be a valid dictionary"),
    ("/v1/messages", {"model": CLAUDE, "max_tokens": 10, "messages": ONE, "tools": [{"name": "f"}], "tool_choice": {"type": "any"}},
     "tools.0.custom.input_schema: Field required"),
    ("/v1/messages", {"model": CLAUDE, "max_tokens": 10, "messages": ONE, "tools": [{"name": "f"}], "tool_choice": {"type": "tool", "name": "f"}},
     "tools.0.custom.input_schema: Field required"),
])
def test_anthropic_shapes_it_refuses_are_400s(simulator, path, body, message):
    status, got = _post(simulator(), path, body, {"anthropic-version": "2023-06-01"})
    assert (status, got["type"], got["error"]["type"], got["error"]["message"]) == (400, "error", "invalid_request_error", message)


@pytest.mark.parametrize(("body", "message", "param"), [
    ({"messages": [None]}, "Invalid type for 'messages[0]': expected an object, but got null instead.", "messages[0]"),
    ({"messages": ONE, "tools": [None]}, "Invalid type for 'tools[0]': expected an object, but got null instead.", "tools[0]"),
    ({"messages": ONE, "tools": [{"type": "function"}], "tool_choice": "required"}, "Missing required parameter: 'tools[0].function'.",
     "tools[0].function"),
    ({"messages": ONE, "tools": [{"type": "function", "function": {"name": "f", "parameters": 5}}], "tool_choice": "required"},
     "Invalid type for 'tools[0].function.parameters': expected an object, but got an integer instead.", "tools[0].function.parameters"),
])
def test_openai_shapes_it_refuses_are_400s(simulator, body, message, param):
    status, got = _post(simulator(), "/v1/chat/completions", {"model": GPT, **body})
    assert (status, got["error"]["type"], got["error"]["message"], got["error"]["param"]) == (400, "invalid_request_error", message, param)
