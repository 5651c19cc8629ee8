"""Record requests whose messages end with the assistant's words, behind `tests/test_anthropic_prefill.py`.

    python tests/frameworks/record_anthropic_prefill.py [OUTDIR] [SCENARIO ...]   (OUTDIR: tests/data/anthropic-prefill)

Against scripted loopback servers (no network):

- `anthropic-oi`, `anthropic-tl`: one Anthropic Messages API request (`client.messages.create`) whose last message is
  the assistant's prefill `{"city": "`, so the model goes on from it (`Oslo", "temp_c": -3}`), under
  openinference-instrumentation-anthropic and opentelemetry-instrumentation-anthropic (OpenLLMetry);
- `anthropic-mlflow`: the same request under `mlflow.anthropic.autolog()`, then a second turn whose prefill is a newline
  (`"\n"`: Anthropic continues after it), both inside one `@mlflow.trace` function so they are one trace; written as
  MLflow's `Trace.to_json()` (`anthropic-mlflow.mlflow.jsonl`) and the same spans over OTLP (`anthropic-mlflow.jsonl`);
- `anthropic-messages`: three conversations, each logged as its last request's messages followed by the response (the
  application keeps its prefill as a message of its own, the API reading two assistant messages in a row as one
  turn): the JSON prefill then a second question, a newline prefill, and a prefill `Let me look that up.` answered
  by a `tool_use`, its result, then the answer; written as one `anthropic-messages` record a line;
- `openai-oi`: an OpenAI Chat Completions request whose messages end with an assistant message too, under
  openinference-instrumentation-openai: that API does not continue it, its reply is the answer as it is.

Each writes `<scenario>.jsonl` (OTLP/JSON) and `<scenario>.truth.json` (the answer the application put together: the
prefill followed by the reply under Anthropic, the reply alone under OpenAI). Each scenario runs in its own subprocess.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "data" / "anthropic-prefill"
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import otel_provider, record_each_in_subprocess, write_jsonl, write_otlp, write_truth  # noqa: E402
from fake_anthropic import ScriptedAnthropic  # noqa: E402
from record_otel_loop_faults import Scripted, chat  # noqa: E402

ASK, PREFILL, CONTINUATION = "Weather in Oslo as JSON.", '{"city": "', 'Oslo", "temp_c": -3}'  # (the reply goes on from the prefill)


def anthropic(out: Path, inst: str) -> dict[str, Any]:
    """The prefilled Anthropic request under instrumentation `inst` (`oi`, `tl`)."""
    fake = ScriptedAnthropic([([{"type": "text", "text": CONTINUATION}], {"input_tokens": 50, "output_tokens": 9})])
    provider = otel_provider(fake, "anthropic-prefill")
    if inst == "oi":
        from openinference.instrumentation.anthropic import AnthropicInstrumentor
    else:
        from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor
    AnthropicInstrumentor().instrument(tracer_provider=provider)
    import anthropic as sdk

    client = sdk.Anthropic(base_url=fake.url, api_key="sk-fake", max_retries=0)
    reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=100, system="Reply in JSON only.",
                                   messages=[{"role": "user", "content": ASK}, {"role": "assistant", "content": PREFILL}])
    name = f"anthropic-{inst}"
    write_otlp(provider, fake, out / f"{name}.jsonl")
    truth = {"input": ASK, "answer": PREFILL + reply.content[0].text}  # (the continuation alone is no answer: the app joins them)
    write_truth(out, name, truth)
    return truth


NEXT, NEWLINE, SAID = "Should I bring a coat?", "\n", "Yes: it is -3 C."


def anthropic_mlflow(out: Path) -> dict[str, Any]:
    """`anthropic-mlflow` (module docstring): two prefilled turns of one conversation under `mlflow.anthropic.autolog()`."""
    from run_mlflow import _clean, _configure

    use = {"input_tokens": 50, "output_tokens": 9}
    with ScriptedAnthropic([([{"type": "text", "text": CONTINUATION}], use), ([{"type": "text", "text": SAID}], use)]) as fake, \
            tempfile.TemporaryDirectory() as store:
        mlflow = _configure(fake, store, autolog="anthropic")
        import anthropic as sdk
        from mlflow.tracing.provider import provider

        client = sdk.Anthropic(base_url=fake.url, api_key="sk-fake", max_retries=0)

        @mlflow.trace(name="chat")
        def chat(asks: list[tuple[str, str]]) -> list[str]:
            messages: list[Any] = []
            answers = []
            for ask, words in asks:
                messages += [{"role": "user", "content": ask}, {"role": "assistant", "content": words}]
                reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=100, system="Reply in JSON only.", messages=messages)
                answers.append(words + reply.content[0].text)  # (the application's answer: its prefill, then the model's words)
                messages[-1] = {"role": "assistant", "content": answers[-1]}
            return answers

        answers = chat([(ASK, PREFILL), (NEXT, NEWLINE)])
        [trace] = mlflow.search_traces(return_type="list")
        write_jsonl(out / "anthropic-mlflow.mlflow.jsonl", [_clean(trace.to_json(), store)])
        provider.get().force_flush()
        write_jsonl(out / "anthropic-mlflow.jsonl", fake.take_otlp())
    truth = {"input": ASK, "turns": [NEXT], "answers": answers}
    write_truth(out, "anthropic-mlflow", truth)
    return truth


def anthropic_messages(out: Path) -> dict[str, Any]:
    """`anthropic-messages` (module docstring)."""
    use = {"input_tokens": 50, "output_tokens": 9}
    tools = [{"name": "get_weather", "description": "Weather in a city.", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]
    looked_up = "Let me look that up."
    replies = [([{"type": "text", "text": CONTINUATION}], use), ([{"type": "text", "text": "Yes."}], use),
               ([{"type": "text", "text": SAID}], use),
               ([{"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Oslo"}}], use),
               ([{"type": "text", "text": "It is -3 C in Oslo."}], use)]
    records, truth = [], {}
    with ScriptedAnthropic(replies) as fake:
        import anthropic as sdk

        client = sdk.Anthropic(base_url=fake.url, api_key="sk-fake", max_retries=0)

        def send(messages: list[Any], **kw: Any) -> Any:
            reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=100, system="Reply briefly.", messages=messages, **kw)
            messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]})
            return reply

        msgs: list[Any] = [{"role": "user", "content": ASK}, {"role": "assistant", "content": PREFILL}]
        first = send(msgs)
        msgs.append({"role": "user", "content": NEXT})
        second = send(msgs)
        records.append({"id": "json", "system": "Reply briefly.", "messages": msgs})
        truth["json"] = {"outputs": [PREFILL + first.content[0].text, second.content[0].text], "thoughts": [None, None]}
        msgs = [{"role": "user", "content": ASK}, {"role": "assistant", "content": NEWLINE}]
        said = send(msgs)
        records.append({"id": "newline", "system": "Reply briefly.", "messages": msgs})
        truth["newline"] = {"outputs": [NEWLINE + said.content[0].text], "thoughts": [None]}
        msgs = [{"role": "user", "content": "Weather in Oslo?"}, {"role": "assistant", "content": looked_up}]
        asked = send(msgs, tools=tools)
        [use_block] = [b for b in asked.content if b.type == "tool_use"]
        msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": use_block.id, "content": "-3 C, snow"}]})
        answer = send(msgs, tools=tools)
        records.append({"id": "tool", "system": "Reply briefly.", "messages": msgs})
        truth["tool"] = {"outputs": [None, answer.content[0].text], "thoughts": [looked_up, None],
                         "calls": [[use_block.name, use_block.input, "-3 C, snow"]]}
    write_jsonl(out / "anthropic-messages.jsonl", records)
    write_truth(out, "anthropic-messages", truth)
    return truth


def openai(out: Path) -> dict[str, Any]:
    """An OpenAI request ending with an assistant message, under OpenInference."""
    fake = Scripted(lambda body, headers: (chat('{"city": "Oslo"}'), {"prompt_tokens": 50, "completion_tokens": 9, "total_tokens": 59}))
    provider = otel_provider(fake, "openai-last-assistant")
    from openinference.instrumentation.openai import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=provider)
    from openai import OpenAI

    client = OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": ASK}, {"role": "assistant", "content": PREFILL}])
    write_otlp(provider, fake, out / "openai-oi.jsonl")
    truth = {"input": ASK, "answer": reply.choices[0].message.content}
    write_truth(out, "openai-oi", truth)
    return truth


SCENARIOS = {"anthropic-oi": lambda out: anthropic(out, "oi"), "anthropic-tl": lambda out: anthropic(out, "tl"),
             "anthropic-mlflow": anthropic_mlflow, "anthropic-messages": anthropic_messages, "openai-oi": openai}

if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:] or [str(OUT)], SCENARIOS))
