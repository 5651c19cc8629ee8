"""One result per (case, trial): repeated ids, valid or not, are reported once, naming both places."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import anyio
import pytest
from tracejudge.core.config import RunConfig
from tracejudge.engine import runner

pytestmark = pytest.mark.usefixtures("fresh_log")

MESSAGES = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "done"}]


def _run(tmp_path: Path, data: Path, fmt: str) -> list[dict]:
    config = RunConfig.model_validate({"dataset": {"path": str(data), "format": fmt}, "metrics": [{"type": "MaxModelRequests", "max_requests": 30}],
                                       "run": {"dir": str(tmp_path / "run")}})
    first = anyio.run(lambda: runner.run(config))
    again = anyio.run(lambda: runner.run(config))  # the resume must add nothing
    assert again.new_results == 0 and first.new_results == again.skipped_finished
    results = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert all(n == 1 for n in Counter((r["case_id"], r["trial"]) for r in results).values()), results
    return results


def test_invalid_record_repeating_a_valid_id_gets_its_own_key(tmp_path: Path) -> None:
    data = tmp_path / "cases.jsonl"
    data.write_text("\n".join([
        json.dumps({"id": "x", "trace": {"steps": [], "output": "done"}}),
        json.dumps({"id": "x", "trace": {"steps": "not a list"}}),  # invalid, same id
        json.dumps({"id": "y", "trace": {"steps": "not a list"}}),  # invalid first ...
        json.dumps({"id": "y", "trace": {"steps": [], "output": "done"}}),  # ... then a valid repeat
    ]) + "\n")
    results = _run(tmp_path, data, "native")
    by_key = {r["case_id"]: r for r in results}
    assert sorted(by_key) == ["x", f"x@{data}:2", "y", f"y@{data}:4"]
    assert by_key["x"]["status"] == "ok" and by_key["y"]["status"] == "invalid_input"
    msg = by_key[f"x@{data}:2"]["error"]["message"]
    assert f"first at {data}:1, again at {data}:2" in msg and "also invalid" in msg
    assert f"first at {data}:3, again at {data}:4" in by_key[f"y@{data}:4"]["error"]["message"]


def test_tau2_simulations_have_their_own_lines_and_duplicates_are_caught(tmp_path: Path) -> None:
    sims = [{"id": f"s{i}", "task_id": "t0" if i != 2 else "t2", "trial": 0 if i != 1 else 1, "messages": MESSAGES} for i in range(4)]
    sims[3]["task_id"], sims[3]["trial"] = "t0", 0  # repeats simulation 0's id "t0-0"
    tasks = [{"id": "t0"}, {"id": "t2"}]
    data = tmp_path / "results.json"
    data.write_text('{"info": {},\n "tasks": ' + json.dumps(tasks) + ',\n "simulations": [\n' + ",\n".join(json.dumps(s) for s in sims) + "\n]}\n")
    results = _run(tmp_path, data, "tau2-bench")
    by_key = {r["case_id"]: r for r in results}
    assert sorted(by_key) == ["t0-0", f"t0-0@{data}:7", "t0-1", "t2-0"]
    assert f"first at {data}:4, again at {data}:7" in by_key[f"t0-0@{data}:7"]["error"]["message"]
    assert sum(r["status"] == "ok" for r in results) == 3
