"""Dollars rebuilt from the spend journal are the run's own, to the value printed (`tracejudge.llm.spend_journal`).

The journal once wrote each line's dollars rounded to 8 places: at a price whose per-request dollars have more places,
the rounding leaned one way on every line, and after a few hundred requests `tracejudge report` on a run without its
summary.json said $0.000002 less than the run had. A real run against the judge simulator over HTTP on 127.0.0.1.
"""

from __future__ import annotations

import json
import sys
from decimal import Decimal
from pathlib import Path

import _forkserver

TJ = str(Path(sys.executable).with_name("tracejudge"))
CASES = 300
# $ per million input tokens: a request of 470 to 520 prompt tokens costs n × 0.030009 / 1e6, whose 9th and 10th places
# (n × 0.0009 hundred-millionths, 0.42 to 0.47) an 8-place rounding always dropped.
PRICES = {"gpt-4o-mini": {"input": 0.030009, "output": 0.06}}


def _config(tmp: Path, url: str) -> Path:
    cases = tmp / "cases.jsonl"
    with open(cases, "w", encoding="utf-8") as fh:
        for i in range(CASES):
            steps = [{"tool_calls": [{"id": "c1", "name": "lookup", "arguments": {"q": f"item {i}"}, "result": f"found {i}"}]}]
            fh.write(json.dumps({"id": f"case-{i}", "input": f"Find item {i} " + "x " * (i % 37),
                                 "trace": {"steps": steps, "output": f"Item {i} is found."}}) + "\n")
    cfg = {"dataset": {"path": str(cases), "format": "native"}, "metrics": [{"type": "TaskCompletion"}],
           "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": url + "/v1", "prices": PRICES},
           "cache": {"dir": str(tmp / "cache")}, "run": {"dir": str(tmp / "run")}}
    path = tmp / "cfg.json"
    path.write_text(json.dumps(cfg))
    return path


def test_dollars_rebuilt_from_the_journal_are_the_runs_own(simulator, tmp_path: Path) -> None:
    sim = simulator()
    done = _forkserver.run([TJ, "run", str(_config(tmp_path, sim.url)), "--no-progress"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    run = tmp_path / "run"
    own = json.loads((run / "summary.json").read_text())["judge"]
    lines = [json.loads(line) for line in (run / "judge_spend.jsonl").read_text().splitlines()]
    paid = [line["cost_usd"] for line in lines if "cost_usd" in line]
    assert len(paid) == own["requests"] == CASES
    # The run's dollars are of the kind the old journal lost: its lines rounded to 8 places sum to another total.
    assert round(float(sum(Decimal(str(round(c, 8))) for c in paid)), 6) != own["cost_usd"]

    (run / "summary.json").unlink()
    again = _forkserver.run([TJ, "report", str(run)], capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    rebuilt = json.loads((run / "summary.json").read_text())["judge"]
    assert rebuilt["spend_source"] == "judge_spend.jsonl"
    assert (rebuilt["requests"], rebuilt["input_tokens"], rebuilt["output_tokens"]) == (own["requests"], own["input_tokens"], own["output_tokens"])
    assert rebuilt["cost_usd"] == own["cost_usd"]
