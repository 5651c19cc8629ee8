"""`tracejudge.evaluate` runs the CLI's pipeline: the 200 τ-bench runs give the same results both ways."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import tracejudge
import _forkserver

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "configs" / "demo.yaml"
TRACEJUDGE = Path(sys.executable).with_name("tracejudge")


# The demo's deterministic metrics; its judge metrics carry timings that differ run to run.
DETERMINISTIC = ("writes_exact", "TrajectoryMatch", "ToolCorrectness")


def _results(path: Path) -> dict[tuple[str, int], dict[str, Any]]:
    out = {}
    for line in path.read_text().splitlines():
        data = json.loads(line)
        data.pop("duration_s")
        data["scores"] = {k: v for k, v in data["scores"].items() if k in DETERMINISTIC}
        out[(data["case_id"], data["trial"])] = data
    return out


def _figures(summary: dict[str, Any]) -> dict[str, Any]:
    return {"results": summary["results"], "status": summary["status"], "metrics": {k: summary["metrics"][k] for k in DETERMINISTIC}}


def test_evaluate_and_cli_run_give_identical_results_on_200_tau_bench_runs(tmp_path, data_dir):
    cases_file = tmp_path / "cases.jsonl"
    ext = _forkserver.run([str(TRACEJUDGE), "extract", str(DEMO), "-o", str(cases_file)], capture_output=True, text=True)
    assert ext.returncode == 0, ext.stderr
    run = _forkserver.run([str(TRACEJUDGE), "run", str(DEMO), "--run-dir", str(tmp_path / "cli"), "--no-progress"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    cli = _results(tmp_path / "cli" / "results.jsonl")
    assert len(cli) == 200

    config = tracejudge.load_config(DEMO)
    records = [json.loads(line) for line in cases_file.read_text().splitlines()]
    assert len(records) == 200

    # Mappings from a list, through a kept run directory.
    specs = [m for m in config.metrics if m.get("name", m["type"]) in DETERMINISTIC]
    report = tracejudge.evaluate(records, specs, run_dir=tmp_path / "api")
    api = _results(tmp_path / "api" / "results.jsonl")
    assert api == cli
    assert {(r.case_id, r.trial) for r in report.results} == set(cli)
    assert report.new_results == 200 and report.run_dir == tmp_path / "api"
    cli_summary = json.loads((tmp_path / "cli" / "summary.json").read_text())
    assert _figures(report.summary) == _figures(cli_summary)
    assert report.metrics["writes_exact"].scored == 200

    # Case objects from an async generator, metrics as instances, a temporary run directory.
    async def stream() -> AsyncIterator[tracejudge.Case]:
        for record in records:
            yield tracejudge.Case.model_validate(record)

    metrics = [
        tracejudge.ToolCalls(
            name="writes_exact",
            arguments="exact",
            exclude_tools=["get_*", "search_*", "list_*", "calculate", "think", "transfer_*"],
            include_failed=False,
        ),
        tracejudge.TrajectoryMatch(order="in_order"),
        tracejudge.ToolCorrectness(allow_extra=True),
    ]
    again = tracejudge.evaluate(stream(), metrics)
    assert again.run_dir is None
    by_key = {(r.case_id, r.trial): r.model_dump(mode="json", exclude={"duration_s"}) for r in again.results}
    for value in by_key.values():
        value["scores"] = {k: v for k, v in value["scores"].items() if k in DETERMINISTIC}
    assert by_key == cli
    assert _figures(again.summary) == _figures(cli_summary)
