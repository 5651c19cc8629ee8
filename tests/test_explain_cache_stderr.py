"""`tracejudge run --explain-cache` says on stderr, at the end of the run, why the judge's requests missed its cache:
grouped by reason, a few lines at most. Through the real command line, with the bundled judge simulator the run starts
on 127.0.0.1."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tracejudge.entrypoints.commands.cache_explained import MAX_REASONS, explain_lines
import _forkserver


def _tracejudge(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([sys.executable, "-m", "tracejudge", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def _setup(tmp: Path) -> None:
    with open(tmp / "c.jsonl", "w") as fh:
        for i in range(6):
            fh.write(json.dumps({"id": f"case-{i}", "input": f"Find item {i}", "trace": {"steps": [{"tool_calls": [
                {"id": f"c{i}", "name": "lookup", "arguments": {"q": f"item {i}"}, "result": f"found {i}"}]}],
                "output": f"Item {i} is found."}}) + "\n")
    (tmp / "eval.yaml").write_text("dataset: {path: c.jsonl, format: native}\nmetrics: [{type: TaskCompletion}]\n"
                                   "judge: {provider: simulator, model: judge}\ncache: {dir: cache}\nrun: {dir: runs/eval}\n")


def _explained(stderr: str) -> list[str]:
    """The lines the explanation printed: its header and the indented reasons after it."""
    lines = stderr.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(("judge cache:", "--explain-cache:"))), None)
    assert start is not None, f"no explanation on stderr:\n{stderr}"
    end = start + 1
    while end < len(lines) and lines[end].startswith("  "):
        end += 1
    return lines[start:end]


def test_explain_cache_prints_the_misses_grouped_by_reason_on_stderr(tmp_path):
    _setup(tmp_path)
    first = _tracejudge(tmp_path, "run", "eval.yaml", "--no-progress", "--explain-cache", "--set", "dataset.limit=2")
    assert first.returncode == 0, first.stderr
    assert _explained(first.stderr) == [
        "judge cache: 2 requests missed it (--explain-cache; each score's judge.cache_miss says why):",
        "  2 because no earlier entry for this case and metric"]

    # Two cases judged before at another temperature, four never: two reasons, the most frequent first.
    second = _tracejudge(tmp_path, "run", "eval.yaml", "--no-progress", "--explain-cache", "--fresh", "--set", "judge.temperature=0.5")
    assert second.returncode == 0, second.stderr
    assert _explained(second.stderr) == [
        "judge cache: 6 requests missed it (--explain-cache; each score's judge.cache_miss says why):",
        "  4 because no earlier entry for this case and metric",
        "  2 because changed: sampling"]
    summary = json.loads((tmp_path / "runs" / "eval-2" / "summary.json").read_text())
    assert summary["judge"]["cache_misses_explained"] == {"no earlier entry for this case and metric": 4, "changed: sampling": 2}

    # The same again: every request answered from the cache.
    third = _tracejudge(tmp_path, "run", "eval.yaml", "--no-progress", "--explain-cache", "--fresh", "--set", "judge.temperature=0.5")
    assert third.returncode == 0, third.stderr
    assert _explained(third.stderr) == ["judge cache: no request missed it (--explain-cache: nothing to explain)"]

    # Without the flag, nothing of it is printed.
    quiet = _tracejudge(tmp_path, "run", "eval.yaml", "--no-progress", "--fresh", "--set", "judge.temperature=0.7")
    assert quiet.returncode == 0 and "missed it" not in quiet.stderr and "--explain-cache" not in quiet.stderr, quiet.stderr


def test_many_reasons_are_cut_to_a_few_lines_and_the_rest_counted():
    reasons = {f"changed: reason {i}": 10 - i for i in range(7)} | {"x" * 500: 1}
    lines = explain_lines({"judge": {"requests": 50, "cache_misses_explained": reasons}}, True, 5)
    assert len(lines) == 1 + MAX_REASONS
    assert lines[0].startswith(f"judge cache: {sum(reasons.values())} requests missed it")
    assert lines[1] == "  10 because changed: reason 0" and lines[MAX_REASONS - 1] == f"  {10 - MAX_REASONS + 2} because changed: reason {MAX_REASONS - 2}"
    rest = list(reasons.values())[MAX_REASONS - 1:]
    assert lines[-1] == f"  {sum(rest)} for {len(rest)} other reasons (summary.json judge.cache_misses_explained lists them all)"
    long = explain_lines({"judge": {"requests": 1, "cache_misses_explained": {"y" * 500: 1}}}, True, 1)
    assert len(long[1]) < 220 and long[1].endswith("…")
    assert explain_lines({"judge": {"requests": 1}}, False, 1)[0].startswith("--explain-cache: the judge cache is off")
