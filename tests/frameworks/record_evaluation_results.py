"""Record evaluation results (`gen_ai.evaluation.result`) written with the OpenTelemetry SDK beside a chat loop's spans,
behind `tests/test_otel_evaluations.py`.

    python tests/frameworks/record_evaluation_results.py OUTDIR   (OUTDIR: tests/data/otel-evaluations)

opentelemetry-util-genai 1.1b0 has no evaluation emitter (its handler covers inference, tool, agent, workflow, embedding,
retrieval and fetch invocations), so the evaluator here writes the event as the GenAI conventions define it, with the
SDK's own API: a span event (`span.add_event`) and log records (`Logger.emit(event_name=...)`), exported with the spans
by the OTLP/HTTP protobuf exporters to a scripted loopback server (`record_openllmetry_events.Logged`; no network).
The application: per conversation (`gen_ai.conversation.id` on a hand-made `invoke_agent` span per turn), each turn one
`client.chat.completions.create` under OpenLLMetry's openai instrumentation. The evaluator:

- `task_success` on each turn's agent span, as a span event while the run is open (value and label);
- `Relevance` of each turn's reply as a log record: in the first conversation the first turn's with the chat span's
  context, the second's after the run with no context but the reply's `gen_ai.response.id` (both with an explanation);
  in the second conversation with the chat span's context;
- a failed evaluation (`error.type`) in the second conversation, which is no label.

Writes `evaluations.jsonl` (both pipelines' exports, hex ids, one a line), the same run as `split/traces.jsonl` and
`split/logs.jsonl` (the logs as protobuf's JSON mapping writes them, base64 ids), and `evaluations.truth.json`: per
conversation, the user turns, the answers, and the results the evaluator wrote.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, record_each_in_subprocess, write_jsonl, write_truth  # noqa: E402
from record_openllmetry_events import Logged, _providers, _write  # noqa: E402

CONVERSATIONS = {"conv-1": ["What is the weather in Paris?", "And in Tokyo?"], "conv-2": ["What is the weather in Berlin?"]}
ANSWERS = ["Sunny in Paris, 21 C.", "Rainy in Tokyo, 14 C.", "I do not know."]
EVAL = "gen_ai.evaluation.result"


def _result(name: str, value: float | None, label: str | None, explanation: str | None = None, **more: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = {"gen_ai.evaluation.name": name, **more}
    if value is not None:
        attrs["gen_ai.evaluation.score.value"] = value
    if label is not None:
        attrs["gen_ai.evaluation.score.label"] = label
    if explanation is not None:
        attrs["gen_ai.evaluation.explanation"] = explanation
    return attrs


def record(out: Path) -> Any:
    from openai import OpenAI
    from opentelemetry import trace
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    replies = [[{"role": "assistant", "content": a}] for a in ANSWERS]
    truth: dict[str, Any] = {"cases": []}
    with Logged(replies) as fake:
        traces, logs = _providers(fake, "evaluated-loop")
        traces.add_span_processor(_keeper())
        OpenAIInstrumentor().instrument(tracer_provider=traces)
        tracer, logger = traces.get_tracer("app"), logs.get_logger("evaluator")
        client = OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        later: list[dict[str, Any]] = []
        for conv, turns in CONVERSATIONS.items():
            history: list[dict[str, Any]] = []
            results: list[dict[str, Any]] = []
            for i, turn in enumerate(turns):
                with tracer.start_as_current_span("invoke_agent weather", attributes={
                        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather", "gen_ai.conversation.id": conv}) as agent:
                    history.append({"role": "user", "content": turn})
                    reply = client.chat.completions.create(model=MODEL, messages=history)
                    history.append({"role": "assistant", "content": reply.choices[0].message.content})
                    chat = trace.NonRecordingSpan(next(s for s in reversed(_ENDED) if s.name.startswith("openai.chat")).context)
                    ok = conv == "conv-1"
                    agent.add_event(EVAL, _result("task_success", 1.0 if ok else 0.0, "pass" if ok else "fail"))
                    results.append({"name": "task_success", "score_value": 1.0 if ok else 0.0, "score_label": "pass" if ok else "fail"})
                    rel = _result("Relevance", 0.9 if i == 0 else 0.4, "relevant" if i == 0 else "not_relevant",
                                  "answers the question" if ok else None)
                    if conv == "conv-1" and i == 1:
                        later.append({**rel, "gen_ai.response.id": reply.id})  # an evaluator's pass after the run
                    else:
                        logger.emit(event_name=EVAL, attributes=rel, context=trace.set_span_in_context(chat))
                    results.append({"name": "Relevance", "score_value": rel["gen_ai.evaluation.score.value"],
                                    "score_label": rel["gen_ai.evaluation.score.label"]})
                    if conv == "conv-2":
                        logger.emit(event_name=EVAL, attributes=_result("Groundedness", None, None, **{"error.type": "timeout"}),
                                    context=trace.set_span_in_context(chat))
            truth["cases"].append({"conversation": conv, "user_turns": turns, "answers": [m["content"] for m in history[1::2]],
                                   "evaluations": results})
        for attrs in later:
            logger.emit(event_name=EVAL, attributes=attrs)
        docs = _write(out, "evaluations", fake, traces, logs)
        write_jsonl(out / "split" / "traces.jsonl", [d for d in docs if "resourceSpans" in d])
        write_jsonl(out / "split" / "logs.jsonl", fake.logs)
    write_truth(out, "evaluations", truth)
    return [c["evaluations"] for c in truth["cases"]]


_ENDED: list[Any] = []  # the spans ended so far, in order: the chat span the instrumentation just ended is the last


def _keeper() -> Any:
    """A span processor keeping each ended span in `_ENDED`, so the evaluator can name the chat span it evaluates."""
    from opentelemetry.sdk.trace import SpanProcessor

    class Keep(SpanProcessor):
        def on_end(self, span: Any) -> None:
            _ENDED.append(span)

    return Keep()


if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:] or [str(HERE.parent / "data" / "otel-evaluations")], {"evaluations": record}))
