"""The plain OpenAI client tool loop every quick-start shows, and its OpenInference / Traceloop recordings."""

from __future__ import annotations

import typing
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import MODEL, otel_provider, write_otlp, write_truth
from fake_openai import FakeOpenAI
from tasks import TASKS, TOOLS, selected, truth

SYSTEM = "You are a helpful assistant."
ERROR_RESULT = "Error: order #W999 not found"  # the loop's own rendering of a raised exception
_JSON_TYPES = {str: "string", float: "number", int: "integer", bool: "boolean", dict: "object"}


def tool_schema(fn: Callable[..., Any]) -> dict[str, Any]:
    """The chat-completions `tools` entry for `fn`, from its signature and the first docstring line."""
    props: dict[str, Any] = {}
    for name, ann in typing.get_type_hints(fn).items():
        if name == "return":
            continue
        props[name] = {"type": "array", "items": {"type": "object"}} if getattr(ann, "__origin__", None) is list else {"type": _JSON_TYPES[ann]}
    doc = (fn.__doc__ or "").strip().splitlines()[0]
    return {"type": "function", "function": {"name": fn.__name__, "description": doc, "parameters": {"type": "object", "properties": props, "required": list(props)}}}


def run_loop(client: Any, task: str, tools: dict[str, Callable[..., Any]] | None = None) -> list[str]:
    """Run every user turn of `task` with `client` (an `openai.OpenAI`); returns each turn's answer.

    A raised tool exception goes back to the model as the tool message `"Error: <message>"`, as
    typical hand-written loops do. `tools` overrides the plain functions (e.g. with traced wrappers).
    """
    tools = tools or {n: TOOLS[n] for n in TASKS[task].tools}
    schemas = [tool_schema(TOOLS[n]) for n in TASKS[task].tools]
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    answers = []
    for text in TASKS[task].turns:
        messages.append({"role": "user", "content": text})
        while True:
            msg = _complete(client, messages, schemas)
            messages.append(msg)
            if not msg.get("tool_calls"):
                answers.append(msg["content"])
                break
            for call in msg["tool_calls"]:
                try:
                    result = tools[call["function"]["name"]](**json.loads(call["function"]["arguments"]))
                except Exception as e:  # the model is told, the loop goes on
                    result = f"Error: {e}"
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": str(result)})
    return answers


def _complete(client: Any, messages: list[dict[str, Any]], schemas: list[dict[str, Any]]) -> dict[str, Any]:
    return client.chat.completions.create(model=MODEL, messages=messages, tools=schemas).choices[0].message.model_dump(exclude_none=True)


def client_for(fake: FakeOpenAI) -> Any:
    """An `openai.OpenAI` client pointed at the fake server."""
    from openai import OpenAI

    return OpenAI(base_url=fake.base_url, api_key="sk-fake")


def loop_truth(task: str, answers: list[str], *, error: str | None = ERROR_RESULT) -> dict[str, Any]:
    """Ground truth of the plain loop: a raised exception is the tool result `"Error: …"` (and the call's error)."""
    return truth(TASKS[task], error_result=ERROR_RESULT, error=error, output=answers[-1])


def _instrumented(instrumentor: Any, fake: FakeOpenAI, outdir: Path, service: str) -> None:
    provider = otel_provider(fake, service)
    instrumentor.instrument(tracer_provider=provider)
    try:
        for task in selected():
            answers = run_loop(client_for(fake), task)
            write_otlp(provider, fake, outdir / f"{task}.jsonl")
            write_truth(outdir, task, loop_truth(task, answers))
    finally:
        instrumentor.uninstrument()
        provider.shutdown()


def openinference(fake: FakeOpenAI, outdir: Path) -> None:
    """`openinference-openai`: the loop under `openinference-instrumentation-openai` only (Phoenix quick-start)."""
    from openinference.instrumentation.openai import OpenAIInstrumentor

    _instrumented(OpenAIInstrumentor(), fake, outdir, "openai-loop")


def traceloop(fake: FakeOpenAI, outdir: Path) -> None:
    """`traceloop-openai`: the loop under Traceloop's `opentelemetry-instrumentation-openai`."""
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    _instrumented(OpenAIInstrumentor(), fake, outdir, "openai-loop")
