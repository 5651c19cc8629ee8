"""Record the runs behind `tests/test_image_only_user_messages.py`, with the installed libraries.

    python tests/frameworks/record_image_only_users.py [OUTDIR] [SCENARIO ...]   (OUTDIR: tests/data/image-only-users)

A plain OpenAI Chat Completions loop sends, in one request, a user's three messages in a row: some text, a photo alone
(an `image_url` content part and no text) and the question; the model asks for a tool, and answers after its result.
Scenarios `loop-oi` and `loop-tl` record it with OpenInference's and OpenLLMetry's OpenAI instrumentors (each in a
subprocess of its own: instrumentors patch the client process-wide) against the project's scripted loopback server
(`record_oi_faults.ScriptedOpenAI`; no network), writing `<scenario>.jsonl` (OTLP/JSON) and `<scenario>.messages.jsonl`:
the conversation the application held, as format `openai-messages` reads it (`{"id", "messages"}`).
Scenarios `mixed-oi` and `mixed-tl` record the same loop where two user messages in a row each hold text and a photo
(a `text` content part beside an `image_url` one): the first tells what happened, the second asks the question.
Scenarios `last-oi`/`last-tl` send the question, then the photo alone as the request's last message; `alone-oi`/`alone-tl`
send the photo alone and nothing else.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, otel_provider, record_each_in_subprocess, write_otlp  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402

OUT = HERE.parent / "data" / "image-only-users"
PHOTO = "https://example.com/broken-box.png"
ASKED: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a support bot."},
    {"role": "user", "content": "My order #W42 arrived broken."},
    {"role": "user", "content": [{"type": "image_url", "image_url": {"url": PHOTO}}]},
    {"role": "user", "content": "Can I get a refund?"},
]
MIXED: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a support bot."},
    {"role": "user", "content": [{"type": "text", "text": "My order #W42 arrived broken. This is the box:"},
                                 {"type": "image_url", "image_url": {"url": PHOTO}}]},
    {"role": "user", "content": [{"type": "text", "text": "And this is the lid. Can I get a refund?"},
                                 {"type": "image_url", "image_url": {"url": "https://example.com/broken-lid.png"}}]},
]
LAST: list[dict[str, Any]] = [  # the question, then the photo it is about, in a message of its own
    {"role": "system", "content": "You are a support bot."},
    {"role": "user", "content": "My order #W42 arrived broken: can I get a refund? Here is the box."},
    {"role": "user", "content": [{"type": "image_url", "image_url": {"url": PHOTO}}]},
]
ALONE: list[dict[str, Any]] = [  # a photo sent without words
    {"role": "system", "content": "You are a support bot."},
    {"role": "user", "content": [{"type": "image_url", "image_url": {"url": PHOTO}}]},
]
REPLIES = [{"role": "assistant", "content": None, "tool_calls": [call("call_r1", "refund", {"order_id": "#W42"})]},
           {"role": "assistant", "content": "Refund issued for #W42."}]
TOOLS = [{"type": "function", "function": {"name": "refund", "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}}}]


def loop(which: str, out: Path, asked: list[dict[str, Any]] = ASKED, name: str = "loop") -> Any:
    from openai import OpenAI

    with ScriptedOpenAI(REPLIES) as fake:
        provider = otel_provider(fake, f"{name}-{which}")
        if which == "oi":
            from openinference.instrumentation.openai import OpenAIInstrumentor
        else:
            from opentelemetry.instrumentation.openai import OpenAIInstrumentor  # type: ignore[no-redef]
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        client = OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        messages = [dict(m) for m in asked]
        reply = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS).choices[0].message
        messages.append(reply.model_dump(exclude_none=True))
        messages += [{"role": "tool", "tool_call_id": c.id, "content": "refunded"} for c in reply.tool_calls or []]
        answer = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS).choices[0].message
        messages.append(answer.model_dump(exclude_none=True))
        write_otlp(provider, fake, out / f"{name}-{which}.jsonl")
    (out / f"{name}-{which}.messages.jsonl").write_text(json.dumps({"id": f"{name}-{which}", "messages": messages}, ensure_ascii=False) + "\n")
    return answer.content


SCENARIOS = {"loop-oi": lambda out: loop("oi", out), "loop-tl": lambda out: loop("tl", out),
             "mixed-oi": lambda out: loop("oi", out, MIXED, "mixed"), "mixed-tl": lambda out: loop("tl", out, MIXED, "mixed"),
             **{f"{name}-{which}": (lambda out, w=which, a=asked, n=name: loop(w, out, a, n))
                for name, asked in (("last", LAST), ("alone", ALONE)) for which in ("oi", "tl")}}


def main(argv: list[str]) -> int:
    """Record the scenarios named in `argv[1:]` (default: all) into `argv[0]`, each in a subprocess; returns how many failed."""
    return record_each_in_subprocess(__file__, argv or [str(OUT)], SCENARIOS)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
