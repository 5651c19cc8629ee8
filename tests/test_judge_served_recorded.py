"""Which weights judged a run is recorded, and `compare` warns when two runs' weights differ under one model name.

Two runs judged by two GGUFs that a llama-server serves under the same `judge.model` left no trace of the weights in
their run directories, and `compare` read them as judged alike. The judge simulator presents itself as llama.cpp over
real HTTP on 127.0.0.1 (`tracejudge.simulator.served`) and swaps its weights between the runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from tracejudge.core.config import validate_config
from tracejudge.engine import runner
from tracejudge.simulator.served import Weights
from tracejudge.stages.comparison.runs import compare_runs
from test_judge_cache_served_model import HOME, cases, results

A = Weights("llama.cpp", f"{HOME}/qwen2.5-7b-instruct-q4_k_m.gguf", seed=0)
B = Weights("llama.cpp", f"{HOME}/llama-3.2-1b-instruct-q8_0.gguf", n_params=1_235_814_432, size=1_321_083_072, seed=7, yes_share=0.3)


def run(tmp: Path, url: str, data: Path, name: str, cache: bool = True) -> dict[str, Any]:
    cfg = validate_config({"dataset": {"path": str(data), "format": "native"}, "metrics": [{"type": "TaskCompletion"}],
                           "judge": {"provider": "openai", "model": "judge", "api_key_env": None, "base_url": url + "/v1"},
                           "cache": {"dir": str(tmp / "cache"), "enabled": cache}, "run": {"dir": str(tmp / name)}})
    return anyio.run(lambda: runner.run(cfg)).summary


def summary(tmp: Path, name: str) -> dict[str, Any]:
    return json.loads((tmp / name / "summary.json").read_text())


def test_two_runs_judged_by_other_weights_under_one_name_record_them_and_compare_warns(simulator, tmp_path):
    sim = simulator(served=A)
    data = cases(tmp_path / "c.jsonl", 4)
    run(tmp_path, sim.url, data, "a")
    run(tmp_path, sim.url, data, "a2", cache=False)  # (without a cache the weights are asked for all the same)
    sim.serve(B)
    run(tmp_path, sim.url, data, "b")

    for name, weights in (("a", A), ("a2", A), ("b", B)):
        said = summary(tmp_path, name)["judge"]["served_model"]
        assert said["server"] == "llama.cpp" and said["name"] == weights.path.rsplit("/", 1)[1] and len(said["sha256"]) == 64
        shown = {r["scores"]["TaskCompletion"]["judge"]["served_model"] for r in results(tmp_path, name)}
        assert shown == {f"llama.cpp {said['name']} (weights {said['sha256'][:12]})"}, shown
    # A home directory is never written: the weights' file by its name alone.
    assert not [p for d in ("a", "b") for p in (tmp_path / d).rglob("*") if p.is_file() and HOME.encode() in p.read_bytes()]

    differ = compare_runs(tmp_path / "a", tmp_path / "b").warnings
    assert any(w.startswith("TaskCompletion: the runs' judges differ (served_model llama.cpp qwen2.5-7b-instruct-q4_k_m.gguf (weights ")
               and "→ llama.cpp llama-3.2-1b-instruct-q8_0.gguf (weights " in w for w in differ), differ
    assert not any("judges differ" in w for w in compare_runs(tmp_path / "a", tmp_path / "a2").warnings)


def test_a_server_that_does_not_say_records_no_weights(simulator, tmp_path):
    sim = simulator()  # a plain OpenAI-compatible server: nothing identifies its weights
    data = cases(tmp_path / "c.jsonl", 2)
    run(tmp_path, sim.url, data, "a")
    assert "served_model" not in summary(tmp_path, "a")["judge"]
    assert all("served_model" not in r["scores"]["TaskCompletion"]["judge"] for r in results(tmp_path, "a"))


def test_compare_says_the_judges_may_differ_when_only_one_run_recorded_its_weights(simulator, tmp_path):
    # The other run's server did not say what it serves: it warned only when both said, and differently.
    said, silent = simulator(served=A), simulator()
    data = cases(tmp_path / "c.jsonl", 2)
    run(tmp_path, said.url, data, "a", cache=False)
    run(tmp_path, silent.url, data, "b", cache=False)
    assert "served_model" in summary(tmp_path, "a")["judge"] and "served_model" not in summary(tmp_path, "b")["judge"]
    for first, second, arrow in (("a", "b", "llama.cpp qwen2.5-7b-instruct-q4_k_m.gguf (weights "), ("b", "a", "not known")):
        warned = [w for w in compare_runs(tmp_path / first, tmp_path / second).warnings if "judges" in w]
        assert len(warned) == 1 and warned[0].startswith(f"TaskCompletion: the runs' judges may differ (served_model {arrow}"), warned
        assert "not known (its judge server did not say)" in warned[0], warned
