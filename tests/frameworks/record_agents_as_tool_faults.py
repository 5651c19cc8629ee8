"""Record the runs behind `tests/test_agents_as_tool_faults.py`: an agent called as a tool (`Agent.as_tool`) whose run fails.

    python tests/frameworks/record_agents_as_tool_faults.py [OUTDIR] [--only SCENARIO ...]   (OUTDIR: tests/data/agents-as-tool-faults)

The OpenAI Agents SDK (Chat Completions), recorded at once by OpenInference (`oi-<s>.jsonl`) and by the SDK's own
export (`export-<s>.jsonl`), against the project's fake server answering by the request's content (`ByContent`; no
network). Wetter-Agent asks its tool `translate` (the Translator agent `as_tool`) to translate a text; the Translator
asks its tool `glossary` first. Each scenario runs in a process of its own and writes `<s>.outcome.json`: the run's
final output, the text the calling agent's model was sent as the call's result, the nested run's error as the SDK
raised it, and the model requests made.

- `max-turns`: the Translator runs with `max_turns=1`, so its run stops with `MaxTurnsExceeded` after its first turn;
- `tool-raised`: the Translator's `glossary` raises `ValueError` and has no failure function (`failure_error_function=None`),
  so the exception ends the Translator's run.

`as_tool`'s default failure function answers the calling agent's model with the SDK's generic error text in either case,
and (being the default) has the `translate` function span's error detail redacted; the nested agent span keeps its own.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

FRAMEWORKS = Path(__file__).resolve().parent
OUT = FRAMEWORKS.parent / "data" / "agents-as-tool-faults"
sys.path.insert(0, str(FRAMEWORKS))

from common import MODEL, agents_recording, write_outcome  # noqa: E402
from record_otel_loop_faults import call, chat  # noqa: E402
from record_subagents_streams import ByContent  # noqa: E402

ASKED = "Übersetze 'bewölkt' ins Englische."


def _script(body: dict[str, Any]) -> dict[str, Any]:
    msgs = body.get("messages") or []
    system = next((m["content"] for m in msgs if m["role"] == "system"), "")
    results = [m["content"] for m in msgs if m["role"] == "tool"]
    if system.startswith("Translator"):
        return chat("cloudy") if results else chat(None, call("call_g1", "glossary", {"term": "bewölkt"}))
    if not results:
        return chat(None, call("call_t1", "translate", {"input": "bewölkt"}))
    return chat(f"Die Übersetzung ist fehlgeschlagen: {results[-1]}")


def run(name: str, out: Path) -> dict[str, Any]:
    """Scenario `name` (module docstring), its recordings written in `out`; returns its outcome."""
    from agents import Agent, Runner, function_tool

    nested_errors: list[str] = []

    def glossary(term: str) -> str:
        """Look a term up in the glossary."""
        if name == "tool-raised":
            raise ValueError(f"Glossar für {term!r} nicht erreichbar")
        return "bewölkt: cloudy"

    class Failed(logging.Handler):
        """The error the nested run raised, as the SDK logs a failed tool's (`Tool translate failed: …`, with the exception)."""

        def emit(self, record: logging.LogRecord) -> None:
            if record.getMessage().startswith("Tool translate failed") and record.exc_info and record.exc_info[1] is not None:
                nested_errors.append(f"{type(record.exc_info[1]).__name__}: {record.exc_info[1]}")

    logging.getLogger("openai.agents").addHandler(Failed())
    with ByContent(_script) as fake, agents_recording(fake, out, name):
        translator = Agent(name="Translator", instructions="Translator: translate to English.", model=MODEL,
                           tools=[function_tool(glossary, strict_mode=False, failure_error_function=None)])
        wetter = Agent(name="Wetter-Agent", instructions="Wetter: answer weather questions.", model=MODEL,
                       tools=[translator.as_tool(tool_name="translate", tool_description="Translate text to English.",
                                                 max_turns=1 if name == "max-turns" else None)])
        answer = asyncio.run(Runner.run(wetter, ASKED)).final_output
    sent = answer.split(": ", 1)[1]  # the script echoes the call's result
    return {"final_output": answer, "call_result": sent, "nested_error": nested_errors[-1], "requests": fake.n}


SCENARIOS = ("max-turns", "tool-raised")


def main() -> None:
    args = sys.argv[1:]
    out = Path(args.pop(0)) if args and not args[0].startswith("--") else OUT
    out.mkdir(parents=True, exist_ok=True)
    if args[:1] == ["--one"]:  # the child process of one scenario: instrumentors patch the SDK process-wide
        print(json.dumps(write_outcome(out, args[1], run(args[1], out)), ensure_ascii=False))
        return
    for name in args[args.index("--only") + 1:] if "--only" in args else list(SCENARIOS):
        subprocess.run([sys.executable, __file__, str(out), "--one", name], check=True, env=os.environ | {"PYTHONWARNINGS": "ignore", "OPENAI_AGENTS_DONT_LOG_TOOL_DATA": "0"})  # (the SDK logs the error: `Failed`)


if __name__ == "__main__":
    main()
