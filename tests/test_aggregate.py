"""The aggregate stage: denominators, std and CI, pass@k over interleaved trials, breakdowns, bounded memory."""

from __future__ import annotations

import math
import random
import statistics

import pytest
from tracejudge.core.evalconfig import AggregateConfig
from tracejudge.core.records import CaseResult, ErrorInfo, Score, Status
from tracejudge.stages.aggregate.fold import Aggregator
from tracejudge.stages.score import PassAtK
import _forkserver


def ok(cid: str, trial: int = 0, **scores: float | None) -> CaseResult:
    return CaseResult(case_id=cid, trial=trial, scores={k: Score(value=v, passed=None if v is None else v >= 1.0, reason="r") for k, v in scores.items()})


def err(cid: str, status: Status, trial: int = 0) -> CaseResult:
    return CaseResult(case_id=cid, trial=trial, status=status, error=ErrorInfo(kind=status.value, message="boom"))


def test_seven_scored_three_errored_states_seven_of_ten() -> None:
    agg = Aggregator(["m"])
    values = [1.0, 1.0, 0.5, 0.0, 1.0, 0.25, 0.75]
    for i, v in enumerate(values):
        agg.fold(ok(f"c{i}", m=v))
    agg.fold(err("e1", Status.judge_error))
    agg.fold(err("e2", Status.target_error))
    agg.fold(err("e3", Status.judge_error))
    s = agg.summary()
    m = s["metrics"]["m"]
    assert s["results"] == 10 and s["status"] == {"judge_error": 2, "ok": 7, "target_error": 1}
    assert m["results"] == 10 and m["scored"] == 7
    assert m["excluded"] == {"judge_error": 2, "target_error": 1}
    assert m["error_share"] == pytest.approx(0.3)
    assert m["mean"] == pytest.approx(statistics.fmean(values), abs=1e-6)  # a 7-value mean, stated as such
    assert m["std"] == pytest.approx(statistics.stdev(values), abs=1e-6)
    assert m["passed"] == 3 and m["with_verdict"] == 7 and m["pass_rate"] == pytest.approx(3 / 7, abs=1e-6)
    assert m["histogram"] == [1, 0, 1, 0, 0, 1, 0, 1, 0, 3]
    lo, hi = m["ci95"]
    assert lo < m["mean"] < hi and 0.0 <= lo and hi <= 1.0
    assert m["scored"] + m["not_computed"] + sum(m["excluded"].values()) == m["results"]


def test_not_computed_scores_are_counted_apart_from_errors() -> None:
    agg = Aggregator(["m", "n"])
    agg.fold(ok("a", m=1.0, n=None))
    agg.fold(ok("b", m=0.0))  # no score for n at all: n is in the run's own list, so b was written before it
    agg.fold(ok("c", m=0.0, cm=1.0))  # a case-level metric the results before and after it lack
    agg.fold(ok("d", m=0.0))
    s = agg.summary()["metrics"]
    assert s["n"]["scored"] == 0 and s["n"]["not_computed"] == 4 and s["n"]["mean"] is None and s["n"]["ci95"] is None
    assert (s["n"]["written_before"], s["n"]["not_applicable"], s["n"]["error_share"]) == (3, 0, 1.0)
    assert (s["cm"]["scored"], s["cm"]["not_computed"], s["cm"]["not_applicable"], s["cm"]["error_share"]) == (1, 0, 3, 0.0)
    assert "written_before" not in s["cm"] and "written_before" not in s["m"]
    assert s["m"]["scored"] == 4


def test_a_metric_first_seen_late_still_accounts_for_every_result() -> None:
    agg = Aggregator([])
    agg.fold(err("e", Status.invalid_input))
    agg.fold(ok("a"))
    agg.fold(ok("b", late=0.5))
    m = agg.summary()["metrics"]["late"]
    assert (m["scored"], m["not_computed"], m["not_applicable"], m["excluded"]) == (1, 0, 1, {"invalid_input": 1})
    assert m["results"] == 3


def test_summary_is_reproducible_and_independent_of_arrival_order() -> None:
    rng = random.Random(2)
    results = [ok(f"c{i}", m=rng.random()) for i in range(300)]
    a, b = Aggregator(["m"]), Aggregator(["m"])
    for r in results:
        a.fold(r)
    for r in reversed(results):
        b.fold(r)
    assert a.summary()["metrics"]["m"]["ci95"] == b.summary()["metrics"]["m"]["ci95"]
    assert a.summary() == a.summary()


def _pass_at_k_by_hand(trials: dict[str, list[bool | None]], k: int) -> float:
    # An errored trial (None) is a failed one, as in HumanEval's harness; a case that errored on every trial has c = 0.
    vals = []
    for outcomes in trials.values():
        n, c = len(outcomes), sum(1 for o in outcomes if o)
        vals.append(1.0 if n - c < k else 1 - math.comb(n - c, k) / math.comb(n, k))
    return sum(vals) / len(vals)


def test_pass_at_k_over_interleaved_trials_matches_the_estimator() -> None:
    rng = random.Random(9)
    trials = 4
    outcomes: dict[str, list[bool | None]] = {}
    stream = []
    for c in range(40):
        cid = f"case{c}"
        outcomes[cid] = []
        for t in range(trials):
            roll = rng.random()
            if c >= 37 or roll < 0.1:  # cases 37-39 error on every trial; others sometimes
                outcomes[cid].append(None)
                stream.append(err(cid, Status.judge_error, t))
            else:
                passed = roll < 0.55
                outcomes[cid].append(passed)
                stream.append(ok(cid, t, m=1.0 if passed else 0.0))
    rng.shuffle(stream)  # trials of one case arrive interleaved with other cases'
    spec = PassAtK(metric="m", k=2)
    agg = Aggregator(["m"], trials=trials, pass_at_k=[spec])
    peak = 0
    for r in stream:
        agg.fold(r)
        peak = max(peak, len(agg.trackers[("m", None)].pending))
    s = agg.summary()
    got = s["pass_at_k"]["pass@2(m)"]
    assert got["value"] == pytest.approx(_pass_at_k_by_hand(outcomes, 2), abs=1e-6)
    assert got["cases"] == 40 and got["no_scored_trial"] == 0 and got["too_few_trials"] == 0
    per_metric = s["metrics"]["m"]["pass_at_k"]
    assert set(per_metric) == {"1", "2", "4"}
    assert per_metric["1"]["value"] == pytest.approx(_pass_at_k_by_hand(outcomes, 1), abs=1e-6)
    assert per_metric["4"]["value"] == pytest.approx(_pass_at_k_by_hand(outcomes, 4), abs=1e-6)
    # finished cases are dropped: nothing is pending at the end
    assert not agg.trackers[("m", None)].pending and peak <= 40


def test_pass_at_1_with_one_trial_is_the_pass_rate_with_errored_results_failed() -> None:
    agg = Aggregator(["m"], trials=1, pass_at_k=[PassAtK(metric="m", k=1)])
    for i, v in enumerate([1.0, 0.0, 1.0, 1.0, 0.5]):
        agg.fold(ok(f"c{i}", m=v))
    assert agg.summary()["pass_at_k"]["pass@1(m)"]["value"] == agg.summary()["metrics"]["m"]["pass_rate"] == pytest.approx(0.6)
    agg.fold(err("e", Status.judge_error))
    s = agg.summary()
    # The pass rate leaves the errored result out; pass@1 counts it as a case that failed its one trial.
    assert s["metrics"]["m"]["pass_rate"] == pytest.approx(0.6) and s["pass_at_k"]["pass@1(m)"]["value"] == pytest.approx(0.5)
    assert s["pass_at_k"]["pass@1(m)"]["cases"] == 6
    assert "pass_at_k" not in s["metrics"]["m"]  # automatic pass@k only when trials > 1


def test_pass_at_k_threshold_and_incomplete_cases() -> None:
    spec = PassAtK(metric="m", k=3, threshold=0.5)
    agg = Aggregator(["m"], trials=3, pass_at_k=[spec])
    for t, v in enumerate([0.6, 0.1, 0.2]):
        agg.fold(ok("full", t, m=v))
    agg.fold(ok("cut", 0, m=0.9))  # interrupted run: one trial of three
    s = agg.summary()["pass_at_k"]["pass@3(m)"]
    assert s["value"] == pytest.approx(1.0) and s["cases"] == 1 and s["too_few_trials"] == 1


def test_breakdowns_by_tag_and_metadata_with_bounded_groups() -> None:
    agg = Aggregator(["m"], settings=AggregateConfig(group_by=["domain", "level"], max_groups=2))
    rows = [("a", ["x"], {"domain": "air", "level": 1}, 1.0), ("b", ["x", "y"], {"domain": "retail", "level": 2}, 0.0),
            ("c", ["y"], {"domain": "air"}, 0.5), ("d", [], {"domain": "telecom", "level": 1}, 0.25)]
    for cid, tags, meta, v in rows:
        agg.fold(CaseResult(case_id=cid, tags=tags, metadata=meta, scores={"m": Score(value=v, passed=v >= 1)}))
    agg.fold(CaseResult(case_id="e", status=Status.target_error, tags=["x"], metadata={"domain": "air"}))
    b = agg.summary()["breakdowns"]
    assert b["tag"]["x"]["results"] == 3 and b["tag"]["x"]["metrics"]["m"]["scored"] == 2
    assert b["tag"]["x"]["metrics"]["m"]["excluded"] == {"target_error": 1}
    assert b["tag"]["x"]["metrics"]["m"]["mean"] == pytest.approx(0.5)
    assert b["metadata.domain"]["air"]["metrics"]["m"]["mean"] == pytest.approx(0.75)
    assert set(b["metadata.domain"]) == {"air", "retail", "(other)"}  # max_groups=2: telecom folds into (other)
    assert b["metadata.domain"]["(other)"]["metrics"]["m"]["mean"] == pytest.approx(0.25)
    assert set(b["metadata.level"]) == {"1", "2", "(other)"}  # the missing level is a third value, folded too


def test_a_judge_failure_keeps_the_deterministic_scores_of_its_case() -> None:
    agg = Aggregator(["tool_calls", "task_completion"])
    agg.fold(ok("a", tool_calls=1.0, task_completion=0.75))
    judged_badly = ok("b", tool_calls=0.5, task_completion=None)
    judged_badly.status = Status.judge_error
    agg.fold(judged_badly)
    agg.fold(err("c", Status.invalid_input))
    m = agg.summary()["metrics"]
    # The deterministic metric scored case b; only the judge metric excludes it.
    assert (m["tool_calls"]["scored"], m["tool_calls"]["mean"], m["tool_calls"]["excluded"]) == (2, 0.75, {"invalid_input": 1})
    assert (m["task_completion"]["scored"], m["task_completion"]["excluded"]) == (1, {"invalid_input": 1, "judge_error": 1})


def test_the_interval_of_more_values_than_the_sample_keeps_does_not_depend_on_their_order() -> None:
    # 3,000 results, more than the 1,000 values the whole run's sample keeps (and the 250 of a tag's): folded in
    # file order, reversed and shuffled (as worker processes or a resume deliver them), every ci95 is the same.
    rng = random.Random(11)
    results = [CaseResult(case_id=f"c{i}", trial=i % 2, tags=[f"t{i % 3}"],
                          scores={"m": Score(value=rng.betavariate(2, 5))}) for i in range(3000)]
    shuffled = list(results)
    random.Random(12).shuffle(shuffled)

    def intervals(order: list[CaseResult]) -> list[object]:
        agg = Aggregator(["m"])
        for r in order:
            agg.fold(r)
        s = agg.summary()
        return [s["metrics"]["m"]["ci95"], *(g["metrics"]["m"]["ci95"] for g in s["breakdowns"]["tag"].values())]

    first = intervals(results)
    assert first[0] is not None and len(first) == 4
    assert intervals(results[::-1]) == first
    assert intervals(shuffled) == first


def test_a_run_and_its_results_read_back_in_another_order_state_the_same_intervals(tmp_path) -> None:
    # Real processes: a run whose bootstrap sample (aggregate.reservoir_size: 20) is smaller than its 300
    # results (scored where they were rendered), then `tracejudge report` rebuilding the summary from
    # results.jsonl with its lines shuffled: the same cases are sampled, so every ci95 is the same.
    import json
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _runs import native_case, write_dataset

    tj = Path(sys.executable).with_name("tracejudge")
    tools = ["a", "b", "c", "d"]
    write_dataset(tmp_path / "cases.jsonl", [native_case(f"c{i}", tools[: 1 + i % 4], tools[: 1 + (i * 7) % 4], tags=[f"t{i % 2}"])
                                             for i in range(300)])
    (tmp_path / "config.yaml").write_text("dataset: {path: cases.jsonl, format: native}\nmetrics: [{type: ToolCorrectness}]\n"
                                          "aggregate: {reservoir_size: 20, group_reservoir_size: 10}\nrun: {dir: run}\n")
    first = _forkserver.run([str(tj), "run", "config.yaml", "--no-progress"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert first.returncode in (0, 1), first.stderr
    shutil.copytree(tmp_path / "run", tmp_path / "shuffled")
    lines = (tmp_path / "run" / "results.jsonl").read_text().splitlines(keepends=True)
    random.Random(5).shuffle(lines)
    (tmp_path / "shuffled" / "results.jsonl").write_text("".join(lines))
    again = _forkserver.run([str(tj), "report", "shuffled"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert again.returncode in (0, 1), again.stderr

    def intervals(run: str) -> list[object]:
        s = json.loads((tmp_path / run / "summary.json").read_text())
        blocks = [s["metrics"], *(g["metrics"] for g in s["breakdowns"]["tag"].values())]
        return [next(iter(m.values()))["ci95"] for m in blocks]  # (the run's one metric)

    want = intervals("run")
    assert want[0] is not None and len(want) == 3
    assert intervals("shuffled") == want


def test_the_mean_is_the_exact_mean_whatever_the_order_and_the_checkpoints() -> None:
    # Rounded to 6 places, a mean of thirds read 0.333333 where pydantic-evals' average reads 0.3333333333333333; a
    # float sum would give a last digit that depends on the order results finish in (judges, resumes, workers).
    from fractions import Fraction

    from tracejudge.stages.aggregate.state import dump_state, restore

    rng = random.Random(7)
    values = [rng.choice([1 / 3, 2 / 3, 0.1, 0.7, 1.0, 0.0, 1e-300, 5e-324]) for _ in range(3_000)]
    exact = float(sum(map(Fraction, values)) / len(values))
    means, shares = set(), set()
    for order in range(4):
        shuffled = values[:] if order == 0 else rng.sample(values, len(values))
        agg = Aggregator(["m"])
        for i, v in enumerate(shuffled):
            if i == 1_234:  # a checkpoint taken and resumed from in the middle
                agg = restore(dump_state(agg), Aggregator(["m"]))
            agg.fold(ok(f"c{i}", m=v))
        agg.fold(err("e", Status.judge_error))
        m = agg.summary()["metrics"]["m"]
        means.add(m["mean"])
        shares.add(m["error_share"])
    assert means == {exact} and shares == {1 / 3001}
    assert sum(values) / len(values) != exact  # (a left-to-right float sum is off in its last digit here)


def test_a_ci_bound_at_zero_is_zero_not_minus_zero() -> None:
    # The demo's first 10 writes_exact values: the interval was centred on Welford's running mean, 2e-17 off the exact
    # one, and its lower bound printed "-0.000" (`ci95: [-0.0, 0.45]`).
    agg = Aggregator(["m"])
    for i, v in enumerate([0.0, 0.0, 0.5714285714285715, 0.0, 0.0, 0.5, 1.0, 0.0, 0.0, 0.0]):
        agg.fold(ok(f"c{i}", m=v))
    lo, hi = agg.summary()["metrics"]["m"]["ci95"]
    assert math.copysign(1.0, lo) == 1.0 and lo == 0.0 and hi > 0, (lo, hi)
