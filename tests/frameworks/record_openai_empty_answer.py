"""Record plain Chat Completions loops whose answer is the empty text, behind `tests/test_openai_empty_answer.py`.

    python tests/frameworks/record_openai_empty_answer.py [OUTDIR] [SCENARIO ...]   (OUTDIR: tests/data/openai-empty-answer)

A hand-written `client.chat.completions.create` tool loop (the tool `get_weather`; `choices[0].message` appended to the
history, its call run and the result sent back) under openinference-instrumentation-openai (`oi-…`) or
opentelemetry-instrumentation-openai (OpenLLMetry, `tl-…`), against `record_openai_choices.Choices` (request n gets the
choices `REPLIES[n]`; no network): one call, then a reply whose content is `""` (a model that said nothing: a reasoning
model that spent its budget, a filter that emptied the text). Writes `OUTDIR/<scenario>.jsonl` (OTLP/JSON) and
`OUTDIR/<scenario>.truth.json` (the question, the call with its result, the answer the application got: `""`, usage).
Each scenario runs in its own subprocess.

- `oi-empty`, `tl-empty`: not streamed; the answer's `message.content` is `""`.
- `oi-stream-empty`, `tl-stream-empty`: streamed (`stream_options={"include_usage": True}`); the answer's stream has a
  first delta `{"role": "assistant", "content": ""}` and no text after it, and the application's joined text is `""`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "data" / "openai-empty-answer"
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, otel_provider, record_each_in_subprocess, write_otlp, write_truth  # noqa: E402
from record_openai_choices import TOOLS, WEATHER, Choices, _call, _streamed  # noqa: E402
from record_otel_loop_faults import _openai_instrumentor  # noqa: E402

QUESTION = "Weather in Paris?"
REPLIES = [[{"role": "assistant", "content": None, "tool_calls": [_call("call_p", "Paris")]}], [{"role": "assistant", "content": ""}]]


def loop(client: Any, stream: bool) -> dict[str, Any]:
    """The application: ask, run the calls, send the results back, until a reply asks for none; its truth."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
    calls, spent = [], {"input_tokens": 0, "output_tokens": 0, "requests": 0}
    while True:
        if stream:
            msg, usage = _streamed(client, messages)
            text = msg.get("content") or ""  # (the deltas' texts joined: "" when there was none)
        else:
            r = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
            msg, usage = r.choices[0].message.model_dump(exclude_none=True), r.usage
            text = msg.get("content")
        spent = {"input_tokens": spent["input_tokens"] + usage.prompt_tokens, "output_tokens": spent["output_tokens"] + usage.completion_tokens,
                 "requests": spent["requests"] + 1}
        messages.append(msg)
        if not msg.get("tool_calls"):
            return {"user_turns": [QUESTION], "output": text, "calls": calls, "usage": spent}
        for c in msg["tool_calls"]:
            args = json.loads(c["function"]["arguments"])
            calls.append({"id": c["id"], "name": c["function"]["name"], "arguments": args, "result": WEATHER[args["city"]]})
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": WEATHER[args["city"]]})


def record(out: Path, kind: str, stream: bool) -> Any:
    from openai import OpenAI

    name = f"{kind}-{'stream-' if stream else ''}empty"
    with Choices(REPLIES) as fake:
        provider = otel_provider(fake, "openai-loop")
        _openai_instrumentor(kind).instrument(tracer_provider=provider)
        truth = loop(OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0), stream)
        write_otlp(provider, fake, out / f"{name}.jsonl")
        provider.shutdown()
    write_truth(out, name, {"cases": [truth]})
    return truth["output"]


SCENARIOS = {f"{k}-{'stream-' if s else ''}empty": (lambda out, k=k, s=s: record(out, k, s)) for k in ("oi", "tl") for s in (False, True)}

if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:] or [str(OUT)], SCENARIOS))
