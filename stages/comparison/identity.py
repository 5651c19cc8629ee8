"""Which judge produced a run's verdicts, and whether two runs' judges differ (`compare`'s warnings).

A judge score records its judge in `score.judge`: `model`, `prompt_version`
(the metric's prompt template) and `structured_output` (how the verdict
schema was sent). Scores written before these were recorded have none, which
counts as unknown rather than as a difference. A metric's options come from
each run's manifest (`config.metrics`, the spec whose key is the metric's).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tracejudge.engine import store

__all__ = ["IDENTITY_FIELDS", "identity_differences", "identity_of", "identity_warnings", "warning_line"]

IDENTITY_FIELDS = ("model", "prompt_version", "structured_output")


def identity_of(results: Iterable[dict[str, Any]], metrics: list[str]) -> dict[str, dict[str, set[str]]]:
    """Per metric of `metrics`: the set of values seen for each identity field (`IDENTITY_FIELDS`) across the scores."""
    out: dict[str, dict[str, set[str]]] = {m: {f: set() for f in IDENTITY_FIELDS} for m in metrics}
    for res in results:
        for m in metrics:
            judge = ((res.get("scores") or {}).get(m) or {}).get("judge")
            if isinstance(judge, dict):
                for f in IDENTITY_FIELDS:
                    if judge.get(f) is not None:
                        out[m][f].add(str(judge[f]))
    return out


def _options(dirs: list[Path]) -> dict[str, dict[str, Any]]:
    """Metric key → its spec in the first manifest of `dirs` that has a config (empty when none has)."""
    for d in dirs:
        manifest = store.read_manifest(d, strict=False) or {}
        specs = (manifest.get("config") or {}).get("metrics")
        if isinstance(specs, list):
            return {str(s.get("name") or s.get("type")): s for s in specs if isinstance(s, dict)}
    return {}


def identity_warnings(dirs_a: list[Path], dirs_b: list[Path], metrics: list[str]) -> list[str]:
    """One line per metric whose judge (model, prompt version, structured-output mode) or options differ between A and B."""
    return [warning_line(m, d) for m, d in identity_differences(dirs_a, dirs_b, metrics).items()]


def warning_line(metric: str, differences: str) -> str:
    """`compare`'s warning for `metric` whose judge or options differ (`differences`, as `identity_differences` gives them).

    Options alone (a deterministic metric's `order`, a rubric's text) are the metric's, not a judge's: said so.
    """
    if differences.startswith("options "):
        return f"{metric}: the runs scored it with different options ({differences}); a delta may be the options', not the agent's"
    return f"{metric}: the runs' judges differ ({differences}); a delta may be the judge's, not the agent's"


def identity_differences(dirs_a: list[Path], dirs_b: list[Path], metrics: list[str]) -> dict[str, str]:
    """Metric → what differs between A and B about its judge or options (`model gpt-4o → gpt-4.1; options order: 'in_order' →
    'exact'`), for each metric of `metrics` where something does. Read by `compare`'s warnings and the gate's regression checks."""
    if not metrics:
        return {}
    a = identity_of((r for d in dirs_a for r in store.iter_results(d)), metrics)
    b = identity_of((r for d in dirs_b for r in store.iter_results(d)), metrics)
    opts_a, opts_b = _options(dirs_a), _options(dirs_b)
    lines: dict[str, str] = {}
    for m in metrics:
        diffs = [f"{f} {', '.join(sorted(a[m][f]))} → {', '.join(sorted(b[m][f]))}" for f in IDENTITY_FIELDS
                 if a[m][f] and b[m][f] and a[m][f] != b[m][f]]
        oa, ob = opts_a.get(m), opts_b.get(m)
        if oa is not None and ob is not None and oa != ob:
            changed = sorted(k for k in set(oa) | set(ob) if oa.get(k) != ob.get(k))
            diffs.append("options " + ", ".join(f"{k}: {oa.get(k)!r} → {ob.get(k)!r}" for k in changed))
        if diffs:
            lines[m] = "; ".join(diffs)
    return lines
