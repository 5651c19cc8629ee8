"""Record the smolagents runs behind `tests/test_smolagents_steps_images.py`, with the installed smolagents.

    python tests/frameworks/record_smolagents_steps_images.py OUTDIR [SCENARIO ...]

Each scenario runs once, in a subprocess of its own (the instrumentor patches smolagents once per process), recorded
twice: by openinference-instrumentation-smolagents (`OUTDIR/<scenario>.oi.jsonl`, OTLP/JSON, read as `format: otel`)
and as the run's own memory (`OUTDIR/<scenario>.memory.jsonl`, `{"id", "steps": agent.memory.get_full_steps()}`,
read as `format: smolagents`). `OUTDIR/<scenario>.truth.json` holds what each tool returned or raised, each step's
`observations` (what the model was shown) and error, and what `agent.run` returned. The model is the project's
scripted loopback server (`record_oi_faults.ScriptedOpenAI`: one fixed reply per request; no network).

Scenarios:

- `max-steps`: `ToolCallingAgent(max_steps=2)`; the model calls get_weather on every step and never final_answer;
  smolagents then asks the model for an answer itself (`provide_final_answer`) and returns that text.
- `code-tool-raises`: `CodeAgent`; step 1's code calls get_weather("Atlantis"), which raises KeyError inside the
  tool; step 2 calls get_weather("Paris") and prints; step 3 calls final_answer.
- `dict-image`: `ToolCallingAgent`; one message calls lookup_order (returns a dict) and get_map (returns a PIL
  image, which smolagents saves to a temporary file and shows the model as "Stored 'image.png' in memory.");
  then final_answer.

The files keep no machine paths: install paths are scrubbed (`common.scrub`) and the temporary directory of the
saved image is written `<tmp>`.
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, otel_provider, record_each_in_subprocess, scrub, write_jsonl, write_otlp, write_truth  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402

WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}


def text(t: str) -> dict[str, Any]:
    return {"role": "assistant", "content": t}


def calls(*cs: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": list(cs)}


REPLIES = {
    "max-steps": [calls(call("c1", "get_weather", {"city": "Paris"})), calls(call("c2", "get_weather", {"city": "Tokyo"})),
                  text("Paris is sunny and Tokyo is rainy.")],
    "code-tool-raises": [text('Thought: get weather.\n<code>\nw = get_weather(city="Atlantis")\nprint(w)\n</code>'),
                         text('Thought: try Paris.\n<code>\nw = get_weather(city="Paris")\nprint(w)\n</code>'),
                         text('Thought: done.\n<code>\nfinal_answer("Paris: " + w)\n</code>')],
    "dict-image": [calls(call("c1", "lookup_order", {"order_id": "W1"}), call("c2", "get_map", {"city": "Paris"})),
                   calls(call("c3", "final_answer", {"answer": "Order W1 shipped; map attached."}))],
}
ASK = {"max-steps": "Weather in Paris and Tokyo?", "code-tool-raises": "What is the weather in Atlantis or else Paris?",
       "dict-image": "Where is order W1 and show me a map of Paris."}


def _no_tmp(path: Path) -> None:
    """Rewrite `path` with the temporary directories smolagents saved files in written `<tmp>`, and the install paths scrubbed."""
    made = re.escape(str(Path(tempfile.gettempdir()).resolve() / tempfile.gettempprefix()))  # `mkdtemp()`'s directories
    path.write_text(re.sub(made + r"[A-Za-z0-9_]+", "<tmp>", scrub(path.read_text())))


def run(out: Path, name: str) -> Any:
    from openinference.instrumentation.smolagents import SmolagentsInstrumentor
    from smolagents import CodeAgent, OpenAIServerModel, ToolCallingAgent, tool

    runs: list[dict[str, Any]] = []

    def logged(n: str, args: dict[str, Any], fn: Any) -> Any:
        e: dict[str, Any] = {"name": n, "arguments": args}
        runs.append(e)
        try:
            e["result"] = fn()
            if hasattr(e["result"], "size"):
                e["result"] = f"<PIL image {e['result'].size}>"
                return fn()
        except Exception as exc:
            e["raised"] = f"{type(exc).__name__}: {exc}"
            raise
        return e["result"]

    @tool
    def get_weather(city: str) -> str:
        """Weather in a city.

        Args:
            city: the city
        """
        return logged("get_weather", {"city": city}, lambda: WEATHER[city])

    @tool
    def lookup_order(order_id: str) -> dict:
        """Look an order up.

        Args:
            order_id: the order id
        """
        return logged("lookup_order", {"order_id": order_id}, lambda: {"order_id": order_id, "status": "shipped", "items": 2})

    @tool
    def get_map(city: str) -> Any:
        """A map of a city, as an image.

        Args:
            city: the city
        """
        from PIL import Image

        return logged("get_map", {"city": city}, lambda: Image.new("RGB", (4, 4), (200, 10, 10)))

    get_map.output_type = "image"

    with ScriptedOpenAI(REPLIES[name]) as fake:
        provider = otel_provider(fake, "smolagents")
        SmolagentsInstrumentor().instrument(tracer_provider=provider)
        model = OpenAIServerModel(model_id=MODEL, api_base=fake.base_url, api_key="sk-fake")
        if name == "code-tool-raises":
            agent: Any = CodeAgent(tools=[get_weather], model=model, max_steps=6, verbosity_level=0)
        elif name == "max-steps":
            agent = ToolCallingAgent(tools=[get_weather], model=model, max_steps=2, verbosity_level=0)
        else:
            agent = ToolCallingAgent(tools=[lookup_order, get_map], model=model, max_steps=4, verbosity_level=0)
        returned = agent.run(ASK[name])
        write_otlp(provider, fake, out / f"{name}.oi.jsonl")
        provider.shutdown()
        requests = fake.n
    steps = agent.memory.get_full_steps()
    write_jsonl(out / f"{name}.memory.jsonl", [{"id": name, "steps": steps}])
    for kind in ("oi", "memory"):
        _no_tmp(out / f"{name}.{kind}.jsonl")
    errors = [{"step": s.get("step_number"), **s["error"]} for s in steps if isinstance(s.get("error"), dict)]
    observations = [{"step": s.get("step_number"), "observations": s.get("observations"),
                     "tool_calls": [(c.get("function") or {}).get("name") for c in s.get("tool_calls") or []]}
                    for s in steps if "step_number" in s]
    write_truth(out, name, {"asked": ASK[name], "returned": returned if isinstance(returned, (str, dict, int, float)) else repr(returned),
                            "returned_type": type(returned).__name__, "tool_runs": runs, "step_errors": errors,
                            "observations": observations, "requests": requests})
    return str(returned)


SCENARIOS = {n: (lambda out, n=n: run(out, n)) for n in REPLIES}

if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:], SCENARIOS))
