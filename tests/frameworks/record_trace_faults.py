"""Record the runs behind `tests/test_traces_*.py`, with the installed libraries (`tests/frameworks/constraints.txt`).

    python tests/frameworks/record_trace_faults.py [OUTDIR] [SCENARIO ...]   (OUTDIR: tests/data/trace-faults)

Each scenario runs in a subprocess of its own (an instrumentor patches a library process-wide) against the project's
scripted loopback server (`record_oi_faults.ScriptedOpenAI`: request n gets `replies[n]` and reports `100 + n` input and
`10 + n` output tokens; no network), and writes its files and `<scenario>.outcome.json` (what the framework returned).

- `oi-smolagents-managed` (`.jsonl`, OTLP/JSON): openinference-instrumentation-smolagents over a smolagents
  `ToolCallingAgent` manager given `managed_agents=[researcher]`; the manager calls `get_time` and the `researcher`
  agent in one reply (the researcher calls `get_weather`, then answers), then answers.
- `oi-smolagents-managed-code`: the same with a `CodeAgent` manager, whose code calls `get_time()` and
  `researcher(task=…)`, then `final_answer(…)`.
- `oi-smolagents-code-args`: a `CodeAgent` whose code calls its tools as Python: `@tool` functions with a positional
  argument, a positional and a keyword one, and none, and a hand-written `Tool` whose `inputs` declare its parameters
  in another order than its `forward` takes them, with positional arguments; `outcome.calls` is what each tool's
  function was given, by its own parameter names.
- `langfuse-partial-cost` (`.otlp.jsonl` as the Langfuse SDK exported it, `.json` as the public API returns it, built
  by `langfuse_api.py`): a loop under `@observe(as_type="agent")` whose model requests are generations the
  application records itself (`start_as_current_observation(as_type="generation")`), with `cost_details` from its
  price table for `gpt-4o-mini` and none for the local model `llama-local` it sends the second request to.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, otel_provider, record_each_in_subprocess, write_jsonl, write_otlp, write_outcome  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402

OUT = HERE.parent / "data" / "trace-faults"
WEATHER = {"Paris": "sunny, 21 C"}


# --- smolagents: a managed agent run by its manager's call ------------------------------------------------------
ASK = "What is the weather in Paris, and what time is it?"
TASK = "Find the weather in Paris."


def smolagents_managed(out: Path, code: bool = False) -> Any:
    from openinference.instrumentation.smolagents import SmolagentsInstrumentor
    from smolagents import OpenAIServerModel, ToolCallingAgent, tool

    @tool
    def get_weather(city: str) -> str:
        """Weather in a city.

        Args:
            city: the city
        """
        return WEATHER[city]

    @tool
    def get_time() -> str:
        """The time now, UTC."""
        return "12:00Z"

    replies = [  # in the order smolagents asks: manager, researcher, researcher, manager
        {"role": "assistant", "content": None, "tool_calls": [call("call_m1", "get_time", {}), call("call_m2", "researcher", {"task": TASK})]},
        {"role": "assistant", "content": None, "tool_calls": [call("call_r1", "get_weather", {"city": "Paris"})]},
        {"role": "assistant", "content": None, "tool_calls": [call("call_r2", "final_answer", {"answer": "Paris: sunny, 21 C"})]},
        {"role": "assistant", "content": None, "tool_calls": [call("call_m3", "final_answer", {"answer": "Paris is sunny, 21 C; it is 12:00 UTC."})]},
    ]
    if code:  # a CodeAgent manager: its code calls the tool and the managed agent
        replies[0] = {"role": "assistant", "content": f'Thought: ask both.\n<code>\nt = get_time()\nw = researcher(task="{TASK}")\nprint(t, w)\n</code>'}
        replies[3] = {"role": "assistant", "content": 'Thought: done.\n<code>\nfinal_answer("Paris is sunny, 21 C; it is 12:00 UTC.")\n</code>'}
    name = "oi-smolagents-managed-code" if code else "oi-smolagents-managed"
    with ScriptedOpenAI(replies) as fake:
        provider = otel_provider(fake, "smolagents-managed")
        SmolagentsInstrumentor().instrument(tracer_provider=provider)
        model = OpenAIServerModel(model_id=MODEL, api_base=fake.base_url, api_key="sk-fake")
        researcher = ToolCallingAgent(tools=[get_weather], model=model, max_steps=3, verbosity_level=0, name="researcher",
                                      description="Finds the weather.")
        if code:
            from smolagents import CodeAgent

            manager = CodeAgent(tools=[get_time], model=model, max_steps=3, verbosity_level=0, managed_agents=[researcher])
        else:
            manager = ToolCallingAgent(tools=[get_time], model=model, max_steps=3, verbosity_level=0, managed_agents=[researcher])
        answer = manager.run(ASK)
        write_otlp(provider, fake, out / f"{name}.jsonl")
        SmolagentsInstrumentor().uninstrument()
        provider.shutdown()
        return write_outcome(out, name, {"final_output": str(answer), "requests": fake.n})


def smolagents_code_args(out: Path) -> Any:
    from openinference.instrumentation.smolagents import SmolagentsInstrumentor
    from smolagents import CodeAgent, OpenAIServerModel, Tool, tool

    given: list[dict[str, Any]] = []  # what each tool's function got, in the order they ran

    @tool
    def get_weather(city: str) -> str:
        """Weather in a city.

        Args:
            city: the city
        """
        given.append({"name": "get_weather", "arguments": {"city": city}})
        return WEATHER[city]

    @tool
    def convert(celsius: float, to: str = "F") -> str:
        """A temperature in another unit.

        Args:
            celsius: degrees Celsius
            to: the unit, F or K
        """
        given.append({"name": "convert", "arguments": {"celsius": celsius, "to": to}})
        return f"{celsius * 9 / 5 + 32:g} F" if to == "F" else f"{celsius + 273.15:g} K"

    @tool
    def get_time() -> str:
        """The time now, UTC."""
        given.append({"name": "get_time", "arguments": {}})
        return "12:00Z"

    class Forecast(Tool):  # its `inputs` name `days` first, its `forward` takes `city` first
        name, description, output_type = "forecast", "A city's forecast for some days.", "string"
        inputs = {"days": {"type": "integer", "description": "how many days"}, "city": {"type": "string", "description": "the city"}}

        def forward(self, city: str, days: int) -> str:
            given.append({"name": "forecast", "arguments": {"city": city, "days": days}})
            return f"{city}: sunny for {days} days"

    code = 'w = get_weather("Paris")\nf = convert(21, to="F")\nc = forecast("Paris", 2)\nt = get_time()\nprint(w, f, c, t)'
    replies = [{"role": "assistant", "content": f"Thought: ask.\n<code>\n{code}\n</code>"},
               {"role": "assistant", "content": 'Thought: done.\n<code>\nfinal_answer("Paris: sunny, 21 C (69.8 F), 2 days; 12:00 UTC.")\n</code>'}]
    with ScriptedOpenAI(replies) as fake:
        provider = otel_provider(fake, "smolagents-code-args")
        SmolagentsInstrumentor().instrument(tracer_provider=provider)
        model = OpenAIServerModel(model_id=MODEL, api_base=fake.base_url, api_key="sk-fake")
        agent = CodeAgent(tools=[get_weather, convert, Forecast(), get_time], model=model, max_steps=3, verbosity_level=0)
        answer = agent.run("Weather, forecast and time for Paris?")
        write_otlp(provider, fake, out / "oi-smolagents-code-args.jsonl")
        SmolagentsInstrumentor().uninstrument()
        provider.shutdown()
        return write_outcome(out, "oi-smolagents-code-args", {"final_output": str(answer), "requests": fake.n, "calls": given})


# --- Langfuse: generations of which some carry a cost ---------------------------------------------------------
PRICES = {MODEL: (0.15e-6, 0.6e-6)}  # USD per input / output token; `llama-local` has no price


def langfuse_partial_cost(out: Path) -> Any:
    from langfuse import Langfuse, observe
    from openai import OpenAI

    from langfuse_api import trace_with_full_details

    replies = [{"role": "assistant", "content": None, "tool_calls": [call("call_w1", "get_weather", {"city": "Paris"})]},
               {"role": "assistant", "content": "Paris is sunny, 21 C."}]
    with ScriptedOpenAI(replies) as fake:
        langfuse = Langfuse(public_key="pk-lf-fake", secret_key="sk-lf-fake", base_url=fake.url, environment="recording")
        client = OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
        weather = observe(lambda city: WEATHER[city], name="get_weather", as_type="tool")
        costs: list[float | None] = []

        def ask(model: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
            with langfuse.start_as_current_observation(as_type="generation", name="chat", model=model, input=messages) as gen:
                r = client.chat.completions.create(model=model, messages=messages, tools=tools)
                message = r.choices[0].message.model_dump(exclude_none=True)
                price = PRICES.get(model)
                cost = None if price is None else r.usage.prompt_tokens * price[0] + r.usage.completion_tokens * price[1]
                costs.append(cost)
                gen.update(output=message, usage_details={"input": r.usage.prompt_tokens, "output": r.usage.completion_tokens},
                           **({"cost_details": {"total": cost}} if cost is not None else {}))
                return message

        @observe(name="agent", as_type="agent")
        def agent(question: str) -> str:
            messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
            model = MODEL
            while True:
                message = ask(model, messages)
                messages.append(message)
                if not message.get("tool_calls"):
                    return message["content"]
                for c in message["tool_calls"]:
                    messages.append({"role": "tool", "tool_call_id": c["id"], "content": weather(**json.loads(c["function"]["arguments"]))})
                model = "llama-local"  # the follow-up goes to the local model, which has no price

        answer = agent("Weather in Paris?")
        langfuse.flush()
        docs = fake.take_otlp()
        langfuse.shutdown()
    write_jsonl(out / "langfuse-partial-cost.otlp.jsonl", docs)
    write_jsonl(out / "langfuse-partial-cost.json", trace_with_full_details(docs))
    return write_outcome(out, "langfuse-partial-cost", {"final_output": answer, "costs": costs})


SCENARIOS = {"oi-smolagents-managed": smolagents_managed, "oi-smolagents-managed-code": lambda out: smolagents_managed(out, code=True),
             "oi-smolagents-code-args": smolagents_code_args, "langfuse-partial-cost": langfuse_partial_cost}


def main(argv: list[str]) -> int:
    """Record the scenarios named in `argv[1:]` (default: all) into `argv[0]`, each in a subprocess; returns how many failed."""
    return record_each_in_subprocess(__file__, argv or [str(OUT)], SCENARIOS)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
