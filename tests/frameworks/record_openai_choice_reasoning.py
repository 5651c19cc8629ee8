"""Record plain Chat Completions loops whose replies carry `reasoning_content`, with `n=2` choices or one, behind
`tests/test_openai_choice_reasoning.py`.

    python tests/frameworks/record_openai_choice_reasoning.py [OUTDIR] [SCENARIO ...]   (OUTDIR: tests/data/openai-choice-reasoning)

A hand-written `client.chat.completions.create` tool loop (the tool `get_weather`; `choices[0].message` appended to the
history without its reasoning, its calls run and their results sent back) under openinference-instrumentation-openai
(`oi-…`) or opentelemetry-instrumentation-openai (OpenLLMetry, `tl-…`), against `record_openai_choices.Choices` (request
n gets the choices `replies[n]`; no network). Every choice's message has a `reasoning_content` of its own, as a
reasoning model served by vLLM, llama.cpp or DeepSeek's API returns it. Writes `OUTDIR/<scenario>.jsonl` (OTLP/JSON)
and `OUTDIR/<scenario>.truth.json` (the question, the calls it ran with their results, the answer it took, usage, and
`thoughts`: the reasoning of each reply it took, `choices[0]`'s). Each scenario runs in its own subprocess.

- `oi-n2-reasoning`, `tl-n2-reasoning`: every request with `n=2`; the first choice asks for Paris and Tokyo, the second
  for `call_x` (never run), each with its own reasoning; then two answers, each with its reasoning; the first is taken.
- `oi-reasoning`: the same first choices alone (`n` not sent).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "data" / "openai-choice-reasoning"
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, otel_provider, record_each_in_subprocess, write_otlp, write_truth  # noqa: E402
from record_openai_choices import TOOLS, WEATHER, Choices, _call  # noqa: E402
from record_otel_loop_faults import _openai_instrumentor  # noqa: E402

QUESTION = "Weather in Paris and Tokyo?"
ASK = [{"role": "assistant", "content": "Checking both cities.", "reasoning_content": "The user wants two cities: one call each.",
        "tool_calls": [_call("call_p", "Paris"), _call("call_t", "Tokyo")]},
       {"role": "assistant", "content": "Let me look up Paris only.", "reasoning_content": "Paris first; Tokyo can wait.",
        "tool_calls": [_call("call_x", "Paris")]}]
ANSWER = [{"role": "assistant", "content": "Paris is sunny (21 C); Tokyo is rainy (14 C).", "reasoning_content": "Both results are in: compare them."},
          {"role": "assistant", "content": "Both cities: Paris sunny, Tokyo rainy.", "reasoning_content": "Summarise in one line."}]


def loop(client: Any, n: int) -> dict[str, Any]:
    """The application: ask, run the calls of `choices[0]`, send the results back, until a reply asks for none; its truth."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
    calls, thoughts, spent = [], [], {"input_tokens": 0, "output_tokens": 0, "requests": 0}
    while True:
        r = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS, **({"n": n} if n > 1 else {}))
        msg = r.choices[0].message.model_dump(exclude_none=True)
        spent = {"input_tokens": spent["input_tokens"] + r.usage.prompt_tokens, "output_tokens": spent["output_tokens"] + r.usage.completion_tokens,
                 "requests": spent["requests"] + 1}
        thoughts.append(msg.pop("reasoning_content", None))  # (the reasoning is not sent back)
        messages.append(msg)
        if not msg.get("tool_calls"):
            return {"user_turns": [QUESTION], "output": msg.get("content"), "calls": calls, "usage": spent, "thoughts": thoughts}
        for c in msg["tool_calls"]:
            args = json.loads(c["function"]["arguments"])
            calls.append({"id": c["id"], "name": c["function"]["name"], "arguments": args, "result": WEATHER[args["city"]]})
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": WEATHER[args["city"]]})


def record(out: Path, name: str, kind: str, n: int) -> Any:
    from openai import OpenAI

    with Choices([ASK[:n], ANSWER[:n]]) as fake:
        provider = otel_provider(fake, "openai-loop")
        _openai_instrumentor(kind).instrument(tracer_provider=provider)
        truth = loop(OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0), n)
        write_otlp(provider, fake, out / f"{name}.jsonl")
        provider.shutdown()
    write_truth(out, name, {"cases": [truth]})
    return truth["thoughts"]


SCENARIOS = {
    "oi-n2-reasoning": lambda out: record(out, "oi-n2-reasoning", "oi", 2),
    "tl-n2-reasoning": lambda out: record(out, "tl-n2-reasoning", "tl", 2),
    "oi-reasoning": lambda out: record(out, "oi-reasoning", "oi", 1),
}

if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:] or [str(OUT)], SCENARIOS))
