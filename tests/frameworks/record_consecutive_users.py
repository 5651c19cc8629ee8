"""Record requests that hold two user messages in a row, behind `tests/test_consecutive_users.py`.

    python tests/frameworks/record_consecutive_users.py [OUTDIR] [SCENARIO ...]   (OUTDIR: tests/data/consecutive-users)

An application may send the user's context and question as two user messages before the model answers
(`"My order #W42 arrived broken."`, then `"Can I get a refund?"`). Against a scripted loopback server
(`record_otel_loop_faults.Scripted`; no network):

- `plain-oi`, `plain-tl`, `plain-v2`: a hand-written `client.chat.completions.create` loop (no span around it) under
  openinference-instrumentation-openai, opentelemetry-instrumentation-openai (OpenLLMetry) and
  opentelemetry-instrumentation-openai-v2 (span-only message content); the first request holds the two user messages,
  the second the answer and a third user message, so the user said three things over two turns;
- `agents`: the OpenAI Agents SDK's `Runner.run` with an input list of the two user items, recorded at once by
  OpenInference (`oi-agents.jsonl`) and by the SDK's own export (`export-agents.jsonl`).

Each writes its trace file(s) and `<scenario>.truth.json` (the user messages the application sent, in order, and the
answers it got). Each scenario runs in its own subprocess.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "data" / "consecutive-users"
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import agents_recording, otel_provider, record_each_in_subprocess, write_otlp, write_truth  # noqa: E402
from record_otel_loop_faults import Scripted, chat  # noqa: E402

FIRST = ["My order #W42 arrived broken.", "Can I get a refund?"]
LATER = "How long will it take?"


def _script(body: dict[str, Any], headers: Any) -> tuple[dict[str, Any], dict[str, int]]:
    n = len(body["messages"])
    users = [m for m in body["messages"] if m.get("role") == "user"]
    text = "Refund approved for #W42." if len(users) <= len(FIRST) else "It takes 3 days."
    return chat(text), {"prompt_tokens": 100 + n, "completion_tokens": 10, "total_tokens": 110 + n}


def plain(out: Path, inst: str) -> dict[str, Any]:
    """The plain loop under instrumentation `inst` (`oi`, `tl`, `v2`)."""
    if inst == "v2":  # (the v2 instrumentation records message content only when asked to, on the span)
        os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
    fake = Scripted(_script)
    provider = otel_provider(fake, "consecutive-users")
    if inst == "oi":
        from openinference.instrumentation.openai import OpenAIInstrumentor
    elif inst == "tl":
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor
    else:
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    from openai import OpenAI

    client = OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a support bot."}, *({"role": "user", "content": u} for u in FIRST)]
    answers = []
    for later in (LATER, None):
        answers.append(client.chat.completions.create(model="gpt-4o-mini", messages=messages).choices[0].message.content)
        if later is not None:
            messages += [{"role": "assistant", "content": answers[-1]}, {"role": "user", "content": later}]
    name = f"plain-{inst}"
    write_otlp(provider, fake, out / f"{name}.jsonl")
    truth = {"user_messages": [[*FIRST], [LATER]], "answers": answers}
    write_truth(out, name, truth)
    return truth


def agents(out: Path) -> dict[str, Any]:
    """The Agents SDK run given the two user items as its input."""
    from agents import Agent, Runner

    fake = Scripted(_script)
    with agents_recording(fake, out, "agents"):
        result = asyncio.run(Runner.run(Agent(name="Support", instructions="You are a support bot."),
                                        [{"role": "user", "content": u} for u in FIRST]))
    truth = {"user_messages": [[*FIRST]], "answers": [result.final_output]}
    write_truth(out, "agents", truth)
    return truth


SCENARIOS = {**{f"plain-{i}": (lambda out, i=i: plain(out, i)) for i in ("oi", "tl", "v2")}, "agents": agents}

if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:] or [str(OUT)], SCENARIOS))
