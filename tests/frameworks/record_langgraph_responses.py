"""Record a LangGraph agent whose model speaks OpenAI's Responses API, behind `tests/test_langgraph_responses.py`.

    python tests/frameworks/record_langgraph_responses.py OUTDIR [SCENARIO ...]   (OUTDIR: tests/data/langgraph-responses)

A `create_react_agent` with one tool, `get_weather`, its model `ChatOpenAI(use_responses_api=True)`, is invoked once
with "Weather in Paris and Tokyo?". The loopback server answers `POST /v1/responses`: first two `function_call` items
in one reply (item ids `fc_1`, `fc_2`; call ids `call_P`, `call_T`), then a `message` ("Paris is sunny; Tokyo is
rainy."); in variant `reasoned` each reply is led by a `reasoning` item with a summary ("Need both cities; call the
tool twice.", "Both results in; summarise."). Every reply's usage says how many of its input tokens were read from
the prompt cache and how many of its output tokens were reasoning (`input_tokens_details.cached_tokens`,
`output_tokens_details.reasoning_tokens`), as a reasoning model's replies do. LangChain keeps each call twice in the
reply's `AIMessage`: a `function_call` block of `content` (with both ids) and its `tool_calls` entry (the call id).

Scenarios `<kind>-<variant>` (variants `responses`, `reasoned`), `kind` as in `record_langgraph_handoff.recording`:
`oi` (OpenInference), `tl` (OpenLLMetry), each `<scenario>.jsonl` (OTLP/JSON); `lf` (Langfuse's `CallbackHandler`)
`<scenario>.jsonl` (the OTLP the SDK sent) and `<scenario>.api.json` (`GET /api/public/traces/{id}` as
`langfuse_api.trace_with_full_details` builds it from that OTLP); `ml` (`mlflow.langchain.autolog()`)
`<scenario>.mlflow.jsonl` and `<scenario>.otlp.jsonl`. Each writes `<scenario>.truth.json`, the application's own
values: the calls the model asked for (`model_calls`: call id, item id, name, arguments), the calls and tool messages
of the final state, every tool run, each request's usage as the server sent it, the text of each `AIMessage`
(`said`) and the answer. Each runs in its own process (instrumentors and autolog patch LangChain process-wide).
"""

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import record_langgraph_handoff as handoff  # noqa: E402
from common import MODEL, record_each_in_subprocess, write_jsonl, write_truth  # noqa: E402
from record_langgraph_handoff import Log, SeenOpenAI  # noqa: E402

ASK = "Weather in Paris and Tokyo?"
ANSWER = "Paris is sunny; Tokyo is rainy."
WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}
REPLIES = [
    [{"type": "function_call", "id": f"fc_{i}", "call_id": f"call_{city[0]}", "name": "get_weather", "arguments": json.dumps({"city": city}),
      "status": "completed"} for i, city in enumerate(WEATHER, 1)],
    [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": ANSWER, "annotations": []}]}],
]

REASONING = ["Need both cities; call the tool twice.", "Both results in; summarise."]
# `reasoned`: the same replies, each led by a reasoning item with a summary
REPLIES_REASONED = [[{"type": "reasoning", "id": f"rs_{i}", "summary": [{"type": "summary_text", "text": said}]}, *reply]
                    for i, (said, reply) in enumerate(zip(REASONING, REPLIES), 1)]
VARIANTS = {"responses": REPLIES, "reasoned": REPLIES_REASONED}


def usage(n: int) -> dict[str, Any]:
    """Request `n`'s usage: 60 of its input tokens read from the cache, 5 of its output tokens reasoning."""
    return {"input_tokens": 100 + n, "output_tokens": 10 + n, "total_tokens": 110 + 2 * n,
            "input_tokens_details": {"cached_tokens": 60}, "output_tokens_details": {"reasoning_tokens": 5}}


class Cached(SeenOpenAI):
    """The scripted server answering Responses API request n with `REPLIES[n]` and `usage(n)`."""

    async def _responses(self, request: Any) -> Any:
        from aiohttp import web

        body = await request.json()
        self.sent.append(body.get("input") or [])
        n, output = self._next()
        return web.json_response({"id": f"resp_{n}", "object": "response", "created_at": 1767225600, "status": "completed", "model": body.get("model"),
                                  "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "usage": usage(n), "error": None,
                                  "incomplete_details": None, "instructions": body.get("instructions"), "metadata": {}, "temperature": 1.0,
                                  "top_p": 1.0, "text": {"format": {"type": "text"}}})


def agent(fake: Cached, log: Log) -> Any:
    """The agent (module docstring)."""
    import warnings

    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    warnings.simplefilter("ignore")  # (create_react_agent's deprecation notice)
    from langgraph.prebuilt import create_react_agent

    @tool
    def get_weather(city: str) -> str:
        """Weather in a city."""
        return log.run("get_weather", {"city": city}, lambda: WEATHER[city])

    model = ChatOpenAI(model=MODEL, base_url=fake.base_url, api_key="sk-fake", max_retries=0, use_responses_api=True)
    return create_react_agent(model, [get_weather])


def responses(kind: str, out: Path, variant: str = "responses") -> Any:
    name = f"{kind}-{variant}"
    log = Log()

    def run(fake: Cached, callbacks: Any) -> Any:
        return agent(fake, log).invoke({"messages": [{"role": "user", "content": ASK}]}, {"callbacks": callbacks} if callbacks else None)

    handoff.SeenOpenAI, seen = Cached, handoff.SeenOpenAI  # (`recording` starts the server it names)
    try:
        state = handoff.recording(kind, name, out, VARIANTS[variant], run)
    finally:
        handoff.SeenOpenAI = seen
    requests = state.pop("_requests")
    state.pop("_seen")
    if kind == "lf":
        from langfuse_api import trace_with_full_details

        docs = [json.loads(line) for line in (out / f"{name}.jsonl").read_text().splitlines() if line.strip()]
        write_jsonl(out / f"{name}.api.json", trace_with_full_details(docs))
    msgs = state["messages"]
    write_truth(out, name, {
        "asked": ASK, "requests": requests, "usage": [usage(n) for n in range(requests)], "tool_runs": log.runs,
        "model_calls": [{"id": item["call_id"], "item_id": item["id"], "name": item["name"], "arguments": json.loads(item["arguments"])}
                        for reply in VARIANTS[variant][:requests] for item in reply if item["type"] == "function_call"],
        "calls": [{"id": c["id"], "name": c["name"], "arguments": c["args"]} for m in msgs if m.type == "ai" for c in m.tool_calls],
        "tool_messages": [{"tool_call_id": m.tool_call_id, "content": m.content, "status": m.status} for m in msgs if m.type == "tool"],
        "said": [m.text for m in msgs if m.type == "ai"], "answer": msgs[-1].text})
    return msgs[-1].text


SCENARIOS = {f"{k}-{v}": (lambda out, k=k, v=v: responses(k, out, v)) for v in VARIANTS for k in ("oi", "tl", "lf", "ml")}


if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:], SCENARIOS))
