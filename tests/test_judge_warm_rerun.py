"""A re-run the judge cache answers whole: nothing sent, the same results; the cache read many keys at a time;
the done-key set read from results.idx at once."""

from __future__ import annotations

import json
import random
from array import array
from pathlib import Path

import anyio
from tracejudge.core.config import validate_config
from tracejudge.engine import runner
from tracejudge.engine.keyset import KeySet, result_key
from tracejudge.llm.cache import DiskJudgeCache


def _cases(path: Path, n: int) -> Path:
    with open(path, "w") as fh:
        for i in range(n):
            # Every fifth case repeats the one before under another id: the same request, so the same cache key.
            j = i - 1 if i % 5 == 4 else i
            steps = [{"tool_calls": [{"name": "lookup", "arguments": {"q": f"item {j} {k}"}, "result": f"found {j} {k}"}]} for k in range(3)]
            fh.write(json.dumps({"id": f"case-{i}", "input": f"Find item {j}", "trace": {"steps": steps, "output": f"Item {j} is found."}}) + "\n")
    return path


def _run(tmp: Path, cases: Path, run: str, metrics: list[dict], **judge: object) -> dict:
    config = validate_config({
        "dataset": {"path": str(cases), "format": "native"},
        "metrics": metrics,
        "judge": {"provider": "simulator", "model": "gpt-4o-mini", **judge},
        "cache": {"dir": str(tmp / "cache")},
        "run": {"dir": str(tmp / run), "processes": 2},
    })
    return anyio.run(lambda: runner.run(config)).summary


def _outcomes(run_dir: Path) -> dict[str, tuple]:
    out = {}
    for line in (run_dir / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        out[r["case_id"]] = (r["status"], {k: (s["value"], s["passed"], s["reason"], s["details"]) for k, s in r["scores"].items()})
    return out


def test_a_warm_rerun_sends_nothing_and_gives_the_cold_runs_results(tmp_path):
    cases = _cases(tmp_path / "c.jsonl", 60)
    metrics = [{"type": "Rubric", "criteria": "The agent found the item."}, {"type": "TaskCompletion"}]
    cold = _run(tmp_path, cases, "cold", metrics)
    # Identical cases ask the identical request: it is sent once (single flight) or read back from the cache.
    assert cold["judge"]["requests"] + cold["judge"]["cache_hits"] == 120 and cold["judge"]["requests"] >= 96
    warm = _run(tmp_path, cases, "warm", metrics)
    assert warm["judge"]["requests"] == 0 and warm["judge"]["cache_hits"] == 120 and warm["judge"]["cache_errors"] == 0
    assert warm["judge"]["saved_usd"] > 0 and warm["judge"]["cost_usd"] == 0
    assert _outcomes(tmp_path / "warm") == _outcomes(tmp_path / "cold")
    for line in (tmp_path / "warm" / "results.jsonl").read_text().splitlines():
        assert all(s["judge"]["cached"] is True for s in json.loads(line)["scores"].values())


def _long_cases(path: Path, n: int) -> Path:
    # Twelve steps of long results each: over a small context window, so every prompt is truncated to fit.
    with open(path, "w") as fh:
        for i in range(n):
            steps = [{"thought": f"look up part {k}", "tool_calls": [{"name": "lookup", "arguments": {"q": f"{i}-{k}"},
                                                                      "result": f"part {i}-{k}: " + "detail " * 120}]} for k in range(12)]
            fh.write(json.dumps({"id": f"case-{i}", "input": f"Collect the parts of order {i}", "trace": {"steps": steps, "output": f"Order {i} collected."}}) + "\n")
    return path


def test_warm_reruns_write_their_results_in_the_datasets_order_and_the_same_reports(tmp_path):
    # The cache answers each case as soon as it is read, so the results are written as the cases are read: the same
    # lines in the same order every time, and so the same reports (whose ties keep the order written).
    cases = _cases(tmp_path / "c.jsonl", 300)
    metrics = [{"type": "Rubric", "criteria": "The agent found the item."}]
    _run(tmp_path, cases, "cold", metrics)
    ids = [json.loads(line)["id"] for line in cases.read_text().splitlines()]
    reports = []
    for run in ("warm1", "warm2"):
        assert _run(tmp_path, cases, run, metrics)["judge"]["requests"] == 0
        assert [json.loads(line)["case_id"] for line in (tmp_path / run / "results.jsonl").read_text().splitlines()] == ids
        reports.append((tmp_path / run / "report.md").read_text().split("\n", 1)[1])  # (its title names the run directory)
    assert reports[0] == reports[1]


def test_a_warm_rerun_of_truncated_prompts_asked_question_by_question_gives_the_cold_runs_results(tmp_path):
    # The cache answers each case whole in one step: per-question requests, truncation notes and counts as the usual path.
    cases = _long_cases(tmp_path / "c.jsonl", 12)
    metrics = [{"type": "PlanQuality"}, {"type": "Rubric", "criteria": "The agent collected every part."}]
    opts = {"one_question_per_request": True, "context_tokens": 2000, "group": "none"}
    cold = _run(tmp_path, cases, "cold", metrics, **opts)["judge"]
    assert cold["requests"] == 12 * 6 and cold["truncated_prompts"] == 12 * 6
    warm = _run(tmp_path, cases, "warm", metrics, **opts)["judge"]
    assert warm["requests"] == 0 and warm["cache_hits"] == 12 * 6 and warm["truncated_prompts"] == 12 * 6
    assert warm["saved_tokens"] == cold["input_tokens"] + cold["output_tokens"]
    assert _outcomes(tmp_path / "warm") == _outcomes(tmp_path / "cold")
    reasons = [s["reason"] for line in (tmp_path / "warm" / "results.jsonl").read_text().splitlines() for s in json.loads(line)["scores"].values()]
    assert all("left out to fit" in r for r in reasons)


def test_a_warm_rerun_of_grouped_requests_gives_the_cold_runs_results(tmp_path):
    # `group: case`: the two trace metrics share one request per case, the Rubric asks its own.
    cases = _cases(tmp_path / "c.jsonl", 30)
    metrics = [{"type": "TaskCompletion"}, {"type": "PlanQuality"}, {"type": "Rubric", "criteria": "The agent found the item."}]
    cold = _run(tmp_path, cases, "cold", metrics)["judge"]
    # Every fifth case repeats its neighbour's request: answered by the cache or single flight, not counted as asked.
    assert cold["grouped_requests"] == 24 and cold["requests"] == 48 and cold["requests"] + cold["cache_hits"] == 60
    warm = _run(tmp_path, cases, "warm", metrics)["judge"]
    assert warm["requests"] == 0 and warm["cache_hits"] == 60 and warm["grouped_requests"] == 0 and warm["parts_reasked_alone"] == 0
    assert _outcomes(tmp_path / "warm") == _outcomes(tmp_path / "cold")
    for line in (tmp_path / "warm" / "results.jsonl").read_text().splitlines():
        scores = json.loads(line)["scores"]
        assert scores["PlanQuality"]["details"]["group"] == {"metrics": ["TaskCompletion", "PlanQuality"], "position": 1}
        assert scores["TaskCompletion"]["judge"]["requests"] == 1 and scores["PlanQuality"]["judge"]["requests"] == 0


def test_a_case_the_cache_answers_in_part_sends_only_what_is_missing(tmp_path):
    cases = _cases(tmp_path / "c.jsonl", 20)
    rubric = {"type": "Rubric", "criteria": "The agent found the item."}
    _run(tmp_path, cases, "first", [rubric])
    both = _run(tmp_path, cases, "both", [rubric, {"type": "TaskCompletion"}])["judge"]
    # TaskCompletion is new: asked (identical cases share one request); the Rubric comes from the cache.
    assert both["cache_hits"] + both["requests"] == 40 and both["requests"] >= 16 and both["cache_hits"] >= 20
    first, again = _outcomes(tmp_path / "first"), _outcomes(tmp_path / "both")
    assert {c: o[1]["Rubric"] for c, o in again.items()} == {c: o[1]["Rubric"] for c, o in first.items()}
    assert all(o[0] == "ok" and o[1]["TaskCompletion"][0] is not None for o in again.values())


def test_reading_many_keys_at_once_gives_what_reading_each_gives(tmp_path):
    cache = DiskJudgeCache(tmp_path / "cache")
    # Reasons of every length up to 4.8 KB, and every 100th past diskcache's 32 KB, which it keeps in a file of its own.
    stored = {f"{i:064x}": {"answers": {"q1": {"answer": "yes", "reason": "r" * (40_000 + i if i % 100 == 0 else i % 50 * 97)}},
                            "usage": {"input_tokens": i}} for i in range(1200)}
    for key, value in stored.items():
        cache.put(key, value, {"trial": 0}, f"slot-{key}")
    wanted = [*stored, "absent-1", next(iter(stored)), "absent-2"]  # more than one query's worth, a repeat, misses
    many = cache.get_many(wanted)
    assert many == {k: cache.get(k) for k in wanted if cache.get(k) is not None} == stored
    assert cache.get_many([]) == {}
    cache.close()


def test_the_done_keys_read_at_once_are_the_keys_added_one_by_one():
    rng = random.Random(7)
    for n in (0, 1, 3000, 200_000):
        keys = [result_key(f"case-{i}", rng.randrange(3)) for i in range(n)]
        keys += keys[: n // 7]  # a superseded result's key is in the index twice
        at_once = KeySet.from_index(array("Q", keys).tobytes(), size_hint=n)
        one_by_one = KeySet(size_hint=n)
        for k in keys:
            one_by_one.add_hash(k)
        assert len(at_once) == len(one_by_one) == len(set(keys))
        assert all(at_once.contains_hash(k) for k in keys)
        others = [result_key(f"other-{i}", 0) for i in range(5000)]
        assert not any(at_once.contains_hash(k) for k in others)
        for k in others[:100]:  # the run goes on adding to it
            assert at_once.add_hash(k) is True
        assert all(at_once.contains_hash(k) for k in others[:100] + keys)
    # Keys that all want the last slots run past the table's end and wrap to its start (both ways of building).
    for spread in (0, 40_000):
        keys = [result_key(f"case-{i}", 0) for i in range(spread)]
        cap = KeySet(size_hint=spread + 600).nbytes // 8
        crowded = keys + [(i << 32) | (cap - 1) for i in range(1, 600)]
        s = KeySet.from_index(array("Q", crowded).tobytes(), size_hint=len(crowded))
        assert len(s) == len(set(crowded)) and all(s.contains_hash(k) for k in crowded)
        assert not any(s.contains_hash(result_key(f"other-{i}", 0)) for i in range(2000))


def test_a_warm_rerun_reads_the_cache_a_chunk_of_cases_at_a_time(tmp_path, monkeypatch):
    from tracejudge.stages.judge.prepare import Preparer

    cases = _cases(tmp_path / "c.jsonl", 60)
    metrics = [{"type": "Rubric", "criteria": "The agent found the item."}, {"type": "TaskCompletion"}]
    cold = _run(tmp_path, cases, "cold", metrics)
    trips: list[int] = []
    run_trip = Preparer._run

    def counted(self, trip):
        trips.append(len(trip.asks))
        return run_trip(self, trip)

    monkeypatch.setattr(Preparer, "_run", counted)
    warm = _run(tmp_path, cases, "warm", metrics)
    # The 60 cases travel as one chunk (the process executor's): their 120 requests are made ready and read in one
    # trip, where one case at a time took a trip of at most `Preparer.MAX_TRIP` requests each.
    assert trips == [120]
    assert warm["judge"]["requests"] == 0 and warm["judge"]["cache_hits"] == cold["judge"]["requests"] + cold["judge"]["cache_hits"]
    assert _outcomes(tmp_path / "warm") == _outcomes(tmp_path / "cold")


def test_chunks_the_cache_answers_none_of_are_tried_ever_less_often_until_one_is_answered():
    from tracejudge.stages.judge.settling import Probing

    probing, tried = Probing(), []
    for _ in range(12):
        tried.append(probing.take())
        if tried[-1]:
            probing.saw(16, 0)  # a cold run: none of the chunk's 16 cases in the cache
    assert tried == [True, False, True, False, False, True, False, False, False, False, True, False]
    for _ in range(7):
        probing.take()
    assert probing.take()  # (the eighth chunk after the last tried)
    probing.saw(16, 3)  # the cache answers again: every chunk is tried
    probing.saw(0, 0)  # (a chunk with nothing to look up says nothing)
    assert [probing.take() for _ in range(3)] == [True, True, True]
    probing.saw(16, 0)
    assert [probing.take() for _ in range(3)] == [False, True, True]


def test_a_warm_rerun_stopped_part_way_writes_whole_cases_and_its_resume_the_rest(tmp_path):
    # A stop while chunks are settled from the cache: what was settled is written, nothing else; the resume (the same
    # run directory) finishes every case with the cold run's results and no request.
    cases = _cases(tmp_path / "c.jsonl", 300)
    metrics = [{"type": "Rubric", "criteria": "The agent found the item."}]
    _run(tmp_path, cases, "cold", metrics)
    config = validate_config({
        "dataset": {"path": str(cases), "format": "native"}, "metrics": metrics,
        "judge": {"provider": "simulator", "model": "gpt-4o-mini"}, "cache": {"dir": str(tmp_path / "cache")},
        "run": {"dir": str(tmp_path / "warm"), "processes": 1, "chunk_size": 8},
    })

    async def stopped() -> runner.RunOutcome:
        stop = anyio.Event()
        return await runner.run(config, stop=stop, on_result=lambda _: stop.set())

    first = anyio.run(stopped)
    assert first.interrupted and 1 <= first.new_results < 300
    written = _outcomes(tmp_path / "warm")
    assert len(written) == first.new_results and all(written[c] == _outcomes(tmp_path / "cold")[c] for c in written)
    again = anyio.run(lambda: runner.run(config))
    assert not again.interrupted and again.new_results == 300 - first.new_results and again.summary["judge"]["requests"] == 0
    assert _outcomes(tmp_path / "warm") == _outcomes(tmp_path / "cold")
