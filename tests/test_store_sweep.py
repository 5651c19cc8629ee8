"""Where a capped nightly sweep (`start: last_run` with `max_traces`/`max_results`) starts, from the run directory alone.

The store tests (`test_store_phoenix.py`, `test_store_mlflow.py`) run capped sweeps against real servers; these
cover the cases a night can leave behind without one: an interrupted capped night, a spent record, the cap's count.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

from tracejudge.stages.extract.remote import bind_last_run
from tracejudge.stages.extract.sweep import SIDECAR, Sweep, window_start

T0 = datetime(2026, 12, 1, 2, 0, tzinfo=UTC)  # the last finished night began here


def _run_dir(tmp_path: Path, finished: datetime | None, cases: list[str], sweep: dict | None = None) -> Path:
    segments = [{"segment": 1, "started_at": finished.isoformat().replace("+00:00", "Z"), "ended": "finished", "results": len(cases)}] if finished else []
    (tmp_path / "checkpoint.json").write_text(json.dumps({"segments": segments}))
    (tmp_path / "results.jsonl").write_text("".join(json.dumps({"case_id": c, "trial": 0, "status": "ok"}) + "\n" for c in cases))
    if sweep is not None:
        (tmp_path / SIDECAR).write_text(json.dumps(sweep))
    return tmp_path


def test_without_a_record_the_window_starts_at_the_last_finished_night_less_the_overlap(tmp_path: Path) -> None:
    assert window_start(_run_dir(tmp_path, None, []), 600, capped=True) == (None, set())
    start, seen = window_start(_run_dir(tmp_path, T0, ["a"]), 600, capped=True)
    assert start == T0 - timedelta(seconds=600) and seen == {"a"}
    assert window_start(tmp_path, 600, capped=False) == (T0 - timedelta(seconds=600), None)  # uncapped: results not read


def test_a_cut_whose_traces_were_all_scored_starts_the_next_window(tmp_path: Path) -> None:
    cut = T0 - timedelta(days=3)  # a backlog: the cap stopped three days before the night began
    side = {"at": (T0 + timedelta(minutes=5)).isoformat(), "from": None, "cut": cut.isoformat(), "pending": ["a", "b"]}
    start, _ = window_start(_run_dir(tmp_path, T0, ["a", "b"], side), 600, capped=True)
    assert start == cut - timedelta(seconds=600)


def test_an_interrupted_capped_night_is_read_again_from_where_it_began(tmp_path: Path) -> None:
    began = T0 - timedelta(days=5)
    cut = T0 - timedelta(days=3)
    side = {"at": (T0 + timedelta(minutes=5)).isoformat(), "from": began.isoformat(), "cut": cut.isoformat(), "pending": ["a", "b"]}
    start, _ = window_start(_run_dir(tmp_path, T0, ["a"], side), 600, capped=True)  # b was read but never scored
    assert start == began
    side["from"] = None  # it had read from the very start: so does the next
    assert window_start(_run_dir(tmp_path, T0, ["a"], side), 600, capped=True)[0] is None


def test_a_record_older_than_the_last_finished_night_is_spent(tmp_path: Path) -> None:
    side = {"at": (T0 - timedelta(hours=1)).isoformat(), "from": None, "cut": (T0 - timedelta(days=3)).isoformat(), "pending": ["x"]}
    start, _ = window_start(_run_dir(tmp_path, T0, ["a"], side), 600, capped=False)  # a later, uncapped night read past it
    assert start == T0 - timedelta(seconds=600)


def test_the_cap_counts_only_traces_without_a_result(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, T0, ["a", "b"])
    dataset = SimpleNamespace(options={"start": "last_run", "max_traces": 2}, limit=None, model_copy=lambda update: SimpleNamespace(
        options=update["options"], limit=None))
    bound = bind_last_run(dataset, run)
    options, sweep = Sweep.take(bound, "max_traces")
    assert "_sweep" not in options and options["start"] == (T0 - timedelta(seconds=600)).isoformat() and sweep.cap == 2
    taken = []
    for trace in ["a", "c", "b", "d", "e"]:  # a and b were scored on an earlier night: read again, not counted
        if sweep.full(trace):
            break
        sweep.took(trace, T0)
        taken.append(trace)
    assert taken == ["a", "c", "b", "d"] and sweep.cut
    sweep.finish("store", "max_traces")
    record = json.loads((run / SIDECAR).read_text())
    assert record["pending"] == ["c", "d"] and record["cut"] == T0.isoformat() and record["from"] == options["start"]


def test_a_shard_counts_only_its_own_traces(tmp_path: Path) -> None:
    from tracejudge.engine.shards import shard_index

    run = _run_dir(tmp_path, T0, [])
    (run / "manifest.json").write_text(json.dumps({"config": {"run": {"shard": "1/2"}}}))
    dataset = SimpleNamespace(options={"start": "last_run", "max_results": 1}, limit=None, model_copy=lambda update: SimpleNamespace(
        options=update["options"], limit=None))
    _, sweep = Sweep.take(bind_last_run(dataset, run), "max_results")
    ids = [f"tr-{i}" for i in range(40)]
    mine = [t for t in ids if shard_index(t, 2) == 1]
    taken = []
    for trace in ids:  # the other shard's traces are read (its share is dropped by the run) but neither counted nor recorded
        if sweep.full(trace):
            break
        sweep.took(trace, T0)
        taken.append(trace)
    assert taken == ids[: ids.index(mine[1])] and sweep.pending == [mine[0]]
