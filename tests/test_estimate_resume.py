"""`tracejudge estimate` beside a partly finished run directory prices only what the resume will do.

It priced the whole dataset: an interrupted 40-case run (19 done, cache off) was estimated at 80 requests while the
resume sent 42, its dollars below the printed low end. The cases with a final result in the run directory (read as
the resume reads it: `results.idx`, the checkpoint's provisional results, the lines past the checkpoint) are left out
and the output says how many (`N of M cases already finished in RUN_DIR: not priced`); a budget skip, which the
resume redoes, is priced. Each resume's real spending (`summary.json`'s judge block, less what the directory held
before) falls inside the printed range. Against the simulator over real HTTP on 127.0.0.1.

`--run-dir` is the directory `run --run-dir` was given (relative to the current directory, where `--set run.dir=`
resolves against the config's folder, so it priced another directory). The budget line compared only the rest of
the work with the caps, which are for the whole run: it adds what the directory's earlier segments spent.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tracejudge.engine import store
from tracejudge.entrypoints.cli import main
from tracejudge.stages.judge.estimate_range import finished_keys

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_estimate_range_real import inside, write_cases  # noqa: E402
import _forkserver

N = 40
_RANGE = re.compile(r"range: ([\d,]+)–([\d,]+) requests, ([\d,]+)–([\d,]+) input and ([\d,]+)–([\d,]+) output tokens, "
                    r"\$([\d,.]+)–\$([\d,.]+)")
_SPENT = ("requests", "input_tokens", "output_tokens", "cost_usd")


def _config(tmp_path: Path, url: str, name: str, **extra: Any) -> Path:
    data = {"dataset": {"path": "c.jsonl", "format": "native"}, "metrics": [{"type": "TaskCompletion"}, {"type": "ToolCallNecessity"}],
            "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": url + "/v1"}, "cache": {"enabled": False},
            "run": {"dir": "run", "flush_every": 1}}
    for section, values in extra.items():
        data[section] = {**data.get(section, {}), **values}
    path = tmp_path / f"{name}.yaml"
    path.write_text(json.dumps(data))
    return path


def _here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # (the configs name their files relative to it, as the commands run here read them)
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def _tj(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return _forkserver.run([sys.executable, "-m", "tracejudge", *args], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "COLUMNS": "200", "OPENAI_API_KEY": "sk-test"})


def _estimate(cfg: Path, capsys: pytest.CaptureFixture[str], *options: str) -> tuple[dict[str, tuple[float, float]], str]:
    """`tracejudge estimate CFG [OPTIONS]` (in this process: a command's start-up is most of a test's time): its `range:`
    figures (low, high) and its whole output on one line."""
    capsys.readouterr()
    assert main(["estimate", str(cfg), *options]) == 0
    text = " ".join(capsys.readouterr().out.split())
    got = _RANGE.search(text)
    assert got is not None, text
    n = [float(x.replace(",", "")) for x in got.groups()]
    return {"requests": (n[0], n[1]), "input_tokens": (n[2], n[3]), "output_tokens": (n[4], n[5]), "cost_usd": (n[6], n[7])}, text


def _spent(tmp_path: Path, run: str = "run") -> dict[str, Any]:
    judge = json.loads((tmp_path / run / store.SUMMARY).read_text())["judge"]
    return {k: judge.get(k) or 0 for k in _SPENT}


def _resume_inside(tmp_path: Path, cfg: Path, rng: dict[str, tuple[float, float]], *options: str) -> dict[str, Any]:
    before = _spent(tmp_path)
    done = _tj(tmp_path, "run", cfg.name, "--no-progress", *options)
    assert done.returncode == 0 and "verdict: PASS" in done.stdout, done.stdout + done.stderr
    after = _spent(tmp_path)
    spent = {k: after[k] - before[k] for k in _SPENT}
    assert spent["requests"] > 0
    assert inside(rng, spent) == [], (rng, spent)
    return spent


def _ok_results(tmp_path: Path) -> int:
    lines = (tmp_path / "run" / store.RESULTS).read_text().splitlines()
    return sum(json.loads(line)["status"] == "ok" for line in lines)


def test_an_interrupted_run_is_priced_for_what_its_resume_does(simulator: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    _here(tmp_path, monkeypatch)
    write_cases(tmp_path / "c.jsonl", N)
    sim = simulator(latency_ms=60, prefix_cache=False)  # (no provider cache: the low end assumes a cold one)
    cfg = _config(tmp_path, sim.url, "eval", limits={"max_in_flight": 2})
    whole, _ = _estimate(cfg, capsys)
    assert whole["requests"][0] == N  # nothing finished yet: every case priced
    proc = _forkserver.popen([sys.executable, "-m", "tracejudge", "run", cfg.name, "--no-progress"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "OPENAI_API_KEY": "sk-test"})
    results = tmp_path / "run" / store.RESULTS
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if results.exists() and len(results.read_bytes().splitlines()) >= 8:
                break
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and "verdict: INTERRUPTED" in out, out + err
    finished = _ok_results(tmp_path)
    assert 8 <= finished < N, finished
    rng, text = _estimate(cfg, capsys)
    assert f"{finished} of {N} cases already finished in {tmp_path / 'run'}: not priced" in text, text
    assert rng["requests"][0] == N - finished  # one grouped request a case left, no more
    spent = _resume_inside(tmp_path, cfg, rng)
    assert spent["requests"] == N - finished
    # Finished now: a resume sends nothing, so what is priced is a fresh run (`run --fresh`), as at first.
    again, text = _estimate(cfg, capsys)
    assert f"all {N} cases already finished in {tmp_path / 'run'}: a resume sends nothing; priced as a fresh run" in text, text
    assert again["requests"][0] == whole["requests"][0] == N


def test_a_run_of_the_first_cases_then_the_whole_dataset(simulator: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    _here(tmp_path, monkeypatch)
    write_cases(tmp_path / "c.jsonl", N)
    sim = simulator(prefix_cache=False)
    first = _config(tmp_path, sim.url, "first", dataset={"limit": 19})
    done = _tj(tmp_path, "run", first.name, "--no-progress")
    assert done.returncode == 0, done.stdout + done.stderr
    cfg = _config(tmp_path, sim.url, "eval")
    rng, text = _estimate(cfg, capsys)
    assert f"19 of {N} cases already finished in {tmp_path / 'run'}: not priced" in text, text
    assert rng["requests"][0] == N - 19
    assert _resume_inside(tmp_path, cfg, rng, "--force")["requests"] == N - 19


def test_results_skipped_for_the_budget_are_priced_again(simulator: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    _here(tmp_path, monkeypatch)
    # A budget skip is provisional (the resume redoes it): it is no finished case. `budget` is not part of the config
    # the run directory was started with, so the same directory resumes under a larger one.
    write_cases(tmp_path / "c.jsonl", N)
    sim = simulator(prefix_cache=False)
    capped = _config(tmp_path, sim.url, "capped", budget={"max_judge_tokens": 12000}, limits={"max_in_flight": 1})
    done = _tj(tmp_path, "run", capped.name, "--no-progress")
    statuses = [json.loads(line)["status"] for line in (tmp_path / "run" / store.RESULTS).read_text().splitlines()]
    assert "skipped_budget" in statuses and "ok" in statuses, done.stdout + done.stderr
    finished = statuses.count("ok")
    cfg = _config(tmp_path, sim.url, "eval")
    rng, text = _estimate(cfg, capsys)
    assert f"{finished} of {N} cases already finished in {tmp_path / 'run'}: not priced" in text, text
    assert rng["requests"][0] == N - finished
    assert _resume_inside(tmp_path, cfg, rng)["requests"] == N - finished


def test_finished_keys_reads_past_the_checkpoint(tmp_path: Path) -> None:
    # What the checkpoint covers (the index, less its provisional results), then the lines a segment wrote after it
    # (killed before its next checkpoint), counted as the resume counts them; without a checkpoint, every line.
    from tracejudge.engine.keyset import result_key

    assert finished_keys(tmp_path) is None  # no results: nothing to leave out
    rows = [("a", 0, "ok"), ("b", 0, "judge_error"), ("c", 0, "skipped_budget"), ("d", 1, "ok"), ("b", 0, "ok")]
    lines = [json.dumps({"case_id": c, "trial": t, "status": s, "scores": {}}, separators=(",", ":")) + "\n" for c, t, s in rows]
    (tmp_path / store.RESULTS).write_text("".join(lines) + '{"case_id":"e"')  # (a torn last line: no result)
    want = {("a", 0): True, ("b", 0): True, ("c", 0): False, ("d", 1): True, ("d", 0): False, ("e", 0): False}
    done = finished_keys(tmp_path)
    assert done is not None and {k: done(result_key(*k)) for k in want} == want
    # A checkpoint over the first three lines, holding b and c as provisional; a and d then b again after it.
    keys = [result_key(c, t) for c, t, _ in rows[:3]]
    (tmp_path / store.INDEX).write_bytes(b"".join(k.to_bytes(8, "little") for k in keys))
    (tmp_path / store.CHECKPOINT).write_text(json.dumps({"results_bytes": len("".join(lines[:3]).encode()), "results_lines": 3,
                                                         "provisional": {str(keys[1]): lines[1], str(keys[2]): lines[2]}}))
    done = finished_keys(tmp_path)
    assert done is not None and {k: done(result_key(*k)) for k in want} == want
    (tmp_path / store.RESULTS).write_text("".join(lines[:4]))  # b not redone yet: still provisional
    done = finished_keys(tmp_path)
    assert done is not None and done(result_key("a", 0)) and not done(result_key("b", 0)) and done(result_key("d", 1))


def test_the_run_dir_run_was_given_is_the_one_priced(simulator: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    _here(tmp_path, monkeypatch)
    write_cases(tmp_path / "c.jsonl", 12)
    sim = simulator(prefix_cache=False)
    (tmp_path / "configs").mkdir()
    cfg = _config(tmp_path / "configs", sim.url, "eval", dataset={"path": "../c.jsonl"})
    first = _tj(tmp_path, "run", "configs/eval.yaml", "--no-progress", "--set", "dataset.limit=5", "--run-dir", "runs/try")
    assert first.returncode == 0, first.stdout + first.stderr
    rng, text = _estimate(cfg, capsys, "--run-dir", "runs/try")
    assert "5 of 12 cases already finished in runs/try: not priced" in text, text
    assert rng["requests"][0] == 12 - 5
    before = _spent(tmp_path, "runs/try")
    done = _tj(tmp_path, "run", "configs/eval.yaml", "--no-progress", "--force", "--run-dir", "runs/try")
    assert done.returncode == 0 and "verdict: PASS" in done.stdout, done.stdout + done.stderr
    after = _spent(tmp_path, "runs/try")
    spent = {k: after[k] - before[k] for k in _SPENT}
    assert spent["requests"] == 12 - 5 and inside(rng, spent) == [], (rng, spent)
    # The config's own run directory (configs/run) holds nothing: every case priced there.
    whole, text = _estimate(cfg, capsys)
    assert whole["requests"][0] == 12 and "already finished" not in text, text


_BUDGET = re.compile(r"budget \(the caps are for the whole run in (\S+), its earlier segments' spending included\): "
                     r"tokens: ([\d,]+) spent so far \+ ([\d,]+)–([\d,]+) remaining = ([\d,]+)–([\d,]+) of ([\d,]+)")


def test_the_budget_line_adds_what_the_run_spent_so_far(simulator: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # A resume's budget starts from what the earlier segments spent (`resources.local_resources`): the line compared the
    # rest of the work alone with the cap (`budget: 5,792 of 6,000 tokens`), which the run had mostly spent already.
    _here(tmp_path, monkeypatch)
    write_cases(tmp_path / "c.jsonl", 12)
    sim = simulator(prefix_cache=False)
    cap = 6000
    capped = _config(tmp_path, sim.url, "capped", budget={"max_judge_tokens": cap}, limits={"max_in_flight": 1})
    _tj(tmp_path, "run", capped.name, "--no-progress")
    statuses = [json.loads(line)["status"] for line in (tmp_path / "run" / store.RESULTS).read_text().splitlines()]
    assert "skipped_budget" in statuses and "ok" in statuses, statuses
    judge = json.loads((tmp_path / "run" / store.SUMMARY).read_text())["judge"]
    so_far = judge["input_tokens"] + judge["output_tokens"]
    rng, text = _estimate(capped, capsys)
    got = _BUDGET.search(text)
    assert got is not None, text
    where, done, low, high, total_low, total_high, of = got.group(1), *(int(x.replace(",", "")) for x in got.groups()[1:])
    assert (where, done, of) == (str(tmp_path / "run"), so_far, cap), text
    assert (low, high) == (rng["input_tokens"][0] + rng["output_tokens"][0], rng["input_tokens"][1] + rng["output_tokens"][1])
    assert (total_low, total_high) == (so_far + low, so_far + high)
    assert total_high > cap and "crosses budget.max_judge_tokens" in text, text
    # A cap at the line's high end finishes the run: the caps count the whole run's spending, and that is all of it.
    _, text = _estimate(capped, capsys, "--set", f"budget.max_judge_tokens={total_high}")
    assert "within the caps at the high end" in text, text
    done_run = _tj(tmp_path, "run", capped.name, "--no-progress", "--set", f"budget.max_judge_tokens={total_high}")
    assert done_run.returncode == 0 and "verdict: PASS" in done_run.stdout, done_run.stdout + done_run.stderr
    judge = json.loads((tmp_path / "run" / store.SUMMARY).read_text())["judge"]
    assert total_low <= judge["input_tokens"] + judge["output_tokens"] <= total_high, (judge, text)


def test_a_last_run_answered_from_the_cache_alone_is_not_called_no_run(simulator: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # A run whose answers all came from the judge cache measured no re-ask rate; estimate said "no earlier run in RUN_DIR"
    # beside "all N cases already finished in RUN_DIR".
    _here(tmp_path, monkeypatch)
    write_cases(tmp_path / "c.jsonl", 4)
    sim = simulator()
    cfg = _config(tmp_path, sim.url, "eval", cache={"enabled": True, "dir": "cache"})
    _, text = _estimate(cfg, capsys)
    assert f"high: no earlier run in {tmp_path / 'run'}, so as if" in text, text
    assert main(["run", str(cfg), "--no-progress"]) == 0
    os.rename(tmp_path / "run", tmp_path / "first")
    assert main(["run", str(cfg), "--no-progress"]) == 0  # in a new directory, answered by the cache alone
    assert _spent(tmp_path)["requests"] == 0
    _, text = _estimate(cfg, capsys)
    assert "no earlier run" not in text, text
    assert (f"high: the last run in {tmp_path / 'run'} measured no re-ask/repair rate (no request of it was answered: all from the "
            "cache, or none answered), so as if") in text, text
