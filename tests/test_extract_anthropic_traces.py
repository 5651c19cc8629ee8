"""Format `otel` on an Anthropic Messages API agent loop as real instrumentations record it.

`tests/frameworks/record_anthropic.py` runs one scripted loop (system prompt, thinking, two parallel
`tool_use` blocks whose results go back in one message, Tokyo's with `is_error: true`, one more call whose
result is sent as a list of text blocks, then the answer; prompt-cache tokens in the usage) under
openinference-instrumentation-anthropic, opentelemetry-instrumentation-anthropic (OpenLLMetry) and the SDK's own
tracing (`open_telemetry` client option), plain and streamed; `record_pydantic_ai_oi.py` runs the same script through a pydantic-ai agent on `AnthropicModel`,
with and without OpenInference's pydantic-ai span processor. Each `<run>.truth.json` is what the
application sent and got; the reading must give it back (see `tests/data/anthropic-instrumentations/README.md`).
The last test re-records every run with the installed libraries (skipped for those not installed) and compares.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from helpers import installed
from tracejudge.core import registry
from tracejudge.core.config import DatasetConfig
from tracejudge.core.records import Case
from tracejudge.stages.extract import extract_record
from tracejudge.stages.extract.otel import read
from tracejudge.stages.extract.otel.conventions import read_span
import _forkserver

FRAMEWORKS = Path(__file__).parent / "data" / "anthropic-instrumentations"
ANTHROPIC = [(folder, run) for folder in ("openinference-anthropic", "traceloop-anthropic", "anthropic-sdk") for run in ("tools", "tools-stream")]
PYDANTIC_AI = [("openinference-pydantic-ai", "tools"), ("openinference-pydantic-ai", "plain-tools")]
# OpenLLMetry's Anthropic instrumentation and the SDK's own tracing write a tool_result block as a `tool_call_response`
# part without its `is_error`, and keep no request body: the failed call is not in the recording, so no reading can find it.
NO_ERROR_FLAG = {"traceloop-anthropic", "anthropic-sdk"}


def _case(root: Path, folder: str, run: str) -> Case:
    fmt = registry.format_for("otel")
    ds = DatasetConfig(path=root / folder / f"{run}.jsonl", format="otel")
    cases = [extract_record(raw, fmt, fmt.prepare(ds)) for raw in fmt.read(ds)]
    assert len(cases) == 1 and isinstance(cases[0], Case), cases
    return cases[0]


def _truth(root: Path, folder: str, run: str) -> dict[str, Any]:
    return json.loads((root / folder / f"{run}.truth.json").read_text())


def check_against_truth(case: Case, truth: dict[str, Any], folder: str, run: str) -> None:
    """Every call (id, name, exact arguments, result), parallel calls in one step, each step's thought, the answer, usage."""
    assert case.input == truth["input"]
    assert [m.content for m in case.trace.user_messages] == truth["user_turns"]
    got = [(c.id, c.name, c.arguments, c.result) for c in case.trace.tool_calls()]
    assert got == [(c["id"], c["name"], c["arguments"], c["result"]) for c in truth["calls"]]
    assert [[c.id for c in s.tool_calls] for s in case.trace.steps] == [s["calls"] for s in truth["steps"]]
    # A step's thought is its thinking, then the text it said beside its calls (as format anthropic-messages reads them).
    thoughts = ["\n".join(t for t in (s["thinking"], s["text"]) if t) for s in truth["steps"][:-1]]
    assert [s.thought for s in case.trace.steps[:-1]] == thoughts
    assert case.trace.steps[-1].output == case.trace.output == truth["output"]
    if folder not in NO_ERROR_FLAG:
        assert [c.failed for c in case.trace.tool_calls()] == [c["is_error"] for c in truth["calls"]]
    usage = truth["usage"]
    # The input the model read, cache reads and writes included; every instrumentation records that sum.
    extra = usage["requests"] if (folder, run) == ("traceloop-anthropic", "tools-stream") else 0
    # (OpenLLMetry 0.62.4, streamed: it adds message_start's output_tokens, 1 each, to message_delta's cumulative count.)
    assert case.trace.usage is not None
    assert (case.trace.usage.input_tokens, case.trace.usage.output_tokens, case.trace.usage.requests) == (
        usage["input_tokens"], usage["output_tokens"] + extra, usage["requests"])


@pytest.mark.parametrize(("folder", "run"), ANTHROPIC + PYDANTIC_AI, ids=[f"{f}/{r}" for f, r in ANTHROPIC + PYDANTIC_AI])
def test_recorded_loop_reads_as_its_truth(folder: str, run: str) -> None:
    """The committed recording reads as what the application sent and got."""
    check_against_truth(_case(FRAMEWORKS, folder, run), _truth(FRAMEWORKS, folder, run), folder, run)


@pytest.mark.parametrize("run", ["tools", "tools-stream"])
def test_openinference_anthropic_failed_result_is_the_calls_error(run: str) -> None:
    """`is_error: true` on a tool_result fails its call with that text, though the flattened tool message drops the flag."""
    calls = _case(FRAMEWORKS, "openinference-anthropic", run).trace.tool_calls()
    assert [(c.id, c.error) for c in calls] == [("toolu_01", None), ("toolu_02", "weather service unavailable for Tokyo"), ("toolu_03", None)]


@pytest.mark.parametrize(("folder", "run"), ANTHROPIC, ids=[f"{f}/{r}" for f, r in ANTHROPIC])
def test_result_sent_as_text_blocks_is_their_text(folder: str, run: str) -> None:
    """A tool_result whose content is `[{"type": "text", "text": "69.8 F"}]` is the result "69.8 F", as a string result would be."""
    call = _case(FRAMEWORKS, folder, run).trace.tool_calls()[-1]
    assert (call.name, call.result) == ("convert_temperature", "69.8 F")


@pytest.mark.parametrize("run", ["tools", "plain-tools"])
def test_pydantic_ai_thinking_is_the_steps_thought(run: str) -> None:
    """pydantic-ai writes a model's thinking as a GenAI part of type `thinking`: it is the step's thought, never lost."""
    steps = _case(FRAMEWORKS, "openinference-pydantic-ai", run).trace.steps
    assert steps[0].thought == "Both cities are independent: ask for both at once.\nI'll check both cities at once."
    assert steps[1].thought == "Paris is 21 C; Tokyo failed. Convert Paris to Fahrenheit."


def _request_inputs(root: Path, folder: str, run: str) -> list[list[dict[str, Any]]]:
    """The input messages of each model request of a recording, in order of start (the spans, not the case)."""
    spans = [s for r in read(DatasetConfig(path=root / folder / f"{run}.jsonl", format="otel")) if r.error is None for s in r.payload.spans]
    views = [read_span(s) for s in sorted(spans, key=lambda s: s.start)]
    return [v.inputs or [] for v in views if v.role == "model"]


@pytest.mark.parametrize(("folder", "run"), ANTHROPIC + PYDANTIC_AI, ids=[f"{f}/{r}" for f, r in ANTHROPIC + PYDANTIC_AI])
def test_system_prompt_leads_every_request_once(folder: str, run: str) -> None:
    """The `system` the application sent opens each request's input as one system message, wherever the instrumentation
    put it: OpenInference's `system` input message, `gen_ai.system_instructions` (OpenLLMetry, the SDK, pydantic-ai)."""
    system = _truth(FRAMEWORKS, folder, run)["system"]
    requests = _request_inputs(FRAMEWORKS, folder, run)
    assert len(requests) == 3
    for inputs in requests:
        assert inputs[0] == {"role": "system", "parts": [{"type": "text", "content": system}]}, inputs[0]
        assert [m["role"] for m in inputs].count("system") == 1
        assert inputs[1]["role"] == "user"


# --- re-recorded now by the installed libraries: an upgrade that changes what they write fails here -----------------
RECORDERS = Path(__file__).parent / "frameworks"
LIVE = {"openinference-anthropic": ("record_anthropic.py", ("anthropic", "openinference.instrumentation.anthropic")),
        "traceloop-anthropic": ("record_anthropic.py", ("anthropic", "opentelemetry.instrumentation.anthropic")),
        "anthropic-sdk": ("record_anthropic.py", ("anthropic", "anthropic.lib._tracing")),
        "openinference-pydantic-ai": ("record_pydantic_ai_oi.py", ("anthropic", "pydantic_ai", "openinference.instrumentation.pydantic_ai"))}


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, subprocess.Popen[str]]]:
    """Every installed recording re-made at once into a temporary folder: (folder, recorder script -> its process)."""
    out = tmp_path_factory.mktemp("anthropic-live")
    names: dict[str, list[str]] = {}
    for folder, (script, mods) in LIVE.items():
        if all(installed(m) for m in mods):
            runs = [p.name.removesuffix(".truth.json") for p in sorted((FRAMEWORKS / folder).glob("*.truth.json"))]
            names.setdefault(script, []).extend(f"{folder}/{r}" for r in runs)
    return out, {script: _forkserver.popen([sys.executable, str(RECORDERS / script), str(out), *runs], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          text=True) for script, runs in names.items()}


def _shape(path: Path) -> Counter[tuple[Any, ...]]:
    """What an OTLP/JSON recording is compared by: the multiset of (scope, span name, kind, attribute keys, event names)."""
    shapes: Counter[tuple[Any, ...]] = Counter()
    for line in path.read_text().splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for sp in ss["spans"]:
                    shapes[(ss.get("scope", {}).get("name"), sp["name"], sp.get("kind"), tuple(sorted(a["key"] for a in sp.get("attributes", []))),
                            tuple(e["name"] for e in sp.get("events", [])))] += 1
    return shapes


@pytest.mark.parametrize(("folder", "run"), ANTHROPIC + PYDANTIC_AI, ids=[f"{f}/{r}" for f, r in ANTHROPIC + PYDANTIC_AI])
def test_live_recording_keeps_its_shape_and_truth(live: tuple[Path, dict[str, subprocess.Popen[str]]], folder: str, run: str) -> None:
    """Re-recorded with the installed libraries: the same truth, the same span structure, and it still reads as its truth."""
    script, mods = LIVE[folder]
    for module in mods:
        pytest.importorskip(module)
    out, procs = live
    proc = procs[script]
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr[-3000:]
    assert _truth(out, folder, run) == _truth(FRAMEWORKS, folder, run)
    assert _shape(out / folder / f"{run}.jsonl") == _shape(FRAMEWORKS / folder / f"{run}.jsonl"), "the instrumentation now records another shape"
    check_against_truth(_case(out, folder, run), _truth(out, folder, run), folder, run)
