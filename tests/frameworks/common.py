"""Shared plumbing for the recorders: output files, an OTel SDK pipeline exporting OTLP/HTTP to the fake server."""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from fake_openai import FakeOpenAI

__all__ = ["MODEL", "calls_reply", "instrumented", "otel_provider", "pydantic_ai_recording", "pydantic_ai_run", "record_per_instrumentation",
           "smolagents_recording", "step_errors", "text_reply", "weather_tool", "write_jsonl", "write_memory", "write_otlp", "write_truth"]

MODEL = "gpt-4o-mini"  # the model name the clients ask for; the fake server answers to any


# Stack traces in exception events carry install paths; the recordings keep the frames, not the machine.
_PATHS_REPO = str(Path(__file__).resolve().parents[2])
_PATHS = sorted({*site.getsitepackages(), sysconfig.get_paths()["stdlib"], str(Path(__file__).resolve().parents[2])}, key=len, reverse=True)


def scrub(text: str) -> str:
    """`text` with this machine's install and checkout paths replaced by `<site-packages>`, `<stdlib>`, `<repo>`."""
    for p in _PATHS:
        name = "<site-packages>" if "-packages" in p else "<repo>" if p == _PATHS_REPO else "<stdlib>"
        text = text.replace(p, name)
    return text


def write_truth(outdir: Path, task: str, record: dict[str, Any]) -> None:
    """`<task>.truth.json`, pretty-printed with sorted keys so diffs stay readable."""
    outdir.mkdir(parents=True, exist_ok=True)
    (outdir / f"{task}.truth.json").write_text(json.dumps(record, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


def write_jsonl(path: Path, records: list[Any]) -> None:
    """One compact JSON document per line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(scrub("".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in records)))


def otel_provider(fake: FakeOpenAI, service: str) -> TracerProvider:
    """A TracerProvider whose batch processor posts OTLP/HTTP protobuf to the fake server's `/v1/traces`."""
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{fake.url}/v1/traces")))
    return provider


def pydantic_ai_provider(fake: FakeOpenAI, oi: bool) -> TracerProvider:
    """`otel_provider`'s pipeline for pydantic-ai, with OpenInference's span processor first when `oi`: processors run in
    the order added, and it must rewrite a span's attributes before the exporter's processor queues the span."""
    provider = TracerProvider(resource=Resource.create({"service.name": "pydantic-ai"}))
    if oi:
        from openinference.instrumentation.pydantic_ai import OpenInferenceSpanProcessor

        provider.add_span_processor(OpenInferenceSpanProcessor())
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{fake.url}/v1/traces")))
    return provider


def text_reply(content: str | None) -> dict[str, Any]:
    """A scripted chat reply saying `content`."""
    return {"role": "assistant", "content": content}


def calls_reply(*calls: dict[str, Any]) -> dict[str, Any]:
    """A scripted chat reply making `calls` (`record_oi_faults.call`) and saying nothing."""
    return {"role": "assistant", "content": None, "tool_calls": list(calls)}


@contextmanager
def smolagents_recording(server: FakeOpenAI, out: Path, name: str) -> Iterator[Any]:
    """`server` started with openinference-instrumentation-smolagents exporting to it; yields an `OpenAIServerModel` on it
    that does not retry (`max_retries=0`). On leaving, the spans go to `out/<name>.oi.jsonl` (OTLP/JSON) and the provider is
    shut down; `server.n` still counts the requests it answered."""
    from openinference.instrumentation.smolagents import SmolagentsInstrumentor
    from smolagents import OpenAIServerModel

    with server as fake:
        provider = otel_provider(fake, "smolagents")
        SmolagentsInstrumentor().instrument(tracer_provider=provider)
        yield OpenAIServerModel(model_id=MODEL, api_base=fake.base_url, api_key="sk-fake", client_kwargs={"max_retries": 0})
        write_otlp(provider, fake, out / f"{name}.oi.jsonl")
        provider.shutdown()


def weather_tool(weather: dict[str, str], runs: list[dict[str, Any]], raise_unknown: bool = False) -> Any:
    """The smolagents tool `get_weather(city)`: `weather[city]`, each call it ran appended to `runs` (name, arguments, result).
    With `raise_unknown`, a city not in `weather` raises `ValueError("no such city: <city>")`, appended with that `error`."""
    from smolagents import tool

    @tool
    def get_weather(city: str) -> str:
        """Weather in a city.

        Args:
            city: the city
        """
        if raise_unknown and city not in weather:
            runs.append({"name": "get_weather", "arguments": {"city": city}, "error": f"no such city: {city}"})
            raise ValueError(f"no such city: {city}")
        runs.append({"name": "get_weather", "arguments": {"city": city}, "result": weather[city]})
        return weather[city]

    return get_weather


def write_memory(out: Path, name: str, agent: Any) -> list[dict[str, Any]]:
    """`out/<name>.memory.jsonl`: `{"id", "steps": agent.memory.get_full_steps()}` (format `smolagents`); returns the steps."""
    steps = agent.memory.get_full_steps()
    write_jsonl(out / f"{name}.memory.jsonl", [{"id": name, "steps": steps}])
    return steps


def step_errors(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The errors a smolagents memory's steps kept, each with its step's number."""
    return [{"step": s.get("step_number"), **s["error"]} for s in steps if isinstance(s.get("error"), dict)]


@contextmanager
def pydantic_ai_recording(server: FakeOpenAI, path: Path, oi: bool) -> Iterator[tuple[Any, TracerProvider]]:
    """`server` started, warnings silenced (old data-format versions are deprecated: recording them is the point), and
    `pydantic_ai_provider(server, oi)` exporting to it; yields `(model, provider)`: an `OpenAIChatModel` on the server and the
    provider to instrument the agent with. On leaving, the spans go to `path` (OTLP/JSON) and the provider is shut down."""
    import warnings

    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    with server as fake, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        provider = pydantic_ai_provider(fake, oi=oi)
        yield OpenAIChatModel(MODEL, provider=OpenAIProvider(base_url=fake.base_url, api_key="sk-fake")), provider
        write_otlp(provider, fake, path)
        provider.shutdown()


def pydantic_ai_run(server: FakeOpenAI, path: Path, oi: bool, agent_for: Callable[[Any, TracerProvider], Any], prompt: str,
                    **run: Any) -> tuple[list[dict[str, Any]], Any, str | None]:
    """The agent `agent_for(model, provider)` makes run on `prompt` (`agent.run(prompt, **run)`) inside
    `pydantic_ai_recording(server, path, oi)`; returns `(messages, output, raised)`: the run's messages
    (`capture_run_messages()`, dumped by `ModelMessagesTypeAdapter` as JSON), its output (None when it raised) and what it
    raised, `<type>: <message>` (None when it returned): what the application saw is the truth."""
    import asyncio

    from pydantic_ai import capture_run_messages
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    raised = output = None
    with pydantic_ai_recording(server, path, oi=oi) as (model, provider):
        agent = agent_for(model, provider)
        with capture_run_messages() as messages:
            try:
                output = asyncio.run(agent.run(prompt, **run)).output
            except Exception as e:  # noqa: BLE001
                raised = f"{type(e).__name__}: {e}"
    return json.loads(ModelMessagesTypeAdapter.dump_json(messages)), output, raised


def instrumented(provider: TracerProvider, version: int | None = None) -> list[Any]:
    """The `capabilities=` of a pydantic-ai agent instrumented by its own `Instrumentation` into `provider`, at data-format
    `version` (None: pydantic-ai's default)."""
    from pydantic_ai.capabilities.instrumentation import Instrumentation
    from pydantic_ai.models.instrumented import InstrumentationSettings

    given = {} if version is None else {"version": version}
    return [Instrumentation(settings=InstrumentationSettings(tracer_provider=provider, **given))]


def write_otlp(provider: TracerProvider, fake: FakeOpenAI, path: Path) -> int:
    """Flush `provider` and write every OTLP export the fake server received as OTLP/JSON lines; returns the span count."""
    provider.force_flush()
    docs = fake.take_otlp()
    if not docs:
        raise RuntimeError(f"{path}: no spans were exported")
    write_jsonl(path, docs)
    return sum(len(ss.get("spans", [])) for d in docs for rs in d.get("resourceSpans", []) for ss in rs.get("scopeSpans", []))


def any_value(v: dict[str, Any]) -> Any:
    """The Python value of an OTLP/JSON `AnyValue` (int64 strings become ints)."""
    if not v:
        return None
    kind, x = next(iter(v.items()))
    if kind == "intValue":
        return int(x)
    if kind == "arrayValue":
        return [any_value(i) for i in x.get("values", [])]
    if kind == "kvlistValue":
        return {i["key"]: any_value(i.get("value", {})) for i in x.get("values", [])}
    return x


def otlp_spans(docs: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]:
    """(resource attributes, scope, span) for every span in OTLP/JSON `docs`, in file order."""
    out = []
    for doc in docs:
        for rs in doc.get("resourceSpans", []):
            resource = {a["key"]: any_value(a.get("value", {})) for a in rs.get("resource", {}).get("attributes", [])}
            for ss in rs.get("scopeSpans", []):
                out += [(resource, ss.get("scope", {}), span) for span in ss.get("spans", [])]
    return out


def write_outcome(out: Path, name: str, outcome: dict[str, Any]) -> dict[str, Any]:
    """Write `<name>.outcome.json` (what the framework's own run returned or raised) in `out`; return `outcome`."""
    (out / f"{name}.outcome.json").write_text(json.dumps(outcome, indent=1, sort_keys=True) + "\n")
    return outcome


def record_scenarios(record: Any, scenarios: Any, default_out: Path) -> None:
    """The command line of a scenario recorder: `[OUTDIR] [--only SCENARIO ...]`; `record(scenario, outdir)` each, its outcome printed."""
    args = sys.argv[1:]
    outdir = Path(args.pop(0)) if args and not args[0].startswith("--") else default_out
    outdir.mkdir(parents=True, exist_ok=True)
    for scenario in (args[args.index("--only") + 1:] if "--only" in args else list(scenarios)):
        print(scenario, json.dumps(record(scenario, outdir)))


@contextmanager
def agents_recording(fake: Any, out: Path, name: str, api: str = "chat_completions", files: tuple[str, str] = ("oi-{}.jsonl", "export-{}.jsonl")
                     ) -> Iterator[None]:
    """The OpenAI Agents SDK pointed at `fake` (api `chat_completions` or `responses`), recorded at once by OpenInference and
    by the SDK's own export; on leaving, `oi-<name>.jsonl` (OTLP/JSON) and `export-<name>.jsonl` are written in `out`
    (`files`: the two names' patterns, `{}` the name)."""
    from agents import add_trace_processor, set_default_openai_api, set_default_openai_client, set_trace_processors
    from openai import AsyncOpenAI
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    from record_conversation_faults import _Export  # the SDK's own export, one {"trace", "spans"} a trace

    set_default_openai_client(AsyncOpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0), use_for_tracing=False)
    set_default_openai_api(api)
    set_trace_processors([])
    provider = otel_provider(fake, "agents")
    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
    export = _Export()
    add_trace_processor(export)  # after instrument(), which replaces the processor list
    try:
        yield
    finally:
        write_otlp(provider, fake, out / files[0].format(name))
        write_jsonl(out / files[1].format(name), export.done)
        OpenAIAgentsInstrumentor().uninstrument()
        provider.shutdown()


def record_per_instrumentation(script: str, argv: list[str], default_out: Path, record: Callable[[Path, str, str], Any],
                               scenarios: Any, instrumentations: Any) -> int:
    """A recorder's `main` whose recordings are `<scenario>-<instrumentation>`: `record(outdir, scenario, instrumentation)` for each
    one named in `argv[1:]` (default: all) into the folder `argv[0]` (default: `default_out`), each in a subprocess of `script`
    of its own (`record_each_in_subprocess`); returns how many failed."""
    recordings = {f"{s}-{i}": (lambda out, s=s, i=i: record(out, s, i)) for s in scenarios for i in instrumentations}
    return record_each_in_subprocess(script, argv or [str(default_out)], recordings)


def record_each_in_subprocess(script: str, argv: list[str], scenarios: dict[str, Callable[[Path], Any]]) -> int:
    """A recorder's `main`: record the scenarios named in `argv[1:]` (default: all) into the folder `argv[0]`, each in a
    subprocess of `script` of its own (an instrumentor patches a library once per process); returns how many failed.

    In that subprocess (`RECORD_IN_PROCESS=1`, one name) the scenario runs here and its outcome goes to stderr as JSON.
    """
    import warnings

    out, names = Path(argv[0]), argv[1:] or list(scenarios)
    out.mkdir(parents=True, exist_ok=True)
    if len(names) == 1 and os.environ.get("RECORD_IN_PROCESS") == "1":
        warnings.simplefilter("ignore")
        print(json.dumps({names[0]: scenarios[names[0]](out)}, default=str, ensure_ascii=False), file=sys.stderr)
        return 0
    failed = 0
    for name in names:
        done = subprocess.run([sys.executable, script, str(out), name], env={**os.environ, "RECORD_IN_PROCESS": "1"})
        failed += done.returncode != 0
    return failed
