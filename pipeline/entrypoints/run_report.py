"""`RunReport`: what `tracejudge.evaluate` returns — results, summary, failures, a DataFrame."""

from __future__ import annotations

import importlib
import io
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr
from tracejudge.core.records import CaseResult, Status

__all__ = ["Failure", "MetricSummary", "RunReport"]


class MetricSummary(BaseModel):
    """One metric's figures over the run (the `metrics` entries of `summary.json`).

    `mean` and `pass_rate` cover the `scored` results (status `ok` and a
    non-null value); `not_computed` counts ok results whose value is null,
    `excluded` counts results left out by status. Figures that later
    versions add to `summary.json` are kept as extra attributes.
    """

    model_config = ConfigDict(extra="allow")

    results: int = 0
    scored: int = 0
    not_computed: int = 0
    excluded: dict[str, int] = Field(default_factory=dict)
    mean: float | None = None
    passed: int = 0
    pass_rate: float | None = None


class Failure(BaseModel):
    """A failing (case, trial, metric): a score with `passed: false`, or a case that could not be scored.

    For a case whose status is not `ok` (invalid input, target or judge
    error, budget), `metric` is `None` and `reason` is the error message.
    """

    case_id: str
    trial: int
    metric: str | None
    value: float | None
    reason: str
    status: Status


class RunReport(BaseModel):
    """The outcome of `evaluate`: every result of the run and its summary.

    - `results`: one `CaseResult` per (case, trial), in the order they were
      written (resumed runs include the results of earlier segments);
    - `summary`: the `summary.json` body (counts by status, per-metric
      figures, judge usage);
    - `run_dir`: where the run lives, or `None` when `evaluate` used a
      temporary directory (removed once the report was read; the repr says so);
    - `new_results` / `skipped_finished`: what this call did on a resumed run.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    results: list[CaseResult]
    summary: dict[str, Any]
    run_dir: Path | None = None
    new_results: int = 0
    skipped_finished: int = 0
    interrupted: bool = False
    _temporary: bool = PrivateAttr(default=False)  # (`evaluate` ran in a temporary directory, now removed)

    def __str__(self) -> str:
        """The summary table as plain text, as `tracejudge run` prints it (100 columns wide; `print(report)`)."""
        from tracejudge.core.console import plain_console

        buf = io.StringIO()
        self.print(plain_console(file=buf, width=100, color_system=None, force_terminal=False))
        return buf.getvalue()

    def __repr__(self) -> str:
        # The results can be hundreds of thousands: the repr names the run, `str()` shows its table.
        where = repr(str(self.run_dir)) if self.run_dir else "None (a temporary directory, removed)" if self._temporary else "None"
        return f"RunReport(results={len(self.results)}, status={self.status}, run_dir={where})"

    def print(self, console: Any = None) -> None:
        """Print the summary table with rich to `console` (a `rich.console.Console`; default: stdout, in colour on a terminal)."""
        from tracejudge.stages.reports.terminal import print_summary

        print_summary(self.summary, console)

    @property
    def metrics(self) -> dict[str, MetricSummary]:
        """Per-metric figures by metric key (see `MetricSummary`)."""
        return {k: MetricSummary.model_validate(v) for k, v in self.summary.get("metrics", {}).items()}

    @property
    def status(self) -> dict[str, int]:
        """Result counts by status (`ok`, `invalid_input`, …)."""
        return dict(self.summary.get("status", {}))

    def result(self, case_id: str, trial: int = 0) -> CaseResult:
        """The result of one (case, trial); `KeyError` if the run has none."""
        for r in self.results:
            if r.case_id == case_id and r.trial == trial:
                return r
        raise KeyError(f"no result for case {case_id!r}, trial {trial}")

    def failed(self) -> list[Failure]:
        """Failing (case, metric) pairs with their reasons, in result order.

        A score fails when its `passed` is `False`. A score that could not be
        computed (`value: null`) has no verdict and is not listed. A result
        whose status is not `ok` is listed once with `metric=None`.
        """
        out: list[Failure] = []
        for r in self.results:
            if r.status is not Status.ok:
                reason = r.error.message if r.error is not None else r.status.value
                out.append(Failure(case_id=r.case_id, trial=r.trial, metric=None, value=None, reason=reason, status=r.status))
                continue
            for key, score in r.scores.items():
                if score.passed is False:
                    out.append(Failure(case_id=r.case_id, trial=r.trial, metric=key, value=score.value, reason=score.reason, status=r.status))
        return out

    def to_dataframe(self, *, wide: bool = False) -> Any:
        """The results as a `pandas.DataFrame` (needs the `pandas` extra).

        Long form (default): one row per (case, trial, metric) with columns
        `case_id, trial, status, metric, value, passed, reason`; a result
        without scores gives one row with `metric` empty. `wide=True`: one
        row per (case, trial) with `case_id, trial, status` and one value
        column per metric key.

        Raises `ImportError` naming the extra when pandas is not installed.
        """
        try:
            pd = importlib.import_module("pandas")
        except ImportError:
            raise ImportError("RunReport.to_dataframe needs pandas: pip install 'tracejudge[pandas]'") from None
        if wide:
            rows_w: list[dict[str, Any]] = []
            for r in self.results:
                row: dict[str, Any] = {"case_id": r.case_id, "trial": r.trial, "status": r.status.value}
                row.update({k: s.value for k, s in r.scores.items()})
                rows_w.append(row)
            return pd.DataFrame(rows_w)
        rows: list[dict[str, Any]] = []
        for r in self.results:
            base = {"case_id": r.case_id, "trial": r.trial, "status": r.status.value}
            if not r.scores:
                rows.append({**base, "metric": None, "value": None, "passed": None, "reason": r.error.message if r.error else ""})
            for key, s in r.scores.items():
                rows.append({**base, "metric": key, "value": s.value, "passed": s.passed, "reason": s.reason})
        return pd.DataFrame(rows, columns=["case_id", "trial", "status", "metric", "value", "passed", "reason"])
