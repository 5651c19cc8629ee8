"""`tracejudge extract`, `run` and the format guesser read a pretty-printed dataset the same way; a run over one resumes.

The user trial: an MLflow trace written with `Trace.to_json(pretty=True)` was "356 records were invalid" under
`extract`, and under `run` a config error after 100 of them saying the format was probably wrong (it was `mlflow`).
A native dataset written as one pretty-printed array has no byte offsets for the resume cursor: a run over it killed
with SIGKILL must resume from its results, every case scored exactly once, as a run never killed scores them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from framework_truth import recordings
from tracejudge.core.config import DatasetConfig

from _runs import native_case
import _forkserver

TJ = Path(sys.executable).with_name("tracejudge")


def _mlflow_pretty(path: Path) -> Path:
    """The recorded MLflow booking trace as `Trace.to_json(pretty=True)` writes it (`json.dumps(indent=2)` without mlflow)."""
    export = next(e for e, _ in recordings("mlflow", ".mlflow.jsonl") if e.name.startswith("booking."))
    line = export.read_text(encoding="utf-8")
    try:
        from mlflow.entities import Trace

        text = Trace.from_json(line).to_json(pretty=True)
    except ImportError:
        text = json.dumps(json.loads(line), indent=2)
    path.write_text(text, encoding="utf-8")
    assert text.count("\n") > 100
    return path


def _config(root: Path, data: Path, fmt: str, run_dir: str = "run", metrics: str = "[{type: MaxToolCalls, max_calls: 10}]") -> Path:
    cfg = root / "config.yaml"
    cfg.write_text(f"dataset: {{path: {data}, format: {fmt}}}\nmetrics: {metrics}\nrun: {{dir: {run_dir}, executor: inprocess}}\n")
    return cfg


def _tj(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([str(TJ), *args], cwd=root, capture_output=True, text=True, timeout=300, env=env)


def test_extract_and_run_read_mlflows_pretty_json_as_one_trace(tmp_path: Path) -> None:
    data = _mlflow_pretty(tmp_path / "trace.json")
    cfg = _config(tmp_path, data, "mlflow")
    done = _tj(tmp_path, "extract", str(cfg), "-o", str(tmp_path / "cases.jsonl"))
    assert done.returncode == 0, done.stderr
    assert "invalid" not in done.stderr and "wrote 1 case to" in done.stderr, done.stderr
    case = json.loads((tmp_path / "cases.jsonl").read_text())
    assert case["input"].startswith("Book the cheapest JFK to SFO flight")
    done = _tj(tmp_path, "run", str(cfg), "--no-progress")
    assert done.returncode == 0, done.stderr
    results = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert [r["status"] for r in results] == ["ok"]


def test_the_format_guesser_names_mlflow_for_its_pretty_json(tmp_path: Path) -> None:
    from tracejudge.stages.extract.first_records import formats_that_read

    data = _mlflow_pretty(tmp_path / "trace.json")
    assert "mlflow" in formats_that_read(DatasetConfig(path=data, format="native"), "native")
    done = _tj(tmp_path, "run", str(_config(tmp_path, data, "native")), "--no-progress")
    assert done.returncode == 2
    message = " ".join(done.stderr.split())
    assert "no record of it reads as format 'native' (" in message and "they read as format 'mlflow'" in message, message
    assert not (tmp_path / "run").exists()


HOLD = '''\
import os
import time

import tracejudge


@tracejudge.metric
def hold(case, trace) -> float:
    """1.0, after holding the run at the cases from TJ_TEST_HOLD_FROM on (so that a SIGKILL lands mid-run)."""
    start = os.environ.get("TJ_TEST_HOLD_FROM")
    if start and case.id >= start:
        time.sleep(120)
    return 1.0
'''
N, HOLD_FROM = 240, 150


def _results(run_dir: Path) -> dict[tuple[str, int], dict]:
    out: dict[tuple[str, int], dict] = {}
    for line in (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        key = (r["case_id"], r["trial"])
        assert key not in out, f"two results for {key}"
        r.pop("duration_s")
        out[key] = r
    return out


@pytest.mark.parametrize("shape", ["array", "objects"])
def test_a_run_over_a_pretty_printed_native_dataset_killed_and_resumed_scores_every_case_once(tmp_path: Path, shape: str) -> None:
    tools = ["a", "b", "c"]
    cases = [native_case(f"case-{i:04d}", tools[: 1 + i % 3], tools[: 1 + (i // 2) % 3]) for i in range(N)]
    cases[40] = {"id": "case-0040", "trace": {"steps": "not a list"}}  # an invalid record: its one result, once
    data = tmp_path / "cases.json"
    text = json.dumps(cases, indent=2) if shape == "array" else "".join(json.dumps(c, indent=2) + "\n" for c in cases)
    data.write_text(text, encoding="utf-8")
    (tmp_path / "holdmetric.py").write_text(HOLD)
    metrics = '[{type: ToolCorrectness, name: tc}, {type: "holdmetric:hold"}]'
    cfg = _config(tmp_path, data, "native", "runs/main", metrics)
    cfg.write_text(cfg.read_text().replace("executor: inprocess}", "flush_every: 8}"))  # (a held metric in process holds every case)
    env = dict(os.environ)  # (the metric's module is found in the run's folder)
    reference = _tj(tmp_path, "run", str(cfg), "--no-progress", "--run-dir", "runs/reference", env=env)
    assert reference.returncode == 1, reference.stderr  # (the invalid record fails the gate: it fails it the same after a resume)

    proc = _forkserver.popen([str(TJ), "run", str(cfg), "--no-progress"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**env, "TJ_TEST_HOLD_FROM": f"case-{HOLD_FROM:04d}"})
    results = tmp_path / "runs" / "main" / "results.jsonl"
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline and (not results.exists() or results.read_bytes().count(b"\n") < 100):
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL, f"the run ended before its kill\n{err[-2000:]}"
    before = _results(tmp_path / "runs" / "main")
    assert 100 <= len(before) < N

    done = _tj(tmp_path, "run", str(cfg), "--no-progress", env=env)
    assert done.returncode == 1, done.stderr
    after = _results(tmp_path / "runs" / "main")
    assert after == _results(tmp_path / "runs" / "reference")  # every case once, as the run never killed scored it
    assert len(after) == N and after[("case-0040", 0)]["status"] == "invalid_input"
    assert {k: after[k] for k in before} == before  # the results written before the kill were kept, not scored again
    assert not (tmp_path / "runs" / "main" / "cursor.json").exists()  # (no byte offsets: the resume reads from the start)
