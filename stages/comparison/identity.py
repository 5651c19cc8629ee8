"""Which judge produced a run's verdicts, and whether two runs' judges differ (`compare`'s warnings).

A judge score records its judge in `score.judge`: `model`, `prompt_version`
(the metric's prompt template), `structured_output` (how the verdict
schema was sent) and, for a self-hosted server, `served_model` (the weights it
said it serves: two GGUFs behind one model name are two judges). Scores written
before these were recorded have none, which counts as unknown rather than as a difference; but served weights that
one run recorded and the other did not are said: the runs' judges may differ (one unknown). A metric's options come from
each run's manifest (`config.metrics`, the spec whose key is the metric's), and
so do the request fields the judge sent (`judge.extra_body`, a panel member's
own): a model thinking in one run and not in the other is another judge.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tracejudge.core.extra_body import recorded_config
from tracejudge.engine import store

__all__ = ["IDENTITY_FIELDS", "identity_differences", "identity_of", "identity_warnings", "warning_line"]

IDENTITY_FIELDS = ("model", "prompt_version", "structured_output", "served_model")
# One run's served weights when its server did not say them (a hosted API, a server naming none, a run before they were recorded).
UNKNOWN = "not known (its judge server did not say)"


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


def _request_fields(dirs: list[Path]) -> dict[str, Any] | None:
    """The request fields the judge sent, by the manifest of the first of `dirs` that has a judge (a credential masked, as
    it keeps them): `judge.extra_body` under `judge`, each panel member's own under its model, none left out when empty;
    None when no manifest says (a run without a judge, or a directory without a manifest)."""
    for d in dirs:
        # (a long value by its digest, as a manifest now keeps it, in one written before too: alike when equal)
        judge = (recorded_config((store.read_manifest(d, strict=False) or {}).get("config") or {})).get("judge")
        if isinstance(judge, dict):
            members = {str(m.get("model")): m["extra_body"] for m in judge.get("models") or [] if isinstance(m, dict) and m.get("extra_body")}
            return {**({"judge": judge["extra_body"]} if judge.get("extra_body") else {}), **members}
    return None


def _shown(fields: dict[str, Any]) -> str:
    # The section's fields alone read as the config writes them; with a member's beside them, each under its name.
    text = json.dumps(fields["judge"] if list(fields) == ["judge"] else fields, sort_keys=True)
    return text if len(text) <= 80 else text[:77] + "..."


def identity_warnings(dirs_a: list[Path], dirs_b: list[Path], metrics: list[str]) -> list[str]:
    """One line per metric whose judge (model, prompt version, structured-output mode, served weights) or options differ
    between A and B."""
    return [warning_line(m, d) for m, d in identity_differences(dirs_a, dirs_b, metrics).items()]


def warning_line(metric: str, differences: str) -> str:
    """`compare`'s warning for `metric` whose judge or options differ (`differences`, as `identity_differences` gives them).

    Options alone (a deterministic metric's `order`, a rubric's text) are the metric's, not a judge's: said so.
    """
    if differences.startswith("options "):
        return f"{metric}: the runs scored it with different options ({differences}); a delta may be the options', not the agent's"
    if differences.startswith("served_model ") and ";" not in differences and UNKNOWN in differences:
        return f"{metric}: the runs' judges may differ ({differences}); a delta may be the judge's, not the agent's"
    return f"{metric}: the runs' judges differ ({differences}); a delta may be the judge's, not the agent's"


def identity_differences(dirs_a: list[Path], dirs_b: list[Path], metrics: list[str]) -> dict[str, str]:
    """Metric → what differs between A and B about its judge or options (`model gpt-4o → gpt-4.1; options order: 'in_order' →
    'exact'`), for each metric of `metrics` where something does. Read by `compare`'s warnings and the gate's regression checks."""
    if not metrics:
        return {}
    a = identity_of((r for d in dirs_a for r in store.iter_results(d)), metrics)
    b = identity_of((r for d in dirs_b for r in store.iter_results(d)), metrics)
    opts_a, opts_b = _options(dirs_a), _options(dirs_b)
    fields_a, fields_b = _request_fields(dirs_a), _request_fields(dirs_b)
    lines: dict[str, str] = {}
    for m in metrics:
        diffs = [f"{f} {', '.join(sorted(a[m][f]))} → {', '.join(sorted(b[m][f]))}" for f in IDENTITY_FIELDS
                 if a[m][f] and b[m][f] and a[m][f] != b[m][f]]
        if a[m]["model"] and b[m]["model"] and bool(a[m]["served_model"]) != bool(b[m]["served_model"]):
            # One server said which weights it serves, the other's did not (or was not asked): they may be others.
            said = [", ".join(sorted(side[m]["served_model"])) or UNKNOWN for side in (a, b)]
            diffs.append(f"served_model {said[0]} → {said[1]}")
        if a[m]["model"] and b[m]["model"] and fields_a is not None and fields_b is not None and fields_a != fields_b:
            diffs.append(f"judge.extra_body {_shown(fields_a)} → {_shown(fields_b)}")  # (only for a metric both judged)
        oa, ob = opts_a.get(m), opts_b.get(m)
        if oa is not None and ob is not None and oa != ob:
            changed = sorted(k for k in set(oa) | set(ob) if oa.get(k) != ob.get(k))
            diffs.append("options " + ", ".join(f"{k}: {oa.get(k)!r} → {ob.get(k)!r}" for k in changed))
        if diffs:
            lines[m] = "; ".join(diffs)
    return lines
