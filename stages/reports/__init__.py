"""Reports of a run: `report.md`, `junit.xml`, `report.html`, and the gate verdict.

`finish_run(run_dir, summary, config)` is what a run calls at its end: it
evaluates the assertions, records the verdict in `summary.json` and writes
the three reports. A run that starts on an empty results file collects the
reports' case material as it writes each result (`ReportFeed`), so its
reports do not re-read results.jsonl; any other run (a resume) re-reads it. `rebuild(run_dir)` recomputes the summary from
`results.jsonl` alone (using the manifest's config for metric order, trials,
pass@k, breakdowns and assertions when the manifest is there) and then does
the same; `tracejudge report RUN_DIR` is that function.

One job a module: `feed` collects while the run writes, `finish` writes the reports and the verdict, `rebuilding`
recomputes from the results, `stopped` and `superseded` say how an unfinished segment ended; each format is written by
its own (`markdown`, `junit`, `html`, `table_json`, `terminal`).
"""

from __future__ import annotations

from tracejudge.stages.reports.feed import ReportFeed
from tracejudge.stages.reports.finish import finish_run, write_reports
from tracejudge.stages.reports.rebuilding import rebuild, regression_baseline
from tracejudge.stages.reports.stopped import finish_stopped, stop_cause

__all__ = ["REPORT_FILES", "ReportFeed", "finish_run", "finish_stopped", "rebuild", "stop_cause", "write_reports"]

REPORT_FILES = ("report.md", "junit.xml", "report.html")
