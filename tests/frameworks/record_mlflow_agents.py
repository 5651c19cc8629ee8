"""Record agent frameworks traced by MLflow's own autologging, read by `tests/test_mlflow_agents.py`.

    python tests/frameworks/record_mlflow_agents.py OUTDIR [SCENARIO ...]     (OUTDIR: tests/data/mlflow-agents)

Each scenario runs in its own subprocess (autolog patches libraries process-wide) against the project's scripted
loopback server (`record_oi_faults.ScriptedOpenAI`: request n gets reply n, usage 100+n in and 10+n out;
`fake_anthropic.ScriptedAnthropic` for Anthropic; no network) and writes `OUTDIR/<scenario>.mlflow.jsonl` (the
traces as `Trace.to_json()` writes them, read back from a SQLite store, in the order they started),
`OUTDIR/<scenario>.otlp.jsonl` (the same spans through MLflow's OTLP dual export) and `OUTDIR/<scenario>.truth.json`
(what the application's tools ran and got, the run's answer, the tokens the server sent). Scenarios (`SCENARIOS`):

- `agents-tools`: OpenAI Agents SDK (Responses API) under `mlflow.openai.autolog()` (MLflow's Agents SDK tracing
  processor): `get_weather` called twice in one response (Paris, Tokyo), then the answer;
- `agents-fail`: the same agent; the tool raises for Atlantis (the SDK's default `failure_error_function` sends the
  model an error text), then the model answers;
- `agents-handoff`: a triage agent hands off to a weather agent, which calls `get_weather` and answers;
- `agents-wrapped`: the `agents-tools` run inside the application's own span, `mlflow.start_span("chat_app",
  span_type=SpanType.AGENT)` (its inputs the question, its output the answer): the application's entry point, no agent;
- `smolagents-tools`, `smolagents-fail`: a smolagents `ToolCallingAgent` under `mlflow.smolagents.autolog()`: two calls
  in one step then `final_answer`; a tool that raises, then `final_answer`;
- `smolagents-managed`: a `ToolCallingAgent` manager given `managed_agents=[researcher, clock]` calls both in one
  reply (smolagents runs them at once, in threads; the server answers by content): `researcher` calls `get_weather`,
  `clock` calls `get_time`, each then `final_answer`; the manager then `final_answer`s;
- `smolagents-managed-code`: the same with a `CodeAgent` manager, whose code calls `researcher(task=…)` and
  `clock(task=…)`, then `final_answer(…)` (the code runs in a worker thread: MLflow writes each managed run, and the
  code's `final_answer`, as a trace of its own);
- `pydantic-tools`, `pydantic-retry`: a pydantic-ai `Agent` under `mlflow.pydantic_ai.autolog()`: two calls then the
  answer; a tool raising `ModelRetry` on a lower-case city, called again, then the answer;
- `pydantic-delegate`: agent delegation under `mlflow.pydantic_ai.autolog()`: the agent `router`'s one reply asks its
  tool `ask_researcher` twice (Paris, Tokyo); each call runs the agent `researcher` (`usage=ctx.usage`, pydantic-ai's
  delegation pattern), which calls `get_weather` and answers; `router` then answers. The two researcher runs overlap,
  so the server answers by the request's content (`record_subagents_streams.ByContent`);
- `anthropic-tools`: a plain Anthropic Messages loop under `mlflow.anthropic.autolog()` in an `@mlflow.trace` AGENT span with
  `@mlflow.trace` TOOL spans: two `tool_use` blocks, then the answer.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, record_each_in_subprocess, write_jsonl, write_truth  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402
from run_agents import ERROR_RESULT, OI_ERROR  # noqa: E402
from run_mlflow import _clean, _configure  # noqa: E402

QUESTION = "Compare the weather in Paris and Tokyo."
WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}
ANSWER = "Paris is sunny (21 C); Tokyo is rainy (14 C)."
FAIL_Q = "What is the weather in Atlantis?"
FAIL_A = "I could not get the weather for Atlantis."
NOT_FOUND = "no such city: Atlantis"


def _fc(cid: str, city: str) -> dict[str, Any]:
    return {"type": "function_call", "id": f"fc_{cid}", "call_id": cid, "name": "get_weather", "arguments": json.dumps({"city": city}),
            "status": "completed"}


def _msg(text: str, n: int = 1) -> dict[str, Any]:
    return {"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": text,
                                                                                                         "annotations": []}]}


def _usage(n: int) -> dict[str, int]:
    """What the scripted server reported for its first `n` requests."""
    return {"input_tokens": sum(100 + i for i in range(n)), "output_tokens": sum(10 + i for i in range(n)), "requests": n}


def _weather(calls: list[dict[str, Any]], cid: Any = None) -> Any:
    def get_weather(city: str) -> str:
        """Weather in a city.

        Args:
            city: the city
        """
        if city not in WEATHER:
            calls.append({"name": "get_weather", "arguments": {"city": city}, "error": NOT_FOUND})
            raise ValueError(NOT_FOUND)
        calls.append({"name": "get_weather", "arguments": {"city": city}, "result": WEATHER[city]})
        return WEATHER[city]

    return get_weather


def _write(out: Path, name: str, mlflow: Any, fake: Any, store: str, truth: dict[str, Any]) -> dict[str, Any]:
    from mlflow.tracing.provider import provider

    traces = sorted(mlflow.search_traces(return_type="list"), key=lambda t: t.info.request_time)
    write_jsonl(out / f"{name}.mlflow.jsonl", [_clean(t.to_json(), store) for t in traces])
    provider.get().force_flush()
    write_jsonl(out / f"{name}.otlp.jsonl", fake.take_otlp())
    write_truth(out, name, truth | {"traces": len(traces)})
    return truth


def agents(out: Path, name: str) -> Any:
    """`agents-*` (module docstring)."""
    replies = {"agents-tools": [[_fc("call_p", "Paris"), _fc("call_t", "Tokyo")], [_msg(ANSWER)]],
               "agents-wrapped": [[_fc("call_p", "Paris"), _fc("call_t", "Tokyo")], [_msg(ANSWER)]],
               "agents-fail": [[_fc("call_a", "Atlantis")], [_msg(FAIL_A)]],
               "agents-handoff": [[{"type": "function_call", "id": "fc_h", "call_id": "call_h", "name": "transfer_to_weather_agent",
                                    "arguments": "{}", "status": "completed"}],
                                  [_fc("call_p", "Paris"), _fc("call_t", "Tokyo")], [_msg(ANSWER)]]}[name]
    question = FAIL_Q if name == "agents-fail" else QUESTION
    with ScriptedOpenAI(replies) as fake, tempfile.TemporaryDirectory() as store:
        mlflow = _configure(fake, store)
        from agents import Agent, Runner, function_tool, set_default_openai_client
        from openai import AsyncOpenAI

        set_default_openai_client(AsyncOpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0), use_for_tracing=False)
        calls: list[dict[str, Any]] = []
        tool = function_tool(_weather(calls))
        weather = Agent(name="weather_agent", instructions="Answer with the weather tool.", tools=[tool], model=MODEL)
        if name == "agents-handoff":
            agent = Agent(name="triage", instructions="Hand weather questions to the weather agent.", handoffs=[weather], model=MODEL)
        else:
            agent = weather
        if name == "agents-wrapped":
            from mlflow.entities import SpanType

            with mlflow.start_span("chat_app", span_type=SpanType.AGENT) as span:
                span.set_inputs({"question": question})
                result = asyncio.run(Runner.run(agent, question))
                span.set_outputs(result.final_output)
        else:
            result = asyncio.run(Runner.run(agent, question))
        ids = iter(c["call_id"] for r in replies for c in r if c.get("type") == "function_call" and c["name"] == "get_weather")
        calls = [{"id": next(ids), **c} for c in calls]
        if name == "agents-fail":  # what the model got: the SDK's default failure_error_function's text; the error the SDK
            # recorded (it redacts the exception's own), its message and data's error as the export reads them
            calls[0].update(result=ERROR_RESULT, recorded_error=OI_ERROR)
        truth = {"input": question, "output": result.final_output, "calls": calls, "usage": _usage(fake.n),
                 "last_agent": result.last_agent.name}
        return _write(out, name, mlflow, fake, store, truth)


def smolagents(out: Path, name: str) -> Any:
    """`smolagents-*` (module docstring)."""
    fail = name == "smolagents-fail"
    if fail:
        replies = [{"role": "assistant", "content": None, "tool_calls": [call("call_a", "get_weather", {"city": "Atlantis"})]},
                   {"role": "assistant", "content": None, "tool_calls": [call("call_f", "final_answer", {"answer": FAIL_A})]}]
    else:
        replies = [{"role": "assistant", "content": None, "tool_calls": [call("call_p", "get_weather", {"city": "Paris"}),
                                                                          call("call_t", "get_weather", {"city": "Tokyo"})]},
                   {"role": "assistant", "content": None, "tool_calls": [call("call_f", "final_answer", {"answer": ANSWER})]}]
    question = FAIL_Q if fail else QUESTION
    with ScriptedOpenAI(replies) as fake, tempfile.TemporaryDirectory() as store:
        mlflow = _configure(fake, store, autolog="smolagents")
        from smolagents import OpenAIServerModel, ToolCallingAgent, tool

        calls: list[dict[str, Any]] = []
        model = OpenAIServerModel(model_id=MODEL, api_base=fake.base_url, api_key="sk-fake", client_kwargs={"max_retries": 0})
        agent = ToolCallingAgent(tools=[tool(_weather(calls))], model=model, max_steps=4, verbosity_level=0)
        answer = agent.run(question)
        steps = agent.memory.get_full_steps()
        ids = iter(c["id"] for r in replies for c in r["tool_calls"] if c["function"]["name"] == "get_weather")
        calls = [{"id": next(ids), **c} for c in calls]
        truth = {"input": question, "output": answer, "calls": calls, "usage": _usage(fake.n),
                 "step_errors": [s["error"] for s in steps if isinstance(s.get("error"), dict)]}
        return _write(out, name, mlflow, fake, store, truth)


MANAGED_Q = "What is the weather in Paris, and what time is it in Tokyo?"
MANAGED_A = "Paris is sunny, 21 C; it is 21:00 in Tokyo."


def _managed_script(body: dict[str, Any]) -> dict[str, Any]:
    """`smolagents-managed`'s model, told apart by the first user message (a managed agent's names it) and how many
    replies it has had."""
    said = [m for m in body["messages"] if m["role"] != "system"]
    first = "".join(p.get("text", "") for p in said[0]["content"]) if isinstance(said[0]["content"], list) else said[0]["content"]
    done = sum(1 for m in said if m["role"] == "assistant")
    script = {"researcher": [call("call_r1", "get_weather", {"city": "Paris"}), call("call_r2", "final_answer", {"answer": "Paris: sunny, 21 C"})],
              "clock": [call("call_c1", "get_time", {"zone": "Asia/Tokyo"}), call("call_c2", "final_answer", {"answer": "Tokyo: 21:00"})]}
    for agent, replies in script.items():
        if f"You're a helpful agent named '{agent}'" in first:
            return {"role": "assistant", "content": None, "tool_calls": [replies[min(done, 1)]]}
    if not body.get("tools"):  # a `CodeAgent` manager: it is offered no tools, its model writes code
        return {"role": "assistant", "content": 'Thought: ask both.\n<code>\nw = researcher(task="Weather in Paris?")\nt = clock(task="Time in Tokyo?")\n'
                'print(w, t)\n</code>' if done == 0 else f'Thought: done.\n<code>\nfinal_answer("{MANAGED_A}")\n</code>'}
    if done == 0:
        return {"role": "assistant", "content": None, "tool_calls": [call("call_m1", "researcher", {"task": "Weather in Paris?"}),
                                                                      call("call_m2", "clock", {"task": "Time in Tokyo?"})]}
    return {"role": "assistant", "content": None, "tool_calls": [call("call_m3", "final_answer", {"answer": MANAGED_A})]}


def smolagents_managed(out: Path, name: str) -> Any:
    """`smolagents-managed` (module docstring)."""
    from record_subagents_streams import ByContent

    with ByContent(_managed_script) as fake, tempfile.TemporaryDirectory() as store:
        mlflow = _configure(fake, store, autolog="smolagents")
        from smolagents import CodeAgent, OpenAIServerModel, ToolCallingAgent, tool

        calls: list[dict[str, Any]] = []

        def get_time(zone: str) -> str:
            """The time in a time zone.

            Args:
                zone: the time zone
            """
            calls.append({"name": "get_time", "arguments": {"zone": zone}, "result": "21:00"})
            return "21:00"

        model = OpenAIServerModel(model_id=MODEL, api_base=fake.base_url, api_key="sk-fake", client_kwargs={"max_retries": 0})
        managed = [ToolCallingAgent(tools=[tool(_weather(calls))], model=model, max_steps=3, verbosity_level=0, name="researcher",
                                    description="Finds the weather."),
                   ToolCallingAgent(tools=[tool(get_time)], model=model, max_steps=3, verbosity_level=0, name="clock", description="Tells the time.")]
        manager = (CodeAgent if name.endswith("-code") else ToolCallingAgent)(tools=[], model=model, max_steps=3, verbosity_level=0, managed_agents=managed)
        answer = manager.run(MANAGED_Q)
        # each managed agent: the task smolagents gave it (its prompt template around the manager's) and what it answered
        runs = [{"name": a.name, "task": a.task, "answer": next(c.arguments["answer"] for c in a.memory.steps[-1].tool_calls)} for a in managed]
        truth = {"input": MANAGED_Q, "output": answer, "calls": calls, "managed": runs}
        return _write(out, name, mlflow, fake, store, truth)


def pydantic(out: Path, name: str) -> Any:
    """`pydantic-*` (module docstring)."""
    retry = name == "pydantic-retry"
    if retry:
        replies = [{"role": "assistant", "content": None, "tool_calls": [call("call_l", "get_weather", {"city": "paris"})]},
                   {"role": "assistant", "content": None, "tool_calls": [call("call_p", "get_weather", {"city": "Paris"})]},
                   {"role": "assistant", "content": "Paris is sunny (21 C)."}]
    else:
        replies = [{"role": "assistant", "content": None, "tool_calls": [call("call_p", "get_weather", {"city": "Paris"}),
                                                                          call("call_t", "get_weather", {"city": "Tokyo"})]},
                   {"role": "assistant", "content": ANSWER}]
    question = "What is the weather in Paris?" if retry else QUESTION
    with ScriptedOpenAI(replies) as fake, tempfile.TemporaryDirectory() as store:
        mlflow = _configure(fake, store, autolog="pydantic_ai")
        from pydantic_ai import Agent, ModelRetry
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        calls: list[dict[str, Any]] = []
        agent = Agent(OpenAIChatModel(MODEL, provider=OpenAIProvider(base_url=fake.base_url, api_key="sk-fake")), instructions="Use the tool.")

        @agent.tool_plain
        def get_weather(city: str) -> str:
            """Weather in a city."""
            if not city[:1].isupper():
                calls.append({"name": "get_weather", "arguments": {"city": city}, "error": "Capitalise the city."})
                raise ModelRetry("Capitalise the city.")
            calls.append({"name": "get_weather", "arguments": {"city": city}, "result": WEATHER[city]})
            return WEATHER[city]

        result = agent.run_sync(question)
        ids = iter(c["id"] for r in replies for c in r.get("tool_calls") or [])
        calls = [{"id": next(ids), **c} for c in calls]
        truth = {"input": question, "output": result.output, "calls": calls, "usage": _usage(fake.n)}
        return _write(out, name, mlflow, fake, store, truth)


DELEGATED = "Ask the researcher about Paris and about Tokyo, then summarise."
DELEGATED_A = "Paris is sunny; Tokyo is rainy."


def _delegate_script(body: dict[str, Any]) -> dict[str, Any]:
    """`pydantic-delegate`'s model: the router asks for both researches, then answers; a researcher asks for its city's
    weather, then answers with it (told apart by their instructions, the city by the researcher's prompt)."""
    msgs = body["messages"]
    answered = any(m["role"] == "tool" for m in msgs)
    if next(m["content"] for m in msgs if m["role"] == "system").startswith("Router"):
        if answered:
            return {"role": "assistant", "content": DELEGATED_A}
        return {"role": "assistant", "content": None, "tool_calls": [call("call_d1", "ask_researcher", {"question": "Weather in Paris?"}),
                                                                      call("call_d2", "ask_researcher", {"question": "Weather in Tokyo?"})]}
    city = "Paris" if "Paris" in next(m["content"] for m in msgs if m["role"] == "user") else "Tokyo"
    if answered:
        return {"role": "assistant", "content": f"{city}: {WEATHER[city]}"}
    return {"role": "assistant", "content": None, "tool_calls": [call(f"call_w_{city}", "get_weather", {"city": city})]}


def pydantic_delegate(out: Path, name: str) -> Any:
    """`pydantic-delegate` (module docstring)."""
    from record_subagents_streams import ByContent

    with ByContent(_delegate_script) as fake, tempfile.TemporaryDirectory() as store:
        mlflow = _configure(fake, store, autolog="pydantic_ai")
        from pydantic_ai import Agent, RunContext
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        model = OpenAIChatModel(MODEL, provider=OpenAIProvider(base_url=fake.base_url, api_key="sk-fake"))
        calls: list[dict[str, Any]] = []
        researcher = Agent(model, name="researcher", instructions="Researcher: use get_weather.", tools=[_weather(calls)])
        router = Agent(model, name="router", instructions="Router: delegate to the researcher.")

        async def ask_researcher(ctx: RunContext[None], question: str) -> str:
            """Ask the research agent a question."""
            answer = (await researcher.run(question, usage=ctx.usage)).output
            calls.append({"name": "ask_researcher", "arguments": {"question": question}, "result": answer})
            return answer

        # (this module's annotations are text, which pydantic-ai resolves in the module's globals: give it the type)
        ask_researcher.__annotations__["ctx"] = RunContext[None]
        router.tool(ask_researcher)

        result = router.run_sync(DELEGATED)
        for c in calls:  # (the model's ids: the router's by question, each researcher's by city)
            c["id"] = {"Weather in Paris?": "call_d1", "Weather in Tokyo?": "call_d2"}.get(c["arguments"].get("question")) or f"call_w_{c['arguments'].get('city')}"
            c["agent"] = "router" if c["name"] == "ask_researcher" else "researcher"
        truth = {"input": DELEGATED, "output": result.output, "calls": calls, "usage": _usage(fake.n)}
        return _write(out, name, mlflow, fake, store, truth)


def anthropic(out: Path, name: str) -> Any:
    """`anthropic-tools` (module docstring)."""
    from fake_anthropic import ScriptedAnthropic

    use = {"input_tokens": 50, "output_tokens": 20, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
    replies = [([{"type": "text", "text": "Checking both."},
                 {"type": "tool_use", "id": "toolu_p", "name": "get_weather", "input": {"city": "Paris"}},
                 {"type": "tool_use", "id": "toolu_t", "name": "get_weather", "input": {"city": "Tokyo"}}], use),
               ([{"type": "text", "text": ANSWER}], use | {"input_tokens": 80, "output_tokens": 15})]
    tools = [{"name": "get_weather", "description": "Weather in a city.", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]
    with ScriptedAnthropic(replies) as fake, tempfile.TemporaryDirectory() as store:
        mlflow = _configure(fake, store, autolog="anthropic")
        import anthropic as sdk
        from mlflow.entities import SpanType

        client = sdk.Anthropic(base_url=fake.url, api_key="sk-fake", max_retries=0)
        calls: list[dict[str, Any]] = []
        get_weather = mlflow.trace(_weather(calls), name="get_weather", span_type=SpanType.TOOL)

        @mlflow.trace(name="agent", span_type=SpanType.AGENT)
        def agent(question: str) -> str:
            messages: list[Any] = [{"role": "user", "content": question}]
            while True:
                r = client.messages.create(model="claude-sonnet-4-5", max_tokens=512, messages=messages, tools=tools)
                uses = [b for b in r.content if b.type == "tool_use"]
                if not uses:
                    return "".join(b.text for b in r.content if b.type == "text")
                messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in r.content]})
                messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": b.id, "content": get_weather(**b.input)}
                                                             for b in uses]})

        answer = agent(QUESTION)
        ids = iter(["toolu_p", "toolu_t"])
        calls = [{"id": next(ids), **c} for c in calls]
        truth = {"input": QUESTION, "output": answer, "calls": calls, "usage": {"input_tokens": 130, "output_tokens": 35, "requests": 2}}
        return _write(out, name, mlflow, fake, store, truth)


SCENARIOS = {
    **{n: (lambda out, n=n: agents(out, n)) for n in ("agents-tools", "agents-fail", "agents-handoff", "agents-wrapped")},
    **{n: (lambda out, n=n: smolagents(out, n)) for n in ("smolagents-tools", "smolagents-fail")},
    **{n: (lambda out, n=n: smolagents_managed(out, n)) for n in ("smolagents-managed", "smolagents-managed-code")},
    **{n: (lambda out, n=n: pydantic(out, n)) for n in ("pydantic-tools", "pydantic-retry")},
    "pydantic-delegate": lambda out: pydantic_delegate(out, "pydantic-delegate"),
    "anthropic-tools": lambda out: anthropic(out, "anthropic-tools"),
}


def main(argv: list[str]) -> int:
    """Record the scenarios named in `argv[1:]` (default: all) into the folder `argv[0]`; returns how many failed."""
    return record_each_in_subprocess(__file__, argv, SCENARIOS)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
