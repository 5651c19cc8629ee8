"""A model request that failed is a step that says so, not an empty step.

The plain OpenAI tool loop, recorded live under OpenInference's and OpenLLMetry's OpenAI instrumentors against the
scripted loopback server (`frameworks/fake_openai.py`), whose first chat request is answered 500; the application
retries it (the client's own retries off, as a loop with its own retry policy runs). The failed request's LLM span
(status ERROR, an `exception` event) was read as a step with nothing in it; it is now a step whose `error` names the
failure, and every other step is what the recording without the failure gives. In a subprocess: instrumentors patch
the process.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from framework_truth import only_case
from tracejudge.core.records import Case, Step, Trace
from tracejudge.stages.judge.trace_text import render_steps
import _forkserver

pytest.importorskip("openinference.instrumentation.openai")
pytest.importorskip("opentelemetry.instrumentation.openai")

FRAMEWORKS = Path(__file__).resolve().parent / "frameworks"

RECORD = r"""
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import openai
from common import otel_provider, write_otlp
from fake_openai import FakeOpenAI
import run_openai_loop as L

which, fail, out = sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
if which == "openinference":
    from openinference.instrumentation.openai import OpenAIInstrumentor
else:
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

complete = L._complete

def retried(client, messages, schemas):
    for attempt in range(3):
        try:
            return complete(client, messages, schemas)
        except openai.InternalServerError:
            if attempt == 2:
                raise

L._complete = retried
with FakeOpenAI() as fake:
    fake.fail = fail
    provider = otel_provider(fake, "openai-loop")
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    client = openai.OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)
    L.run_loop(client, "sequence")
    write_otlp(provider, fake, out)
    provider.shutdown()
"""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int], Path]:
    root = tmp_path_factory.mktemp("failed-request")
    script = root / "record.py"
    script.write_text(RECORD)
    out = {}
    for which in ("openinference", "traceloop"):
        for fail in (0, 1):
            path = root / f"{which}-{fail}.jsonl"
            done = _forkserver.run([sys.executable, str(script), str(FRAMEWORKS), which, str(fail), str(path)],
                                  capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, done.stderr[-3000:]
            out[(which, fail)] = path
    return out


def _steps(case: Case) -> list[tuple[str | None, str | None, list[tuple[str, object, object]]]]:
    return [(s.thought, s.output, [(c.name, c.arguments, c.result) for c in s.tool_calls]) for s in case.trace.steps]


@pytest.mark.parametrize("which", ["openinference", "traceloop"])
def test_a_retried_failed_request_is_a_step_that_says_it_failed(recorded: dict[tuple[str, int], Path], which: str) -> None:
    clean = only_case(recorded[(which, 0)], "otel")
    failed = only_case(recorded[(which, 1)], "otel")
    first, rest = failed.trace.steps[0], failed.trace.steps[1:]
    assert first.error is not None and "InternalServerError" in first.error and "The server had an error" in first.error, first
    assert first.output is None and first.tool_calls == [] and first.thought is None
    assert all(s.error is None for s in clean.trace.steps + rest)
    assert _steps(Case(id="x", trace=Trace(steps=rest))) == _steps(clean)  # the retry and everything after it, as recorded
    assert failed.trace.output == clean.trace.output and failed.trace.usage.requests == clean.trace.usage.requests + 1
    text = render_steps(failed.trace.steps, full=False)
    assert f"Step 1:\n step error: {first.error}" in text


def test_a_step_error_without_a_message_says_so() -> None:
    text = render_steps([Step(error="")], full=False)
    assert " step error: (no message recorded)" in text
