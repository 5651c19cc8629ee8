"""Format `otel` on a wide and a deep trace: a reply asking for 20,000 parallel calls, a chain of 5,000 nested spans.

Each reads whole, to its own case: every call paired with its own tool span (its id, arguments and result), the
request under the chain read as the run's one step. The exports are `benchmarks/otel_wide_deep.py`'s. The reads run in
a child process; its timeout only keeps a hang from holding up the suite.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from otel_wide_deep import deep, fan_out  # noqa: E402


def _extract(tmp_path: Path, export: str) -> dict[str, Any]:
    (tmp_path / "t.jsonl").write_text(export)
    (tmp_path / "c.yaml").write_text("dataset: {path: t.jsonl, format: otel}\nmetrics: [{type: MaxToolCalls, max_calls: 10}]\n")
    proc = subprocess.run([sys.executable, "-m", "tracejudge", "extract", "c.yaml", "-o", "-"], capture_output=True,
                          text=True, timeout=900, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    cases = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert len(cases) == 1, proc.stdout[:2000]
    return cases[0]


def test_a_reply_asking_for_20000_parallel_calls_reads_each_with_its_own_tool_span(tmp_path):
    case = _extract(tmp_path, fan_out(20_000))
    steps = case["trace"]["steps"]
    assert [len(s.get("tool_calls") or []) for s in steps] == [20_000, 0]
    assert steps[1]["output"] == "done"
    calls = steps[0]["tool_calls"]
    assert [c["id"] for c in calls] == [f"call_{i}" for i in range(20_000)]
    assert all(c["name"] == "get_weather" and c["arguments"] == {"city": f"c{i}"} and c["result"] == {"t": i}
               for i, c in enumerate(calls))
    assert case["metadata"]["otel"]["turns"][0]["calls"] == [0, 20_000]


def test_a_request_under_5000_nested_wrapper_spans_reads_as_the_runs_one_step(tmp_path):
    case = _extract(tmp_path, deep(5_000))
    assert case["id"] == "deep" and case["input"] == "deep q"
    assert case["trace"]["steps"] == [{"output": "deep a"}]
    otel = case["metadata"]["otel"]
    assert otel["turns"][0]["steps"] == [0, 1] and otel["turns"][0]["final_text"] == "deep a"
    assert otel["conventions"]["unrecognised"] == {"used": 0, "ignored": 5_000}
