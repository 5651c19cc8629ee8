"""The sink's batched paths give what their one-result-at-a-time counterparts give.

Results rendered where they were scored are folded a chunk at a time (`Aggregator.fold_finished`)
and written a group at a time (`ResultWriter.add_many`, `aflush`); the aggregate's state and summary,
and the bytes, index and figures of the files, must be those of `fold` and `add` + `flush` one
result at a time, over batches cut anywhere.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from types import SimpleNamespace

import anyio
import pytest
from tracejudge.core.evalconfig import AggregateConfig
from tracejudge.core.records import Score
from tracejudge.engine.keyset import result_key
from tracejudge.engine.rendered import Finished, render
from tracejudge.engine.store import ResultWriter
from tracejudge.stages.aggregate.fold import Aggregator
from tracejudge.stages.aggregate.state import dump_state

KEYS = ["a", "b", "c"]


def _finished(rng: random.Random, n: int, *, late_at: int | None = None, trials: int = 1) -> list[Finished]:
    """`n` rendered results: values, missing and uncomputable scores, several tags, a metadata field, and
    (from `late_at`) a case-level metric no earlier result had."""
    out = []
    for i in range(n):
        scores = {}
        for k in KEYS:
            roll = rng.random()
            if roll < 0.1:
                continue  # the result lacks the metric
            value = None if roll < 0.2 else round(rng.random(), 3)
            scores[k] = Score(value=value, passed=None if value is None else value >= 0.5, reason=f"{k} {value}")
        if late_at is not None and i >= late_at:
            scores["late"] = Score(value=1.0, passed=True, reason="late")
        tags = rng.sample(["x", "y", "z", "w"], rng.randint(0, 2))
        case = SimpleNamespace(id=f"case-{i}", tags=tags, metadata={"domain": rng.choice(["air", "shop", 3])})
        rendered = render(case, scores, KEYS)
        assert rendered is not None
        for trial in range(trials):
            done = Finished(rendered, trial)
            done.duration_s = round(rng.random() / 100, 6)
            out.append(done)
    return out


def _cuts(rng: random.Random, items: list[Finished]) -> list[list[Finished]]:
    batches, at = [], 0
    while at < len(items):
        size = rng.choice([1, 2, 7, 64, 300])
        batches.append(items[at:at + size])
        at += size
    return batches


@pytest.mark.parametrize(("late_at", "trials", "settings"), [
    (None, 1, AggregateConfig(group_by=["domain"], reservoir_size=50, group_reservoir_size=20)),
    (700, 1, AggregateConfig(group_by=["domain"], max_groups=2, reservoir_size=50, group_reservoir_size=20)),
    (None, 2, AggregateConfig(reservoir_size=30, group_reservoir_size=10)),
])
def test_fold_finished_keeps_the_state_and_summary_of_fold(late_at: int | None, trials: int, settings: AggregateConfig) -> None:
    rng = random.Random(7)
    results = _finished(rng, 2500, late_at=late_at, trials=trials)
    one, batched = (Aggregator(KEYS, trials=trials, settings=settings) for _ in range(2))
    for r in results:
        one.fold(r)
    for batch in _cuts(rng, results):
        batched.fold_finished(batch)
    assert json.dumps(dump_state(batched)) == json.dumps(dump_state(one))
    assert json.dumps(batched.summary()) == json.dumps(one.summary())


def _lines(n: int) -> list[tuple[str, int]]:
    return [(json.dumps({"case_id": f"c{i}", "trial": 0, "n": "é" * (i % 3)}), result_key(f"c{i}", 0)) for i in range(n)]


def _figures(w: ResultWriter, run_dir: Path) -> tuple[object, ...]:
    return (w.size, w.lines, w.written, w.index_crc, w.results_crc, (run_dir / "results.jsonl").read_bytes(),
            (run_dir / "results.idx").read_bytes())


def test_add_many_and_aflush_write_what_add_and_flush_write(tmp_path: Path) -> None:
    one_dir, many_dir = tmp_path / "one", tmp_path / "many"
    one_dir.mkdir()
    many_dir.mkdir()
    lines = _lines(1000)
    flushed: list[int] = []
    one = ResultWriter(one_dir, size=0, lines=0, index_crc=0, results_crc=0, flush_every=16)
    for line, key in lines:
        one.add(line, key)
    one.close()
    many = ResultWriter(many_dir, size=0, lines=0, index_crc=0, results_crc=0, flush_every=16, on_flush=lambda: flushed.append(many.lines))
    rng = random.Random(3)

    async def write() -> None:
        at = 0
        while at < len(lines):
            piece = lines[at:at + rng.randint(1, 16 - many.pending)]
            at += len(piece)
            data = "".join(line + "\n" for line, _ in piece).encode()
            keys = b"".join(key.to_bytes(8, "little") for _, key in piece)
            if many.add_many(data, keys, len(piece)):
                await many.aflush()
                assert not many.syncing and many.pending == 0
        await many.aflush()

    anyio.run(write)
    many.close()
    assert _figures(many, many_dir) == _figures(one, one_dir)
    assert flushed == sorted(flushed) and flushed[-1] == len(lines)  # each group reported once it was on disk
