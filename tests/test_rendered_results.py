"""Results rendered where they are scored (`tracejudge.engine.rendered`) write what the general path writes.

A deterministic run with nothing after the executor writes its result lines, folds its
aggregate and feeds its reports from what each case's executor rendered. Here the 200 real
τ-bench runs, as native lines mixed with malformed lines and a repeated id,
run with two trials, in-process and with every chunk in a worker process; then:

- every result line parses to the `CaseResult` it stands for and is byte for byte what
  `CaseResult.model_dump_json` writes for it;
- `tracejudge report` (which re-reads results.jsonl through the general path) gives the same
  summary figures and rewrites no report: the run's own, fed from rendered results, are the same bytes.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_fast_path_equivalence import METRICS, _native_dataset  # noqa: E402

REPORTS = ("report.md", "junit.xml", "report.html")


def _with_repeat(path: Path) -> None:
    # Without the case carrying its own metric: a metric key the run does not list makes the run's reports re-read
    # results.jsonl (the path compared against here), whichever way its results were made.
    lines = [line for line in path.read_bytes().splitlines() if b'"own-metric"' not in line]
    first_ok = next(line for line in lines if line.startswith(b'{"id":"') and b'"trace"' in line)
    lines.insert(40, first_ok)  # the same id again: one invalid_input naming both places
    path.write_bytes(b"\n".join(lines) + b"\n")


@pytest.mark.parametrize("processes", [1, 2])
def test_rendered_lines_and_reports_are_those_of_the_general_path(processes, tmp_path, monkeypatch):
    from tracejudge.core.config import load_config
    from tracejudge.core.records import CaseResult
    from tracejudge.engine import runner
    from tracejudge.engine.executors import processes as processes_mod
    from tracejudge.stages import reports
    from tracejudge.stages.reports import rebuild

    monkeypatch.setattr(processes_mod, "INLINE_RECORDS", 0)  # with 2 processes every chunk goes to a worker
    cases = _native_dataset(tmp_path)
    _with_repeat(cases)
    cfg_path = tmp_path / "run.yaml"
    run_dir = tmp_path / "run"
    cfg_path.write_text(f"dataset: {{path: {cases}, format: native}}\n{METRICS}run: {{dir: {run_dir}, processes: {processes}, trials: 2}}\n")
    fed: list[object] = []
    feed_class = reports.ReportFeed

    class Watched(feed_class):  # type: ignore[misc, valid-type]
        def feed(self, result: object) -> None:
            fed.append(result)
            super().feed(result)

        def feed_finished(self, batch: list[object]) -> None:
            fed.extend(batch)
            super().feed_finished(batch)

        def take(self, summary):  # type: ignore[no-untyped-def]
            got = super().take(summary)
            assert got is not None, "the run's reports were not made from what it fed"
            return got

    monkeypatch.setattr(reports, "ReportFeed", Watched)
    out = anyio.run(runner.run, load_config(cfg_path))
    assert not out.interrupted and out.new_results > 400

    lines = (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == out.new_results
    for line in lines:
        assert CaseResult.model_validate_json(line).model_dump_json() == line
    statuses = [CaseResult.model_validate_json(line).status.value for line in lines]
    assert statuses.count("ok") > 400 and statuses.count("invalid_input") >= 10  # both paths were taken

    from tracejudge.engine.rendered import Finished

    assert sum(type(r) is Finished for r in fed) > 400  # the reports were fed rendered results
    before = {name: (run_dir / name).read_bytes() for name in REPORTS}
    stamps = {name: (run_dir / name).stat().st_mtime_ns for name in REPORTS}
    summary, _ = rebuild(run_dir)
    assert {k: v for k, v in summary.items() if k != "verdict"} == {k: v for k, v in out.summary.items() if k != "verdict"}
    for name in REPORTS:
        assert (run_dir / name).read_bytes() == before[name], f"{name}: the re-read results give another {name}"
        assert (run_dir / name).stat().st_mtime_ns == stamps[name], f"{name} was rewritten"
