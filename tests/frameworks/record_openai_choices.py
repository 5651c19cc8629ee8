"""Record plain Chat Completions loops asking for several choices, or answered with a refusal, behind `tests/test_openai_choices.py`.

    python tests/frameworks/record_openai_choices.py OUTDIR [SCENARIO ...]   (OUTDIR: tests/data/openai-choices)

A hand-written `client.chat.completions.create` tool loop (the tool `get_weather`; each reply's `choices[0].message`
appended to the history, its calls run and their results sent back) under openinference-instrumentation-openai
(`oi-…`) or opentelemetry-instrumentation-openai (OpenLLMetry, `tl-…`), against a scripted loopback server
(`Choices`: request n gets the choices `REPLIES[name][n]`; no network). Writes `OUTDIR/<scenario>.jsonl` (OTLP/JSON)
and `OUTDIR/<scenario>.truth.json` (what the application sent and got: the question, the calls it ran with their
results, the answer it took, token usage). Each scenario runs in its own subprocess.

- `oi-n2`, `tl-n2`: every request with `n=2`; the first choice asks for two calls (Paris, Tokyo), the second for
  another (`call_x`) that the application never runs; then two answers, of which it takes the first.
- `oi-refusal`, `tl-refusal`: the two calls, then a reply whose message is a refusal (`content` null, `refusal`
  set); the application's answer is the refusal.
- `oi-stream-refusal`: the same streamed (`stream=True`, `stream_options={"include_usage": True}`; the refusal
  arrives in `delta.refusal` pieces, the calls' arguments in fragments of the two calls interleaved).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from aiohttp import web

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, otel_provider, record_each_in_subprocess, write_otlp, write_truth  # noqa: E402
from fake_openai import FakeOpenAI  # noqa: E402
from record_otel_loop_faults import _openai_instrumentor  # noqa: E402

QUESTION = "Weather in Paris and Tokyo?"
WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.",
                                           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]


def _call(cid: str, city: str) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": "get_weather", "arguments": json.dumps({"city": city})}}


ASK = {"role": "assistant", "content": "Checking both cities.", "tool_calls": [_call("call_p", "Paris"), _call("call_t", "Tokyo")]}
ANSWER = {"role": "assistant", "content": "Paris is sunny (21 C); Tokyo is rainy (14 C)."}
REFUSED = {"role": "assistant", "content": None, "refusal": "I'm sorry, I can't help with comparing those cities."}
TWO = [[ASK, {"role": "assistant", "content": "Let me look up Paris only.", "tool_calls": [_call("call_x", "Paris")]}],
       [ANSWER, {"role": "assistant", "content": "Both cities: Paris sunny, Tokyo rainy."}]]
REPLIES = {"n2": TWO, "refusal": [[ASK], [REFUSED]], "stream-refusal": [[ASK], [REFUSED]]}


class Choices(FakeOpenAI):
    """The project's fake server answering chat request n with the choices `replies[n]` (usage 100+n in, 10+n out);
    streamed: the first choice's text and refusal in pieces, its calls' arguments in fragments, the calls interleaved."""

    def __init__(self, replies: list[list[dict[str, Any]]]) -> None:
        self.replies = replies
        self.n = 0
        super().__init__()

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.chats.append(body)
        n, self.n = self.n, self.n + 1
        msgs = self.replies[n]
        usage = {"prompt_tokens": 100 + n, "completion_tokens": 10 + n, "total_tokens": 110 + 2 * n}
        base = {"id": f"chatcmpl-{n}", "created": 1767225600, "model": MODEL}

        def finish(m: dict[str, Any]) -> str:
            return "tool_calls" if m.get("tool_calls") else "stop"

        if not body.get("stream"):
            return web.json_response(base | {"object": "chat.completion", "usage": usage, "choices": [
                {"index": i, "message": m, "finish_reason": finish(m), "logprobs": None} for i, m in enumerate(msgs)]})
        m = msgs[0]
        deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
        for key in ("content", "refusal"):
            text = m.get(key) or ""
            deltas += [{key: text[i:i + 7]} for i in range(0, len(text), 7)]
        calls = m.get("tool_calls") or []
        deltas += [{"tool_calls": [{"index": i, "id": c["id"], "type": "function", "function": {"name": c["function"]["name"], "arguments": ""}}]}
                   for i, c in enumerate(calls)]
        frags = [[c["function"]["arguments"][j:j + 5] for j in range(0, len(c["function"]["arguments"]), 5)] for c in calls]
        for j in range(max((len(f) for f in frags), default=0)):  # the calls' fragments round-robin, as parallel calls stream
            deltas += [{"tool_calls": [{"index": i, "function": {"arguments": f[j]}}]} for i, f in enumerate(frags) if j < len(f)]
        chunk = base | {"object": "chat.completion.chunk"}
        chunks = [chunk | {"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
        chunks += [chunk | {"choices": [{"index": 0, "delta": {}, "finish_reason": finish(m)}]}, chunk | {"choices": [], "usage": usage}]
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for c in chunks:
            await resp.write(f"data: {json.dumps(c)}\n\n".encode())
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp


def _streamed(client: Any, messages: list[dict[str, Any]]) -> tuple[dict[str, Any], Any]:
    """One streamed request, its deltas joined as the application joins them: (the message, the usage chunk's usage)."""
    text, refusal, calls, usage = "", "", {}, None
    for ch in client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS, stream=True, stream_options={"include_usage": True}):
        usage = ch.usage or usage
        for choice in ch.choices:
            d = choice.delta
            text, refusal = text + (d.content or ""), refusal + (d.refusal or "")
            for tc in d.tool_calls or []:
                c = calls.setdefault(tc.index, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}})
                c["id"] = tc.id or c["id"]
                c["function"]["name"] += (tc.function.name or "") if tc.function else ""
                c["function"]["arguments"] += (tc.function.arguments or "") if tc.function else ""
    msg: dict[str, Any] = {"role": "assistant", "content": text or None, **({"refusal": refusal} if refusal else {})}
    if calls:
        msg["tool_calls"] = [calls[i] for i in sorted(calls)]
    return msg, usage


def loop(client: Any, scenario: str) -> dict[str, Any]:
    """The application: ask, run the calls of `choices[0]`, send the results back, until a reply asks for none; its truth."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
    calls, spent = [], {"input_tokens": 0, "output_tokens": 0, "requests": 0}
    while True:
        if scenario == "stream-refusal":
            msg, usage = _streamed(client, messages)
        else:
            r = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS, **({"n": 2} if scenario == "n2" else {}))
            msg, usage = r.choices[0].message.model_dump(exclude_none=True), r.usage
        spent = {"input_tokens": spent["input_tokens"] + usage.prompt_tokens, "output_tokens": spent["output_tokens"] + usage.completion_tokens,
                 "requests": spent["requests"] + 1}
        messages.append(msg)
        if not msg.get("tool_calls"):
            answer = msg.get("content") if msg.get("content") is not None else msg.get("refusal")
            return {"user_turns": [QUESTION], "output": answer, "calls": calls, "usage": spent}
        for c in msg["tool_calls"]:
            args = json.loads(c["function"]["arguments"])
            result = WEATHER[args["city"]]
            calls.append({"id": c["id"], "name": c["function"]["name"], "arguments": args, "result": result})
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": result})


def record(out: Path, kind: str, scenario: str) -> Any:
    from openai import OpenAI

    name = f"{kind}-{scenario}"
    with Choices(REPLIES[scenario]) as fake:
        provider = otel_provider(fake, "openai-loop")
        _openai_instrumentor(kind).instrument(tracer_provider=provider)
        truth = loop(OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0), scenario)
        write_otlp(provider, fake, out / f"{name}.jsonl")
        provider.shutdown()
    write_truth(out, name, {"cases": [truth]})
    return truth["output"]


SCENARIOS = {f"{k}-{s}": (lambda out, k=k, s=s: record(out, k, s))
             for k, s in (("oi", "n2"), ("tl", "n2"), ("oi", "refusal"), ("tl", "refusal"), ("oi", "stream-refusal"))}

if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:], SCENARIOS))
