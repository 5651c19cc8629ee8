"""The gate's `max_metric_error_share` check: a metric that raised or timed out fails the run by default.

A metric's exception costs that metric's score for that case (`value: null`, the exception in the
reason: `stages.score`), never the run; a metric cut at `run.metric_timeout_s` likewise. Both are
counted per metric as `raised` (`metric_stats.MetricStats`), apart from the other results not
computed (a case without the expected value a metric needs). A bug in a metric used to leave every
case "not computed" and the run PASS; now, as a scorer error fails an inspect-ai eval
(`fail_on_error`) and errors a deepeval test (unless `ignore_errors`), the share of a metric's
results that raised must not exceed `assertions.max_metric_error_share` (default 0.0), or the
metric's own `max_metric_error_share`. A failed check lists the first three reasons, each with
the case and, for a custom metric, the `file:line` where it raised.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tracejudge.core.evalconfig import AssertionsConfig
from tracejudge.core.field_paths import key_path
from tracejudge.engine.rendered import METRIC_ERRORS
from tracejudge.stages.aggregate.gate import Check, metric_rule
from tracejudge.stages.aggregate.gate_figures import figure, limit as limit_shown
from tracejudge.stages.aggregate.gate_reasons import listed

__all__ = ["metric_error_checks", "metric_error_reasons"]

_KNOB = "max_metric_error_share"


def metric_error_checks(assertions: AssertionsConfig, summary: dict[str, Any], run_dir: Path | None) -> list[Check]:
    """One `<metric> max_metric_error_share` check per metric that raised on some result, or whose limit is above 0.

    The share is over the results carrying the metric (`results − not_applicable`, as `error_share`'s);
    the limit is the metric's rule's (`"*"`'s, `metric_rule`) when it sets one, else the assertions' own.
    """
    checks = []
    for key, m in (summary.get("metrics") or {}).items():
        raised = int(m.get("raised") or 0)
        rule = metric_rule(assertions, key)
        own = rule.max_metric_error_share if rule is not None else None
        allowed = own if own is not None else assertions.max_metric_error_share
        carrying = int(m.get("results", 0)) - int(m.get("not_applicable", 0))
        if not carrying or not (raised or allowed > 0):
            continue
        share = raised / carrying
        ok = share <= allowed + 1e-12
        mine = assertions.metrics.get(key)
        # The path as config errors write it and `--set` reads it: a metric named `a.b` as `assertions.metrics["a.b"]`, not a
        # key `b` of a metric `a`; the catch-all as `assertions.metrics.*` (`."*".` would set a metric named `"*"`, quotes
        # and all). Not `shown_path`: every printer of a check shows its text inert already (`visible`), and twice doubles it.
        rule_key = key if mine is not None and mine.max_metric_error_share is not None else "*"
        where = f"assertions.{_KNOB}" if own is None else key_path(("assertions", "metrics", rule_key, _KNOB))
        reasons = "" if ok or run_dir is None else "".join(f"\n      {r}" for r in metric_error_reasons(run_dir, key))
        shown = figure(share, allowed, ok, at_least=False, places=1, percent=True)
        checks.append(Check(f"{key} {_KNOB}", ok, f"metric {key!r} raised or timed out on {raised} of {carrying} results"
                            f"{' carrying it' if m.get('not_applicable') else ''} (not computed because of the metric, not of "
                            f"the case) = {shown}, allowed <= {limit_shown(allowed, percent=True)} ({where}){reasons}"))
    return checks


def metric_error_reasons(run_dir: Path, key: str, limit: int = 3) -> list[str]:
    """The first `limit` standing results of `run_dir` whose metric `key` raised or timed out, as `case 'id': reason` lines,
    then `… and N more` when there are more (`gate_reasons.listed`).

    A custom metric's reason ends with where it raised (`(at checks.py:5, in broken)`). Standing: the last line
    of each (case, trial), as every figure reads them. Only lines holding such a reason are parsed.
    """
    import json

    from tracejudge.engine import store

    last: dict[tuple[str, int], str | None] = {}
    marks = [m.encode() for m in METRIC_ERRORS]
    for raw in store.iter_result_lines(Path(run_dir) / store.RESULTS):
        if not any(mark in raw for mark in marks):
            if last:  # (a later line of a listed (case, trial) stands instead of it: parsed to learn its key)
                try:
                    result = json.loads(raw)
                    last.pop((str(result["case_id"]), int(result.get("trial") or 0)), None)
                except (ValueError, KeyError, TypeError):
                    pass
            continue
        try:
            result = json.loads(raw)
            case_key = (str(result["case_id"]), int(result.get("trial") or 0))
            score = (result.get("scores") or {}).get(key) or {}
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
        last.pop(case_key, None)  # re-inserted last: the listing follows the standing lines' order
        reason = score.get("reason") if isinstance(score, dict) and score.get("value") is None else None
        if result.get("status") != "ok" or not isinstance(reason, str) or not reason.startswith(METRIC_ERRORS):
            last[case_key] = None
            continue
        trial = f" trial {case_key[1]}" if case_key[1] else ""
        last[case_key] = f"case {case_key[0]!r}{trial}: {reason[:300]}"
    return listed([r for r in last.values() if r is not None], limit)
