"""Record the runs behind `tests/test_agents_openllmetry_nested.py`: the OpenAI Agents SDK under OpenLLMetry's
opentelemetry-instrumentation-openai-agents (recorded with 0.62.4, openai-agents 0.24.0).

    python tests/frameworks/record_agents_openllmetry.py OUTDIR [SCENARIO ...]

writes `OUTDIR/agents-tl-<scenario>.jsonl` (OTLP/JSON, one export request a line) and `<...>.truth.json` (what the
application itself got: its question(s), each call with its arguments and the result the SDK sent the model, the
sub-agent's run, the final output, and the tokens the server reported). Each scenario runs in its own subprocess
(the instrumentor patches the SDK process-wide) against the project's loopback fake server (`fake_openai.FakeOpenAI`,
here answering chat completions and the Responses API, streamed or not, by the agent's instructions; no network).
The instrumentation is not among the test requirements: without it the recorder stops, saying so.

- `responses-run`, `responses-stream`, `chat_completions-run`: a Planner (structured output `Plan`) asks in one reply
  for `research` (a function tool whose body runs `Runner.run(Researcher, ...)`: the Researcher calls `search`, then
  answers), `lookup` (returns a dict) and `broken` (raises); then answers. Run with `Runner.run` or `run_streamed`.
- `handoff`: Triage hands off to Billing, which calls `refund` and answers; a second `Runner.run` on the same
  conversation (`to_input_list()` plus a new user message) asks Billing again.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp import web

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, otel_provider, record_each_in_subprocess, write_otlp, write_truth  # noqa: E402
from fake_openai import FakeOpenAI, _chunks, _completion  # noqa: E402

Reply = tuple[list[tuple[str, str, dict[str, Any]]] | str, tuple[int, int]]  # calls (id, name, args) or text; tokens in, out


class AgentsServer(FakeOpenAI):
    """`FakeOpenAI` answering chat completions and the Responses API (streamed or not) with `script(instructions,
    user_texts, results) -> (calls or text, (input tokens, output tokens))`: `results` are the call ids answered
    after the last user message, so each agent's step is known whatever order parallel agents ask in."""

    def __init__(self, script: Callable[[str, list[str], list[str]], Reply]) -> None:
        self.script = script
        self.ids = itertools.count()
        super().__init__()

    def _routes(self, app: web.Application) -> None:
        super()._routes(app)
        app.router.add_post("/v1/responses", self._responses)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        msgs = body["messages"]
        system = next((m["content"] for m in msgs if m["role"] == "system"), "")
        users = [i for i, m in enumerate(msgs) if m["role"] == "user"]
        done = [m["tool_call_id"] for m in msgs[users[-1]:] if m["role"] == "tool"]
        out, (tin, tout) = self.script(system, [msgs[i]["content"] for i in users], done)
        message: dict[str, Any] = {"role": "assistant", "content": out} if isinstance(out, str) else {"role": "assistant", "content": None, "tool_calls": [
            {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}} for i, n, a in out]}
        reply = _completion(message, {"prompt_tokens": tin, "completion_tokens": tout, "total_tokens": tin + tout}, body.get("model", MODEL))
        if not body.get("stream"):
            return web.json_response(reply)
        chunks = _chunks(reply) if (body.get("stream_options") or {}).get("include_usage") else _chunks(reply)[:-1]
        return await _sse(request, [(None, c) for c in chunks], done=True)

    async def _responses(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        items = body["input"] if isinstance(body["input"], list) else [{"role": "user", "content": body["input"]}]
        users = [i for i, it in enumerate(items) if it.get("role") == "user"]
        done = [it["call_id"] for it in items[users[-1]:] if it.get("type") == "function_call_output"]
        out, (tin, tout) = self.script(body.get("instructions") or "", [items[i]["content"] for i in users], done)
        output = [{"type": "message", "id": f"msg_{next(self.ids)}", "role": "assistant", "status": "completed",
                   "content": [{"type": "output_text", "text": out, "annotations": []}]}] if isinstance(out, str) else [
            {"type": "function_call", "id": f"fc_{i}", "call_id": i, "name": n, "arguments": json.dumps(a), "status": "completed"} for i, n, a in out]
        resp = {"id": f"resp_{next(self.ids)}", "object": "response", "created_at": 1767225600, "status": "completed", "model": body.get("model", MODEL),
                "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": body.get("tools", []),
                "usage": {"input_tokens": tin, "output_tokens": tout, "total_tokens": tin + tout,
                          "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}},
                "error": None, "incomplete_details": None, "instructions": body.get("instructions"), "metadata": {},
                "temperature": 1.0, "top_p": 1.0, "text": {"format": {"type": "text"}}, "previous_response_id": body.get("previous_response_id")}
        if not body.get("stream"):
            return web.json_response(resp)
        return await _sse(request, _response_events(resp))


def _response_events(resp: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The Responses API stream of `resp`: created, each output item (its text or arguments in one delta), completed."""
    events: list[tuple[str, dict[str, Any]]] = [("response.created", {"response": dict(resp, status="in_progress", output=[], usage=None)})]
    for i, item in enumerate(resp["output"]):
        if item["type"] == "message":
            events.append(("response.output_item.added", {"output_index": i, "item": dict(item, status="in_progress", content=[])}))
            for k, part in enumerate(item["content"]):
                at = {"item_id": item["id"], "output_index": i, "content_index": k}
                events += [("response.content_part.added", at | {"part": dict(part, text="")}),
                           ("response.output_text.delta", at | {"delta": part["text"], "logprobs": []}),
                           ("response.output_text.done", at | {"text": part["text"], "logprobs": []}),
                           ("response.content_part.done", at | {"part": part})]
        else:
            at = {"item_id": item["id"], "output_index": i}
            events += [("response.output_item.added", {"output_index": i, "item": dict(item, arguments="", status="in_progress")}),
                       ("response.function_call_arguments.delta", at | {"delta": item["arguments"]}),
                       ("response.function_call_arguments.done", at | {"arguments": item["arguments"], "name": item["name"]})]
        events.append(("response.output_item.done", {"output_index": i, "item": item}))
    return [*events, ("response.completed", {"response": resp})]


async def _sse(request: web.Request, events: list[tuple[str | None, dict[str, Any]]], done: bool = False) -> web.StreamResponse:
    """Send `events` as server-sent events (`event:` lines when named, numbered as the Responses API does)."""
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    for n, (name, data) in enumerate(events):
        head = f"event: {name}\n" if name else ""
        payload = {"type": name, "sequence_number": n, **data} if name else data
        await resp.write(f"{head}data: {json.dumps(payload)}\n\n".encode())
    if done:
        await resp.write(b"data: [DONE]\n\n")
    await resp.write_eof()
    return resp


# --- the Planner run: a sub-agent run inside a tool -----------------------------------------------------------------

PLAN = {"summary": "Louvre opens 9:00; ticket 22 EUR", "price_eur": 22}
SEARCH = "Louvre: open 9:00-18:00"
ANSWER = "The Louvre opens at 9:00."
PLANNER_CALLS = [("call_r1", "research", {"topic": "Louvre opening hours"}), ("call_l1", "lookup", {"item": "ticket"}), ("call_b1", "broken", {"x": 1})]


def planner_script(system: str, users: list[str], done: list[str]) -> Reply:
    """The model: the Planner asks for its three calls, then answers the plan; the Researcher searches, then answers."""
    if system.startswith("Researcher"):
        return ([("call_s1", "search", {"q": "Louvre hours"})], (50, 5)) if not done else (ANSWER, (60, 6))
    if system.startswith("Planner"):
        return (PLANNER_CALLS, (100, 10)) if not done else (json.dumps(PLAN), (150, 12))
    raise LookupError(system)


def instrument(fake: FakeOpenAI, api: str, service: str) -> Any:
    """The Agents SDK pointed at `fake` (`api`), traced by OpenLLMetry's instrumentor into a provider exporting to it."""
    from agents import set_default_openai_api, set_default_openai_client
    from openai import AsyncOpenAI
    from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    set_default_openai_client(AsyncOpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0), use_for_tracing=False)
    set_default_openai_api(api)
    provider = otel_provider(fake, service)
    OpenAIAgentsInstrumentor(replace_existing_processors=True).instrument(tracer_provider=provider)
    return provider


def planner(out: Path, api: str, how: str) -> dict[str, Any]:
    """Scenario `<api>-<how>`: the Planner run, with `Runner.run` (`run`) or `Runner.run_streamed` (`stream`)."""
    from agents import Agent, Runner, function_tool
    from pydantic import BaseModel

    name = f"agents-tl-{api}-{how}"
    fake = AgentsServer(planner_script)
    provider = instrument(fake, api, "agents-tl")
    inner: dict[str, Any] = {}

    class Plan(BaseModel):
        summary: str
        price_eur: int

    @function_tool
    def search(q: str) -> str:
        """Search the web."""
        return SEARCH

    researcher = Agent(name="Researcher", instructions="Researcher: answer briefly.", tools=[search], model=MODEL)

    @function_tool
    async def research(topic: str) -> str:
        """Research a topic with a sub-agent."""
        r = await Runner.run(researcher, f"Research: {topic}")
        inner.update(input=f"Research: {topic}", items=r.new_items, output=r.final_output)
        return r.final_output

    @function_tool
    def lookup(item: str) -> dict:
        """Lookup prices."""
        return {"item": item, "price_eur": 22}

    @function_tool
    def broken(x: int) -> str:
        """Always fails."""
        raise ValueError("broken tool exploded")

    agent = Agent(name="Planner", instructions="Planner: plan the visit.", tools=[research, lookup, broken], output_type=Plan, model=MODEL)

    async def main() -> Any:
        if how == "stream":
            r = Runner.run_streamed(agent, "Plan my Louvre visit.")
            async for _ in r.stream_events():
                pass
            return r
        return await Runner.run(agent, "Plan my Louvre visit.")

    try:
        r = asyncio.run(main())
        write_otlp(provider, fake, out / f"{name}.jsonl")
    finally:
        provider.shutdown()
        fake.close()
    truth = {"input": "Plan my Louvre visit.", "user_turns": ["Plan my Louvre visit."], "calls": _calls(r.new_items),
             "output": r.final_output.model_dump(), "output_text": json.dumps(r.final_output.model_dump()),
             "failed": {"broken": "ValueError: broken tool exploded"},  # what the tool raised; the SDK records it redacted
             "sub_agent": {"call": "research", "agent": "Researcher", "input": inner["input"], "calls": _calls(inner["items"]), "output": inner["output"]},
             "tokens": {"input": 100 + 50 + 60 + 150, "output": 10 + 5 + 6 + 12, "requests": 4}}
    write_truth(out, name, truth)
    return truth


def _calls(items: list[Any]) -> list[dict[str, Any]]:
    """The calls among a run's `new_items` (a handoff's too), with the output the SDK sent the model for each, in order."""
    asked = [it.raw_item for it in items if it.type in ("tool_call_item", "handoff_call_item")]
    got = {_field(it.raw_item, "call_id"): it.output if it.type == "tool_call_output_item" else _field(it.raw_item, "output")
           for it in items if it.type in ("tool_call_output_item", "handoff_output_item")}
    return [{"id": _field(c, "call_id"), "name": _field(c, "name"), "arguments": json.loads(_field(c, "arguments")),
             "result": got.get(_field(c, "call_id"))} for c in asked]


def _field(raw: Any, key: str) -> Any:
    return raw.get(key) if isinstance(raw, dict) else getattr(raw, key)


# --- a handoff, then a second run of the conversation ---------------------------------------------------------------

def handoff_script(system: str, users: list[str], done: list[str]) -> Reply:
    """Triage hands off; Billing refunds then answers the first question, and answers the balance question at once."""
    if system.startswith("Triage"):
        return [("call_h1", "transfer_to_billing", {})], (100, 5)
    if system.startswith("Billing"):
        if "refund" in users[-1]:
            return ([("call_f1", "refund", {"order": "A1"})], (120, 6)) if "call_f1" not in done else ("Refund issued for A1.", (130, 7))
        return "Your balance is 0 EUR.", (140, 8)
    raise LookupError(system)


def handoff(out: Path) -> dict[str, Any]:
    """Scenario `handoff` (Responses API): two `Runner.run`s of one conversation, the first with a handoff."""
    from agents import Agent, Runner, function_tool

    fake = AgentsServer(handoff_script)
    provider = instrument(fake, "responses", "agents-tl-h")

    @function_tool
    def refund(order: str) -> str:
        """Refund an order."""
        return f"refunded {order}"

    billing = Agent(name="Billing", instructions="Billing: handle billing.", tools=[refund], model=MODEL)
    triage = Agent(name="Triage", instructions="Triage: route.", handoffs=[billing], model=MODEL)

    async def main() -> tuple[Any, Any]:
        r = await Runner.run(triage, "I want a refund for order A1.")
        r2 = await Runner.run(r.last_agent, r.to_input_list() + [{"role": "user", "content": "And what is my balance?"}])
        return r, r2

    try:
        r, r2 = asyncio.run(main())
        write_otlp(provider, fake, out / "agents-tl-handoff.jsonl")
    finally:
        provider.shutdown()
        fake.close()
    truth = {"input": "I want a refund for order A1.", "user_turns": ["I want a refund for order A1.", "And what is my balance?"],
             "calls": _calls(r.new_items) + _calls(r2.new_items), "answers": [r.final_output, r2.final_output], "output": r2.final_output,
             "last_agent": r.last_agent.name, "tokens": {"input": 100 + 120 + 130 + 140, "output": 5 + 6 + 7 + 8, "requests": 4}}
    write_truth(out, "agents-tl-handoff", truth)
    return truth


SCENARIOS: dict[str, Callable[[Path], Any]] = {
    "responses-run": lambda out: planner(out, "responses", "run"),
    "responses-stream": lambda out: planner(out, "responses", "stream"),
    "chat_completions-run": lambda out: planner(out, "chat_completions", "run"),
    "handoff": handoff,
}


def main(argv: list[str]) -> int:
    """Record the scenarios named in `argv[1:]` (default: all) into `argv[0]`, each in a subprocess; returns how many failed."""
    import importlib.util

    if importlib.util.find_spec("opentelemetry.instrumentation.openai_agents") is None:
        print("not installed: opentelemetry-instrumentation-openai-agents (pip install opentelemetry-instrumentation-openai-agents==0.62.4)",
              file=sys.stderr)
        return 1
    return record_each_in_subprocess(__file__, argv, SCENARIOS)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
