"""Record the traces behind `tests/test_otel_missing_inputs.py`: a chat loop whose user message holds an image.

    python tests/frameworks/record_missing_inputs.py OUTDIR [SCENARIO ...]

writes `OUTDIR/<scenario>.jsonl` (OTLP/JSON) and `OUTDIR/<scenario>.truth.json` (what the application sent and got).
Each scenario runs in its own subprocess against the scripted loopback server of `record_otel_loop_faults.py` (no
network). The loop: a system prompt, then a user message of two content parts (a text and a base64 PNG `image_url`);
the model asks for four calls with a preamble ("Let me look that up."): `lookup` with non-ASCII arguments,
`list_items` with `{}`, `noop` with `""` and `lookup` with cut JSON (the loop answers it with "Error: …"), then one
`long_report` call (a 60,003-character result), then a JSON answer; three requests, structured output asked.

- `tl-image`: opentelemetry-instrumentation-openai (OpenLLMetry). It writes no input message for any of the three
  requests (its base64 image upload hook fails in `_set_prompts` and the error is logged at debug level only), its
  outputs and usage still;
- `v2-image`: opentelemetry-instrumentation-openai-v2 with `OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`
  and `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only` (it records the user message as `parts: []`).
  Not among the project's installed packages: this scenario needs it installed (`pip install --no-deps
  opentelemetry-instrumentation-openai-v2==2.4b0` with its `opentelemetry-util-genai`), and says so otherwise. The
  committed `v2-image.jsonl` was recorded that way by the same loop (see `tests/data/missing-inputs/README.md`).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, otel_provider, record_each_in_subprocess, write_otlp, write_truth  # noqa: E402
from record_otel_loop_faults import Scripted, chat  # noqa: E402

USER_TEXT = "What is in this picture? 写真"
IMAGE = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
LONG = "x" * 60000 + "END"
ANSWER = json.dumps({"answer": "東京 is fine ✓", "items": 2}, ensure_ascii=False)
V2_ENV = {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only"}


def _call(cid: str, name: str, args: Any) -> dict[str, Any]:
    """A tool call; `args` a mapping (sent as JSON) or the exact arguments text."""
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)}}


def _reply(body: dict[str, Any], headers: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The model: four calls after a preamble, then one call, then the answer (by the assistant messages sent back)."""
    step = sum(1 for m in body["messages"] if m["role"] == "assistant")
    usage = {"prompt_tokens": 100 * (step + 1), "completion_tokens": 11 + step, "total_tokens": 100 * (step + 1) + 11 + step,
             "prompt_tokens_details": {"cached_tokens": 0}, "completion_tokens_details": {"reasoning_tokens": 0}}
    if step == 0:
        return chat("Let me look that up.", _call("call_a", "lookup", {"item": "café ☕", "n": 2}), _call("call_b", "list_items", {}),
                    _call("call_c", "noop", ""), _call("call_d", "lookup", '{"item": "Par')), usage
    if step == 1:
        return chat(None, _call("call_e", "long_report", {"q": "ß"})), usage
    return chat(ANSWER), usage


def lookup(item: str, n: int = 1) -> dict[str, Any]:
    return {"item": item, "stock": n, "note": "größe"}


def list_items() -> list[Any]:
    return ["a", "b", {"c": None}]


def noop() -> None:
    return None


def long_report(q: str) -> str:
    return LONG


TOOLS = {"lookup": lookup, "list_items": list_items, "noop": noop, "long_report": long_report}


def _run(client: Any) -> tuple[list[dict[str, Any]], str | None, dict[str, int]]:
    """The loop: `(calls as the application ran them, final answer, usage the server reported)`."""
    tools = [{"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {}}}} for n in TOOLS]
    schema = {"type": "json_schema", "json_schema": {"name": "Ans", "schema": {"type": "object", "properties": {"answer": {"type": "string"}, "items": {"type": "integer"}}}}}
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are helpful."},
                                      {"role": "user", "content": [{"type": "text", "text": USER_TEXT}, {"type": "image_url", "image_url": {"url": IMAGE}}]}]
    calls, usage = [], {"input_tokens": 0, "output_tokens": 0, "requests": 0}
    for _ in range(5):
        r = client.chat.completions.create(model=MODEL, messages=messages, tools=tools, response_format=schema)
        usage = {"input_tokens": usage["input_tokens"] + r.usage.prompt_tokens, "output_tokens": usage["output_tokens"] + r.usage.completion_tokens,
                 "requests": usage["requests"] + 1}
        m = r.choices[0].message.model_dump(exclude_none=True)
        messages.append(m)
        if not m.get("tool_calls"):
            return calls, m["content"], usage
        for t in m["tool_calls"]:
            raw = t["function"]["arguments"]
            try:
                out = TOOLS[t["function"]["name"]](**json.loads(raw or "{}"))
                result, error = (out if isinstance(out, str) else json.dumps(out, ensure_ascii=False)), None
            except Exception as e:  # the loop answers a call it cannot run with the error's text, as many loops do
                result, error = f"Error: {e}", str(e)
            calls.append({"id": t["id"], "name": t["function"]["name"], "arguments": raw, "result": result, "error": error})
            messages.append({"role": "tool", "tool_call_id": t["id"], "content": result})
    return calls, None, usage


def image_loop(out: Path, name: str, kind: str) -> Any:
    if kind == "v2":
        os.environ.update(V2_ENV)  # read when the instrumentor starts
        try:
            from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
        except ImportError:
            raise SystemExit("opentelemetry-instrumentation-openai-v2 is not installed: see this script's docstring") from None
    else:
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor
    from openai import OpenAI

    with Scripted(_reply) as fake:
        provider = otel_provider(fake, "loop-edge")
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        calls, answer, usage = _run(OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0))
        write_otlp(provider, fake, out / f"{name}.jsonl")
        provider.shutdown()
    write_truth(out, name, truth(calls, answer, usage))
    return answer


def truth(calls: list[dict[str, Any]], answer: str | None, usage: dict[str, int]) -> dict[str, Any]:
    """What the application did: its user message, calls (a result past 200 characters kept as its length and ends), answer, usage."""
    kept = [{**c, "result": c["result"]} if len(c["result"]) <= 200 else
            {**c, "result": None, "result_chars": len(c["result"]), "result_head": c["result"][:20], "result_tail": c["result"][-20:]} for c in calls]
    return {"cases": [{"user_turns": [{"text": USER_TEXT, "image": IMAGE}], "system": "You are helpful.", "calls": kept, "output": answer, "usage": usage}]}


SCENARIOS = {"tl-image": lambda out: image_loop(out, "tl-image", "tl"), "v2-image": lambda out: image_loop(out, "v2-image", "v2")}


def main(argv: list[str]) -> int:
    """Record the scenarios named in `argv[1:]` (default: all), each in a subprocess; returns how many failed."""
    return record_each_in_subprocess(__file__, argv, SCENARIOS)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
