"""Format `otel` on shapes agentevals' fixture corpus holds: Grafana Tempo answers, ADK's own content keys, wrapped model spans."""

from __future__ import annotations

import json
from pathlib import Path

from test_extract_otel_cases import IN, OP, OUT, TOOL, export, one, run, span


def _adk_turn(trace: str = "t1") -> list[dict]:
    """One ADK (Python) turn with one tool call, content only in ADK's `gcp.vertex.agent.*` keys.

    As ADK writes it with GenAI content capture off (or its events saying
    `<elided>`): `call_llm` wraps a `generate_content` span that holds usage only.
    """
    request_1 = {"model": "gemini", "contents": [{"role": "user", "parts": [{"text": "Weather in Paris?"}]}]}
    response_1 = {"content": {"role": "model", "parts": [{"function_call": {"id": "fc1", "name": "get_weather", "args": {"city": "Paris"}}}]}}
    request_2 = {"model": "gemini", "contents": [
        *request_1["contents"], response_1["content"],
        {"role": "user", "parts": [{"function_response": {"id": "fc1", "name": "get_weather", "response": {"temp_c": 21}}}]},
    ]}
    response_2 = {"content": {"role": "model", "parts": [{"text": "It is 21C in Paris."}]}}
    adk = {"gcp__vertex__agent__session_id": "sess-1"}
    usage = {"gen_ai__usage__input_tokens": 10, "gen_ai__usage__output_tokens": 3}
    return [
        span("ag", None, 0, "invoke_agent weather", trace=trace, **{OP: "invoke_agent", "gen_ai__agent__name": "weather"}),
        span("l1", "ag", 1, "call_llm", trace=trace, gcp__vertex__agent__llm_request=request_1, gcp__vertex__agent__llm_response=response_1, **adk, **usage),
        span("g1", "l1", 2, "generate_content gemini", trace=trace, **{OP: "generate_content"}, **usage),
        span("x1", "ag", 3, "execute_tool get_weather", trace=trace, **{OP: "execute_tool", TOOL: "get_weather", "gen_ai__tool__call__id": "fc1"},
             gcp__vertex__agent__tool_call_args={"city": "Paris"}, gcp__vertex__agent__tool_response={"temp_c": 21}),
        span("l2", "ag", 4, "call_llm", trace=trace, gcp__vertex__agent__llm_request=request_2, gcp__vertex__agent__llm_response=response_2, **adk, **usage),
        span("g2", "l2", 5, "generate_content gemini", trace=trace, **{OP: "generate_content"}, **usage),
    ]


def test_adk_content_comes_from_call_llm_when_the_genai_keys_hold_none(tmp_path: Path):
    case = one(tmp_path, export(_adk_turn()))
    assert case.input == "Weather in Paris?"
    assert case.trace.output == "It is 21C in Paris."
    [call] = case.trace.tool_calls()
    assert (call.name, call.arguments, call.result) == ("get_weather", {"city": "Paris"}, {"temp_c": 21})
    # call_llm and its generate_content are one request each: usage counted once
    assert (case.trace.usage.requests, case.trace.usage.input_tokens, case.trace.usage.output_tokens) == (2, 20, 6)


def test_a_wrapped_model_span_reads_the_provider_span_inside_it(tmp_path: Path):
    """A framework's model span holding usage only, over OpenLLMetry's provider span with the messages."""
    spans = [
        span("ag", None, 0, "invoke_agent helm", **{OP: "invoke_agent", "gen_ai__agent__name": "helm"}),
        span("g1", "ag", 1, "generate_content m", **{OP: "generate_content", "gen_ai__usage__input_tokens": 7, "gen_ai__usage__output_tokens": 2}),
        span("p1", "g1", 2, "openai.chat", **{"llm__request__type": "chat", "gen_ai__system": "openai",
             "gen_ai__prompt__0__role": "user", "gen_ai__prompt__0__content": "list releases",
             "gen_ai__completion__0__role": "assistant", "gen_ai__completion__0__content": "Two releases.",
             "gen_ai__usage__input_tokens": 7, "gen_ai__usage__output_tokens": 2}),
    ]
    case = one(tmp_path, export(spans))
    assert (case.input, case.trace.output) == ("list releases", "Two releases.")
    assert (case.trace.usage.requests, case.trace.usage.input_tokens) == (1, 7)


def _tempo_v1(doc: dict) -> dict:
    """The same export as Tempo v1's API answers it: `batches`, `instrumentationLibrarySpans`."""
    return {"batches": [
        {"resource": rs["resource"], "instrumentationLibrarySpans": [{"instrumentationLibrary": ss["scope"], "spans": ss["spans"]} for ss in rs["scopeSpans"]]}
        for rs in doc["resourceSpans"]
    ]}


def test_tempo_batches_and_its_trace_wrapper_read_as_otlp(tmp_path: Path):
    doc = export(_adk_turn())
    want = one(tmp_path, doc, name="plain.json")
    for i, shaped in enumerate((_tempo_v1(doc), {"trace": doc}, {"trace": _tempo_v1(doc)})):
        got = one(tmp_path, shaped, name=f"tempo{i}.json")
        assert got.id == want.id and got.trace == want.trace
    assert json.dumps(doc) == json.dumps(export(_adk_turn())), "the document read is not changed"


def test_a_response_whose_id_names_no_call_answers_the_next_call_in_order(tmp_path: Path):
    """ADK with its own content keys off: spans say `{}`, call and response parts carry unrelated ids."""
    def model(sid, start, inputs, outputs):
        return span(sid, "ag", start, "generate_content m", **{OP: "generate_content", IN: inputs, OUT: outputs})

    def tool(sid, start, name):
        return span(sid, "ag", start, f"execute_tool {name}", **{OP: "execute_tool", TOOL: name, "gen_ai__tool__call__id": f"adk-{sid}"},
                    gcp__vertex__agent__tool_call_args="{}", gcp__vertex__agent__tool_response="{}")

    user = {"role": "user", "parts": [{"type": "text", "content": "Weather and time in Paris?"}]}
    ask_weather = {"role": "assistant", "parts": [{"type": "tool_call", "id": "get_weather_1", "name": "get_weather", "arguments": {"city": "Paris"}}]}
    weather = {"role": "user", "parts": [{"type": "tool_call_response", "id": "get_weather_0", "response": {"temp_c": 21}}]}
    ask_time = {"role": "assistant", "parts": [{"type": "tool_call", "id": "get_time_0", "name": "get_time", "arguments": {"city": "Paris"}}]}
    time = {"role": "user", "parts": [{"type": "tool_call_response", "id": "get_time_1", "response": {"time": "14:05"}}]}
    done = {"role": "assistant", "parts": [{"type": "text", "content": "21C, 14:05."}]}
    spans = [
        span("ag", None, 0, "invoke_agent a", **{OP: "invoke_agent", "gen_ai__agent__name": "a"}),
        model("m1", 1, [user], [ask_weather]), tool("t1", 2, "get_weather"),
        model("m2", 3, [user, ask_weather, weather], [ask_time]), tool("t2", 4, "get_time"),
        model("m3", 5, [user, ask_weather, weather, ask_time, time], [done]),
    ]
    case = one(tmp_path, export(spans))
    assert [(c.name, c.arguments, c.result) for c in case.trace.tool_calls()] == [
        ("get_weather", {"city": "Paris"}, {"temp_c": 21}),
        ("get_time", {"city": "Paris"}, {"time": "14:05"}),
    ]


def test_an_agent_called_as_a_tool_speaks_through_its_result_not_the_turn(tmp_path: Path):
    """ADK's AgentTool: the delegate's answer is the tool's result; the turn's texts are the caller's own."""
    user = [{"role": "user", "parts": [{"type": "text", "content": "Research the capital of France."}]}]
    ask = [{"role": "assistant", "parts": [{"type": "tool_call", "id": "r1", "name": "research", "arguments": {"request": "capital?"}}]}]
    spans = [
        span("ag", None, 0, "invoke_agent boss", **{OP: "invoke_agent", "gen_ai__agent__name": "boss"}),
        span("m1", "ag", 1, "generate_content m", **{OP: "generate_content", IN: user, OUT: ask, "gen_ai__usage__input_tokens": 5}),
        span("t1", "ag", 2, "execute_tool research", **{OP: "execute_tool", TOOL: "research", "gen_ai__tool__call__id": "r1", "gen_ai__tool__call__result": "Paris."}),
        span("sub", "t1", 3, "invoke_agent research", **{OP: "invoke_agent", "gen_ai__agent__name": "research"}),
        span("m2", "sub", 4, "generate_content m", **{OP: "generate_content", "gen_ai__usage__input_tokens": 7,
             OUT: [{"role": "assistant", "parts": [{"type": "text", "content": "Paris."}]}]}),
        span("m3", "ag", 5, "generate_content m", **{OP: "generate_content", "gen_ai__usage__input_tokens": 11,
             OUT: [{"role": "assistant", "parts": [{"type": "text", "content": "It is Paris."}]}]}),
    ]
    case = one(tmp_path, export(spans))
    [turn] = case.metadata["otel"]["turns"]
    assert (turn["final_text"], turn["intermediate_texts"]) == ("It is Paris.", [])
    assert turn["agents"] == ["boss", "research"] and turn["usage"]["input_tokens"] == 23, "the delegate's request still counts"
    assert [(c.name, c.result) for c in case.trace.tool_calls()] == [("research", "Paris.")]


def test_adk_1_invocation_root_holds_a_transfer_in_one_turn(tmp_path: Path):
    """ADK 1.x roots a run in a bare `invocation` span (scope `gcp.vertex.agent`, no attributes); a transfer's agent is its child."""
    def model(sid, parent, start, user, text=None, calls=()):
        out = [{"role": "assistant", "parts": ([{"type": "text", "content": text}] if text else []) + [
            {"type": "tool_call", "id": cid, "name": name, "arguments": args} for cid, name, args in calls]}]
        return span(sid, parent, start, "generate_content m", **{OP: "generate_content", OUT: out, IN: [{"role": "user", "parts": [{"type": "text", "content": user}]}]})

    spans = [
        span("inv", None, 0, "invocation"),
        span("a1", "inv", 1, "invoke_agent coordinator", **{OP: "invoke_agent", "gen_ai__agent__name": "coordinator"}),
        model("m1", "a1", 2, "Refund order 42.", calls=[("c1", "transfer_to_agent", {"agent_name": "billing"})]),
        span("a2", "inv", 3, "invoke_agent billing", **{OP: "invoke_agent", "gen_ai__agent__name": "billing"}),
        model("m2", "a2", 4, "For context: [coordinator] called tool `transfer_to_agent`", text="Refund issued."),
    ]
    doc = export(spans)
    doc["resourceSpans"][0]["scopeSpans"][0]["scope"] = {"name": "gcp.vertex.agent"}
    case = one(tmp_path, doc)
    [turn] = case.metadata["otel"]["turns"]
    assert (turn["user_text"], turn["final_text"], turn["agents"]) == ("Refund order 42.", "Refund issued.", ["billing", "coordinator"])
    assert case.turns == []


def test_details_event_as_span_event_or_named_by_attribute_and_old_usage_names(tmp_path: Path):
    """Three older or other spellings of one request: Strands' span event, a log named by `otel.event.name`, prompt/completion tokens."""
    messages = {"gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Say hi."}]}]),
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Hi!"}]}])}
    as_event = span("c1", None, 0, "chat m", **{OP: "chat", "gen_ai__usage__prompt_tokens": 9, "gen_ai__usage__completion_tokens": 2})
    as_event["events"] = [{"name": "gen_ai.client.inference.operation.details", "timeUnixNano": "1000100",
                           "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in messages.items()]}]
    as_log = span("c2", None, 0, "chat m", trace="t2", **{OP: "chat"})
    log = {"timeUnixNano": "1000100", "traceId": "t2", "spanId": "c2",
           "attributes": [{"key": "otel.event.name", "value": {"stringValue": "gen_ai.client.inference.operation.details"}},
                          *({"key": k, "value": {"stringValue": v}} for k, v in messages.items())]}
    for i, doc in enumerate((export([as_event]), export([as_log], [log]))):
        case = one(tmp_path, doc, name=f"d{i}.json")
        assert (case.input, case.trace.output) == ("Say hi.", "Hi!")
    assert (case.trace.usage.input_tokens, case.trace.usage.output_tokens) == (None, None)
    first = one(tmp_path, export([as_event]), name="usage.json")
    assert (first.trace.usage.input_tokens, first.trace.usage.output_tokens) == (9, 2)


def _jaeger_tag(key: str, value) -> dict:
    kind = "bool" if isinstance(value, bool) else "int64" if isinstance(value, int) else "string"
    return {"key": key, "type": kind, "value": value}


def test_a_jaeger_export_reads_as_the_otlp_it_was_ingested_from(tmp_path: Path):
    """Jaeger's JSON download (kagent's samples): µs times, CHILD_OF references, typed tags, scope and status as tags."""
    def jspan(sid, parent, start, name, **tags):
        refs = [{"refType": "CHILD_OF", "traceID": "ab", "spanID": parent}] if parent else []
        return {"traceID": "ab", "spanID": sid, "operationName": name, "references": refs, "startTime": 1_000 + start, "duration": 1,
                "processID": "p1", "tags": [_jaeger_tag(k.replace("__", "."), v) for k, v in tags.items()], "logs": []}

    out = [{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "get_pods", "arguments": {"ns": "default"}}]}]
    final = [{"role": "assistant", "parts": [{"type": "text", "content": "Two pods."}]}]
    user = [{"role": "user", "parts": [{"type": "text", "content": "List pods."}]}]
    spans = [
        jspan("s4", "s1", 4, "chat m", gen_ai__operation__name="chat", gen_ai__input__messages=json.dumps(user), gen_ai__output__messages=json.dumps(final),
              gen_ai__usage__input_tokens=20, otel__scope__name="kagent"),
        jspan("s1", None, 0, "invoke_agent k8s", gen_ai__operation__name="invoke_agent", gen_ai__agent__name="k8s", span__kind="server"),
        jspan("s2", "s1", 1, "chat m", gen_ai__operation__name="chat", gen_ai__input__messages=json.dumps(user), gen_ai__output__messages=json.dumps(out),
              gen_ai__usage__input_tokens=10),
        jspan("s3", "s1", 2, "execute_tool get_pods", gen_ai__operation__name="execute_tool", gen_ai__tool__name="get_pods",
              gen_ai__tool__call__id="c1", gen_ai__tool__call__result="no access", otel__status_code="ERROR", error=True),
    ]
    doc = {"data": [{"traceID": "ab", "spans": spans, "processes": {"p1": {"serviceName": "kagent", "tags": []}}}], "total": 0, "limit": 0, "offset": 0, "errors": None}
    case = one(tmp_path, doc)
    assert (case.input, case.trace.output, case.trace.usage.input_tokens) == ("List pods.", "Two pods.", 30)
    [call] = case.trace.tool_calls()
    assert (call.name, call.arguments, call.result, call.error is not None) == ("get_pods", {"ns": "default"}, "no access", True)


def test_an_agent_span_with_nothing_under_it_is_no_turn(tmp_path: Path):
    """kagent's controller records its own `invoke_agent` span beside the agent's: no request, call or text, so no turn."""
    user = [{"role": "user", "parts": [{"type": "text", "content": "Hi"}]}]
    spans = [
        span("c", None, 0, "invoke_agent helm-agent", **{OP: "invoke_agent", "gen_ai__agent__name": "helm-agent"}),
        span("ag", None, 1, "invoke_agent helm_agent", **{OP: "invoke_agent", "gen_ai__agent__name": "helm_agent"}),
        span("m", "ag", 2, "chat m", **{OP: "chat", IN: user, OUT: [{"role": "assistant", "parts": [{"type": "text", "content": "Hello"}]}]}),
    ]
    case = one(tmp_path, export(spans))
    assert [(t["user_text"], t["agents"]) for t in case.metadata["otel"]["turns"]] == [("Hi", ["helm_agent"])]


def test_a_span_naming_itself_or_a_loop_as_parent_still_gives_its_request(tmp_path: Path):
    """A self-parented span is a root; a two-span loop breaks at the span that started first (agentevals' rule)."""
    def chat(sid, parent, start, trace, user, answer, tokens):
        return span(sid, parent, start, "chat m", trace=trace, **{OP: "chat", "gen_ai__usage__input_tokens": tokens,
                    IN: [{"role": "user", "parts": [{"type": "text", "content": user}]}],
                    OUT: [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]})

    cases = []
    for name, spans in (("self", [chat("s1", "s1", 0, "t1", "Loop?", "Loop.", 5)]),
                        ("pair", [chat("p1", "p2", 0, "t2", "Loop?", "Loop.", 5), chat("p2", "p1", 1, "t2", "Loop?", "Loop.", 5)])):
        cases.append(one(tmp_path, export(spans), name=f"{name}.json"))
    for case in cases:
        assert (case.input, case.trace.output) == ("Loop?", "Loop.")
        assert (case.trace.usage.requests, case.trace.usage.input_tokens) == (1, 5), "the pair is one request seen twice"


def test_log_records_naming_only_their_trace_belong_to_its_one_request(tmp_path: Path):
    """OpenAI's v2 instrumentation may emit its events with a trace id but no span id: one request in the trace owns them."""
    def event(name, t, body, trace="t1"):
        return {"timeUnixNano": str(1_000_100 + t), "traceId": trace, "attributes": [{"key": "event.name", "value": {"stringValue": name}}],
                "body": {"kvlistValue": {"values": [{"key": k, "value": {"stringValue": v}} for k, v in body.items()]}}}

    def choice(text, trace="t1"):
        message = {"kvlistValue": {"values": [{"key": "role", "value": {"stringValue": "assistant"}}, {"key": "content", "value": {"stringValue": text}}]}}
        return {"timeUnixNano": "1000300", "traceId": trace, "attributes": [{"key": "event.name", "value": {"stringValue": "gen_ai.choice"}}],
                "body": {"kvlistValue": {"values": [{"key": "index", "value": {"intValue": "0"}}, {"key": "message", "value": message}]}}}

    one_request = [span("ag", None, 0, "agent_run"), span("c1", "ag", 1, "chat m", **{OP: "chat", "gen_ai__usage__input_tokens": 4})]
    logs = [event("gen_ai.user.message", 1, {"content": "Weather in Paris?"}), choice("Sunny.")]
    case = one(tmp_path, export(one_request, logs), name="single.json")
    assert (case.input, case.trace.output) == ("Weather in Paris?", "Sunny.")
    two_requests = [*one_request, span("c2", "ag", 2, "chat m", **{OP: "chat"})]
    # Which of two requests said it cannot be told: nothing is invented, and the case, with nothing left to score, is
    # refused rather than scored empty (it passed every budget).
    [(_, error)] = run(tmp_path, export(two_requests, logs), name="two.json")
    assert error.kind == "invalid_input" and "could belong to several requests" in error.message, error
