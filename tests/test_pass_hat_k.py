"""pass^k (`PassHatK`), `PassAtK`/`PassHatK` over recorded trials (`group_by`), and `RecordedReward`.

On τ-bench's own GPT-4o airline file (50 tasks × 4 trials) the figures must be what τ-bench prints
for it: `display_metrics` (sierra-research/tau-bench `tau_bench/run.py`) is restated below and run on
the raw JSON, and the run's pass^1..4 must equal it to the last bit. The same figures must come out
of two worker processes, of two shards merged, and of a run killed with SIGKILL and resumed.
"""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
import time
from math import comb
from pathlib import Path
from typing import Any

import pytest
import yaml
from tracejudge.core.config import load_config
from tracejudge.core.errors import ConfigError
from tracejudge.core.records import Case, CaseResult, Score, Status
from tracejudge.entrypoints.cli import main
from tracejudge.stages.aggregate.fold import Aggregator
from tracejudge.stages.aggregate.state import dump_state, restore
from tracejudge.stages.score.pass_at_k import PassAtK, PassHatK
from tracejudge.stages.score.recorded_reward import RecordedReward
import _forkserver

KS = (1, 2, 3, 4)
HAT = [f"pass^{k}(RecordedReward)" for k in KS]
AT = [f"pass@{k}(RecordedReward)" for k in KS]


def upstream_display_metrics(records: list[dict[str, Any]]) -> dict[int, float]:
    """τ-bench's `display_metrics` (tau_bench/run.py @ 59a200c6), its pass^k part as written there."""
    def is_successful(reward: float) -> bool:
        return (1 - 1e-6) <= reward <= (1 + 1e-6)

    num_trials = len(set([r["trial"] for r in records]))
    c_per_task_id: dict[int, int] = {}
    for result in records:
        if result["task_id"] not in c_per_task_id:
            c_per_task_id[result["task_id"]] = 1 if is_successful(result["reward"]) else 0
        else:
            c_per_task_id[result["task_id"]] += 1 if is_successful(result["reward"]) else 0
    pass_hat_ks: dict[int, float] = {}
    for k in range(1, num_trials + 1):
        sum_task_pass_hat_k = 0
        for c in c_per_task_id.values():
            sum_task_pass_hat_k += comb(c, k) / comb(num_trials, k)
        pass_hat_ks[k] = sum_task_pass_hat_k / len(c_per_task_id)
    return pass_hat_ks


def _config(path: Path, trajectories: Path, run_dir: Path, **extra: Any) -> Path:
    metrics = [{"type": "RecordedReward"}, {"type": "ToolCorrectness", "name": "tc", "allow_extra": True}]
    metrics += [{"type": "PassHatK", "metric": "RecordedReward", "k": k, "group_by": "task_id"} for k in KS]
    metrics += [{"type": "PassAtK", "metric": "RecordedReward", "k": k, "group_by": "task_id"} for k in KS]
    cfg: dict[str, Any] = {"dataset": {"path": str(trajectories), "format": "tau-bench"}, "metrics": metrics + extra.pop("metrics", []),
                           "run": {"dir": str(run_dir), "processes": 1, **extra.pop("run", {})},
                           "aggregate": {"group_by": ["reward"]},
                           "assertions": {"metrics": {"pass^4(RecordedReward)": {"min_mean": 0.2}}}, **extra}
    path.write_text(yaml.safe_dump(cfg))
    return path


def _figures(summary: dict[str, Any]) -> dict[str, Any]:
    """The pass figures of a summary, whole run and breakdowns: what every way of running must agree on."""
    return {"run": summary["pass_at_k"],
            "by": {f"{b}={v}": g.get("pass_at_k") for b, groups in summary["breakdowns"].items() for v, g in groups.items()}}


@pytest.fixture(scope="module")
def records(tau_paths: tuple[Path, Path]) -> list[dict[str, Any]]:
    return json.loads(tau_paths[0].read_text())


@pytest.fixture(scope="module")
def tau_run(tmp_path_factory: pytest.TempPathFactory, tau_paths: tuple[Path, Path]) -> tuple[int, dict[str, Any], Path]:
    root = tmp_path_factory.mktemp("tau")
    rc = main(["run", str(_config(root / "c.yaml", tau_paths[0], root / "run")), "--no-progress"])
    return rc, json.loads((root / "run" / "summary.json").read_text()), root


def test_pass_hat_k_of_the_recorded_rewards_is_tau_benchs_own_figure_to_the_last_bit(tau_run, records) -> None:
    rc, s, _ = tau_run
    upstream = upstream_display_metrics(records)
    assert [s["pass_at_k"][key]["value"] for key in HAT] == [upstream[k] for k in KS] == [0.42, 0.2733333333333333, 0.22, 0.2]
    for key, k in zip(HAT, KS):
        fig = s["pass_at_k"][key]
        assert (fig["estimator"], fig["group_by"], fig["k"], fig["cases"], fig["too_few_trials"], fig["results_without_key"]) == \
            ("pass^k", "task_id", k, 50, 0, 0)
    # pass^1 is the mean recorded reward (84 of 200 trials succeeded), and the gate reads pass^4 (0.2 >= 0.2).
    assert s["metrics"]["RecordedReward"]["mean"] == 0.42 and s["metrics"]["RecordedReward"]["passed"] == 84
    assert rc == 0


def test_pass_at_k_over_the_recorded_trials_is_the_unbiased_estimator_by_hand(tau_run, records) -> None:
    _, s, _ = tau_run
    n: dict[int, int] = {}
    c: dict[int, int] = {}
    for r in records:
        n[r["task_id"]] = n.get(r["task_id"], 0) + 1
        c[r["task_id"]] = c.get(r["task_id"], 0) + (r["reward"] == 1.0)
    for key, k in zip(AT, KS):
        per_task = [1.0 - comb(n[t] - c[t], k) / comb(n[t], k) if n[t] - c[t] >= k else 1.0 for t in n]
        # Summed exactly (then divided once), so the figure does not depend on the order trials came in.
        assert s["pass_at_k"][key]["value"] == math.fsum(per_task) / len(per_task)
        assert s["pass_at_k"][key]["value"] == pytest.approx(sum(per_task) / len(per_task), abs=1e-15)
    assert s["pass_at_k"]["pass@4(RecordedReward)"]["value"] == 0.72  # 36 of 50 tasks succeeded at least once


def test_breakdowns_count_the_trials_each_group_holds(tau_run) -> None:
    _, s, _ = tau_run
    won = s["breakdowns"]["metadata.reward"]["1.0"]["pass_at_k"]
    # Within reward = 1.0 every trial passed: a task's pass^k is 1 where it has k such trials; the other tasks have too few.
    assert [(won[key]["value"], won[key]["cases"], won[key]["too_few_trials"]) for key in HAT] == \
        [(1.0, 36, 0), (1.0, 24, 12), (1.0, 14, 22), (1.0, 10, 26)]
    lost = s["breakdowns"]["metadata.reward"]["0.0"]["pass_at_k"]["pass^1(RecordedReward)"]
    assert (lost["value"], lost["cases"]) == (0.0, 40)


def test_reports_show_the_figures(tau_run) -> None:
    _, _, root = tau_run
    md = (root / "run" / "report.md").read_text()
    assert "| pass^4(RecordedReward) | RecordedReward | 4 | 0.200 | 50 | 0 | 0 | metadata.task_id (0) |" in md
    assert "<b>pass^2(RecordedReward)</b> = 0.273 over 50 tasks by metadata.task_id" in (root / "run" / "report.html").read_text()


def test_two_worker_processes_and_two_shards_merged_give_the_same_figures(tau_run, tau_paths, monkeypatch) -> None:
    from tracejudge.engine.executors import processes as processes_mod

    _, s, root = tau_run
    monkeypatch.setattr(processes_mod, "INLINE_RECORDS", 0)  # every record to a worker: 200 would all be scored in-process first
    cfg = _config(root / "p2.yaml", tau_paths[0], root / "p2", run={"processes": 2, "executor": "processes"})
    assert main(["run", str(cfg), "--no-progress"]) == 0
    assert _figures(json.loads((root / "p2" / "summary.json").read_text())) == _figures(s)
    cfg = _config(root / "sh.yaml", tau_paths[0], root / "sh")
    for i in (1, 2):  # each shard holds some trials of a task: its own figures count the rest as too few
        main(["run", str(cfg), "--shard", f"{i}/2", "--no-progress"])
    shard = json.loads((root / "sh-shard-1-of-2" / "summary.json").read_text())["pass_at_k"]["pass^4(RecordedReward)"]
    assert shard["cases"] + shard["too_few_trials"] + shard["no_scored_trial"] <= 50 and shard["too_few_trials"] > 0
    assert main(["report", str(root / "sh-shard-1-of-2"), str(root / "sh-shard-2-of-2"), "--out", str(root / "merged")]) == 0
    assert _figures(json.loads((root / "merged" / "summary.json").read_text())) == _figures(s)


SLOW_METRIC = """
import time
from tracejudge import metric

@metric
def slow(case, trace):
    time.sleep(0.012)  # (so that a SIGKILL lands mid-run)
    return 1.0
"""


def test_a_run_killed_with_sigkill_and_resumed_gives_the_same_figures(tau_run, tau_paths) -> None:
    _, s, root = tau_run
    (root / "slowmetric.py").write_text(SLOW_METRIC)
    cfg = _config(root / "kill.yaml", tau_paths[0], root / "kill", metrics=[{"type": "slowmetric:slow"}], run={"flush_every": 1})
    results = root / "kill" / "results.jsonl"
    proc = _forkserver.popen([sys.executable, "-c", "import sys; from tracejudge.entrypoints.cli import main; sys.exit(main(sys.argv[1:]))",
                             "run", str(cfg), "--no-progress"], cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (results.exists() and len(results.read_bytes().splitlines()) >= 60):
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.stderr is not None
    proc.stderr.close()
    done = len(results.read_bytes().splitlines())
    assert 60 <= done < 200, "the kill must land mid-run"
    assert (root / "kill" / "checkpoint.json").exists()  # the resume starts from the checkpoint's grouped counts
    resume = _forkserver.run([sys.executable, "-m", "tracejudge", "run", str(cfg), "--no-progress"], cwd=root, capture_output=True, text=True)
    assert resume.returncode == 0, resume.stderr
    assert "checkpoint not reused" not in resume.stderr  # (restored from its state, not rebuilt from results.jsonl)
    resumed = json.loads((root / "kill" / "summary.json").read_text())
    assert resumed["results"] == 200 and _figures(resumed) == _figures(s)


def test_a_task_file_with_one_trial_a_task_tau2(data_dir: Path, tmp_path: Path) -> None:
    # τ²-bench's files here hold one trial a task: pass^1 is its own formula (mean over tasks of C(c,1)/C(1,1));
    # pass^2 has no task with two trials (τ²-bench reports no pass^2 then), so it is null, every task counted as too few.
    path = data_dir / "tau2_bench" / "model_training_results" / "gpt-4.1_airline_default_gpt-4.1_1trials.json"
    sims = json.loads(path.read_text())["simulations"]
    success = [(1 - 1e-6) <= s["reward_info"]["reward"] <= (1 + 1e-6) for s in sims]
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"dataset": {"path": str(path), "format": "tau2-bench"}, "run": {"dir": str(tmp_path / "run")},
                                   "metrics": [{"type": "RecordedReward"}] + [{"type": "PassHatK", "metric": "RecordedReward", "k": k,
                                                                              "group_by": "task_id"} for k in (1, 2)]}))
    assert main(["run", str(cfg), "--no-progress"]) == 0
    pk = json.loads((tmp_path / "run" / "summary.json").read_text())["pass_at_k"]
    assert pk["pass^1(RecordedReward)"]["value"] == sum(comb(int(x), 1) / comb(1, 1) for x in success) / len(sims) == 0.5
    assert (pk["pass^2(RecordedReward)"]["value"], pk["pass^2(RecordedReward)"]["too_few_trials"]) == (None, 20)


def _native(path: Path, rows: list[tuple[str, Any, float]]) -> Path:
    lines = []
    for cid, task, reward in rows:
        meta = {"reward": reward} if task == "absent" else {"task_id": task, "reward": reward}
        lines.append(json.dumps({"id": cid, "metadata": meta, "trace": {"steps": [], "output": "x"}}))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_results_without_the_key_are_left_out_and_counted(tmp_path: Path) -> None:
    rows = [("a0", 1, 1.0), ("a1", 1, 1.0), ("b0", "1", 1.0), ("b1", "1", 0.0), ("n0", None, 1.0), ("x0", "absent", 1.0)]
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"dataset": {"path": str(_native(tmp_path / "d.jsonl", rows))}, "run": {"dir": str(tmp_path / "run")},
                                   "metrics": [{"type": "RecordedReward"}, {"type": "PassHatK", "metric": "RecordedReward", "k": 2,
                                                                            "group_by": "task_id"}]}))
    assert main(["run", str(cfg), "--no-progress"]) == 0
    fig = json.loads((tmp_path / "run" / "summary.json").read_text())["pass_at_k"]["pass^2(RecordedReward)"]
    # Tasks 1 and "1" are two (compared as JSON): pass^2 is 1 and 0; the null and the absent task_id belong to no task.
    assert (fig["value"], fig["cases"], fig["results_without_key"]) == (0.5, 2, 2)


def test_config_errors_name_the_field(tmp_path: Path, tau_paths: tuple[Path, Path]) -> None:
    def refused(metrics: list[dict[str, Any]], trials: int = 1) -> str:
        cfg = tmp_path / "c.yaml"
        cfg.write_text(yaml.safe_dump({"dataset": {"path": str(tau_paths[0]), "format": "tau-bench"}, "run": {"trials": trials},
                                       "metrics": [{"type": "RecordedReward"}, *metrics]}))
        with pytest.raises(ConfigError) as exc:
            load_config(cfg)
        return str(exc.value)

    assert "metrics.1.k: PassHatK: Input should be greater than or equal to 1" in refused([{"type": "PassHatK", "metric": "RecordedReward", "k": 0}])
    assert "metrics.1.group_by: PassAtK: Input should be a valid string" in refused(
        [{"type": "PassAtK", "metric": "RecordedReward", "k": 2, "group_by": ["task_id"]}])
    assert "metrics.1.group_by: PassHatK: String should have at least 1 character" in refused(
        [{"type": "PassHatK", "metric": "RecordedReward", "k": 2, "group_by": ""}])
    assert "metrics.1.metric: PassHatK: 'RecordedRewad' is not a metric of this run; expected one of: RecordedReward" in refused(
        [{"type": "PassHatK", "metric": "RecordedRewad", "k": 2, "group_by": "task_id"}])
    assert "metrics.2.metric: PassHatK: 'pass@2(RecordedReward)' is itself a pass@k or pass^k figure" in refused(
        [{"type": "PassAtK", "metric": "RecordedReward", "k": 2, "group_by": "task_id"},
         {"type": "PassHatK", "metric": "pass@2(RecordedReward)", "k": 2, "group_by": "task_id"}])
    # Without group_by, k is bounded by run.trials as PassAtK's is, and the message says what recorded trials need.
    assert "metrics.1.k: PassHatK: k=4 is larger than run.trials=1; pass^k needs k <= trials (or `group_by`" in refused(
        [{"type": "PassHatK", "metric": "RecordedReward", "k": 4}])
    assert "field" in refused([{"type": "RecordedReward", "name": "r2", "field": 3}])
    # With group_by the same k loads.
    cfg = tmp_path / "ok.yaml"
    cfg.write_text(yaml.safe_dump({"dataset": {"path": str(tau_paths[0]), "format": "tau-bench"},
                                   "metrics": [{"type": "RecordedReward"}, {"type": "PassHatK", "metric": "RecordedReward", "k": 4, "group_by": "task_id"}]}))
    assert [m["type"] for m in load_config(cfg).metrics] == ["RecordedReward", "PassHatK"]


def test_explain_names_the_sources(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "PassHatK"]) == 0
    out = capsys.readouterr().out
    assert "C(c, k) / C(n, k)" in out and "display_metrics" in out and "agent_metrics.py" in out and "group_by" in out
    assert main(["explain", "RecordedReward"]) == 0
    assert "is_successful" in capsys.readouterr().out


def test_recorded_reward_follows_is_successful_and_says_why_it_cannot_score() -> None:
    def score(meta: dict[str, Any], **kw: Any) -> Score:
        return RecordedReward(**kw).evaluate(Case(id="c", metadata=meta))

    assert (score({"reward": 1.0}).value, score({"reward": 1.0}).passed) == (1.0, True)
    assert (score({"reward": 0.9999995}).value, score({"reward": 0.9999995}).passed) == (0.9999995, True)  # within 1e-6
    assert (score({"reward": 0.999998}).passed, score({"reward": 1}).passed) == (False, True)
    assert (score({"reward": 1.0000005}).value, score({"reward": 1.0000005}).passed) == (1.0, True)  # upstream's band above 1
    assert (score({"reward": 0.5}).value, score({"reward": 0.5}).passed, score({"reward": 0.5}, threshold=0.5).passed) == (0.5, False, True)
    for meta, why in [({}, "no metadata.reward"), ({"reward": None}, "is null"), ({"reward": True}, "not a number"),
                      ({"reward": "1.0"}, "not a number"), ({"reward": -0.5}, "not a reward in [0, 1]"),
                      ({"reward": 2.0}, "not a reward in [0, 1]"), ({"reward": 10**400}, "not a reward in [0, 1]")]:
        got = score(meta)
        assert got.value is None and got.passed is None and why in got.reason, (meta, got.reason)
    assert score({"r": 1.0}, field="r").value == 1.0


def _result(i: int, trials: int, *, task: bool) -> CaseResult:
    passed = (i * 7 % 5) < 2
    meta: dict[str, Any] = {"domain": f"d{i % 3}", "trial": i % trials}
    if task:
        meta["task_id"] = i // trials // 2  # two cases a task
    status = Status.judge_error if i % 13 == 0 else Status.ok  # (a late failure: the deterministic score stands)
    return CaseResult(case_id=f"c{i // trials}", trial=i % trials, status=status, metadata=meta, tags=[f"t{i % 2}"],
                      scores={"m": Score(value=1.0 if passed else 0.0, passed=passed)}, duration_s=0.0)


def test_per_case_pass_hat_k_over_run_trials_is_the_formula() -> None:
    # Without group_by a case's trials are its run.trials re-runs, as PassAtK counts them.
    agg = Aggregator(["m"], trials=4, pass_at_k=[PassHatK(metric="m", k=2), PassAtK(metric="m", k=2)])
    results = [_result(i, 4, task=False) for i in range(80)]
    for r in results:
        agg.fold(r)
    per_case: dict[str, list[bool]] = {}
    for r in results:
        per_case.setdefault(r.case_id, []).append(bool(r.scores["m"].passed))
    hat = [comb(sum(v), 2) / comb(4, 2) for v in per_case.values()]
    assert agg.summary()["pass_at_k"]["pass^2(m)"]["value"] == pytest.approx(sum(hat) / len(hat), abs=1e-15)
    assert agg.summary()["pass_at_k"]["pass^2(m)"]["estimator"] == "pass^k"


def test_the_checkpoint_state_resumes_grouped_and_per_case_trackers_identically() -> None:
    from tracejudge.core.evalconfig import AggregateConfig

    settings = AggregateConfig(group_by=["domain", "trial"], max_groups=2)
    specs = [PassHatK(metric="m", k=2, group_by="task_id", name="hat_task"), PassAtK(metric="m", k=3, group_by="task_id"),
             PassHatK(metric="m", k=2), PassAtK(metric="m", k=2)]

    def fresh() -> Aggregator:
        return Aggregator(["m"], trials=3, pass_at_k=specs, settings=settings)

    results = [_result(i, 3, task=i % 11 != 0) for i in range(300)]
    whole, first = fresh(), fresh()
    for r in results[:170]:
        whole.fold(r)
        first.fold(r)
    resumed = restore(json.loads(json.dumps(dump_state(first))), fresh())
    for r in results[170:]:
        whole.fold(r)
        resumed.fold(r)
    assert resumed.summary() == whole.summary()
    assert resumed.summary()["pass_at_k"]["hat_task"]["results_without_key"] > 0
    # A state written before pass^k and group_by existed (no such fields) still restores a plain pass@k tracker.
    plain = Aggregator(["m"], trials=3, pass_at_k=[PassAtK(metric="m", k=2)])
    for r in results[:50]:
        plain.fold(r)
    old = dump_state(plain)
    for t in old["trackers"]:
        for new in ("estimator", "group_by", "tasks", "without_key"):
            del t[new]
    again = restore(old, Aggregator(["m"], trials=3, pass_at_k=[PassAtK(metric="m", k=2)]))
    assert again.summary() == plain.summary()
