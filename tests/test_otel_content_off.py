"""Traces recorded with content capture off (`tests/data/content-off/`, recorded by `tests/frameworks/record_content_off.py`).

The loop made one call and two requests; its spans say nothing of what was asked, called or answered. Read as two empty
cases, both passed `MaxToolCalls` and `MaxModelRequests` of 1 and the gate said PASS. Each is now an `invalid_input`
naming the settings that hide content.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import extract_path
import _forkserver

DATA = Path(__file__).parent / "data" / "content-off"


@pytest.mark.parametrize("name", ["oi-content-off", "tl-content-off"])
def test_a_trace_recorded_without_content_is_refused_not_scored_empty(name: str) -> None:
    got = extract_path(DATA / f"{name}.jsonl", "otel")
    assert got and all(isinstance(x, tuple) for x in got), got
    for _, error in got:
        assert error.kind == "invalid_input" and "carry no content" in error.message, error
        assert "OPENINFERENCE_HIDE_INPUTS" in error.message and "TRACELOOP_TRACE_CONTENT=false" in error.message


def test_a_run_on_it_stops_and_says_why(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(json.dumps({"dataset": {"path": str(DATA / "oi-content-off.jsonl"), "format": "otel"},
                               "metrics": [{"type": "MaxToolCalls", "max_calls": 1}, {"type": "MaxModelRequests", "max_requests": 1}],
                               "run": {"dir": str(tmp_path / "run")}}))
    done = _forkserver.run([sys.executable, "-m", "tracejudge", "run", str(cfg), "--no-progress"], capture_output=True, text=True, timeout=120)
    # Every record of the file invalid: a config error naming the first (exit 2), not a format hint.
    said = " ".join(done.stderr.split())
    assert done.returncode == 2 and "carry no content" in said and "OTLP spans, this format's own" in said, done.stdout + done.stderr
    assert "json-path" not in said
