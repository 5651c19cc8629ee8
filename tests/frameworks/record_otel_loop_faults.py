"""Record the OpenAI-loop and RAG traces behind `tests/test_otel_loop_faults.py`, with the installed libraries.

    python tests/frameworks/record_otel_loop_faults.py OUTDIR [SCENARIO ...]

writes `OUTDIR/<scenario>.jsonl` (OTLP/JSON, one export request a line) and `OUTDIR/<scenario>.truth.json`
(what the application itself sent and got: per conversation its user turns, calls with results, answer and
token usage). Each scenario runs in its own subprocess (instrumentors patch libraries process-wide) against
a scripted loopback OpenAI server (`Scripted`; no network). Scenarios (`SCENARIOS`):

- `tl-concurrent-stream`: four plain `AsyncOpenAI` chat loops at once (`asyncio.gather`), streamed, under
  opentelemetry-instrumentation-openai (OpenLLMetry); all ask the same question. The server answers run r
  (told by the `X-Run` header) with one call `call_r<r>` (Paris for even r, Tokyo for odd), arguments streamed
  in fragments, then a text quoting the result; usage depends on the run and the step only.
- `tl-concurrent-empty`: the same, not streamed, each loop replaying its tool-call reply with `content: ""`.
- `oi-responses-prev`, `tl-responses-prev`: a Responses API loop chained with `previous_response_id`
  (only the new items sent): two calls in one response, the answer, a second user turn, one more call,
  the answer; under openinference-instrumentation-openai / OpenLLMetry.
- `oi-rag-bare`: Phoenix-style RAG with no span around it: a RETRIEVER span made with OpenInference's
  `OITracer`, then an OpenAI chat request with the passages in its system prompt; two questions in turn.
- `oi-rag-graph`, `tl-rag-graph`: a LangGraph graph whose `retrieve` node calls a LangChain retriever, then a
  `create_react_agent` whose retriever tool is called twice in one response; documents carry `id`, `score`
  and `source` in their metadata; under openinference-instrumentation-langchain / opentelemetry-instrumentation-langchain.
- `oi-empty-result`: a plain chat loop under OpenInference whose tool `ping` returns `""`, beside `lookup`.
- `oi-agent-args`: an `OITracer.agent`-decorated function `concierge(city, ask)` (OpenInference records its bound
  arguments as the agent span's input) asking the model `ask`, called as `concierge("Paris", "What is the weather in
  Paris today?")`: the city is contained in the question too.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from aiohttp import web

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, otel_provider, record_each_in_subprocess, write_otlp, write_truth  # noqa: E402
from fake_openai import FakeOpenAI  # noqa: E402

WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}
QUESTION = "What is the weather in Paris?"


def call(cid: str, name: str, args: Any) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}


def chat(text: str | None, *calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": text, **({"tool_calls": list(calls)} if calls else {})}


class Scripted(FakeOpenAI):
    """The project's fake server answering chat requests with `chat_script(body, headers) -> (message, usage)` and
    Responses API request number n with `responses[n]` (its output items; usage 100+n in, 10+n out).
    A streamed chat reply sends its text in pieces and each call's arguments in fragments, pausing between chunks."""

    def __init__(self, chat_script: Any = None, responses: list[Any] | None = None) -> None:
        self.chat_script = chat_script
        self.responses = responses or []
        self.n = 0
        super().__init__()

    def _routes(self, app: web.Application) -> None:
        super()._routes(app)
        app.router.add_post("/v1/responses", self._responses)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        message, usage = self.chat_script(body, request.headers)
        base = {"id": f"chatcmpl-{usage['prompt_tokens']}", "created": 1767225600, "model": MODEL}
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        if not body.get("stream"):
            return web.json_response(base | {"object": "chat.completion", "usage": usage,
                                             "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}]})
        deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
        text = message.get("content") or ""
        deltas += [{"content": text[i:i + 7]} for i in range(0, len(text), 7)]
        for i, c in enumerate(message.get("tool_calls") or []):
            args = c["function"]["arguments"]
            deltas.append({"tool_calls": [{"index": i, "id": c["id"], "type": "function", "function": {"name": c["function"]["name"], "arguments": ""}}]})
            deltas += [{"tool_calls": [{"index": i, "function": {"arguments": args[j:j + 5]}}]} for j in range(0, len(args), 5)]
        chunk = base | {"object": "chat.completion.chunk"}
        chunks = [chunk | {"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
        chunks += [chunk | {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}, chunk | {"choices": [], "usage": usage}]
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for c in chunks:
            await resp.write(f"data: {json.dumps(c)}\n\n".encode())
            await asyncio.sleep(0.003)  # let the concurrent runs' streams interleave
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    async def _responses(self, request: web.Request) -> web.Response:
        body = await request.json()
        n, self.n = self.n, self.n + 1
        usage = {"input_tokens": 100 + n, "output_tokens": 10 + n, "total_tokens": 110 + 2 * n,
                 "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}
        return web.json_response({"id": f"resp_{n}", "object": "response", "created_at": 1767225600, "status": "completed", "model": body.get("model"),
                                  "output": self.responses[n], "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "usage": usage,
                                  "error": None, "incomplete_details": None, "instructions": body.get("instructions"), "metadata": {},
                                  "temperature": 1.0, "top_p": 1.0, "text": {"format": {"type": "text"}}})


def _openai_instrumentor(kind: str) -> Any:
    if kind == "oi":
        from openinference.instrumentation.openai import OpenAIInstrumentor
    else:
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor
    return OpenAIInstrumentor()


# --- four concurrent chat loops asking the same question ----------------------------------------------------
def _weather_run(body: dict[str, Any], headers: Any) -> tuple[dict[str, Any], dict[str, int]]:
    run = int(headers["X-Run"])
    step = sum(1 for m in body["messages"] if m["role"] == "assistant")
    usage = {"prompt_tokens": 100 + 10 * run + step, "completion_tokens": 20 + 2 * run + step, "total_tokens": 120 + 12 * run + 2 * step}
    if step == 0:
        return chat(None, call(f"call_r{run}", "get_weather", {"city": "Paris" if run % 2 == 0 else "Tokyo"})), usage
    return chat(f"It is {body['messages'][-1]['content']} (run {run})."), usage


async def _weather_loop(client: Any, run: int, stream: bool, empty: bool) -> dict[str, Any]:
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": QUESTION}]
    calls, tokens_in, tokens_out, requests = [], 0, 0, 0
    while True:
        kw = {"model": MODEL, "messages": messages, "tools": tools, "extra_headers": {"X-Run": str(run)}}
        if stream:
            content, parts = "", {}
            async for ch in await client.chat.completions.create(**kw, stream=True, stream_options={"include_usage": True}):
                if ch.usage:
                    tokens_in, tokens_out = tokens_in + ch.usage.prompt_tokens, tokens_out + ch.usage.completion_tokens
                for tc in (ch.choices[0].delta.tool_calls or []) if ch.choices else []:
                    c = parts.setdefault(tc.index, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}})
                    c["id"] = tc.id or c["id"]
                    c["function"]["name"] += (tc.function and tc.function.name) or ""
                    c["function"]["arguments"] += (tc.function and tc.function.arguments) or ""
                content += (ch.choices[0].delta.content or "") if ch.choices else ""
            message = {"role": "assistant", "content": content or None, **({"tool_calls": [parts[i] for i in sorted(parts)]} if parts else {})}
        else:
            r = await client.chat.completions.create(**kw)
            tokens_in, tokens_out = tokens_in + r.usage.prompt_tokens, tokens_out + r.usage.completion_tokens
            message = r.choices[0].message.model_dump(exclude_none=True)
            if empty and message.get("tool_calls"):
                message["content"] = ""
        requests += 1
        messages.append(message)
        if not message.get("tool_calls"):
            return {"run": run, "user_turns": [QUESTION], "output": message["content"], "calls": calls,
                    "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out, "requests": requests}}
        for c in message["tool_calls"]:
            args = json.loads(c["function"]["arguments"])
            await asyncio.sleep(0.02)
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": WEATHER[args["city"]]})
            calls.append({"id": c["id"], "name": "get_weather", "arguments": args, "result": WEATHER[args["city"]]})


def concurrent(out: Path, name: str, stream: bool, empty: bool = False) -> Any:
    from openai import AsyncOpenAI

    with Scripted(_weather_run) as fake:
        provider = otel_provider(fake, "openai-loops")
        _openai_instrumentor("tl").instrument(tracer_provider=provider)
        client = AsyncOpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)

        async def runs() -> list[dict[str, Any]]:
            return list(await asyncio.gather(*(_weather_loop(client, r, stream, empty) for r in range(4))))

        cases = asyncio.run(runs())
        write_otlp(provider, fake, out / f"{name}.jsonl")
        provider.shutdown()
    write_truth(out, name, {"cases": cases})
    return [c["output"] for c in cases]


# --- a Responses API loop chained with previous_response_id -------------------------------------------------
def _fc(cid: str, name: str, args: Any) -> dict[str, Any]:
    return {"type": "function_call", "id": "fc_" + cid[5:], "call_id": cid, "name": name, "arguments": json.dumps(args), "status": "completed"}


def _said(text: str, i: int) -> dict[str, Any]:
    return {"type": "message", "id": f"msg_{i}", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]}


CHAINED = [[_fc("call_p1", "get_weather", {"city": "Paris"}), _fc("call_t2", "get_weather", {"city": "Tokyo"})],
           [_said("Paris is sunny (21 C); Tokyo is rainy (14 C).", 1)],
           [_fc("call_c3", "get_time", {})],
           [_said("It is 12:00 UTC.", 2)]]
TURNS = ["Compare the weather in Paris and Tokyo.", "And what time is it?"]


def chained(out: Path, name: str, kind: str) -> Any:
    from openai import OpenAI

    with Scripted(responses=CHAINED) as fake:
        provider = otel_provider(fake, "openai-loops")
        _openai_instrumentor(kind).instrument(tracer_provider=provider)
        client = OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        tools = [{"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
                 {"type": "function", "name": "get_time", "parameters": {"type": "object", "properties": {}}}]
        previous, calls, answers, usage = None, [], [], {"input_tokens": 0, "output_tokens": 0, "requests": 0}
        for text in TURNS:
            items: list[dict[str, Any]] = [{"role": "user", "content": text}]
            while True:
                r = client.responses.create(model="gpt-4.1-mini", input=items, tools=tools, previous_response_id=previous)
                previous = r.id
                usage = {"input_tokens": usage["input_tokens"] + r.usage.input_tokens, "output_tokens": usage["output_tokens"] + r.usage.output_tokens,
                         "requests": usage["requests"] + 1}
                asked = [o for o in r.output if o.type == "function_call"]
                if not asked:
                    answers.append(r.output_text)
                    break
                items = []
                for c in asked:
                    result = WEATHER[json.loads(c.arguments)["city"]] if c.name == "get_weather" else "12:00Z"
                    items.append({"type": "function_call_output", "call_id": c.call_id, "output": result})
                    calls.append({"id": c.call_id, "name": c.name, "arguments": json.loads(c.arguments), "result": result})
        write_otlp(provider, fake, out / f"{name}.jsonl")
        provider.shutdown()
    write_truth(out, name, {"cases": [{"user_turns": TURNS, "output": answers[-1], "answers": answers, "calls": calls, "usage": usage}]})
    return answers


# --- RAG: a retriever span with no parent, then the request ---------------------------------------------------
RAG = {"What is the return window for electronics?": ["Electronics: 30-day returns.", "Opened items: 15% fee."],
       "Do I pay for return shipping?": ["Return shipping is free."]}
RAG_ANSWERS = {"What is the return window for electronics?": "30 days; 15% fee if opened.", "Do I pay for return shipping?": "No, return shipping is free."}


def _rag_reply(body: dict[str, Any], headers: dict[str, str]) -> tuple[dict[str, Any], dict[str, int]]:
    question = body["messages"][-1]["content"]
    return chat(RAG_ANSWERS[question]), {"prompt_tokens": 50 + len(question), "completion_tokens": 9, "total_tokens": 59 + len(question)}


def rag_bare(out: Path, name: str) -> Any:
    from openai import OpenAI
    from openinference.instrumentation import OITracer, TraceConfig
    from openinference.semconv.trace import DocumentAttributes, SpanAttributes

    with Scripted(_rag_reply) as fake:
        provider = otel_provider(fake, "rag")
        _openai_instrumentor("oi").instrument(tracer_provider=provider)
        tracer = OITracer(provider.get_tracer("rag"), config=TraceConfig())
        client = OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        cases = []
        for question, docs in RAG.items():
            with tracer.start_as_current_span("retrieve", openinference_span_kind="retriever") as span:
                span.set_input(question)
                for i, text in enumerate(docs):
                    span.set_attribute(f"{SpanAttributes.RETRIEVAL_DOCUMENTS}.{i}.{DocumentAttributes.DOCUMENT_CONTENT}", text)
                    span.set_attribute(f"{SpanAttributes.RETRIEVAL_DOCUMENTS}.{i}.{DocumentAttributes.DOCUMENT_ID}", f"doc-{i}")
                    span.set_attribute(f"{SpanAttributes.RETRIEVAL_DOCUMENTS}.{i}.{DocumentAttributes.DOCUMENT_SCORE}", 0.9 - i / 10)
            messages = [{"role": "system", "content": "Answer from the context:\n" + "\n".join(docs)}, {"role": "user", "content": question}]
            r = client.chat.completions.create(model=MODEL, messages=messages)
            cases.append({"user_turns": [question], "output": r.choices[0].message.content, "calls": [],
                          "retrieved": [{"id": f"doc-{i}", "content": t, "score": 0.9 - i / 10} for i, t in enumerate(docs)],
                          "usage": {"input_tokens": r.usage.prompt_tokens, "output_tokens": r.usage.completion_tokens, "requests": 1}})
        write_otlp(provider, fake, out / f"{name}.jsonl")
        provider.shutdown()
    write_truth(out, name, {"cases": cases})
    return [c["output"] for c in cases]


# --- RAG: a LangGraph retrieve node, then an agent with a retriever tool ----------------------------------------
GRAPH_Q = "Welche Rückgaberegeln gelten für Elektronik? (refund policy)"
POLICIES = {
    "refund": [("Elektronik: 30 Tage Rückgabe ✔", "doc-1", 0.91), ("Refunds go to the original payment method.", "doc-2", 0.84)],
    "elektronik garantie": [("Garantie: 2 Jahre auf Elektronik.", "doc-3", 0.77), ("Opened items: 15% restocking fee.", "doc-4", 0.55)],
    "versand": [("Rückversand ist kostenlos.", "doc-5", 0.66)],
}


def _graph_reply(body: dict[str, Any], headers: dict[str, str]) -> tuple[dict[str, Any], dict[str, int]]:
    if not any(m["role"] == "tool" for m in body["messages"]):
        return (chat(None, call("call_q1", "search_policies", {"query": "elektronik garantie"}), call("call_q2", "search_policies", {"query": "versand"})),
                {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110})
    return chat("30 Tage Rückgabe, 2 Jahre Garantie, kostenloser Rückversand."), {"prompt_tokens": 101, "completion_tokens": 11, "total_tokens": 112}


def rag_graph(out: Path, name: str, kind: str) -> Any:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.messages import SystemMessage
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.tools import create_retriever_tool
    from langchain_openai import ChatOpenAI
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import create_react_agent

    class PolicyRetriever(BaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
            return [Document(page_content=t, metadata={"id": i, "score": s, "source": "policies.md"}) for t, i, s in POLICIES[query]]

    with Scripted(_graph_reply) as fake:
        provider = otel_provider(fake, "rag")
        if kind == "oi":
            from openinference.instrumentation.langchain import LangChainInstrumentor as Instrumentor
        else:
            from opentelemetry.instrumentation.langchain import LangchainInstrumentor as Instrumentor
        Instrumentor().instrument(tracer_provider=provider)
        retriever = PolicyRetriever()
        model = ChatOpenAI(model=MODEL, base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        agent = create_react_agent(model, [create_retriever_tool(retriever, "search_policies", "Search the store's policies.")],
                                   prompt="Answer from the policies.")

        def retrieve(state: MessagesState) -> dict[str, Any]:
            return {"messages": [SystemMessage("Context:\n" + "\n".join(d.page_content for d in retriever.invoke("refund")))]}

        graph = StateGraph(MessagesState)
        graph.add_node("retrieve", retrieve)
        graph.add_node("agent", agent)
        graph.add_edge(START, "retrieve")
        graph.add_edge("retrieve", "agent")
        graph.add_edge("agent", END)
        answer = graph.compile().invoke({"messages": [{"role": "user", "content": GRAPH_Q}]})["messages"][-1].content
        write_otlp(provider, fake, out / f"{name}.jsonl")
        provider.shutdown()
    joined = {q: "\n\n".join(t for t, _, _ in POLICIES[q]) for q in ("elektronik garantie", "versand")}
    write_truth(out, name, {"cases": [{
        "user_turns": [GRAPH_Q], "output": answer, "usage": {"input_tokens": 201, "output_tokens": 21, "requests": 2},
        "retrieved": [{"id": i, "content": t, "score": s, "source": "policies.md"} for q in ("refund", "elektronik garantie", "versand") for t, i, s in POLICIES[q]],
        "calls": [{"id": f"call_q{k}", "name": "search_policies", "arguments": {"query": q}, "result": joined[q]}
                  for k, q in ((1, "elektronik garantie"), (2, "versand"))]}]})
    return answer


# --- a tool that returns an empty string ------------------------------------------------------------------------
EMPTY = [chat("Checking.", call("call_e1", "lookup", {"city": "Tokyo"}), call("call_e2", "ping", {})), chat("Tokyo found; ping answered.")]
EMPTY_RESULTS = {"call_e1": "Tokyo: 14M people", "call_e2": ""}


def empty_result(out: Path, name: str) -> Any:
    from openai import OpenAI

    replies = iter(EMPTY)
    with Scripted(lambda body, headers: (next(replies), {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110})) as fake:
        provider = otel_provider(fake, "openai-loops")
        _openai_instrumentor("oi").instrument(tracer_provider=provider)
        client = OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        tools = [{"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {}}}} for n in ("lookup", "ping")]
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Look up Tokyo, then ping."}]
        calls = []
        while True:
            message = client.chat.completions.create(model=MODEL, messages=messages, tools=tools).choices[0].message.model_dump(exclude_none=True)
            messages.append(message)
            if not message.get("tool_calls"):
                break
            for c in message["tool_calls"]:
                messages.append({"role": "tool", "tool_call_id": c["id"], "content": EMPTY_RESULTS[c["id"]]})
                calls.append({"id": c["id"], "name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"]), "result": EMPTY_RESULTS[c["id"]]})
        write_otlp(provider, fake, out / f"{name}.jsonl")
        provider.shutdown()
    write_truth(out, name, {"cases": [{"user_turns": ["Look up Tokyo, then ping."], "output": message["content"], "calls": calls,
                                       "usage": {"input_tokens": 200, "output_tokens": 20, "requests": 2}}]})
    return message["content"]


AGENT_ARGS = ("Paris", "What is the weather in Paris today?")


def agent_args(out: Path, name: str) -> Any:
    from openai import OpenAI
    from openinference.instrumentation import OITracer, TraceConfig

    answer = {"role": "assistant", "content": "Sunny in Paris today, 21 C."}
    with Scripted(lambda body, headers: (answer, {"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49})) as fake:
        provider = otel_provider(fake, "openai-loops")
        _openai_instrumentor("oi").instrument(tracer_provider=provider)
        tracer = OITracer(provider.get_tracer("concierge"), config=TraceConfig())
        client = OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)

        @tracer.agent
        def concierge(city: str, ask: str) -> str:
            reply = client.chat.completions.create(model=MODEL, messages=[{"role": "system", "content": f"You answer about {city}."},
                                                                         {"role": "user", "content": ask}])
            return reply.choices[0].message.content or ""

        output = concierge(*AGENT_ARGS)
        write_otlp(provider, fake, out / f"{name}.jsonl")
        provider.shutdown()
    write_truth(out, name, {"cases": [{"user_turns": [AGENT_ARGS[1]], "output": output, "calls": [],
                                       "usage": {"input_tokens": 40, "output_tokens": 9, "requests": 1}}]})
    return output


SCENARIOS = {
    "tl-concurrent-stream": lambda out: concurrent(out, "tl-concurrent-stream", stream=True),
    "tl-concurrent-empty": lambda out: concurrent(out, "tl-concurrent-empty", stream=False, empty=True),
    "oi-responses-prev": lambda out: chained(out, "oi-responses-prev", "oi"),
    "tl-responses-prev": lambda out: chained(out, "tl-responses-prev", "tl"),
    "oi-rag-bare": lambda out: rag_bare(out, "oi-rag-bare"),
    "oi-rag-graph": lambda out: rag_graph(out, "oi-rag-graph", "oi"),
    "tl-rag-graph": lambda out: rag_graph(out, "tl-rag-graph", "tl"),
    "oi-empty-result": lambda out: empty_result(out, "oi-empty-result"),
    "oi-agent-args": lambda out: agent_args(out, "oi-agent-args"),
}


def main(argv: list[str]) -> int:
    """Record the scenarios named in `argv[1:]` (default: all), each in a subprocess; returns how many failed."""
    return record_each_in_subprocess(__file__, argv, SCENARIOS)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
