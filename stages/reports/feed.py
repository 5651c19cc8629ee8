"""The reports' case material and JUnit test cases, collected as a run writes its results (`ReportFeed`)."""

from __future__ import annotations

from typing import Any

from tracejudge.core.records import PROVISIONAL_STATUSES, CaseResult, Status
from tracejudge.engine.rendered import Finished
from tracejudge.stages.reports.cases import CaseCollector, CaseMaterial, result_dict
from tracejudge.stages.reports.junit import JunitWriter

__all__ = ["ReportFeed"]


class ReportFeed:
    """The reports' case material and JUnit test cases, collected from a run's results as it writes them.

    Feed every result the run writes, in the order written (`feed`); the
    reports then take what was collected instead of re-reading
    results.jsonl, and it is what re-reading would give: the same dicts
    (`result_dict`), in the same order. Only valid for a run that started on
    an empty results file and whose metric keys and trials are those of its
    summary; a result that supersedes an earlier line of the run (a
    provisional one of the same case and trial) also makes it invalid, and
    `write_reports` then re-reads the file.
    """

    def __init__(self, metric_keys: list[str], trials: int) -> None:
        self.keys = list(metric_keys)
        self.junit = JunitWriter({"metrics": dict.fromkeys(self.keys, {}), "trials": trials})
        self.cases = CaseCollector(self.keys, on_result=self.junit.feed)
        self.valid = True
        self._provisional: set[tuple[str, int]] = set()

    def feed(self, result: CaseResult | Finished) -> None:
        """Collect one written result (nothing is written to the run directory)."""
        if type(result) is Finished:  # rendered where it was scored: status ok, never provisional
            if self._provisional and (result.case_id, result.trial) in self._provisional:
                self.valid = False
            if self.valid:
                self.junit.feed_finished(result)
                self.cases.feed_finished(result)
            return
        key = (result.case_id, result.trial)
        if key in self._provisional:
            self.valid = False  # superseding an earlier line: re-reading skips that line, the feed cannot
        if Status(result.status).value in PROVISIONAL_STATUSES:
            self._provisional.add(key)
        if self.valid:
            self.cases.feed(result_dict(result))

    def feed_finished(self, batch: list[Finished]) -> None:
        """`feed` each result of `batch` (all rendered where they were scored), in order, at once."""
        if self._provisional and any((done.case_id, done.trial) in self._provisional for done in batch):
            self.valid = False  # (from then on nothing is collected: the reports re-read the file)
        if self.valid:
            self.junit.feed_finished_many(batch)
            self.cases.feed_finished_many(batch)

    def take(self, summary: dict[str, Any]) -> tuple[JunitWriter, CaseMaterial] | None:
        """The JUnit writer (counting from `summary`) and the case material, or None when they do not fit `summary`."""
        if not self.valid or list(summary.get("metrics", {})) != self.keys or (summary.get("trials", 1) > 1) != self.junit.multi:
            self.junit.close()
            return None
        self.junit.summary, self.junit.metrics = summary, summary.get("metrics", {})
        return self.junit, self.cases.material()
