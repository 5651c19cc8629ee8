"""Shards: `run --shard I/N` splits the τ-bench demo over 4 runs; `report` merges them into the unsharded run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from tracejudge.core.config import load_config
from tracejudge.engine import runner
from tracejudge.engine.shards import parse_shard, shard_index
import _forkserver

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "configs" / "demo.yaml"
TRACEJUDGE = Path(sys.executable).with_name("tracejudge")
# Figures that measure time, not answers.
# The demo's exact-arguments write check and one judge metric (answered by the simulator), to keep the test short.
METRICS = ("metrics=[{type: ToolCalls, name: writes_exact, arguments: exact, include_failed: false, "
           "exclude_tools: ['get_*', 'search_*', 'list_*', calculate, think, 'transfer_*']}, {type: TaskCompletion}]")
TIMING = {"elapsed_s_total", "segments", "usage", "latency_p50_s", "latency_p95_s", "queued_s", "slept_s", "latency_s"}


def _tj(*args: str) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([str(TRACEJUDGE), *args], capture_output=True, text=True, timeout=300)


def _untimed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if k not in TIMING}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def _results(run_dir: Path) -> dict[tuple[str, int], dict[str, Any]]:
    out = {}
    for line in (run_dir / "results.jsonl").read_text().splitlines():
        data = json.loads(line)
        data.pop("duration_s")
        out[(data["case_id"], data["trial"])] = _untimed(data)
    return out


def test_the_shard_of_an_id_is_stable_and_spread():
    # Fixed values: the split must not change between machines, processes or releases.
    assert [shard_index(f"{t}-0", 4) for t in range(8)] == [shard_index(f"{t}-0", 4) for t in range(8)]
    assert shard_index("0-0", 4) == 1 + int.from_bytes(__import__("hashlib").blake2b(b"0-0", digest_size=8).digest(), "big") % 4
    counts = [0] * 4
    for i in range(4000):
        counts[shard_index(f"case-{i}", 4) - 1] += 1
    assert min(counts) > 900
    assert parse_shard(" 2 / 4 ") == (2, 4)
    for bad in ("0/4", "5/4", "2", "a/b"):
        with pytest.raises(ValueError):
            parse_shard(bad)


def test_four_shards_merged_equal_one_unsharded_run_on_tau_bench(tmp_path, data_dir):
    def run_in_process(overrides: list[str], run_dir: Path | None = None) -> None:
        config = load_config(DEMO, [*overrides, METRICS])
        assert anyio.run(lambda: runner.run(config, run_dir=run_dir)).verdict.passed

    run_in_process([f"cache.dir={tmp_path / 'c1'}"], tmp_path / "full")
    # A CI matrix: each shard into its own default directory (shard 2 through the command line).
    base = tmp_path / "sweep"
    sweep = [f"run.dir={base}", f"cache.dir={tmp_path / 'c2'}"]
    for i in (1, 3, 4):
        run_in_process([*sweep, f"run.shard={i}/4"])
    cli = _tj("run", str(DEMO), "--shard", "2/4", *(a for o in [*sweep, METRICS] for a in ("--set", o)), "--no-progress")
    assert cli.returncode == 0, cli.stderr
    shard_dirs = [tmp_path / f"sweep-shard-{i}-of-4" for i in range(1, 5)]
    sizes = [len(_results(d)) for d in shard_dirs]
    assert sum(sizes) == 200 and min(sizes) > 20
    manifest = json.loads((shard_dirs[1] / "manifest.json").read_text())
    assert manifest["shard"] == {"index": 2, "count": 4} and manifest["config"]["run"]["shard"] == "2/4"
    assert manifest["config_hash_unsharded"] == json.loads((tmp_path / "full" / "manifest.json").read_text())["config_hash"]

    merged = _tj("report", *map(str, shard_dirs))
    assert merged.returncode == 0, merged.stderr
    assert "verdict: PASS" in merged.stdout
    assert _results(base) == _results(tmp_path / "full")
    s_full = json.loads((tmp_path / "full" / "summary.json").read_text())
    s_merged = json.loads((base / "summary.json").read_text())
    assert s_merged.pop("shards")["missing"] == []
    # The merged dollars are the sum of the shards' own, each rounded to a millionth of a dollar: at most half a
    # millionth a shard from the unsharded run's (whose tokens are the same).
    for k in ("cost_usd", "sync_equivalent_usd"):
        assert abs(s_merged["judge"].pop(k) - s_full["judge"].pop(k)) <= 4 * 0.5e-6 + 1e-12, k
    assert _untimed(s_merged) == _untimed(s_full)

    # compare reads each side as one run, whether one directory or its shards (by name or listed).
    cmp = _tj("compare", str(tmp_path / "full"), str(base), "--json")
    by_name = _tj("compare", str(tmp_path / "full"), "--vs", *map(str, shard_dirs), "--json")
    for got in (cmp, by_name):
        assert got.returncode == 0, got.stderr
        body = json.loads(got.stdout)
        assert body["paired"] == 200 and body["only_a"] == body["only_b"] == 0
        assert all(m["delta"] == 0 for m in body["metrics"].values())

    # The gate takes a sharded baseline by its name; resuming a shard with another shard is refused.
    (base / "results.jsonl").unlink()  # `base` now names only the shard directories
    gate = _tj("report", str(tmp_path / "full"), "--baseline", str(base))
    assert gate.returncode == 0 and "writes_exact regression" in gate.stdout, gate.stdout + gate.stderr
    other = _tj("run", str(DEMO), "--shard", "3/4", "--run-dir", str(shard_dirs[0]), "--set", METRICS, "--no-progress")
    assert other.returncode == 2 and 'run.shard: "1/4" → "3/4"' in other.stderr


def test_a_missing_shard_leaves_the_merged_run_incomplete(tmp_path, data_dir):
    cfg = ["--set", f"cache.dir={tmp_path / 'c'}", "--set", f"run.dir={tmp_path / 'sweep'}",
           "--set", "metrics=[{type: ToolCorrectness, allow_extra: true}]", "--set", "assertions.metrics={}"]
    for i in (1, 2):
        got = _tj("run", str(DEMO), "--shard", f"{i}/3", *cfg, "--no-progress")
        assert got.returncode == 0, got.stderr
    merged = _tj("report", str(tmp_path / "sweep"), "--out", str(tmp_path / "merged"))
    assert merged.returncode == 130 and "verdict: INTERRUPTED" in merged.stdout, merged.stdout + merged.stderr
    assert json.loads((tmp_path / "merged" / "summary.json").read_text())["shards"]["missing"] == ["3/3"]
    # The check says which shard to run, not "resume": there is nothing of shard 3 to resume.
    assert "shard 3/3 has no run directory yet: run `tracejudge run CONFIG --shard 3/3`" in merged.stdout, merged.stdout
    assert "resume it" not in merged.stdout
    # One shard alone is never reported as the whole run: a CI gate must not pass on part of a sweep.
    lone = _tj("report", str(tmp_path / "sweep-shard-1-of-3"), "--out", str(tmp_path / "lone"))
    assert lone.returncode == 130 and "verdict: INTERRUPTED" in lone.stdout, lone.stdout + lone.stderr
    assert json.loads((tmp_path / "lone" / "summary.json").read_text())["shards"]["missing"] == ["2/3", "3/3"]
    # Shard 2/3's directory exists, unnamed: it is said to hold that shard, never to be missing; 3/3 was never run.
    said = " ".join(lone.stdout.split())
    assert "shard 2/3 is not in this merge: " in said and "sweep-shard-2-of-3 holds it (finished, " in said, lone.stdout
    assert "shard 3/3 has no run directory yet" in said and "2/3 has no run directory" not in said, lone.stdout
    only = _tj("report", str(tmp_path / "sweep-shard-2-of-3"))
    assert only.returncode == 130, only.stdout + only.stderr
    # A run directory read is never overwritten by the merge, and one that is not a merge is never overwritten by one.
    refused = _tj("report", str(tmp_path / "sweep-shard-1-of-3"), str(tmp_path / "sweep-shard-2-of-3"), "--out", str(tmp_path / "sweep-shard-1-of-3"))
    assert refused.returncode == 2 and "lies in the run" in refused.stderr
    refused = _tj("report", str(tmp_path / "sweep-shard-2-of-3"), "--out", str(tmp_path / "sweep-shard-1-of-3"))
    assert refused.returncode == 2 and "holds a run of its own" in " ".join(refused.stderr.split())


def test_a_merge_reported_again_reads_its_shards_as_they_are_now(tmp_path, data_dir):
    # A merge made while a shard was missing, reported again once that shard has run, is the whole sweep:
    # not the stale copy, nor advice to resume the merge itself.
    cfg = ["--set", f"cache.dir={tmp_path / 'c'}", "--set", f"run.dir={tmp_path / 'sweep'}",
           "--set", "metrics=[{type: ToolCorrectness, allow_extra: true}]", "--set", "assertions.metrics={}"]
    assert _tj("run", str(DEMO), "--shard", "1/2", *cfg, "--no-progress").returncode == 0
    partial = _tj("report", str(tmp_path / "sweep"))
    assert partial.returncode == 130 and "--run-dir" not in partial.stdout, partial.stdout + partial.stderr
    copy = _tj("report", str(tmp_path / "sweep"), "--out", str(tmp_path / "elsewhere"))
    assert copy.returncode == 130, copy.stdout + copy.stderr
    assert _tj("run", str(DEMO), "--shard", "2/2", *cfg, "--no-progress").returncode == 0
    for merged in (tmp_path / "sweep", tmp_path / "elsewhere"):
        again = _tj("report", str(merged))
        assert again.returncode == 0 and "verdict: PASS" in again.stdout, again.stdout + again.stderr
        summary = json.loads((merged / "summary.json").read_text())
        assert summary["shards"]["missing"] == [] and summary["results"] == 200, summary["shards"]
        assert not (tmp_path / "sweep-shard-1-of-2" / "manifest.json").read_text().count("merged_from")


def test_merged_shards_add_up_their_judge_errors_by_kind(tmp_path, data_dir):
    # A judge that answers half its requests with a server error, once each: the errors are spread over the shards.
    cfg = ["--set", f"cache.dir={tmp_path / 'c'}", "--set", f"run.dir={tmp_path / 'sweep'}", "--set", "dataset.limit=24",
           "--set", "metrics=[{type: TaskCompletion}]", "--set", "assertions={}", "--set", "judge.max_attempts=1",
           "--set", "judge.simulator.error_rate=0.5", "--set", "judge.simulator.hang_s=0.2"]
    shards, retry = [], []
    for i in (1, 2):
        got = _tj("run", str(DEMO), "--shard", f"{i}/2", *cfg, "--no-progress")
        assert got.returncode in (0, 1), got.stderr
        shards.append(json.loads((tmp_path / f"sweep-shard-{i}-of-2" / "summary.json").read_text())["judge"])
        said = got.stderr.split("the same command retries them", 1)[1].splitlines()  # "(at most …):", then the command
        retry.append((f"{shards[-1]['judge_errors']} results ended in a transient failure", said[1].strip()))
    assert all(s["judge_errors"] for s in shards), shards
    merged = _tj("report", str(tmp_path / "sweep"), "--out", str(tmp_path / "merged"))
    judge = json.loads((tmp_path / "merged" / "summary.json").read_text())["judge"]
    kinds: dict[str, int] = {}
    for s in shards:
        for kind, n in s["error_kinds"].items():
            kinds[kind] = kinds.get(kind, 0) + n
    assert judge["error_kinds"] == kinds, merged.stdout + merged.stderr
    assert judge["judge_errors"] == sum(kinds.values()) == sum(s["judge_errors"] for s in shards)
    # The merge is no run to resume: it names, for each shard, the command its own run printed to retry its failures.
    for i, (count, command) in enumerate(retry, 1):
        assert command.endswith(f"--shard {i}/2 --no-progress") and f"sweep-shard-{i}-of-2: {count}" in merged.stdout, merged.stdout
        assert f"\n  {command}\n" in merged.stdout, merged.stdout
    (tmp_path / "sweep-shard-1-of-2").rename(tmp_path / "gone")  # the merge is then reported as it stands: no run to retry
    alone = _tj("report", str(tmp_path / "merged"))
    assert alone.returncode == 1 and "transient failure" not in alone.stdout, alone.stdout + alone.stderr
