"""Record a Chat Completions tool loop under OTel's own OpenAI instrumentation, in each of its modes, behind
`tests/test_otel_openai_v2.py`.

    python tests/frameworks/record_openai_v2.py OUTDIR [SCENARIO ...]   (OUTDIR: tests/data/openai-v2)

opentelemetry-instrumentation-openai-v2 (opentelemetry-python-contrib) instruments `chat.completions.create`. Which
telemetry it writes is chosen by the environment when it instruments:

- up to 2.3b0 (modes `events`, `events-off`), one span a request (`chat <model>`) and each message of the request a
  log record of its own (`gen_ai.system.message`, `gen_ai.user.message`, `gen_ai.assistant.message`,
  `gen_ai.tool.message`, one `gen_ai.choice` per choice): the events of semantic conventions 1.28–1.36, with content
  when `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`, else without;
- 2.4b0, through opentelemetry-util-genai 1.x, which takes every request for `OTEL_SEMCONV_STABILITY_OPT_IN=
  gen_ai_latest_experimental` (set all the same, as its README says): the messages as `gen_ai.input.messages` /
  `gen_ai.output.messages` on the span (`SPAN_ONLY`), in one `gen_ai.client.inference.operation.details` log record
  (`EVENT_ONLY`), or both (`SPAN_AND_EVENT`), the capture mode being the value of
  `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`; `true` (mode `capture-true`) is none of them, so no content, as
  when nothing is set (`no-content`).

The application is `record_openllmetry_events.loop`: a system prompt, two user turns (Paris, then Tokyo), each asking
for one `get_weather` call whose result it sends back before the answer, against a scripted loopback server (no
network). Scenarios, each in a subprocess of its own: `v2-<mode>` and `v2-<mode>-stream` (the same loop streamed with
`stream_options={"include_usage": True}`) for each mode of `MODES`. Each writes `<scenario>.jsonl` (the spans' and the log records' exports one a line, as a Collector's
file exporter writes both pipelines to one file) and `<scenario>.truth.json` (what the application sent and got).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import record_each_in_subprocess, write_truth  # noqa: E402
from record_openllmetry_events import REPLIES, TURNS, Logged, _providers, _write, loop  # noqa: E402

# The environment each mode is recorded under (the instrumentation and opentelemetry-util-genai read it); `LEGACY`'s
# only under openai-v2 2.3b0 and earlier, the others under 2.4b0 (`_check_version`).
LEGACY = {
    "events": {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"},
    "events-off": {},
}
MODES = LEGACY | {
    "capture-true": {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"},
    "no-content": {},
    "span-only": {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"},
    "event-only": {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "EVENT_ONLY"},
    "span-and-event": {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
                       "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_AND_EVENT"},
}


def _check_version(mode: str) -> None:
    """Raise unless the installed openai-v2 writes `mode` (2.4b0 has only the util-genai path: see the data's README)."""
    from importlib.metadata import version

    from packaging.version import Version

    got = Version(version("opentelemetry-instrumentation-openai-v2"))
    if (mode in LEGACY) != (got < Version("2.4b0")):
        raise RuntimeError(f"mode {mode!r} is recorded with opentelemetry-instrumentation-openai-v2 "
                           f"{'2.3b0 (in an environment of its own)' if mode in LEGACY else '2.4b0'}, not {got}")


def record(out: Path, mode: str, stream: bool) -> Any:
    name = f"v2-{mode}" + ("-stream" if stream else "")
    _check_version(mode)
    for key in ("OTEL_SEMCONV_STABILITY_OPT_IN", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "OTEL_INSTRUMENTATION_GENAI_EMIT_EVENT"):
        os.environ.pop(key, None)
    os.environ.update(MODES[mode])
    from openai import OpenAI
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    with Logged(REPLIES["tl-events"]) as fake:
        traces, logs = _providers(fake, "openai-loop")
        OpenAIInstrumentor().instrument(tracer_provider=traces, logger_provider=logs)
        client = OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        truth = loop(client, TURNS, 1, stream, parts=False)
        _write(out, name, fake, traces, logs, logged=mode in ("event-only", "span-and-event", "events", "events-off"))
    write_truth(out, name, {"cases": [truth], "environment": MODES[mode]})
    return truth["output"]


SCENARIOS = {f"v2-{mode}" + ("-stream" if stream else ""): (lambda out, mode=mode, stream=stream: record(out, mode, stream))
             for mode in MODES for stream in (False, True)}

if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:] or [str(HERE.parent / "data" / "openai-v2")], SCENARIOS))
