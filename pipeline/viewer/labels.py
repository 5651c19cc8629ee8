"""The reference labels the case page shows beside each judge verdict (`judge.labels` of the run's config).

Read from the run's manifest: the labels file (read once per file version)
and the result's own fields. Reading never fails the page: a labels file that
cannot be read shows no labels.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from tracejudge.core.errors import TracejudgeError
from tracejudge.core.judge_quality import LabelsConfig
from tracejudge.stages.judge.labels import Label, field_labels, load_label_file

__all__ = ["label_cell", "labels_of"]


@functools.lru_cache(maxsize=8)
def _file_labels(path: str, mtime_ns: int) -> dict[tuple[str, str, int | None], Label]:
    # Keyed by the file's mtime too: an edited labels file is read again.
    try:
        return load_label_file(Path(path)).lookup()
    except TracejudgeError:
        return {}


def labels_of(manifest: dict[str, Any], result: dict[str, Any]) -> tuple[dict[str, bool | float], float]:
    """`({metric: label}, threshold)` for the (case, trial) of `result` under the run's `judge.labels` (empty without any)."""
    raw = ((manifest.get("config") or {}).get("judge") or {}).get("labels")
    if not raw:
        return {}, 0.5
    try:
        cfg = LabelsConfig.model_validate(raw)
    except ValidationError:
        return {}, 0.5
    cid, trial = str(result.get("case_id")), int(result.get("trial", 0))
    general: dict[str, bool | float] = {}  # labels that name no trial hold for every trial; a trial's own label wins
    specific: dict[str, bool | float] = {}
    if cfg.path is not None:
        try:
            found = _file_labels(str(cfg.path), Path(cfg.path).stat().st_mtime_ns)
        except OSError:
            found = {}
        for (c, metric, t), lab in found.items():
            if c == cid and t is None:
                general[metric] = lab.value
            elif c == cid and t == trial:
                specific[metric] = lab.value
    out = {**general, **specific}
    for lab in field_labels([result], cfg.fields).labels:
        out[lab.metric] = lab.value
    return out, cfg.threshold


def label_cell(label: bool | float | None, passed: Any, threshold: float) -> tuple[str, bool]:
    """The label as shown (`label pass`, `label 3`) and whether the verdict disagrees with it (a yes/no label against `passed`)."""
    if label is None:
        return "", False
    binary = isinstance(label, bool) or label in (0.0, 1.0)
    if not binary:
        return f"label {label:g}", False
    good = bool(label) if isinstance(label, bool) else label >= threshold
    return f"label {'pass' if good else 'fail'}", isinstance(passed, bool) and passed != good
