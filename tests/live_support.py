"""Helpers for the live-target tests: paths, running a config, reading a run, pass@k by hand."""

from __future__ import annotations

import json
from collections import defaultdict
from math import comb
from pathlib import Path
from typing import Any

import anyio
from tracejudge.core.config import validate_config
from tracejudge.engine.runner import RunOutcome, run

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
DATA = REPO.parent / "shared" / "data"


def write_cases(path: Path, cases: list[dict[str, Any]]) -> Path:
    """Write native cases as JSONL and return the path."""
    path.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    return path


def live_config(tmp_path: Path, cases: list[dict[str, Any]], target: dict[str, Any], **extra: Any):
    """A validated config: `cases` as a native dataset, `target`, ToolCalls(exact), run dir `tmp_path/run`."""
    data = write_cases(tmp_path / "cases.jsonl", cases)
    raw: dict[str, Any] = {
        "dataset": {"path": str(data), "format": "native"},
        "metrics": [{"type": "ToolCalls", "arguments": "exact"}],
        "target": target,
        "run": {"dir": str(tmp_path / "run"), "flush_every": 1},
    }
    for key, value in extra.items():
        raw[key] = {**raw.get(key, {}), **value} if isinstance(value, dict) else value
    return validate_config(raw)


def run_live(config, run_dir: Path | None = None) -> RunOutcome:
    return anyio.run(lambda: run(config, run_dir=run_dir))


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def by_key(results: list[dict[str, Any]]) -> dict[tuple[str, int], dict[str, Any]]:
    out = {(r["case_id"], r["trial"]): r for r in results}
    assert len(out) == len(results), "a (case, trial) pair has two results"
    return out


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimator (Chen et al. 2021): 1 - C(n-c, k) / C(n, k)."""
    if k > n:
        raise ValueError("k must not exceed the number of trials")
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_at_k_from_results(results: list[dict[str, Any]], metric: str, k: int) -> float:
    """Mean over cases of pass@k, a trial passing when its `metric` score passed (a trial the agent failed fails; one the
    judge failed on or skipped keeps the deterministic scores it has)."""
    trials: dict[str, list[bool]] = defaultdict(list)
    for r in results:
        score = r["scores"].get(metric) if r["status"] in ("ok", "judge_error", "rate_limited", "skipped_budget") else None
        trials[r["case_id"]].append(bool(score and score.get("passed")))
    return sum(pass_at_k(len(v), sum(v), k) for v in trials.values()) / len(trials)
