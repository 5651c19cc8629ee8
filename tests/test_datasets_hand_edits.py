"""τ-bench and τ²-bench files a person edited or a writer cut: a key that lost its `:`, a results object that lost its `}`.

Real runs (the GPT-4o airline trajectories, the GPT-4.1 airline simulations), written as `json.dumps` writes them, then damaged.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hand_edits import filed
import _forkserver

TAU2 = "tau2_bench/model_training_results/gpt-4.1_airline_default_gpt-4.1_1trials.json"


@pytest.fixture(scope="module")
def runs(tau_paths) -> list[dict]:
    return json.loads(tau_paths[0].read_text())[:3]


def _no_colon(text: str, key: str, after: int = 0) -> tuple[str, int]:
    """`text` with the `:` after the first `"key":` from `after` removed, and the offset of the value it preceded."""
    at = text.index(f'"{key}": ', after) + len(key) + 2
    return text[:at] + text[at + 1 :], at + 1  # (the value is one character on: the space that followed the `:`)


def _where(text: str, at: int) -> str:
    return f"line {text.count(chr(10), 0, at) + 1} column {at - text.rfind(chr(10), 0, at)}"


@pytest.mark.parametrize("indent", [None, 2])
def test_a_tau_bench_key_without_its_colon_costs_its_run_only(tmp_path, runs, indent):
    # `{"task_id" 1, …}` was read as a quote lost: "where it ends cannot be told", and the runs after it were not read.
    text = json.dumps(runs, indent=indent)
    second = text.index('"task_id"', text.index('"task_id"') + 1)
    broken, value = _no_colon(text, "task_id", second)
    start = broken.rindex("{", 0, second)
    cid = f"F:{broken.count(chr(10), 0, start) + 1}" if indent else f"F:1:{start + 1}"
    why = f"invalid JSON: the key \"task_id\" has no ':' after it (a ':' is missing before the value at {_where(broken, value)})"
    assert filed(tmp_path / "runs.json", "tau-bench", broken) == [("0-0", None), (cid, why), ("2-0", None)]


def test_a_colon_lost_deep_inside_a_run_is_named_where_it_is(tmp_path, runs):
    text = json.dumps(runs, indent=2)
    broken, value = _no_colon(text, "name", text.index('"traj"'))  # a tool call's name in the first run
    got = filed(tmp_path / "runs.json", "tau-bench", broken)
    assert [cid for cid, _ in got] == ["F:2", "1-0", "2-0"]
    assert got[0][1] == f"invalid JSON: the key \"name\" has no ':' after it (a ':' is missing before the value at {_where(broken, value)})"


def test_a_lost_quote_is_still_a_lost_quote(tmp_path, runs):
    # A key's closing quote lost also reads "Expecting ':' delimiter"; its strings do not line up, and the read stops.
    text = json.dumps(runs, indent=2)
    at = text.index('"reward"', text.index('"task_id": 1'))
    got = filed(tmp_path / "runs.json", "tau-bench", text[:at] + text[at + 1 :])
    assert [cid for cid, _ in got] == ["0-0", f"F:{text.count(chr(10), 0, text.rindex('{', 0, at)) + 1}"]
    assert "a quote is missing in or near this record" in got[1][1] and "has no ':'" not in got[1][1]


def test_a_tau2_bench_key_without_its_colon_costs_its_simulation_only(tmp_path, data_dir):
    results = json.loads((data_dir / TAU2).read_text())
    results["simulations"] = results["simulations"][:3]
    text = json.dumps(results, indent=2)
    sims = text.index('"simulations"')
    second = text.index('"task_id"', text.index('"task_id"', sims) + 1)
    broken, value = _no_colon(text, "task_id", second)
    got = filed(tmp_path / "results.json", "tau2-bench", broken)
    ids = [f"{s['task_id']}-{s['trial']}" for s in results["simulations"]]
    assert [cid for cid, _ in got] == [ids[0], f"F:{broken.count(chr(10), 0, broken.rindex('{', 0, second)) + 1}", ids[2]]
    assert got[1][1] == (f"simulations[1]: invalid JSON: the key \"task_id\" has no ':' after it (a ':' is missing before the value at "
                         f"{_where(broken, value)})")


def test_a_tau2_bench_file_missing_its_last_brace_warns_and_reads_every_simulation(tmp_path, data_dir):
    # Nothing was said: the file read as if whole.
    text = (data_dir / TAU2).read_text().rstrip()
    assert text.endswith("}")
    path = tmp_path / "results.json"
    path.write_text(text[:-1] + "\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset: {{path: {path}, format: tau2-bench}}\nmetrics: [{{type: ToolCalls}}]\nrun: {{dir: run, executor: inprocess}}\n")
    done = _forkserver.run([sys.executable, "-m", "tracejudge", "run", str(cfg), "--no-progress"], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    said = [json.loads(line) for line in done.stderr.splitlines() if "closing '}'" in line]
    assert [(s["event"], s["file"], s["line"]) for s in said] == [
        ("tau2-bench: the file ends before the results object's closing '}': it looks truncated (the '}' is missing); every simulation "
         "in it was read", str(path), text.count("\n"))], done.stderr  # (the last line holding text)
    results = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert len(results) == 20 and all(r["status"] == "ok" for r in results)
