"""The checkpoint's parts in-process: key tables, manifest diff, lock, torn tails, journal recovery, usage sums."""

from __future__ import annotations

import base64
import json
import os
import pickle
from hashlib import blake2b
from pathlib import Path

import anyio
import pytest
from tracejudge.core.config import validate_config
from tracejudge.core.records import CaseResult, Score, Status
from tracejudge.core.work import Stage, Work
from tracejudge.engine import manifest as mf
from tracejudge.engine import runner, store
from tracejudge.engine.checkpoint import RunJournal
from tracejudge.engine.keyset import FirstSeen, KeySet, result_key
from tracejudge.stages.aggregate.fold import Aggregator

# ----------------------------------------------------------------------------- keyset


def test_keyset_holds_every_key_and_no_other() -> None:
    s = KeySet()
    for i in range(50_000):
        assert s.add(f"case-{i}") is True
    assert s.add("case-7") is False
    assert len(s) == 50_000
    assert all(f"case-{i}" in s for i in range(50_000))
    assert not any(f"other-{i}" in s for i in range(50_000))
    assert s.nbytes == 8 * 65536  # 50,000 keys at most 4/5 full: 2^16 slots of 8 bytes


def test_result_key_is_stable_across_processes() -> None:
    # The index on disk depends on it: BLAKE2b-64 of the id, little-endian, plus trial·φ·2^64.
    h = int.from_bytes(blake2b(b"retail-17", digest_size=8).digest(), "little")
    assert result_key("retail-17", 0) == h
    assert result_key("retail-17", 3) == (h + 3 * 0x9E3779B97F4A7C15) % 2**64
    assert result_key("retail-17", 3) != result_key("retail-17", 0)


def test_first_seen_reports_the_first_place() -> None:
    seen = FirstSeen()
    assert seen.claim("a", "x.jsonl", 3) == "x.jsonl:3"
    assert seen.claim("b", "y.jsonl", 9) == "y.jsonl:9"
    assert seen.claim("a", "x.jsonl", 40) == "x.jsonl:3"
    assert seen.claim("b", "x.jsonl", 41) == "y.jsonl:9"
    assert len(seen) == 2


# ----------------------------------------------------------------------------- manifest


def _config(tmp_path: Path, **over: object) -> dict:
    data = tmp_path / "cases.jsonl"
    if not data.exists():
        data.write_text('{"id": "a"}\n')
    cfg = {"dataset": {"path": str(data), "format": "native"}, "metrics": [{"type": "ToolCalls", "arguments": "exact"}]}
    for dotted, value in over.items():
        node = cfg
        *parents, last = dotted.split("__")
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value
    return cfg


def test_manifest_diff_names_keys_and_files(tmp_path: Path) -> None:
    old = mf.manifest_for(validate_config(_config(tmp_path)))
    same = mf.manifest_for(validate_config(_config(tmp_path, run__workers=8, run__queue_size=2, limits__rpm=5, cache__dir="elsewhere")))
    assert mf.diff(old, same) == []  # speed, spending and places never block a resume

    new = mf.manifest_for(validate_config(_config(tmp_path, run__trials=3, metrics=[{"type": "ToolCalls", "arguments": "subset", "score": "recall"}])))
    assert mf.diff(old, new) == [
        'config metrics.0.arguments: "exact" → "subset"',
        'config metrics.0.score: "f1" → "recall"',
        "config run.trials: 1 → 3",
    ]

    data = tmp_path / "cases.jsonl"
    data.write_text('{"id": "b"}\n')  # same size, other content
    assert mf.diff(old, mf.manifest_for(validate_config(_config(tmp_path)))) == [
        f"dataset.path: file {data} changed: same size (12 bytes), different content"
    ]
    data.write_text('{"id": "a"}\n{"id": "c"}\n')
    assert mf.diff(old, mf.manifest_for(validate_config(_config(tmp_path)))) == [f"dataset.path: file {data} changed: size 12 → 24 bytes"]

    moved = tmp_path / "moved.jsonl"
    moved.write_text('{"id": "a"}\n')
    assert mf.diff(old, mf.manifest_for(validate_config(_config(tmp_path, dataset__path=str(moved))))) == []  # same content elsewhere


def test_manifest_diff_names_a_metric_added_or_removed_in_one_line(tmp_path: Path) -> None:
    # Adding a metric listed each of its parameters, defaults included: eight lines for `{type: ToolCorrectness}`.
    old = mf.manifest_for(validate_config(_config(tmp_path)))
    two = [{"type": "ToolCalls", "arguments": "exact"}, {"type": "ToolCorrectness"}]
    new = mf.manifest_for(validate_config(_config(tmp_path, metrics=two)))
    assert mf.diff(old, new) == ['config metrics.1: (absent) → {"type": "ToolCorrectness", "exclude_tools": [], "include...']
    assert mf.diff(new, old) == ['config metrics.1: {"type": "ToolCorrectness", "exclude_tools": [], "include... → (absent)']
    # A value changed inside a metric both sides have is still its own line.
    changed = mf.manifest_for(validate_config(_config(tmp_path, metrics=[two[0], {"type": "ToolCorrectness", "allow_extra": True}])))
    assert mf.diff(new, changed) == ["config metrics.1.allow_extra: false → true"]


def test_manifest_diff_names_a_metric_moved_in_the_list_in_one_line(tmp_path: Path) -> None:
    # Two metrics swapped were one line per parameter of either at each position: fourteen lines for these two.
    calls, most = {"type": "ToolCalls", "arguments": "exact"}, {"type": "MaxToolCalls", "max_calls": 5}
    old = mf.manifest_for(validate_config(_config(tmp_path, metrics=[calls, most])))
    swapped = mf.manifest_for(validate_config(_config(tmp_path, metrics=[most, calls])))
    assert mf.diff(old, swapped) == [
        'config metrics.0 → metrics.1: {"type": "ToolCalls", "exclude_tools": [], "include_faile... moved, the same metric at another position',
        'config metrics.1 → metrics.0: {"type": "MaxToolCalls", "exclude_tools": [], "include_fa... moved, the same metric at another position',
    ]
    # One put before them moves both, and is itself one line; a value changed in place is still its own line.
    first = mf.manifest_for(validate_config(_config(tmp_path, metrics=[{"type": "ToolCorrectness"}, calls, most], run__trials=2)))
    assert mf.diff(old, first) == [
        'config metrics.0 → metrics.1: {"type": "ToolCalls", "exclude_tools": [], "include_faile... moved, the same metric at another position',
        'config metrics.1 → metrics.2: {"type": "MaxToolCalls", "exclude_tools": [], "include_fa... moved, the same metric at another position',
        'config metrics.0: (absent) → {"type": "ToolCorrectness", "exclude_tools": [], "include...',
        "config run.trials: 1 → 2",
    ]
    edited = mf.manifest_for(validate_config(_config(tmp_path, metrics=[{**calls, "arguments": "subset"}, {"type": "Contains", "value": "x"}, most])))
    assert mf.diff(old, edited) == [
        'config metrics.1 → metrics.2: {"type": "MaxToolCalls", "exclude_tools": [], "include_fa... moved, the same metric at another position',
        'config metrics.1: (absent) → {"type": "Contains", "value": "x", "case_sensitive": fals...',
        'config metrics.0.arguments: "exact" → "subset"',
    ]


def test_manifest_diff_names_a_metric_moved_and_changed_in_one_line(tmp_path: Path) -> None:
    # Moved and given other parameters, ToolCalls was told as one metric removed and another added.
    calls, most = {"type": "ToolCalls", "arguments": "exact"}, {"type": "MaxToolCalls", "max_calls": 5}
    old = mf.manifest_for(validate_config(_config(tmp_path, metrics=[calls, most])))
    edited = mf.manifest_for(validate_config(_config(tmp_path, metrics=[most, {**calls, "arguments": "subset", "score": "recall"}])))
    assert mf.diff(old, edited) == [
        'config metrics.0 → metrics.1: {"type": "ToolCalls", "exclude_tools": [], "include_faile... moved, and changed: '
        'arguments: "exact" → "subset"; score: "f1" → "recall"',
        'config metrics.1 → metrics.0: {"type": "MaxToolCalls", "exclude_tools": [], "include_fa... moved, the same metric at another position',
    ]
    # Told by its name when it has one: a named metric keeps it, another of its type is another metric.
    named = mf.manifest_for(validate_config(_config(tmp_path, metrics=[{**calls, "name": "w"}, most])))
    renamed = mf.manifest_for(validate_config(_config(tmp_path, metrics=[most, {**calls, "name": "w", "arguments": "subset"}])))
    assert mf.diff(named, renamed)[0].endswith('moved, and changed: arguments: "exact" → "subset"')
    other = mf.manifest_for(validate_config(_config(tmp_path, metrics=[most, {**calls, "name": "v", "arguments": "subset"}])))
    assert [line.split(": ")[0] for line in mf.diff(named, other)] == [
        "config metrics.1 → metrics.0", "config metrics.0", "config metrics.1"]  # moved; w removed; v added
    # A name that is its type keys its results as the unnamed metric does: the same metric, moved and named.
    typed = mf.manifest_for(validate_config(_config(tmp_path, metrics=[most, {**calls, "name": "ToolCalls"}])))
    assert mf.diff(old, typed)[0].endswith('moved, and changed: name: null → "ToolCalls"')


def test_manifest_check_refuses_unless_forced(tmp_path: Path) -> None:
    old = mf.manifest_for(validate_config(_config(tmp_path)))
    new = mf.manifest_for(validate_config(_config(tmp_path, run__trials=2)))
    with pytest.raises(mf.ManifestMismatch) as info:
        mf.check(tmp_path, old, new, force=False)
    assert info.value.changes == ["config run.trials: 1 → 2"]
    assert "--force" in str(info.value) and "--fresh" in str(info.value)
    assert mf.check(tmp_path, old, new, force=True) == ["config run.trials: 1 → 2"]
    assert mf.check(tmp_path, None, new, force=False) == []


# ----------------------------------------------------------------------------- lock, tail, fresh


def test_lock_is_exclusive_and_names_the_holder(tmp_path: Path) -> None:
    a = store.RunLock(tmp_path)
    a.acquire()
    assert (tmp_path / ".lock").read_text() == f"{os.getpid()}\n"
    with pytest.raises(store.LockedError, match=f"in use by process {os.getpid()}"):
        store.RunLock(tmp_path).acquire()
    a.release()
    assert not (tmp_path / ".lock").exists()
    (tmp_path / ".lock").write_text("not a pid")  # a leftover no process holds
    with store.RunLock(tmp_path) as b:
        assert b.held


@pytest.mark.parametrize(
    ("content", "kept"),
    [
        (b'{"a":1}\n{"a":2}\n', b'{"a":1}\n{"a":2}\n'),
        (b'{"a":1}\n{"a":', b'{"a":1}\n'),
        (b'{"a":1}\n{"a":2,\n', b'{"a":1}\n'),  # whole line, broken JSON
        (b'{"a":', b""),
        (b"", b""),
    ],
)
def test_repair_tail(tmp_path: Path, content: bytes, kept: bytes) -> None:
    p = tmp_path / "r.jsonl"
    p.write_bytes(content)
    assert store.repair_tail(p) == len(content) - len(kept)
    assert p.read_bytes() == kept


def test_repair_tail_reads_only_the_tail_of_a_long_last_line(tmp_path: Path) -> None:
    p = tmp_path / "r.jsonl"
    head = b'{"a":1}\n'
    p.write_bytes(head + b'{"x":"' + b"y" * 300_000)  # longer than the first read window
    assert store.repair_tail(p) == 300_006
    assert p.read_bytes() == head


def test_fresh_run_dir(tmp_path: Path) -> None:
    base = tmp_path / "runs" / "demo"
    assert store.fresh_run_dir(base) == base  # nothing there yet
    assert store.fresh_run_dir(base) == base  # empty: still usable
    (base / "results.jsonl").write_text("")
    assert store.fresh_run_dir(base) == tmp_path / "runs" / "demo-2"
    assert store.fresh_run_dir(base) == tmp_path / "runs" / "demo-3"


def test_fresh_run_dir_of_dot_or_dotdot_is_a_sibling_of_the_folder_they_name(tmp_path: Path, monkeypatch) -> None:
    # `--run-dir . --fresh` had no name to number (`Path(".").with_name` raised, an internal error), and
    # `..` made `..-2` inside the current folder instead of beside the parent.
    inner = tmp_path / "work" / "inner"
    inner.mkdir(parents=True)
    (inner / "results.jsonl").write_text("")
    (tmp_path / "work" / "manifest.json").write_text("{}")
    monkeypatch.chdir(inner)
    assert store.fresh_run_dir(Path(".")) == tmp_path / "work" / "inner-2"
    assert store.fresh_run_dir(Path("..")) == tmp_path / "work-2"
    assert store.fresh_run_dir(Path("sub/..")) == tmp_path / "work" / "inner-3"


# ----------------------------------------------------------------------------- journal


def _result(i: int) -> CaseResult:
    value = (i % 7) / 6
    status = Status.invalid_input if i % 13 == 0 else Status.ok
    return CaseResult(case_id=f"c{i}", trial=i % 2, status=status, scores={"m": Score(value=value, passed=value >= 0.5)})


def _open(run_dir: Path, keys: list[str] | None = None) -> RunJournal:
    keys = keys or ["m"]
    return RunJournal.open(run_dir, metric_keys=keys, new_aggregator=lambda: Aggregator(keys), config_hash="h", flush_every=10)


def _refold(run_dir: Path, keys: list[str] | None = None) -> dict:
    agg = Aggregator(keys or ["m"])
    for line in store.iter_result_lines(run_dir / store.RESULTS):
        agg.fold(CaseResult.model_validate_json(line))
    return agg.summary()


def test_journal_reopens_from_index_and_folds_only_the_tail(tmp_path: Path) -> None:
    j = _open(tmp_path)
    for i in range(95):
        j.record(_result(i))
    j.close("interrupted")
    assert (tmp_path / store.INDEX).stat().st_size == 95 * 8

    # A later segment wrote 7 results (fsynced) and died before checkpointing them.
    with open(tmp_path / store.RESULTS, "ab") as fh:
        for i in range(95, 102):
            fh.write(_result(i).model_dump_json().encode() + b"\n")
    j2 = _open(tmp_path)
    assert j2.recovery == {"torn_bytes": 0, "tail_results": 7, "rebuilt": False, "killed_segment": True, "damaged_lines": 0}
    assert j2.finished == 102
    assert all(j2.done.contains_hash(result_key(f"c{i}", i % 2)) for i in range(102))
    assert not j2.done.contains_hash(result_key("c102", 0))
    assert j2.agg.summary() == _refold(tmp_path)
    assert [(s["ended"], s["results"]) for s in j2.segments] == [("interrupted", 95), ("killed", 7)]
    assert (tmp_path / store.INDEX).stat().st_size == 102 * 8
    j2.close("finished")  # did nothing but finish a run whose last segment was killed: recorded, so the run reads as finished
    segments = json.loads((tmp_path / store.CHECKPOINT).read_text())["segments"]
    assert [(s["ended"], s["results"]) for s in segments] == [("interrupted", 95), ("killed", 7), ("finished", 0)]
    j3 = _open(tmp_path)
    j3.close("finished")  # a finished run with nothing to do: records no segment
    assert json.loads((tmp_path / store.CHECKPOINT).read_text())["segments"] == segments


class _Hostile:
    def __reduce__(self):
        return (os.system, ("echo pwned > hostile.txt",))


WRONG_TYPES = {"results_lines": "forty", "segments": "one", "provisional": ["x"], "failures": {"1": "two"}, "judge_final": {"judged_results": 1.5},
               "results_crc32": -1, "judge_spent": None}


@pytest.mark.parametrize("damage", ["garbage", "index", "metrics", "aggregator", *(f"wrong_type:{k}" for k in WRONG_TYPES), "unknown_key", "hostile", "hostile_json"])
def test_journal_rebuilds_when_the_checkpoint_disagrees(tmp_path: Path, damage: str) -> None:
    j = _open(tmp_path)
    for i in range(40):
        j.record(_result(i))
    j.close("finished")
    keys = ["m"]
    if damage == "garbage":
        (tmp_path / store.CHECKPOINT).write_text("{not json")
    elif damage == "index":
        with open(tmp_path / store.INDEX, "r+b") as fh:
            fh.write(b"\x00" * 8)
    elif damage == "metrics":
        keys = ["m", "other"]
    else:
        cp = json.loads((tmp_path / store.CHECKPOINT).read_text())
        if damage == "hostile":  # the old pickle attack: a reduce to os:system, never loaded
            cp["aggregator"] = base64.b64encode(pickle.dumps(_Hostile())).decode()
        elif damage == "hostile_json":  # an object that names a callable, in the JSON shape
            cp["aggregator"]["metrics"][0][1]["sample"] = {"callable": "os:system", "args": ["echo pwned > hostile.txt"]}
        elif damage == "aggregator":  # a stored state from settings this config does not have
            cp["aggregator"]["metrics"][0][1]["rng_seed"] = "7:=:m"
        elif damage.startswith("wrong_type:"):
            field = damage.split(":", 1)[1]
            cp[field] = WRONG_TYPES[field]
        else:
            cp["aggregator"]["pickle"] = "gASV"
        (tmp_path / store.CHECKPOINT).write_text(json.dumps(cp))
    monkey_cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        j2 = _open(tmp_path, keys)
    finally:
        os.chdir(monkey_cwd)
    assert not (tmp_path / "hostile.txt").exists()
    assert j2.recovery["rebuilt"] is True
    assert j2.finished == 40
    assert all(j2.done.contains_hash(result_key(f"c{i}", i % 2)) for i in range(40))
    assert j2.agg.summary() == _refold(tmp_path, keys)
    j2.close("finished")
    assert _open(tmp_path, keys).recovery["rebuilt"] is False  # rebuilt once, reused after


# ----------------------------------------------------------------------------- usage across segments


def test_usage_and_elapsed_add_up_across_interrupted_segments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    n = 300
    with open(tmp_path / "cases.jsonl", "w") as fh:
        for i in range(n):
            fh.write(json.dumps({"id": f"case-{i}", "trace": {"steps": [{"tool_calls": [{"name": "get"}]}]}, "expected_tool_calls": [{"name": "get"}]}) + "\n")
    config = validate_config({"dataset": {"path": str(tmp_path / "cases.jsonl")}, "metrics": [{"type": "ToolCorrectness"}],
                              "run": {"dir": str(tmp_path / "run"), "flush_every": 8, "queue_size": 4}})

    real_build = runner.build_stages

    def build_with_counting_judge(cfg, metrics, **_):
        # A stage that keeps additive counters as a judge stage would: one request per
        # case, the id's length as its input tokens, a tenth of a cent each.
        counters = {"requests": 0, "input_tokens": 0, "cost_usd": 0.0}

        async def process(work: Work) -> None:
            counters["requests"] += 1
            counters["input_tokens"] += len(work.case.id)
            counters["cost_usd"] += 0.001

        return [*real_build(cfg, metrics), Stage("judge", process, usage=lambda: dict(counters))]

    monkeypatch.setattr(runner, "build_stages", build_with_counting_judge)

    async def segment(stop_after: int | None) -> runner.RunOutcome:
        stop = anyio.Event()
        seen = 0

        def on_result(_: CaseResult) -> None:
            nonlocal seen
            seen += 1
            if stop_after is not None and seen >= stop_after:
                stop.set()

        return await runner.run(config, stop=stop, on_result=on_result)

    first = anyio.run(segment, 70)
    second = anyio.run(segment, 90)
    third = anyio.run(segment, None)
    assert first.interrupted and second.interrupted and not third.interrupted
    assert first.new_results + second.new_results + third.new_results == n

    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    segs = summary["segments"]
    assert [s["ended"] for s in segs] == ["interrupted", "interrupted", "finished"]
    assert [s["results"] for s in segs] == [first.new_results, second.new_results, third.new_results]
    assert [s["usage"]["judge"]["requests"] for s in segs] == [s["results"] for s in segs]
    total_tokens = sum(len(f"case-{i}") for i in range(n))
    assert summary["usage"]["judge"]["requests"] == n
    assert summary["usage"]["judge"]["input_tokens"] == total_tokens
    assert summary["judge"]["requests"] == n and summary["judge"]["input_tokens"] == total_tokens
    assert summary["judge"]["cost_usd"] == pytest.approx(0.3)
    assert summary["elapsed_s_total"] == pytest.approx(sum(s["elapsed_s"] for s in segs), abs=1e-3)
    assert summary["results"] == n and summary["complete"] is True

    before = (tmp_path / "run" / "summary.json").read_bytes()
    fourth = anyio.run(segment, None)
    assert fourth.new_results == 0 and fourth.skipped_finished == n
    assert (tmp_path / "run" / "summary.json").read_bytes() == before


# ----------------------------------------------------------------------------- aggregate state as JSON


def test_aggregate_state_round_trips_through_json_and_keeps_folding_identically() -> None:
    from tracejudge.core.evalconfig import AggregateConfig
    from tracejudge.stages.aggregate.state import dump_state, restore
    from tracejudge.stages.score.pass_at_k import PassAtK

    settings = AggregateConfig(group_by=["domain"], reservoir_size=50, group_reservoir_size=10, max_groups=3)

    def fresh() -> Aggregator:
        return Aggregator(["m"], trials=3, pass_at_k=[PassAtK(metric="m", k=2)], settings=settings)

    def result(i: int) -> CaseResult:
        scores = {"m": Score(value=(i * 37 % 11) / 10, passed=(i * 37 % 11) >= 5)}
        if i % 5 == 0:
            scores["late"] = Score(value=0.5)  # a case-level metric some results carry
        status = Status.judge_error if i % 17 == 0 else Status.ok
        return CaseResult(case_id=f"c{i // 3}", trial=i % 3, status=status, scores=scores, tags=[f"t{i % 4}"],
                          metadata={"domain": f"d{i % 6}"}, duration_s=0.01)

    whole, first = fresh(), fresh()
    for i in range(700):  # past every reservoir's size, so the generators have drawn
        whole.fold(result(i))
        first.fold(result(i))
    state = json.loads(json.dumps(dump_state(first)))
    resumed = restore(state, fresh())
    for i in range(700, 1000):
        whole.fold(result(i))
        resumed.fold(result(i))
    assert resumed.summary() == whole.summary()
    assert json.dumps(dump_state(resumed), sort_keys=True) == json.dumps(dump_state(whole), sort_keys=True)


def test_a_state_of_the_reservoir_format_is_refused() -> None:
    # A checkpoint written when the bootstrap sample was an order-dependent reservoir: refused, so the
    # journal rebuilds from results.jsonl and the interval is the one the results give in any order.
    from tracejudge.core.evalconfig import AggregateConfig
    from tracejudge.stages.aggregate.state import StateError, dump_state, restore

    settings = AggregateConfig(reservoir_size=10)
    agg = Aggregator(["m"], trials=1, settings=settings)
    for i in range(40):
        agg.fold(CaseResult(case_id=f"c{i}", scores={"m": Score(value=i / 40)}))
    state = json.loads(json.dumps(dump_state(agg)))
    assert restore(state, Aggregator(["m"], trials=1, settings=settings)).summary() == agg.summary()
    old = json.loads(json.dumps(state))
    old["format"] = 1
    for _, stats in old["metrics"]:
        sample = stats.pop("sample")
        stats["reservoir"] = {"size": 10, "seen": 40, "values": sample["values"], "rng": None, "w": 0.5, "next_at": 41}
    with pytest.raises(StateError):
        restore(old, Aggregator(["m"], trials=1, settings=settings))
    import base64

    shuffled = json.loads(json.dumps(state))
    for _, stats in shuffled["metrics"]:
        raw = base64.b64decode(stats["sample"]["keys"])
        words = [raw[i:i + 8] for i in range(0, len(raw), 8)]
        stats["sample"]["keys"] = base64.b64encode(b"".join(words[::-1])).decode("ascii")
    with pytest.raises(StateError, match="not in order"):
        restore(shuffled, Aggregator(["m"], trials=1, settings=settings))
