"""OpenAI Agents SDK runs the application cancelled, read as what they were (and a real stop at a tool still as one).

Recorded by the real SDK (0.24.0, chat-completions model) with OpenInference's `OpenAIAgentsInstrumentor` (2.6.0,
`<s>.oi.jsonl`, format `otel`) and the SDK's own export (`<s>.export.jsonl`, format `openai-agents`) at once, against
the project's loopback fake server (`tests/frameworks/record_agents_cancel.py`, which says what each scenario did;
`<s>.truth.json` is what the application saw). The model said "Checking both." and asked for `quick` and `slow`:

- `immediate` (`result.cancel()` on the first tool-call event: no tool ran) read as two calls with no result and no
  error, and the preamble as the run's output; the calls are now marked not run and the run has no output.
- `task_cancel` (`Runner.run` in a task cancelled while `slow` ran) read as stopped at `quick`, `quick=1` its
  output; `slow` now did not finish and the run has no output.
- `after_turn` (`cancel(mode="after_turn")`: both tools ran) is recorded exactly as `stop`
  (`tool_use_behavior="stop_on_first_tool"`), so it keeps the stop's reading, and a warning names both.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import extract_path
from tracejudge.core.records import Case
import _forkserver

DATA = Path(__file__).parent / "data" / "agents-cancel"
STOP = Path(__file__).parent / "data" / "openai-agents-stop"  # non-streamed Chat Completions stop runs
FILES = [("oi", "otel"), ("export", "openai-agents")]
LOOKALIKE = "after_turn"  # recorded exactly as a stop at a tool: read as one, with a warning
WARNED = "a streamed run cancelled after that turn (`cancel(mode=\"after_turn\")`) is recorded exactly alike"


def truth(scenario: str) -> dict[str, Any]:
    return json.loads((DATA / f"{scenario}.truth.json").read_text())


def only_case(path: Path, fmt: str) -> Case:
    (case,) = extract_path(path, fmt)
    assert isinstance(case, Case), case
    return case


@pytest.mark.parametrize("kind, fmt", FILES)
@pytest.mark.parametrize("scenario", ["immediate", "task_cancel", "after_turn", "stop"])
def test_each_run_reads_as_the_application_saw_it(scenario: str, kind: str, fmt: str) -> None:
    want = truth(scenario)
    case = only_case(DATA / f"{scenario}.{kind}.jsonl", fmt)
    assert case.input == want["input"]
    assert len(case.trace.steps) == want["model_requests"]  # one request: its reply asked for both calls
    (step,) = case.trace.steps
    assert step.thought == want["preamble"] and step.output is None
    assert [(c.name, c.arguments) for c in step.tool_calls] == [(a["name"], a["arguments"]) for a in want["asked"]]
    for c in step.tool_calls:
        if c.name in want["returned"]:
            assert (c.result, c.error) == (want["returned"][c.name], None)
        elif c.name in want["started_not_returned"]:
            assert c.result is None and c.error.startswith("did not finish: the run ended while this call ran")
        else:
            assert c.result is None and c.error.startswith("not run: the run ended before this call ran")
    (turn,) = case.metadata["otel"]["turns"]
    assert turn["intermediate_texts"] == [want["preamble"]]  # said beside the calls, never the answer
    if scenario == LOOKALIKE:  # what the recording cannot tell: read as `stop` is (below), which the SDK recorded alike
        assert want["final_output"] is None and case.trace.output == truth("stop")["final_output"]
        return
    assert case.trace.output == turn["final_text"] == want["final_output"]
    if want["final_output"] is not None:
        assert "run_error" not in case.metadata
        return
    unrun = [a["name"] for a in want["asked"] if a["name"] not in want["returned"]]
    assert case.metadata["run_error"].startswith(f"Run ended before the tool calls of its last model request ran or finished ({', '.join(unrun)})")
    assert "cancelled" in case.metadata["run_error"]
    if fmt == "openai-agents":
        assert "stopped_at_tool" not in case.metadata["openai_agents"]


def _export_shape(path: Path) -> list[Any]:
    """The export's items without ids, times and the fake server's port (the only things that differ between runs)."""
    out = []
    for line in path.read_text().splitlines():
        item = json.loads(line)
        data = json.loads(re.sub(r"127\.0\.0\.1:\d+", "HOST", re.sub(r'"created_at": [\d.]+', '"created_at": 0', json.dumps(item.get("span_data")))))
        out.append((item["object"], data, item.get("error"), item.get("parent_id") is None))
    return out


def _oi_shape(path: Path) -> list[Any]:
    """The OTLP spans' names, status and attributes (ids, times and the fake server's port left out)."""
    out = []
    for line in path.read_text().splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    attrs = re.sub(r"127\.0\.0\.1:\d+", "HOST", re.sub(r'\\?"created_at\\?": [\d.]+', "created_at", json.dumps(span["attributes"])))
                    out.append((span["name"], span.get("status"), span.get("kind"), attrs, "parentSpanId" in span))
    return out


def test_a_run_cancelled_after_its_tools_is_recorded_exactly_as_a_stop_at_the_first_tool() -> None:
    # why `after_turn` keeps the stop's reading: no span, attribute or export field tells the two apart
    assert truth("after_turn")["returned"] == truth("stop")["returned"]  # the same tools ran, with the same results
    assert truth("after_turn")["final_output"] != truth("stop")["final_output"]
    assert _export_shape(DATA / "after_turn.export.jsonl") == _export_shape(DATA / "stop.export.jsonl")
    assert _oi_shape(DATA / "after_turn.oi.jsonl") == _oi_shape(DATA / "stop.oi.jsonl")


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and WARNED in r.getMessage()]


def test_openinference_stop_reading_warns_once_per_file_that_it_may_be_a_cancel(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="tracejudge")
    for scenario in ("after_turn", "stop"):
        path = shutil.copy(DATA / f"{scenario}.oi.jsonl", tmp_path / f"{scenario}.oi.jsonl")  # a path no other test read: warned here
        caplog.clear()
        only_case(Path(path), "otel")
        only_case(Path(path), "otel")  # read again: said once
        (said,) = _warnings(caplog)
        assert said.startswith(f"otel: {path}:1: trace ")
        assert "'Worker'" in said and "stop_on_first_tool" in said and "'quick''s output 'quick=1'" in said and "no final output" in said
    for path in (DATA / "immediate.oi.jsonl", DATA / "task_cancel.oi.jsonl", STOP / "oi-stop_preamble.jsonl"):
        copy = shutil.copy(path, tmp_path / path.name)
        caplog.clear()
        only_case(Path(copy), "otel")
        assert _warnings(caplog) == [], path.name  # no stop read; or a Chat Completions request that was not streamed: no cancel


_EXPORT_WARNINGS = """
import json, logging, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from helpers import extract_path
said = []
class Keep(logging.Handler):
    def emit(self, record):
        said.append(record.getMessage())
logging.getLogger("tracejudge").addHandler(Keep())
logging.getLogger("tracejudge").setLevel(logging.WARNING)
for path in sys.argv[2:]:
    said.clear()
    extract_path(Path(path), "openai-agents")
    print(json.dumps([m for m in said if {warned!r} in m]))
"""


def test_export_stop_reading_warns_that_it_may_be_a_cancel() -> None:
    # In a fresh process: the export's spans name no file, so it is said once per process.
    paths = [STOP / "export-stop_preamble.jsonl", DATA / "after_turn.export.jsonl", DATA / "stop.export.jsonl"]
    run = _forkserver.run([sys.executable, "-c", _EXPORT_WARNINGS.format(warned=WARNED), str(Path(__file__).parent), *map(str, paths)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr[-3000:]
    plain, lookalike, again = (json.loads(line) for line in run.stdout.splitlines())
    assert plain == []  # a Chat Completions request that was not streamed: the run had no `cancel`
    (said,) = lookalike
    assert said.startswith("openai-agents: trace trace_") and "'quick''s output 'quick=1'" in said
    assert again == []  # once
