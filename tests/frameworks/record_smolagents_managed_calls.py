"""Record smolagents managers that call several managed agents, or one managed agent twice, under both
openinference-instrumentation-smolagents and `mlflow.smolagents.autolog()`; read by `tests/test_smolagents_managed_calls.py`
(and `tests/test_smolagents_turn_agents.py`).

    python tests/frameworks/record_smolagents_managed_calls.py [OUTDIR] [SCENARIO ...]   (OUTDIR: tests/data/smolagents-managed-calls)

Each scenario runs twice, each time in a subprocess of its own (an instrumentor or an autolog patches smolagents
process-wide), against the project's loopback server answering by content (`record_subagents_streams.ByContent`: the
manager and its managed agents, which a `ToolCallingAgent` runs in threads at once, are told apart by their prompts; no
network): under OpenInference (`<s>.oi.jsonl`, OTLP/JSON, format `otel`) and under MLflow (`<s>.mlflow.jsonl`,
`Trace.to_json()` of every trace, format `mlflow`, and `<s>.otlp.jsonl`, the same spans over OTLP, format `otel`). Both
runs write `<s>.<oi|mlflow>.truth.json`, what the application itself saw:

- `input`, `output`: the manager's task and the answer its `run` returned;
- `steps`: the manager's memory steps that made calls: each call's `id`, `name` and `arguments` as smolagents parsed them,
  and the step's `observations` (the one text smolagents joined its calls' results into);
- `managed`: each managed agent's call in the order it returned, from smolagents' own `MultiStepAgent.__call__`: the
  agent's `name`, the `task` its manager passed, the `run_task` smolagents ran it on (its `managed_agent.task` template
  around that task) and the `report` it returned to its manager;
- `tools`: each plain tool's `name`, `arguments` and `result` in the order they ran;
- `seen`: the tool messages of the manager's last model request (what its model was shown), and `requests`.

Scenarios:

- `tool-two-managed`: a `ToolCallingAgent` manager's first reply calls its managed agents `researcher` (which calls
  `get_weather`, then answers) and `writer` (which answers at once); the manager then answers;
- `tool-managed-twice`: its first reply calls `researcher` for Paris alone, its second `researcher` for Tokyo beside
  `get_time`; then it answers;
- `code-two-managed`: a `CodeAgent` manager whose code calls `researcher(task=…)` and `writer(task=…)` and prints both
  reports, then `final_answer(…)`;
- `tool-named-manager`: `tool-two-managed` with the manager named too (`name="manager"`), which OpenInference names its
  run's span after (`manager.run`) and MLflow records as the run's `name`; its truth also holds the agents' names
  (`agents`: the manager's, then its managed agents').
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, calls_reply, otel_provider, record_each_in_subprocess, text_reply, weather_tool, write_jsonl, write_otlp, write_truth  # noqa: E402
from mlflow_smolagents_common import WEATHER, final_reply  # noqa: E402
from record_oi_faults import call  # noqa: E402

QUESTION = "What is the weather in Paris and Tokyo, with a line about Paris?"
ANSWER = "Paris: sunny, 21 C. Tokyo: rainy, 14 C. Paris glows today."
PARIS, TOKYO = "Find the weather in Paris.", "Find the weather in Tokyo."
LINE = "Write one line about a sunny day in Paris."
WRITTEN = "Paris glows today."
SCENARIOS = ("tool-two-managed", "tool-managed-twice", "code-two-managed", "tool-named-manager")


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    return "".join(p.get("text", "") for p in content) if isinstance(content, list) else content or ""


def _script(name: str, seen: list[dict[str, Any]]):  # noqa: ANN202
    """The model of scenario `name`: each managed agent (its task names it) and the manager (its first message is the
    question) by what it was asked; the manager's requests' bodies go to `seen`."""
    def script(body: dict[str, Any]) -> dict[str, Any]:
        said = [m for m in body["messages"] if m["role"] != "system"]
        first, done = _text(said[0]), sum(1 for m in said if m["role"] == "assistant")
        if "You're a helpful agent named 'researcher'" in first:
            city = "Tokyo" if "Tokyo" in first else "Paris"
            return calls_reply(call(f"call_r{city[0]}1", "get_weather", {"city": city})) if done == 0 else \
                calls_reply(call(f"call_r{city[0]}2", "final_answer", {"answer": f"{city}: {WEATHER[city]}"}))
        if "You're a helpful agent named 'writer'" in first:
            return calls_reply(call("call_w1", "final_answer", {"answer": WRITTEN}))
        seen.append(body)
        if name.startswith("code-"):
            return text_reply(f'Thought: ask both.\n<code>\nw = researcher(task="{PARIS}")\ns = writer(task="{LINE}")\nprint(w)\nprint(s)\n</code>') \
                if done == 0 else final_reply(ANSWER)
        script = [[call("call_m1", "researcher", {"task": PARIS}), call("call_m2", "writer", {"task": LINE})]] if name in ("tool-two-managed", "tool-named-manager") \
            else [[call("call_m1", "researcher", {"task": PARIS})], [call("call_m2", "get_time", {}), call("call_m3", "researcher", {"task": TOKYO})]]
        return calls_reply(*script[done]) if done < len(script) else calls_reply(call("call_m9", "final_answer", {"answer": ANSWER}))
    return script


def _agents(model: Any, name: str, tools: list[dict[str, Any]]) -> Any:
    """The manager of scenario `name` with its managed agents `researcher` and `writer` (`ToolCallingAgent`s)."""
    from smolagents import CodeAgent, ToolCallingAgent, tool

    @tool
    def get_time() -> str:
        """The time now, in UTC."""
        tools.append({"name": "get_time", "arguments": {}, "result": "12:00Z"})
        return "12:00Z"

    researcher = ToolCallingAgent(tools=[weather_tool(WEATHER, tools)], model=model, max_steps=3, verbosity_level=0, name="researcher",
                                  description="Finds the weather.")
    writer = ToolCallingAgent(tools=[], model=model, max_steps=3, verbosity_level=0, name="writer", description="Writes a line.")
    kind = CodeAgent if name.startswith("code-") else ToolCallingAgent
    named = {"name": "manager", "description": "Answers the user."} if name == "tool-named-manager" else {}
    return kind(tools=[get_time], model=model, max_steps=4, verbosity_level=0, managed_agents=[researcher, writer], **named)


def _watch_managed(managed: list[dict[str, Any]]) -> None:
    """Record each managed agent's call as smolagents makes it (`MultiStepAgent.__call__`, which neither instrumentation
    wraps): the task passed, the task the run was given and the report returned."""
    from smolagents.agents import MultiStepAgent

    original = MultiStepAgent.__call__

    def watched(self: Any, task: str, **kwargs: Any) -> Any:
        report = original(self, task, **kwargs)
        managed.append({"name": self.name, "task": task, "run_task": self.task, "report": report})
        return report

    MultiStepAgent.__call__ = watched  # type: ignore[method-assign]


def _truth(name: str, manager: Any, answer: Any, tools: list[dict[str, Any]], managed: list[dict[str, Any]],
           seen: list[dict[str, Any]], requests: int) -> dict[str, Any]:
    steps = [{"calls": [{"id": c["id"], "name": c["function"]["name"], "arguments": c["function"]["arguments"]} for c in s["tool_calls"]],
              "observations": s.get("observations")}
             for s in manager.memory.get_full_steps() if s.get("tool_calls")]
    last = seen[-1]["messages"] if seen else []
    named = {"agents": [manager.name, *(a.name for a in manager.managed_agents.values())]} if name == "tool-named-manager" else {}
    return {**named, "input": QUESTION, "output": answer, "steps": steps, "managed": managed, "tools": tools,
            "seen": [{"role": m["role"], "text": _text(m), "tool_call_id": m.get("tool_call_id")} for m in last
                     if m["role"] != "system" and (m["role"] == "tool" or _text(m).startswith("Observation:"))],
            "requests": requests}


def record_oi(out: Path, name: str) -> dict[str, Any]:
    """`name` under openinference-instrumentation-smolagents."""
    from openinference.instrumentation.smolagents import SmolagentsInstrumentor
    from record_subagents_streams import ByContent
    from smolagents import OpenAIServerModel

    seen: list[dict[str, Any]] = []
    tools: list[dict[str, Any]] = []
    managed: list[dict[str, Any]] = []
    _watch_managed(managed)
    with ByContent(_script(name, seen)) as fake:
        provider = otel_provider(fake, "smolagents-managed")
        SmolagentsInstrumentor().instrument(tracer_provider=provider)
        model = OpenAIServerModel(model_id=MODEL, api_base=fake.base_url, api_key="sk-fake", client_kwargs={"max_retries": 0})
        manager = _agents(model, name, tools)
        answer = manager.run(QUESTION)
        write_otlp(provider, fake, out / f"{name}.oi.jsonl")
        provider.shutdown()
        truth = _truth(name, manager, answer, tools, managed, seen, fake.n)
    write_truth(out, f"{name}.oi", truth)
    return truth


def record_mlflow(out: Path, name: str) -> dict[str, Any]:
    """`name` under `mlflow.smolagents.autolog()`."""
    from record_subagents_streams import ByContent
    from run_mlflow import _clean, _configure

    seen: list[dict[str, Any]] = []
    tools: list[dict[str, Any]] = []
    managed: list[dict[str, Any]] = []
    with ByContent(_script(name, seen)) as fake, tempfile.TemporaryDirectory() as store:
        mlflow = _configure(fake, store, autolog="smolagents")
        _watch_managed(managed)
        from smolagents import OpenAIServerModel

        model = OpenAIServerModel(model_id=MODEL, api_base=fake.base_url, api_key="sk-fake", client_kwargs={"max_retries": 0})
        manager = _agents(model, name, tools)
        answer = manager.run(QUESTION)
        truth = _truth(name, manager, answer, tools, managed, seen, fake.n)
        from mlflow.tracing.provider import provider

        traces = sorted(mlflow.search_traces(return_type="list"), key=lambda t: t.info.request_time)
        write_jsonl(out / f"{name}.mlflow.jsonl", [_clean(t.to_json(), store) for t in traces])
        provider.get().force_flush()
        write_jsonl(out / f"{name}.otlp.jsonl", fake.take_otlp())
        truth["traces"] = len(traces)
    write_truth(out, f"{name}.mlflow", truth)
    return truth


def main(argv: list[str]) -> int:
    """Record the scenarios named in `argv[1:]` (default: all, under both instrumentations) into the folder `argv[0]`."""
    recorders = {f"{n}.{how}": (lambda out, n=n, how=how: (record_oi if how == "oi" else record_mlflow)(out, n)) for n in SCENARIOS for how in ("oi", "mlflow")}
    names = [r for a in argv[1:] for r in recorders if r == a or r.startswith(f"{a}.")]
    return record_each_in_subprocess(__file__, [argv[0], *names], recorders)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or [str(HERE.parent / "data" / "smolagents-managed-calls")]))
