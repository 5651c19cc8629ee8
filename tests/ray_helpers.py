"""Helpers of the Ray tests: what Ray workers import (a deterministic metric that takes its time, a live target that says
where it ran), and the datasets and result readers the tests share."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

from tracejudge.core.records import Case, Score
from tracejudge.stages.score.base import Metric


class SlowLength(Metric):
    """1 when the case's output is non-empty, after sleeping `sleep_ms` (so a run lasts long enough to kill a worker in it)."""

    sleep_ms: float = 5.0

    def evaluate(self, case: Case) -> Score:
        time.sleep(self.sleep_ms / 1000)
        out = case.trace.output if case.trace is not None else None
        return self.verdict(1.0 if out else 0.0, f"output of {len(str(out or ''))} characters")


class DieOn(Metric):
    """1 for every case but `case_id`, whose scoring kills the worker process with SIGKILL, every time (a metric that
    crashes the interpreter, a C extension's segfault)."""

    case_id: str

    def evaluate(self, case: Case) -> Score:
        if case.id == self.case_id:
            os.kill(os.getpid(), signal.SIGKILL)
        return self.verdict(1.0, "survived")


def run_shard(config_path: str, overrides: list[str]) -> dict:
    """Run one shard of a config in this (Ray worker) process; returns its summary."""
    import anyio
    from tracejudge.core.config import load_config
    from tracejudge.engine import runner

    config = load_config(config_path, overrides)
    return anyio.run(lambda: runner.run(config)).summary


def pid_agent(request: Any) -> dict[str, Any]:
    """A live python target that notes which process answered (`metadata.pid_log`) and echoes its input with an `echo` call.

    A case with `metadata.die_once` (a marker path) kills its worker with SIGKILL the first time it is seen.
    """
    meta = request.case.get("metadata") or {}
    with open(meta["pid_log"], "a", encoding="utf-8") as fh:
        fh.write(f"{os.getpid()}\n")
    marker = meta.get("die_once")
    if marker and not os.path.exists(marker):
        open(marker, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    text = f"echo {request.input}"
    return {"output": text, "trace": {"steps": [{"tool_calls": [{"name": "echo", "arguments": {"text": request.input}}]}], "output": text}}


def native_dataset(path: Path, n: int, broken: bool = True) -> Path:
    """`n` native cases `case-I` (each third calls one of the two expected tools), and with `broken` one unreadable line."""
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            called = ["search", "book"] if i % 3 else ["search"]
            fh.write(json.dumps({"id": f"case-{i}", "expected_tool_calls": [{"name": "search"}, {"name": "book"}],
                                 "trace": {"steps": [{"tool_calls": [{"name": c, "arguments": {}} for c in called]}], "output": f"answer {i}"}}) + "\n")
        if broken:
            fh.write('{"id": "broken", \n')  # its result must come through too
    return path


def results_by_key(run_dir: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """`run_dir/results.jsonl` as `{(case_id, trial): result}`, without `duration_s` (which differs between runs)."""
    out = {}
    for line in (run_dir / "results.jsonl").read_text().splitlines():
        data = json.loads(line)
        data.pop("duration_s")
        out[(data["case_id"], data["trial"])] = data
    return out
